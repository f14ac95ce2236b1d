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
  ``first + 1``. Leaf ``[-1, offset, na, nb]`` with the patch at ``coef[offset:]`` laid out as
  ``[a0, a1, b0, b1, c_00 .. c_0(na-1), c_10, ...]`` (row j = degree in b). A leaf with
  ``na == 0`` is a patch that could not be fitted to ``tol``: it evaluates to NaN and callers
  compute directly there.

This module knows nothing about likelihoods: :mod:`qpviz.tables.families` maps cavity
parameters to (a, b), and :mod:`qpviz.tables` evaluates the trees.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.fft import dct

from qpviz.config import NUMBA_OPTIONS

__all__ = ["PatchTree", "fit_tree", "tree_eval", "lobatto_points", "chebyshev_coefficients_2d"]

LEAF = -1.0
NODE_WIDTH = 4
TREE_HEADER = 8  # a0, a1, b0, b1, ga, gb, 0, 0
PATCH_HEADER = 4  # a0, a1, b0, b1
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


def _truncation(coef: np.ndarray, budget: float) -> tuple[int, int]:
    """Smallest (na, nb) whose dropped coefficients sum to <= budget along each direction."""
    mag = np.abs(coef)
    col_tail = np.append(np.cumsum(mag.sum(axis=0)[::-1])[::-1], 0.0)  # [i] = sum of columns >= i
    row_tail = np.append(np.cumsum(mag.sum(axis=1)[::-1])[::-1], 0.0)
    na = int(np.argmax(col_tail <= budget))
    nb = int(np.argmax(row_tail <= budget))
    return max(na, 1), max(nb, 1)


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
        na, nb = _truncation(coef, self.tol / 8)
        kept = np.round(coef[:nb, :na] / QUANTUM) * QUANTUM
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
    leaves: list[tuple] = []  # (box, kept coefficients or None)
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
            nodes[index] = [LEAF, len(leaves), 0 if kept is None else kept.shape[1], 0 if kept is None else kept.shape[0]]
            leaves.append((bx, kept))
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

    chunks, leaf_offset, offset = [], [], 0
    for bx, kept in leaves:
        chunk = np.asarray(bx, float) if kept is None else np.concatenate([np.asarray(bx, float), kept.ravel()])
        leaf_offset.append(offset)
        chunks.append(chunk)
        offset += chunk.size
    node_arr = np.asarray(nodes, float)
    is_leaf = node_arr[:, 0] == LEAF
    node_arr[is_leaf, 1] = np.asarray(leaf_offset, float)[node_arr[is_leaf, 1].astype(int)]
    header = np.array([a0, a1, b0, b1, ga, gb, 0.0, 0.0])
    return PatchTree(np.concatenate([header, node_arr.ravel()]), np.concatenate(chunks), len(leaves),
                     n_failed, max_err, fitter.n_eval, deepest)


@njit(**NUMBA_OPTIONS)
def tree_eval(nodes, node0, coef, coef0, a, b):
    """h(a, b) from the patch tree stored at ``nodes[node0:]`` (coefficient offsets relative to
    ``coef0``). NaN inside an uncovered patch. (a, b) must lie in the box (clamped to it).

    Cell by index arithmetic, a short kd descent, then sum_j g_j T_j(y) by Clenshaw with
    g_j = sum_i c_ji T_i(x) summed four rows at a time (independent chains, so the CPU
    overlaps them; about 1.5x faster than one row at a time, measured).
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
    na = int(nodes[base + 2])
    nb = int(nodes[base + 3])
    if na == 0:
        return np.nan
    pa0 = coef[off]
    pa1 = coef[off + 1]
    pb0 = coef[off + 2]
    pb1 = coef[off + 3]
    x = (2.0 * a - pa0 - pa1) / (pa1 - pa0)
    y = (2.0 * b - pb0 - pb1) / (pb1 - pb0)
    x2 = 2.0 * x
    y2 = 2.0 * y
    start = off + PATCH_HEADER
    u1 = 0.0
    u2 = 0.0
    j = nb - 1
    while j >= 3:  # rows j, j-1, j-2, j-3 together
        r0 = start + j * na
        r1 = r0 - na
        r2 = r1 - na
        r3 = r2 - na
        s0 = coef[r0]
        s1 = coef[r1]
        s2 = coef[r2]
        s3 = coef[r3]
        t0 = 1.0
        t1 = x
        for i in range(1, na):
            s0 += coef[r0 + i] * t1
            s1 += coef[r1 + i] * t1
            s2 += coef[r2 + i] * t1
            s3 += coef[r3 + i] * t1
            t2 = x2 * t1 - t0
            t0 = t1
            t1 = t2
        u0 = s0 + y2 * u1 - u2
        u2 = u1
        u1 = u0
        u0 = s1 + y2 * u1 - u2
        u2 = u1
        u1 = u0
        u0 = s2 + y2 * u1 - u2
        u2 = u1
        u1 = u0
        u0 = s3 + y2 * u1 - u2
        u2 = u1
        u1 = u0
        j -= 4
    while j >= 0:  # remaining rows
        r0 = start + j * na
        s0 = coef[r0]
        t0 = 1.0
        t1 = x
        for i in range(1, na):
            s0 += coef[r0 + i] * t1
            t2 = x2 * t1 - t0
            t0 = t1
            t1 = t2
        if j == 0:
            return s0 + y * u1 - u2
        u0 = s0 + y2 * u1 - u2
        u2 = u1
        u1 = u0
        j -= 1
    # the last block ended exactly at row 0: its final step used y2 where Clenshaw ends with y
    return u1 - y * u2
