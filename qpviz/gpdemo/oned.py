"""Computations of the "GP 1-D" page: every method's fit on a grid, distances to MCMC, a stepper.

* :func:`fit_methods`: EP, QP, VB, Laplace and MCMC fits of one data set; per method the latent
  mean and variance on a grid, the predictive (probability, rate or y +- 2 std), the sites,
  the convergence trace and the evidence (:class:`MethodFit`);
* :func:`w2_marginals` / :func:`add_reference_distances`: the 2-Wasserstein distance of each
  method's Gaussian marginals to the MCMC reference's, W2^2 = (m_1 - m_2)^2 + (s_1 - s_2)^2;
* :class:`SiteStepper`: EP or QP one site update (or one sweep) at a time, with the current
  site's cavity, tilted density and its EP and QP projections; :meth:`SiteStepper.step_site_change`
  also says what one update did (:class:`SiteChange`: the posterior before and after, the cavity,
  the tilted moments, the projection and the new site, in two sentences);
* :func:`explorer_query`: the Projection Explorer's URL query for one site.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import numpy as np

import qpviz
from qpviz import explorer
from qpviz.inference import sites
from qpviz.inference.dense import DensePrior
from qpviz.inference.ep import default_sites
from qpviz.inference.sweep import rms
from qpviz.kernels import RBF, Matern32, Matern52
from qpviz.likelihoods.base import Likelihood

__all__ = ["KERNELS", "METHODS", "MethodFit", "make_kernel", "make_grid", "predictive_band", "fit_method",
           "fit_methods", "w2_marginals", "add_reference_distances", "SiteView", "SiteChange", "SiteStepper", "explorer_query",
           "check_data", "Cancelled", "sample_chains", "mcmc_reference", "MCMC_DEFAULTS"]

#: The kernels the page offers, by name.
KERNELS = {"RBF": RBF, "Matern32": Matern32, "Matern52": Matern52}
#: The methods the page can overlay (MCMC is the reference).
METHODS = ("ep", "qp", "vb", "laplace", "mcmc")
#: Grid points of the latent and predictive curves.
GRID_POINTS = 200
#: Largest kernel variance or lengthscale the page accepts (typed values; the sliders stop at 200 and 30).
MAX_HYPERPARAMETER = 1e4


def make_kernel(name: str, variance: float, lengthscale: float):
    """A kernel of the page: ``name`` in :data:`KERNELS`, hyper-parameters in (0, MAX_HYPERPARAMETER]
    (a ValueError says what to change otherwise)."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}; got {name!r}")
    for label, value in (("kernel variance", variance), ("lengthscale", lengthscale)):
        number = explorer.parse_number(value, label)
        if not number > 0:
            raise ValueError(f"the {label} must be > 0 (e.g. 1.0); got {value!r}")
        if number > MAX_HYPERPARAMETER:  # e.g. 1e308: K overflows and the fit fails without naming the input
            raise ValueError(f"the {label} must be at most {MAX_HYPERPARAMETER:g} (e.g. 1.0); got {value!r}")
    return KERNELS[name](variance=float(variance), lengthscale=float(lengthscale))


def check_data(X, y, likelihood: Likelihood) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, 1), y (n,)) as float arrays if the likelihood accepts them; else a ValueError
    saying what to change (non-finite inputs, wrong labels or counts, one class only)."""
    X = np.asarray(X, float).reshape(-1, 1)
    y = np.asarray(y, float).ravel()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"need one y per x; got {X.shape[0]} x and {y.shape[0]} y")
    if X.shape[0] < 2:
        raise ValueError("need at least 2 points; add points or pick a preset")
    if not np.all(np.isfinite(X)) or not np.all(np.isfinite(y)):
        raise ValueError("every x and y must be a finite number; remove the NaN / infinite entries")
    y = likelihood.check_y(y)
    if likelihood.support == "binary" and np.unique(y).size < 2:
        raise ValueError("binary classification needs both classes (-1 and +1); add a point of the other class")
    return X, y


def make_grid(X, points: int = GRID_POINTS, pad: float = 0.15) -> np.ndarray:
    """``points`` inputs spanning the data's range widened by ``pad`` of its width on each side, (points, 1)."""
    lo, hi = float(np.min(X)), float(np.max(X))
    width = max(hi - lo, 1.0)
    return np.linspace(lo - pad * width, hi + pad * width, points)[:, None]


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


