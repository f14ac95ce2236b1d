"""The switch between a sampled and a full parameter sweep (issue 22.6).

A slow sweep's default run keeps a sample that still runs each distinct code path and each distinct
check of its test (each test module says which cases it keeps and why); ``QPVIZ_FULL_SWEEPS=1`` runs
every case, e.g. ``QPVIZ_FULL_SWEEPS=1 bash scripts/test tests/app/test_link_values.py``.
"""
from __future__ import annotations

import os

__all__ = ["FULL_SWEEPS"]

#: True when ``QPVIZ_FULL_SWEEPS=1``: every sweep runs all its cases.
FULL_SWEEPS = os.environ.get("QPVIZ_FULL_SWEEPS", "") == "1"
