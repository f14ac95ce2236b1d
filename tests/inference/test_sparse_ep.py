"""Power EP and QP on the sparse (pseudo-point) prior and VSGP (:mod:`qpviz.inference.sparse_prior`).

The identities of issue 12: Z = X gives dense EP (probit) and the exact GP (Gaussian, any alpha);
alpha = 1 gives FITC's closed form, alpha -> 0 VFE's (both evaluated here by dense NumPy from the
kernel matrices, independently of the sparse prior's whitened algebra); VSGP with vanishing local
covariances gives the pseudo-point prior; QP keeps EP's means with smaller variances; sequential
and parallel sweeps, NumPy and numba agree.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg

import qpviz
from qpviz import config
from qpviz.inference import sites
from qpviz.inference.ep import ConvergenceWarning
from qpviz.inference.inducing import kmeans_inducing
from qpviz.inference.site_fit import fit_power_ep
from qpviz.inference.sparse_columns import (VAR_FLOOR, scale_columns, scale_columns_numpy, scaled_column_moments,
                                            scaled_column_moments_numpy, solve_columns_in_place)
from qpviz.inference.sparse_prior import SparsePrior
from qpviz.inference.sparse_sweeps import sequential_sweep_reference, sparse_sweep_sites_general
from qpviz.kernels import RBF

KERNEL = RBF(1.3, 0.8)
NOISE = 0.2


def _regression(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, n))[:, None]
    return X, np.sin(2 * X[:, 0]) + np.sqrt(NOISE) * rng.normal(size=n)


X_R, Y_R = _regression()
Y_B = np.where(np.sin(2 * X_R[:, 0]) + 0.3 * np.random.default_rng(1).normal(size=X_R.shape[0]) > 0, 1.0, -1.0)
Z_R = np.linspace(-2.7, 2.7, 9)[:, None]
X_TEST = np.linspace(-4, 4, 11)[:, None]
#: Z = X identities: fewer, wider-spaced inputs, so that K is well conditioned (with 60 inputs
#: K(X, X) is singular to rounding, cond ~ 1e19, and the jitter on K_uu, 1e-8, moves the sparse
#: model's extrapolation by ~3e-5 from the dense prior's, which has its jitter on K_ff)
X_S, Y_S, YB_S = X_R[::3], Y_R[::3], Y_B[::3]
KERNEL_S = RBF(1.3, 0.35)


def _closed_form(alpha, X=X_R, y=Y_R, Z=Z_R, X_new=X_TEST):
    """Power-EP regression in closed form by dense NumPy (paper 001; Bui et al. 2017, sec. 3):
    log Z = log N(y | 0, Q + alpha D + s2 I) - (1 - alpha)/(2 alpha) sum log(1 + alpha d/s2) and
    the predictive f_* | y with Lambda = alpha D + s2 I. alpha = None: VFE's bound and predictive."""
    Kuu = KERNEL(Z) + config.JITTER * np.eye(Z.shape[0])
    Kuf, Kus = KERNEL(Z, X), KERNEL(Z, X_new)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    d = KERNEL.diag(X) - np.diag(Q)
    lam = NOISE + (0.0 if alpha is None else alpha) * d
    C = Q + np.diag(lam)
    value = -0.5 * y @ np.linalg.solve(C, y) - 0.5 * np.linalg.slogdet(C)[1] - 0.5 * len(y) * np.log(2 * np.pi)
    if alpha is None:
        value -= np.sum(d) / (2 * NOISE)
    else:
        value -= (1 - alpha) / (2 * alpha) * np.sum(np.log1p(alpha * d / NOISE))
    A = Kuu + (Kuf / lam) @ Kuf.T  # posterior of u: N(Kuu A^-1 Kuf Lambda^-1 y, Kuu A^-1 Kuu)
    mean = Kus.T @ np.linalg.solve(A, Kuf @ (y / lam))
    var = (KERNEL.diag(X_new) - np.einsum("ij,ij->j", Kus, np.linalg.solve(Kuu, Kus))
           + np.einsum("ij,ij->j", Kus, np.linalg.solve(A, Kus)))
    return value, mean, var


