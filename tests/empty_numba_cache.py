"""Run code in a fresh Python whose numba cache starts empty: what a first start compiles.

:func:`run` gives the code ``app/`` on its path and ``cache_files()``, the kernels written to the
cache so far (tests/test_warmup.py, tests/test_explorer.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREAMBLE = (
    "import os, pathlib, sys\n"
    f"sys.path.insert(0, {str(ROOT / 'app')!r})\n"
    "def cache_files():\n"
    "    return sorted(str(p) for p in pathlib.Path(os.environ['NUMBA_CACHE_DIR']).rglob('*.nbi'))\n"
)


def run(code: str, cache_dir: Path) -> list[str]:
    """The lines ``code`` printed, run after :data:`PREAMBLE` with numba's cache in ``cache_dir``
    (empty or absent); an AssertionError with its error output if it failed."""
    done = subprocess.run([sys.executable, "-c", PREAMBLE + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()
