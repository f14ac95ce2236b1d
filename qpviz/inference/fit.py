"""``qpviz.fit``: one entry point for every inference method, and EP-evidence hyper-parameter fitting.

    post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="qp", optimise=True, tol=1e-6)
    mean, var = post.predict_f(X_new)

``optimise=True`` follows the QP paper (Alg. 1 line 15, sec. 6): the kernel's log
hyper-parameters maximise EP's approximate evidence (eq. 4) with scipy's L-BFGS-B, using the
analytic gradient of the posterior state's ``grad_log_marginal`` (:mod:`.prior`) and warm-started EP runs; the
requested method then runs with those hyper-parameters (for QP this is the paper's protocol:
hyper-parameters from EP, then QP sites, which report their own evidence). VB fits its own bound
instead (sec. 6: "VB is also optimized by L-BFGS-B with the same configuration"), with the
same gradient at its optimum (:func:`optimise_hyperparameters`).
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize

from qpviz import config
from qpviz.inference import metrics
from qpviz.inference.ep import run_sites
from qpviz.inference.laplace import run_laplace
from qpviz.inference.mcmc import run_mcmc
from qpviz.inference.posterior import GPPosterior, SamplePosterior
from qpviz.inference.stochastic import TrainingRecord
from qpviz.inference.svi import SVI_OPTIONS, fit_svi
from qpviz.inference.dense import DensePrior
from qpviz.inference.vb import run_vb
from qpviz.kernels import Kernel, as_inputs
from qpviz.likelihoods import Likelihood
from qpviz.likelihoods import likelihood as make_likelihood

__all__ = ["fit", "optimise_hyperparameters", "likelihood_log_param_grad", "METHODS", "OPTIONS",
           "likelihood_scale_params", "OptimiserBoundWarning", "resolve_bounds"]

#: Sparse GP regression in closed form (Gaussian likelihood; :mod:`.sparse_regression`, issue 12)
SPARSE_REGRESSION = ("fitc", "pitc", "dtc", "vfe")
#: Stochastic variational inference on inducing points (:mod:`.svi`) and scalable EP (:mod:`.sep`), issue 13
STOCHASTIC = ("svi", "sep")
METHODS = ("ep", "qp", "vb", "laplace", "mcmc") + SPARSE_REGRESSION + STOCHASTIC

#: What a training run reports as it goes (:class:`qpviz.inference.stochastic.TrainingRecord`): held-out
#: data scored per step, a callback per recorded step, a stop request, a progress bar
TRAINING_OPTIONS = ("validation", "callback", "stop", "progress")

#: options each method accepts (besides ``jitter``, ``prior`` and ``max_opt_iter``)
OPTIONS = {
    "ep": ("tol", "damping", "order", "parallel", "max_sweeps", "seed", "use_table", "init", "warn", "refresh",
           "inducing", "alpha", "inducing_cov", "optimise_inducing") + TRAINING_OPTIONS,
    "qp": ("tol", "damping", "order", "parallel", "max_sweeps", "seed", "use_table", "init", "warn", "refresh",
           "inducing", "alpha", "inducing_cov", "optimise_inducing") + TRAINING_OPTIONS,
    "vb": ("tol", "damping", "max_iter", "warn"),
    "laplace": ("tol", "max_iter", "warn"),
    "mcmc": ("n_samples", "burn_in", "thin", "seed"),
    "fitc": ("inducing", "optimise_inducing", "seed"),
    "pitc": ("inducing", "blocks", "optimise_inducing", "seed"),
    "dtc": ("inducing", "optimise_inducing", "seed"),
    "vfe": ("inducing", "optimise_inducing", "seed"),
    "svi": SVI_OPTIONS,
    # scalable EP (paper 003; :mod:`.sep`)
    "sep": ("inducing", "minibatch", "epochs", "seed", "client", "projection", "damping", "tol", "use_table",
            "record_every", "n_shards", "step_rule") + TRAINING_OPTIONS,
}
_COMMON = ("jitter", "prior", "max_opt_iter", "optimise_likelihood", "bounds")


class _StopTraining(Exception):
    """A stop request (``stop=`` of :func:`fit`) inside the optimiser's objective."""


