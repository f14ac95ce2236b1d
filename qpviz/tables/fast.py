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
* a patch is a polynomial of total degree :data:`DEGREE` (7) in the local coordinates
  x, y in [-1, 1]: interpolated at the 8 x 8 Chebyshev-Lobatto points, its Chebyshev
  coefficients c[l, k] with l + k > 7 dropped (they decay in l + k; the check below sees the
  truncation), and stored in power form ``P[l, k]``, l + k <= 7 (value = sum y^l x^k P[l, k]:
  36 independent products, no recurrence chain; the power basis loses at most ~1e-14 at
  degree 7 on [-1, 1]).

A lookup is then: cell by index arithmetic, one load of the cell's code
(``patch offset * 256 + ka * 16 + kb``), the patch by index arithmetic, 36 multiply-adds.

Scale-free likelihoods (the step) have 1-D tables in z = y m / s (:mod:`qpviz.tables.families`);
their cells are stored in the file already at degree 7 and are only converted to power form.

Errors add: stored form (tol 1e-8, measured <= 6e-10) plus this re-approximation (<= FAST_TOL)
stay far below the 1e-7 target; ``lookup_tables/README.md`` has the measured numbers.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.tables.chebyshev import chebyshev_to_power, lobatto_points, tree_eval, values_to_chebyshev

__all__ = ["DEGREE", "FAST_TOL", "GRID", "PATCH_SIZE", "derive_table", "cell_value", "patch_value", "line_value",
           "line_to_power"]

#: Polynomial degree of the fast patches in each coordinate (the evaluator is unrolled for it).
DEGREE = 7
PATCH_SIZE = (DEGREE + 1) * (DEGREE + 2) // 2
#: Cells per table along (A, b).
GRID = (8, 8)
#: Max |h_fast - h_stored| accepted at the check points (h = log(sigma_QP / s): relative error).
FAST_TOL = 5e-9
#: Max total halvings ka + kb of one cell (2^6 = 64 patches). A cell that needs more (a sharp
#: feature, e.g. Poisson-square near m = 0 at small s) keeps reading the stored tree
#: (code :data:`STORED_CELL`): slower there, equally accurate.
MAX_LEVEL = 6
STORED_CELL = -1.0
#: Cell code = patch offset * CODE_SHIFT + ka * 16 + kb.
CODE_SHIFT = 256


_CHEB = values_to_chebyshev(DEGREE)
_TO_POWER = chebyshev_to_power(DEGREE)
#: 1 where l + k <= DEGREE: the kept (triangular) coefficients, row-major (row l has 8 - l).
_TRIANGLE = (np.add.outer(np.arange(DEGREE + 1), np.arange(DEGREE + 1)) <= DEGREE).astype(float)
_NODES = lobatto_points(DEGREE)
#: Check points: the Chebyshev points of the first kind, which interleave the Lobatto nodes
#: (where an interpolant's error peaks).
_CHECKS = np.cos(np.pi * (np.arange(DEGREE) + 0.5) / DEGREE)


@njit(**NUMBA_OPTIONS, fastmath={"contract"})
def _row(coef, p, x, x2, x3, x4, x5, x6, x7):
    """sum_k coef[p + k] x^k for k = 0..7, as a shallow tree (no long dependent chain)."""
    return ((coef[p] + coef[p + 1] * x) + (coef[p + 2] * x2 + coef[p + 3] * x3)) + \
        ((coef[p + 4] * x4 + coef[p + 5] * x5) + (coef[p + 6] * x6 + coef[p + 7] * x7))


@njit(**NUMBA_OPTIONS, fastmath={"contract"})
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


@njit(**NUMBA_OPTIONS)
def line_value(coef, off, x):
    """sum_k P[k] x^k of the degree-7 power-form polynomial at ``coef[off:off + 8]``."""
    x2 = x * x
    x4 = x2 * x2
    return _row(coef, off, x, x2, x2 * x, x4, x4 * x, x4 * x2, x4 * x2 * x)


@njit(**NUMBA_OPTIONS)
def cell_value(coef, cells, c0, ca, cb, fa, fb):
    """h at fractional cell coordinates (fa, fb) in [0, ca] x [0, cb] of the cell table at
    ``cells[c0:]`` (row-major over b); NaN for a cell that reads the stored tree instead.

    (fa, fb) come from :func:`qpviz.tables.lookup.table_coordinates`: inside the box up to
    rounding, so int() (which truncates -1e-17 to 0) and the clamps at the top suffice.
    """
    ia = min(int(fa), ca - 1)
    ib = min(int(fb), cb - 1)
    code_f = cells[c0 + ib * ca + ia]
    if code_f < 0.0:
        return np.nan
    code = int(code_f)
    na = 1 << ((code >> 4) & 15)
    nb = 1 << (code & 15)
    pa = (fa - ia) * na  # position inside the cell, in patches
    pb = (fb - ib) * nb
    sa = min(int(pa), na - 1)
    sb = min(int(pb), nb - 1)
    off = (code >> 8) + (sb * na + sa) * PATCH_SIZE
    return patch_value(coef, off, 2.0 * (pa - sa) - 1.0, 2.0 * (pb - sb) - 1.0)


