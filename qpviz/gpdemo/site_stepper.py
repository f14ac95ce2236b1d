"""The "GP 1-D" page's stepper: EP or QP one site update (or one sweep) at a time.

:class:`SiteStepper` runs the sites in a fixed order with the current site's cavity, tilted
density and its EP and QP projections (:class:`SiteView`); :meth:`SiteStepper.step_site_change`
also says what one update did (:class:`SiteChange`: the posterior before and after, the cavity,
the tilted moments, the projection and the new site, in two sentences); :func:`explorer_query`
is the Projection Explorer's URL query for one site.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np

import qpviz
from qpviz.explorer.inputs import CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER, parameter_controls
from qpviz.explorer.views import densities
from qpviz.gpdemo.oned_inputs import check_data
from qpviz.inference import sites
from qpviz.inference.dense import DensePrior
from qpviz.inference.ep import default_sites
from qpviz.inference.sweep import rms
from qpviz.likelihoods.base import Likelihood

__all__ = ["SiteView", "SiteChange", "SiteStepper", "explorer_query"]


@dataclass
class SiteView:
    """The site a stepper updates next: its index, observation, cavity and the explorer's curves."""

    index: int
    x: float
    y: float
    cavity_mean: float
    cavity_var: float
    densities: dict | None  #: densities (cavity, tilted, EP and QP Gaussians on one grid)
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
            view.densities = densities(self.likelihood, y, m, math.sqrt(v), ep, qp)
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
    for control in parameter_controls(likelihood.name):
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
    m_lo, m_hi = CAVITY_MEAN_SLIDER
    s_lo, s_hi = CAVITY_STD_SLIDER
    m_shown, s_shown = min(max(cavity_mean, m_lo), m_hi), min(max(s, s_lo), s_hi)
    note = ""
    if (m_shown, s_shown) != (cavity_mean, s):
        note = (f"the cavity N({cavity_mean:.3g}, {s:.3g}^2) lies outside the explorer's sliders "
                f"(m in [{m_lo:g}, {m_hi:g}], s in [{s_lo:g}, {s_hi:g}]); it opens at m = {m_shown:.3g}, s = {s_shown:.3g}")
    query.update(m=round(m_shown, 4), s=round(s_shown, 4))
    return urlencode(query), note
