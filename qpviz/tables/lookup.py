"""Fitting one table, packing a family's tables for its file, and the numba lookup kernel.

Stored layouts (what a file holds; :func:`pack`):

* 2-D families: ``meta = [LAYOUT_TREES, fold, n_tables, t_lo, t_hi, b_lo, b_hi, 0]``, then per
  table k a block ``[t_c, w, node_offset, coef_offset]``, then every table's patch tree (the
  ``nodes`` of :mod:`qpviz.tables.chebyshev`, each at its ``node_offset`` in ``meta``);
  ``coef`` = the trees' Chebyshev patch coefficients, table k's from ``coef_offset``;
* scale-free families (1-D): ``meta = [LAYOUT_LINE, fold, 1, z_lo, z_hi, g_lo, g_hi, n_cells]``,
  ``coef`` = n_cells x 8 Chebyshev coefficients on uniform cells of G = g(z).

In-memory layout (what :func:`runtime` derives and the kernels read; :mod:`qpviz.tables.fast`):
``meta = [LAYOUT_FAST, fold, n_tables, t_lo, t_hi, b_lo, b_hi, ca, cb, g_lo, g_hi, n_cells]``,
then (2-D) per table k a block ``[t_c, w, cells_offset, node_offset, coef_offset, 0]``, every
table's ``ca x cb`` cell codes at its ``cells_offset`` in ``meta``, then the stored trees
(``node_offset`` in ``meta``, ``coef_offset`` in ``coef``) for the cells that read them;
``coef`` = the power-form patches (or 1-D cells), then the stored coefficients.

b = log s. See :mod:`qpviz.tables.families` for the fold, t and the mapped coordinate A.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.tables import fast
from qpviz.tables.chebyshev import LineFit, PatchTree, fit_line, fit_tree, tree_eval
from qpviz.tables.families import (
    FOLD_BINARY,
    FOLD_COUNT_EVEN,
    FOLD_REAL,
    FOLD_SCALE_FREE,
    STD_RANGE,
    TableFamily,
    g_inverse,
    g_map,
    mean_unmap,
)

__all__ = ["LAYOUT_TREES", "LAYOUT_LINE", "LAYOUT_FAST", "fit_table", "pack", "runtime", "table_coordinates",
           "table_value", "table_log_ratio", "is_line", "line_table_value", "fast_table_locate",
           "fast_table_value", "stored_table_value"]

LAYOUT_TREES = 1.0
LAYOUT_LINE = 3.0
LAYOUT_FAST = 2.0
META_HEADER = 8
FAST_HEADER = 12
TABLE_BLOCK = 4
FAST_BLOCK = 6
B_LO = math.log(STD_RANGE[0])
B_HI = math.log(STD_RANGE[1])
#: log s may exceed the domain by rounding (0.5 log(20^2) vs log 20): accepted within this
B_SLACK = 1e-12


def fit_table(family: TableFamily, k: int, qp_std=None) -> PatchTree | LineFit:
    """Fit table k of ``family``: h(A, B) = log(sigma_QP / s) from direct computation
    (scale-free families: h(G), G = g(z), with s = 1 and m = z).

    ``qp_std(lik, y, m, v)`` defaults to :func:`qpviz.tilted.qp_std` (adaptive quadrature of
    QP paper eq. 7). Observation used: y = +1 (binary), 0 (real), k (counts).
    """
    if qp_std is None:
        from qpviz.tilted import qp_std
    lik = family.make_likelihood()
    if family.fold == FOLD_SCALE_FREE:
        def log_ratio_z(g):
            z = g_inverse(g)
            return np.log(qp_std(lik, np.ones_like(z), z, np.ones_like(z)))

        g_lo, g_hi = g_map(family.t_lo), g_map(family.t_hi)
        return fit_line(log_ratio_z, g_lo, g_hi, degree=family.degree, tol=family.tol, cells=family.grid[0])
    t_c, w = family.center_width(k)
    y = {FOLD_BINARY: 1.0, FOLD_REAL: 0.0}.get(family.fold, float(k))

    def log_ratio(a, b):
        s = np.exp(b)
        t = mean_unmap(a, s, family.t_lo, family.t_hi, t_c, w)
        return np.log(qp_std(lik, y, t, s * s) / s)

    return fit_tree(log_ratio, (0.0, 1.0, B_LO, B_HI), grid=family.grid, degree=family.degree, tol=family.tol)


def pack(family: TableFamily, trees: list) -> tuple[np.ndarray, np.ndarray]:
    """(coef, meta) of a family's file from its fitted tables (layouts in the module docstring)."""
    if len(trees) != family.n_tables:
        raise ValueError(f"{family.likelihood} needs {family.n_tables} tables, got {len(trees)}")
    if family.fold == FOLD_SCALE_FREE:
        line = trees[0]
        header = [LAYOUT_LINE, family.fold, 1, family.t_lo, family.t_hi, g_map(family.t_lo), g_map(family.t_hi),
                  line.coef.shape[0]]
        return np.ascontiguousarray(line.coef).ravel(), np.asarray(header, float)
    blocks, node_parts, coef_parts = [], [], []
    node_offset = META_HEADER + TABLE_BLOCK * family.n_tables
    coef_offset = 0
    for k, tree in enumerate(trees):
        t_c, w = family.center_width(k)
        blocks.append([t_c, w, node_offset, coef_offset])
        node_parts.append(tree.nodes)
        coef_parts.append(tree.coef)
        node_offset += tree.nodes.size
        coef_offset += tree.coef.size
    header = [LAYOUT_TREES, family.fold, family.n_tables, family.t_lo, family.t_hi, B_LO, B_HI, 0.0]
    meta = np.concatenate([np.asarray(header, float), np.asarray(blocks, float).ravel()] + node_parts)
    return np.concatenate(coef_parts), meta