GAUSSIAN = qpviz.likelihood("gaussian", variance=NOISE)


@pytest.mark.parametrize("parallel", [False, True])
def test_alpha_one_is_fitc(parallel):
    post = fit_power_ep(X_R, Y_R, GAUSSIAN, KERNEL, "ep", Z_R, alpha=1.0, parallel=parallel, tol=1e-12,
                        max_sweeps=500)
    value, mean, var = _closed_form(1.0)
    got_mean, got_var = post.predict_f(X_TEST)
    assert post.converged
    assert abs(post.log_marginal_likelihood - value) < 1e-8
    assert np.max(np.abs(got_mean - mean)) < 1e-8 and np.max(np.abs(got_var - var)) < 1e-8


@pytest.mark.parametrize("alpha", [0.5, 0.1])
def test_power_ep_regression_matches_its_closed_form(alpha):
    post = fit_power_ep(X_R, Y_R, GAUSSIAN, KERNEL, "ep", Z_R, alpha=alpha, tol=1e-12)
    value, mean, var = _closed_form(alpha)
    got_mean, got_var = post.predict_f(X_TEST)
    assert abs(post.log_marginal_likelihood - value) < 1e-8
    assert np.max(np.abs(got_mean - mean)) < 1e-8 and np.max(np.abs(got_var - var)) < 1e-8


def test_small_alpha_is_vfe():
    post = fit_power_ep(X_R, Y_R, GAUSSIAN, KERNEL, "ep", Z_R, alpha=1e-6, tol=1e-8)
    value, mean, var = _closed_form(None)
    got_mean, got_var = post.predict_f(X_TEST)
    assert post.converged
    assert abs(post.log_marginal_likelihood - value) < 1e-5
    assert np.max(np.abs(got_mean - mean)) < 1e-5 and np.max(np.abs(got_var - var)) < 1e-5
    # and it is the bound: FITC's evidence is larger on these data, VFE's bound below alpha = 0.5's
    assert value < _closed_form(0.5)[0]


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.01])
def test_inducing_at_inputs_gives_the_exact_gp_for_gaussian_noise(alpha):
    post = fit_power_ep(X_S, Y_S, GAUSSIAN, KERNEL_S, "ep", X_S, alpha=alpha, tol=1e-10)
    exact = qpviz.fit(X_S, Y_S, GAUSSIAN, KERNEL_S, method="ep", tol=1e-10)
    mean, var = post.predict_f(X_TEST)
    mean_exact, var_exact = exact.predict_f(X_TEST)
    assert abs(post.log_marginal_likelihood - exact.log_marginal_likelihood) < 1e-6
    assert np.max(np.abs(mean - mean_exact)) < 1e-6 and np.max(np.abs(var - var_exact)) < 1e-6


@pytest.mark.parametrize("parallel", [False, True])
def test_inducing_at_inputs_gives_dense_ep_for_probit(parallel):
    dense = qpviz.fit(X_S, YB_S, "probit", KERNEL_S, method="ep", tol=1e-10, parallel=parallel, max_sweeps=500)
    post = fit_power_ep(X_S, YB_S, "probit", KERNEL_S, "ep", X_S, tol=1e-10, parallel=parallel, max_sweeps=500)
    assert post.converged and dense.converged
    assert np.max(post.prior.cond_var) < 1e-7  # d_n is the jitter's order
    assert abs(post.log_marginal_likelihood - dense.log_marginal_likelihood) < 1e-6
    assert np.max(np.abs(post.mean - dense.mean)) < 1e-6
    assert np.max(np.abs(post.state.f_var - dense.var)) < 1e-6
    mean, var = post.predict_f(X_TEST)
    mean_d, var_d = dense.predict_f(X_TEST)
    assert np.max(np.abs(mean - mean_d)) < 1e-6 and np.max(np.abs(var - var_d)) < 1e-6


