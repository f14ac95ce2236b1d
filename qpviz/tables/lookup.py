"""The numba lookup kernels: h = log(sigma_QP / s) from a family's in-memory (fast) arrays.

They read ``meta`` in the ``LAYOUT_FAST`` layout of :mod:`qpviz.tables.layout` (built by
:func:`qpviz.tables.packing.runtime`) through its named offsets. A lookup maps (y, m, v) to a
table and fractional cell coordinates (:func:`table_coordinates`), then evaluates a power-form
patch (:mod:`qpviz.tables.fast`) or, in the rare cells the patches leave out, the stored tree.
b = log s; see :mod:`qpviz.tables.families` for the fold, t and the mapped coordinate A.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.tables import fast
from qpviz.tables.chebyshev import tree_eval
from qpviz.tables.families import FOLD_BINARY, FOLD_COUNT_EVEN, FOLD_REAL, FOLD_SCALE_FREE
from qpviz.tables.layout import (
    B_CELLS_OFFSET,
    B_COEF_OFFSET,
    B_DEGREE,
    B_NODE_OFFSET,
    B_T_CENTRE,
    B_WIDTH,
    FAST_HEADER,
    H_B_HI,
    H_B_LO,
    H_CELLS_A,
    H_CELLS_B,
    H_FOLD,
    H_G_HI,
    H_G_LO,
    H_LAYOUT,
    H_N_CELLS,
    H_N_TABLES,
    H_T_HI,
    H_T_LO,
    LAYOUT_FAST,
    fast_block,
)

__all__ = ["table_header", "header_coordinates", "mean_map", "mapped_mean", "table_coordinates", "table_value", "table_log_ratio", "is_line", "line_table_value", "table_degree", "fast_table_locate",
           "fast_table_value", "stored_table_value"]

#: log s may exceed the domain by rounding (0.5 log(20^2) vs log 20): accepted within this
B_SLACK = 1e-12


@njit(**NUMBA_OPTIONS)
def _g(u):
    return u / math.sqrt(math.sqrt(1.0 + u * u))


@njit(**NUMBA_OPTIONS)
def table_header(meta):
    """The header fields :func:`header_coordinates` reads, once per array of points (a batch
    kernel keeps them in registers instead of reloading ``meta`` for every point): (usable,
    fold, t_lo, t_hi, g_lo, g_scale, n_tables, b_lo, b_hi, cells_a, b_scale); usable is False
    unless ``meta`` is in the in-memory (fast) layout."""
    if meta.size < FAST_HEADER or meta[H_LAYOUT] != LAYOUT_FAST:
        return False, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    g_lo = meta[H_G_LO]
    b_lo = meta[H_B_LO]
    b_hi = meta[H_B_HI]
    return (True, int(meta[H_FOLD]), meta[H_T_LO], meta[H_T_HI], g_lo, meta[H_N_CELLS] / (meta[H_G_HI] - g_lo),
            meta[H_N_TABLES], b_lo, b_hi, meta[H_CELLS_A], meta[H_CELLS_B] / (b_hi - b_lo))


@njit(**NUMBA_OPTIONS)
def table_coordinates(meta, y, m, v):
    """(k, fa, fb): the table index and fractional cell coordinates of (y, m, v) (fb = -1 for a
    1-D table, whose cell coordinate is fa); k = -1 if no table covers (y, m, v)."""
    return header_coordinates(table_header(meta), meta, y, m, v)


@njit(**NUMBA_OPTIONS)
def header_coordinates(header, meta, y, m, v):
    """:func:`table_coordinates` with the header already read (:func:`table_header`)."""
    usable, fold, t_lo, t_hi, g_lo, g_scale, n_tables, b_lo, b_hi, cells_a, b_scale = header
    if not usable:
        return -1, 0.0, 0.0
    if fold == FOLD_SCALE_FREE:
        z = y * m / math.sqrt(v)
        if not (z >= t_lo and z <= t_hi):
            return -1, 0.0, 0.0
        return 0, (_g(z) - g_lo) * g_scale, -1.0
    k = 0
    if fold == FOLD_BINARY:
        # y is -1 or +1 (check_y), so y m is -m or m exactly: no branch, which random labels
        # would mispredict half the time (measured: a third of the lookup's coordinate pass)
        t = y * m
    elif fold == FOLD_REAL:
        t = abs(m - y)
    else:
        if not (y >= 0.0 and y < n_tables):  # counts 0 .. n_tables - 1
            return -1, 0.0, 0.0
        k = int(y)
        t = abs(m) if fold == FOLD_COUNT_EVEN else m  # FOLD_COUNT: t = m
    b = 0.5 * math.log(v)
    if not (t >= t_lo and t <= t_hi and b >= b_lo - B_SLACK and b <= b_hi + B_SLACK):
        return -1, 0.0, 0.0
    return k, mapped_mean(mean_map(meta, k), t, v) * cells_a, (b - b_lo) * b_scale


@njit(**NUMBA_OPTIONS)
def mean_map(meta, k):
    """The constants of table k's mean map A(t, v), for :func:`mapped_mean`: (t_c, w^2, 1 / span,
    span^2, lo, symmetric) with span = t_hi - t_c, lo = t_lo - t_c (a batch kernel reads them once)."""
    block = fast_block(k)
    t_c = meta[block + B_T_CENTRE]
    w = meta[block + B_WIDTH]
    span = meta[H_T_HI] - t_c
    lo = meta[H_T_LO] - t_c
    return t_c, w * w, 1.0 / span, span * span, lo, lo == -span


@njit(**NUMBA_OPTIONS)
def mapped_mean(mean_map, t, v):
    """A in [0, 1] of folded mean t and cavity variance v (constants from :func:`mean_map`).

    A = (g(u) - g(u_lo)) / (g(u_hi) - g(u_lo)), u = (t - t_c) / d, d^2 = v + w^2, through
    r(u) = g(u) / g(u_hi) = (dt / span) ((d2 + span^2) / (d2 + dt^2))^(1/4): one division and
    two square roots per g ratio, and d itself is never needed. No branch depends on the point
    (only on the table), so a loop over points can run in SIMD lanes.
    """
    t_c, w2, inv_span, span2, lo, symmetric = mean_map
    d2 = v + w2
    dt = t - t_c
    r = dt * inv_span * math.sqrt(math.sqrt((d2 + span2) / (d2 + dt * dt)))
    if lo == 0.0:  # g(u_lo) = 0
        return r
    if symmetric:  # g is odd, r(u_lo) = -1
        return 0.5 * (1.0 + r)
    r_lo = lo * inv_span * math.sqrt(math.sqrt((d2 + span2) / (d2 + lo * lo)))
    return (r - r_lo) / (1.0 - r_lo)


@njit(**NUMBA_OPTIONS)
def is_line(meta):
    """Whether ``meta`` holds a 1-D (scale-free) table."""
    return int(meta[H_FOLD]) == FOLD_SCALE_FREE


@njit(**NUMBA_OPTIONS)
def line_table_value(coef, meta, fa):
    """h of a 1-D table at fractional cell coordinate fa in [0, n_cells]."""
    i = min(int(fa), int(meta[H_N_CELLS]) - 1)
    return fast.line_value(coef, (fast.DEGREE + 1) * i, 2.0 * (fa - i) - 1.0)


@njit(**NUMBA_OPTIONS)
def table_degree(meta, k):
    """The total degree of 2-D table k's fast patches (:func:`qpviz.tables.fast.family_degree`)."""
    return int(meta[fast_block(k) + B_DEGREE])


