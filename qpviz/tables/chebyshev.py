"""Adaptive piecewise tensor-product Chebyshev interpolation on a rectangle (a kd-tree of patches).

A smooth function h(a, b) on a box [a0, a1] x [b0, b1] is approximated by patches, each a
truncated tensor-product Chebyshev series

    h(a, b) ~ sum_{j < nb} sum_{i < na} c_ji T_i(x) T_j(y),
    x = (2a - a0 - a1) / (a1 - a0),  y = (2b - b0 - b1) / (b1 - b0),

(Trefethen, *Approximation Theory and Approximation Practice*, ch. 3 and 8). A patch is fitted
by interpolation at the (degree + 1)^2 Chebyshev-Lobatto points (coefficients by a type-I
DCT), accepted when the coefficient tail and fresh validation points inside the patch both
show an error below ``tol``, else halved along the direction whose coefficients decay slowest.

The box is first cut into a uniform grid of ``ga x gb`` cells (found by index arithmetic,
no search); each cell is the root of a small kd-tree. A random query then costs one or two
dependent loads instead of a deep branchy descent (a plain kd-tree of depth ~10 measured
~10 M lookups/s for the descent alone; the grid keeps it to a few levels).

Storage (two float64 arrays, so numba kernels take them as plain arguments):

* ``nodes``: a header ``[a0, a1, b0, b1, ga, gb, 0, 0]``, then 4 floats per node; node
  ``ib * ga + ia`` is the root of cell (ia, ib). Interior node ``[dim, first, split, 0]``:
  dim 0 splits a, 1 splits b; the children are nodes ``first`` (below ``split``) and
  ``first + 1``. Leaf ``[-1, offset, nb, n_coef]`` with the patch at ``coef[offset:]`` laid
  out as ``[a_mid, 2/(a1-a0), b_mid, 2/(b1-b0), L_0 .. L_(nb-1), row 0, row 1, ...]``: row j
  (degree j in b) holds its first L_j coefficients c_j0 .. c_j(L_j - 1), with L_0 >= L_1 >= ...
  (Chebyshev coefficients of a smooth function decay in i + j, so the kept set is roughly a
  triangle: about half the storage and work of a square). The evaluator sums rows in blocks
  of four from the top (rows nb-1..nb-4, then nb-5..nb-8, ...; the last nb mod 4 rows one by
  one), so rows of one block are zero-padded to a common length. A leaf with ``nb == 0`` is a patch that
  could not be fitted to ``tol``: it evaluates to NaN and callers compute directly there.

This module knows nothing about likelihoods: :mod:`qpviz.tables.families` maps cavity
parameters to (a, b), and :mod:`qpviz.tables` evaluates the trees.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.fft import dct

from qpviz.config import NUMBA_OPTIONS

__all__ = ["PatchTree", "LineFit", "fit_tree", "fit_line", "tree_eval", "lobatto_points", "chebyshev_coefficients_2d",
           "values_to_chebyshev", "chebyshev_to_power"]

LEAF = -1.0
NODE_WIDTH = 4
TREE_HEADER = 8  # a0, a1, b0, b1, ga, gb, 0, 0
PATCH_HEADER = 4  # a_mid, 2 / (a1 - a0), b_mid, 2 / (b1 - b0); then the nb row lengths
#: Kept coefficients are rounded to multiples of 2^-40 (~9e-13; at most ~1e-10 summed over a
#: patch, 100x below the fitting tolerance) so that the files can store most of them as small
#: integers (:mod:`qpviz.tables.store`). The acceptance test sees the rounded coefficients.
QUANTUM = 2.0 ** -40


def lobatto_points(degree: int) -> np.ndarray:
    """The degree + 1 Chebyshev-Lobatto points cos(pi k / degree) on [-1, 1], ascending."""
    return np.cos(np.pi * np.arange(degree, -1, -1) / degree)


def chebyshev_coefficients_2d(values: np.ndarray) -> np.ndarray:
    """Coefficients c[j, i] of the tensor Chebyshev interpolant of samples at Lobatto points.

    ``values[j, i]`` is the function at (x_i, y_j) with x, y = :func:`lobatto_points`. In 1-D,
    c_k = (2 / n) sum''_m f(x_m) T_k(x_m) (ends of both sums halved): a type-I DCT.
    """
    coef = np.asarray(values, float)
    for axis in (0, 1):
        n = coef.shape[axis] - 1
        # Lobatto points ascending = DCT ordering reversed
        coef = dct(np.flip(coef, axis=axis), type=1, axis=axis) / n
        edge = [slice(None)] * 2
        for k in (0, n):
            edge[axis] = k
            coef[tuple(edge)] *= 0.5
    return coef


def _clenshaw_2d_numpy(coef: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Evaluate sum c[j, i] T_i(x) T_j(y) at points (x, y) (NumPy, for fitting checks)."""
    tx = np.polynomial.chebyshev.chebvander(x, coef.shape[1] - 1)
    ty = np.polynomial.chebyshev.chebvander(y, coef.shape[0] - 1)
    return np.einsum("pi,ji,pj->p", tx, coef, ty)


