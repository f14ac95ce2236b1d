"""Our numba caches are dropped exactly when the sources they compile in have changed."""
from __future__ import annotations

from qpviz.inference import _numba_cache


def test_invalidate_stale_deletes_only_on_changed_fingerprint(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    module = tmp_path / "kernels_mod.py"
    module.write_text("# a module with jitted functions\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    index = cache / "kernels_mod.f-10.py311.nbi"
    other = cache / "unrelated.f-3.py311.nbi"
    index.write_text("x")
    other.write_text("x")
    assert _numba_cache.invalidate_stale(str(module))  # no record yet: treated as stale
    assert not index.exists() and other.exists()
    index.write_text("x")
    assert not _numba_cache.invalidate_stale(str(module))  # same dependencies: kept
    assert index.exists()
    monkeypatch.setattr(_numba_cache, "_fingerprint", lambda: "edited engine")
    assert _numba_cache.invalidate_stale(str(module))
    assert not index.exists()
    assert (cache / "kernels_mod.numba-deps").read_text() == "edited engine"
