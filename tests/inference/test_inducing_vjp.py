"""Gradients of the sparse priors' covariances (inducing.covariance_vjp) and VSGP's packed
local covariances, against central finite differences of inducing.inducing_covariances."""
import tracemalloc

import numpy as np
import pytest

from qpviz import kernels
from qpviz.inference import inducing

STEP = 1e-5  # central differences: truncation ~ STEP^2, rounding ~ 1e-16 / STEP, both << 1e-6


def _problem(N=9, M=4, D=2, seed=0):
    """Inputs, centres and random cotangents: G_uf (M, N), symmetric G_uu (M, M), g_ff (N,)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    Z = rng.normal(size=(M, D))
    G_uu = rng.normal(size=(M, M))
    return X, Z, rng.normal(size=(M, N)), G_uu + G_uu.T, rng.normal(size=N)


def _objective(kernel, X, Z, C, G_uf, G_uu, g_ff):
    """L = sum(G_uf o K_uf) + sum(G_uu o K_uu) + g_ff . diag K_ff: its gradient is the VJP."""
    cov = inducing.inducing_covariances(kernel, X, Z, C)
    return float(np.sum(G_uf * cov.Kuf) + np.sum(G_uu * cov.Kuu) + g_ff @ cov.kff_diag)


def _central_differences(f, x, directions=None):
    """(f(x + h e) - f(x - h e)) / 2h for every unit direction e of x's shape (or the given ones)."""
    x = np.asarray(x, float)
    if directions is None:
        directions = [e.reshape(x.shape) for e in np.eye(x.size)]
    return np.array([(f(x + STEP * e) - f(x - STEP * e)) / (2 * STEP) for e in directions])


def _symmetric_directions(M, D):
    """Unit symmetric changes of C (M, D, D): E_ab = (e_a e_b^T + e_b e_a^T) / 2, so tr(dC E_ab) = dC_ab."""
    for j in range(M):
        for a in range(D):
            for b in range(D):
                E = np.zeros((M, D, D))
                E[j, a, b] += 0.5
                E[j, b, a] += 0.5
                yield E


def _relative_error(analytic, numeric):
    analytic, numeric = np.ravel(analytic), np.ravel(numeric)
    return np.linalg.norm(analytic - numeric) / np.linalg.norm(numeric)


def _check_theta_and_z(kernel, X, Z, C, G_uf, G_uu, g_ff):
    """Compare dL/d log theta and dL/dZ with finite differences; returns the analytic triple."""
    grads = inducing.covariance_vjp(kernel, X, Z, C, G_uf, G_uu, g_ff)
    theta = kernel.log_params()
    numeric_theta = _central_differences(
        lambda t: _objective(kernel.with_log_params(t), X, Z, C, G_uf, G_uu, g_ff), theta)
    numeric_Z = _central_differences(lambda z: _objective(kernel, X, z, C, G_uf, G_uu, g_ff), Z).reshape(Z.shape)
    assert grads[0].shape == theta.shape and grads[1].shape == Z.shape
    assert _relative_error(grads[0], numeric_theta) <= 1e-6
    assert _relative_error(grads[1], numeric_Z) <= 1e-6
    return grads


def _random_full_covariances(M, D, seed=1):
    A = np.random.default_rng(seed).normal(size=(M, D, D))
    return 0.3 * A @ np.swapaxes(A, 1, 2) + 0.05 * np.eye(D)


@pytest.mark.parametrize("ard", [True, False], ids=["ard", "isotropic"])
@pytest.mark.parametrize("spherical", [True, False], ids=["spherical", "full"])
def test_vsgp_gradients_match_finite_differences(spherical, ard):
    X, Z, G_uf, G_uu, g_ff = _problem(D=3 if ard else 2)
    M, D = Z.shape
    kernel = kernels.RBF(variance=1.3, lengthscale=[0.7, 1.4, 1.1][:D] if ard else 0.9)
    C = np.array([0.2, 0.05, 0.6, 0.3]) if spherical else _random_full_covariances(M, D)
    _, _, dC = _check_theta_and_z(kernel, X, Z, C, G_uf, G_uu, g_ff)
    C_full = inducing.as_inducing_cov(C, M, D)
    numeric_C = _central_differences(lambda c: _objective(kernel, X, Z, c, G_uf, G_uu, g_ff), C_full,
                                     list(_symmetric_directions(M, D))).reshape(M, D, D)
    assert dC.shape == (M, D, D)
    np.testing.assert_array_equal(dC, np.swapaxes(dC, 1, 2))
    assert _relative_error(dC, numeric_C) <= 1e-6
    if spherical:  # the chain to c_j of C_j = c_j I is the trace
        numeric_c = _central_differences(lambda c: _objective(kernel, X, Z, c, G_uf, G_uu, g_ff), C)
        assert _relative_error(np.trace(dC, axis1=1, axis2=2), numeric_c) <= 1e-6


def test_vsgp_gradients_see_only_the_symmetric_part_of_g_uu():
    X, Z, G_uf, G_uu, g_ff = _problem()
    kernel = kernels.RBF(variance=0.8, lengthscale=[1.1, 0.6])
    skew = np.triu(np.random.default_rng(5).normal(size=G_uu.shape), 1)
    C = np.full(Z.shape[0], 0.2)
    lopsided = inducing.covariance_vjp(kernel, X, Z, C, G_uf, skew, g_ff)
    symmetric = inducing.covariance_vjp(kernel, X, Z, C, G_uf, 0.5 * (skew + skew.T), g_ff)
    for got, expected in zip(lopsided, symmetric):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel", [kernels.RBF(variance=1.3, lengthscale=[0.7, 1.4]),
                                    kernels.Matern52(variance=0.6, lengthscale=1.2)], ids=["rbf", "matern52"])
