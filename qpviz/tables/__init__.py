"""Cached QP lookup tables: sigma_QP^2 in ~70 ns instead of ~100 us of quadrature.

QP (QP paper eq. 7) needs sigma_QP = int phi(Phi^-1(F(f))) df of the tilted distribution for
every site update. The paper (App. J) tabulates it on a 20001 x 2001 grid per label (640 MB,
linear interpolation, EP's variance outside the grid). qpviz instead stores, per likelihood
family, a piecewise Chebyshev approximation of h = log(sigma_QP / s) on mapped cavity
coordinates (1-D in z = y m / s for the scale-free step), accurate to ~1e-8 relative in
sigma_QP, a few tens of kB per table, and computes directly (exactly) wherever a table does not
cover the query. On loading, each table is re-approximated by low-degree patches found by index
arithmetic (:mod:`qpviz.tables.fast`), which is what lookups read. Details and measured errors:
``lookup_tables/README.md``.

Public functions:

* :func:`qp_variance` ``(likelihood, y, cavity_mean, cavity_var)`` -> sigma_QP^2, vectorised
  (what ``qpviz.project(..., method="qp")`` calls);
* :func:`jit_data` ``(likelihood)`` -> ``(coef, meta)`` float arrays for numba code (empty
  when no table covers the likelihood), used with
* :func:`qp_var_scalar` ``(coef, meta, lk, y, m, v)`` (numba): sigma_QP^2 from the
  table, or by :func:`qpviz.tilted.qp_std_scalar` where the table does not cover (y, m, v).

Tables load lazily from :data:`qpviz.config.TABLE_DIR` and are verified (format, generating
parameters, checksum). A missing, corrupt or stale file gives one :class:`TableWarning` and
direct computation for that likelihood: the answer is never wrong, only slower.

numba caches of kernels that compile in functions from other files are dropped by
``python -m qpviz.cache check`` whenever a package source changed (:mod:`qpviz.cache`).
"""
from __future__ import annotations

import math
import threading
import time
import warnings
from pathlib import Path

import numpy as np
from numba import njit

from qpviz import config
from qpviz.config import NUMBA_OPTIONS
from qpviz.checks import check_cavity
from qpviz.likelihoods.base import Likelihood
from qpviz.tables import store
from qpviz.tables.families import TableFamily, all_families, family_for
from qpviz.tables import fast
from qpviz.tables.lookup import (
    fast_table_locate,
    is_line,
    line_table_value,
    runtime,
    stored_table_value,
    table_coordinates,
    table_log_ratio,
)
from qpviz.tilted import qp_std_scalar

__all__ = ["TableWarning", "jit_data", "qp_var_scalar", "qp_variance", "table_dir", "loaded_families", "clear_cache",
           "all_families", "runtime_stats", "qp_variance_checked", "preload"]

_EMPTY = np.empty(0, dtype=np.float64)
_CACHE: dict[TableFamily, tuple[np.ndarray, np.ndarray]] = {}
_STATS: dict[str, dict] = {}
_LOAD_LOCK = threading.Lock()
_FAMILY_LOCKS: dict[TableFamily, threading.Lock] = {}
_PRELOAD: threading.Thread | None = None


class TableWarning(UserWarning):
    """A QP table could not be used; qpviz computes sigma_QP directly instead."""


def table_dir() -> Path:
    """The folder the tables are read from (:data:`qpviz.config.TABLE_DIR`, read at call time)."""
    return Path(config.TABLE_DIR)


def clear_cache() -> None:
    """Forget loaded tables (the next lookup reloads and re-verifies the files)."""
    _CACHE.clear()
    _STATS.clear()


def loaded_families() -> dict[str, bool]:
    """File name -> whether its table is in use, for the families loaded so far."""
    return {fam.file_name: arrays[1].size > 0 for fam, arrays in _CACHE.items()}


def preload(background: bool = True) -> threading.Thread | None:
    """Load (verify and derive the fast form of) every shipped family now, so that no later
    lookup waits for it (the Poisson families take ~1-2 s each). With ``background=True`` this
    runs in a daemon thread (the derivation kernels release the GIL) and the thread is returned;
    while one is still running, calling again returns it instead of starting another."""
    global _PRELOAD

    def load_all():
        for family in all_families():
            _arrays_for(family)

    if not background:
        load_all()
        return None
    with _LOAD_LOCK:
        if _PRELOAD is None or not _PRELOAD.is_alive():
            _PRELOAD = threading.Thread(target=load_all, name="qpviz-table-preload", daemon=True)
            _PRELOAD.start()
        return _PRELOAD


def runtime_stats() -> dict[str, dict]:
    """File name -> stats of its in-memory form (patches, max re-approximation error of h,
    cells left to direct computation, load seconds), for the families loaded so far."""
    return dict(_STATS)


def _arrays_for(family: TableFamily) -> tuple[np.ndarray, np.ndarray]:
    arrays = _CACHE.get(family)
    if arrays is not None:
        return arrays
    with _LOAD_LOCK:
        family_lock = _FAMILY_LOCKS.setdefault(family, threading.Lock())
    with family_lock:  # one thread loads a family; others wanting it wait (see preload)
        return _load(family)


def _load(family: TableFamily) -> tuple[np.ndarray, np.ndarray]:
    arrays = _CACHE.get(family)
    if arrays is None:
        try:
            start = time.perf_counter()
            coef, meta = store.load(table_dir() / family.file_name, family)
            coef, meta, stats = runtime(coef, meta)
            arrays = (coef, meta)
            _STATS[family.file_name] = dict(stats, load_seconds=round(time.perf_counter() - start, 3))
        except store.TableError as exc:
            warnings.warn(f"{exc}. Computing sigma_QP directly for {family.likelihood} (exact, about 1000x slower).",
                          TableWarning, stacklevel=5)
            arrays = (_EMPTY, _EMPTY)
        _CACHE[family] = arrays
    return arrays


