"""Computations of the "GP 1-D" page: every method's fit on a grid, distances to MCMC, a stepper.

* :func:`fit_methods`: EP, QP, VB, Laplace and MCMC fits of one data set; per method the latent
  mean and variance on a grid, the predictive (probability, rate or y +- 2 std), the sites,
  the convergence trace and the evidence (:class:`MethodFit`);
* :func:`w2_marginals` / :func:`add_reference_distances`: the 2-Wasserstein distance of each
  method's Gaussian marginals to the MCMC reference's, W2^2 = (m_1 - m_2)^2 + (s_1 - s_2)^2;
* :func:`optimise_evidence`: the kernel's hyper-parameters by EP's evidence, step by step;
  :func:`mcmc_reference`: the MCMC reference on the same grid.

The page's inputs (kernels, data checks, the grid) are in :mod:`.oned_inputs`, its site-by-site
stepper (:class:`SiteStepper`, :func:`explorer_query`) in :mod:`.site_stepper`; both are
importable from here too.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

import qpviz
from qpviz.gpdemo.oned_inputs import (GRID_POINTS, KERNELS, MAX_HYPERPARAMETER, METHODS, check_data, make_grid,
                                      make_kernel)
from qpviz.gpdemo.site_stepper import SiteChange, SiteStepper, SiteView, explorer_query
from qpviz.inference.dense import DensePrior
from qpviz.likelihoods.base import Likelihood

__all__ = ["KERNELS", "METHODS", "MethodFit", "make_kernel", "make_grid", "predictive_band", "fit_method",
           "fit_methods", "w2_marginals", "add_reference_distances", "SiteView", "SiteChange", "SiteStepper", "explorer_query",
           "check_data", "Cancelled", "sample_chains", "mcmc_reference", "MCMC_DEFAULTS", "GRID_POINTS",
           "MAX_HYPERPARAMETER"]


#: what the predictive curve shows, by the likelihood's support
BAND_LABELS = {"binary": "p(y = +1 | x)", "count": "expected count E[y | x]", "real": "y: mean +- 2 sd"}


def predictive_band(likelihood: Likelihood, mean, var) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(centre, lower, upper, label) of the predictive distribution at latent marginals N(mean, var):
    :meth:`qpviz.Likelihood.predictive_band` (binary: p(y = +1), no band; counts: E[y] with the
    rate over the latent mean +- 2 sd; real: E[y] +- 2 sd[y]) and the label of its support."""
    centre, lower, upper = likelihood.predictive_band(mean, var)
    return centre, lower, upper, BAND_LABELS[likelihood.support]


@dataclass
class MethodFit:
    """One method's fit, as the page draws it."""

    method: str
    grid: np.ndarray  #: (G,) inputs of the curves
    mean: np.ndarray  #: latent mean on the grid
    var: np.ndarray  #: latent variance on the grid
    predictive: np.ndarray  #: predictive centre on the grid (probability, rate or y)
    predictive_lower: np.ndarray
    predictive_upper: np.ndarray
    predictive_label: str
    train_mean: np.ndarray  #: latent marginals at the data points
    train_var: np.ndarray
    site_tau: np.ndarray | None  #: site precisions (None for MCMC)
    site_nu: np.ndarray | None
    history: list = field(default_factory=list)  #: site / iterate change per sweep
    evidence: float = math.nan  #: log marginal likelihood (NaN for MCMC)
    converged: bool = True
    n_sweeps: int = 0
    seconds: float = 0.0
    w2_grid: float = math.nan  #: mean W2 to the MCMC marginals over the grid
    w2_data: float = math.nan  #: mean W2 to the MCMC marginals over the data points
    rhat: float = math.nan  #: MCMC: max split R-hat over the latents at the data (NaN otherwise)
    ess: float = math.nan  #: MCMC: min bulk effective sample size over the same
    note: str = ""  #: MCMC: why it is not converged, or why it stopped early
    meaning: str = ""  #: MCMC: what the reference stands for when it is not simply f | y (:data:`EVEN_REFERENCE_NOTE`)

    def convergence(self) -> str:
        """The table's "converged" cell: "yes" / "no", and for MCMC its diagnostics, e.g.
        "converged (R-hat 1.003, ESS 812, 0.4 s)" or "not converged (R-hat 1.3, ESS 12, 0.4 s): why"."""
        if self.method != "mcmc":
            return "yes" if self.converged else "no"
        from qpviz.inference.mcmc import convergence_status

        return convergence_status(self.converged, self.rhat, self.ess, self.seconds, self.note)


_WARN_OPTION = {"ep": {"warn": False}, "qp": {"warn": False}, "vb": {"warn": False}, "laplace": {"warn": False}}


