"""Inducing inputs and covariances of the sparse priors (qpviz.inference.inducing)."""
import warnings

import numpy as np
import pytest
from scipy import linalg

from qpviz import config, kernels
from qpviz.inference import inducing


def test_kmeans_finds_separated_clusters_and_is_reproducible():
    rng = np.random.default_rng(0)
    centres = np.array([[-5.0, 0.0], [0.0, 5.0], [5.0, 0.0]])
    X = np.concatenate([c + 0.1 * rng.normal(size=(50, 2)) for c in centres])
    Z = inducing.kmeans_inducing(X, 3, seed=1)
    found = Z[np.argsort(Z[:, 0])]
    np.testing.assert_allclose(found, centres, atol=0.05)
    np.testing.assert_array_equal(Z, inducing.kmeans_inducing(X, 3, seed=1))


def test_kmeans_gives_distinct_centres_when_clusters_would_empty():
    X = np.r_[np.zeros(20), np.ones(20), [2.0, 3.0]][:, None]  # 4 distinct values, M = 4
    Z = inducing.kmeans_inducing(X, 4, seed=0)
    assert sorted(Z[:, 0].tolist()) == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, 11])
def test_kmeans_refuses_a_bad_m(bad):
    with pytest.raises(ValueError, match="M"):
        inducing.kmeans_inducing(np.arange(10.0), bad)


def test_as_inducing_takes_an_int_or_an_array_of_the_inputs_width():
    X = np.random.default_rng(1).normal(size=(30, 2))
    assert inducing.as_inducing(5, X).shape == (5, 2)
    with pytest.raises(ValueError, match="2 column"):
        inducing.as_inducing(np.zeros((4, 3)), X)


def _blurred_by_sampling(kernel, x, b, C, n=400_000, seed=0):
    """int k(x, x') N(x' | b, C) dx' by Monte Carlo."""
    rng = np.random.default_rng(seed)
    samples = rng.multivariate_normal(b, C, size=n)
    return kernel(x[None, :], samples).mean()


def test_vsgp_cross_covariance_matches_monte_carlo_for_full_covariances():
    kernel = kernels.RBF(variance=1.7, lengthscale=[0.8, 1.3])
    Z = np.array([[0.2, -0.4], [1.0, 0.5]])
    C = np.array([[[0.5, 0.2], [0.2, 0.3]], [[0.1, 0.0], [0.0, 0.9]]])
    X = np.array([[0.0, 0.0], [1.5, -1.0]])
    cov = inducing.inducing_covariances(kernel, X, Z, C)
    for j in range(2):
        for i in range(2):
            assert cov.Kuf[j, i] == pytest.approx(_blurred_by_sampling(kernel, X[i], Z[j], C[j]), rel=5e-3)
    # K^_01 = E k(x, x') with x ~ N(b_0, C_0), x' ~ N(b_1, C_1): the blur of K~(., b_1) around b_0
    rng = np.random.default_rng(3)
    a = rng.multivariate_normal(Z[0], C[0], size=400_000)
    b = rng.multivariate_normal(Z[1], C[1], size=400_000)
    pairwise = 1.7 * np.exp(-0.5 * np.sum(((a - b) / [0.8, 1.3]) ** 2, axis=1))
    assert cov.Kuu[0, 1] == pytest.approx(pairwise.mean(), rel=5e-3)
    np.testing.assert_allclose(cov.Kuu, cov.Kuu.T)
    assert np.all(np.linalg.eigvalsh(cov.Kuu) > 0)


def test_vsgp_spherical_covariances_tend_to_the_pseudo_points():
    kernel = kernels.RBF(variance=2.0, lengthscale=0.7)
    X = np.linspace(-2, 2, 9)[:, None]
    Z = np.array([[-1.0], [0.3], [1.1]])
    plain = inducing.inducing_covariances(kernel, X, Z)
    blurred = inducing.inducing_covariances(kernel, X, Z, np.full(3, 1e-12))
    np.testing.assert_allclose(blurred.Kuf, plain.Kuf, rtol=1e-9)
    np.testing.assert_allclose(blurred.Kuu, plain.Kuu, rtol=1e-9)
    wide = inducing.inducing_covariances(kernel, X, Z, np.full(3, 0.5))
    assert np.all(np.diag(wide.Kuu) < 2.0)  # blurring averages: a blurred value varies less


@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("block_entries", [inducing.BLURRED_BLOCK_ENTRIES, 7])
def test_blocked_blurred_covariances_equal_the_row_by_row_reference(D, block_entries, monkeypatch):
    """K_uf and K_uu computed a block of rows at once (batched Cholesky factors) against the row-by-row
    reference (SciPy per row), ARD length scales, full, spherical and zero covariances, in one block and
    in blocks of a few rows (7 entries: 1 to 3 rows a block, the last one short)."""
    monkeypatch.setattr(inducing, "BLURRED_BLOCK_ENTRIES", block_entries)
    rng = np.random.default_rng(D)
    kernel = kernels.RBF(variance=1.3, lengthscale=rng.uniform(0.4, 1.5, size=D))
    Z, X = rng.normal(size=(11, D)), rng.normal(size=(37, D))
    factors = rng.normal(size=(11, D, D))
    full = 0.4 * factors @ np.swapaxes(factors, 1, 2)
    for C in (full, inducing.as_inducing_cov(rng.uniform(0, 0.6, size=11), 11, D), np.zeros((11, D, D))):
        for B, CB in ((X, None), (Z, C)):
            np.testing.assert_allclose(inducing._blurred_rbf(kernel, Z, C, B, CB),
                                       inducing._blurred_rbf_rows(kernel, Z, C, B, CB), rtol=1e-12, atol=0)


def test_vsgp_refuses_other_kernels_and_bad_covariances():
    X, Z = np.zeros((3, 1)), np.zeros((2, 1))
    with pytest.raises(ValueError, match="RBF"):
        inducing.inducing_covariances(kernels.Matern32(), X, Z, np.ones(2))
    with pytest.raises(ValueError, match="shape"):
        inducing.inducing_covariances(kernels.RBF(), X, Z, np.ones(3))
    with pytest.raises(ValueError, match="semi-definite"):
        inducing.inducing_covariances(kernels.RBF(), X, Z, -np.ones((2, 1, 1)))


def test_cholesky_uses_the_package_jitter_and_escalates_with_a_warning():
    kernel = kernels.RBF()
    Z = np.array([[0.0], [1.0]])
    L, jitter = inducing.cholesky_kuu(kernel(Z))
    assert jitter == config.JITTER
    np.testing.assert_allclose(L @ L.T, kernel(Z) + config.JITTER * np.eye(2), atol=1e-14)
    piled = np.zeros((3, 1))  # three inducing inputs in one place: K_uu has rank 1
    Kuu = kernel(piled)
    Kuu[0, 1] = Kuu[1, 0] = 1.0 + 1e-6  # slightly indefinite, as rounding makes it
    with pytest.warns(inducing.JitterWarning, match="nearly coincide"):
        L, jitter = inducing.cholesky_kuu(Kuu)
    assert jitter > config.JITTER
    np.testing.assert_allclose(L @ L.T, Kuu + jitter * np.eye(3), atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inducing.JitterWarning)
        with pytest.raises(linalg.LinAlgError, match="could not be factorised"):
            inducing.cholesky_kuu(np.array([[1.0, 0.0], [0.0, np.nan]]))
