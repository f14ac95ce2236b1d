"""qpviz._blas.lower_inverse: the inverse of a lower triangular matrix by halves equals LAPACK's."""
import numpy as np
import pytest
from scipy.linalg import LinAlgError, lapack

from qpviz._blas import lower_inverse


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
