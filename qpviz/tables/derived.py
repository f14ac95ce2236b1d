"""The in-memory (fast) form of a table file, cached on disk beside numba's caches.

Deriving a 2-D table's fast form (:func:`qpviz.tables.packing.runtime`) takes milliseconds of
arithmetic, but in a new process it first loads the derivation kernels from numba's cache
(~0.4 s for the probit table on an idle machine, more under load: on the way to a page's
first numbers), and the Poisson families take seconds. :func:`fast_form` therefore keeps each
derived form in a ``<table>.<key>.fastform.npz`` in :func:`qpviz.cache.table_cache_dir` and
reads it back in later processes.

* The key is a SHA-256 of the table file's arrays (its verified checksum), the sources that
  derive the fast form and the derivation's parameters: a cache of another table or another
  derivation is never read (``python -m qpviz.cache clear`` deletes them all).
* A cache file holds the arrays, their SHA-256 and the derivation's stats; one that is
  unreadable, of another key or fails its checksum is ignored, and the form derived again and
  written over it.
* Writing is atomic (a temporary file, then a rename), so a reader in another process sees
  the old file or the new one, never half of one. Where the folder is not writable (a
  read-only installation) the form is derived in every process; the stats say so.

Nothing here runs on ``import qpviz``: only a table's first use in a process reads or writes.
"""
from __future__ import annotations

import functools
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from qpviz import cache
from qpviz.tables import fast, store
from qpviz.tables.layout import H_LAYOUT, LAYOUT_FAST
from qpviz.tables.packing import runtime

__all__ = ["CACHE_FORMAT", "DERIVING_SOURCES", "cache_key", "cache_path", "fast_form"]

#: Version of the cache files' layout (part of the key).
CACHE_FORMAT = 2
#: The sources whose code decides the fast form (the key changes with any of them).
DERIVING_SOURCES = ("tables/fast.py", "tables/chebyshev.py", "tables/packing.py", "tables/layout.py",
                    "tables/derived.py")


@functools.lru_cache(maxsize=1)
def _deriving_code() -> str:
    return store.source_hash(DERIVING_SOURCES)


def cache_key(coef: np.ndarray, meta: np.ndarray) -> str:
    """SHA-256 of a stored table's arrays, the deriving sources and the derivation parameters."""
    digest = hashlib.sha256()
    parts = (CACHE_FORMAT, store.checksum(coef, meta), _deriving_code(), fast.GRID, fast.FAST_TOL, fast.MAX_LEVEL,
             fast.DEGREE, fast.SMALL_DEGREE)
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def cache_path(file_name: str, key: str) -> Path:
    """The cache file of table file ``file_name`` (e.g. ``probit.npz``) under ``key``."""
    return cache.table_cache_dir() / f"{Path(file_name).stem}.{key[:24]}{cache.TABLE_CACHE_SUFFIX}"


def _table_stem(path: Path) -> str:
    """The table file's stem of a cache file name (``<stem>.<key>.fastform.npz``)."""
    return path.name[: -len(cache.TABLE_CACHE_SUFFIX)].rsplit(".", 1)[0]


def _read(path: Path, key: str):
    """(coef, meta, stats) from a cache file of this key, or None (missing, unreadable, corrupt)."""
    try:
        with store.open_npz(path) as data:
            if str(data["key"]) != key:
                return None
            coef = np.ascontiguousarray(data["coef"], dtype=np.float64)
            meta = np.ascontiguousarray(data["meta"], dtype=np.float64)
            if store.checksum(coef, meta) != str(data["sha256"]) or meta.size == 0 or meta[H_LAYOUT] != LAYOUT_FAST:
                return None
            stats = json.loads(str(data["stats"]))
    except (OSError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile, EOFError):
        return None
    return coef, meta, stats if isinstance(stats, dict) else {}


def _write(path: Path, key: str, coef: np.ndarray, meta: np.ndarray, stats: dict) -> str:
    """Write the cache file atomically and remove this table's caches of other keys; returns
    what happened, for the stats."""
    try:
        cache.save_npz(path, key=np.array(key), coef=coef, meta=meta, sha256=np.array(store.checksum(coef, meta)),
                       stats=np.array(json.dumps(stats)))
    except OSError as exc:
        return f"derived (not cached: {exc.strerror or exc})"
    stem = _table_stem(path)
    for old in path.parent.glob(f"{stem}.*{cache.TABLE_CACHE_SUFFIX}"):
        if old != path and _table_stem(old) == stem:  # not step_eps0.05's caches for step_eps0
            try:
                old.unlink()
            except OSError:
                pass
    return "derived and cached"


def fast_form(coef: np.ndarray, meta: np.ndarray, file_name: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """:func:`qpviz.tables.packing.runtime` of a verified stored table, read from its cache file
    when one of the same key exists, else derived and cached. ``stats["fast_form"]`` says which."""
    key = cache_key(coef, meta)
    path = cache_path(file_name, key)
    cached = _read(path, key)
    if cached is not None:
        fast_coef, fast_meta, stats = cached
        return fast_coef, fast_meta, dict(stats, fast_form="from cache")
    fast_coef, fast_meta, stats = runtime(coef, meta)
    return fast_coef, fast_meta, dict(stats, fast_form=_write(path, key, fast_coef, fast_meta, stats))