def fit_method(X, y, likelihood: Likelihood, kernel, method: str, grid=None, **options) -> MethodFit:
    """Fit one method and evaluate it on ``grid`` (default :func:`make_grid`). Non-convergence
    is reported in ``converged`` (no warning)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    grid = make_grid(X) if grid is None else np.asarray(grid, float).reshape(-1, 1)
    if method == "mcmc":
        return mcmc_reference(X, y, likelihood, kernel, grid, **options)
    start = time.perf_counter()
    post = qpviz.fit(X, y, likelihood, kernel, method=method, **{**_WARN_OPTION.get(method, {}), **options})
    mean, var = post.predict_f(grid)
    centre, lower, upper, label = predictive_band(likelihood, mean, var)
    tau = getattr(post, "site_precision", None)
    nu = getattr(post, "site_nu", None)
    return MethodFit(
        method=method, grid=grid[:, 0], mean=mean, var=var, predictive=centre, predictive_lower=lower,
        predictive_upper=upper, predictive_label=label, train_mean=np.asarray(post.mean, float).copy(),
        train_var=np.asarray(post.var, float).copy(),
        site_tau=None if tau is None else np.array(tau, float), site_nu=None if nu is None else np.array(nu, float),
        history=[float(h) for h in post.history], evidence=float(post.log_marginal_likelihood),
        converged=bool(post.converged), n_sweeps=int(post.n_sweeps), seconds=time.perf_counter() - start,
    )


def fit_methods(X, y, likelihood: Likelihood, kernel, methods=("ep", "qp"), grid=None, options=None,
                reference: MethodFit | None = None) -> dict[str, MethodFit]:
    """:func:`fit_method` for each of ``methods`` on one grid (``options``: method -> fit options),
    then the W2 distances to the MCMC fit (from ``methods`` or ``reference``)."""
    X, y = check_data(X, y, likelihood)
    grid = make_grid(X) if grid is None else np.asarray(grid, float).reshape(-1, 1)
    options = options or {}
    fits = {m: fit_method(X, y, likelihood, kernel, m, grid, **options.get(m, {})) for m in methods}
    ref = fits.get("mcmc", reference)
    if ref is not None:
        add_reference_distances(fits, ref)
    return fits


def w2_marginals(mean_a, var_a, mean_b, var_b) -> np.ndarray:
    """W2(N(m_a, v_a), N(m_b, v_b)) = sqrt((m_a - m_b)^2 + (sqrt v_a - sqrt v_b)^2), elementwise."""
    dm = np.asarray(mean_a, float) - np.asarray(mean_b, float)
    ds = np.sqrt(np.asarray(var_a, float)) - np.sqrt(np.asarray(var_b, float))
    return np.sqrt(dm * dm + ds * ds)


def add_reference_distances(fits: dict[str, MethodFit], reference: MethodFit) -> None:
    """Set each fit's mean W2 to ``reference`` over the grid and over the data points (in place);
    the two must share the grid and the data."""
    for fit in fits.values():
        if fit.grid.shape != reference.grid.shape or not np.allclose(fit.grid, reference.grid):
            continue  # a reference of other data / another grid says nothing about this fit
        fit.w2_grid = float(np.mean(w2_marginals(fit.mean, fit.var, reference.mean, reference.var)))
        if fit.train_mean.shape == reference.train_mean.shape:
            fit.w2_data = float(np.mean(w2_marginals(fit.train_mean, fit.train_var, reference.train_mean,
                                                     reference.train_var)))


class Cancelled(Exception):
    """A long job (MCMC, optimisation) was cancelled from the page."""


@dataclass
class OptimisationStep:
    """One L-BFGS-B iterate of :func:`optimise_evidence`: the EP evidence and the hyper-parameters."""

    iteration: int
    evidence: float
    params: dict


def optimise_evidence(X, y, likelihood: Likelihood, kernel, on_step=None, cancel=None, max_iter: int = 50):
    """Maximise EP's log evidence (QP paper eq. 4, Alg. 1 line 15) over the kernel's log
    hyper-parameters by L-BFGS-B with the analytic gradient 1/2 tr((alpha alpha^T - W) dK/d log theta)
    (the posterior state's ``grad_log_marginal``), warm-starting each EP run from the last sites.

    ``on_step(OptimisationStep)`` is called at the start and after every iterate (the page
    streams the evidence climbing); ``cancel`` (a ``threading.Event``) stops the run with
    :class:`Cancelled` at the next EP run. Returns (fitted kernel, list of steps).
    """
    from scipy import optimize

    from qpviz import config
    from qpviz.inference.ep import run_sites

    X, y = check_data(X, y, likelihood)
    prior = DensePrior(kernel, X)
    bounds = [(math.log(config.HYPER_BOUNDS[0]), math.log(config.HYPER_BOUNDS[1]))] * len(kernel.param_names)
    warm = {"sites": None, "last": (math.nan, None)}
    steps: list[OptimisationStep] = []

    def loss(theta):
        if cancel is not None and cancel.is_set():
            raise Cancelled("optimisation cancelled")
        trial = prior.with_kernel(kernel.with_log_params(theta))
        fit = run_sites(trial, likelihood, y, "ep", init=warm["sites"], warn=False)
        if not fit.converged or not np.isfinite(fit.log_marginal_likelihood):
            warm["sites"] = None
            return 1e300, np.zeros_like(theta)
        warm["sites"] = (fit.tau, fit.nu)
        warm["last"] = (fit.log_marginal_likelihood, theta.copy())
        return -fit.log_marginal_likelihood, -fit.state.grad_log_marginal()

    def record(theta):
        value, at = warm["last"]
        if at is None or not np.array_equal(at, theta):
            value = -loss(theta)[0]
        steps.append(OptimisationStep(len(steps), float(value), kernel.with_log_params(theta).params))
        if on_step is not None:
            on_step(steps[-1])

    theta0 = np.clip(kernel.log_params(), bounds[0][0], bounds[0][1])
    record(theta0)
    out = optimize.minimize(loss, theta0, jac=True, method="L-BFGS-B", bounds=bounds, callback=record,
                            options={"maxiter": int(max_iter)})
    return kernel.with_log_params(out.x), steps


#: Default MCMC reference settings: 4 chains of 1000 draws, every 20th transition after 1000.
#: Every 10th left the step (eps = 0) preset at R-hat 1.0126 for seed 5; with every 20th, all
#: presets but Poisson-square pass R-hat < 1.01 and ESS >= 400 at N = 60 in about 1 s each
#: (benchmarks/mcmc_reference_check.py).
MCMC_DEFAULTS = {"chains": 4, "n_samples": 1000, "burn_in": 1000, "thin": 20}
#: The MCMC reference of a likelihood even in f (``Likelihood.even_in_f``; qpviz.inference.mcmc).
EVEN_REFERENCE_NOTE = ("the likelihood is even in f (p(y | f) = p(y | -f)): the data identify f only up to sign, so "
                       "the reference mixes over the sign patterns between zero counts and its latent mean is near 0 "
                       "where the sign is open; compare the size |f| and the rate f^2")


def sample_chains(prior, likelihood: Likelihood, y, chains: int, n_samples: int, burn_in: int, thin: int,
                  on_progress=None, cancel=None, time_budget: float | None = None):
    """:func:`qpviz.inference.mcmc.run_chains`: ``chains`` elliptical-slice chains around EP's
    posterior, started inside the likelihood's support, each ``n_samples`` kept after ``burn_in``,
    thinned by ``thin``, with split R-hat and bulk ESS (a :class:`~qpviz.inference.mcmc.ChainSet`;
    ``list(result.samples)`` is one (n_samples, N) array per chain). After each chain
    ``on_progress(done, chains)`` is called; ``cancel`` (a ``threading.Event``) is checked every
    few hundred transitions (:class:`Cancelled`); sampling stops after ``time_budget`` seconds
    (default :data:`qpviz.inference.mcmc.TIME_BUDGET`) and says so."""
    from qpviz.inference import mcmc

    budget = mcmc.TIME_BUDGET if time_budget is None else time_budget
    try:
        return mcmc.run_chains(prior, likelihood, y, chains, n_samples, burn_in, thin, on_progress=on_progress,
                               cancel=cancel, time_budget=budget)
    except mcmc.Cancelled as exc:
        raise Cancelled(str(exc)) from None


def mcmc_reference(X, y, likelihood: Likelihood, kernel, grid=None, chains: int = MCMC_DEFAULTS["chains"],
                   n_samples: int = MCMC_DEFAULTS["n_samples"], burn_in: int = MCMC_DEFAULTS["burn_in"],
                   thin: int = MCMC_DEFAULTS["thin"], on_progress=None, cancel=None,
                   time_budget: float | None = None) -> MethodFit:
    """The MCMC reference as a :class:`MethodFit`: :func:`sample_chains` pooled (progress, cancel
    and time budget as there); ``converged``, ``rhat``, ``ess`` and ``note`` carry its diagnostics."""
    from qpviz.inference.posterior import SamplePosterior

    X, y = check_data(X, y, likelihood)
    grid = make_grid(X) if grid is None else np.asarray(grid, float).reshape(-1, 1)
    prior = DensePrior(kernel, X)
    start = time.perf_counter()
    chains_run = sample_chains(prior, likelihood, y, chains, n_samples, burn_in, thin, on_progress, cancel, time_budget)
    samples = chains_run.samples.reshape(-1, chains_run.samples.shape[2])
    pooled = SamplePosterior(prior, likelihood, y, samples, chains_run.info)
    mean, var = pooled.predict_f(grid)
    centre, lower, upper, label = predictive_band(likelihood, mean, var)
    return MethodFit("mcmc", grid[:, 0], mean, var, centre, lower, upper, label, pooled.mean, pooled.var, None, None,
                     [], math.nan, chains_run.converged, pooled.n_sweeps, time.perf_counter() - start,
                     rhat=chains_run.rhat, ess=chains_run.ess, note=chains_run.note,
                     meaning=EVEN_REFERENCE_NOTE if likelihood.even_in_f else "")