def test_training_marginals_of_f_are_h_plus_the_conditional_variance():
    post = fit_power_ep(X_R, Y_B, "probit", KERNEL, "qp", Z_R, alpha=0.5)
    mean, var = post.predict_f(X_R)
    assert np.allclose(mean, post.mean, atol=1e-12) and np.allclose(var, post.state.f_var, atol=1e-12)
    assert np.all(post.prior.cond_var > 0) and np.all(post.state.f_var > post.var)


def test_vsgp_with_vanishing_local_covariances_is_fitc_ep():
    fitc = fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", Z_R, tol=1e-10)
    vsgp = fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", Z_R, inducing_cov=np.full(Z_R.shape[0], 1e-12), tol=1e-10)
    assert abs(vsgp.log_marginal_likelihood - fitc.log_marginal_likelihood) < 1e-8
    assert np.max(np.abs(vsgp.mean - fitc.mean)) < 1e-8 and np.max(np.abs(vsgp.var - fitc.var)) < 1e-8
    assert np.max(np.abs(vsgp.predict_f(X_TEST)[1] - fitc.predict_f(X_TEST)[1])) < 1e-8


def _two_gaussians(n, seed):
    """Paper 002 sec. 5's synthetic classification: each class drawn from its own 2-D Gaussian."""
    rng = np.random.default_rng(seed)
    labels = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    centres = np.where(labels[:, None] > 0, [[1.0, 0.5]], [[-1.0, -0.5]])
    spread = np.where(labels[:, None, None] > 0, [[[0.6, 0.3], [0.3, 0.5]]], [[[0.5, -0.2], [-0.2, 0.8]]])
    X = centres + np.einsum("nij,nj->ni", np.linalg.cholesky(spread), rng.normal(size=(n, 2)))
    return X, labels


@pytest.mark.parametrize("shape", ["spherical", "full"])
def test_vsgp_two_gaussians_gives_a_proper_posterior(shape):
    X, y = _two_gaussians(200, 0)
    X_test, y_test = _two_gaussians(2000, 1)
    Z = kmeans_inducing(X, 4, seed=0)
    label = np.argmin(((X[:, None, :] - Z[None]) ** 2).sum(-1), axis=1)
    local = np.stack([np.cov(X[label == j].T) for j in range(4)])  # each cluster's covariance (paper 002 sec. 5)
    C = local if shape == "full" else np.trace(local, axis1=1, axis2=2) / 2
    kernel = RBF(2.0, 1.0)
    post = fit_power_ep(X, y, "probit", kernel, "ep", Z, inducing_cov=C)
    fitc = fit_power_ep(X, y, "probit", kernel, "ep", Z)
    assert post.converged and np.isfinite(post.log_marginal_likelihood)
    assert post.log_marginal_likelihood != pytest.approx(fitc.log_marginal_likelihood, abs=1e-3)  # the blur matters
    mean, var = post.predict_f(X_test)
    assert np.all(var > 0) and np.all(post.var > 0) and np.all(post.prior.cond_var >= 0)
    proba = post.predict_proba(X_test)
    assert np.all((proba > 0) & (proba < 1))
    assert np.mean(np.where(proba > 0.5, 1.0, -1.0) == y_test) > 0.85


@settings(max_examples=60, deadline=None)
@given(y=st.sampled_from([-1.0, 1.0]), cavity_mean=st.floats(-4, 4), cavity_var=st.floats(0.05, 5.0),
       cond_var=st.floats(0.0, 3.0), alpha=st.sampled_from([1.0, 0.5, 0.1]))
