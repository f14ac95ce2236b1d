"""The in-memory form of a table that lookups read: low-degree polynomial patches, found by arithmetic.

A file stores each table compactly (:mod:`qpviz.tables.chebyshev`: adaptive kd-trees of
degree-14 Chebyshev patches, a few tens of kB). Evaluating that form costs ~160 ns per point
here (a branchy tree descent plus ~120 coefficients), too slow for QP at EP's speed. On loading,
each table is therefore *re-approximated* (from the stored form, no quadrature: milliseconds)
by a faster form:

* the unit box of mapped coordinates (A, b) is cut into ``CA x CB`` uniform *cells*;
* cell (ia, ib) is cut uniformly into ``2^ka x 2^kb`` *patches*, with (ka, kb) chosen per cell
  (starting from (0, 0), the direction whose Chebyshev coefficients decay slowest is halved
  until every patch of the cell is within ``FAST_TOL`` of the stored form at the interleaved
  check points);
* a patch is a polynomial of total degree d in the local coordinates x, y in [-1, 1]:
  interpolated at the (d + 1) x (d + 1) Chebyshev-Lobatto points, its Chebyshev coefficients
  c[l, k] with l + k > d dropped (they decay in l + k; the check below sees the truncation),
  and stored in power form ``P[l, k]``, l + k <= d (value = sum y^l x^k P[l, k]: independent
  products, no recurrence chain; the power basis loses at most ~1e-14 at degree 7 on [-1, 1]).
  d is :data:`DEGREE` (7: 36 coefficients) or, for a family of one table,
  :data:`SMALL_DEGREE` (5: 21 coefficients; :func:`family_degree`): 4-5x the patches, still a
  few hundred kB in the cache, and ~60% of the multiply-adds per lookup. A one-table family whose
  degree-5 patches leave cells to the stored tree takes degree 7 if that leaves fewer
  (:func:`qpviz.tables.packing.runtime`).

A lookup is then: cell by index arithmetic, one load of the cell's code
(``patch offset * 256 + ka * 16 + kb``), the patch by index arithmetic, 21 or 36 multiply-adds.

Scale-free likelihoods (the step) have 1-D tables in z = y m / s (:mod:`qpviz.tables.families`);
their cells are stored in the file already at degree 7 and are only converted to power form.

Errors add: stored form (tol 1e-8, measured <= 6e-10) plus this re-approximation (<= FAST_TOL
= 2e-8 at the check points; between them measured up to 1.5x that at degree 7 and 1.25x at
degree 5, on 20 000 random points of the one-table families) stay below the 1e-7 target;
``lookup_tables/README.md`` has the measured numbers.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.tables.chebyshev import chebyshev_to_power, lobatto_points, tree_eval, values_to_chebyshev

__all__ = ["DEGREE", "SMALL_DEGREE", "FAST_TOL", "GRID", "PATCH_SIZE", "SMALL_PATCH_SIZE", "patch_size", "family_degree",
           "derive_table", "locate_patch", "decode_cells", "locate_decoded", "cell_value", "patch_value", "small_patch_value", "degree_patch_value",
           "line_value", "line_to_power"]

#: Total polynomial degree of the fast patches of a family of several tables (the Poisson counts),
#: and of the 1-D tables' cells (the evaluators are unrolled for it).
DEGREE = 7
PATCH_SIZE = (DEGREE + 1) * (DEGREE + 2) // 2
#: Total degree of the fast patches of a family of one 2-D table (probit, logistic, Student-t,
#: Laplace). Measured on probit (2026-11-28): 690 patches (116 kB) against 155 (45 kB) at degree 7,
#: no cell left to the stored tree, a 10^6-point patch pass of 8.2 ms against 16.6, and
#: ``project(qp)`` / ``project(ep)`` 1.54-1.56 -> 1.44-1.50. The Poisson families keep degree 7:
#: at 5 they need 1.5-2.7x the patches (12-20 MB, past the L2 cache) and leave more cells to the
#: stored tree (poisson_square 187 against 70).
SMALL_DEGREE = 5
SMALL_PATCH_SIZE = (SMALL_DEGREE + 1) * (SMALL_DEGREE + 2) // 2
#: Cells per table along (A, b).
GRID = (8, 8)
#: Max |h_fast - h_stored| accepted at the check points (h = log(sigma_QP / s): relative error).
FAST_TOL = 2e-8
#: Max total halvings ka + kb of one cell (2^8 = 256 patches). A cell that needs more (a sharp
#: feature, e.g. Poisson-square near m = 0 at small s) keeps reading the stored tree
#: (code :data:`STORED_CELL`): slower there, equally accurate.
MAX_LEVEL = 8
STORED_CELL = -1.0
#: Cell code = patch offset * CODE_SHIFT + ka * 16 + kb.
CODE_SHIFT = 256


def _fitting_constants(degree: int):
    """(D, M, Lobatto nodes, check points) of :func:`_fit_cell` at ``degree``. The check points
    are the ``degree`` Chebyshev points of the first kind, which interleave the Lobatto nodes
    (where an interpolant's error peaks)."""
    return (values_to_chebyshev(degree), chebyshev_to_power(degree), lobatto_points(degree),
            np.cos(np.pi * (np.arange(degree) + 0.5) / degree))


_FITTING = {degree: _fitting_constants(degree) for degree in (DEGREE, SMALL_DEGREE)}


@njit(**NUMBA_OPTIONS)
def patch_size(degree):
    """Power coefficients of a patch of total degree ``degree``: (d + 1)(d + 2) / 2."""
    return (degree + 1) * (degree + 2) // 2


def family_degree(n_tables: int) -> int:
    """The fast patches' first-choice degree for a family of ``n_tables`` 2-D tables (see
    :data:`SMALL_DEGREE`)."""
    return SMALL_DEGREE if n_tables == 1 else DEGREE


#: The evaluators may fuse a * b + c into one FMA instruction (fewer roundings, fewer
#: instructions); nothing else of fastmath (no reassociation: the sums keep their tree order).
EVAL_OPTIONS = dict(NUMBA_OPTIONS, fastmath={"contract"})


@njit(**EVAL_OPTIONS)
def _row(coef, p, x, x2, x3, x4, x5, x6, x7):
    """sum_k coef[p + k] x^k for k = 0..7, as a shallow tree (no long dependent chain)."""
    return ((coef[p] + coef[p + 1] * x) + (coef[p + 2] * x2 + coef[p + 3] * x3)) + \
        ((coef[p + 4] * x4 + coef[p + 5] * x5) + (coef[p + 6] * x6 + coef[p + 7] * x7))


@njit(**EVAL_OPTIONS)
def patch_value(c, p, x, y):
    """sum_(l + k <= 7) P[l, k] y^l x^k of the triangular power-form patch at ``c[p:p + 36]``
    (row l holds P[l, 0..7-l]): 36 independent products summed as shallow trees."""
    x2 = x * x
    x3 = x2 * x
    x4 = x2 * x2
    x5 = x4 * x
    x6 = x4 * x2
    x7 = x4 * x3
    y2 = y * y
    y3 = y2 * y
    y4 = y2 * y2
    r0 = _row(c, p, x, x2, x3, x4, x5, x6, x7)
    r1 = ((c[p + 8] + c[p + 9] * x) + (c[p + 10] * x2 + c[p + 11] * x3)) + \
        ((c[p + 12] * x4 + c[p + 13] * x5) + c[p + 14] * x6)
    r2 = ((c[p + 15] + c[p + 16] * x) + (c[p + 17] * x2 + c[p + 18] * x3)) + (c[p + 19] * x4 + c[p + 20] * x5)
    r3 = ((c[p + 21] + c[p + 22] * x) + (c[p + 23] * x2 + c[p + 24] * x3)) + c[p + 25] * x4
    r4 = (c[p + 26] + c[p + 27] * x) + (c[p + 28] * x2 + c[p + 29] * x3)
    r5 = (c[p + 30] + c[p + 31] * x) + c[p + 32] * x2
    r6 = c[p + 33] + c[p + 34] * x
    r7 = c[p + 35]
    return ((r0 + r1 * y) + (r2 * y2 + r3 * y3)) + ((r4 + r5 * y) + (r6 * y2 + r7 * y3)) * y4


@njit(**EVAL_OPTIONS)
def small_patch_value(c, p, x, y):
    """sum_(l + k <= 5) P[l, k] y^l x^k of the triangular power-form patch at ``c[p:p + 21]``
    (row l holds P[l, 0..5-l]), summed as shallow trees like :func:`patch_value`."""
    x2 = x * x
    x3 = x2 * x
    x4 = x2 * x2
    x5 = x4 * x
    y2 = y * y
    y3 = y2 * y
    y4 = y2 * y2
    r0 = ((c[p] + c[p + 1] * x) + (c[p + 2] * x2 + c[p + 3] * x3)) + (c[p + 4] * x4 + c[p + 5] * x5)
    r1 = ((c[p + 6] + c[p + 7] * x) + (c[p + 8] * x2 + c[p + 9] * x3)) + c[p + 10] * x4
    r2 = (c[p + 11] + c[p + 12] * x) + (c[p + 13] * x2 + c[p + 14] * x3)
    r3 = (c[p + 15] + c[p + 16] * x) + c[p + 17] * x2
    r4 = c[p + 18] + c[p + 19] * x
    r5 = c[p + 20]
    return ((r0 + r1 * y) + (r2 * y2 + r3 * y3)) + (r4 + r5 * y) * y4


@njit(**EVAL_OPTIONS)
def degree_patch_value(degree, c, p, x, y):
    """The value of a patch of total degree ``degree`` (:data:`SMALL_DEGREE` or :data:`DEGREE`)."""
    if degree == SMALL_DEGREE:
        return small_patch_value(c, p, x, y)
    return patch_value(c, p, x, y)


@njit(**NUMBA_OPTIONS)
def line_value(coef, off, x):
    """sum_k P[k] x^k of the degree-7 power-form polynomial at ``coef[off:off + 8]``."""
    x2 = x * x
    x4 = x2 * x2
    return _row(coef, off, x, x2, x2 * x, x4, x4 * x, x4 * x2, x4 * x2 * x)


@njit(**NUMBA_OPTIONS)
def locate_patch(cells, c0, ca, cb, fa, fb, size):
    """(offset of the patch in ``coef``, local x, local y) at fractional cell coordinates
    (fa, fb) in [0, ca] x [0, cb] of the cell table at ``cells[c0:]`` (row-major over b), whose
    patches have ``size`` coefficients (:func:`patch_size`); offset -1 in a cell that reads the
    stored tree instead.

    (fa, fb) come from :func:`qpviz.tables.lookup.table_coordinates`: inside the box up to
    rounding, so int() (which truncates -1e-17 to 0) and the clamps at the top suffice.
    """
    ia = min(int(fa), ca - 1)
    ib = min(int(fb), cb - 1)
    code_f = cells[c0 + ib * ca + ia]
    if code_f < 0.0:
        return -1, 0.0, 0.0
    code = int(code_f)
    return _patch_in_cell(code >> 8, (code >> 4) & 15, code & 15, ia, ib, fa, fb, size)


@njit(**NUMBA_OPTIONS)
def decode_cells(cells, c0, n_cells):
    """(first patch offset, log2 of the patches along a, along b) of the ``n_cells`` cell codes at
    ``cells[c0:]`` as integer arrays (first offset -1: the cell reads the stored tree), for
    :func:`locate_decoded`: a batch decodes its table's few cells once instead of every point's."""
    first = np.empty(n_cells, dtype=np.int64)
    log_a = np.zeros(n_cells, dtype=np.int64)
    log_b = np.zeros(n_cells, dtype=np.int64)
    for c in range(n_cells):
        code_f = cells[c0 + c]
        if code_f < 0.0:
            first[c] = -1
            continue
        code = int(code_f)
        first[c] = code >> 8
        log_a[c] = (code >> 4) & 15
        log_b[c] = code & 15
    return first, log_a, log_b


@njit(**NUMBA_OPTIONS)
def locate_decoded(first, log_a, log_b, ca, cb, fa, fb, size):
    """:func:`locate_patch` with the cell codes decoded by :func:`decode_cells` (the same numbers;
    measured on 10^6 probit points: 9.6 -> 8.1 ms)."""
    ia = min(int(fa), ca - 1)
    ib = min(int(fb), cb - 1)
    c = ib * ca + ia
    if first[c] < 0:
        return -1, 0.0, 0.0
    return _patch_in_cell(first[c], log_a[c], log_b[c], ia, ib, fa, fb, size)


@njit(**NUMBA_OPTIONS)
def _patch_in_cell(first, log_a, log_b, ia, ib, fa, fb, size):
    """(offset, x, y) of the patch at (fa, fb) in cell (ia, ib), whose 2^log_a x 2^log_b patches
    start at offset ``first``."""
    na = 1 << log_a
    nb = 1 << log_b
    pa = (fa - ia) * na  # position inside the cell, in patches
    pb = (fb - ib) * nb
    sa = min(int(pa), na - 1)
    sb = min(int(pb), nb - 1)
    return first + (sb * na + sa) * size, 2.0 * (pa - sa) - 1.0, 2.0 * (pb - sb) - 1.0


@njit(**NUMBA_OPTIONS)
def cell_value(coef, cells, c0, ca, cb, fa, fb, degree):
    """h at fractional cell coordinates (see :func:`locate_patch`) of patches of total degree
    ``degree``; NaN in a cell that reads the stored tree instead."""
    off, x, y = locate_patch(cells, c0, ca, cb, fa, fb, patch_size(degree))
    if off < 0:
        return np.nan
    return degree_patch_value(degree, coef, off, x, y)


@njit(**NUMBA_OPTIONS)
def _fit_cell(nodes_arr, node0, coef_s, coef0, a0, a1, b0, b1, tol, max_level, cheb, to_power, lob, chk, out):
    """Fit one cell [a0, a1] x [b0, b1] of the stored tree at ``nodes_arr[node0:]``: returns
    (ka, kb, number of patches written to ``out`` ((d + 1)(d + 2) / 2 power coefficients each,
    d = lob.size - 1, patch sb * 2^ka + sa), max check error), or a patch count of -1 when even
    2^max_level patches miss ``tol`` (the cell then reads the stored tree).

    Per patch: values V at the (d + 1) x (d + 1) Lobatto points, Chebyshev coefficients
    C = D V D^T (``cheb`` = D), C[l, k] = 0 for l + k > d, power form P = M^T C M (``to_power``
    = M), and |P(x, y) - stored(x, y)| at the d x d interleaved check points. The first failing patch
    ends the attempt; the cell is then halved along a or b, whichever the Chebyshev
    coefficients (sum |C| over the last two columns vs rows) say converges slower.
    """
    n = lob.size
    nc = chk.size
    size = patch_size(n - 1)
    values = np.empty((n, n))
    half = np.empty((n, n))
    coef = np.empty((n, n))
    power = np.empty((n, n))
    xpow = np.empty((nc, n))
    for q in range(nc):
        xpow[q, 0] = 1.0
        for k in range(1, n):
            xpow[q, k] = xpow[q, k - 1] * chk[q]
    ka = 0
    kb = 0
    while True:
        na = 1 << ka
        nb = 1 << kb
        wa = (a1 - a0) / na
        wb = (b1 - b0) / nb
        worst = 0.0
        tail_a = 0.0
        tail_b = 0.0
        failed = False
        for sb in range(nb):
            pb0 = b0 + wb * sb
            for sa in range(na):
                pa0 = a0 + wa * sa
                for j in range(n):
                    bj = pb0 + 0.5 * wb * (lob[j] + 1.0)
                    for i in range(n):
                        values[j, i] = tree_eval(nodes_arr, node0, coef_s, coef0, pa0 + 0.5 * wa * (lob[i] + 1.0), bj)
                for r in range(n):  # half = D V, coef = half D^T
                    for c in range(n):
                        acc = 0.0
                        for k in range(n):
                            acc += cheb[r, k] * values[k, c]
                        half[r, c] = acc
                for r in range(n):
                    for c in range(n):
                        acc = 0.0
                        for k in range(n):
                            acc += half[r, k] * cheb[c, k]
                        coef[r, c] = acc
                ta = 0.0  # sum |C| over the last two columns (degrees in a) and rows (in b)
                tb = 0.0
                for k in range(n):
                    for last in range(n - 2, n):
                        ta += abs(coef[k, last])
                        tb += abs(coef[last, k])
                tail_a = max(tail_a, ta)
                tail_b = max(tail_b, tb)
                for r in range(n):  # power = M^T coef M over l + k <= d only (triangular again)
                    for c in range(n):
                        acc = 0.0
                        if r + c < n:
                            for j in range(r, n):
                                for k in range(c, n - j):
                                    acc += to_power[j, r] * coef[j, k] * to_power[k, c]
                        power[r, c] = acc
                err = 0.0
                for qb in range(nc):
                    bq = pb0 + 0.5 * wb * (chk[qb] + 1.0)
                    for qa in range(nc):
                        exact = tree_eval(nodes_arr, node0, coef_s, coef0, pa0 + 0.5 * wa * (chk[qa] + 1.0), bq)
                        approx = 0.0
                        for r in range(n):
                            for c in range(n - r):
                                approx += power[r, c] * xpow[qb, r] * xpow[qa, c]
                        d = abs(approx - exact)
                        if not (d <= err):
                            err = d if d == d else np.inf
                worst = max(worst, err)
                if not (err <= tol):
                    failed = True
                    break
                pos = (sb * na + sa) * size
                for r in range(n):
                    for c in range(n - r):
                        out[pos] = power[r, c]
                        pos += 1
            if failed:
                break
        if not failed:
            return ka, kb, na * nb, worst
        if ka + kb >= max_level:
            return ka, kb, -1, 0.0
        if (tail_a >= tail_b and ka < 15) or kb >= 15:
            ka += 1
        else:
            kb += 1


def derive_table(stored, box, grid=GRID, tol=FAST_TOL, degree=DEGREE):
    """Fast form of one stored table with patches of total degree ``degree`` (:data:`DEGREE` or
    :data:`SMALL_DEGREE`): (cell codes (cb * ca floats), patches, max error, number of cells left
    to the stored tree).

    ``stored = (nodes, node0, coef, coef0)`` locates the stored tree (see
    :func:`qpviz.tables.chebyshev.tree_eval`); ``box = (a0, a1, b0, b1)`` is its domain.
    """
    a0, a1, b0, b1 = box
    ca, cb = grid
    ea, eb = np.linspace(a0, a1, ca + 1), np.linspace(b0, b1, cb + 1)
    codes = np.empty(ca * cb)
    nodes_arr, node0, coef_s, coef0 = stored
    cheb, to_power, nodes, checks = _FITTING[degree]
    size = patch_size(degree)
    buffer = np.empty((1 << MAX_LEVEL) * size)
    parts, offset, worst, slow = [np.empty(0)], 0, 0.0, 0
    for ib in range(cb):
        for ia in range(ca):
            ka, kb, count, err = _fit_cell(nodes_arr, node0, coef_s, coef0, ea[ia], ea[ia + 1], eb[ib], eb[ib + 1],
                                           tol, MAX_LEVEL, cheb, to_power, nodes, checks, buffer)
            if count < 0:
                codes[ib * ca + ia] = STORED_CELL
                slow += 1
                continue
            codes[ib * ca + ia] = offset * CODE_SHIFT + ka * 16 + kb
            parts.append(buffer[: count * size].copy())
            offset += count * size
            worst = max(worst, err)
    return codes, np.concatenate(parts), worst, slow


def line_to_power(cheb_cells: np.ndarray) -> np.ndarray:
    """Power form of degree-7 Chebyshev cells (rows of 8 coefficients on x in [-1, 1])."""
    return np.asarray(cheb_cells, float).reshape(-1, DEGREE + 1) @ chebyshev_to_power(DEGREE)
