"""Hyper-parameter optimisation by the approximate evidence: bounds, warnings and the L-BFGS-B driver.

``qpviz.fit(..., optimise=True)`` follows the QP paper (Alg. 1 line 15, sec. 6): the kernel's log
hyper-parameters maximise EP's approximate evidence (eq. 4) with scipy's L-BFGS-B, using the
analytic gradient of the posterior state's ``grad_log_marginal`` (:mod:`.prior`) and warm-started
EP runs (:func:`optimise_hyperparameters`; VB fits its own bound). The bounds (:func:`resolve_bounds`),
the warning for a value on a bound (:class:`OptimiserBoundWarning`, :data:`ON_BOUND`) and the step
back from a failed inner fit (:func:`failed_trial`) are shared with the closed-form sparse
regression's optimiser (:mod:`.sparse_regression`) and SVI's bounds (:mod:`.svi`).
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize

from qpviz import config
from qpviz.inference import metrics
from qpviz.inference.ep import run_sites
from qpviz.inference.posterior import GPPosterior
from qpviz.inference.prior import InducingInputs
from qpviz.inference.vb import run_vb

__all__ = ["optimise_hyperparameters", "resolve_bounds", "OptimiserBoundWarning", "ON_BOUND",
           "failed_trial", "likelihood_scale_params", "likelihood_log_param_grad", "expected_log_lik_grad",
           "with_log_params"]


class _StopTraining(Exception):
    """A stop request (``stop=`` of :func:`qpviz.fit`) inside the optimiser's objective."""


class OptimiserBoundWarning(UserWarning):
    """A fitted hyper-parameter stopped on a bound of the optimiser (the evidence still rose there)."""


def likelihood_scale_params(likelihood) -> tuple[str, ...]:
    """The parameters ``optimise_likelihood=True`` fits on the log scale: those declared with
    ``fit_scale=True`` (e.g. the Gaussian noise variance, a Student-t or Laplace scale)."""
    return tuple(p.name for p in type(likelihood).parameters if p.fit_scale)


def _log_param_difference(likelihood, names, total, step: float = 1e-5) -> np.ndarray:
    """d total(lik) / d log(theta_L) for each parameter in ``names``, by central differences in
    log(theta_L) with ``step`` (``total`` maps a likelihood to a number)."""
    theta = np.log([likelihood.params[n] for n in names])
    grad = np.empty(len(names))
    for j in range(len(names)):
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        grad[j] = (total(with_log_params(likelihood, names, up))
                   - total(with_log_params(likelihood, names, down))) / (2.0 * step)
    return grad


def expected_log_lik_grad(likelihood, names, y, mean, var, step: float = 1e-5) -> np.ndarray:
    """d sum_i E_{N(mean_i, var_i)}[log p(y_i | f)] / d log(theta_L) at fixed q (VB's likelihood-scale gradient)."""
    return _log_param_difference(likelihood, names,
                                 lambda lik: np.sum(lik.variational_expectations(y, mean, var)[0]), step)


def with_log_params(likelihood, names, log_values):
    return likelihood.with_params(**{name: float(np.exp(v)) for name, v in zip(names, log_values)})


def likelihood_log_param_grad(likelihood, names, y, cavity_tau, cavity_nu, step: float = 1e-5) -> np.ndarray:
    """d log Z_EP / d log(theta_L) at an EP fixed point = sum_i d log Z_i / d log(theta_L) at fixed cavities.

    (Only the tilted normalisers Z_i depend on the likelihood explicitly; the implicit dependence
    through the sites vanishes at the fixed point, as for the kernel gradient; GPML infEP.) The
    derivative of each log Z_i is a central difference in log(theta_L) with ``step``.
    """
    m, v = cavity_nu / cavity_tau, 1.0 / cavity_tau
    return _log_param_difference(likelihood, names, lambda lik: np.sum(lik.predictive_log_density(y, m, v)), step)


def resolve_bounds(names, bounds) -> list[tuple[float, float]]:
    """Log-scale bounds per hyper-parameter ``names`` from ``bounds`` (see :func:`qpviz.fit`)."""
    default = config.HYPER_BOUNDS
    if bounds is None:
        bounds = {}
    elif not isinstance(bounds, dict):
        bounds = {name: bounds for name in names}
    unknown = sorted(set(bounds) - set(names))
    if unknown:
        raise ValueError(f"bounds given for unknown hyper-parameter(s) {unknown}; the fitted ones are {list(names)}")
    out = []
    for name in names:
        try:
            low, high = (float(b) for b in bounds.get(name, default))
        except (TypeError, ValueError):
            raise TypeError(f"the bounds of {name} must be a pair (low, high) of numbers; got {bounds[name]!r}") from None
        if not (0.0 < low < high < np.inf):
            raise ValueError(f"the bounds of {name} must satisfy 0 < low < high < inf; got ({low:g}, {high:g})")
        out.append((float(np.log(low)), float(np.log(high))))
    return out


