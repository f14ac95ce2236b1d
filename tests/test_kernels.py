"""Kernels: values against direct formulas, gradients against finite differences, input errors."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz import kernels

KERNELS = {
    "rbf": kernels.RBF(variance=1.7, lengthscale=0.6),
    "rbf_ard": kernels.RBF(variance=0.8, lengthscale=[0.5, 1.3]),
    "matern32": kernels.Matern32(variance=1.2, lengthscale=[0.7, 0.9]),
    "matern52": kernels.Matern52(variance=0.9, lengthscale=1.1),
    "periodic": kernels.Periodic(variance=1.4, lengthscale=0.8, period=1.9),
    "linear": kernels.Linear(variance=[0.5, 2.0]),
    "sum": kernels.RBF(1.0, 0.5) + kernels.Linear(0.3),
    "product": kernels.Matern52(1.5, [0.8, 1.2]) * kernels.Periodic(1.0, 1.0, 2.5),
}


@pytest.fixture
def X(rng):
    return rng.normal(size=(7, 2))


def test_rbf_matches_direct_formula(X):
    k = kernels.RBF(variance=2.0, lengthscale=[0.5, 1.5])
    i, j = 2, 5
    r2 = ((X[i] - X[j]) / np.array([0.5, 1.5])) ** 2
    assert k(X)[i, j] == pytest.approx(2.0 * np.exp(-0.5 * r2.sum()), rel=1e-14)


def test_matern_and_periodic_match_direct_formulas(X):
    i, j = 1, 4
    r = np.sqrt((((X[i] - X[j]) / 0.7) ** 2).sum())
    m32 = kernels.Matern32(1.3, 0.7)(X)[i, j]
    m52 = kernels.Matern52(1.3, 0.7)(X)[i, j]
    assert m32 == pytest.approx(1.3 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r), rel=1e-13)
    assert m52 == pytest.approx(1.3 * (1 + np.sqrt(5) * r + 5 * r * r / 3) * np.exp(-np.sqrt(5) * r), rel=1e-13)
    per = kernels.Periodic(0.9, 0.6, 2.0)(X)[i, j]
    s2 = (np.sin(np.pi * (X[i] - X[j]) / 2.0) ** 2).sum()
    assert per == pytest.approx(0.9 * np.exp(-2 * s2 / 0.36), rel=1e-13)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matrix_symmetric_psd_and_diag(name, X):
    k = KERNELS[name]
    K = k(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -1e-10
    np.testing.assert_allclose(k.diag(X), np.diag(K), rtol=1e-14)
    np.testing.assert_allclose(k(X, X[:3]), K[:, :3], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gradients_match_finite_differences(name, X):
    k = KERNELS[name]
    theta = k.log_params()
    grads = k.grad_log_params(X)
    assert len(grads) == len(theta) == len(k.param_names)
    h = 1e-6
    for j in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        fd = (k.with_log_params(up)(X) - k.with_log_params(down)(X)) / (2 * h)
        np.testing.assert_allclose(grads[j], fd, rtol=1e-6, atol=1e-8, err_msg=k.param_names[j])


def test_with_log_params_round_trip():
    k = kernels.RBF(2.0, [0.7, 0.3]) * kernels.Periodic(1.0, 0.5, 3.0)
    k2 = k.with_log_params(k.log_params())
    np.testing.assert_allclose(k2.log_params(), k.log_params(), rtol=1e-15)
    assert repr(kernels.RBF(variance=2.0, lengthscale=0.7)) == "qpviz.kernels.RBF(variance=2.0, lengthscale=0.7)"


def test_bad_input_messages():
    with pytest.raises(ValueError, match="lengthscale must be > 0"):
        kernels.RBF(lengthscale=-1.0)
    with pytest.raises(ValueError, match="ARD length scales"):
        kernels.RBF(lengthscale=[1.0, 2.0])(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        kernels.RBF()(np.array([0.0, np.nan]))
    with pytest.raises(TypeError, match="combine"):
        kernels.RBF() + 3.0


VJP_KERNELS = {
    "rbf": kernels.RBF(variance=1.7, lengthscale=0.6),
    "rbf_ard": kernels.RBF(variance=0.8, lengthscale=[0.5, 1.3]),
    "matern32_ard": kernels.Matern32(variance=1.2, lengthscale=[0.7, 0.9]),
    "matern52": kernels.Matern52(variance=0.9, lengthscale=1.1),
}


@pytest.mark.parametrize("name", sorted(VJP_KERNELS))
def test_cross_and_diag_vjp_match_finite_differences(name, rng):
    k = VJP_KERNELS[name]
    X1, X2 = rng.normal(size=(6, 2)), rng.normal(size=(4, 2))
    G, g = rng.normal(size=(6, 4)), rng.normal(size=6)
    grad_theta, grad_X1 = k.cross_vjp(X1, X2, G)
    diag_theta, diag_X = k.diag_vjp(X1, g)
    theta, h = k.log_params(), 1e-6
    for j in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        k_up, k_down = k.with_log_params(up), k.with_log_params(down)
        fd = np.sum(G * (k_up(X1, X2) - k_down(X1, X2))) / (2 * h)
        assert grad_theta[j] == pytest.approx(fd, rel=1e-6, abs=1e-8), k.param_names[j]
        fd_diag = np.sum(g * (k_up.diag(X1) - k_down.diag(X1))) / (2 * h)
        assert diag_theta[j] == pytest.approx(fd_diag, rel=1e-6, abs=1e-8), k.param_names[j]
    fd_X1 = np.empty_like(X1)
    for i in range(X1.shape[0]):
        for d in range(X1.shape[1]):
            up, down = X1.copy(), X1.copy()
            up[i, d] += h
            down[i, d] -= h
            fd_X1[i, d] = np.sum(G * (k(up, X2) - k(down, X2))) / (2 * h)
    np.testing.assert_allclose(grad_X1, fd_X1, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(diag_X, 0.0)  # k(x, x) = variance for a stationary kernel


@pytest.mark.parametrize("name", ["periodic", "linear", "sum", "product"])
def test_vjp_of_other_kernels_names_the_supported_ones(name, X):
    with pytest.raises(NotImplementedError, match="RBF, Matern32, Matern52"):
        KERNELS[name].cross_vjp(X, X, np.ones((7, 7)))
    with pytest.raises(NotImplementedError, match="RBF, Matern32, Matern52"):
        KERNELS[name].diag_vjp(X, np.ones(7))


@pytest.mark.parametrize("cls", [kernels.RBF, kernels.Matern32, kernels.Matern52])
def test_cross_covariance_expansion_matches_differences(cls, rng):
    """K(X, Z) from |a|^2 - 2 a.b + |b|^2 (O(N M) memory) equals the direct sum of squared
    differences to 1e-12 relative, also for inputs far from the origin (D = 8)."""
    ls = rng.uniform(0.5, 2.0, size=8)
    k = cls(1.3, ls)
    for offset in (0.0, 40.0):
        X = offset + rng.normal(size=(50, 8)) * 1.5
        Z = offset + rng.normal(size=(12, 8)) * 1.5
        r2 = (((X[:, None, :] - Z[None, :, :]) / ls) ** 2).sum(-1)
        direct = k.variance * k._shape(r2)
        got = k(X, Z)
        np.testing.assert_allclose(got, direct, rtol=1e-12, atol=0)
        np.testing.assert_allclose(k(X), k.variance * k._shape((((X[:, None] - X[None]) / ls) ** 2).sum(-1)),
                                   rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(VJP_KERNELS))
def test_vjp_given_the_callers_covariance_equals_the_vjp_without_it(name, rng):
    """cross_vjp(..., K=K(X1, X2)) (the RBF reads its slope off K; the Matern kernels ignore K) gives the
    same products to round-off, also for K(Z, Z); K of a wrong shape is refused, naming K."""
    k = VJP_KERNELS[name]
    X1, X2 = rng.normal(size=(6, 2)), rng.normal(size=(4, 2))
    G = rng.normal(size=(6, 4))
    for A, B, W in ((X1, X2, G), (X1, X1, G @ G.T)):
        with_k, without = k.cross_vjp(A, B, W, K=k(A, B)), k.cross_vjp(A, B, W)
        for got, want in zip(with_k, without):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    # the RBF reads K (its products are linear in it: twice K, twice the products); the others ignore it
    factor = 2.0 if name.startswith("rbf") else 1.0
    for got, want in zip(k.cross_vjp(X1, X2, G, K=2.0 * k(X1, X2)), k.cross_vjp(X1, X2, G)):
        np.testing.assert_allclose(got, factor * want, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="K must be K"):
        k.cross_vjp(X1, X2, G, K=np.ones((4, 6)))
