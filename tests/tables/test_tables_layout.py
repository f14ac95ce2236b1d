"""The named layout of the tables' ``meta`` arrays (qpviz.tables.layout) and the shared ranges."""
from __future__ import annotations

import numpy as np
import pytest
import reference

from qpviz import config, explorer
from qpviz.tables import layout, store
from qpviz.tables.families import TABLE_STD_RANGE, all_families
from qpviz.tables.packing import runtime

_FAMILIES = {fam.file_name: fam for fam in all_families()}


def _fields(prefix, size):
    names = [n for n in layout.__all__ if n.startswith(prefix) and isinstance(getattr(layout, n), int)]
    values = [getattr(layout, n) for n in names]
    assert all(0 <= v < size for v in values), dict(zip(names, values))
    return dict(zip(names, values))


def test_fields_lie_inside_their_header_or_block_and_do_not_overlap():
    common = _fields("H_", layout.FAST_HEADER)
    assert sorted(common.values()) == list(range(layout.FAST_HEADER))  # fast header: every field named once
    tree = {n: v for n, v in _fields("S_", layout.STORED_HEADER).items() if n in ("S_B_LO", "S_B_HI")}
    line = {n: v for n, v in _fields("S_", layout.STORED_HEADER).items() if n.startswith("S_G") or n == "S_N_CELLS"}
    shared = {common[n] for n in ("H_LAYOUT", "H_FOLD", "H_N_TABLES", "H_T_LO", "H_T_HI")}
    for fields in (tree, line):
        assert len(set(fields.values())) == len(fields) and not shared & set(fields.values())
    assert len(set(_fields("SB_", layout.STORED_BLOCK).values())) == 4
    assert len(set(_fields("B_", layout.FAST_BLOCK).values())) == 6


@pytest.mark.parametrize("name", ["probit.npz", "step_eps0.1.npz", "poisson_square.npz"])
def test_header_view_reads_and_writes_the_shipped_arrays_unchanged(name):
    fam = _FAMILIES[name]
    coef, meta = store.load(config.TABLE_DIR / name, fam)
    stored = layout.TableHeader.read(meta)
    assert stored.fold == fam.fold and stored.n_tables == fam.n_tables and stored.t_lo == fam.t_lo
    assert stored.array().tobytes() == meta[:layout.STORED_HEADER].tobytes()
    _, fast_meta, _ = runtime(coef, meta)
    fast = layout.TableHeader.read(fast_meta)
    assert fast.layout == layout.LAYOUT_FAST and fast.fold == stored.fold and fast.n_tables == stored.n_tables
    assert fast.array().tobytes() == fast_meta[:layout.FAST_HEADER].tobytes()
    if stored.layout == layout.LAYOUT_TREES:
        for k in range(stored.n_tables):
            old = meta[layout.stored_block(k):]
            new = fast_meta[layout.fast_block(k):]
            assert new[layout.B_T_CENTRE] == old[layout.SB_T_CENTRE] and new[layout.B_WIDTH] == old[layout.SB_WIDTH]


def test_header_view_rejects_an_unknown_layout():
    with pytest.raises(ValueError, match="unknown table layout"):
        layout.TableHeader.read(np.array([9.0, 1, 1, 0, 1, 0, 0, 0]))


def test_shared_std_ranges_agree_with_the_tables_range():
    # ranges with other meanings, checked against the one table range: the page's slider
    # (explorer) lies inside it; the accuracy requirement's domain (tests/reference.py, which
    # keeps its own copy because it never imports qpviz numerics) is exactly it
    assert TABLE_STD_RANGE[0] <= explorer.CAVITY_STD_SLIDER[0] < explorer.CAVITY_STD_SLIDER[1] <= TABLE_STD_RANGE[1]
    assert reference.STD_RANGE == TABLE_STD_RANGE