@dataclass
class PatchTree:
    """A fitted grid of kd-trees of Chebyshev patches (layout in the module docstring)."""

    nodes: np.ndarray
    coef: np.ndarray
    n_leaves: int
    n_failed: int
    max_check_error: float
    n_evaluations: int
    max_depth_used: int


def _row_lengths(coef: np.ndarray, budget: float) -> np.ndarray:
    """Non-increasing row lengths L_j dropping at most ``budget`` of sum |c| in total.

    Each row may drop a tail summing to budget / (number of rows); rows that keep nothing
    at the top are removed; L_j = max(L_j, L_(j+1), ...) keeps the lengths non-increasing.
    """
    mag = np.abs(coef)
    share = budget / coef.shape[0]
    tails = np.concatenate([np.cumsum(mag[:, ::-1], axis=1)[:, ::-1], np.zeros((coef.shape[0], 1))], axis=1)
    lengths = np.argmax(tails <= share, axis=1)  # first i whose tail (columns >= i) fits the share
    lengths = np.maximum.accumulate(lengths[::-1])[::-1]
    keep_rows = max(int(np.count_nonzero(lengths)), 1)
    lengths = lengths[:keep_rows]
    lengths[0] = max(lengths[0], 1)
    return lengths


class _PatchFitter:
    """Fits one patch: samples at Lobatto points, coefficients, acceptance test."""

    def __init__(self, func, degree: int, tol: float, n_check: int, seed: int):
        self.func = func
        self.tol = tol
        pts = lobatto_points(degree)
        self.gx, self.gy = np.meshgrid(pts, pts)  # gx[j, i] = x_i, gy[j, i] = y_j
        self.check = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(2, n_check))
        self.n_eval = 0

    @staticmethod
    def _to_box(lx, ly, box):
        a0, a1, b0, b1 = box
        return 0.5 * (a0 + a1) + 0.5 * (a1 - a0) * lx, 0.5 * (b0 + b1) + 0.5 * (b1 - b0) * ly

    def fit(self, box):
        """(coefficients or None, check error, tail along a, tail along b)."""
        fa, fb = self._to_box(self.gx, self.gy, box)
        ca, cb = self._to_box(self.check[0], self.check[1], box)
        values = np.asarray(self.func(np.concatenate([fa.ravel(), ca]), np.concatenate([fb.ravel(), cb])), float)
        self.n_eval += values.size
        if not np.all(np.isfinite(values)):
            return None, np.inf, np.inf, np.inf
        coef = chebyshev_coefficients_2d(values[: fa.size].reshape(fa.shape))
        tail_a = float(np.abs(coef[:, -2:]).sum())
        tail_b = float(np.abs(coef[-2:, :]).sum())
        lengths = _row_lengths(coef, self.tol / 8)
        kept = np.zeros((lengths.size, lengths[0]))
        for j, n in enumerate(lengths):
            kept[j, :n] = np.round(coef[j, :n] / QUANTUM) * QUANTUM + 0.0  # + 0.0: no negative zeros
        err = float(np.max(np.abs(_clenshaw_2d_numpy(kept, self.check[0], self.check[1]) - values[fa.size:])))
        if max(tail_a, tail_b) <= self.tol / 4 and err <= self.tol:
            return kept, err, tail_a, tail_b
        return None, err, tail_a, tail_b