class OptimiserBoundWarning(UserWarning):
    """A fitted hyper-parameter stopped on a bound of the optimiser (the evidence still rose there)."""
_EP_FOR_OPTIMISATION = ("tol", "damping", "order", "parallel", "max_sweeps", "seed")


def _as_likelihood(lik) -> Likelihood:
    if isinstance(lik, Likelihood):
        return lik
    if isinstance(lik, str):
        return make_likelihood(lik)
    raise TypeError(f"likelihood must be a name such as 'probit' or a qpviz.likelihood(...) object, got {lik!r}")


def fit(X, y, likelihood, kernel: Kernel, method: str = "ep", optimise: bool = False, **options):
    """Fit a GP with ``likelihood`` and ``kernel`` to (X, y) by ``method``; return the posterior.

    Methods: ``"ep"`` and ``"qp"`` (:mod:`.ep`), ``"vb"`` (:mod:`.vb`), ``"laplace"``
    (:mod:`.laplace`), ``"mcmc"`` (:mod:`.mcmc`, a :class:`SamplePosterior`). Options per method
    are listed in :data:`OPTIONS` (e.g. ``tol``, ``damping``, ``order="fixed"|"random"``,
    ``parallel``, ``max_sweeps`` for EP/QP); ``jitter`` overrides :data:`qpviz.config.JITTER`,
    ``prior`` replaces the dense prior by another prior object with the same interface
    (:mod:`.prior`), ``max_opt_iter`` bounds the L-BFGS-B iterations of ``optimise=True`` and
    ``optimise_likelihood=True`` also fits the likelihood's scale parameter (Gaussian noise
    variance, Student-t / Laplace scale). ``bounds`` limits the fitted hyper-parameters (natural
    units): one ``(low, high)`` pair for all, or a dict by name (``kernel.param_names``, e.g.
    ``"variance"``, ``"lengthscale[1]"``, and ``"likelihood.scale"``) with the rest at
    :data:`qpviz.config.HYPER_BOUNDS`; a fitted value on a bound raises an
    :class:`OptimiserBoundWarning` and is listed in ``diagnostics["optimisation"]["at_bound"]``.
    The fitted values are ``post.hyperparameters``.

    Sparse GPs (issue 12): ``inducing=Z`` ((M, D) array, or an int M: K-means centres of X) makes
    ``"ep"`` / ``"qp"`` Power EP on pseudo-points (``alpha`` in (0, 1], default 1) or VSGP
    (``inducing_cov``) for any likelihood (:mod:`.sparse_prior`); ``"fitc"``, ``"pitc"``
    (``blocks``), ``"dtc"`` and ``"vfe"`` are the closed forms for the Gaussian likelihood
    (:mod:`.sparse_regression`). Training options of EP / QP with ``optimise=True`` (GFITC is
    ``method="ep", inducing=Z``), as for SEP and SVI: ``validation=(X_val, y_val)`` scores each
    converged evaluation, ``callback(entry)`` sees each, ``stop`` (a ``threading.Event`` or a
    callable) ends the optimisation at its best point so far, ``progress=True`` shows a bar; the
    posterior's ``history`` is then that record (wall time, evidence, test error, NTLL per
    evaluation) instead of EP's per-sweep convergence measures. ``optimise_inducing=True`` also learns Z: by the closed forms for
    the Gaussian likelihood, else by the Power-EP energy's gradient in Z (:func:`optimise_hyperparameters`).

    ``"svi"`` (issue 13; :func:`qpviz.inference.svi.fit_svi`): the variational bound on inducing
    points, batch (L-BFGS-B, ``minibatch >= N``) or stochastic (Adadelta on ``minibatch``-point
    batches for ``epochs``), with ``validation``, ``stop``, ``callback`` and ``progress``;
    ``optimise=True`` learns the kernel and Z with q(u).

    ``"sep"`` (issue 13, paper 003; :func:`qpviz.inference.sep.fit_sep`): scalable EP, q(u) by
    parallel site refinements on minibatches and, with ``optimise=True``, the kernel and Z by
    Adadelta steps on the minibatch estimate of log Z_q's gradient (``inducing``, ``minibatch``,
    ``epochs``, ``projection="ep"|"qp"``, ``client`` for Dask shards, and the training options).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    allowed = OPTIONS[method] + _COMMON
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"method {method!r} does not take option(s) {unknown}; it accepts {sorted(allowed)}")
    lik = _as_likelihood(likelihood)
    if method == "svi":
        return _fit_svi(X, y, lik, kernel, optimise, options)
    if method == "sep":
        return _fit_sep(X, y, lik, kernel, optimise, options)
    prior = options.pop("prior", None)
    jitter = options.pop("jitter", None)
    max_opt_iter = options.pop("max_opt_iter", 100)
    optimise_likelihood = options.pop("optimise_likelihood", False)
    bounds = options.pop("bounds", None)
    if bounds is not None and not optimise:
        raise TypeError("bounds limit the hyper-parameters that optimise=True fits; pass optimise=True or drop bounds")
    optimise_inducing = options.pop("optimise_inducing", False)
    if method in SPARSE_REGRESSION or (optimise_inducing and method in ("ep", "qp") and lik.name == "gaussian"
                                       and options.get("inducing_cov") is None):
        return _fit_sparse_closed_form(X, y, lik, kernel, method, optimise, optimise_inducing, optimise_likelihood,
                                       prior, jitter, max_opt_iter, bounds, options)
    # Power EP on pseudo-points / VSGP (issue 12): a sparse prior and the tempered likelihood
    # p(y|f)^alpha run the same engine; predictions use the likelihood itself
    run_lik, sparse_report = lik, {}
    inducing = options.pop("inducing", None)
    alpha = options.pop("alpha", None)
    inducing_cov = options.pop("inducing_cov", None)
    if inducing is None and (alpha is not None or inducing_cov is not None):
        raise TypeError("alpha (Power EP) and inducing_cov (VSGP) belong to a sparse prior: pass inducing=Z "
                        "(an (M, D) array of inducing inputs, or an int M for K-means centres) too")
    if inducing is not None:
        if prior is not None:
            raise TypeError("give either prior=... or inducing=..., not both")
        if optimise_likelihood:
            raise ValueError("optimise_likelihood=True is not available with inducing points yet (its gradient "
                             "would ignore the prior's conditional variances); fix the likelihood's parameters")
        from qpviz.inference.inducing import as_inducing  # noqa: PLC0415 - sparse code only when asked for
        from qpviz.inference.sparse_prior import SparsePrior, check_alpha  # noqa: PLC0415

        run_lik = lik.tempered(check_alpha(1.0 if alpha is None else alpha))
        prior = SparsePrior(kernel, X, as_inducing(inducing, as_inputs(X), options.get("seed", 0)), inducing_cov,
                            jitter)
        sparse_report = dict(alpha=run_lik.alpha, inducing=prior.Z, M=prior.m, jitter=prior.jitter_used,
                             n_negative_cond_var=prior.n_negative_cond_var)
    if optimise_inducing and inducing is None:
        raise TypeError("optimise_inducing=True learns the inducing inputs of a sparse prior: pass inducing=Z "
                        "(an (M, D) array, or an int M for K-means centres) too")
    if prior is None:
        prior = DensePrior(kernel, X, jitter=jitter)
    y = lik.check_y(y)
    if y.shape != (prior.n,):
        raise ValueError(f"y must have one entry per row of X ({prior.n}); got shape {y.shape}")

    training = {k: options.pop(k) for k in TRAINING_OPTIONS if k in options}
    if training and not (optimise or optimise_inducing):
        raise TypeError(f"{sorted(training)} report on training: they need optimise=True (or optimise_inducing=True)")
    # the bar counts evaluations of the evidence (L-BFGS-B's line searches make more than max_opt_iter)
    record = (TrainingRecord(None, label=f"{method} (L-BFGS-B)", validation=training.get("validation"),
                             stop=training.get("stop"), callback=training.get("callback"),
                             progress=bool(training.get("progress", False))) if training else None)
    diagnostics: dict = {}
    if optimise or optimise_inducing:
        ep_options = {k: v for k, v in options.items() if k in _EP_FOR_OPTIMISATION}
        objective = "vb" if method == "vb" else "ep"
        if objective == "vb":
            ep_options = {k: v for k, v in options.items() if k in ("tol", "damping", "max_iter")}
        try:
            prior, run_lik, report = optimise_hyperparameters(prior, run_lik, y, max_iter=max_opt_iter, bounds=bounds,
                                                              optimise_likelihood=optimise_likelihood,
                                                              objective=objective, optimise_kernel=optimise,
                                                              optimise_inducing=optimise_inducing, record=record,
                                                              predict_likelihood=lik if sparse_report else None,
                                                              **ep_options)
        finally:
            if record is not None:
                record.close()
        if sparse_report:
            sparse_report["inducing"] = prior.Z
        else:
            lik = run_lik
        diagnostics["optimisation"] = report
        if method in ("ep", "qp", "vb") and "init" not in options:
            options["init"] = report["sites"]

    if method in ("ep", "qp"):
        res = run_sites(prior, run_lik, y, method, **options)
        diagnostics.update(n_clipped=res.n_clipped, n_skipped=res.n_skipped, cavity_tau=res.cavity_tau,
                           cavity_nu=res.cavity_nu, log_z=res.log_z, sweep_drift=res.drift, **sparse_report)
        return GPPosterior(method, lik, prior.X, y, res.state, res.log_marginal_likelihood, res.converged,
                           res.n_sweeps, res.history if record is None else record.history, diagnostics)
    if method == "vb":
        state, value, converged, n_iter, history = run_vb(prior, lik, y, **options)
        return GPPosterior(method, lik, prior.X, y, state, value, converged, n_iter, history, diagnostics)
    if method == "laplace":
        state, value, converged, n_iter, history = run_laplace(prior, lik, y, **options)
        return GPPosterior(method, lik, prior.X, y, state, value, converged, n_iter, history, diagnostics)
    samples, info = run_mcmc(prior, lik, y, **options)
    diagnostics.update(info)
    return SamplePosterior(prior, lik, y, samples, diagnostics)


def _fit_sep(X, y, lik, kernel, optimise, options):
    """Scalable EP (:func:`qpviz.inference.sep.fit_sep`): learns (log theta, Z) itself by Adadelta."""
    from qpviz.inference.sep import fit_sep  # noqa: PLC0415 - SEP code only when asked for

    unsupported = sorted(set(options) & {"prior", "max_opt_iter", "optimise_likelihood", "bounds"})
    if unsupported:
        raise TypeError(f"method='sep' does not take option(s) {unsupported}: it builds its own inducing-point "
                        "model and learns the kernel and Z by Adadelta (optimise=True)")
    return fit_sep(X, y, lik, kernel, optimise=optimise, **options)


def _fit_sparse_closed_form(X, y, lik, kernel, method, optimise, optimise_inducing, optimise_likelihood, prior,
                            jitter, max_opt_iter, bounds, options):
    """FITC / PITC / DTC / VFE, or Power EP with a Gaussian likelihood whose inducing inputs are
    learnt too: the closed forms of :mod:`.sparse_regression` (analytic gradients in Z)."""
    from qpviz.inference.sparse_regression import fit_sparse_regression  # noqa: PLC0415 - sparse code on demand

    if prior is not None:
        raise TypeError(f"method={method!r} builds its own sparse prior from inducing=Z; drop prior=...")
    if lik.name != "gaussian":
        what = ("learning the inducing inputs (optimise_inducing=True)" if method in ("ep", "qp")
                else f"method={method!r}")
        raise ValueError(f"{what} needs the Gaussian likelihood (closed forms) for now; for the {lik.name} "
                         "likelihood use method='ep' or 'qp' with inducing=Z (fixed inducing inputs)")
    if options.get("inducing") is None:
        raise TypeError(f"method={method!r} needs inducing=Z (an (M, D) array of inducing inputs, or an int M "
                        "for K-means centres)")
    if options.get("inducing_cov") is not None:
        raise ValueError(f"method={method!r} has pseudo-points only; VSGP's inducing_cov needs method='ep' or 'qp'")
    unused = sorted(set(options) - {"inducing", "alpha", "blocks", "seed", "inducing_cov"})
    if unused and method in ("ep", "qp"):
        raise TypeError(f"option(s) {unused} do not apply to the closed-form Power EP of a Gaussian likelihood")
    return fit_sparse_regression(X, y, lik, kernel, method, options["inducing"], blocks=options.get("blocks"),
                                 alpha=1.0 if options.get("alpha") is None else options["alpha"], optimise=optimise,
                                 optimise_inducing=optimise_inducing, optimise_likelihood=optimise_likelihood,
                                 bounds=bounds, max_opt_iter=max_opt_iter, seed=options.get("seed", 0), jitter=jitter)


def _fit_svi(X, y, lik, kernel, optimise, options):
    """SVI (:func:`qpviz.inference.svi.fit_svi`, whose defaults apply: its batch mode is the whole
    training, so ``max_opt_iter`` defaults to 1000 there): it builds its own inducing-point prior
    and keeps the likelihood's parameters fixed."""
    if options.pop("prior", None) is not None:
        raise TypeError("method='svi' builds its own inducing-point prior from inducing=Z; drop prior=...")
    if options.pop("optimise_likelihood", False):
        raise ValueError("optimise_likelihood=True is not available with method='svi'; fix the likelihood's parameters")
    return fit_svi(X, y, lik, kernel, optimise=optimise, **options)


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
        grad[j] = (total(_with_log_params(likelihood, names, up))
                   - total(_with_log_params(likelihood, names, down))) / (2.0 * step)
    return grad