#: A fitted log hyper-parameter this close to a log bound counts as on the bound.
ON_BOUND = 1e-6


def failed_trial(theta, best) -> tuple[float, np.ndarray]:
    """Loss and gradient where the inner fit failed (did not converge, or gave no finite value):
    worse than the best point seen so far and rising away from it, f_best + c (1 + |theta -
    theta_best|^2) with c = 1 + |f_best|, so that L-BFGS-B's line search backtracks towards it.

    (A constant 1e300 with a zero gradient made the line search give up at the start: VB on crabs,
    whose first trial step went to a corner of the bounds, stopped at its initial kernel in every
    fold.)"""
    if best is None:
        return 1e300, np.zeros_like(theta)
    theta_best, loss_best = best
    offset = np.asarray(theta, float) - theta_best
    scale = 1.0 + abs(loss_best)
    return loss_best + scale * (1.0 + offset @ offset), 2.0 * scale * offset


def optimise_hyperparameters(prior, likelihood, y, *, max_iter: int = 100, bounds=None,
                             optimise_likelihood: bool = False, objective: str = "ep", optimise_kernel: bool = True,
                             optimise_inducing: bool = False, record=None, predict_likelihood=None, **ep_options):
    """Maximise log Z_EP (eq. 4; ``objective="ep"``) or VB's ELBO (``objective="vb"``) over the
    kernel's log hyper-parameters with L-BFGS-B.

    Both gradients are the posterior state's ``grad_log_marginal``: 1/2 tr((alpha alpha^T - W)
    dK/d log theta). For EP at its fixed point (GPML infEP); for VB at its optimum too, by the
    envelope theorem: with q = N(m, S) fixed, d ELBO / d theta = -d KL(q || N(0, K)) / d theta =
    1/2 tr((K^-1 (S + m m^T) K^-1 - K^-1) dK), and K^-1 S K^-1 = K^-1 - (K + Lambda^-1)^-1 = K^-1 - W
    at S = (K^-1 + Lambda)^-1, alpha = K^-1 m. A likelihood scale's gradient is the derivative of
    sum_i log Z_i at fixed cavities (EP) or of sum_i E_q[log p(y_i | f_i)] at fixed q (VB).

    A sparse prior's inducing inputs (and VSGP's local covariances) are fitted too with
    ``optimise_inducing=True`` (unbounded; the gradient is the state's ``grad_inducing_params``, the
    same energy's derivative in them, :mod:`.sparse_prior`); ``optimise_kernel=False`` keeps the
    kernel fixed. With ``optimise_likelihood=True`` the likelihood's scale parameters
    (:func:`likelihood_scale_params`, e.g. the Gaussian noise variance) are fitted too, on the log
    scale. ``bounds``: see :func:`qpviz.fit` (default :data:`qpviz.config.HYPER_BOUNDS` for each). Each
    evaluation runs EP warm-started from the previous sites (tight tolerance: the default ``tol``
    is 1e-8 here so that the evidence and its gradient are consistent). Returns (prior with the
    fitted kernel, fitted likelihood, report with theta, the fitted values by name, the names on a
    bound, log evidence, evaluations, scipy's message and the last sites). A value on a bound
    raises an :class:`OptimiserBoundWarning`.

    ``record``: a :class:`qpviz.inference.stochastic.TrainingRecord` that gets one entry per
    converged evaluation (wall time, the evidence, validation error / NTLL of that evaluation's
    posterior, predicting with ``predict_likelihood``; the inducing inputs reach its callback). A
    stop request ends the optimisation at the best point evaluated so far (report ``"stopped"``).
    """
    if objective not in ("ep", "vb"):
        raise ValueError(f"objective must be 'ep' (EP's evidence) or 'vb' (VB's bound); got {objective!r}")
    # tight inner tolerances, so that the objective and its gradient are consistent
    ep_options.setdefault("tol", 1e-8 if objective == "ep" else 1e-7)
    ep_options["warn"] = False
    kernel0 = prior.kernel
    if optimise_inducing and not isinstance(prior, InducingInputs):
        raise ValueError("optimise_inducing=True needs a sparse prior (inducing=Z)")
    kernel_names = kernel0.param_names if optimise_kernel else ()
    n_kernel = len(kernel_names)
    lik_names = likelihood_scale_params(likelihood) if optimise_likelihood else ()
    if optimise_likelihood and not lik_names:
        raise ValueError(f"the {likelihood.name} likelihood has no scale parameter to fit; use optimise_likelihood=False")
    names = kernel_names + tuple(f"likelihood.{n}" for n in lik_names)
    n_hyper = len(names)
    inducing0 = prior.inducing_params() if optimise_inducing else np.empty(0)
    log_bounds = resolve_bounds(names, bounds)
    cache = {"init": None, "evals": 0, "not_converged": 0, "best": None}

    def build(theta):
        lik = with_log_params(likelihood, lik_names, theta[n_kernel:n_hyper]) if lik_names else likelihood
        kernel = kernel0.with_log_params(theta[:n_kernel]) if optimise_kernel else kernel0
        if optimise_inducing:
            return prior.with_inducing_params(kernel, theta[n_hyper:]), lik
        return prior.with_kernel(kernel), lik

    def run(trial, lik, init):
        """(state, log evidence or ELBO, converged, cavities or None) of one inner fit."""
        if objective == "vb":
            state, value, converged, _, _ = run_vb(trial, lik, y, init=init, **ep_options)
            return state, value, converged, None
        res = run_sites(trial, lik, y, "ep", init=init, **ep_options)
        return res.state, res.log_marginal_likelihood, res.converged, (res.cavity_tau, res.cavity_nu)

    def loss(theta):
        trial, lik = build(theta)
        state, value, converged, cavities = run(trial, lik, cache["init"])
        cache["evals"] += 1
        if not converged or not np.isfinite(value):
            cache["not_converged"] += 1
            cache["init"] = None
            return failed_trial(theta, cache["best"])
        cache["init"] = (state.tau, state.nu)
        if cache["best"] is None or -value < cache["best"][1]:
            cache["best"] = (np.array(theta, dtype=float), -float(value))
        if record is not None:
            pred_lik = lik if predict_likelihood is None else predict_likelihood

            def evaluate(X_val, y_val):
                return metrics.evaluate(GPPosterior(objective, pred_lik, trial.X, y, state, value, True, 0, [], {}),
                                        X_val, y_val)

            live = {"inducing": trial.Z} if isinstance(trial, InducingInputs) else None
            if not record.step(cache["evals"], 0, value, evaluate=evaluate, live=live):
                raise _StopTraining
        if optimise_inducing:  # one pass of the covariance gradients for both (sparse_prior)
            grad_kernel, grad_inducing = state.grad_kernel_and_inducing_params()
        else:
            grad_kernel = state.grad_log_marginal() if optimise_kernel else np.empty(0)
            grad_inducing = np.empty(0)
        grad = grad_kernel if optimise_kernel else np.empty(0)
        if lik_names:
            extra = (likelihood_log_param_grad(lik, lik_names, y, *cavities) if cavities is not None
                     else expected_log_lik_grad(lik, lik_names, y, state.mean, state.var))
            grad = np.concatenate([grad, extra])
        grad = np.concatenate([grad, grad_inducing])
        return -value, -grad

    theta0 = kernel0.log_params() if optimise_kernel else np.empty(0)
    if lik_names:
        theta0 = np.concatenate([theta0, np.log([likelihood.params[n] for n in lik_names])])
    theta0 = np.clip(theta0, [b[0] for b in log_bounds], [b[1] for b in log_bounds])
    try:
        out = optimize.minimize(loss, np.concatenate([theta0, inducing0]), jac=True, method="L-BFGS-B",
                                bounds=log_bounds + [(None, None)] * inducing0.size,
                                options={"maxiter": int(max_iter)})
    except _StopTraining:  # the best point so far stands; the report says the run was stopped
        out = optimize.OptimizeResult(x=cache["best"][0], success=False, message="stopped on request")
    fitted, fitted_lik = build(out.x)
    final_state, final_value, _, _ = run(fitted, fitted_lik, None)
    at_bound = [name for name, value, (low, high) in zip(names, out.x, log_bounds)
                if value - low < ON_BOUND or high - value < ON_BOUND]
    if at_bound:
        values = ", ".join(f"{name} = {np.exp(value):.4g}" for name, value in zip(names, out.x) if name in at_bound)
        warnings.warn(
            f"hyper-parameter(s) stopped on a bound of the optimiser: {values}. The EP evidence still rises "
            "beyond it (often a flat evidence surface: the data do not pin it down); widen the bounds with "
            "fit(..., bounds={name: (low, high)}) or fix a value by starting there with a narrow bound",
            OptimiserBoundWarning,
            stacklevel=4,  # the caller of qpviz.fit (fit -> its method's runner -> here)
        )
    report = {
        "theta": out.x[:n_hyper].copy(),
        "param_names": names,
        "values": {name: float(np.exp(value)) for name, value in zip(names, out.x)},
        "bounds": {name: (float(np.exp(low)), float(np.exp(high))) for name, (low, high) in zip(names, log_bounds)},
        "at_bound": at_bound,
        "objective": objective,
        "log_evidence": final_value,
        "evaluations": cache["evals"],
        "ep_not_converged": cache["not_converged"],
        "success": bool(out.success),
        "message": str(out.message),
        "sites": (final_state.tau, final_state.nu),
        "stopped": bool(record is not None and record.stopped),
    }
    if optimise_inducing:
        report["inducing"] = fitted.Z.copy()
        report["inducing_cov"] = None if fitted.inducing_cov is None else fitted.inducing_cov.copy()
    return fitted, fitted_lik, report