def jit_data(likelihood: Likelihood) -> tuple[np.ndarray, np.ndarray]:
    """``(coef, meta)``: the packed tables of ``likelihood`` for :func:`qp_var_scalar`.

    Both arrays are empty when no table covers the likelihood (a parameter set the app does
    not offer, the Gaussian likelihood, or an unusable file); ``qp_var_scalar`` then computes
    directly.
    """
    if not isinstance(likelihood, Likelihood):
        raise TypeError("likelihood must be a qpviz likelihood, e.g. qpviz.likelihood('probit')")
    family = family_for(likelihood)
    if family is None:
        return _EMPTY, _EMPTY
    return _arrays_for(family)


@njit(**NUMBA_OPTIONS)
def qp_var_scalar(coef, meta, lk, y, m, v):
    """sigma_QP^2 of the tilted distribution of (y, m, v): v exp(2 h) with h = log(sigma_QP / sqrt(v))
    from the table where it covers (y, m, v), else ``qp_std_scalar(lk, y, m, v) ** 2``
    (QP paper eq. 7 by quadrature)."""
    h = table_log_ratio(coef, meta, y, m, v)
    if h == h:
        return v * math.exp(2.0 * h)
    sigma = qp_std_scalar(lk, y, m, v)
    return sigma * sigma


#: Points per block of :func:`_qp_var_batch`: its scratch arrays stay in the L1/L2 cache.
BATCH_BLOCK = 1024


@njit(**NUMBA_OPTIONS)
def _qp_var_batch(coef, meta, lk, y, m, v, out):
    """qp_var_scalar over arrays, block by block, in passes: mapped coordinates; (2-D tables)
    the patch of each point; the polynomial values; then the rare rest (cells that read the
    stored tree, points no table covers) and sigma_QP^2 = v exp(2 h).

    Same numbers as calling qp_var_scalar per point. Separate passes let the CPU overlap many
    points' work: a point's dependent chain (coordinates -> cell code -> patch -> value) would
    otherwise stall it at every step (measured: locating and evaluating in one loop ~2x slower);
    blocks keep the passes' scratch arrays in cache instead of streaming them through memory.
    """
    n = out.size
    which = np.empty(BATCH_BLOCK, dtype=np.int64)
    offset = np.empty(BATCH_BLOCK, dtype=np.int64)
    fa = np.empty(BATCH_BLOCK)
    fb = np.empty(BATCH_BLOCK)
    x = np.empty(BATCH_BLOCK)
    z = np.empty(BATCH_BLOCK)
    touch = np.empty(BATCH_BLOCK)
    line = meta.size > 0 and is_line(meta)
    for start in range(0, n, BATCH_BLOCK):
        size = min(BATCH_BLOCK, n - start)
        for j in range(size):
            i = start + j
            which[j], fa[j], fb[j] = table_coordinates(meta, y[i], m[i], v[i])
        if line:
            for j in range(size):
                out[start + j] = line_table_value(coef, meta, fa[j]) if which[j] >= 0 else np.nan
        else:
            for j in range(size):
                if which[j] >= 0:
                    offset[j], x[j], z[j] = fast_table_locate(meta, which[j], fa[j], fb[j])
                else:
                    offset[j] = -1
            for j in range(size):  # touch each patch's cache lines: many misses in flight at once
                o = offset[j]
                if o >= 0:
                    touch[j] = coef[o] + coef[o + 8] + coef[o + 16] + coef[o + 24] + coef[o + 35]
            for j in range(size):
                out[start + j] = fast.patch_value(coef, offset[j], x[j], z[j]) if offset[j] >= 0 else np.nan
        for j in range(size):
            i = start + j
            h = out[i]
            if h != h and which[j] >= 0 and not line:
                h = stored_table_value(coef, meta, which[j], fa[j], fb[j])
            if h == h:
                out[i] = v[i] * math.exp(2.0 * h)
            else:
                sigma = qp_std_scalar(lk, y[i], m[i], v[i])
                out[i] = sigma * sigma


def qp_variance(likelihood: Likelihood, y, cavity_mean, cavity_var) -> np.ndarray:
    """sigma_QP^2 for every (y, cavity_mean, cavity_var) (broadcast), from the tables where they
    cover the query and by direct quadrature elsewhere (always the true QP value)."""
    if not isinstance(likelihood, Likelihood):
        raise TypeError("likelihood must be a qpviz likelihood, e.g. qpviz.likelihood('probit')")
    y_arr = likelihood.check_y(y)
    m, v = check_cavity(cavity_mean, cavity_var)
    return qp_variance_checked(likelihood, *np.broadcast_arrays(y_arr, m, v))


def qp_variance_checked(likelihood: Likelihood, y: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`qp_variance` of inputs already validated (``check_y``, ``check_cavity``) and
    broadcast to one shape: no second validation pass (qpviz.project uses it)."""
    coef, meta = jit_data(likelihood)
    out = np.empty(y.shape)
    lk = likelihood.jit_handle()
    if lk is None:  # no numba kernels: no table either; sigma_QP by the likelihood's own quadrature
        return np.square(likelihood.qp_std(y, m, v))
    _qp_var_batch(coef, meta, lk, np.ravel(y), np.ravel(m), np.ravel(v), out.reshape(-1))
    return out