@dataclass
class SiteView:
    """The site a stepper updates next: its index, observation, cavity and the explorer's curves."""

    index: int
    x: float
    y: float
    cavity_mean: float
    cavity_var: float
    densities: dict | None  #: explorer.densities (cavity, tilted, EP and QP Gaussians on one grid)
    ep_var: float
    qp_var: float
    message: str = ""  #: why the densities are missing, if they are


def _normal(mean: float, var: float) -> str:
    """"N(m, s^2)" with s = sqrt(var), 3 significant digits."""
    return f"N({mean:.3g}, {math.sqrt(var):.3g}²)"


@dataclass
class SiteChange:
    """What one site update did (:meth:`SiteStepper.step_site_change`).

    Before the update the posterior marginal at x_i is q(f_i) = N(``before_mean[i]``,
    ``before_var[i]``); dividing the old site out leaves the cavity N(``cavity_mean``,
    ``cavity_var``); the tilted density p(y_i | f_i) N(f_i | cavity) / Z has moments
    (``tilted_mean``, ``tilted_var``); ``method``'s projection of it is N(``projected_mean``,
    ``projected_var``) (EP: the tilted moments; QP: the tilted mean, the W2 variance); the new
    site (``site_tau``, ``site_nu``) = projection / cavity in natural parameters (QP paper eq. 6),
    and after the update q(f_i) is the projection. ``before_*`` / ``after_*`` hold the posterior
    marginals at every data point (the whole fit moves, not only x_i). ``status``: "updated",
    "clipped" (a negative site precision set to 0) or "skipped" (no proper cavity, or no projection).
    """

    index: int
    x: float
    y: float
    method: str
    X: np.ndarray  #: (N,) the data inputs
    before_mean: np.ndarray
    before_var: np.ndarray
    after_mean: np.ndarray
    after_var: np.ndarray
    old_tau: float
    old_nu: float
    site_tau: float
    site_nu: float
    cavity_mean: float = math.nan
    cavity_var: float = math.nan
    tilted_mean: float = math.nan
    tilted_var: float = math.nan
    projected_mean: float = math.nan
    projected_var: float = math.nan
    status: str = "updated"

    def sentences(self) -> tuple[str, str]:
        """Two sentences from the numbers: how the new site came about (tilted, projection,
        divided by the cavity) and how the posterior at x_i (and elsewhere) moved."""
        i, name = self.index, self.method.upper()
        where = f"Site {i} at x = {self.x:.3g} (y = {self.y:g})"
        if self.status == "skipped":
            reason = ("its cavity has precision <= 0" if not self.cavity_var > 0
                      else "the projection of its tilted density failed")
            first = f"{where}: {reason}, so the site was kept (τ̃ = {self.site_tau:.3g}, ν̃ = {self.site_nu:.3g})."
        else:
            if self.method == "ep":
                matched = "EP matched both"
            else:
                matched = (f"QP kept the mean and took sd {math.sqrt(self.projected_var):.3g} "
                           "(the tilted quantiles' slope)")
            if self.status == "clipped":
                site = f"a site of precision < 0, clipped to τ̃ = 0 (ν̃ = {self.site_nu:.3g})"
            elif self.site_tau > 0:
                site = (f"the site {_normal(self.site_nu / self.site_tau, 1.0 / self.site_tau)} "
                        f"(τ̃ = {self.site_tau:.3g}, ν̃ = {self.site_nu:.3g})")
            else:
                site = f"a site of precision τ̃ = {self.site_tau:.3g} <= 0 (ν̃ = {self.site_nu:.3g}): not a normalisable Gaussian"
            first = (f"{where}: the tilted q(f) has mean {self.tilted_mean:.3g}, sd {math.sqrt(self.tilted_var):.3g}; "
                     f"{matched}, and dividing by the cavity {_normal(self.cavity_mean, self.cavity_var)} gives {site}.")
        second = (f"The {name} posterior at x = {self.x:.3g} moved from {self.before_mean[i]:.3g} ± "
                  f"{math.sqrt(self.before_var[i]):.3g} to {self.after_mean[i]:.3g} ± {math.sqrt(self.after_var[i]):.3g} "
                  "(mean ± sd)")
        others = np.arange(self.X.size) != i
        if np.any(others):
            shift = np.abs(self.after_mean - self.before_mean)[others]
            shrink = np.abs(np.sqrt(self.after_var) - np.sqrt(self.before_var))[others]
            j = int(np.flatnonzero(others)[np.argmax(shift)])
            second += (f"; at the other data points the mean moved by up to {shift.max():.3g} (x = {self.X[j]:.3g}), "
                       f"the sd by up to {shrink.max():.3g}")
        return first, second + "."


