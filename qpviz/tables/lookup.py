"""Fitting one table, packing a family's tables into two arrays, and the numba lookup kernel.

Packed layout of a family (what :func:`qpviz.tables.jit_data` returns; numba takes it as is):

* ``meta`` = ``[LAYOUT, fold, n_tables, t_lo, t_hi, b_lo, b_hi, 0]``, then per table k a block
  ``[t_c, w, node_offset, coef_offset]``, then every table's patch tree (the ``nodes`` array
  of :mod:`qpviz.tables.chebyshev`, each at its ``node_offset`` in ``meta``);
* ``coef`` = the tables' patch coefficients, table k's from ``coef_offset``.

b = log s. See :mod:`qpviz.tables.families` for the fold, t and the mapped coordinate A.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.tables.chebyshev import PatchTree, fit_tree, tree_eval
from qpviz.tables.families import (
    FOLD_BINARY,
    FOLD_COUNT_EVEN,
    FOLD_REAL,
    STD_RANGE,
    TableFamily,
    mean_unmap,
)

__all__ = ["LAYOUT", "fit_table", "pack", "table_coordinates", "table_value", "table_log_ratio"]

LAYOUT = 1.0
META_HEADER = 8
TABLE_BLOCK = 4
B_LO = math.log(STD_RANGE[0])
B_HI = math.log(STD_RANGE[1])
#: log s may exceed the domain by rounding (0.5 log(20^2) vs log 20): accepted within this
B_SLACK = 1e-12


def fit_table(family: TableFamily, k: int, qp_std=None) -> PatchTree:
    """Fit table k of ``family``: h(A, B) = log(sigma_QP / s) from direct computation.

    ``qp_std(lik, y, m, v)`` defaults to :func:`qpviz.tilted.qp_std` (adaptive quadrature of
    QP paper eq. 7). Observation used: y = +1 (binary), 0 (real), k (counts).
    """
    if qp_std is None:
        from qpviz.tilted import qp_std
    lik = family.make_likelihood()
    t_c, w = family.center_width(k)
    y = {FOLD_BINARY: 1.0, FOLD_REAL: 0.0}.get(family.fold, float(k))

    def log_ratio(a, b):
        s = np.exp(b)
        t = mean_unmap(a, s, family.t_lo, family.t_hi, t_c, w)
        return np.log(qp_std(lik, y, t, s * s) / s)

    return fit_tree(log_ratio, (0.0, 1.0, B_LO, B_HI), grid=family.grid, degree=family.degree, tol=family.tol)


def pack(family: TableFamily, trees: list[PatchTree]) -> tuple[np.ndarray, np.ndarray]:
    """(coef, meta) of a family from its fitted trees (layout in the module docstring)."""
    if len(trees) != family.n_tables:
        raise ValueError(f"{family.likelihood} needs {family.n_tables} tables, got {len(trees)}")
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
    header = [LAYOUT, family.fold, family.n_tables, family.t_lo, family.t_hi, B_LO, B_HI, 0.0]
    meta = np.concatenate([np.asarray(header, float), np.asarray(blocks, float).ravel()] + node_parts)
    return np.concatenate(coef_parts), meta


@njit(**NUMBA_OPTIONS)
def _g(u):
    return u / math.sqrt(math.sqrt(1.0 + u * u))


@njit(**NUMBA_OPTIONS)
def table_coordinates(meta, y, m, v):
    """(k, A, b): the table index and mapped coordinates of (y, m, v); k = -1 if not covered."""
    if meta.size < META_HEADER or meta[0] != LAYOUT:
        return -1, 0.0, 0.0
    fold = int(meta[1])
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
    block = META_HEADER + TABLE_BLOCK * k
    t_c = meta[block]
    w = meta[block + 1]
    inv_d = 1.0 / math.sqrt(v + w * w)
    g_hi = _g((meta[4] - t_c) * inv_d)
    # g is odd (exactly, in floating point too): skip its evaluation on symmetric domains
    if meta[3] == t_c:
        g_lo = 0.0
    elif meta[3] - t_c == t_c - meta[4]:
        g_lo = -g_hi
    else:
        g_lo = _g((meta[3] - t_c) * inv_d)
    return k, (_g((t - t_c) * inv_d) - g_lo) / (g_hi - g_lo), b


@njit(**NUMBA_OPTIONS)
def table_value(coef, meta, k, a, b):
    """h = log(sigma_QP / s) of table k at mapped coordinates (A, b) (NaN: uncovered patch)."""
    block = META_HEADER + TABLE_BLOCK * k
    return tree_eval(meta, int(meta[block + 2]), coef, int(meta[block + 3]), a, b)


@njit(**NUMBA_OPTIONS)
def table_log_ratio(coef, meta, y, m, v):
    """log(sigma_QP / sqrt(v)) from the packed tables, or NaN where they do not cover (y, m, v)."""
    k, a, b = table_coordinates(meta, y, m, v)
    if k < 0:
        return np.nan
    return table_value(coef, meta, k, a, b)
