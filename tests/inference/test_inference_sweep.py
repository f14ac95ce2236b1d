"""The blocked (BLAS-3) sequential sweep against plain rank-one updates, and the prior interface."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import qpviz
from qpviz import config, kernels
from qpviz.inference import DensePrior, GaussianState, Prior, fit
from qpviz.inference.dense_sweep import SWEEP_BLOCK, sequential_sweep_reference
from qpviz.inference.ep import run_sites
from qpviz.inference.sites import SiteRule


def _problem(rng, n, name="probit"):
    X = rng.normal(size=(n, 2))
    if name == "poisson_square":
        y = rng.poisson(2.0, size=n).astype(float)
    else:
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return DensePrior(kernels.RBF(1.5, 0.9), X), qpviz.likelihood(name), y


@pytest.mark.parametrize("blas", [False, True], ids=["in-kernel blocks", "dsyrk blocks"])
@pytest.mark.parametrize("name, method", [("probit", "ep"), ("probit", "qp"), ("poisson_square", "ep")])
def test_blocked_sweep_equals_rank_one_updates(rng, monkeypatch, blas, name, method):
    """Same sites, means and covariance as the rank-one path (several blocks and a partial one),
    from a mid-run state (the sweep really moves every site)."""
    monkeypatch.setattr(config, "BLAS3_SWEEP_N", 0 if blas else 10**9)
    n = 2 * SWEEP_BLOCK + 17
    prior, lik, y = _problem(rng, n, name)
    start = run_sites(prior, lik, y, method, max_sweeps=1, warn=False)
    rule = SiteRule.build(method, lik, 0.8)
    order = rng.permutation(n)
    carried = prior.start_sweeps(start.state)
    log_z, status = prior.sequential_sweep(carried, order, rule, y)

    cov, mean = start.state.cov.copy(), start.state.mean.copy()
    tau, nu = start.tau.copy(), start.nu.copy()
    ref_log_z, ref_status = np.full(n, np.nan), np.zeros(n, dtype=np.int64)
    sequential_sweep_reference(cov, mean, tau, nu, y, order, rule, ref_log_z, ref_status)

    assert np.max(np.abs(tau - start.tau)) > 1e-3  # the sweep moved the sites
    np.testing.assert_allclose(carried.tau, tau, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(carried.nu, nu, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(carried.mean, mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.tril(carried.cov), np.tril(cov), rtol=0, atol=1e-10)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_array_equal(status, ref_status)
    fresh = prior.condition(carried.tau, carried.nu)  # and it is the posterior of the new sites
    np.testing.assert_allclose(np.tril(carried.cov), np.tril(fresh.cov), rtol=0, atol=1e-10)
    np.testing.assert_allclose(carried.mean, fresh.mean, rtol=0, atol=1e-10)


@pytest.mark.parametrize("refresh", [1, 3, 1000])
def test_fixed_point_does_not_depend_on_refresh_or_blocking(rng, monkeypatch, refresh):
    prior, lik, y = _problem(rng, 150)
    ref = run_sites(prior, lik, y, "ep", tol=1e-11, refresh=1, max_sweeps=500)
    monkeypatch.setattr(config, "BLAS3_SWEEP_N", 0)
    res = run_sites(prior, lik, y, "ep", tol=1e-11, refresh=refresh, max_sweeps=500)
    assert res.converged and res.drift < 1e-9
    np.testing.assert_allclose(res.tau, ref.tau, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.nu, ref.nu, rtol=1e-8, atol=1e-10)
    assert res.log_marginal_likelihood == pytest.approx(ref.log_marginal_likelihood, abs=1e-8)


def test_minibatch_sweep_updates_only_its_sites(rng):
    """A sweep over a subset of the sites (a minibatch) leaves the others' sites untouched."""
    prior, lik, y = _problem(rng, 60)
    state = prior.condition(np.zeros(60), np.zeros(60))
    carried = prior.start_sweeps(state)
    batch = np.array([3, 17, 40, 41])
    log_z, status = prior.sequential_sweep(carried, batch, SiteRule.build("ep", lik, 1.0), y)
    others = np.setdiff1d(np.arange(60), batch)
    assert np.all(carried.tau[batch] > 0) and np.all(carried.tau[others] == 0)
    assert np.all(np.isfinite(log_z[batch])) and np.all(np.isnan(log_z[others]))


def test_prior_and_states_satisfy_the_protocol_and_pickle(rng):
    prior, lik, y = _problem(rng, 30)
    post = fit(prior.X, y, lik, prior.kernel, method="qp")
    assert isinstance(prior, Prior) and isinstance(post.state, GaussianState)
    rule = SiteRule.build("qp", lik, 1.0)
    for obj in (prior, post.state, rule, lik, prior.start_sweeps(post.state)):
        clone = pickle.loads(pickle.dumps(obj))
        assert type(clone) is type(obj)
    # a site rule unpickled in another process has its numba handle again, and gives the same update
    clone = pickle.loads(pickle.dumps(rule))
    a = clone.update_all(y, post.mean, post.var, post.site_precision, post.site_nu)
    b = rule.update_all(y, post.mean, post.var, post.site_precision, post.site_nu)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_engines_use_only_the_interface(rng):
    """VB, Laplace and MCMC run on a prior that offers only the Protocol's methods (no ``K``)."""

    class Wrapped:
        def __init__(self, inner):
            self._inner = inner
            self.kernel, self.X = inner.kernel, inner.X

        n = property(lambda self: self._inner.n)

        def with_kernel(self, kernel):
            return Wrapped(self._inner.with_kernel(kernel))

        def __getattr__(self, name):
            if name in ("condition", "start_sweeps", "sequential_sweep", "cov_sqrt", "conditional"):
                return getattr(self._inner, name)
            raise AttributeError(name)

    inner, lik, y = _problem(rng, 25)
    for method in ("ep", "qp", "vb", "laplace", "mcmc"):
        opts = {"n_samples": 200, "burn_in": 50} if method == "mcmc" else {}
        wrapped = fit(inner.X, y, lik, inner.kernel, method=method, prior=Wrapped(inner), **opts)
        direct = fit(inner.X, y, lik, inner.kernel, method=method, **opts)
        np.testing.assert_allclose(wrapped.predict_f(inner.X[:5])[0], direct.predict_f(inner.X[:5])[0], rtol=1e-12)
