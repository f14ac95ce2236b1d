"""qpviz's numba caches are dropped exactly when a package source has changed."""
from __future__ import annotations

from qpviz import _numba_cache


def _fake_package(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    caches = [package / "__pycache__" / "a.f-3.py311.nbi", package / "sub" / "__pycache__" / "b.g-9.py311.nbc"]
    for cache in caches:
        cache.write_text("compiled")
    bytecode = package / "__pycache__" / "a.cpython-311.pyc"
    bytecode.write_text("bytecode")
    return package, caches, bytecode


def test_caches_are_dropped_on_first_sight_and_after_any_edit_only(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    package, caches, bytecode = _fake_package(tmp_path)
    assert _numba_cache.drop_stale_caches(package)  # no stamp yet: stale
    assert not any(c.exists() for c in caches) and bytecode.exists()
    for cache in caches:
        cache.write_text("compiled")
    assert not _numba_cache.drop_stale_caches(package)  # unchanged sources: caches kept
    assert all(c.exists() for c in caches)
    (package / "sub" / "b.py").write_text("y = 3\n")  # an edit in another file than a.py
    assert _numba_cache.drop_stale_caches(package)
    assert not any(c.exists() for c in caches)


def test_redirected_cache_dir_is_left_alone(tmp_path, monkeypatch):
    package, caches, _ = _fake_package(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert not _numba_cache.drop_stale_caches(package)
    assert all(c.exists() for c in caches)


def test_the_real_package_is_stamped_after_import():
    import qpviz

    stamp = _numba_cache.PACKAGE / "__pycache__" / _numba_cache.STAMP_NAME
    assert qpviz.__version__
    assert stamp.read_text() == _numba_cache.source_fingerprint()