@njit(**NUMBA_OPTIONS)
def fast_table_locate(meta, k, fa, fb):
    """(patch offset, x, y) of 2-D table k (:func:`qpviz.tables.fast.locate_patch`; offset -1:
    the point's cell reads the stored tree)."""
    cells = int(meta[fast_block(k) + B_CELLS_OFFSET])
    return fast.locate_patch(meta, cells, int(meta[H_CELLS_A]), int(meta[H_CELLS_B]), fa, fb,
                             fast.patch_size(table_degree(meta, k)))


@njit(**NUMBA_OPTIONS)
def fast_table_value(coef, meta, k, fa, fb):
    """h of 2-D table k from its fast patches; NaN in a cell that reads the stored tree."""
    cells = int(meta[fast_block(k) + B_CELLS_OFFSET])
    return fast.cell_value(coef, meta, cells, int(meta[H_CELLS_A]), int(meta[H_CELLS_B]), fa, fb, table_degree(meta, k))


@njit(**NUMBA_OPTIONS)
def stored_table_value(coef, meta, k, fa, fb):
    """h of 2-D table k from its stored tree (the cells the fast patches leave out)."""
    block = fast_block(k)
    a = fa / meta[H_CELLS_A]
    b = meta[H_B_LO] + fb * ((meta[H_B_HI] - meta[H_B_LO]) / meta[H_CELLS_B])
    return tree_eval(meta, int(meta[block + B_NODE_OFFSET]), coef, int(meta[block + B_COEF_OFFSET]), a, b)


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
