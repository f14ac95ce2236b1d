"""The layout of a table's ``meta`` array: named header fields and per-table blocks.

A family's tables travel as two float64 arrays, ``coef`` (polynomial coefficients) and ``meta``
(a header, one block per table, then offsets-addressed data). numba kernels read ``meta`` by
integer offsets, so every field has a named constant here; Python code can read a header as a
:class:`TableHeader` instead. There are three layouts, told apart by ``meta[H_LAYOUT]``.

Header fields shared by every layout:

======  ===============  ==================================================================
index   name             meaning
======  ===============  ==================================================================
0       ``H_LAYOUT``     :data:`LAYOUT_TREES`, :data:`LAYOUT_LINE` or :data:`LAYOUT_FAST`
1       ``H_FOLD``       the family's fold (``FOLD_*`` of :mod:`qpviz.tables.families`)
2       ``H_N_TABLES``   number of tables (1, or one per count for the Poisson families)
3, 4    ``H_T_LO/HI``    domain of the folded mean t (1-D tables: of z = y m / s)
======  ===============  ==================================================================

Stored layouts (what a file holds, :data:`STORED_HEADER` = 8 fields; never changes, the
shipped files' checksums cover it):

* ``LAYOUT_TREES`` (2-D): 5, 6 = ``S_B_LO``, ``S_B_HI`` (domain of b = log s), 7 unused; then
  per table k a block of :data:`STORED_BLOCK` fields at ``STORED_HEADER + STORED_BLOCK * k``:
  ``SB_T_CENTRE``, ``SB_WIDTH`` (t_c, w of the mean map), ``SB_NODE_OFFSET`` (its patch tree
  in ``meta``), ``SB_COEF_OFFSET`` (its coefficients in ``coef``); then the trees.
* ``LAYOUT_LINE`` (1-D, scale-free): 5, 6 = ``S_G_LO``, ``S_G_HI`` (domain of G = g(z)),
  7 = ``S_N_CELLS``; ``coef`` holds n_cells x 8 Chebyshev coefficients.

In-memory layout ``LAYOUT_FAST`` (derived at load time by
:func:`qpviz.tables.packing.runtime`; free to change, :data:`FAST_HEADER` = 12 fields):

======  ===============  ==================================================================
5, 6    ``H_B_LO/HI``    domain of b = log s (2-D)
7, 8    ``H_CELLS_A/B``  cells per table along A and b (2-D)
9, 10   ``H_G_LO/HI``    domain of G = g(z) (1-D)
11      ``H_N_CELLS``    number of uniform cells (1-D)
======  ===============  ==================================================================

then (2-D) per table k a block of :data:`FAST_BLOCK` fields at :func:`fast_block` ``(k)``:
``B_T_CENTRE``, ``B_WIDTH``, ``B_CELLS_OFFSET`` (its ``ca x cb`` cell codes in ``meta``),
``B_NODE_OFFSET`` (its stored tree in ``meta``), ``B_COEF_OFFSET`` (the tree's coefficients in
``coef``), ``B_DEGREE`` (the total degree of its fast patches, :func:`qpviz.tables.fast.family_degree`;
the same for every table of a family).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS

__all__ = [
    "LAYOUT_TREES", "LAYOUT_LINE", "LAYOUT_FAST",
    "H_LAYOUT", "H_FOLD", "H_N_TABLES", "H_T_LO", "H_T_HI",
    "S_B_LO", "S_B_HI", "S_G_LO", "S_G_HI", "S_N_CELLS", "STORED_HEADER",
    "SB_T_CENTRE", "SB_WIDTH", "SB_NODE_OFFSET", "SB_COEF_OFFSET", "STORED_BLOCK",
    "H_B_LO", "H_B_HI", "H_CELLS_A", "H_CELLS_B", "H_G_LO", "H_G_HI", "H_N_CELLS", "FAST_HEADER",
    "B_T_CENTRE", "B_WIDTH", "B_CELLS_OFFSET", "B_NODE_OFFSET", "B_COEF_OFFSET", "B_DEGREE", "FAST_BLOCK",
    "stored_block", "fast_block", "TableHeader",
]

LAYOUT_TREES = 1.0
LAYOUT_FAST = 2.0
LAYOUT_LINE = 3.0

# -- header fields of every layout
H_LAYOUT = 0
H_FOLD = 1
H_N_TABLES = 2
H_T_LO = 3
H_T_HI = 4

# -- stored layouts (files)
S_B_LO = 5
S_B_HI = 6
S_G_LO = 5
S_G_HI = 6
S_N_CELLS = 7
STORED_HEADER = 8
SB_T_CENTRE = 0
SB_WIDTH = 1
SB_NODE_OFFSET = 2
SB_COEF_OFFSET = 3
STORED_BLOCK = 4

# -- in-memory fast layout
H_B_LO = 5
H_B_HI = 6
H_CELLS_A = 7
H_CELLS_B = 8
H_G_LO = 9
H_G_HI = 10
H_N_CELLS = 11
FAST_HEADER = 12
B_T_CENTRE = 0
B_WIDTH = 1
B_CELLS_OFFSET = 2
B_NODE_OFFSET = 3
B_COEF_OFFSET = 4
B_DEGREE = 5
FAST_BLOCK = 6


def stored_block(k: int) -> int:
    """Offset in a stored ``meta`` of table k's block (Python: only packing reads stored blocks)."""
    return STORED_HEADER + STORED_BLOCK * k


