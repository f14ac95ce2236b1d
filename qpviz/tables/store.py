"""Table files: one ``.npz`` per family with the packed arrays and a JSON header.

On disk, every coefficient that is an integer multiple of :data:`~qpviz.tables.chebyshev.QUANTUM`
below 2^31 quanta (almost all of them: the fit rounds to that grid) is stored as an int32 with
its four bytes split into planes (high bytes are mostly 0x00/0xFF and deflate well); the rest
as float64. Loading rebuilds the float64 array exactly, and the checksum is of that array.

Header fields: ``format`` (file format version), ``spec`` (the family's generating parameters,
:meth:`TableFamily.spec`), ``sha256`` (of the little-endian bytes of ``coef`` then ``meta``),
``qpviz_version``, ``builder_hash`` and ``engine_hash`` (SHA-256 of the sources that fit the
tables and of the sources that compute sigma_QP, for provenance), and build ``stats``.

:func:`load` accepts a file only if the format, the spec and the checksum all match what the
library expects; anything else raises :class:`TableError` saying what is wrong and how to
rebuild, and the caller computes directly.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import zipfile
from pathlib import Path

import numpy as np

from qpviz.tables.chebyshev import QUANTUM
from qpviz.tables.families import TableFamily

__all__ = ["FORMAT_VERSION", "TableError", "checksum", "source_hash", "save", "load", "read_header", "NPZ_READ_LOCK",
           "open_npz"]

FORMAT_VERSION = 1
REBUILD_HINT = "rebuild with `python -m lookup_tables.build`"

_PACKAGE = Path(__file__).resolve().parent.parent
BUILDER_SOURCES = ("tables/chebyshev.py", "tables/families.py", "tables/layout.py", "tables/packing.py")
ENGINE_SOURCES = ("tilted", "special.py", "likelihoods")


class TableError(Exception):
    """A table file that must not be used (missing, unreadable, corrupt or stale)."""


def checksum(coef: np.ndarray, meta: np.ndarray) -> str:
    """SHA-256 of the packed arrays (float64, little-endian, coef then meta)."""
    digest = hashlib.sha256()
    for arr in (coef, meta):
        digest.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
    return digest.hexdigest()


def source_hash(relative_paths) -> str:
    """SHA-256 over the named qpviz source files (folders: their .py files, sorted)."""
    digest = hashlib.sha256()
    for rel in relative_paths:
        path = _PACKAGE / rel
        files = sorted(path.glob("*.py")) if path.is_dir() else [path]
        for f in files:
            digest.update(f.relative_to(_PACKAGE).as_posix().encode())
            digest.update(f.read_bytes() if f.exists() else b"<missing>")
    return digest.hexdigest()


def save(path: Path, family: TableFamily, coef: np.ndarray, meta: np.ndarray, stats: dict) -> dict:
    """Write a family's file atomically (temporary file, then rename); returns the header."""
    from qpviz import __version__

    header = {
        "format": FORMAT_VERSION,
        "spec": family.spec(),
        "sha256": checksum(coef, meta),
        "qpviz_version": __version__,
        "builder_hash": source_hash(BUILDER_SOURCES),
        "engine_hash": source_hash(ENGINE_SOURCES),
        "stats": stats,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, meta=meta, header=np.array(json.dumps(header, sort_keys=True)), **_encode(coef))
    os.replace(tmp, path)
    return header


def _encode(coef: np.ndarray) -> dict[str, np.ndarray]:
    """coef as {int mask bits, int32 byte planes, float64 rest} (lossless; see module docstring)."""
    with np.errstate(over="ignore"):  # huge values become inf quanta: stored as floats
        quanta = coef / QUANTUM
    is_int = (quanta == np.round(quanta)) & (np.abs(quanta) < 2.0**31) & ~((coef == 0) & np.signbit(coef))  # -0.0 stays a float
    ints = quanta[is_int].astype("<i4")
    planes = ints.view(np.uint8).reshape(-1, 4).T.copy()
    return {"coef_n": np.array(coef.size), "coef_is_int": np.packbits(is_int), "coef_int_planes": planes,
            "coef_rest": coef[~is_int].astype("<f8")}


def _decode(data) -> np.ndarray:
    n = int(data["coef_n"])
    is_int = np.unpackbits(data["coef_is_int"], count=n).astype(bool)
    planes = np.asarray(data["coef_int_planes"], dtype=np.uint8)
    ints = np.ascontiguousarray(planes.T).view("<i4").ravel()
    coef = np.empty(n)
    coef[is_int] = ints.astype(np.float64) * QUANTUM
    coef[~is_int] = data["coef_rest"]
    return coef


#: Held while a .npz file is read (:func:`open_npz`). NumPy parses each array's header with
#: ``ast.literal_eval``, and on CPython 3.11 two parses in two threads at once can fail with
#: "SystemError: AST constructor recursion depth mismatch" (python/cpython gh-106905; seen in CI when
#: the background preload and a lookup read two tables at the same moment).
NPZ_READ_LOCK = threading.RLock()


@contextlib.contextmanager
def open_npz(path):
    """``np.load`` of the .npz file at ``path`` (no pickles), read under :data:`NPZ_READ_LOCK`."""
    with NPZ_READ_LOCK, open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
        yield data


def read_header(path: Path) -> dict:
    """The JSON header of a table file (TableError if unreadable)."""
    try:
        with open_npz(path) as data:
            return json.loads(str(data["header"]))
    except FileNotFoundError:
        raise TableError(f"table file {path} is missing; {REBUILD_HINT}") from None
    except (OSError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise TableError(f"table file {path} is unreadable ({exc}); {REBUILD_HINT}") from None


def load(path: Path, family: TableFamily) -> tuple[np.ndarray, np.ndarray]:
    """(coef, meta) of a verified table file, else :class:`TableError`."""
    path = Path(path)
    header = read_header(path)
    try:
        with open_npz(path) as data:
            coef = _decode(data)
            meta = np.asarray(data["meta"], dtype=np.float64)
    except (OSError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise TableError(f"table file {path} is unreadable ({exc}); {REBUILD_HINT}") from None
    if header.get("format") != FORMAT_VERSION:
        raise TableError(f"table file {path} has format {header.get('format')!r}, expected {FORMAT_VERSION}; {REBUILD_HINT}")
    expected = json.loads(json.dumps(family.spec()))  # JSON round trip: tuples -> lists
    if header.get("spec") != expected:
        raise TableError(f"table file {path} was built for other parameters (stale): "
                         f"{header.get('spec')} != {expected}; {REBUILD_HINT}")
    if checksum(coef, meta) != header.get("sha256"):
        raise TableError(f"table file {path} fails its checksum (corrupt); {REBUILD_HINT}")
    return np.ascontiguousarray(coef), np.ascontiguousarray(meta)
