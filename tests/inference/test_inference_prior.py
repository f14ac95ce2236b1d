"""The dense prior's linear algebra against direct matrix inverses."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz import config, kernels
from qpviz.inference import DensePrior
from qpviz.inference.prior import IndefinitePosterior


@pytest.fixture
def prior(rng):
    return DensePrior(kernels.Matern32(1.3, 0.9), rng.normal(size=(15, 2)))


def _direct(prior, tau, nu, X_new):
    K = prior.K
    cov = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    Ks = prior.kernel(prior.X, X_new)
    Kss = prior.kernel(X_new)
    # joint Gaussian of (f, f_*) conditioned on the sites: f_* | f is the prior conditional
    A = np.linalg.solve(K, Ks).T
    mean = cov @ nu
    return cov, mean, A @ mean, Kss - A @ Ks + A @ cov @ A.T


@pytest.mark.parametrize("signs", ["positive", "some_zero", "all_zero", "some_negative"])
def test_condition_and_predict_match_direct_inverse(prior, rng, signs):
    n = prior.n
    tau = rng.uniform(0.2, 3.0, n)
    if signs == "some_zero":
        tau[::3] = 0.0
    if signs == "all_zero":  # every run's start: the prior itself (DenseGaussian's shortcut)
        tau[:] = 0.0
    if signs == "some_negative":
        tau[[1, 7]] = -0.15
    nu = rng.normal(size=n)
    X_new = rng.normal(size=(4, 2))
    state = prior.condition(tau, nu)
    assert state.stable == (signs != "some_negative")
    cov, mean, pm, pcov = _direct(prior, tau, nu, X_new)
    np.testing.assert_allclose(state.cov, cov, rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.mean, mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.half_log_det, 0.5 * np.linalg.slogdet(np.eye(n) + prior.K @ np.diag(tau))[1],
                               rtol=1e-10)
    m, c = state.predict_f(X_new, full_cov=True)
    np.testing.assert_allclose(m, pm, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c, pcov, rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.predict_f(X_new)[1], np.diag(pcov), rtol=0, atol=1e-9)


def test_jitter_comes_from_config(prior):
    np.testing.assert_allclose(np.diag(prior.K), 1.3 + config.JITTER, rtol=1e-15)
    assert DensePrior(prior.kernel, prior.X, jitter=1e-3).K[0, 0] == pytest.approx(1.3 + 1e-3)


def test_indefinite_sites_are_reported(prior):
    tau = np.full(prior.n, -5.0)
    with pytest.raises(IndefinitePosterior, match="indefinite|non-positive"):
        prior.condition(tau, np.zeros(prior.n))


def test_bad_inputs(prior):
    with pytest.raises(ValueError, match="shape"):
        prior.condition(np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match="qpviz kernel"):
        DensePrior("rbf", prior.X)
