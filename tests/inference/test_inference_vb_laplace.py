"""VB and Laplace: optimality conditions checked independently of the engines."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

import qpviz
from qpviz import kernels
from qpviz.inference import fit
from qpviz.inference.vb import elbo, gauss_hermite_expectations


@pytest.fixture
def probit_data(rng):
    X = rng.normal(size=(30, 1))
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("name, params", [("probit", {}), ("logistic", {})])
def test_laplace_mode_is_stationary(name, params, probit_data):
    X, y = probit_data
    lik = qpviz.likelihood(name, **params)
    k = kernels.RBF(2.0, 0.5)
    post = fit(X, y, lik, k, method="laplace")
    assert post.converged
    K = k(X) + qpviz.config.JITTER * np.eye(len(y))
    d1, d2 = lik.dlog_prob(y, post.mean)
    # grad Psi = d log p/df - K^-1 f = 0 at the mode (R&W eq. 3.14), i.e. f = K d log p/df
    np.testing.assert_allclose(post.mean, K @ d1, rtol=0, atol=1e-8)
    # covariance (K^-1 + W)^-1 (R&W eq. 3.20)
    np.testing.assert_allclose(post.cov, linalg.inv(linalg.inv(K) - np.diag(d2)), rtol=0, atol=1e-7)


def test_laplace_handles_non_log_concave_student_t(rng):
    X = np.linspace(-3, 3, 25)[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=25)
    y[12] += 4.0
    post = fit(X, y, qpviz.likelihood("student_t", nu=3.0, scale=0.3), kernels.RBF(1.0, 1.0), method="laplace")
    assert post.converged
    assert post.site_precision.min() < 0  # the outlier's curvature is negative at the mode
    assert np.all(post.var > 0)


def test_vb_satisfies_opper_archambeau_conditions(probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    k = kernels.RBF(2.0, 0.5)
    post = fit(X, y, lik, k, method="vb", tol=1e-11)
    assert post.converged
    K = k(X) + qpviz.config.JITTER * np.eye(len(y))
    _, g, h = gauss_hermite_expectations(lik, y, post.mean, post.var)
    np.testing.assert_allclose(post.mean, K @ g, rtol=0, atol=1e-8)  # m = K alpha, alpha = E[d log p]
    np.testing.assert_allclose(post.cov, linalg.inv(linalg.inv(K) - np.diag(h)), rtol=0, atol=1e-7)


def test_vb_bound_is_a_maximum_and_below_other_gaussians(probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    k = kernels.RBF(2.0, 0.5)
    vb = fit(X, y, lik, k, method="vb", tol=1e-11)
    for method in ("ep", "laplace"):
        other = fit(X, y, lik, k, method=method)
        assert elbo(other.state, lik, y) < vb.log_marginal_likelihood
    prior = vb.prior
    rng = np.random.default_rng(0)
    for _ in range(3):
        tau = vb.site_precision * np.exp(0.05 * rng.normal(size=len(y)))
        nu = vb.site_nu + 0.05 * rng.normal(size=len(y))
        assert elbo(prior.condition(tau, nu), lik, y) < vb.log_marginal_likelihood
    # the bound is below EP's evidence estimate here, as usual for probit
    assert vb.log_marginal_likelihood < fit(X, y, lik, k, method="ep").log_marginal_likelihood


def test_vb_and_laplace_refuse_where_undefined(probit_data):
    X, y = probit_data
    with pytest.raises(ValueError, match="eps > 0"):
        fit(X, y, qpviz.likelihood("step", eps=0.0), kernels.RBF(), method="vb")
    with pytest.raises(ValueError, match="twice-differentiable"):
        fit(X, y, qpviz.likelihood("step", eps=0.1), kernels.RBF(), method="laplace")


@pytest.mark.parametrize("name, params", [("step", {"eps": 0.1}), ("laplace", {"scale": 0.7}), ("poisson_square", {})])
def test_closed_form_expectations_match_quadrature(name, params, rng):
    from scipy import integrate, stats

    from qpviz.inference.vb import expected_log_lik

    lik = qpviz.likelihood(name, **params)
    y = {"step": np.array([1.0, -1.0, 1.0]), "laplace": np.array([0.3, -1.2, 2.0]),
         "poisson_square": np.array([0.0, 3.0, 7.0])}[name]
    m, v = np.array([0.4, 0.2, -2.1]), np.array([0.5, 2.0, 0.3])
    E, dm, dv2 = expected_log_lik(lik, y, m, v)

    def expect(i, mi, vi):
        kink = y[i] if name == "laplace" else 0.0
        fn = lambda f: float(lik.log_prob(y[i], f)) * stats.norm.pdf(f, mi, np.sqrt(vi))
        return sum(integrate.quad(fn, a, b, epsabs=1e-13, epsrel=1e-12)[0] for a, b in ((-40, kink), (kink, 40)))

    h = 1e-5
    for i in range(3):
        assert E[i] == pytest.approx(expect(i, m[i], v[i]), abs=1e-9)
        assert dm[i] == pytest.approx((expect(i, m[i] + h, v[i]) - expect(i, m[i] - h, v[i])) / (2 * h), abs=1e-6)
        assert dv2[i] == pytest.approx(2 * (expect(i, m[i], v[i] + h) - expect(i, m[i], v[i] - h)) / (2 * h), abs=1e-6)


def test_vb_on_student_t_and_laplace_likelihoods(rng):
    X = np.linspace(-3, 3, 25)[:, None]
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=25)
    for lik in (qpviz.likelihood("laplace", scale=0.3), qpviz.likelihood("student_t", nu=4.0, scale=0.3)):
        post = fit(X, y, lik, kernels.RBF(1.0, 1.0), method="vb", tol=1e-9, max_iter=2000)
        assert post.converged, lik
        assert np.all(post.var > 0)
        assert np.max(np.abs(post.mean - np.sin(X[:, 0]))) < 0.5


def test_vb_converges_with_large_kernel_variance(rng):
    """Nearly separable data and a large kernel variance: the undamped iteration oscillates, the adaptive one not."""
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    lik = qpviz.likelihood("probit")
    k = kernels.RBF(400.0, 2.0)
    post = fit(X, y, lik, k, method="vb", tol=1e-9)
    assert post.converged
    K = k(X) + qpviz.config.JITTER * np.eye(60)
    _, g, h = gauss_hermite_expectations(lik, y, post.mean, post.var)
    np.testing.assert_allclose(post.mean, K @ g, rtol=0, atol=2e-5)  # K amplifies the 1e-9 residual (||K|| ~ 1e4)
    np.testing.assert_allclose(post.site_precision, -h, rtol=1e-6, atol=1e-9)


def test_vb_step_likelihood_falls_back_to_elbo_ascent():
    """For the step likelihood the fixed point repels the iteration; L-BFGS on the ELBO takes over."""
    X = np.linspace(-2, 2, 12)[:, None]
    y = np.where(np.sin(1.5 * X[:, 0]) > 0, 1.0, -1.0)
    lik = qpviz.likelihood("step", eps=0.1)
    post = fit(X, y, lik, kernels.RBF(1.0, 0.8), method="vb")
    assert post.converged
    assert post.history[-1] < 1e-4  # distance to the fixed point (ill-conditioned, see vb._maximise_elbo)
    rng = np.random.default_rng(1)
    for _ in range(4):
        tau = post.site_precision * np.exp(0.02 * rng.normal(size=12))
        nu = post.site_nu + 0.02 * rng.normal(size=12)
        assert elbo(post.prior.condition(tau, nu), lik, y) < post.log_marginal_likelihood