def test_qp_keeps_every_mean_and_shrinks_variances_at_each_projection(y, cavity_mean, cavity_var, cond_var, alpha):
    """From the same h-cavity N(m, v) and d_n, the new h-marginal of QP has EP's mean and a smaller variance."""
    lik = qpviz.likelihood("probit").tempered(alpha)
    marginals = []
    for method in ("ep", "qp"):
        rule = sites.SiteRule.build(method, lik, 1.0, cond_var=np.array([cond_var]))
        tau, nu, _, status = rule.update_all(np.array([y]), np.array([cavity_mean]), np.array([cavity_var]),
                                             np.zeros(1), np.zeros(1))
        assert status[0] in (sites.OK, sites.CLIPPED)
        precision = 1.0 / cavity_var + alpha * tau[0]  # the cavity (site at 0) times the new site^alpha
        marginals.append(((cavity_mean / cavity_var + alpha * nu[0]) / precision, 1.0 / precision))
    (mean_ep, var_ep), (mean_qp, var_qp) = marginals
    assert mean_qp == pytest.approx(mean_ep, rel=1e-8, abs=1e-10)
    assert var_qp <= var_ep * (1 + 1e-12)


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_sequential_and_parallel_sweeps_reach_the_same_fixed_point(method):
    args = (X_R, Y_B, "probit", KERNEL, method, Z_R)
    seq = fit_power_ep(*args, alpha=0.5, tol=1e-10, max_sweeps=500)
    par = fit_power_ep(*args, alpha=0.5, tol=1e-10, max_sweeps=500, parallel=True)
    assert seq.converged and par.converged
    assert np.max(np.abs(seq.site_precision - par.site_precision)) < 1e-7
    assert np.max(np.abs(seq.mean - par.mean)) < 1e-8
    assert abs(seq.log_marginal_likelihood - par.log_marginal_likelihood) < 1e-8


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_numpy_reference_and_numba_kernels_agree(method):
    """One sequential sweep (numba kernel, cancellation-free step 3') against the NumPy reference
    (step 3' literally, the likelihood's Python API), and the parallel update both ways."""
    prior = SparsePrior(KERNEL, X_R, Z_R)
    lik = qpviz.likelihood("probit").tempered(0.7)
    rule = sites.SiteRule.build(method, lik, 0.8, cond_var=prior.cond_var)
    rng = np.random.default_rng(3)
    state = prior.condition(rng.uniform(0, 2, prior.n), rng.normal(size=prior.n))
    order = rng.permutation(prior.n)
    results = []
    for run in ("numba", "numpy"):
        sweep = prior.start_sweeps(state)
        log_z, status = np.full(prior.n, np.nan), np.zeros(prior.n, dtype=np.int64)
        if run == "numba":
            m, handle, damping, coef, meta = rule.jit
            sparse_sweep_sites_general(prior.Wt, prior.cond_var, sweep.cov, sweep.mean_v, sweep.tau, sweep.nu, Y_B,
                                       order, m, handle, damping, coef, meta, log_z, status)
        else:
            sequential_sweep_reference(prior.Wt, prior.cond_var, sweep.cov, sweep.mean_v, sweep.tau, sweep.nu, Y_B,
                                       order, rule, log_z, status)
        results.append((sweep.tau, sweep.nu, log_z, sweep.mean, sweep.var))
    for a, b in zip(*results):
        assert np.allclose(a, b, rtol=1e-7, atol=1e-9)
    jit = rule.update_all(Y_B, state.mean, state.var, state.tau, state.nu)
    ref = rule.step(Y_B, state.mean, state.var, state.tau, state.nu, cond_var=prior.cond_var)
    for a, b in zip(jit, ref):
        assert np.allclose(a, b, rtol=1e-7, atol=1e-9)


def test_carried_sweep_state_matches_a_fresh_factorisation():
    post = fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", Z_R, alpha=0.3, refresh=1000)
    assert post.diagnostics["sweep_drift"] < 1e-8


def test_negative_site_precisions_under_power_are_counted_not_nan():
    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(-3, 3, 40))[:, None]
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=40)
    y[::7] += 6.0  # outliers: the Student-t sites there pull outwards (negative precisions)
    lik = qpviz.likelihood("student_t", scale=0.1)
    post = fit_power_ep(X, y, lik, KERNEL, "ep", np.linspace(-3, 3, 8), alpha=0.5, max_sweeps=100, damping=0.5,
                        warn=False)
    assert post.diagnostics["n_clipped"] > 0
    assert np.all(post.site_precision >= 0) and np.all(np.isfinite(post.site_nu))
    assert np.all(np.isfinite(post.mean)) and np.all(post.var > 0) and np.isfinite(post.log_marginal_likelihood)


