"""sigma_QP^2 from the tables, one point (numba) or many (vectorised), with direct fallback.

:func:`qp_var_scalar` is what the numba EP/QP sweeps call per site; :func:`qp_variance` is the
array version behind ``qpviz.project(..., method="qp")``. Wherever no table covers (y, m, v)
both use the checked Gauss-Hermite rule of :mod:`qpviz.tilted.hermite` where it is accurate
(narrow cavities, below the tables' range) and the quadrature of QP paper eq. 7
(:func:`qpviz.tilted.qp_std_scalar`) elsewhere, so the answer is always the true QP value.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.checks import check_cavity
from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood
from qpviz.tables import fast
from qpviz.tables.loading import jit_data
from qpviz.tables.families import FOLD_BINARY, FOLD_REAL
from qpviz.tables.layout import B_CELLS_OFFSET, H_B_HI, H_B_LO, H_CELLS_A, H_CELLS_B, H_FOLD, H_N_TABLES, H_T_HI, \
    H_T_LO, fast_block
from qpviz.tables.lookup import B_SLACK, fast_table_locate, is_line, line_table_value, mapped_mean, mean_map, \
    stored_table_value, table_degree, table_header, header_coordinates, table_log_ratio
from qpviz.tilted import qp_std_scalar
from qpviz.tilted.hermite import hermite_qp_std

__all__ = ["BATCH_BLOCK", "qp_var_scalar", "qp_var_batch", "qp_variance", "qp_variance_checked", "hermite_qp_var_batch"]

#: Points per block of :func:`qp_var_batch`: its scratch arrays stay in the L1/L2 cache.
BATCH_BLOCK = 1024
#: Points per NumPy call of :func:`qp_variance_checked` around the single-table kernel (measured:
#: ~1 ms of 23 sooner on 10^6 probit points than whole arrays, which stream through memory).
NUMPY_CHUNK = 16 * BATCH_BLOCK


@njit(**NUMBA_OPTIONS)
def qp_var_scalar(coef, meta, lk, y, m, v):
    """sigma_QP^2 of the tilted distribution of (y, m, v): v exp(2 h) with h = log(sigma_QP / sqrt(v))
    from the table where it covers (y, m, v), else the checked Gauss-Hermite rule where it is
    accurate (:func:`qpviz.tilted.hermite.hermite_qp_std`), else ``qp_std_scalar(lk, y, m, v) ** 2``
    (QP paper eq. 7 by quadrature)."""
    h = table_log_ratio(coef, meta, y, m, v)
    if h == h:
        return v * math.exp(2.0 * h)
    fast, sigma = hermite_qp_std(lk, y, m, v)  # nearly Gaussian tilted (narrow cavities): ~1 us
    if not fast:
        sigma = qp_std_scalar(lk, y, m, v)
    return sigma * sigma


@njit(**NUMBA_OPTIONS)
def qp_var_batch(coef, meta, y, m, v, out):
    """sigma_QP^2 from the tables over arrays, NaN where no table covers a point (the caller
    computes those directly: :func:`qp_variance_checked`; keeping the quadrature out of this
    kernel keeps its compile short); returns the number of NaNs written. Block by block, in
    passes: mapped coordinates; (2-D tables) the patch of each point; the polynomial values;
    then the cells that read the stored tree and sigma_QP^2 = v exp(2 h). A family of one 2-D
    table folded by label (probit, logistic, Student-t, Laplace) takes
    :func:`single_table_batch`: the same numbers, sooner.

    Same numbers as calling qp_var_scalar per point. Separate passes let the CPU overlap many
    points' work: a point's dependent chain (coordinates -> cell code -> patch -> value) would
    otherwise stall it at every step (measured: locating and evaluating in one loop ~2x slower);
    blocks keep the passes' scratch arrays in cache instead of streaming them through memory.
    """
    n = out.size
    if meta.size > 0 and single_folded_table(meta):
        return single_table_batch(coef, meta, y, m, v, np.empty(0), out)  # the signature qp_variance compiles
    missing = 0
    which = np.empty(BATCH_BLOCK, dtype=np.int64)
    offset = np.empty(BATCH_BLOCK, dtype=np.int64)
    fa = np.empty(BATCH_BLOCK)
    fb = np.empty(BATCH_BLOCK)
    x = np.empty(BATCH_BLOCK)
    z = np.empty(BATCH_BLOCK)
    touch = np.empty(BATCH_BLOCK)
    line = meta.size > 0 and is_line(meta)
    degree = 0 if line or meta.size == 0 else table_degree(meta, 0)  # one degree per family
    last = fast.patch_size(degree) - 1
    header = table_header(meta)  # read once: the coordinate pass keeps it in registers
    for start in range(0, n, BATCH_BLOCK):
        size = min(BATCH_BLOCK, n - start)
        for j in range(size):
            i = start + j
            which[j], fa[j], fb[j] = header_coordinates(header, meta, y[i], m[i], v[i])
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
                    touch[j] = coef[o] + coef[o + 8] + coef[o + 16] + coef[o + min(24, last)] + coef[o + last]
            _patch_pass(coef, degree, offset, x, z, out, start, size)
        for j in range(size):
            i = start + j
            h = out[i]
            if h != h and which[j] >= 0 and not line:
                h = stored_table_value(coef, meta, which[j], fa[j], fb[j])
            missing += _put_variance(out, i, v[i], h)
    return missing


@njit(**NUMBA_OPTIONS)
def _patch_pass(coef, degree, offset, x, z, out, start, size):
    """out[start + j] = the value of patch offset[j] at (x[j], z[j]) for j < size (NaN where the
    offset is -1), one loop per patch degree: no branch on the degree inside the loop."""
    if degree == fast.SMALL_DEGREE:
        for j in range(size):
            out[start + j] = fast.small_patch_value(coef, offset[j], x[j], z[j]) if offset[j] >= 0 else np.nan
    else:
        for j in range(size):
            out[start + j] = fast.patch_value(coef, offset[j], x[j], z[j]) if offset[j] >= 0 else np.nan


@njit(**NUMBA_OPTIONS)
def _put_variance(out, i, v, h):
    """out[i] = sigma_QP^2 = v exp(2 h); NaN (and 1 returned, for the count) if h is NaN."""
    if h == h:
        out[i] = v * math.exp(2.0 * h)
        return 0
    out[i] = np.nan
    return 1


@njit(**NUMBA_OPTIONS)
def single_folded_table(meta):
    """Whether ``meta`` holds one 2-D table whose fold is t = y m or |m - y| (no per-point table)."""
    fold = int(meta[H_FOLD])
    return meta[H_N_TABLES] == 1 and (fold == FOLD_BINARY or fold == FOLD_REAL)


@njit(**NUMBA_OPTIONS)
def single_table_batch(coef, meta, y, m, v, log_v, out):
    """:func:`qp_var_batch` of one 2-D table folded by label (:func:`single_folded_table`), two ways:

    * ``log_v`` empty: takes log v itself (libm) and writes sigma_QP^2 = v exp(2 h) to ``out``;
    * ``log_v`` = log v of every point (NumPy's vectorised log; it may be ``out`` itself: a
      block's logs are read before its results are written): writes log sigma_QP^2 = 2 h + log v,
      for NumPy's vectorised exp (:func:`qp_variance_checked`).

    NaN where the table does not cover a point, counted in the returned number. (One flag, no
    second argument: both callers then compile the same signature.)

    The same numbers as the general passes (:func:`qpviz.tables.lookup.header_coordinates`,
    :func:`qpviz.tables.fast.locate_patch`), sooner: the table's constants are read once, the
    logarithms have a loop of their own (or come in), and the coordinate pass has no branch
    that depends on the point (a point outside the table is flagged, its coordinates set to 0),
    so its square roots and divisions run in SIMD lanes; one pass then finds every patch.
    """
    n = out.size
    binary = int(meta[H_FOLD]) == FOLD_BINARY
    t_lo, t_hi = meta[H_T_LO], meta[H_T_HI]
    b_lo, b_hi = meta[H_B_LO], meta[H_B_HI]
    ca, cb = int(meta[H_CELLS_A]), int(meta[H_CELLS_B])
    b_scale = cb / (b_hi - b_lo)
    b_min, b_max = b_lo - B_SLACK, b_hi + B_SLACK
    constants = mean_map(meta, 0)
    cells = int(meta[fast_block(0) + B_CELLS_OFFSET])
    degree = table_degree(meta, 0)
    patch = fast.patch_size(degree)
    first, log_a, log_b = fast.decode_cells(meta, cells, ca * cb)
    inside = np.empty(BATCH_BLOCK, dtype=np.bool_)
    offset = np.empty(BATCH_BLOCK, dtype=np.int64)
    fa = np.empty(BATCH_BLOCK)
    fb = np.empty(BATCH_BLOCK)
    x = np.empty(BATCH_BLOCK)
    z = np.empty(BATCH_BLOCK)
    lv = np.empty(BATCH_BLOCK)
    missing = 0
    logs_given = log_v.size > 0
    for start in range(0, n, BATCH_BLOCK):
        size = min(BATCH_BLOCK, n - start)
        for j in range(size):  # libm's log does not vectorise: alone, it leaves the next loop SIMD
            lv[j] = log_v[start + j] if logs_given else math.log(v[start + j])
        for j in range(size):
            i = start + j
            t = y[i] * m[i] if binary else abs(m[i] - y[i])  # y = +-1 exactly: no branch on it (see header_coordinates)
            b = 0.5 * lv[j]
            ok = (t >= t_lo) & (t <= t_hi) & (b >= b_min) & (b <= b_max)
            inside[j] = ok
            fa[j] = mapped_mean(constants, t, v[i]) * ca if ok else 0.0
            fb[j] = (b - b_lo) * b_scale if ok else 0.0
        for j in range(size):
            o, x[j], z[j] = fast.locate_decoded(first, log_a, log_b, ca, cb, fa[j], fb[j], patch)
            offset[j] = o if inside[j] else -1
        _patch_pass(coef, degree, offset, x, z, out, start, size)
        for j in range(size):
            i = start + j
            h = out[i]
            if h != h and inside[j]:  # a cell left to the stored tree
                h = stored_table_value(coef, meta, 0, fa[j], fb[j])
            if not logs_given:
                missing += _put_variance(out, i, v[i], h)
            else:
                out[i] = 2.0 * h + lv[j]
                missing += h != h
    return missing


def qp_variance(likelihood: Likelihood, y, cavity_mean, cavity_var) -> np.ndarray:
    """sigma_QP^2 for every (y, cavity_mean, cavity_var) (broadcast), from the tables where they
    cover the query, else by the checked Gauss-Hermite rule where it is accurate (nearly Gaussian
    tilted distributions, :mod:`qpviz.tilted.hermite`), else by direct quadrature (always the
    true QP value; the same numbers as :func:`qp_var_scalar`)."""
    if not isinstance(likelihood, Likelihood):
        raise TypeError("likelihood must be a qpviz likelihood, e.g. qpviz.likelihood('probit')")
    y_arr = likelihood.check_y(y)
    m, v = check_cavity(cavity_mean, cavity_var)
    return qp_variance_checked(likelihood, *np.broadcast_arrays(y_arr, m, v))


def qp_variance_checked(likelihood: Likelihood, y: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`qp_variance` of inputs already validated (``check_y``, ``check_cavity``) and
    broadcast to one shape: no second validation pass (qpviz.project uses it)."""
    coef, meta = jit_data(likelihood)
    if meta.size == 0:  # no table for this likelihood: sigma_QP by its quadrature
        return np.square(likelihood.qp_std(y, m, v))
    out = np.empty(y.shape)
    flat = out.reshape(-1)
    flat_v = np.ravel(v)
    if single_folded_table(meta):
        found = flat.size - _single_table_numpy(coef, meta, np.ravel(y), np.ravel(m), flat_v, flat)
    else:
        found = flat.size - qp_var_batch(coef, meta, np.ravel(y), np.ravel(m), flat_v, flat)
    if found == flat.size:
        return out  # every point from the table: no pass looking for the others
    missing = np.flatnonzero(np.isnan(flat))
    lk = likelihood.jit_handle() if missing.size else None
    if lk is not None:  # outside the tables' domain: the Gauss-Hermite rule where accurate, as qp_var_scalar
        flat_y, flat_m, flat_v = (np.ascontiguousarray(np.ravel(a)[missing], dtype=np.float64) for a in (y, m, v))
        found = np.full(missing.size, np.nan)
        hermite_qp_var_batch(lk, flat_y, flat_m, flat_v, found)
        flat[missing] = found
        missing = missing[np.isnan(found)]
    if missing.size:  # QP paper eq. 7 directly
        flat[missing] = np.square(likelihood.qp_std(np.ravel(y)[missing], np.ravel(m)[missing], np.ravel(v)[missing]))
    return out


def _single_table_numpy(coef, meta, y, m, v, out) -> int:
    """sigma_QP^2 of a single-table family (:func:`single_table_batch`) with NumPy's SIMD log and
    exp (~4x libm's) around the kernel, in place in ``out``, chunk by chunk (:data:`NUMPY_CHUNK`
    points: the four arrays stay in the L2 cache between the three passes); returns the NaN count."""
    missing = 0
    for start in range(0, out.size, NUMPY_CHUNK):
        part = slice(start, start + NUMPY_CHUNK)
        chunk, chunk_v = out[part], v[part]
        missing += single_table_batch(coef, meta, y[part], m[part], chunk_v, np.log(chunk_v, out=chunk), chunk)
        np.exp(chunk, out=chunk)
    return missing


@njit(**NUMBA_OPTIONS)
def hermite_qp_var_batch(lk, y, m, v, out):
    """sigma_QP^2 by the checked Gauss-Hermite rule into ``out`` where it accepts (y, m, v), else NaN."""
    for i in range(y.size):
        fast, sigma = hermite_qp_std(lk, y[i], m[i], v[i])
        out[i] = sigma * sigma if fast else np.nan
