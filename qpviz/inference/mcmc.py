"""MCMC reference for the latent posterior: elliptical slice sampling (Murray, Adams and MacKay 2010).

p(f | y) proportional to N(f | 0, K) prod_i p(y_i | f_i). One ESS transition from f: draw
nu ~ N(0, K) (= L z, K = L L^T), a level log u = log L(f) + log U(0,1) and an angle
theta ~ U(0, 2 pi) with bracket [theta - 2 pi, theta]; propose f' = f cos theta + nu sin theta,
accept if log L(f') > log u, otherwise shrink the bracket towards 0 and redraw theta.
Every proposal stays on the ellipse through f and nu, so no step size is tuned.

The chain runs in numba with a fixed seed (reproducible), discards ``burn_in`` transitions and
keeps every ``thin``-th of the next ``n_samples * thin``. For the Poisson-square likelihood,
whose posterior is symmetric under f -> -f, the samples are folded onto the positive branch
(sum_i f_i >= 0), the branch the Gaussian methods describe (``diagnostics["sign_folded"]``). Intended for small N (a reference the
dashboard compares EP/QP/VB/Laplace against), not for large data sets.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from scipy import linalg
from qpviz.config import NUMBA_OPTIONS
from qpviz._jit import lk_log_prob

__all__ = ["elliptical_slice_chain", "elliptical_slice_chain_numpy", "run_mcmc"]


@njit(**NUMBA_OPTIONS)
def _log_lik(lk, y, f):
    total = 0.0
    for i in range(f.shape[0]):
        total += lk_log_prob(lk, y[i], f[i])
    return total


@njit(**NUMBA_OPTIONS)
def elliptical_slice_chain(L, y, lk, f0, n_samples, burn_in, thin, seed):
    """(samples (n_samples, N), total likelihood evaluations) of an ESS chain started at f0."""
    np.random.seed(seed)
    n = f0.shape[0]
    f = f0.copy()
    ll = _log_lik(lk, y, f)
    out = np.empty((n_samples, n))
    z = np.empty(n)
    proposal = np.empty(n)
    evaluations = 0
    kept = 0
    total = burn_in + n_samples * thin
    for it in range(total):
        for j in range(n):
            z[j] = np.random.standard_normal()
        nu = L @ z
        log_level = ll + np.log(np.random.random())
        theta = 2.0 * np.pi * np.random.random()
        lo = theta - 2.0 * np.pi
        hi = theta
        while True:
            c = np.cos(theta)
            s = np.sin(theta)
            for j in range(n):
                proposal[j] = f[j] * c + nu[j] * s
            ll_new = _log_lik(lk, y, proposal)
            evaluations += 1
            if ll_new > log_level:
                break
            if theta < 0.0:
                lo = theta
            else:
                hi = theta
            theta = lo + (hi - lo) * np.random.random()
        for j in range(n):
            f[j] = proposal[j]
        ll = ll_new
        if it >= burn_in and (it - burn_in) % thin == 0:
            out[kept, :] = f
            kept += 1
    return out, evaluations


def elliptical_slice_chain_numpy(L, log_lik, f0, n_samples, burn_in, thin, seed):
    """:func:`elliptical_slice_chain` in NumPy for a Python ``log_lik(f)`` (likelihoods without
    numba kernels; also the reference the tests compare the kernel with). Same algorithm
    (Murray, Adams and MacKay 2010, Fig. 2), NumPy's legacy generator with ``seed``."""
    rng = np.random.RandomState(seed)
    f = np.array(f0, dtype=np.float64)
    ll = log_lik(f)
    out = np.empty((n_samples, f.shape[0]))
    evaluations = kept = 0
    for it in range(burn_in + n_samples * thin):
        nu = L @ rng.standard_normal(f.shape[0])
        log_level = ll + np.log(rng.random_sample())
        theta = 2.0 * np.pi * rng.random_sample()
        lo, hi = theta - 2.0 * np.pi, theta
        while True:
            proposal = f * np.cos(theta) + nu * np.sin(theta)
            ll_new = log_lik(proposal)
            evaluations += 1
            if ll_new > log_level:
                break
            if theta < 0.0:
                lo = theta
            else:
                hi = theta
            theta = lo + (hi - lo) * rng.random_sample()
        f, ll = proposal, ll_new
        if it >= burn_in and (it - burn_in) % thin == 0:
            out[kept] = f
            kept += 1
    return out, evaluations


