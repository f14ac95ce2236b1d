"""The site engines behind ``qpviz.fit``: EP, QP, VB, Laplace and MCMC on a dense or sparse prior
(:func:`fit_sites`), the closed-form sparse regressions they hand over to, and :func:`fit_power_ep`.

A fit runs in three steps: the prior (the dense one, a ``prior=`` object, or with ``inducing=Z``
the pseudo-point prior of :mod:`.sparse_prior` and the tempered likelihood p(y|f)^alpha of Power
EP), optionally the hyper-parameters (:func:`qpviz.inference.hyper.optimise_hyperparameters`,
with a :class:`qpviz.inference.stochastic.TrainingRecord` when training options are given), then
the method's engine (:func:`.ep.run_sites`, :func:`.vb.run_vb`, :func:`.laplace.run_laplace`,
:func:`.mcmc.run_mcmc`). The options each method takes are declared by its engine
(:class:`.ep.SiteOptions`, :class:`.vb.VBOptions`, ...; the registry :mod:`.methods`).
"""
from __future__ import annotations

from qpviz.inference.dense import DensePrior
from qpviz.inference.ep import SiteOptions, run_sites
from qpviz.inference.hyper import optimise_hyperparameters
from qpviz.inference.inducing import as_inducing
from qpviz.inference.laplace import LaplaceOptions, run_laplace
from qpviz.inference.mcmc import MCMCOptions, run_mcmc
from qpviz.inference.options import TRAINING, MethodOptions
from qpviz.inference.posterior import GPPosterior, SamplePosterior
from qpviz.inference.prior import Conditions, InducingInputs, Rebuild, check_capabilities
from qpviz.inference.stochastic import TrainingRecord
from qpviz.inference.vb import VBOptions, run_vb
from qpviz.kernels import Kernel, as_inputs
from qpviz.likelihoods import as_likelihood

__all__ = ["fit_sites", "fit_power_ep", "check_prior", "SPARSE_REGRESSION", "SITE_METHODS"]

#: Sparse GP regression in closed form (Gaussian likelihood; :mod:`.sparse_regression`, issue 12)
SPARSE_REGRESSION = ("fitc", "pitc", "dtc", "vfe")
#: the methods run on a prior's sites (or its samples, MCMC)
SITE_METHODS = ("ep", "qp", "vb", "laplace", "mcmc")
#: the EP options that the inner EP runs of ``optimise=True`` take
_EP_FOR_OPTIMISATION = ("tol", "damping", "order", "parallel", "max_sweeps", "seed")
_VB_FOR_OPTIMISATION = ("tol", "damping", "max_iter")
_DEFAULTS = MethodOptions.defaults()
#: the options (and so the prior capabilities) each site method declares; :mod:`.methods` registers
#: these
SITE_OPTIONS = {"ep": SiteOptions, "qp": SiteOptions, "vb": VBOptions, "laplace": LaplaceOptions, "mcmc": MCMCOptions}


def fit_sites(X, y, lik, kernel: Kernel, method: str, optimise: bool, options: dict):
    """``qpviz.fit`` for :data:`SITE_METHODS` and :data:`SPARSE_REGRESSION` (``lik``: a likelihood
    object; ``options``: the call's options, already checked against the method's declaration;
    consumed)."""
    prior = options.pop("prior", None)
    jitter = options.pop("jitter", None)
    max_opt_iter = options.pop("max_opt_iter", _DEFAULTS["max_opt_iter"])
    optimise_likelihood = options.pop("optimise_likelihood", _DEFAULTS["optimise_likelihood"])
    bounds = options.pop("bounds", None)
    if bounds is not None and not optimise:
        raise TypeError("bounds limit the hyper-parameters that optimise=True fits; pass optimise=True or drop bounds")
    optimise_inducing = options.pop("optimise_inducing", False)
    if method in SPARSE_REGRESSION or (optimise_inducing and method in ("ep", "qp") and lik.is_conjugate
                                       and options.get("inducing_cov") is None):
        return _fit_closed_form(X, y, lik, kernel, method, optimise, optimise_inducing, optimise_likelihood, prior,
                                jitter, max_opt_iter, bounds, options)
    prior, run_lik, sparse_report = _prior(X, lik, kernel, prior, jitter, optimise_likelihood, options)
    if optimise_inducing and not sparse_report:
        raise TypeError("optimise_inducing=True learns the inducing inputs of a sparse prior: pass inducing=Z "
                        "(an (M, D) array, or an int M for K-means centres) too")
    if prior is None:
        prior = DensePrior(kernel, X, jitter=jitter)
    check_prior(prior, method, optimise, optimise_inducing)
    y = lik.check_y(y)
    if y.shape != (prior.n,):
        raise ValueError(f"y must have one entry per row of X ({prior.n}); got shape {y.shape}")
    record = _training_record(method, options, optimise or optimise_inducing)
    diagnostics: dict = {}
    if optimise or optimise_inducing:
        inner = {k: v for k, v in options.items()
                 if k in (_VB_FOR_OPTIMISATION if method == "vb" else _EP_FOR_OPTIMISATION)}
        try:
            prior, run_lik, report = optimise_hyperparameters(prior, run_lik, y, max_iter=max_opt_iter, bounds=bounds,
                                                              optimise_likelihood=optimise_likelihood,
                                                              objective="vb" if method == "vb" else "ep",
                                                              optimise_kernel=optimise,
                                                              optimise_inducing=optimise_inducing, record=record,
                                                              predict_likelihood=lik if sparse_report else None,
                                                              **inner)
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
    return _run(method, prior, lik, run_lik, y, options, record, diagnostics, sparse_report)