class SiteStepper:
    """EP (``method="ep"``) or QP (``"qp"``) run one site update, or one sweep, at a time.

    Sequential sites in the fixed order 0..N-1 from the likelihood's initial sites, through the
    prior's own sweep (``prior.sequential_sweep`` on a one-site order), so full sweeps follow
    ``qpviz.fit(..., method, parallel=False, order="fixed")`` (same site rule, same rank-one
    updates; the state is conditioned afresh after each sweep). ``history`` is the site change
    per completed sweep, max(RMS(d tau), RMS(d nu)), as in the fit's ``history``.
    """

    def __init__(self, X, y, likelihood: Likelihood, kernel, method: str = "ep", damping: float = 1.0):
        if method not in ("ep", "qp"):
            raise ValueError(f"the stepper runs 'ep' or 'qp'; got {method!r}")
        self.X, self.y = check_data(X, y, likelihood)
        self.likelihood, self.method = likelihood, method
        self.prior = DensePrior(kernel, self.X)
        self.rule = sites.SiteRule.build(method, likelihood, damping)
        self.reset()

    def reset(self) -> None:
        tau, nu = default_sites(self.likelihood, self.y)
        #: the sweep state (sites ``tau``, ``nu`` and the posterior ``mean``, ``var``), updated in place
        self.sweep = self.prior.start_sweeps(self.prior.condition(tau, nu))
        self._sweep_start = (self.sweep.tau.copy(), self.sweep.nu.copy())
        self.position = 0  #: the next site to update
        self.n_sweeps = 0
        self.history: list[float] = []

    def _update(self, order: np.ndarray) -> None:
        y = np.ascontiguousarray(self.y, dtype=np.float64)
        self.prior.sequential_sweep(self.sweep, order, self.rule, y)
        self.position += order.size
        if self.position == self.prior.n:
            self._finish_sweep()

    def _finish_sweep(self) -> None:
        tau_prev, nu_prev = self._sweep_start
        tau, nu = self.sweep.tau.copy(), self.sweep.nu.copy()
        self.history.append(max(rms(tau - tau_prev), rms(nu - nu_prev)))
        self.sweep = self.prior.start_sweeps(self.prior.condition(tau, nu))  # fresh factorisation
        self._sweep_start = (tau, nu)
        self.position = 0
        self.n_sweeps += 1

    def step_site(self) -> int:
        """Update the next site; return its index."""
        index = self.position
        self._update(np.array([index], dtype=np.int64))
        return index

    def step_site_change(self) -> SiteChange:
        """Update the next site and say what changed (:class:`SiteChange`). The tilted moments
        and the projection are computed by :func:`qpviz.project` from the same cavity the update
        uses; the site and the posterior after it are the stepper's own."""
        i = self.position
        before_mean, before_var = self.sweep.mean.copy(), self.sweep.var
        old_tau, old_nu = float(self.sweep.tau[i]), float(self.sweep.nu[i])
        cavity_mean, cavity_var = self.cavity(i)
        moments = {}
        if cavity_var > 0 and math.isfinite(cavity_mean):
            y = float(self.y[i])
            try:
                for method in {"ep", self.method}:
                    fitted = qpviz.project(self.likelihood, y, cavity_mean, cavity_var, method=method)
                    moments[method] = (float(fitted.mean), float(fitted.var))
            except (ValueError, ArithmeticError):
                moments = {}
        self._update(np.array([i], dtype=np.int64))
        tau, nu = float(self.sweep.tau[i]), float(self.sweep.nu[i])
        change = SiteChange(i, float(self.X[i, 0]), float(self.y[i]), self.method, self.X[:, 0].copy(), before_mean,
                            before_var, self.sweep.mean.copy(), self.sweep.var, old_tau, old_nu, tau, nu,
                            cavity_mean, cavity_var)
        if moments:
            change.tilted_mean, change.tilted_var = moments["ep"]
            change.projected_mean, change.projected_var = moments[self.method]
        if (tau, nu) == (old_tau, old_nu) and not (cavity_var > 0 and moments):
            change.status = "skipped"
        elif tau == 0.0 and moments and change.projected_var > cavity_var:
            change.status = "clipped"
        return change

    def step_sweep(self) -> None:
        """Update every remaining site of the current sweep (a whole sweep from its start)."""
        self._update(np.arange(self.position, self.prior.n, dtype=np.int64))

    def cavity(self, index: int | None = None) -> tuple[float, float]:
        """(mean, var) of site ``index``'s cavity (default: the next site): q_\\i(f_i) = q(f_i) / t_i(f_i)."""
        i = self.position if index is None else int(index)
        var = float(self.sweep.cov[i, i])
        tau_c = 1.0 / var - float(self.sweep.tau[i])
        nu_c = float(self.sweep.mean[i]) / var - float(self.sweep.nu[i])
        return (nu_c / tau_c, 1.0 / tau_c) if tau_c > 0 else (math.nan, math.nan)

    def site_view(self, index: int | None = None) -> SiteView:
        """The next site (or ``index``): cavity, tilted density and EP / QP projections (the explorer's curves)."""
        i = self.position if index is None else int(index)
        m, v = self.cavity(i)
        y = float(self.y[i])
        view = SiteView(i, float(self.X[i, 0]), y, m, v, None, math.nan, math.nan)
        if not (v > 0 and math.isfinite(m)):
            view.message = f"site {i} has no proper cavity (precision <= 0): it is skipped"
            return view
        try:
            ep = qpviz.project(self.likelihood, y, m, v, method="ep")
            qp = qpviz.project(self.likelihood, y, m, v, method="qp")
            view.ep_var, view.qp_var = float(ep.var), float(qp.var)
            view.densities = explorer.densities(self.likelihood, y, m, math.sqrt(v), ep, qp)
        except (ValueError, ArithmeticError) as exc:
            view.message = f"site {i}: the projection could not be drawn ({exc})"
        return view