def _expected_log_lik_grad(likelihood, names, y, mean, var, step: float = 1e-5) -> np.ndarray:
    """d sum_i E_{N(mean_i, var_i)}[log p(y_i | f)] / d log(theta_L) at fixed q (VB's likelihood-scale gradient)."""
    return _log_param_difference(likelihood, names,
                                 lambda lik: np.sum(lik.variational_expectations(y, mean, var)[0]), step)


def _with_log_params(likelihood, names, log_values):
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
    """Log-scale bounds per hyper-parameter ``names`` from ``bounds`` (see :func:`fit`)."""
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
_ON_BOUND = 1e-6


def _failed_trial(theta, best) -> tuple[float, np.ndarray]:
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
    scale. ``bounds``: see :func:`fit` (default :data:`qpviz.config.HYPER_BOUNDS` for each). Each
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
    if optimise_inducing and not hasattr(prior, "inducing_params"):
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
        lik = _with_log_params(likelihood, lik_names, theta[n_kernel:n_hyper]) if lik_names else likelihood
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
            return _failed_trial(theta, cache["best"])
        cache["init"] = (state.tau, state.nu)
        if cache["best"] is None or -value < cache["best"][1]:
            cache["best"] = (np.array(theta, dtype=float), -float(value))
        if record is not None:
            pred_lik = lik if predict_likelihood is None else predict_likelihood

            def evaluate(X_val, y_val):
                return metrics.evaluate(GPPosterior(objective, pred_lik, trial.X, y, state, value, True, 0, [], {}),
                                        X_val, y_val)

            live = {"inducing": trial.Z} if hasattr(trial, "Z") else None
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
                     else _expected_log_lik_grad(lik, lik_names, y, state.mean, state.var))
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
                if value - low < _ON_BOUND or high - value < _ON_BOUND]
    if at_bound:
        values = ", ".join(f"{name} = {np.exp(value):.4g}" for name, value in zip(names, out.x) if name in at_bound)
        warnings.warn(
            f"hyper-parameter(s) stopped on a bound of the optimiser: {values}. The EP evidence still rises "
            "beyond it (often a flat evidence surface: the data do not pin it down); widen the bounds with "
            "fit(..., bounds={name: (low, high)}) or fix a value by starting there with a narrow bound",
            OptimiserBoundWarning,
            stacklevel=3,
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
