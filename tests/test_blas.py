"""qpviz._blas: the one-BLAS-thread context for small problems, and lower_inverse (the inverse of a
lower triangular matrix by halves) against LAPACK's."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import LinAlgError, lapack

from qpviz import _blas, config
from qpviz._blas import lower_inverse


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


@pytest.mark.parametrize("m", [1, 2, 3, 8, 201])
def test_lower_inverse_equals_lapacks_and_inverts(m):
    rng = np.random.default_rng(m)
    G = rng.standard_normal((m, m))
    T = np.linalg.cholesky(np.eye(m) + G @ G.T / m)  # as SEP's L_P (sep._rebuild): P = I + L^T Lambda L
    T[np.triu_indices(m, 1)] = 7.0  # numbers above the diagonal are not read
    inverse = lower_inverse(T)
    assert inverse.flags.f_contiguous
    np.testing.assert_array_equal(np.triu(inverse, 1), 0.0)
    np.testing.assert_allclose(inverse, np.tril(lapack.dtrtri(np.tril(T), lower=1)[0]), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(inverse @ np.tril(T), np.eye(m), atol=1e-12)


def test_lower_inverse_of_a_singular_matrix_raises():
    T = np.tril(np.ones((6, 6)))
    T[4, 4] = 0.0
    with pytest.raises(LinAlgError, match="singular"):
        lower_inverse(T)