@njit(**NUMBA_OPTIONS)
def fast_block(k):
    """Offset in an in-memory ``meta`` of table k's block (numba and Python)."""
    return FAST_HEADER + FAST_BLOCK * k


@dataclass(frozen=True)
class TableHeader:
    """The header of a ``meta`` array of any layout, by name (fields a layout lacks are 0).

    For Python code (packing, deriving, tests); the kernels read the same fields by the ``H_*``
    / ``S_*`` offsets. :meth:`array` writes exactly the float64 header :meth:`read` reads.
    """

    layout: float
    fold: int
    n_tables: int
    t_lo: float
    t_hi: float
    b_lo: float = 0.0
    b_hi: float = 0.0
    cells_a: int = 0
    cells_b: int = 0
    g_lo: float = 0.0
    g_hi: float = 0.0
    n_cells: int = 0

    @classmethod
    def read(cls, meta: np.ndarray) -> TableHeader:
        """The header of ``meta`` (ValueError for an unknown layout)."""
        layout = float(meta[H_LAYOUT])
        common = dict(layout=layout, fold=int(meta[H_FOLD]), n_tables=int(meta[H_N_TABLES]),
                      t_lo=float(meta[H_T_LO]), t_hi=float(meta[H_T_HI]))
        if layout == LAYOUT_TREES:
            return cls(**common, b_lo=float(meta[S_B_LO]), b_hi=float(meta[S_B_HI]))
        if layout == LAYOUT_LINE:
            return cls(**common, g_lo=float(meta[S_G_LO]), g_hi=float(meta[S_G_HI]), n_cells=int(meta[S_N_CELLS]))
        if layout == LAYOUT_FAST:
            return cls(**common, b_lo=float(meta[H_B_LO]), b_hi=float(meta[H_B_HI]), cells_a=int(meta[H_CELLS_A]),
                       cells_b=int(meta[H_CELLS_B]), g_lo=float(meta[H_G_LO]), g_hi=float(meta[H_G_HI]),
                       n_cells=int(meta[H_N_CELLS]))
        raise ValueError(f"unknown table layout {layout}")

    def array(self) -> np.ndarray:
        """The header as the float64 fields of its layout."""
        head = np.zeros(FAST_HEADER if self.layout == LAYOUT_FAST else STORED_HEADER)
        head[[H_LAYOUT, H_FOLD, H_N_TABLES, H_T_LO, H_T_HI]] = self.layout, self.fold, self.n_tables, self.t_lo, self.t_hi
        if self.layout == LAYOUT_TREES:
            head[[S_B_LO, S_B_HI]] = self.b_lo, self.b_hi
        elif self.layout == LAYOUT_LINE:
            head[[S_G_LO, S_G_HI, S_N_CELLS]] = self.g_lo, self.g_hi, self.n_cells
        elif self.layout == LAYOUT_FAST:
            head[[H_B_LO, H_B_HI, H_CELLS_A, H_CELLS_B, H_G_LO, H_G_HI, H_N_CELLS]] = (
                self.b_lo, self.b_hi, self.cells_a, self.cells_b, self.g_lo, self.g_hi, self.n_cells)
        else:
            raise ValueError(f"unknown table layout {self.layout}")
        return head