@njit(**NUMBA_OPTIONS)
def _stored_values(nodes_arr, node0, coef_s, coef0, a, b, out):
    for i in range(a.size):
        out[i] = tree_eval(nodes_arr, node0, coef_s, coef0, a[i], b[i])


def _fit_cell(stored, box, tol):
    """(ka, kb, power-form patches (2^kb x 2^ka x 36, row-major), max check error); None
    instead of the patches when the cell must keep reading the stored tree."""
    nodes_arr, node0, coef_s, coef0 = stored
    a0, a1, b0, b1 = box
    ka = kb = 0
    n = DEGREE + 1
    while True:
        na, nb = 1 << ka, 1 << kb
        # patch (sb, sa) covers [a0 + sa wa, a0 + (sa + 1) wa] x [...]: nodes and checks
        wa, wb = (a1 - a0) / na, (b1 - b0) / nb
        na_idx, nb_idx = np.arange(na), np.arange(nb)

        def grid(points):
            pa = a0 + wa * (na_idx[:, None] + 0.5 * (points[None, :] + 1.0))  # (na, p)
            pb = b0 + wb * (nb_idx[:, None] + 0.5 * (points[None, :] + 1.0))  # (nb, p)
            p = points.size
            aa = np.broadcast_to(pa[None, :, None, :], (nb, na, p, p)).ravel()
            bb = np.broadcast_to(pb[:, None, :, None], (nb, na, p, p)).ravel()
            out = np.empty(aa.size)
            _stored_values(nodes_arr, node0, coef_s, coef0, np.ascontiguousarray(aa), np.ascontiguousarray(bb), out)
            return out.reshape(nb, na, p, p)  # [sb, sa, j (b), i (a)]

        values = grid(_NODES)
        checks = grid(_CHECKS)
        cheb = np.einsum("lj,uvji,ki->uvlk", _CHEB, values, _CHEB)  # [sb, sa, degree in b, degree in a]
        if np.all(np.isfinite(values)) and np.all(np.isfinite(checks)):
            # total degree <= 7: drop c[l, k] for l + k > 7, then the power form (still triangular)
            power = np.einsum("jl,uvjk,km->uvlm", _TO_POWER, cheb * _TRIANGLE, _TO_POWER)
            xp = _CHECKS[:, None] ** np.arange(n)[None, :]
            approx = np.einsum("yl,uvlk,xk->uvyx", xp, power, xp)
            err = float(np.max(np.abs(approx - checks)))
        else:  # part of an uncovered stored patch: keep halving, then give up
            power, err = None, math.inf
        if err <= tol:
            return ka, kb, power[..., _TRIANGLE.astype(bool)].reshape(-1), err
        if ka + kb >= MAX_LEVEL:
            return ka, kb, None, 0.0
        tail_a = np.max(np.abs(cheb[..., -2:]).sum(axis=(-2, -1)))
        tail_b = np.max(np.abs(cheb[..., -2:, :]).sum(axis=(-2, -1)))
        if (tail_a >= tail_b and ka < 15) or kb >= 15:
            ka += 1
        else:
            kb += 1


def derive_table(stored, box, grid=GRID, tol=FAST_TOL):
    """Fast form of one stored table: (cell codes (cb * ca floats), patches, max error, number of
    cells left to the stored tree).

    ``stored = (nodes, node0, coef, coef0)`` locates the stored tree (see
    :func:`qpviz.tables.chebyshev.tree_eval`); ``box = (a0, a1, b0, b1)`` is its domain.
    """
    a0, a1, b0, b1 = box
    ca, cb = grid
    ea, eb = np.linspace(a0, a1, ca + 1), np.linspace(b0, b1, cb + 1)
    codes = np.empty(ca * cb)
    parts, offset, worst, slow = [np.empty(0)], 0, 0.0, 0
    for ib in range(cb):
        for ia in range(ca):
            ka, kb, patches, err = _fit_cell(stored, (ea[ia], ea[ia + 1], eb[ib], eb[ib + 1]), tol)
            if patches is None:
                codes[ib * ca + ia] = STORED_CELL
                slow += 1
                continue
            codes[ib * ca + ia] = offset * CODE_SHIFT + ka * 16 + kb
            parts.append(patches)
            offset += patches.size
            worst = max(worst, err)
    return codes, np.concatenate(parts), worst, slow


def line_to_power(cheb_cells: np.ndarray) -> np.ndarray:
    """Power form of degree-7 Chebyshev cells (rows of 8 coefficients on x in [-1, 1])."""
    return np.asarray(cheb_cells, float).reshape(-1, DEGREE + 1) @ chebyshev_to_power(DEGREE)