def runtime(coef: np.ndarray, meta: np.ndarray, grid=fast.GRID, tol=fast.FAST_TOL) -> tuple[np.ndarray, np.ndarray, dict]:
    """The in-memory (fast) arrays of a stored family, and stats of the re-approximation.

    1-D tables: the cells converted to power form (exact up to rounding). 2-D tables: each tree
    re-approximated by :func:`qpviz.tables.fast.derive_table` to ``tol``.
    """
    layout, fold, n_tables = meta[0], int(meta[1]), int(meta[2])
    if layout == LAYOUT_LINE:
        header = [LAYOUT_FAST, fold, 1, meta[3], meta[4], 0.0, 0.0, 0, 0, meta[5], meta[6], meta[7]]
        stats = {"patches": int(meta[7]), "max_error": 0.0, "stored_cells": 0, "cells": int(meta[7])}
        return np.ascontiguousarray(fast.line_to_power(coef).ravel()), np.asarray(header, float), stats
    if layout != LAYOUT_TREES:
        raise ValueError(f"unknown table layout {layout}")
    ca, cb = grid
    header = [LAYOUT_FAST, fold, n_tables, meta[3], meta[4], meta[5], meta[6], ca, cb, 0.0, 0.0, 0.0]
    cell_parts, patch_parts = [], []
    patch_offset, worst, slow = 0, 0.0, 0
    for k in range(n_tables):
        block = META_HEADER + TABLE_BLOCK * k
        stored = (meta, int(meta[block + 2]), coef, int(meta[block + 3]))
        codes, patches, err, n_slow = fast.derive_table(stored, (0.0, 1.0, meta[5], meta[6]), grid, tol)
        cell_parts.append(np.where(codes < 0, codes, codes + patch_offset * fast.CODE_SHIFT))
        patch_parts.append(patches)
        patch_offset += patches.size
        worst, slow = max(worst, err), slow + n_slow
    # stored trees after the cells (meta) and after the patches (coef), offsets shifted
    cells_offset = FAST_HEADER + FAST_BLOCK * n_tables
    meta_shift = cells_offset + ca * cb * n_tables
    blocks = []
    for k in range(n_tables):
        block = META_HEADER + TABLE_BLOCK * k
        blocks.append([meta[block], meta[block + 1], cells_offset + ca * cb * k, meta_shift + meta[block + 2],
                       patch_offset + meta[block + 3], 0.0])
    fast_meta = np.concatenate([np.asarray(header, float), np.asarray(blocks, float).ravel()] + cell_parts + [meta])
    stats = {"patches": patch_offset // fast.PATCH_SIZE, "max_error": worst, "stored_cells": slow,
             "cells": ca * cb * n_tables}
    return np.concatenate(patch_parts + [coef]), fast_meta, stats


@njit(**NUMBA_OPTIONS)
def _g(u):
    return u / math.sqrt(math.sqrt(1.0 + u * u))


