"""EP and QP engines: fixed-point conditions checked by an independent (vectorised) path,
update schemes agree, evidence and its gradient, Corollary 2.2, convergence reporting."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import qpviz
import qpviz.tilted
from qpviz import kernels
from qpviz.inference import ConvergenceWarning, DensePrior, fit
from qpviz.inference.ep import run_sites


@pytest.fixture
def probit_data(rng):
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.4 * rng.normal(size=40) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture
def count_data(rng):
    X = np.linspace(0.0, 5.0, 30)[:, None]
    y = rng.poisson((1.2 + np.sin(X[:, 0])) ** 2).astype(float)
    return X, y


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_fixed_point_matches_projection_of_own_cavities(method, probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    post = fit(X, y, lik, kernels.RBF(1.5, [0.9, 1.2]), method=method, tol=1e-10, use_table=False)
    assert post.converged
    tau_c = 1.0 / post.var - post.site_precision
    m_c = (post.mean / post.var - post.site_nu) / tau_c
    # independent path: the adaptive quadrature of qpviz.tilted (not the closed form the engine uses)
    tilted = qpviz.tilted.tilted_summary(lik, y, m_c, 1.0 / tau_c, want_qp=True)
    np.testing.assert_allclose(post.mean, tilted.mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(post.var, tilted.var if method == "ep" else tilted.qp_std**2, rtol=1e-7, atol=0)


def test_sequential_parallel_random_agree(probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    k = kernels.Matern52(2.0, 1.1)
    ref = fit(X, y, lik, k, tol=1e-11)
    for opts in ({"parallel": True}, {"order": "random", "seed": 3}, {"damping": 0.7}):
        other = fit(X, y, lik, k, tol=1e-11, max_sweeps=500, **opts)
        assert other.converged, opts
        np.testing.assert_allclose(other.site_precision, ref.site_precision, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(other.site_nu, ref.site_nu, rtol=1e-7, atol=1e-9)
        assert other.log_marginal_likelihood == pytest.approx(ref.log_marginal_likelihood, abs=1e-8)


@pytest.mark.parametrize("data, name", [("probit_data", "probit"), ("count_data", "poisson_square")])
def test_qp_predictive_variance_not_larger_than_ep(data, name, request, rng):
    """Corollary 2.2 (App. I): sigma_QP^2(f_*) <= sigma_EP^2(f_*) at every test point."""
    X, y = request.getfixturevalue(data)
    lik = qpviz.likelihood(name)
    k = kernels.RBF(1.0, 1.0)
    ep = fit(X, y, lik, k, method="ep", tol=1e-9)
    qp = fit(X, y, lik, k, method="qp", tol=1e-9, use_table=False)
    assert ep.converged and qp.converged
    assert np.all(qp.site_var <= ep.site_var * (1 + 1e-9))
    X_new = X[rng.permutation(len(X))[:10]] + 0.3 * rng.normal(size=(10, X.shape[1]))
    X_new = np.vstack([X_new, X])
    v_ep = ep.predict_f(X_new)[1]
    v_qp = qp.predict_f(X_new)[1]
    assert np.all(v_qp <= v_ep + 1e-12)
    assert np.any(v_qp < v_ep - 1e-6)


def test_evidence_with_one_observation_is_exact():
    """With N = 1, EP's evidence equals Z = int p(y|f) N(f|0, k) df exactly."""
    lik = qpviz.likelihood("poisson_square")
    X = np.array([[0.3]])
    k = kernels.RBF(variance=1.7, lengthscale=1.0)
    post = fit(X, [3.0], lik, k, tol=1e-12)
    s = np.sqrt(1.7 + qpviz.config.JITTER)
    z, _ = integrate.quad(lambda f: stats.poisson.pmf(3, f * f) * stats.norm.pdf(f, 0, s), -12, 12, points=[-1.7, 1.7],
                          epsabs=0, epsrel=1e-12)
    assert post.log_marginal_likelihood == pytest.approx(np.log(z), abs=1e-9)


def test_evidence_gradient_matches_finite_differences(probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    k = kernels.RBF(1.3, [0.8, 1.5])
    post = fit(X, y, lik, k, tol=1e-12)
    grad = post.state.grad_log_marginal()
    theta = k.log_params()
    h = 1e-5
    for j in range(len(theta)):
        values = []
        for step in (h, -h):
            t = theta.copy()
            t[j] += step
            values.append(fit(X, y, lik, k.with_log_params(t), tol=1e-12).log_marginal_likelihood)
        assert grad[j] == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-5, abs=1e-7)


def test_optimisation_increases_evidence_and_qp_uses_ep_hyperparameters(probit_data):
    X, y = probit_data
    lik = qpviz.likelihood("probit")
    k = kernels.RBF(0.3, 3.0)
    before = fit(X, y, lik, k).log_marginal_likelihood
    ep = fit(X, y, lik, k, optimise=True)
    assert ep.log_marginal_likelihood > before + 1.0
    assert np.linalg.norm(ep.state.grad_log_marginal()) < 1e-3
    qp = fit(X, y, lik, k, method="qp", optimise=True, use_table=False)
    np.testing.assert_allclose(qp.kernel.log_params(), ep.kernel.log_params(), rtol=1e-10)
    assert np.isfinite(qp.log_marginal_likelihood)
    assert qp.log_marginal_likelihood != ep.log_marginal_likelihood