def test_non_convergence_is_reported():
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        post = fit_power_ep(X_R, Y_B, "probit", KERNEL, "qp", Z_R, alpha=0.5, max_sweeps=1)
    assert not post.converged and post.n_sweeps == 1


@pytest.mark.parametrize("alpha", [0.0, -0.5, 1.5, float("nan"), True, "one"])
def test_alpha_outside_the_unit_interval_is_refused(alpha):
    with pytest.raises(ValueError, match=r"alpha must be"):
        fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", Z_R, alpha=alpha)


@pytest.mark.parametrize("inducing, message", [
    (None, "give the inducing inputs"),
    (np.ones((3, 2)), "column"),
    (np.array([[0.0], [np.nan]]), "NaN"),
    (500, "M = 500 inducing points"),
    (0, "positive integer"),
])
def test_bad_inducing_inputs_are_refused(inducing, message):
    with pytest.raises(ValueError, match=message):
        fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", inducing)


def test_bad_method_and_vsgp_without_rbf_are_refused():
    with pytest.raises(ValueError, match="method must be"):
        fit_power_ep(X_R, Y_B, "probit", KERNEL, "vb", Z_R)
    with pytest.raises(ValueError, match="RBF kernel"):
        fit_power_ep(X_R, Y_B, "probit", qpviz.kernels.Matern32(), "ep", Z_R, inducing_cov=np.ones(9))


def test_sparse_prior_pickles_and_refuses_dense_only_operations():
    prior = SparsePrior(KERNEL, X_R, Z_R)
    clone = pickle.loads(pickle.dumps(prior))
    tau, nu = np.full(prior.n, 0.5), np.linspace(-1, 1, prior.n)
    assert np.array_equal(clone.condition(tau, nu).var, prior.condition(tau, nu).var)
    assert prior.with_kernel(RBF(2.0, 0.5)).kernel.variance == 2.0
    with pytest.raises(NotImplementedError, match="dense prior"):
        prior.cov_sqrt()
    with pytest.raises(NotImplementedError, match="dense prior"):
        prior.conditional(X_TEST)


@pytest.mark.parametrize("zeros", [0, 3, 40], ids=["all-positive", "a-few-zero", "mostly-zero"])
def test_condition_marginals_match_the_dense_formulas_with_zero_and_negative_site_precisions(zeros):
    """The marginals come from the scaled rows sqrt(tau_n) w_n (tau_n > 0), unscaled solves for
    tau_n ~ 0, or one unscaled solve for all (most tau_n ~ 0, or a negative tau_n): each route
    against Cov(h) = (I + Q T)^-1 Q."""
    prior = SparsePrior(KERNEL, X_R, Z_R)
    rng = np.random.default_rng(9)
    nu = rng.normal(size=prior.n)
    Q = prior.Wt @ prior.Wt.T
    for negative in (False, True):
        tau = rng.uniform(0.1, 3, prior.n)
        tau[rng.choice(prior.n, size=min(zeros, prior.n), replace=False)] = 0.0
        if negative:
            tau[1] = -0.01
        state = prior.condition(tau, nu)
        cov = np.linalg.solve(np.eye(prior.n) + Q * tau[None, :], Q)  # (Q^-1 + T)^-1 = (I + Q T)^-1 Q
        assert np.allclose(state.var, np.maximum(np.diag(cov), VAR_FLOOR), atol=1e-10)
        assert np.allclose(state.mean, cov @ nu, atol=1e-10)


def test_scaled_column_moments_kernel_matches_its_numpy_reference():
    rng = np.random.default_rng(4)
    columns, c = rng.normal(size=(7, 50)), rng.normal(size=7)
    sqrt_tau = rng.uniform(0.0, 2.0, 50)
    sqrt_tau[[3, 10]] = [0.0, 1e-120]
    var, mean = scaled_column_moments(columns, c, sqrt_tau)
    ref_var, ref_mean = scaled_column_moments_numpy(columns, c, sqrt_tau)
    assert np.array_equal(np.isnan(var), np.isnan(ref_var)) and np.isnan(var[[3, 10]]).all()
    assert np.allclose(var, ref_var, rtol=1e-13, equal_nan=True) and np.allclose(mean, ref_mean, rtol=1e-13,
                                                                                     equal_nan=True)