def explorer_query(likelihood: Likelihood, y: float, cavity_mean: float, cavity_var: float) -> tuple[str, str]:
    """(URL query, note) that opens one site in the Projection Explorer: its likelihood (``lik``
    and each parameter control's key), y (``label``, ``count`` or ``y``) and cavity (``m``, ``s``).

    The explorer's sliders span m in [-8, 8] and s in [0.05, 8]: a cavity outside is clipped and
    the note says so.
    """
    query: dict[str, object] = {"lik": likelihood.name}
    for control in explorer.parameter_controls(likelihood.name):
        value = control.value_for(likelihood.params)
        if value is not None:
            query[control.key] = value
    if likelihood.support == "binary":
        query["label"] = float(y)
    elif likelihood.support == "count":
        query["count"] = int(y)
    else:
        query["y"] = float(y)
    s = math.sqrt(cavity_var)
    m_lo, m_hi = explorer.CAVITY_MEAN_SLIDER
    s_lo, s_hi = explorer.CAVITY_STD_SLIDER
    m_shown, s_shown = min(max(cavity_mean, m_lo), m_hi), min(max(s, s_lo), s_hi)
    note = ""
    if (m_shown, s_shown) != (cavity_mean, s):
        note = (f"the cavity N({cavity_mean:.3g}, {s:.3g}^2) lies outside the explorer's sliders "
                f"(m in [{m_lo:g}, {m_hi:g}], s in [{s_lo:g}, {s_hi:g}]); it opens at m = {m_shown:.3g}, s = {s_shown:.3g}")
    query.update(m=round(m_shown, 4), s=round(s_shown, 4))
    return urlencode(query), note


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
