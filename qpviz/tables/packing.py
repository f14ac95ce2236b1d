"""Fitting a family's tables, packing them for its file, and deriving the in-memory form.

The arrays follow :mod:`qpviz.tables.layout`: :func:`pack` writes the stored layouts
(``LAYOUT_TREES`` for 2-D families, ``LAYOUT_LINE`` for scale-free ones), which the shipped
files hold; :func:`runtime` turns them into ``LAYOUT_FAST``, what the kernels of
:mod:`qpviz.tables.lookup` read. b = log s; see :mod:`qpviz.tables.families` for the fold, t
and the mapped coordinate A.
"""
from __future__ import annotations

import math

import numpy as np

from qpviz.tables import fast
from qpviz.tables.chebyshev import LineFit, PatchTree, fit_line, fit_tree
from qpviz.tables.families import FOLD_BINARY, FOLD_REAL, FOLD_SCALE_FREE, TABLE_STD_RANGE, TableFamily, g_inverse, \
    g_map, mean_unmap
from qpviz.tables.layout import (
    B_CELLS_OFFSET,
    B_COEF_OFFSET,
    B_DEGREE,
    B_NODE_OFFSET,
    B_T_CENTRE,
    B_WIDTH,
    FAST_BLOCK,
    FAST_HEADER,
    LAYOUT_FAST,
    LAYOUT_LINE,
    LAYOUT_TREES,
    SB_COEF_OFFSET,
    SB_NODE_OFFSET,
    SB_T_CENTRE,
    SB_WIDTH,
    STORED_BLOCK,
    STORED_HEADER,
    TableHeader,
    stored_block,
)

__all__ = ["B_LO", "B_HI", "fit_table", "pack", "runtime"]

#: Domain of b = log s of every 2-D table.
B_LO = math.log(TABLE_STD_RANGE[0])
B_HI = math.log(TABLE_STD_RANGE[1])


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
    """(coef, meta) of a family's file from its fitted tables, in a stored layout."""
    if len(trees) != family.n_tables:
        raise ValueError(f"{family.likelihood} needs {family.n_tables} tables, got {len(trees)}")
    if family.fold == FOLD_SCALE_FREE:
        line = trees[0]
        header = TableHeader(LAYOUT_LINE, family.fold, 1, family.t_lo, family.t_hi, g_lo=g_map(family.t_lo),
                             g_hi=g_map(family.t_hi), n_cells=line.coef.shape[0])
        return np.ascontiguousarray(line.coef).ravel(), header.array()
    blocks = np.zeros((family.n_tables, STORED_BLOCK))
    node_parts, coef_parts = [], []
    node_offset = STORED_HEADER + STORED_BLOCK * family.n_tables
    coef_offset = 0
    for k, tree in enumerate(trees):
        blocks[k, [SB_T_CENTRE, SB_WIDTH]] = family.center_width(k)
        blocks[k, [SB_NODE_OFFSET, SB_COEF_OFFSET]] = node_offset, coef_offset
        node_parts.append(tree.nodes)
        coef_parts.append(tree.coef)
        node_offset += tree.nodes.size
        coef_offset += tree.coef.size
    header = TableHeader(LAYOUT_TREES, family.fold, family.n_tables, family.t_lo, family.t_hi, b_lo=B_LO, b_hi=B_HI)
    meta = np.concatenate([header.array(), blocks.ravel()] + node_parts)
    return np.concatenate(coef_parts), meta


def runtime(coef: np.ndarray, meta: np.ndarray, grid=fast.GRID, tol=fast.FAST_TOL) -> tuple[np.ndarray, np.ndarray, dict]:
    """The in-memory (``LAYOUT_FAST``) arrays of a stored family, and stats of the re-approximation.

    1-D tables: the cells converted to power form (exact up to rounding). 2-D tables: each tree
    re-approximated by :func:`qpviz.tables.fast.derive_table` to ``tol``; the cell codes follow
    the blocks in ``meta``, then the stored ``meta`` whole (its trees serve the cells the patches
    leave out); ``coef`` is the patches, then the stored coefficients.
    """
    stored = TableHeader.read(meta)
    if stored.layout == LAYOUT_LINE:
        header = TableHeader(LAYOUT_FAST, stored.fold, 1, stored.t_lo, stored.t_hi, g_lo=stored.g_lo,
                             g_hi=stored.g_hi, n_cells=stored.n_cells)
        stats = {"patches": stored.n_cells, "max_error": 0.0, "stored_cells": 0, "cells": stored.n_cells,
                 "degree": fast.DEGREE}
        return np.ascontiguousarray(fast.line_to_power(coef).ravel()), header.array(), stats
    if stored.layout != LAYOUT_TREES:
        raise ValueError(f"unknown table layout {stored.layout}")
    ca, cb = grid
    n_tables = stored.n_tables
    header = TableHeader(LAYOUT_FAST, stored.fold, n_tables, stored.t_lo, stored.t_hi, b_lo=stored.b_lo,
                         b_hi=stored.b_hi, cells_a=ca, cells_b=cb)
    cell_parts, patch_parts = [], []
    patch_offset, worst, slow = 0, 0.0, 0
    box = (0.0, 1.0, stored.b_lo, stored.b_hi)
    trees = [(meta, int(meta[stored_block(k) + SB_NODE_OFFSET]), coef, int(meta[stored_block(k) + SB_COEF_OFFSET]))
             for k in range(n_tables)]
    degree = fast.family_degree(n_tables)
    derived = [fast.derive_table(tree, box, grid, tol, degree) for tree in trees]
    if degree != fast.DEGREE and any(n_slow for *_, n_slow in derived):
        # degree 5 left cells to the stored tree (slow lookups there): degree 7 if it leaves fewer
        full = [fast.derive_table(tree, box, grid, tol, fast.DEGREE) for tree in trees]
        if sum(d[3] for d in full) < sum(d[3] for d in derived):
            degree, derived = fast.DEGREE, full
    for k, (codes, patches, err, n_slow) in enumerate(derived):
        cell_parts.append(np.where(codes < 0, codes, codes + patch_offset * fast.CODE_SHIFT))
        patch_parts.append(patches)
        patch_offset += patches.size
        worst, slow = max(worst, err), slow + n_slow
    # stored trees after the cells (meta) and after the patches (coef), offsets shifted
    cells_offset = FAST_HEADER + FAST_BLOCK * n_tables
    meta_shift = cells_offset + ca * cb * n_tables
    blocks = np.zeros((n_tables, FAST_BLOCK))
    for k in range(n_tables):
        old = meta[stored_block(k):stored_block(k) + STORED_BLOCK]
        blocks[k, [B_T_CENTRE, B_WIDTH]] = old[SB_T_CENTRE], old[SB_WIDTH]
        blocks[k, B_CELLS_OFFSET] = cells_offset + ca * cb * k
        blocks[k, B_NODE_OFFSET] = meta_shift + old[SB_NODE_OFFSET]
        blocks[k, B_COEF_OFFSET] = patch_offset + old[SB_COEF_OFFSET]
        blocks[k, B_DEGREE] = degree
    fast_meta = np.concatenate([header.array(), blocks.ravel()] + cell_parts + [meta])
    stats = {"patches": patch_offset // fast.patch_size(degree), "max_error": worst, "stored_cells": slow,
             "cells": ca * cb * n_tables, "degree": degree}
    return np.concatenate(patch_parts + [coef]), fast_meta, stats