def check_prior(prior, method: str, optimise: bool = False, optimise_inducing: bool = False) -> None:
    """A :class:`qpviz.inference.prior.MissingCapability` (a TypeError) when ``prior`` lacks a
    capability that ``method`` declares (``needs`` of its options) or that the requested learning
    needs: ``optimise=True`` rebuilds the prior per kernel (:class:`~qpviz.inference.prior.Rebuild`)
    and runs EP's sweeps (VB: its own iteration) per evaluation; ``optimise_inducing=True`` needs
    :class:`~qpviz.inference.prior.InducingInputs`."""
    check_capabilities(prior, method, (Conditions,) + SITE_OPTIONS[method].needs)
    if optimise or optimise_inducing:
        inner = SITE_OPTIONS["vb" if method == "vb" else "ep"].needs
        check_capabilities(prior, method, (Rebuild,) + inner,
                           "optimise=True" if optimise else "optimise_inducing=True")
    if optimise_inducing:
        check_capabilities(prior, method, (InducingInputs,), "optimise_inducing=True")


def _prior(X, lik, kernel, prior, jitter, optimise_likelihood, options):
    """(prior or None for the dense one, the likelihood the engine runs, the sparse report): with
    ``inducing`` Power EP on pseudo-points / VSGP (issue 12), a sparse prior and the tempered
    likelihood p(y|f)^alpha run the same engine; predictions use the likelihood itself."""
    inducing = options.pop("inducing", None)
    alpha = options.pop("alpha", None)
    inducing_cov = options.pop("inducing_cov", None)
    if inducing is None and (alpha is not None or inducing_cov is not None):
        raise TypeError("alpha (Power EP) and inducing_cov (VSGP) belong to a sparse prior: pass inducing=Z "
                        "(an (M, D) array of inducing inputs, or an int M for K-means centres) too")
    if inducing is None:
        return prior, lik, {}
    if prior is not None:
        raise TypeError("give either prior=... or inducing=..., not both")
    if optimise_likelihood:
        raise ValueError("optimise_likelihood=True is not available with inducing points yet (its gradient "
                         "would ignore the prior's conditional variances); fix the likelihood's parameters")
    from qpviz.inference.sparse_prior import SparsePrior, check_alpha  # noqa: PLC0415 - sparse code on demand

    run_lik = lik.tempered(check_alpha(1.0 if alpha is None else alpha))
    prior = SparsePrior(kernel, X, as_inducing(inducing, as_inputs(X), options.get("seed", 0)), inducing_cov, jitter)
    return prior, run_lik, dict(alpha=run_lik.alpha, inducing=prior.Z, M=prior.m, jitter=prior.jitter_used,
                                n_negative_cond_var=prior.n_negative_cond_var)


def _training_record(method, options, optimising):
    """The :class:`TrainingRecord` of the training options in ``options`` (popped), or None."""
    training = {k: options.pop(k) for k in TRAINING if k in options}
    if training and not optimising:
        raise TypeError(f"{sorted(training)} report on training: they need optimise=True (or optimise_inducing=True)")
    # the bar counts evaluations of the evidence (L-BFGS-B's line searches make more than max_opt_iter)
    return (TrainingRecord(None, label=f"{method} (L-BFGS-B)", validation=training.get("validation"),
                           stop=training.get("stop"), callback=training.get("callback"),
                           progress=bool(training.get("progress", False))) if training else None)