def fit_tree(func, box, *, grid=(8, 4), degree: int = 12, tol: float = 1e-8, max_depth: int = 10,
             n_check: int = 12, seed: int = 20260101) -> PatchTree:
    """Fit h = ``func(a, b)`` (vectorised over arrays) on ``box = (a0, a1, b0, b1)`` to ``tol``.

    The box is cut into ``grid = (ga, gb)`` uniform cells. A patch is interpolated at
    (degree + 1)^2 Lobatto points and accepted when (i) the sum of |c| over the last two
    coefficient rows and the last two columns is <= tol / 4 and (ii) at ``n_check`` fixed
    pseudo-random points inside the patch (never fitting nodes) the truncated interpolant is
    within ``tol`` of ``func``. Otherwise it is halved along the direction with the larger
    coefficient tail. Patches still failing after ``max_depth`` halvings are stored as
    uncovered (evaluate to NaN; callers compute directly there). Deterministic.
    """
    a0, a1, b0, b1 = map(float, box)
    ga, gb = int(grid[0]), int(grid[1])
    if not (a1 > a0 and b1 > b0):
        raise ValueError(f"box must satisfy a0 < a1 and b0 < b1, got {box}")
    if degree < 3 or ga < 1 or gb < 1:
        raise ValueError(f"need degree >= 3 and a grid of at least 1 x 1 cells, got {degree}, {grid}")
    fitter = _PatchFitter(func, degree, tol, n_check, seed)
    ea = np.linspace(a0, a1, ga + 1)
    eb = np.linspace(b0, b1, gb + 1)
    nodes: list[list[float]] = [[] for _ in range(ga * gb)]
    leaves: list[np.ndarray] = []  # each leaf's stored patch
    stack = [(ib * ga + ia, (ea[ia], ea[ia + 1], eb[ib], eb[ib + 1]), 0)
             for ib in range(gb - 1, -1, -1) for ia in range(ga - 1, -1, -1)]
    max_err, n_failed, deepest = 0.0, 0, 0
    while stack:
        index, bx, depth = stack.pop()
        deepest = max(deepest, depth)
        kept, err, tail_a, tail_b = fitter.fit(bx)
        if kept is not None or depth >= max_depth:
            if kept is None:
                n_failed += 1
            else:
                max_err = max(max_err, err)
            chunk, nb = _patch_chunk(bx, kept)
            leaves.append(chunk)
            nodes[index] = [LEAF, len(leaves) - 1, nb, chunk.size]
            continue
        pa0, pa1, pb0, pb1 = bx
        dim = 0 if tail_a >= tail_b else 1  # split where the series converges slowest
        mid = 0.5 * (pa0 + pa1) if dim == 0 else 0.5 * (pb0 + pb1)
        lo, hi = ((pa0, mid, pb0, pb1), (mid, pa1, pb0, pb1)) if dim == 0 else ((pa0, pa1, pb0, mid), (pa0, pa1, mid, pb1))
        first = len(nodes)
        nodes.extend([[], []])
        nodes[index] = [float(dim), float(first), mid, 0.0]
        stack.append((first + 1, hi, depth + 1))
        stack.append((first, lo, depth + 1))

    leaf_offset = np.concatenate([[0], np.cumsum([chunk.size for chunk in leaves])[:-1]])
    node_arr = np.asarray(nodes, float)
    is_leaf = node_arr[:, 0] == LEAF
    node_arr[is_leaf, 1] = leaf_offset.astype(float)[node_arr[is_leaf, 1].astype(int)]
    header = np.array([a0, a1, b0, b1, ga, gb, 0.0, 0.0])
    return PatchTree(np.concatenate([header, node_arr.ravel()]), np.concatenate(leaves), len(leaves),
                     n_failed, max_err, fitter.n_eval, deepest)


