"""Loading tables: the per-family cache, its locks, background preloading and TableWarning.

A family's file is read, verified (:func:`qpviz.tables.store.load`) and turned into its
in-memory form (:func:`qpviz.tables.packing.runtime`, or its copy cached on disk by an earlier
process: :mod:`qpviz.tables.derived`) once, on first use; the arrays stay in
:data:`_CACHE` until :func:`clear_cache`. A file that cannot be used gives one
:class:`TableWarning` and empty arrays, which make every lookup compute directly.
"""
from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

import numpy as np

from qpviz import config
from qpviz.likelihoods.base import Likelihood
from qpviz.tables import store
from qpviz.tables.families import TableFamily, all_families, family_for
from qpviz.tables.derived import fast_form

__all__ = ["TableWarning", "table_dir", "clear_cache", "loaded_families", "preload", "runtime_stats", "jit_data"]

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
            coef, meta, stats = fast_form(coef, meta, family.file_name)
            arrays = (coef, meta)
            _STATS[family.file_name] = dict(stats, load_seconds=round(time.perf_counter() - start, 3))
        except store.TableError as exc:
            warnings.warn(f"{exc}. Computing sigma_QP directly for {family.likelihood} (exact, about 1000x slower).",
                          TableWarning, stacklevel=5)
            arrays = (_EMPTY, _EMPTY)
        _CACHE[family] = arrays
    return arrays


def jit_data(likelihood: Likelihood) -> tuple[np.ndarray, np.ndarray]:
    """``(coef, meta)``: the packed tables of ``likelihood`` for :func:`qpviz.tables.qp_var_scalar`.

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
