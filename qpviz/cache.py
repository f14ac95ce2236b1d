"""qpviz's numba caches: find them, drop them when a source changed, clear them.

numba's ``cache=True`` invalidates a cached kernel only when *its own* file changes, but most
qpviz kernels compile in jitted functions from other files (the likelihood kernels call the
special functions, the engines call the tilted quadrature, ...). After an edit (a developer's,
or an upgrade installed over an old cache) a cached kernel would keep running the old machine
code of its callees. :func:`drop_stale_caches` fingerprints every ``.py`` file of the package
and deletes all of the package's ``.nbi`` / ``.nbc`` cache files when the fingerprint differs
from the one stored beside them, so the next call recompiles from the current sources.

This is an explicit step, never a side effect of ``import qpviz``:

* ``python -m qpviz.cache check``: drop the caches if the sources changed (``scripts/_venv.sh``
  runs it after an install, ``scripts/serve`` and ``scripts/test`` before they start);
* ``python -m qpviz.cache clear``: drop them unconditionally (a cold start, as the start-up
  benchmark measures it);
* ``python -m qpviz.cache status``: where the caches are, how many, and whether they are stale.

numba writes a module's caches to ``__pycache__`` beside it (the ``.nbi`` index and one
``.nbc`` per compiled signature). Caches redirected with ``NUMBA_CACHE_DIR`` are left alone (the
fingerprint is not stored there); run ``clear`` on that folder yourself after an upgrade.

Beside numba's caches, :mod:`qpviz.tables.derived` keeps the QP tables' in-memory (fast) forms,
one ``*.fastform.npz`` per table file in :func:`table_cache_dir` (``qpviz/tables/__pycache__``,
or ``$NUMBA_CACHE_DIR/qpviz-tables``), so that a new process reads them instead of deriving
them. Each is keyed by its table file's checksum and the deriving code, so a stale one is never
used; ``clear`` deletes them, and ``check`` too when the sources changed.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
from pathlib import Path

__all__ = ["PACKAGE", "STAMP_NAME", "TABLE_CACHE_SUFFIX", "RATIO_MAP_SUFFIX", "cache_files", "table_cache_dir", "table_cache_files",
           "clear_table_caches", "source_fingerprint", "is_stale", "drop_stale_caches",
           "clear_caches", "save_npz", "main"]

PACKAGE = Path(__file__).resolve().parent
STAMP_NAME = "numba-sources.sha256"
#: File name ending of a cached fast form of a QP table (:mod:`qpviz.tables.derived`).
TABLE_CACHE_SUFFIX = ".fastform.npz"
#: File name ending of a stored var_QP/var_EP map of the Projection Explorer (kept in the same
#: folder: :func:`qpviz.explorer.views.store_ratio_map`).
RATIO_MAP_SUFFIX = ".ratiomap.npz"


def source_fingerprint(package: Path = PACKAGE) -> str:
    """SHA-256 over the relative paths and contents of every .py file of the package."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_files(package: Path = PACKAGE) -> list[Path]:
    """The package's numba cache files (.nbi index and .nbc data files in its __pycache__ folders)."""
    return sorted(p for pattern in ("*.nbi", "*.nbc") for p in package.rglob(f"__pycache__/{pattern}"))


def table_cache_dir(package: Path = PACKAGE) -> Path:
    """Where the QP tables' derived fast forms are cached: ``$NUMBA_CACHE_DIR/qpviz-tables`` when
    numba's caches are redirected (e.g. a read-only installation), else ``tables/__pycache__``."""
    redirected = os.environ.get("NUMBA_CACHE_DIR")
    return Path(redirected) / "qpviz-tables" if redirected else package / "tables" / "__pycache__"


def table_cache_files(package: Path = PACKAGE) -> list[Path]:
    """The cached fast forms of the QP tables (not counted among numba's :func:`cache_files`)."""
    return sorted(table_cache_dir(package).glob(f"*{TABLE_CACHE_SUFFIX}"))


def _unlink_all(paths) -> int:
    removed = 0
    for path in paths:
        try:
            path.unlink()
            removed += 1
        except OSError:  # another process removed it first
            pass
    return removed


def save_npz(path: Path, **arrays) -> None:
    """Write ``arrays`` to the ``.npz`` file ``path`` atomically (a temporary file of this process
    and thread, then renamed: a reader never sees half a file), making its folder if needed; an
    OSError (e.g. a read-only installation) leaves no temporary file behind and is raised."""
    import numpy as np  # noqa: PLC0415 - `python -m qpviz.cache check` needs no NumPy

    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def clear_table_caches(package: Path = PACKAGE) -> int:
    """Delete the cached fast forms of the QP tables, and the explorer's stored maps beside them;
    returns how many fast forms were deleted."""
    _unlink_all(sorted(table_cache_dir(package).glob(f"*{RATIO_MAP_SUFFIX}")))
    return _unlink_all(table_cache_files(package))


def _stamp(package: Path) -> Path:
    return package / "__pycache__" / STAMP_NAME


def is_stale(package: Path = PACKAGE) -> bool:
    """Whether the sources differ from those the caches were written for (no stamp: stale)."""
    try:
        return _stamp(package).read_text() != source_fingerprint(package)
    except OSError:
        return True


#: A finished warm-up's record (:mod:`qpviz.warmup`), one per target, in the package's __pycache__.
WARMUP_STAMP = "warmup-{}.txt"


def warmup_stamp(what: str, package: Path = PACKAGE) -> Path:
    """Where the record of a finished warm-up of ``what`` is kept."""
    return package / "__pycache__" / WARMUP_STAMP.format(what)


def clear_caches(package: Path = PACKAGE) -> int:
    """Delete every numba cache file of the package, and the warm-ups' records of them (a record
    left behind let a warm-up under way count as finished once it had written as many files: a
    page then compiled in the server what a child process was compiling); returns how many cache
    files were deleted."""
    _unlink_all(sorted((package / "__pycache__").glob(WARMUP_STAMP.format("*"))))
    return _unlink_all(cache_files(package))


def drop_stale_caches(package: Path = PACKAGE) -> bool:
    """Delete the package's numba caches if its sources changed since they were written, and
    stamp the current sources.

    Returns True when cache files were deleted. Read-only installations are left as they are
    (numba cannot write caches there either), and so are caches under ``NUMBA_CACHE_DIR``.
    """
    if os.environ.get("NUMBA_CACHE_DIR") or not is_stale(package):
        return False
    removed = clear_caches(package) > 0
    clear_table_caches(package)  # keyed by the deriving code anyway: tidiness, not correctness
    try:
        _stamp(package).parent.mkdir(exist_ok=True)
        _stamp(package).write_text(source_fingerprint(package))
    except OSError:
        pass
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qpviz.cache", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "clear", "status"),
                        help="check: drop the caches if a source changed; clear: drop them; status: report")
    args = parser.parse_args(argv)
    redirected = os.environ.get("NUMBA_CACHE_DIR")
    if args.action == "status":
        where = redirected or f"{PACKAGE}/**/__pycache__"
        print(f"numba caches in {where}: {len(cache_files())} files in the package, "
              f"{'stale' if is_stale() else 'up to date'}")
        print(f"QP tables' fast forms in {table_cache_dir()}: {len(table_cache_files())} files")
    elif args.action == "clear":
        print(f"removed {clear_caches()} numba cache files and {clear_table_caches()} cached table forms of qpviz")
    elif redirected:
        print(f"NUMBA_CACHE_DIR={redirected}: caches there are not checked (run clear after an upgrade)")
    elif drop_stale_caches():
        print("qpviz sources changed since the numba caches were written: removed them (kernels recompile once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