def run_mcmc(prior, likelihood, y, *, n_samples: int = 4000, burn_in: int = 1000, thin: int = 5, seed: int = 0):
    """Samples of f | y and a diagnostics dict (likelihood evaluations per transition)."""
    for name, value, low in (("n_samples", n_samples, 1), ("burn_in", burn_in, 0), ("thin", thin, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    if prior.n > 2000:
        raise ValueError(f"the MCMC reference is meant for small problems (N <= 2000); got N = {prior.n}")
    y = np.ascontiguousarray(likelihood.check_y(y), dtype=np.float64)
    L = np.ascontiguousarray(prior.cov_sqrt())  # K = L L^T: ESS proposals nu = L z
    f0 = _start(likelihood, y, L)
    lk = likelihood.jit_handle()
    if lk is not None:
        samples, evaluations = elliptical_slice_chain(L, y, lk, f0, int(n_samples), int(burn_in), int(thin), int(seed))
    else:
        samples, evaluations = elliptical_slice_chain_numpy(L, lambda f: float(np.sum(likelihood.log_prob(y, f))), f0,
                                                            int(n_samples), int(burn_in), int(thin), int(seed))
    transitions = int(burn_in) + int(n_samples) * int(thin)
    info = {"seed": int(seed), "burn_in": int(burn_in), "thin": int(thin),
            "evaluations_per_transition": evaluations / transitions, "sign_folded": False}
    if likelihood.even_in_f:
        # p(f | y) is symmetric under f -> -f and ESS visits both branches (theta = pi maps f to -f);
        # fold every sample onto the positive branch (sum_i f_i >= 0), the branch EP/QP/VB/Laplace
        # describe (their starting sites pick it: Likelihood.initial_sites).
        samples = samples * np.where(samples.sum(axis=1) < 0, -1.0, 1.0)[:, None]
        info["sign_folded"] = True
    return samples, info


def _start(likelihood, y, L=None) -> np.ndarray:
    """The most probable of the starts 0, sqrt(|y|) (Poisson-square) and y / 2 (binary labels),
    each also smoothed by the prior (K (K + I/4)^-1 f0, when the prior's factor ``L`` is given).

    The most probable, not the first finite one: for the step likelihood with eps = 0, f = 0 lies on
    the jump of every site, and the elliptical slice sampler, which shrinks its bracket towards
    the current point, never left it (every sample ~1e-323, variance 0). Smoothed: a start that
    jumps from point to point (sqrt(|y|) beside zeros) lies almost outside an ill-conditioned
    prior, f0^T K^-1 f0 ~ 1e8 for 60 points at lengthscale 0.5, and the sampler, whose steps
    multiply it by cos(theta) with small theta where the likelihood is sharp, still carried it
    after thousands of steps (latent variances ~1e5 beyond the data, measured); scored by
    log p(y | f0) + log N(f0 | 0, K), the smoothed start wins there.
    """
    candidates = [np.zeros(y.shape[0]), np.sqrt(np.abs(y)), 0.5 * y]
    if L is None:
        scores = [float(np.sum(likelihood.log_prob(y, f0))) for f0 in candidates]
    else:
        K = L @ L.T
        smoothing = K + 0.25 * np.eye(y.shape[0])
        candidates += [K @ np.linalg.solve(smoothing, f0) for f0 in candidates[1:]]
        # log N(f0 | 0, K) up to a constant: -|L^-1 f0|^2 / 2
        scores = [float(np.sum(likelihood.log_prob(y, f0))) - 0.5 * float(np.sum(np.square(
            linalg.solve_triangular(L, f0, lower=True, check_finite=False)))) for f0 in candidates]
    finite = [k for k, score in enumerate(scores) if np.isfinite(score)]
    if not finite:
        raise ValueError(f"found no start with positive likelihood for the {likelihood.name} likelihood; MCMC needs one")
    return np.ascontiguousarray(candidates[max(finite, key=lambda k: scores[k])])
