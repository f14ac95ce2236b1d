"""Tests never write into tracked files: the mpmath reference caches new values outside the repository.

The committed tests/data/*.json are read-only inputs; :mod:`reference` stores a value they lack
in its cache directory (here a temporary one) and reads it back from there.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import reference

REPO = Path(__file__).resolve().parent.parent
#: a case the committed files do not hold (cheap: a Gaussian likelihood, ~1 s in mpmath)
NEW_CASE = ("gaussian", {"variance": 0.5}, 0.3, 0.1, 1.0)


def _tracked_state():
    """(git status of tracked files, or None without git; SHA-256 of every committed reference file)."""
    status = None
    if shutil.which("git") and (REPO / ".git").exists():
        run = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                             capture_output=True, text=True, check=False)
        status = run.stdout if run.returncode == 0 else None
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(reference.DATA_DIR.glob("*.json"))}
    return status, digests


@pytest.fixture
def temp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QPVIZ_TEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(reference, "_CACHES", {})
    return tmp_path / "cache"


def test_cache_dir_is_outside_the_repository(temp_cache, monkeypatch):
    assert reference.cache_dir() == temp_cache
    monkeypatch.delenv("QPVIZ_TEST_CACHE")
    assert REPO not in reference.cache_dir().resolve().parents


def test_a_new_reference_value_goes_to_the_cache_dir_not_the_repository(temp_cache, monkeypatch):
    key = reference._key("moments", *NEW_CASE)
    assert key not in reference._read(reference.DATA_DIR / reference.CACHE_FILE)
    before = _tracked_state()
    value = reference.cached_reference(*NEW_CASE)
    assert _tracked_state() == before
    stored = reference._read(temp_cache / reference.CACHE_FILE)
    assert stored == {key: value}  # only what the committed file lacks
    # a later run reads it back instead of recomputing
    monkeypatch.setattr(reference, "_CACHES", {})

    def no_recompute(*args):
        raise AssertionError("recomputed a cached value")

    monkeypatch.setattr(reference, "tilted_reference", no_recompute)
    assert reference.cached_reference(*NEW_CASE) == value


def test_committed_values_are_read_and_an_unreadable_cache_file_is_ignored(temp_cache):
    committed = reference._read(reference.DATA_DIR / reference.CDF_CACHE_FILE)
    temp_cache.mkdir(parents=True)
    (temp_cache / reference.CDF_CACHE_FILE).write_text("{not json")
    assert reference._load(reference.CDF_CACHE_FILE) == committed
