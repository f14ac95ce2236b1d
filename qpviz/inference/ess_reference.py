"""The Gaussian the MCMC reference's ellipses are drawn from, and where its chains start.

Ellipses (:func:`reference_gaussian`): around EP's posterior N(m, S) rather than the prior
(EPESS, Fagan, Bhandari and Cunningham 2016): p(f | y) = N(f | m, S) prod_i p(y_i | f_i) / t_i(f_i)
with EP's sites t_i, so only the per-site ratio is sliced; on the step preset (eps = 0, N = 60)
this raised the bulk ESS of 4 x 1000 draws from 6-37 (prior ellipses) to 116-283.

Starts (:func:`start_points`): inside the likelihood's support, from EP's Gaussian posterior
N(m, S): the first chain at m, the others at m + START_SPREAD L_S z (over-dispersed draws),
pulled towards m until every site has positive likelihood. A hard likelihood (the step with
eps = 0: log p = -inf for y f < 0) needs this: ESS only shrinks its bracket towards the current
point, so a chain keeps its start's support forever, and a start on the jump (f = 0, where
every site has p = 1/2) never left it (samples ~1e-323, a latent mean of 0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg

__all__ = ["START_SPREAD", "Reference", "covariance_root", "reference_gaussian", "start_points"]

#: Standard deviations of EP's posterior by which the chains' starts are spread (over-dispersed).
START_SPREAD = 2.0


@dataclass
class Reference:
    """The Gaussian N(centre, root root^T) the ellipses are drawn from, the sites t_i(f) =
    exp(-tau_i f^2 / 2 + nu_i f) it divides out of the likelihood (zero for the prior), and where
    chains start: ``start`` and draws start + spread * start_root z."""

    centre: np.ndarray
    root: np.ndarray
    tau: np.ndarray
    nu: np.ndarray
    start: np.ndarray
    start_root: np.ndarray
    origin: str  #: "EP posterior", or "prior (why EP was not used)"


def covariance_root(cov: np.ndarray) -> np.ndarray:
    """A square root R of a covariance (R R^T = cov): Cholesky, or eigenvalues clipped at 0 if
    that fails (EP's S may be numerically singular)."""
    cov = 0.5 * (cov + cov.T)
    try:
        return np.ascontiguousarray(linalg.cholesky(cov, lower=True, check_finite=True))
    except (np.linalg.LinAlgError, ValueError):
        values, vectors = np.linalg.eigh(cov)
        return np.ascontiguousarray(vectors * np.sqrt(np.clip(values, 0.0, None)))


def reference_gaussian(prior, likelihood, y) -> Reference:
    """EP's posterior N(m, S) and sites as the sampler's reference (EPESS: Fagan, Bhandari and
    Cunningham 2016): p(f | y) = N(f | m, S) prod_i p(y_i | f_i) / t_i(f_i) up to a constant, so
    ellipses through N(m, S) draws already follow the posterior's shape and scale, and only the
    per-site ratio is sliced. If EP fails, or its mean has zero likelihood, the prior N(0, K)
    (plain ESS) with starts around :func:`_start`'s point."""
    from qpviz.inference.ep import run_sites

    y = np.ascontiguousarray(likelihood.check_y(y), dtype=np.float64)
    try:
        state = run_sites(prior, likelihood, y, "ep", warn=False).state
        mean = np.ascontiguousarray(state.mean, dtype=np.float64)
        tau, nu = (np.ascontiguousarray(a, dtype=np.float64) for a in (state.tau, state.nu))
        root = covariance_root(np.asarray(state.cov, dtype=np.float64))
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(root)) and np.all(np.isfinite(tau))
                and np.all(np.isfinite(nu))):
            why = "EP's posterior is not finite"
        elif not math.isfinite(float(np.sum(likelihood.log_prob(y, mean)))):
            why = "EP's mean lies outside the likelihood's support"
        else:
            return Reference(mean, root, tau, nu, mean, root, "EP posterior")
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, FloatingPointError) as exc:
        why = f"EP failed: {exc}"
    L = np.ascontiguousarray(prior.cov_sqrt())
    zero = np.zeros(y.shape[0])
    return Reference(zero, L, zero, zero.copy(), _start(likelihood, y, L), 0.1 * L, f"prior ({why})")


def start_points(reference: Reference, log_lik, count: int, seed: int = 0, spread: float = START_SPREAD) -> np.ndarray:
    """(count, N) chain starts with finite ``log_lik``: the first at ``reference.start`` (EP's mean),
    the others over-dispersed at start + spread R z (R = ``reference.start_root``, z ~ N(0, I)
    from ``seed``), each step pulled halfway back to the start until its log-likelihood is finite
    (at most 40 times, then the start itself)."""
    rng = np.random.default_rng(seed)
    centre = reference.start
    starts = np.empty((int(count), centre.shape[0]))
    for k in range(int(count)):
        step = spread * (reference.start_root @ rng.standard_normal(centre.shape[0])) if k else np.zeros_like(centre)
        for _ in range(40):
            if math.isfinite(log_lik(centre + step)):
                break
            step = 0.5 * step
        else:
            step = np.zeros_like(centre)
        starts[k] = centre + step
    return starts


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
