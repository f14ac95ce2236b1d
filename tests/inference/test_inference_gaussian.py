"""With a Gaussian likelihood every method must return the exact GP regression posterior."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg, stats

import qpviz
from qpviz import kernels
from qpviz.inference import fit

NOISE = 0.2


@pytest.fixture
def regression(rng):
    X = rng.uniform(-2, 2, size=(25, 1))
    y = np.sin(2 * X[:, 0]) + np.sqrt(NOISE) * rng.normal(size=25)
    X_new = np.linspace(-2.5, 2.5, 9)[:, None]
    k = kernels.Matern52(1.2, 0.6) + kernels.Linear(0.1)
    # exact GP regression, written out independently (R&W eqs. 2.25-2.26, 2.30)
    K = k(X) + qpviz.config.JITTER * np.eye(25)
    A = K + NOISE * np.eye(25)
    Ks = k(X, X_new)
    mean = Ks.T @ linalg.solve(A, y, assume_a="pos")
    var = k.diag(X_new) - np.einsum("ij,ij->j", Ks, linalg.solve(A, Ks, assume_a="pos"))
    post_cov = K - K @ linalg.solve(A, K, assume_a="pos")
    lml = stats.multivariate_normal(np.zeros(25), A).logpdf(y)
    return X, y, X_new, k, mean, var, post_cov, lml


@pytest.mark.parametrize("method", ["ep", "qp", "vb", "laplace"])
def test_gaussian_likelihood_gives_exact_posterior(method, regression):
    X, y, X_new, k, mean, var, post_cov, lml = regression
    opts = {"use_table": False} if method == "qp" else {}
    post = fit(X, y, qpviz.likelihood("gaussian", variance=NOISE), k, method=method, **opts)
    assert post.converged
    m, v = post.predict_f(X_new)
    np.testing.assert_allclose(m, mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, var, rtol=0, atol=1e-9)
    np.testing.assert_allclose(post.cov, post_cov, rtol=0, atol=1e-9)
    assert post.log_marginal_likelihood == pytest.approx(lml, abs=1e-8)
    np.testing.assert_allclose(post.site_var, NOISE, rtol=1e-9)
    np.testing.assert_allclose(post.site_mean, y, rtol=0, atol=1e-8)


def test_mcmc_reference_matches_exact_posterior(regression):
    X, y, X_new, k, mean, var, post_cov, lml = regression
    post = fit(X, y, qpviz.likelihood("gaussian", variance=NOISE), k, method="mcmc", n_samples=6000, thin=3, seed=7)
    m, v = post.predict_f(X_new)
    sd = np.sqrt(var)
    # Monte Carlo error: a few thousand effectively independent draws -> ~0.02 sd; allow 0.1 sd
    np.testing.assert_allclose(m, mean, rtol=0, atol=0.1 * sd.max())
    np.testing.assert_allclose(np.sqrt(v), sd, rtol=0.1)
    assert post.site_mean is None and np.isnan(post.log_marginal_likelihood)