def _patch_chunk(box, kept) -> tuple[np.ndarray, int]:
    """(stored form of one patch, its number of rows nb); nb = 0 for an uncovered patch."""
    a0, a1, b0, b1 = box
    head = [0.5 * (a0 + a1), 2.0 / (a1 - a0), 0.5 * (b0 + b1), 2.0 / (b1 - b0)]
    if kept is None:
        return np.asarray(head, float), 0
    # row lengths up to the last non-zero coefficient, non-increasing, empty top rows dropped
    last = np.array([np.flatnonzero(row)[-1] + 1 if np.any(row) else 0 for row in kept])
    lengths = np.maximum.accumulate(last[::-1])[::-1]
    lengths = lengths[: max(int(np.count_nonzero(lengths)), 1)]
    lengths[0] = max(lengths[0], 1)
    nb = lengths.size
    for top in range(nb - 1, 2, -4):  # blocks of the evaluator: rows top-3 .. top share a length
        lengths[top - 3: top + 1] = lengths[top - 3]
    rows = [kept[j, :n] for j, n in enumerate(lengths)]
    return np.concatenate([np.asarray(head + lengths.tolist(), float)] + rows), int(lengths.size)


@njit(**NUMBA_OPTIONS)
def tree_eval(nodes, node0, coef, coef0, a, b):
    """h(a, b) from the patch tree stored at ``nodes[node0:]`` (coefficient offsets relative to
    ``coef0``). NaN inside an uncovered patch. (a, b) must lie in the box (clamped to it).

    Cell by index arithmetic, a short kd descent, then sum_j g_j T_j(y) with
    g_j = sum_i c_ji T_i(x), four rows at a time sharing one T_i(x) recurrence. T_j(y) and
    T_i(x) come from three-term recurrences that do not wait for the sums, so the CPU overlaps
    the rows (a Clenshaw sum over j is one long dependent chain: measured slower).
    """
    a0 = nodes[node0]
    a1 = nodes[node0 + 1]
    b0 = nodes[node0 + 2]
    b1 = nodes[node0 + 3]
    ga = int(nodes[node0 + 4])
    gb = int(nodes[node0 + 5])
    ia = min(max(int((a - a0) / (a1 - a0) * ga), 0), ga - 1)
    ib = min(max(int((b - b0) / (b1 - b0) * gb), 0), gb - 1)
    base = node0 + TREE_HEADER + NODE_WIDTH * (ib * ga + ia)
    while nodes[base] != LEAF:
        value = a if nodes[base] == 0.0 else b
        k = int(nodes[base + 1]) + (1 if value >= nodes[base + 2] else 0)
        base = node0 + TREE_HEADER + NODE_WIDTH * k
    off = coef0 + int(nodes[base + 1])
    nb = int(nodes[base + 2])
    if nb == 0:
        return np.nan
    end = off + int(nodes[base + 3])
    x = (a - coef[off]) * coef[off + 1]
    y = (b - coef[off + 2]) * coef[off + 3]
    x2 = 2.0 * x
    y2 = 2.0 * y
    lens = off + PATCH_HEADER
    pos = lens + nb  # row 0
    # rows ascending; T_j(y) by its own recurrence (not Clenshaw: no long dependent chain)
    ty_prev = y  # T_(j-1), with T_(-1) = T_1 = y so that T_1 = 2 y T_0 - T_(-1)
    ty = 1.0  # T_j
    total = 0.0
    j = 0
    singles = nb % 4
    while j < singles:  # the lowest nb mod 4 rows, one by one
        n = int(coef[lens + j])
        s0 = coef[pos]
        t0 = 1.0
        t1 = x
        for i in range(1, n):
            s0 += coef[pos + i] * t1
            t2 = x2 * t1 - t0
            t0 = t1
            t1 = t2
        total += s0 * ty
        ty, ty_prev = y2 * ty - ty_prev, ty
        pos += n
        j += 1
    while j < nb:  # blocks of four rows of one length n
        n = int(coef[lens + j])
        r1 = pos + n
        r2 = r1 + n
        r3 = r2 + n
        s0 = coef[pos]
        s1 = coef[r1]
        s2 = coef[r2]
        s3 = coef[r3]
        t0 = 1.0
        t1 = x
        for i in range(1, n):
            s0 += coef[pos + i] * t1
            s1 += coef[r1 + i] * t1
            s2 += coef[r2 + i] * t1
            s3 += coef[r3 + i] * t1
            t2 = x2 * t1 - t0
            t0 = t1
            t1 = t2
        ty1 = y2 * ty - ty_prev
        ty2 = y2 * ty1 - ty
        ty3 = y2 * ty2 - ty1
        total += (s0 * ty + s1 * ty1) + (s2 * ty2 + s3 * ty3)
        ty, ty_prev = y2 * ty3 - ty2, ty3
        pos = r3 + n
        j += 4
    return total