def test_scale_columns_kernel_matches_its_numpy_reference():
    rng = np.random.default_rng(5)
    W, sqrt_tau, nu = rng.normal(size=(6, 40)), rng.uniform(0.0, 2.0, 40), rng.normal(size=40)
    out, ref_out = np.empty_like(W), np.empty_like(W)
    weighted = scale_columns(W, sqrt_tau, nu, out)
    ref_weighted = scale_columns_numpy(W, sqrt_tau, nu, ref_out)
    assert np.array_equal(out, ref_out) and np.allclose(weighted, ref_weighted, rtol=1e-13)
    assert not np.allclose(out, W)  # the kernel wrote the scaled columns


def test_solve_columns_in_place_solves_every_column():
    rng = np.random.default_rng(6)
    lower = np.tril(rng.normal(size=(5, 5))) + 5.0 * np.eye(5)
    columns = rng.normal(size=(5, 30))
    expected = np.linalg.solve(lower, columns)
    solve_columns_in_place(lower, columns)
    assert np.allclose(columns, expected, rtol=1e-12)


def test_condition_matches_the_dense_formulas_of_the_h_marginals():
    """Cov(h) = Q - Q (Q + T^-1)^-1 Q, mean = Cov(h) nu (the sparse state against dense NumPy)."""
    prior = SparsePrior(KERNEL, X_R, Z_R)
    rng = np.random.default_rng(5)
    tau, nu = rng.uniform(0.1, 3, prior.n), rng.normal(size=prior.n)
    state = prior.condition(tau, nu)
    Q = prior.Wt @ prior.Wt.T
    cov = Q - Q @ np.linalg.solve(Q + np.diag(1 / tau), Q)
    assert np.allclose(state.var, np.diag(cov), atol=1e-10) and np.allclose(state.mean, cov @ nu, atol=1e-10)
    sign, logdet = np.linalg.slogdet(np.eye(prior.n) + Q * tau[None, :])
    assert state.half_log_det == pytest.approx(0.5 * logdet, abs=1e-9)
    assert np.allclose(Q @ state.weights, state.mean, atol=1e-10)
    assert np.allclose(state.cov, cov, atol=1e-10)
    assert np.allclose(linalg.solve_triangular(prior._Lu, KERNEL(Z_R, X_R), lower=True).T, prior.Wt)


@pytest.mark.parametrize("likelihood, y, alpha, inducing_cov", [
    (GAUSSIAN, Y_R, 0.5, None),
    ("probit", Y_B, 1.0, None),
    ("probit", Y_B, 0.5, None),
    ("probit", Y_B, 1.0, np.full(Z_R.shape[0], 0.05)),
], ids=["gaussian-0.5", "probit-1", "probit-0.5", "probit-vsgp"])
def test_energy_gradient_matches_finite_differences_of_the_converged_evidence(likelihood, y, alpha, inducing_cov):
    def run(kernel):
        return fit_power_ep(X_R, y, likelihood, kernel, "ep", Z_R, alpha=alpha, inducing_cov=inducing_cov, tol=1e-12,
                            max_sweeps=1000)

    grad = run(KERNEL).state.grad_log_marginal()
    theta, step = KERNEL.log_params(), 1e-5
    for j in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        numeric = (run(KERNEL.with_log_params(up)).log_marginal_likelihood
                   - run(KERNEL.with_log_params(down)).log_marginal_likelihood) / (2 * step)
        assert grad[j] == pytest.approx(numeric, abs=1e-6)


@pytest.mark.parametrize("likelihood, y, alpha", [(GAUSSIAN, Y_R, 0.5), ("probit", Y_B, 1.0), ("probit", Y_B, 0.5)],
                         ids=["gaussian-0.5", "probit-1", "probit-0.5"])
