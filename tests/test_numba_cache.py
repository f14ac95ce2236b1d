"""qpviz's numba caches are dropped exactly when a package source has changed, by the explicit
step ``python -m qpviz.cache``; ``import qpviz`` writes nothing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from qpviz import cache

ROOT = Path(__file__).resolve().parents[1]


def _fake_package(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    caches = [package / "__pycache__" / "a.f-3.py311.nbi", package / "sub" / "__pycache__" / "b.g-9.py311.nbc"]
    for cache_file in caches:
        cache_file.write_text("compiled")
    bytecode = package / "__pycache__" / "a.cpython-311.pyc"
    bytecode.write_text("bytecode")
    return package, caches, bytecode


def test_caches_are_dropped_on_first_sight_and_after_any_edit_only(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    package, caches, bytecode = _fake_package(tmp_path)
    assert cache.is_stale(package)
    assert cache.drop_stale_caches(package)  # no stamp yet: stale
    assert not any(c.exists() for c in caches) and bytecode.exists()
    for cache_file in caches:
        cache_file.write_text("compiled")
    assert not cache.is_stale(package)
    assert not cache.drop_stale_caches(package)  # unchanged sources: caches kept
    assert all(c.exists() for c in caches)
    (package / "sub" / "b.py").write_text("y = 3\n")  # an edit in another file than a.py
    assert cache.drop_stale_caches(package)
    assert not any(c.exists() for c in caches)


def test_clear_drops_every_cache_file_and_the_warm_ups_records_and_nothing_else(tmp_path):
    package, caches, bytecode = _fake_package(tmp_path)
    stamps = [cache.warmup_stamp(what, package) for what in ("explorer", "all")]
    for stamp in stamps:
        stamp.write_text("fingerprint 2")
    assert cache.cache_files(package) == sorted(caches)
    assert cache.clear_caches(package) == 2
    assert cache.cache_files(package) == [] and bytecode.exists()
    assert not any(stamp.exists() for stamp in stamps)  # a record of kernels no longer there


def test_redirected_cache_dir_is_left_alone(tmp_path, monkeypatch):
    package, caches, _ = _fake_package(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert not cache.drop_stale_caches(package)
    assert all(c.exists() for c in caches)


def test_the_command_line_checks_the_real_package():
    """`python -m qpviz.cache check` leaves the package stamped with its current sources."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "qpviz.cache", "check"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not cache.is_stale()


def _snapshot(folder: Path) -> dict:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_import_qpviz_writes_nothing_and_loads_no_numerics(tmp_path):
    """`import qpviz` touches no file of the package (no stamp, no cache, no bytecode: Python is
    told not to write any, so only qpviz could) and imports neither numba nor scipy.

    Imported from a copy of the package (its caches included), watched alone: the real package's
    __pycache__ is written by the other xdist worker's panel servers at any time (the explorer
    warm-up's stamp and its stored map, a fresh clone's CI run, 2026-11-27), which failed this test
    while the import wrote nothing."""
    import shutil  # noqa: PLC0415

    package = shutil.copytree(cache.PACKAGE, tmp_path / "qpviz", symlinks=True)
    before = _snapshot(package)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    code = ("import sys, qpviz; print(qpviz.__version__, 'numba' in sys.modules, 'scipy' in sys.modules, "
            "qpviz.__file__)")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0.1.0", "False", "False", str(package / "__init__.py")]  # the copy's
    assert _snapshot(package) == before


def test_public_names_import_on_first_use():
    import qpviz

    assert qpviz.fit.__module__ == "qpviz.inference.fit"
    assert qpviz.kernels.RBF().variance == 1.0
    assert {"fit", "kernels", "likelihood", "project"} <= set(dir(qpviz))
