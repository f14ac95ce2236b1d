"""Gaussian variational posterior (Opper and Archambeau 2009), written as sites.

Maximise the evidence lower bound
    ELBO(q) = sum_i E_q[log p(y_i | f_i)] - KL(q(f) || N(0, K)),  q = N(m, Sigma).
Opper and Archambeau show that at the optimum m = K w and Sigma = (K^-1 + Lambda)^-1
with w_i = E_q[d log p / df_i] and lambda_i = -E_q[d^2 log p / df_i^2] (Price/Bonnet). In
site form (tau = lambda, nu = Sigma^-1 m = w + lambda m) the stationarity conditions read

    tau_i = -E[d2_i],  nu_i = E[d1_i] - E[d2_i] m_i,

and iterate them with an adaptive damping step d (the conjugate-computation / natural-gradient
update with step d; :func:`run_vb`). The expectations are the likelihood's
``variational_expectations`` (Gauss-Hermite with :data:`qpviz.config.GH_NODES` nodes, or its
closed forms; :func:`expected_log_lik`) (starting sites: :func:`.ep.default_sites`) and ``likelihood.dlog_prob``. Convergence:
the distance to the fixed point max(RMS(tau* - tau), RMS(nu* - nu)) < ``tol``. The ELBO (reported as ``log_marginal_likelihood``):

    KL = 1/2 (-sum_i tau_i Sigma_ii + m^T w) + 1/2 log|I + K T|,
using tr(K^-1 Sigma) = N - sum_i tau_i Sigma_ii and log|K| - log|Sigma| = log|I + K T|.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from qpviz import config
from qpviz.inference.ep import ConvergenceWarning, default_sites
from qpviz.inference.options import MethodOptions, option
from qpviz.inference.prior import CovarianceRoot

__all__ = ["VBOptions", "run_vb", "gauss_hermite_expectations", "expected_log_lik", "elbo"]


def expected_log_lik(likelihood, y, mean, var):
    """(E, dE/dm, 2 dE/dv) with E = E_{N(f|mean,var)}[log p(y|f)], per observation: the
    likelihood's ``variational_expectations`` (Gauss-Hermite by default; closed forms for the
    kinked step and Laplace likelihoods and for Poisson-square, whose E[d^2 log p] diverges)."""
    return likelihood.variational_expectations(np.asarray(y, float), np.asarray(mean, float), np.asarray(var, float))


def gauss_hermite_expectations(likelihood, y, mean, var):
    """(E[log p], E[d log p/df], E[d^2 log p/df^2]) under N(f | mean, var) by Gauss-Hermite (the
    contract's default, whatever the likelihood overrides)."""
    from qpviz.likelihoods.base import Likelihood

    return Likelihood.variational_expectations(likelihood, y, mean, var)


@dataclass(frozen=True)
class VBOptions(MethodOptions):
    """The options of ``qpviz.fit(..., method="vb")`` (:func:`run_vb`)."""

    tol: float = option(1e-6, "change of the variational parameters at convergence")
    damping: float | None = option(None, "largest step in (0, 1] of the fixed-point iteration "
                                         "(None: 1, or 0.5 if not log-concave)")
    max_iter: int = option(2000, "iterations before a run stops unconverged")
    warn: bool = option(True, "warn when a run does not converge")

    needs: ClassVar[tuple] = (CovarianceRoot,)


def run_vb(prior, likelihood, y, *, tol: float = 1e-6, damping: float | None = None, max_iter: int = 2000,
           warn: bool = True, init=None):
    """Damped fixed-point iteration with an adaptive step; return (state, elbo, converged, n_iter, history).

    ``init`` = (tau, nu) starts from these sites (default :func:`.ep.default_sites`; hyper-parameter
    fitting warm-starts each evaluation from the previous optimum).

    Sites move towards their fixed-point targets, tau <- tau + d (tau* - tau), nu likewise, with
    tau* = -E[d2], nu* = E[d1] - E[d2] m. The step d starts at ``damping``; when the distance to
    the fixed point r = max(RMS(tau* - tau), RMS(nu* - nu)) grows, d is halved (the undamped
    iteration oscillates with period 2 when the kernel variance is large); while r shrinks, d
    grows by 10% up to ``damping``. A step that makes K^-1 + T indefinite is halved and retried.
    If the step falls below 1e-3, or the distance has not halved in 100 iterations, the fixed
    point repels the iteration (the expected
    log-likelihood is not concave, e.g. the step likelihood) and L-BFGS on the ELBO takes over
    (:func:`_maximise_elbo`; ``converged`` is then L-BFGS's own criterion).
    Convergence: r < ``tol``; ``history`` holds r per iteration.
    """
    from qpviz.inference.prior import IndefinitePosterior

    if damping is None:
        damping = 1.0 if likelihood.log_concave else 0.5
    if not (0.0 < damping <= 1.0):
        raise ValueError(f"damping must be in (0, 1]; got {damping!r}")
    tau, nu = default_sites(likelihood, y) if init is None else (np.array(a, dtype=np.float64) for a in init)
    state = prior.condition(tau, nu)
    history: list[float] = []
    converged = False
    step = damping
    checkpoint = np.inf
    it = 0
    for it in range(1, int(max_iter) + 1):
        _, g, h = expected_log_lik(likelihood, y, state.mean, state.var)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
            raise ValueError(
                f"E[d log p/df] is not finite for the {likelihood.name} likelihood: VB needs log p(y|f) finite "
                "everywhere (e.g. step with eps > 0)"
            )
        tau_target, nu_target = -h, g - h * state.mean
        residual = max(float(np.sqrt(np.mean((tau_target - tau) ** 2))), float(np.sqrt(np.mean((nu_target - nu) ** 2))))
        if history and residual > history[-1]:
            step *= 0.5
        elif history:
            step = min(damping, 1.1 * step)
        history.append(residual)
        if residual < tol:
            converged = True
            break
        if it % _PROGRESS_WINDOW == 0:
            stalled = residual > 0.5 * checkpoint
            checkpoint = residual
        else:
            stalled = False
        if step < _MIN_STEP or stalled:  # the fixed point repels the iteration (E not concave): ascend the ELBO
            state, lbfgs_iter, converged = _maximise_elbo(prior, likelihood, y, state, tol, int(max_iter) - it)
            _, g, h = expected_log_lik(likelihood, y, state.mean, state.var)
            residual = max(float(np.sqrt(np.mean((-h - state.tau) ** 2))),
                           float(np.sqrt(np.mean((g - h * state.mean - state.nu) ** 2))))
            history.append(residual)
            it += lbfgs_iter
            break
        for _ in range(40):
            tau_try = tau + step * (tau_target - tau)
            nu_try = nu + step * (nu_target - nu)
            try:
                state = prior.condition(tau_try, nu_try)
                break
            except (IndefinitePosterior, np.linalg.LinAlgError):
                step *= 0.5
        else:
            break  # no admissible step: reported as non-convergence below
        tau, nu = tau_try, nu_try
    if not converged and warn:
        warnings.warn(
            f"VB did not converge in {it} iterations (last distance to the fixed point {history[-1]:.3g}); increase "
            "max_iter or loosen tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    return state, elbo(state, likelihood, y), converged, it, history


#: below this step the fixed-point iteration hands over to L-BFGS on the ELBO
_MIN_STEP = 1e-3
#: ... or when the distance to the fixed point has not halved over this many iterations
_PROGRESS_WINDOW = 100
#: L-BFGS's result counts as converged only if also max |dELBO/dparams| is below this
_MAX_FINAL_GRADIENT = 1e-4
#: fresh L-BFGS starts allowed after a stalled line search
_LBFGS_RESTARTS = 20


def _maximise_elbo(prior, likelihood, y, state, tol: float, max_iter: int):
    """L-BFGS on the ELBO over (u, lambda) -> (state, iterations, success).

    Opper and Archambeau's parameters with the mean whitened by the prior: m = L_K u
    (K = L_K L_K^T, ``prior.cov_sqrt()``), Sigma = (K^-1 + diag(lambda))^-1, so the sites are tau = lambda,
    nu = K^-1 m + lambda m. Gradients (O&A 2009): dELBO/du = L_K^T E[d1] - u,
    dELBO/dlambda = -(Sigma o Sigma)(h + lambda) / 2 with h = 2 dE/dv. Sites that make
    K^-1 + Lambda indefinite get the value +inf (L-BFGS backs off). Convergence here is
    L-BFGS's own (projected gradient below 1e-3 tol, or a relative ELBO change below 1e-15)
    *and* a final max |gradient| below 1e-4; the fixed-point distance in ``history`` can stay
    above ``tol`` because the parameters are ill-conditioned.
    """
    from scipy import linalg, optimize

    from qpviz.inference.prior import IndefinitePosterior

    chol = prior.cov_sqrt()  # K = L L^T
    n = prior.n

    def sites(params):
        u, lam = params[:n], params[n:]
        m = chol @ u
        return lam, linalg.solve_triangular(chol, u, lower=True, trans="T") + lam * m

    def negative(params):
        lam = params[n:]
        try:
            st = prior.condition(*sites(params))
        except (IndefinitePosterior, np.linalg.LinAlgError):
            return np.inf, np.zeros_like(params)
        expected, g, h = expected_log_lik(likelihood, y, st.mean, st.var)
        u = params[:n]
        # m^T K^-1 m = u^T u exactly (st.mean @ st.weights loses digits when K is ill-conditioned)
        value = float(np.sum(expected)) - (0.5 * (-np.sum(st.tau * st.var) + u @ u) + st.half_log_det)
        grad = np.concatenate([chol.T @ g - u, -0.5 * st.squared_cov_matvec(h + lam)])
        return -value, -grad

    x = np.concatenate([linalg.solve_triangular(chol, state.mean, lower=True), state.tau])
    iterations, success, best = 0, False, np.inf
    for _ in range(_LBFGS_RESTARTS):  # L-BFGS also stops when its line search stalls: restart it
        out = optimize.minimize(negative, x, jac=True, method="L-BFGS-B",
                                options={"maxiter": max(int(max_iter) - iterations, 1), "gtol": 1e-3 * tol,
                                         "ftol": 1e-15, "maxcor": 30})
        iterations += int(out.nit)
        x = out.x
        success = bool(out.success) and float(np.max(np.abs(out.jac))) < _MAX_FINAL_GRADIENT
        if success or iterations >= max_iter or not out.fun < best:
            break
        best = out.fun
    return prior.condition(*sites(x)), iterations, success


def elbo(state, likelihood, y) -> float:
    """ELBO = sum_i E_q[log p(y_i|f_i)] - KL(q || prior) (module docstring)."""
    expected_logp, _, _ = expected_log_lik(likelihood, y, state.mean, state.var)
    kl = 0.5 * (-np.sum(state.tau * state.var) + state.mean @ state.weights) + state.half_log_det
    return float(np.sum(expected_logp) - kl)