@njit(**NUMBA_OPTIONS)
def table_coordinates(meta, y, m, v):
    """(k, fa, fb): the table index and fractional cell coordinates of (y, m, v) (fb = -1 for a
    1-D table, whose cell coordinate is fa); k = -1 if no table covers (y, m, v)."""
    if meta.size < FAST_HEADER or meta[0] != LAYOUT_FAST:
        return -1, 0.0, 0.0
    fold = int(meta[1])
    if fold == FOLD_SCALE_FREE:
        z = y * m / math.sqrt(v)
        if not (z >= meta[3] and z <= meta[4]):
            return -1, 0.0, 0.0
        return 0, (_g(z) - meta[9]) * (meta[11] / (meta[10] - meta[9])), -1.0
    k = 0
    if fold == FOLD_BINARY:
        t = m if y > 0.0 else -m
    elif fold == FOLD_REAL:
        t = abs(m - y)
    else:
        if not (y >= 0.0 and y < meta[2]):  # counts 0 .. n_tables - 1
            return -1, 0.0, 0.0
        k = int(y)
        t = abs(m) if fold == FOLD_COUNT_EVEN else m  # FOLD_COUNT: t = m
    b = 0.5 * math.log(v)
    if not (t >= meta[3] and t <= meta[4] and b >= meta[5] - B_SLACK and b <= meta[6] + B_SLACK):
        return -1, 0.0, 0.0
    block = FAST_HEADER + FAST_BLOCK * k
    t_c = meta[block]
    w = meta[block + 1]
    d2 = v + w * w
    span = meta[4] - t_c
    # A = (g(u) - g(u_lo)) / (g(u_hi) - g(u_lo)) through r(u) = g(u) / g(u_hi)
    #   = (u / u_hi) ((1 + u_hi^2) / (1 + u^2))^(1/4) = (dt / span) ((d2 + span^2) / (d2 + dt^2))^(1/4):
    # one division and two square roots per g ratio, and d itself is never needed
    dt = t - t_c
    r = dt / span * math.sqrt(math.sqrt((d2 + span * span) / (d2 + dt * dt)))
    lo = meta[3] - t_c
    if lo == 0.0:  # g(u_lo) = 0
        a = r
    elif lo == -span:  # symmetric domain: g is odd, r(u_lo) = -1
        a = 0.5 * (1.0 + r)
    else:
        r_lo = lo / span * math.sqrt(math.sqrt((d2 + span * span) / (d2 + lo * lo)))
        a = (r - r_lo) / (1.0 - r_lo)
    return k, a * meta[7], (b - meta[5]) * (meta[8] / (meta[6] - meta[5]))


@njit(**NUMBA_OPTIONS)
def is_line(meta):
    """Whether ``meta`` holds a 1-D (scale-free) table."""
    return int(meta[1]) == FOLD_SCALE_FREE


@njit(**NUMBA_OPTIONS)
def line_table_value(coef, meta, fa):
    """h of a 1-D table at fractional cell coordinate fa in [0, n_cells]."""
    i = min(int(fa), int(meta[11]) - 1)
    return fast.line_value(coef, 8 * i, 2.0 * (fa - i) - 1.0)


@njit(**NUMBA_OPTIONS)
def fast_table_locate(meta, k, fa, fb):
    """(patch offset, x, y) of 2-D table k (:func:`qpviz.tables.fast.locate_patch`; offset -1:
    the point's cell reads the stored tree)."""
    return fast.locate_patch(meta, int(meta[FAST_HEADER + FAST_BLOCK * k + 2]), int(meta[7]), int(meta[8]), fa, fb)


@njit(**NUMBA_OPTIONS)
def fast_table_value(coef, meta, k, fa, fb):
    """h of 2-D table k from its fast patches; NaN in a cell that reads the stored tree."""
    return fast.cell_value(coef, meta, int(meta[FAST_HEADER + FAST_BLOCK * k + 2]), int(meta[7]), int(meta[8]), fa, fb)


@njit(**NUMBA_OPTIONS)
def stored_table_value(coef, meta, k, fa, fb):
    """h of 2-D table k from its stored tree (the cells the fast patches leave out)."""
    block = FAST_HEADER + FAST_BLOCK * k
    a = fa / meta[7]
    b = meta[5] + fb * ((meta[6] - meta[5]) / meta[8])
    return tree_eval(meta, int(meta[block + 3]), coef, int(meta[block + 4]), a, b)


@njit(**NUMBA_OPTIONS)
def table_value(coef, meta, k, fa, fb):
    """h = log(sigma_QP / s) of table k at fractional cell coordinates (NaN: not tabulated)."""
    if fb < 0.0:
        return line_table_value(coef, meta, fa)
    h = fast_table_value(coef, meta, k, fa, fb)
    if h == h:
        return h
    return stored_table_value(coef, meta, k, fa, fb)


@njit(**NUMBA_OPTIONS)
def table_log_ratio(coef, meta, y, m, v):
    """log(sigma_QP / sqrt(v)) from the in-memory tables, or NaN where they do not cover (y, m, v)."""
    k, fa, fb = table_coordinates(meta, y, m, v)
    if k < 0:
        return np.nan
    return table_value(coef, meta, k, fa, fb)
