"""Drop this package's numba caches when the jitted code they call has changed.

numba's ``cache=True`` invalidates a cached kernel only when *its own* source file changes; a
kernel compiled together with functions from other files (here: the tilted-moment engine, the
likelihood kernels, the special functions and the QP tables) keeps the old machine code of those
functions after they are edited. :func:`invalidate_stale` fingerprints those dependency files
and deletes the cache files (``__pycache__/<module>.*.nbi/.nbc``) of one of our modules when
the fingerprint differs from the one recorded with them. Call it at import, before the module
defines its jitted functions. Caches placed elsewhere with ``NUMBA_CACHE_DIR`` are not touched.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["invalidate_stale", "DEPENDENCIES"]

_PACKAGE = Path(__file__).resolve().parent.parent  # qpviz/

#: files and folders (relative to qpviz/) whose jitted functions our kernels compile in
DEPENDENCIES = ("config.py", "special.py", "tilted.py", "likelihoods", "tables")


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in DEPENDENCIES:
        path = _PACKAGE / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                digest.update(str(f.relative_to(_PACKAGE)).encode())
                digest.update(f.read_bytes())
    return digest.hexdigest()


def invalidate_stale(module_file: str) -> bool:
    """Delete the numba cache of ``module_file`` if its dependencies changed; True if it did."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    source = Path(module_file).resolve()
    cache_dir = source.parent / "__pycache__"
    stamp = cache_dir / f"{source.stem}.numba-deps"
    fingerprint = _fingerprint()
    try:
        if stamp.read_text() == fingerprint:
            return False
    except OSError:
        pass
    removed = False
    for pattern in (f"{source.stem}.*.nbi", f"{source.stem}.*.nbc"):
        for f in cache_dir.glob(pattern):
            try:
                f.unlink()
                removed = True
            except OSError:  # another process removed it first
                pass
    try:
        cache_dir.mkdir(exist_ok=True)
        stamp.write_text(fingerprint)
    except OSError:  # read-only installation: numba cannot cache there either
        pass
    return removed
