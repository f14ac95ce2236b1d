"""The QP tables' fast forms cached on disk (qpviz.tables.derived): read back exactly, never a
stale or corrupt one, written atomically, cleared by ``python -m qpviz.cache clear``."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qpviz
from qpviz import cache, config, tables
from qpviz.tables import derived, store
from qpviz.tables.families import family_for
from qpviz.tables.packing import runtime

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """The table caches in a fresh folder (numba itself read NUMBA_CACHE_DIR at its import)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    return tmp_path / "qpviz-tables"


def _stored(name="probit", **params):
    fam = family_for(qpviz.likelihood(name, **params))
    return (*store.load(config.TABLE_DIR / fam.file_name, fam), fam.file_name)


def _assert_same(got, want):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_cached_form_is_read_back_exactly(cache_dir):
    coef, meta, name = _stored()
    want = runtime(coef, meta)
    first = derived.fast_form(coef, meta, name)
    assert first[2]["fast_form"] == "derived and cached"
    assert [p.name.split(".")[0] for p in cache_dir.iterdir()] == ["probit"]
    second = derived.fast_form(coef, meta, name)
    assert second[2]["fast_form"] == "from cache"
    _assert_same(first, want)
    _assert_same(second, want)
    assert second[2]["patches"] == want[2]["patches"] and second[2]["max_error"] == want[2]["max_error"]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not a zip"])
def test_a_corrupt_cache_file_is_ignored_and_replaced(cache_dir, damage):
    coef, meta, name = _stored()
    derived.fast_form(coef, meta, name)
    path = derived.cache_path(name, derived.cache_key(coef, meta))
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped":  # a coefficient's byte in the uncompressed archive: the checksum fails
        at = data.index(np.asarray(runtime(coef, meta)[0][40]).tobytes())
        data[at] ^= 0x10
    else:
        data = b"garbage" * 10
    path.write_bytes(bytes(data))
    again = derived.fast_form(coef, meta, name)
    assert again[2]["fast_form"] == "derived and cached"
    _assert_same(again, runtime(coef, meta))
    assert derived.fast_form(coef, meta, name)[2]["fast_form"] == "from cache"


def test_another_derivation_or_table_does_not_read_the_cache(cache_dir, monkeypatch):
    coef, meta, name = _stored()
    derived.fast_form(coef, meta, name)
    old = derived.cache_path(name, derived.cache_key(coef, meta))
    other = coef.copy()
    other[-1] += 1e-3  # another table (its checksum differs): another key
    assert derived.cache_key(other, meta) != derived.cache_key(coef, meta)
    monkeypatch.setattr(derived, "CACHE_FORMAT", derived.CACHE_FORMAT + 1)  # as a change of the code would
    got = derived.fast_form(coef, meta, name)
    assert got[2]["fast_form"] == "derived and cached"
    assert not old.exists()  # the stale file of this table is removed ...
    assert [p.name.split(".")[0] for p in cache_dir.iterdir()] == ["probit"]


def test_tables_whose_names_share_a_prefix_keep_their_own_caches(cache_dir):
    for eps in (0.0, 0.05):
        derived.fast_form(*_stored("step", eps=eps))
    names = sorted(p.name for p in cache_dir.iterdir())
    assert len(names) == 2 and names[0].startswith("step_eps0.05.") and names[1].startswith("step_eps0.")
    for eps in (0.0, 0.05):
        assert derived.fast_form(*_stored("step", eps=eps))[2]["fast_form"] == "from cache"


def test_an_unwritable_cache_folder_derives_every_time(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker))
    coef, meta, name = _stored()
    got = derived.fast_form(coef, meta, name)
    assert got[2]["fast_form"].startswith("derived (not cached")
    _assert_same(got, runtime(coef, meta))
    assert not list(tmp_path.rglob("*.tmp"))


def test_loading_reports_the_cached_form_and_clear_removes_it(cache_dir):
    lik = qpviz.likelihood("probit")
    try:
        for expected in ("derived and cached", "from cache"):
            tables.clear_cache()
            tables.jit_data(lik)
            assert tables.runtime_stats()["probit.npz"]["fast_form"] == expected
        assert float(tables.qp_variance(lik, 1.0, 0.5, 2.0)) == pytest.approx(
            float(qpviz.tilted.qp_std(lik, 1.0, 0.5, 2.0)) ** 2, rel=1e-7)
        assert len(cache.table_cache_files()) == 1
        assert cache.clear_table_caches() == 1 and cache.table_cache_files() == []
    finally:
        tables.clear_cache()


def test_import_writes_no_table_cache_and_the_command_clears_them(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", "import qpviz"], env=env, check=True)
    assert not (tmp_path / "qpviz-tables").exists()
    folder = tmp_path / "qpviz-tables"
    folder.mkdir()
    (folder / f"probit.abc{cache.TABLE_CACHE_SUFFIX}").write_bytes(b"x")
    # `clear` also deletes the numba caches in its package's __pycache__ folders, redirected or not:
    # run a copy of the package (from its folder: -m puts the working directory first), so that the
    # checkout's compiled kernels (written by the warm-up, used by the tests still to come on every
    # worker) are left as they are; before, every later test recompiled its kernels
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "qpviz", copy / "qpviz", ignore=shutil.ignore_patterns("__pycache__"))
    kept = cache.cache_files()
    out = subprocess.run([sys.executable, "-m", "qpviz.cache", "clear"], env={**env, "PYTHONPATH": str(copy)},
                         cwd=copy, check=True, text=True, capture_output=True).stdout
    assert "1 cached table forms" in out and not list(folder.iterdir())
    assert all(path.exists() for path in kept), "the command cleared the checkout's numba caches"
