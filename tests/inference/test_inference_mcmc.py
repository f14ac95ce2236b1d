"""The MCMC reference (elliptical slice sampling) against independent computations."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

import qpviz
from qpviz import kernels
from qpviz.inference import fit


@pytest.fixture
def small_probit():
    X = np.linspace(-2.0, 2.0, 6)[:, None]
    y = np.array([-1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    return X, y, kernels.RBF(1.5, 0.8)


def test_mcmc_agrees_with_long_independent_importance_sampling(small_probit):
    """1-D problem: ESS moments vs self-normalised importance sampling from the prior (numpy)."""
    X, y, k = small_probit
    lik = qpviz.likelihood("probit")
    post = fit(X, y, lik, k, method="mcmc", n_samples=20000, thin=2, burn_in=500, seed=11)
    gen = np.random.default_rng(5)
    L = linalg.cholesky(k(X) + qpviz.config.JITTER * np.eye(len(y)), lower=True)
    f = gen.standard_normal((400_000, len(y))) @ L.T
    logw = lik.log_prob(y[None, :], f).sum(axis=1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    is_mean = w @ f
    is_var = w @ (f - is_mean) ** 2
    np.testing.assert_allclose(post.mean, is_mean, rtol=0, atol=0.04)
    np.testing.assert_allclose(post.var, is_var, rtol=0.08)


def test_mcmc_leaves_the_jump_of_a_hard_step():
    """Step likelihood, eps = 0: f = 0 is on every site's jump; the chain must still explore (it
    stayed at ~1e-323 with variance 0 when it started there), and match importance sampling."""
    X = np.linspace(-2.0, 2.0, 5)[:, None]
    y = np.array([-1.0, -1.0, 1.0, 1.0, 1.0])
    k = kernels.RBF(1.0, 1.0)
    lik = qpviz.likelihood("step", eps=0.0)
    post = fit(X, y, lik, k, method="mcmc", n_samples=8000, thin=2, burn_in=500, seed=3)
    gen = np.random.default_rng(8)
    L = linalg.cholesky(k(X) + qpviz.config.JITTER * np.eye(len(y)), lower=True)
    f = gen.standard_normal((400_000, len(y))) @ L.T
    inside = np.all(y[None, :] * f > 0, axis=1)  # the truncated prior, sampled by rejection
    ref = f[inside]
    assert np.all(post.var > 0.05)
    np.testing.assert_allclose(post.mean, ref.mean(axis=0), atol=0.06)
    np.testing.assert_allclose(post.var, ref.var(axis=0), rtol=0.12)
    # many sites (the GP 1-D page's preset): from f = 0 every sample was ~1e-323
    X = np.linspace(-5.0, 5.0, 60)[:, None]
    y = np.where(np.sin(0.8 * X[:, 0]) >= 0, 1.0, -1.0)
    post = fit(X, y, lik, kernels.RBF(9.0, 1.0), method="mcmc", n_samples=500, seed=0)
    assert np.all(post.var > 0.01) and np.all(y * post.mean > 0)


def test_mcmc_is_reproducible_and_seed_dependent(small_probit):
    X, y, k = small_probit
    a = fit(X, y, "probit", k, method="mcmc", n_samples=200, seed=3)
    b = fit(X, y, "probit", k, method="mcmc", n_samples=200, seed=3)
    c = fit(X, y, "probit", k, method="mcmc", n_samples=200, seed=4)
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)


def test_sample_posterior_prediction_at_training_inputs(small_probit):
    X, y, k = small_probit
    post = fit(X, y, "probit", k, method="mcmc", n_samples=3000, seed=1)
    m, v = post.predict_f(X)
    np.testing.assert_allclose(m, post.mean, rtol=0, atol=1e-6)
    np.testing.assert_allclose(v, post.var, rtol=1e-4, atol=1e-6)


def test_ep_is_closer_to_mcmc_than_laplace_on_probit(small_probit):
    from qpviz.inference.metrics import marginal_distances

    X, y, k = small_probit
    ref = fit(X, y, "probit", k, method="mcmc", n_samples=20000, thin=2, seed=2)
    d = {m: marginal_distances(*(lambda p: (p.mean, p.var))(fit(X, y, "probit", k, method=m)), ref.mean, ref.var)
         for m in ("ep", "laplace")}
    assert d["ep"]["mean_w2"] < d["laplace"]["mean_w2"]


def test_bad_mcmc_options():
    X = np.zeros((3, 1)) + np.arange(3)[:, None]
    with pytest.raises(ValueError, match="thin must be an integer"):
        fit(X, [1.0, -1.0, 1.0], "probit", kernels.RBF(), method="mcmc", thin=0)


def _importance_moments(X, y, lik, k, fold=False, draws=400_000, seed=8):
    """Mean and variance of f | y by self-normalised importance sampling from the prior (numpy);
    ``fold``: each draw times the sign of its sum first (the reference's branch of an even likelihood)."""
    gen = np.random.default_rng(seed)
    L = linalg.cholesky(k(X) + qpviz.config.JITTER * np.eye(len(y)), lower=True)
    f = gen.standard_normal((draws, len(y))) @ L.T
    if fold:
        f = f * np.where(f.sum(axis=1) < 0, -1.0, 1.0)[:, None]
    logw = lik.log_prob(y[None, :], f).sum(axis=1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    mean = w @ f
    return mean, w @ (f - mean) ** 2


def test_tempered_chains_match_importance_sampling_for_poisson_square():
    """Counts between zeros: the sign of f on each stretch is open; the 4 chains (ellipses around
    EP's posterior, tempered rows that change sign) match the folded posterior's moments."""
    from qpviz.inference.dense import DensePrior
    from qpviz.inference.mcmc import run_chains

    X = np.linspace(-2.0, 2.0, 6)[:, None]
    y = np.array([2.0, 1.0, 0.0, 0.0, 1.0, 3.0])
    k = kernels.RBF(2.0, 0.7)
    lik = qpviz.likelihood("poisson_square")
    run = run_chains(DensePrior(k, X), lik, y, chains=4, n_samples=3000, burn_in=500, thin=5)
    assert run.info["accepted_swaps"] > 0 and run.converged, run.status()
    samples = run.samples.reshape(-1, len(y))
    mean, var = _importance_moments(X, y, lik, k, fold=True)
    np.testing.assert_allclose(samples.mean(axis=0), mean, atol=0.08)
    np.testing.assert_allclose(samples.var(axis=0), var, rtol=0.12, atol=0.02)


def test_a_capped_shrink_loop_stays_put_and_is_reported():
    """max_shrinks = 0: a rejected first angle ends the transition at f (still a valid chain); the
    count is reported, and the moments still match (the step likelihood, eps = 0)."""
    from qpviz.inference.dense import DensePrior
    from qpviz.inference.mcmc import run_chains

    X = np.linspace(-2.0, 2.0, 5)[:, None]
    y = np.array([-1.0, -1.0, 1.0, 1.0, 1.0])
    k = kernels.RBF(1.0, 1.0)
    lik = qpviz.likelihood("step", eps=0.0)
    run = run_chains(DensePrior(k, X), lik, y, chains=4, n_samples=2000, burn_in=500, thin=10, max_shrinks=0)
    assert run.info["capped_transitions"] > 0 and "shrink limit" in run.note
    mean, var = _importance_moments(X, y, lik, k)
    samples = run.samples.reshape(-1, len(y))
    assert np.all(y[None, :] * samples > 0)  # never left the support
    np.testing.assert_allclose(samples.mean(axis=0), mean, atol=0.08)
    np.testing.assert_allclose(samples.var(axis=0), var, rtol=0.15)


def test_the_time_budget_stops_sampling_and_says_so():
    import time

    from qpviz.inference.dense import DensePrior
    from qpviz.inference.mcmc import run_chains

    X = np.linspace(-5.0, 5.0, 60)[:, None]
    y = np.where(np.sin(0.8 * X[:, 0]) >= 0, 1.0, -1.0)
    start = time.perf_counter()
    run = run_chains(DensePrior(kernels.RBF(9.0, 1.0), X), qpviz.likelihood("step", eps=0.0), y, chains=4,
                     n_samples=100_000, burn_in=1000, thin=20, time_budget=0.5)
    assert time.perf_counter() - start < 5.0
    assert not run.converged and "time budget" in run.note and run.status().startswith("not converged (R-hat")
    assert run.samples.shape[0] == 1 and 0 < run.samples.shape[1] < 100_000  # part of the first chain


def test_step_preset_reference_has_eps_sized_latents_not_the_jump():
    """The GP 1-D default preset (step, eps = 0) at seeds where the chain used to stay at f = 0."""
    from qpviz.gpdemo import oned, presets

    for seed in (3, 4):
        data = presets.make("step likelihood, eps = 0 (EP vs QP differ)", 60, seed)
        lik = qpviz.likelihood("step", eps=0.0)
        kernel = oned.make_kernel(data.kernel, data.variance, data.lengthscale)
        ep = oned.fit_method(data.X, data.y, lik, kernel, "ep")
        ref = oned.mcmc_reference(data.X, data.y, lik, kernel)
        assert np.all(data.y * ref.train_mean > 0) and np.median(ref.train_var) > 0.1  # stuck: all ~1e-323, var 0
        assert 0.8 < np.mean(np.abs(ref.train_mean)) / np.mean(np.abs(ep.train_mean)) < 1.25


def test_without_ep_the_chains_fall_back_to_the_prior_ellipses(small_probit, monkeypatch):
    """EP failing (or its mean outside the support) leaves plain ESS from the prior, started at
    the most probable simple point, and says so in the info."""
    from qpviz.inference import ep
    from qpviz.inference.dense import DensePrior
    from qpviz.inference.mcmc import run_chains

    def failing(*args, **kwargs):
        raise ValueError("no EP here")

    monkeypatch.setattr(ep, "run_sites", failing)
    X, y, k = small_probit
    run = run_chains(DensePrior(k, X), qpviz.likelihood("probit"), y, chains=4, n_samples=2000, burn_in=500, thin=5)
    assert run.info["reference"] == "prior (EP failed: no EP here)" and run.converged, run.status()
    monkeypatch.undo()
    reference = fit(X, y, "probit", k, method="mcmc", n_samples=20000, thin=2, burn_in=500, seed=11)
    np.testing.assert_allclose(run.samples.reshape(-1, len(y)).mean(axis=0), reference.mean, atol=0.08)


def test_equalised_ladder_moves_rungs_towards_the_pairs_that_rarely_swap():
    """Rejection concentrated in the cold pair: the middle rung moves towards beta = 1; ends kept,
    the ladder stays increasing, and equal rates leave a geometric ladder as it is."""
    from qpviz.inference.mcmc import equalised_ladder

    betas = np.geomspace(0.1, 1.0, 3)
    moved = equalised_ladder(betas, np.array([0.9, 0.1]))
    assert moved[0] == 0.1 and moved[-1] == 1.0 and betas[1] < moved[1] < 1.0
    np.testing.assert_allclose(moved[1], np.exp(np.interp(0.5, [0.0, 0.1 / 1.0, 1.0], np.log(betas))))
    np.testing.assert_allclose(equalised_ladder(betas, np.array([0.4, 0.4])), betas)
    np.testing.assert_allclose(equalised_ladder(betas, np.array([1.0, 1.0])), betas)