def test_non_convergence_is_flagged(probit_data):
    X, y = probit_data
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 sweeps"):
        post = fit(X, y, "probit", kernels.RBF(4.0, 0.5), max_sweeps=2, tol=1e-12)
    assert not post.converged
    assert post.n_sweeps == 2 and len(post.history) == 2
    assert post.history[-1] > 1e-12


def test_negative_site_precisions_are_clipped_and_counted(rng):
    X = np.linspace(-3, 3, 30)[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    y[[5, 20]] += [6.0, -5.0]  # outliers make Student-t sites want negative precision
    post = fit(X, y, qpviz.likelihood("student_t", nu=3.0, scale=0.3), kernels.RBF(1.0, 1.0), max_sweeps=500)
    assert post.converged
    assert post.diagnostics["n_clipped"] > 0
    assert np.all(post.site_precision >= 0)
    clipped = post.site_precision == 0
    assert clipped[[5, 20]].all() and np.all(np.isinf(post.site_var[clipped]))


def test_poisson_square_starts_on_positive_branch(count_data):
    X, y = count_data
    post = fit(X, y, "poisson_square", kernels.RBF(1.0, 1.0))
    assert post.converged
    assert np.all(post.mean[y >= 2] > 0.5)  # the symmetric fixed point would have mean 0 everywhere


def test_bad_options_have_clear_messages(probit_data):
    X, y = probit_data
    k = kernels.RBF()
    with pytest.raises(ValueError, match="method must be one of"):
        fit(X, y, "probit", k, method="gibbs")
    with pytest.raises(TypeError, match="does not take option"):
        fit(X, y, "probit", k, method="ep", n_samples=3)
    with pytest.raises(ValueError, match="damping must be in"):
        fit(X, y, "probit", k, damping=1.5)
    with pytest.raises(ValueError, match="one entry per row"):
        fit(X, y[:-1], "probit", k)
    with pytest.raises(ValueError, match="order must be"):
        fit(X, y, "probit", k, order="backwards")


def test_optimising_noise_with_gaussian_likelihood_is_exact_type2_ml(rng):
    """EP is exact for a Gaussian likelihood, so its fitted (kernel, noise) maximise the exact evidence."""
    from scipy import optimize

    X = rng.uniform(-2, 2, size=(30, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    post = fit(X, y, qpviz.likelihood("gaussian", variance=1.0), kernels.RBF(1.0, 1.0), optimise=True,
               optimise_likelihood=True)

    def neg_exact(theta):
        k = kernels.RBF(1.0, 1.0).with_log_params(theta[:2])
        A = k(X) + (qpviz.config.JITTER + np.exp(theta[2])) * np.eye(30)
        return -stats.multivariate_normal(np.zeros(30), A).logpdf(y)

    ref = optimize.minimize(neg_exact, np.zeros(3), method="Nelder-Mead",
                            options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 4000})
    fitted = np.concatenate([post.kernel.log_params(), [np.log(post.likelihood.params["variance"])]])
    np.testing.assert_allclose(fitted, ref.x, atol=2e-3)
    assert post.log_marginal_likelihood == pytest.approx(-ref.fun, abs=1e-6)


def test_likelihood_parameter_gradient_matches_finite_differences(rng):
    from qpviz.inference.fit import likelihood_log_param_grad

    X = np.linspace(-3, 3, 20)[:, None]
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=20)
    k = kernels.RBF(1.0, 1.0)

    def evidence(scale):
        return fit(X, y, qpviz.likelihood("student_t", nu=4.0, scale=scale), k, tol=1e-12, max_sweeps=1000)

    post = evidence(0.4)
    grad = likelihood_log_param_grad(post.likelihood, ("scale",), y, post.diagnostics["cavity_tau"],
                                     post.diagnostics["cavity_nu"])
    h = 1e-4
    fd = (evidence(0.4 * np.exp(h)).log_marginal_likelihood - evidence(0.4 * np.exp(-h)).log_marginal_likelihood) / (2 * h)
    assert grad[0] == pytest.approx(fd, rel=1e-4)


def test_qp_with_lookup_tables_matches_direct_qp(probit_data):
    """The numba sweep reads sigma_QP from qpviz.tables where they exist; the fixed point must not move."""
    import warnings

    from qpviz.inference.sites import SiteRule

    lik = qpviz.likelihood("probit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a missing table warns; then there is nothing to compare
        if SiteRule.build("qp", lik, 1.0).coef.size == 0:
            pytest.skip("no probit lookup table in qpviz.config.TABLE_DIR (build with python -m lookup_tables.build)")
    X, y = probit_data
    k = kernels.RBF(2.0, [0.7, 1.1])
    direct = fit(X, y, lik, k, method="qp", tol=1e-10, use_table=False)
    table = fit(X, y, lik, k, method="qp", tol=1e-10, use_table=True)
    assert table.converged
    np.testing.assert_allclose(table.var, direct.var, rtol=1e-6)
    np.testing.assert_allclose(table.mean, direct.mean, rtol=0, atol=1e-6)
    ep = fit(X, y, lik, k, method="ep", tol=1e-10)
    X_new = X + 0.2
    assert np.all(table.predict_f(X_new)[1] <= ep.predict_f(X_new)[1] * (1 + 1e-6))
