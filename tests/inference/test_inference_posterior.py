"""Predictions and metrics: probit closed form, App. H negative binomial, paper's TE / NTLL, and
every likelihood with every method where it is defined."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

import qpviz
from qpviz import kernels
from qpviz.inference import fit
from qpviz.inference import metrics
from qpviz.inference.metrics import evaluate, negative_test_log_likelihood, predicted_labels
from qpviz.likelihoods.poisson_square import negative_binomial_params


def test_probit_predictive_probability_closed_form(rng):
    X = rng.normal(size=(20, 1))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    post = fit(X, y, "probit", kernels.RBF(1.0, 1.0))
    X_new = np.array([[-1.0], [0.1], [2.0]])
    m, v = post.predict_f(X_new)
    np.testing.assert_allclose(post.predict_proba(X_new), special.ndtr(m / np.sqrt(1 + v)), rtol=1e-12)
    lpd = post.predictive_log_density(X_new, [1.0, -1.0, 1.0])
    np.testing.assert_allclose(lpd, np.log(special.ndtr(np.array([1, -1, 1]) * m / np.sqrt(1 + v))), rtol=1e-12)


def test_negative_binomial_matches_eq_122_and_gamma_moments():
    mean, var = np.array([1.3, -0.4, 2.0]), np.array([0.2, 0.5, 0.05])
    k, c = negative_binomial_params(mean, var)
    # the Gamma(k, c) matches the first two moments of g = f^2: E = mu^2 + s^2, Var = 2 s^2 (2 mu^2 + s^2)
    np.testing.assert_allclose(k * c, mean**2 + var, rtol=1e-13)
    np.testing.assert_allclose(k * c * c, 2 * var * (2 * mean**2 + var), rtol=1e-13)
    lik = qpviz.likelihood("poisson_square")
    for y in (0, 1, 4):
        direct = np.exp(y * np.log(c) - (k + y) * np.log1p(c) + special.gammaln(k + y) - special.gammaln(y + 1)
                        - special.gammaln(k))
        np.testing.assert_allclose(lik.negative_binomial(mean, var).pmf(y), direct, rtol=1e-12)


def test_poisson_square_count_predictions(rng):
    X = np.linspace(0, 4, 25)[:, None]
    y = rng.poisson((1.5 + np.sin(X[:, 0])) ** 2).astype(float)
    post = fit(X, y, "poisson_square", kernels.RBF(1.0, 1.0))
    pmf = post.predict_counts(X[:3], np.arange(200))
    np.testing.assert_allclose(pmf.sum(axis=1), 1.0, atol=1e-10)
    mode = post.predict_count_mode(X[:3])
    np.testing.assert_array_equal(mode, np.argmax(pmf, axis=1))
    # exact=True integrates Poisson(y | f^2) N(f | m, v) directly
    m, v = post.predict_f(X[:1])
    exact = post.predictive_log_density(X[:1], [3.0], exact=True)[0]
    direct = integrate.quad(lambda f: stats.poisson.pmf(3, f * f) * stats.norm.pdf(f, m[0], np.sqrt(v[0])), -15, 15,
                            epsrel=1e-12)[0]
    assert exact == pytest.approx(np.log(direct), abs=1e-9)


def test_metrics_follow_the_paper_definitions():
    y = np.array([1.0, -1.0, 1.0, 1.0])
    p = np.array([0.9, 0.6, 0.5, 0.2])
    labels = predicted_labels(p)
    np.testing.assert_array_equal(labels, [1, 1, 1, -1])
    assert metrics.test_error(y, labels) == pytest.approx(0.5)
    assert negative_test_log_likelihood(np.log(p)) == pytest.approx(-np.mean(np.log(p)))
    with pytest.raises(ValueError, match="same non-empty shape"):
        metrics.test_error(y, labels[:2])


def test_evaluate_on_separable_data(rng):
    X = rng.normal(size=(40, 1))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    post = fit(X[:30], y[:30], "probit", kernels.RBF(1.0, 1.0), method="qp", use_table=False)
    scores = evaluate(post, X[30:], y[30:])
    assert scores["test_error"] <= 0.1
    assert 0 < scores["ntll"] < np.log(2)


CASES = [
    ("gaussian", {"variance": 0.3}, "real"),
    ("probit", {}, "binary"),
    ("logistic", {}, "binary"),
    ("step", {"eps": 0.1}, "binary"),
    ("step", {"eps": 0.0}, "binary"),
    ("poisson_square", {}, "count"),
    ("poisson_exp", {}, "count"),
    ("student_t", {"nu": 4.0, "scale": 0.5}, "real"),
    ("laplace", {"scale": 0.5}, "real"),
]
UNDEFINED = {("step", "laplace"), ("laplace", "laplace"), ("step0", "vb"), ("step0", "laplace")}


@pytest.mark.parametrize("name, params, kind", CASES, ids=[f"{n}{p.get('eps', '')}" for n, p, _ in CASES])
@pytest.mark.parametrize("method", ["ep", "qp", "vb", "laplace", "mcmc"])
def test_every_likelihood_with_every_method(name, params, kind, method, rng):
    X = np.linspace(-2, 2, 12)[:, None]
    truth = np.sin(1.5 * X[:, 0])
    y = {"real": truth + 0.3 * rng.normal(size=12), "binary": np.where(truth > 0, 1.0, -1.0),
         "count": rng.poisson((1.0 + truth) ** 2 if name == "poisson_square" else np.exp(truth)).astype(float)}[kind]
    lik = qpviz.likelihood(name, **params)
    key = ("step0" if name == "step" and params["eps"] == 0 else name, method)
    opts = {"mcmc": {"n_samples": 300, "thin": 1, "burn_in": 100}, "qp": {"use_table": False}}.get(method, {})
    if key in UNDEFINED:
        with pytest.raises(ValueError):
            fit(X, y, lik, kernels.RBF(1.0, 0.8), method=method, **opts)
        return
    post = fit(X, y, lik, kernels.RBF(1.0, 0.8), method=method, **opts)
    assert post.converged
    m, v = post.predict_f(X[::3] + 0.1)
    assert np.all(np.isfinite(m)) and np.all(v > 0)
    if method != "mcmc":
        assert np.isfinite(post.log_marginal_likelihood)


def test_evaluate_counts_and_real_values(rng):
    X = np.linspace(0, 4, 30)[:, None]
    counts = rng.poisson(np.exp(0.5 + 0.5 * np.sin(X[:, 0]))).astype(float)
    post = fit(X, counts, "poisson_exp", kernels.RBF(1.0, 1.0))
    m, v = post.predict_f(X[:5])
    scores = evaluate(post, X[:5], counts[:5])
    # counts: sum |y - yhat| / m, not halved (QP paper sec. 6.2)
    assert scores["test_error"] == pytest.approx(np.mean(np.abs(counts[:5] - np.exp(m + v / 2))))
    real = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    post = fit(X, real, qpviz.likelihood("gaussian", variance=0.01), kernels.RBF(1.0, 1.0))
    m, v = post.predict_f(X[:5])
    scores = evaluate(post, X[:5], real[:5])
    assert scores["ntll"] == pytest.approx(-np.mean(stats.norm.logpdf(real[:5], m, np.sqrt(v + 0.01))), rel=1e-10)


def test_count_test_error_is_not_halved():
    """Sec. 6.2: for counts TE = sum |y - yhat| / m (sec. 6.1 halves it only for labels -1/+1)."""
    assert metrics.test_error([3.0, 0.0], [1.0, 1.0], labels=False) == pytest.approx(1.5)
    assert metrics.test_error([1.0, -1.0], [1.0, 1.0]) == pytest.approx(0.5)


@pytest.mark.parametrize("n_test", [5, 400])  # fewer test points than data (a triangular solve), more (L^-1 T^1/2)
def test_marginal_predictions_equal_the_full_covariance_diagonal(n_test, rng):
    """Dense EP's marginal variances at test points, by either route of ``predict_from_cross``
    (qpviz/inference/dense.py: a triangular solve for few points, the whitening matrix L^-1 T^1/2
    applied by one product for a grid), against k_** - k_*^T (K + T^-1)^-1 k_* from the full
    predictive covariance (its own solve) and a direct solve with K + T^-1."""
    X = rng.uniform(-3, 3, (40, 2))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(40))
    kernel = kernels.RBF(variance=3.0, lengthscale=1.2)
    post = fit(X, y, "probit", kernel, method="ep")
    X_new = rng.uniform(-4, 4, (n_test, 2))
    mean, var = post.predict_f(X_new)
    mean_full, cov_full = post.predict_f(X_new, full_cov=True)
    np.testing.assert_allclose(mean, mean_full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(var, np.diag(cov_full), rtol=0, atol=1e-11)
    Ks = kernel(X, X_new)
    K = post.state.prior.K  # the prior's K(X, X), its jitter included
    direct = kernel.diag(X_new) - np.einsum("ij,ij->j", Ks, np.linalg.solve(K + np.diag(1.0 / post.site_precision), Ks))
    np.testing.assert_allclose(var, direct, rtol=0, atol=1e-10)
