"""qpviz._blas: the one-BLAS-thread context for small problems."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz import _blas, config


def _blas_threads() -> int:
    return min(lib["num_threads"] for lib in _blas._controller().select(user_api="blas").info())


@pytest.fixture
def two_blas_threads():
    """BLAS at two threads for the test (the suite runs one per process: tests/conftest.py)."""
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    if not _blas._controller().select(user_api="blas").lib_controllers:
        pytest.skip("threadpoolctl sees no BLAS library")
    with _blas._controller().limit(limits=2, user_api="blas"):
        if _blas_threads() != 2:
            pytest.skip("this BLAS cannot run two threads")
        yield


def test_small_problems_run_on_one_thread_and_large_ones_keep_the_default(two_blas_threads):
    with _blas.small_problem_threads(10):
        assert _blas_threads() == 1
    assert _blas_threads() == 2
    with _blas.small_problem_threads(config.BLAS_SINGLE_THREAD_N):
        assert _blas_threads() == 2


def test_the_context_leaves_on_an_error(two_blas_threads):
    with pytest.raises(ZeroDivisionError), _blas.small_problem_threads(10):
        1 / 0
    assert _blas_threads() == 2
