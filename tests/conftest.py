"""Fixtures shared by the whole test suite.

Browser-only fixtures (the served app, Chromium launch options) live in tests/browser/conftest.py.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest


def pytest_configure(config):
    """Drop numba caches written for other sources before any kernel loads (the explicit step
    of qpviz/cache.py; ``import qpviz`` itself never touches them)."""
    from qpviz.cache import drop_stale_caches

    drop_stale_caches()


@pytest.fixture
def rng() -> np.random.Generator:
    """A freshly seeded generator per test (no global seeds anywhere)."""
    return np.random.default_rng(20240611)


@pytest.fixture(autouse=True)
def _clear_panel_caches():
    """Empty ``pn.cache`` after each test that imported Panel, so tests cannot leak results."""
    yield
    panel = sys.modules.get("panel")
    if panel is not None:
        panel.state.clear_caches()