def test_pseudo_point_gradients_match_finite_differences(kernel):
    X, Z, G_uf, G_uu, g_ff = _problem(seed=2)
    grads = _check_theta_and_z(kernel, X, Z, None, G_uf, G_uu, g_ff)
    assert grads[2] is None


@pytest.mark.parametrize("lengthscale", [[0.7, 1.4], 0.9], ids=["ard", "isotropic"])
def test_vanishing_blur_gives_the_pseudo_point_gradients(lengthscale):
    X, Z, G_uf, G_uu, g_ff = _problem(seed=3)
    kernel = kernels.RBF(variance=1.3, lengthscale=lengthscale)
    plain = inducing.covariance_vjp(kernel, X, Z, None, G_uf, G_uu, g_ff)
    blurred = inducing.covariance_vjp(kernel, X, Z, np.full(Z.shape[0], 1e-12), G_uf, G_uu, g_ff)
    np.testing.assert_allclose(blurred[0], plain[0], rtol=1e-8)
    np.testing.assert_allclose(blurred[1], plain[1], rtol=1e-8, atol=1e-10)


def test_vsgp_gradient_memory_grows_like_n_d_not_n_d_squared():
    N, M, D = 20_000, 4, 12
    X, Z, G_uf, G_uu, g_ff = _problem(N=N, M=M, D=D, seed=4)
    kernel = kernels.RBF(variance=1.0, lengthscale=np.full(D, 3.0))
    tracemalloc.start()
    try:
        inducing.covariance_vjp(kernel, X, Z, np.full(M, 0.1), G_uf, G_uu, g_ff)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    one_n_by_d = N * D * 8
    assert peak < 8 * one_n_by_d  # an (N, D, D) array alone would be 12 of them


def test_vsgp_gradients_refuse_other_kernels_and_wrong_shapes():
    X, Z, G_uf, G_uu, g_ff = _problem()
    C = np.full(Z.shape[0], 0.1)
    with pytest.raises(ValueError, match="RBF"):
        inducing.covariance_vjp(kernels.Matern52(), X, Z, C, G_uf, G_uu, g_ff)
    with pytest.raises(ValueError, match="G_uf must have shape"):
        inducing.covariance_vjp(kernels.RBF(), X, Z, C, G_uf.T, G_uu, g_ff)
    with pytest.raises(ValueError, match="g_ff must have shape"):
        inducing.covariance_vjp(kernels.RBF(), X, Z, C, G_uf, G_uu, g_ff[:-1])


def test_spherical_variances_mean_multiples_of_the_identity():
    C = inducing.as_inducing_cov([0.5, 0.0, 2.0], 3, 2)
    np.testing.assert_array_equal(C, np.array([0.5, 0.0, 2.0])[:, None, None] * np.eye(2))


@pytest.mark.parametrize("spherical", [True, False], ids=["spherical", "full"])
def test_packing_round_trips(spherical):
    M, D = 4, 3
    C = inducing.as_inducing_cov(np.array([0.2, 0.05, 0.6, 0.3]), M, D) if spherical else _random_full_covariances(M, D)
    packed = inducing.pack_inducing_cov(C, spherical)
    assert packed.shape == ((M,) if spherical else (M * D * (D + 1) // 2,))
    np.testing.assert_allclose(inducing.unpack_inducing_cov(packed, M, D, spherical), C, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(inducing.pack_inducing_cov(inducing.unpack_inducing_cov(packed, M, D, spherical),
                                                          spherical), packed, rtol=1e-12, atol=1e-14)
    if spherical:  # (M,) variances pack the same as their (M, D, D) matrices
        np.testing.assert_allclose(inducing.pack_inducing_cov(C[:, 0, 0], True), packed)


@pytest.mark.parametrize("spherical", [True, False], ids=["spherical", "full"])
def test_packed_gradient_matches_finite_differences(spherical):
    X, Z, G_uf, G_uu, g_ff = _problem(seed=6)
    M, D = Z.shape
    kernel = kernels.RBF(variance=1.1, lengthscale=[0.8, 1.2])
    C = np.array([0.2, 0.05, 0.6, 0.3]) if spherical else _random_full_covariances(M, D, seed=7)
    packed = inducing.pack_inducing_cov(C, spherical)
    dC = inducing.covariance_vjp(kernel, X, Z, C, G_uf, G_uu, g_ff)[2]
    analytic = inducing.packed_inducing_cov_grad(packed, dC, spherical)
    numeric = _central_differences(
        lambda p: _objective(kernel, X, Z, inducing.unpack_inducing_cov(p, M, D, spherical), G_uf, G_uu, g_ff), packed)
    assert analytic.shape == packed.shape
    assert _relative_error(analytic, numeric) <= 1e-6


def test_packing_refuses_what_it_cannot_represent():
    with pytest.raises(ValueError, match="> 0"):
        inducing.pack_inducing_cov([0.1, 0.0], spherical=True)
    with pytest.raises(ValueError, match="c_j I"):
        inducing.pack_inducing_cov(np.array([[[1.0, 0.2], [0.2, 1.0]]]), spherical=True)
    with pytest.raises(ValueError, match="positive definite"):
        inducing.pack_inducing_cov(np.array([[[1.0, 1.0], [1.0, 1.0]]]), spherical=False)
    with pytest.raises(ValueError, match="6 numbers"):
        inducing.unpack_inducing_cov(np.zeros(5), 2, 2, spherical=False)