def test_energy_gradient_in_the_inducing_inputs_matches_finite_differences(likelihood, y, alpha):
    def run(Z):
        return fit_power_ep(X_R, y, likelihood, KERNEL, "ep", Z, alpha=alpha, tol=1e-12, max_sweeps=1000)

    grad_Z, grad_C = run(Z_R).state.grad_inducing()
    assert grad_C is None and grad_Z.shape == Z_R.shape
    step = 1e-5
    for i, d in [(0, 0), (2, 0), (Z_R.shape[0] - 1, Z_R.shape[1] - 1)]:
        up, down = Z_R.copy(), Z_R.copy()
        up[i, d] += step
        down[i, d] -= step
        numeric = (run(up).log_marginal_likelihood - run(down).log_marginal_likelihood) / (2 * step)
        assert grad_Z[i, d] == pytest.approx(numeric, abs=1e-6, rel=1e-5)


def test_sparse_prior_learns_hyperparameters_through_qpviz_fit():
    """``qpviz.fit(..., prior=SparsePrior(...), optimise=True)``: FITC-EP's evidence rises to a maximum."""
    start = SparsePrior(RBF(1.0, 2.0), X_R, Z_R)
    post = qpviz.fit(X_R, Y_B, "probit", RBF(1.0, 2.0), method="ep", prior=start, optimise=True, max_opt_iter=30)
    before = fit_power_ep(X_R, Y_B, "probit", RBF(1.0, 2.0), "ep", Z_R).log_marginal_likelihood
    assert isinstance(post.prior, SparsePrior)
    assert post.log_marginal_likelihood > before + 1.0
    assert np.max(np.abs(post.state.grad_log_marginal())) < 1e-3


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_an_input_far_from_every_inducing_input_adds_its_own_term(parallel, alpha):
    """w_n = 0 (K_uf underflows): h_n = 0, f_n = e_n ~ N(0, k_nn); the energy gains
    (1/alpha) log int Phi(f)^alpha N(f | 0, k_nn) df (log 1/2 at alpha = 1)."""
    X = np.vstack([X_R, [[500.0]]])
    y = np.append(Y_B, 1.0)
    options = dict(alpha=alpha, parallel=parallel, tol=1e-10, max_sweeps=500)
    far = fit_power_ep(X, y, "probit", KERNEL, "ep", Z_R, **options)
    near = fit_power_ep(X_R, Y_B, "probit", KERNEL, "ep", Z_R, **options)
    own = qpviz.likelihood("probit").tempered(alpha).tilted_moments(1.0, 0.0, KERNEL.variance).log_z / alpha
    assert far.converged and far.prior.Wt[-1].max() == 0.0
    assert far.log_marginal_likelihood == pytest.approx(near.log_marginal_likelihood + own, abs=1e-8)
    assert alpha < 1 or own == pytest.approx(np.log(0.5), abs=1e-12)
    assert np.allclose(far.mean[:-1], near.mean, atol=1e-8)
    assert far.predict_f(X[-1:])[1][0] == pytest.approx(KERNEL.variance)


def test_condition_takes_strided_site_arrays():
    """Sites given as strided views (e.g. every other entry of a longer array) give the same state."""
    prior = SparsePrior(KERNEL, X_R, Z_R)
    rng = np.random.default_rng(12)
    tau_long, nu_long = rng.uniform(0.1, 2.0, 2 * prior.n), rng.normal(size=2 * prior.n)
    strided = prior.condition(tau_long[::2], nu_long[::2])
    contiguous = prior.condition(tau_long[::2].copy(), nu_long[::2].copy())
    assert np.array_equal(strided.var, contiguous.var) and np.array_equal(strided.mean, contiguous.mean)


def test_sequential_sweeps_read_a_c_ordered_copy_of_w_built_once():
    """W is stored (M, N) for the BLAS calls; the sequential sweeps read w_n row by row from a C-ordered
    (N, M) copy built on first use (not from the strided view Wt), dropped when the prior is pickled."""
    import pickle

    prior = SparsePrior(KERNEL, X_R, Z_R)
    rows = prior.rows()
    assert rows.flags.c_contiguous and np.array_equal(rows, prior.Wt) and prior.rows() is rows
    assert pickle.loads(pickle.dumps(prior))._rows is None