def _run(method, prior, lik, run_lik, y, options, record, diagnostics, sparse_report):
    """The method's engine on ``prior``: the posterior."""
    if method in ("ep", "qp"):
        res = run_sites(prior, run_lik, y, method, **options)
        diagnostics.update(n_clipped=res.n_clipped, n_skipped=res.n_skipped, cavity_tau=res.cavity_tau,
                           cavity_nu=res.cavity_nu, log_z=res.log_z, sweep_drift=res.drift, **sparse_report)
        return GPPosterior(method, lik, prior.X, y, res.state, res.log_marginal_likelihood, res.converged,
                           res.n_sweeps, res.history if record is None else record.history, diagnostics)
    if method in ("vb", "laplace"):
        state, value, converged, n_iter, history = (run_vb if method == "vb" else run_laplace)(prior, lik, y, **options)
        return GPPosterior(method, lik, prior.X, y, state, value, converged, n_iter, history, diagnostics)
    samples, info = run_mcmc(prior, lik, y, **options)
    diagnostics.update(info)
    return SamplePosterior(prior, lik, y, samples, diagnostics)


def _fit_closed_form(X, y, lik, kernel, method, optimise, optimise_inducing, optimise_likelihood, prior, jitter,
                     max_opt_iter, bounds, options):
    """FITC / PITC / DTC / VFE, or Power EP with a Gaussian likelihood whose inducing inputs are
    learnt too: the closed forms of :mod:`.sparse_regression` (analytic gradients in Z)."""
    from qpviz.inference.sparse_regression import fit_sparse_regression  # noqa: PLC0415 - sparse code on demand

    if prior is not None:
        raise TypeError(f"method={method!r} builds its own sparse prior from inducing=Z; drop prior=...")
    if not lik.is_conjugate:
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


def fit_power_ep(X, y, likelihood, kernel: Kernel, method: str = "ep", inducing=None, *, alpha: float = 1.0,
                 inducing_cov=None, jitter: float | None = None, seed: int = 0, **ep_options):
    """Power EP (``method="ep"``) or its QP variant (``"qp"``) on the sparse prior of
    :mod:`.sparse_prior`; a :class:`GPPosterior`.

    ``inducing``: (M, D) pseudo-inputs / VSGP centres, or an int M (K-means centres of X,
    ``seed``); ``alpha`` in (0, 1]: Power EP's power (1 = EP, FITC-EP; -> 0 = VFE);
    ``inducing_cov``: VSGP's local covariances ((M,) or (M, D, D); RBF kernel); ``jitter``
    on K_uu. ``ep_options`` are those of ``qpviz.fit(..., method="ep", inducing=Z)``
    (:class:`.ep.SiteOptions`: ``tol``, ``damping``, ``order``, ``parallel``, ``max_sweeps``,
    ``use_table``, ``init``, ``warn``, ``refresh``, ...; ``optimise``; the sweep order's ``seed``
    is ``sweep_seed`` here). Non-convergence: ``converged=False`` and a
    :class:`qpviz.inference.ep.ConvergenceWarning`, as for the dense prior.

    The posterior's ``likelihood`` is the untempered one (predictions are for the model);
    ``mean`` / ``var`` are h's marginals (:mod:`.sparse_prior`), ``state.f_var`` and
    ``predict_f(X)`` f's. ``diagnostics``: ``alpha``, ``M``, ``jitter``, the clipped / skipped site
    counts, ``n_negative_cond_var``, cavities and log Z~_n.
    """
    from qpviz.inference.sparse_prior import check_alpha  # noqa: PLC0415 - sparse code on demand

    check_alpha(alpha)
    if method not in ("ep", "qp"):
        raise ValueError(f"method must be 'ep' (Power EP) or 'qp' (its W2 projection), got {method!r}")
    if inducing is None:
        raise ValueError("give the inducing inputs: inducing=Z, an (M, D) array, or an int M (K-means centres of X)")
    if "sweep_seed" in ep_options:
        ep_options["seed"] = ep_options.pop("sweep_seed")
    optimise = ep_options.pop("optimise", False)
    options = dict(inducing=as_inducing(inducing, as_inputs(X), seed), alpha=alpha, inducing_cov=inducing_cov,
                   jitter=jitter, **ep_options)
    SiteOptions.check(method, options)
    return fit_sites(X, y, as_likelihood(likelihood), kernel, method, optimise, options)