@dataclass
class LineFit:
    """Uniform cells of degree-``degree`` Chebyshev series: ``coef[c, k]`` of cell c, local x in [-1, 1]."""

    coef: np.ndarray
    n_failed: int
    max_check_error: float
    n_evaluations: int


def fit_line(func, lo: float, hi: float, *, degree: int = 7, tol: float = 1e-9, cells: int = 16,
             max_cells: int = 1 << 16) -> LineFit:
    """Fit h = ``func(x)`` (vectorised) on [lo, hi] by ``n`` uniform cells, each interpolated at its
    degree + 1 Lobatto points; n doubles from ``cells`` until every cell is within ``tol`` of
    ``func`` at the degree interleaved Chebyshev points of the first kind (where the
    interpolation error peaks). Cells still failing at ``max_cells`` are stored as NaN
    (callers compute directly there). Coefficients are rounded to :data:`QUANTUM`. Deterministic.
    """
    if not hi > lo or cells < 1 or degree < 3:
        raise ValueError(f"need lo < hi, cells >= 1 and degree >= 3; got {lo}, {hi}, {cells}, {degree}")
    nodes = lobatto_points(degree)
    checks = np.cos(np.pi * (np.arange(degree) + 0.5) / degree)
    n_eval = 0
    n = int(cells)
    while True:
        left = lo + (hi - lo) * np.arange(n)[:, None] / n
        width = (hi - lo) / n
        values = np.asarray(func((left + 0.5 * width * (nodes + 1.0)).ravel()), float).reshape(n, -1)
        truth = np.asarray(func((left + 0.5 * width * (checks + 1.0)).ravel()), float).reshape(n, -1)
        n_eval += values.size + truth.size
        coef = values @ values_to_chebyshev(degree).T
        coef = np.round(coef / QUANTUM) * QUANTUM + 0.0
        approx = np.polynomial.chebyshev.chebvander(checks, degree) @ coef.T  # (checks, cells)
        err = np.abs(approx.T - truth)
        err[~np.isfinite(err)] = np.inf
        bad = err.max(axis=1) > tol
        if not bad.any() or n >= max_cells:
            coef[bad] = np.nan
            good = err[~bad]
            return LineFit(coef, int(bad.sum()), float(good.max()) if good.size else 0.0, n_eval)
        n *= 2



def values_to_chebyshev(degree: int) -> np.ndarray:
    """D with c = D f: Chebyshev coefficients of the interpolant of f at the ascending
    Lobatto points (type-I DCT as a matrix: c_k = (2/n) sum''_m f(x_m) T_k(x_m), ends halved)."""
    x = lobatto_points(degree)
    k = np.arange(degree + 1)[:, None]
    weight = np.ones(degree + 1)
    weight[[0, -1]] = 0.5
    d = (2.0 / degree) * np.cos(k * np.arccos(np.clip(x, -1.0, 1.0))[None, :]) * weight[None, :]
    d[[0, -1], :] *= 0.5
    return d


def chebyshev_to_power(degree: int) -> np.ndarray:
    """M with T_i(x) = sum_k M[i, k] x^k (T_0 = 1, T_1 = x, T_(i+1) = 2 x T_i - T_(i-1))."""
    m = np.zeros((degree + 1, degree + 1))
    m[0, 0] = 1.0
    if degree >= 1:
        m[1, 1] = 1.0
    for i in range(1, degree):
        m[i + 1, 1:] = 2.0 * m[i, :-1]
        m[i + 1] -= m[i - 1]
    return m
