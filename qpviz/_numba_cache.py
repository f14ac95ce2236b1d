"""Drop qpviz's numba caches when any qpviz source has changed.

numba's ``cache=True`` invalidates a cached kernel only when *its own* file changes, but most
qpviz kernels compile in jitted functions from other files (the likelihood kernels call the
special functions, the engines call the tilted quadrature, ...). After an edit (a developer's,
or an upgrade installed over an old cache) a cached kernel would keep running the old machine
code of its callees. :func:`drop_stale_caches`, called first thing by ``import qpviz``,
fingerprints every ``.py`` file of the package and deletes all of the package's ``.nbi`` /
``.nbc`` cache files when the fingerprint differs from the one stored beside them, so the next
call recompiles from the current sources. Caches redirected with ``NUMBA_CACHE_DIR`` are left
alone (the fingerprint is still not stored there).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["drop_stale_caches", "source_fingerprint"]

PACKAGE = Path(__file__).resolve().parent
STAMP_NAME = "numba-sources.sha256"


def source_fingerprint(package: Path = PACKAGE) -> str:
    """SHA-256 over the relative paths and contents of every .py file of the package."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_caches(package: Path = PACKAGE) -> bool:
    """Delete the package's numba caches if its sources changed since they were written.

    Returns True when cache files were deleted. Read-only installations are left as they are
    (numba cannot write caches there either).
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    stamp = package / "__pycache__" / STAMP_NAME
    fingerprint = source_fingerprint(package)
    try:
        if stamp.read_text() == fingerprint:
            return False
    except OSError:
        pass
    removed = False
    for pattern in ("*.nbi", "*.nbc"):
        for cache_file in package.rglob(f"__pycache__/{pattern}"):
            try:
                cache_file.unlink()
                removed = True
            except OSError:  # another process removed it first
                pass
    try:
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(fingerprint)
    except OSError:
        pass
    return removed
