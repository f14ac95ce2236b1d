"""Laplace approximation: q(f) = N(f_hat, (K^-1 + W)^-1) at the posterior mode (R&W sec. 3.4).

Newton's method on Psi(f) = log p(y|f) - f^T K^-1 f / 2 in the weights parametrisation
f = K w (R&W Alg. 3.1, their alpha; ``state.weights``): with W = -d^2 log p(y|f) / df^2,

    b = W f + d log p/df,  w_new = b - W^1/2 B^-1 W^1/2 K b,  B = I + W^1/2 K W^1/2.

For likelihoods that are not log-concave W can be negative: the Newton direction then uses
max(W, 0) (a Fisher-like, still ascending direction) and every step is damped by halving until
Psi does not decrease. Convergence: max |f_new - f| < ``tol``. Start: the posterior mean of the likelihood's initial
sites (f = 0, or near sqrt(y) on the positive branch for Poisson-square, see
:func:`.ep.default_sites`). Every linear-algebra step is a ``prior.condition`` (:mod:`.prior`):
the Newton update is the posterior mean of the sites (W, W f + d log p/df). The result is expressed as
sites tau = W(f_hat), nu = W f_hat + d log p/df (so that Sigma nu = f_hat), and the evidence is
R&W eq. 3.32: log q(y) = log p(y|f_hat) - w^T f_hat / 2 - log|I + K W| / 2.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from qpviz.inference.ep import ConvergenceWarning, default_sites
from qpviz.inference.options import MethodOptions, option

__all__ = ["LaplaceOptions", "run_laplace"]


def _psi(likelihood, y, weights, f) -> float:
    return float(np.sum(likelihood.log_prob(y, f)) - 0.5 * weights @ f)


@dataclass(frozen=True)
class LaplaceOptions(MethodOptions):
    """The options of ``qpviz.fit(..., method="laplace")`` (:func:`run_laplace`)."""

    tol: float = option(1e-9, "change of the mode at convergence (Newton)")
    max_iter: int = option(100, "Newton steps before a run stops unconverged")
    warn: bool = option(True, "warn when a run does not converge")


def run_laplace(prior, likelihood, y, *, tol: float = 1e-9, max_iter: int = 100, warn: bool = True):
    """Find the mode and return (state, log_marginal, converged, n_iter, history)."""
    if np.size(likelihood.kinks(y)) > 0:
        raise ValueError(
            f"the Laplace approximation needs a twice-differentiable log-likelihood; the {likelihood.name} likelihood "
            "has a kink (its curvature is 0 or undefined). Use method='ep', 'qp' or 'vb' for it"
        )
    # start from the likelihood's initial sites: f = 0 (flat sites), or near the positive branch
    # sqrt(y) for Poisson-square (see .ep.default_sites); weights with f = K weights from the prior
    start = prior.condition(*default_sites(likelihood, y))
    f, weights = start.mean, start.weights
    psi = _psi(likelihood, y, weights, f)
    if not np.isfinite(psi):
        raise ValueError(
            f"log p(y | f) is not finite at the starting point for the {likelihood.name} likelihood; the Laplace approximation needs a "
            "likelihood that is positive everywhere (e.g. step with eps > 0)"
        )
    history: list[float] = []
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        d1, d2 = likelihood.dlog_prob(y, f)
        w = np.maximum(-d2, 0.0)
        # R&W Alg. 3.1's Newton target is the posterior of sites (W, W f + d log p/df):
        # w_new = b - W^1/2 B^-1 W^1/2 K b = that state's weights, f_new = K w_new its mean
        target = prior.condition(w, w * f + d1)
        direction_weights = target.weights - weights
        direction_f = target.mean - f
        step = 1.0
        for _ in range(40):
            weights_try = weights + step * direction_weights
            f_try = f + step * direction_f  # = K weights_try (linear)
            psi_try = _psi(likelihood, y, weights_try, f_try)
            if psi_try >= psi - 1e-12 * abs(psi):
                break
            step *= 0.5
        change = float(np.max(np.abs(f_try - f)))
        history.append(change)
        weights, f, psi = weights_try, f_try, psi_try
        if change < tol:
            converged = True
            break
    if not converged and warn:
        warnings.warn(
            f"Laplace's Newton iteration did not converge in {it} steps (last max |df| {history[-1]:.3g}); "
            "increase max_iter or loosen tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    d1, d2 = likelihood.dlog_prob(y, f)
    tau = -np.asarray(d2, float)
    nu = tau * f + d1
    state = prior.condition(tau, nu)
    log_ml = float(np.sum(likelihood.log_prob(y, f)) - 0.5 * weights @ f - state.half_log_det)
    return state, log_ml, converged, it, history
