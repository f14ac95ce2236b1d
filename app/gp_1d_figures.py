"""The GP 1-D page's Bokeh figures, fed by ColumnDataSources that each refit replaces.

Nothing here reads widgets: :class:`GP1DFigures.show` draws what a ``GP1DModel`` holds.
"""
from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, Span
from bokeh.plotting import figure

from explorer_figures import COLOURS as EXPLORER_COLOURS
from explorer_figures import DrawnContent, EmptyExtent, legend_below, padded, set_data, style_figure
from followed_ranges import FollowedRanges
from colours import METHOD_COLOURS

__all__ = ["METHOD_COLOURS", "METHOD_LABELS", "DATA_COLOUR", "EXPLANATIONS", "GP1DFigures", "table_html"]

#: One colour per method on every page (Okabe-Ito, colour-blind safe); MCMC is a grey band.
METHOD_LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace", "mcmc": "MCMC (reference)"}
METHOD_DASHES = {"ep": "dashdot", "qp": "solid", "vb": "dashed", "laplace": "dotted", "mcmc": "solid"}
DATA_COLOUR = "#000000"
STEP_COLOUR = "#E69F00"
#: The posterior band before the step-through's last site update (after it: STEP_COLOUR).
BEFORE_COLOUR = "#56B4E9"
#: Gaussian methods (drawn as lines); MCMC is drawn as a shaded band.
LINE_METHODS = ("ep", "qp", "vb", "laplace")

#: Below each view: one or two sentences and its formula (KaTeX).
EXPLANATIONS = {
    "latent": (
        "Latent function f(x): each method's posterior mean with a band of +-2 standard deviations; the grey band "
        "is the MCMC reference. Each QP site keeps its tilted mean and takes the least-squares slope of the "
        "tilted quantiles, correlation x sigma_EP <= sigma_EP: narrower where tilted densities are skewed or truncated.",
        r"$$q(f_*)=\mathcal N\big(k_*^\top\alpha,\;k_{**}-k_*^\top(K+\tilde\Sigma)^{-1}k_*\big)$$",
    ),
    "predictive": (
        "Predictive: probability of y = +1 (labels), expected count (counts) or y +- 2 sd (real y); black "
        "points are the data. Click to add a point, click a point to remove it.",
        r"$$p(y_*\mid x_*)=\int p(y_*\mid f_*)\,q(f_*)\,df_*$$",
    ),
    "sites": (
        "Site precisions per data point: how much each observation pins down f there (0: no information). "
        "QP's sites are at least as precise as EP's where the tilted density is not Gaussian.",
        r"$$\tilde\tau_i=\sigma_i^{-2}-\tau_{-i},\qquad \tilde\nu_i=\mu_i\sigma_i^{-2}-\nu_{-i}$$",
    ),
    "trace": (
        "Convergence: the RMS change of the site parameters per sweep (log scale); the fit stops below 1e-6. "
        "During optimisation the lower plot shows the EP evidence climbing per L-BFGS-B step.",
        r"$$\Delta_t=\max\big(\mathrm{RMS}(\tilde\tau^{t}-\tilde\tau^{t-1}),\,\mathrm{RMS}(\tilde\nu^{t}-\tilde\nu^{t-1})\big)$$",
    ),
    "table": (
        "Per method: mean W2 distance of its Gaussian marginals to MCMC's (over the grid and the data points), "
        "and the log evidence (EP's eq. 4; VB's ELBO; Laplace's approximation).",
        r"$$W_2^2\big(\mathcal N(m_1,s_1^2),\mathcal N(m_2,s_2^2)\big)=(m_1-m_2)^2+(s_1-s_2)^2$$",
    ),
    "sd_ratio": (
        "Each method's latent sd divided by the MCMC reference's along x: above 1 the method is less certain than "
        "the reference, below 1 over-confident. The grey band is 1 ± twice the reference's own Monte Carlo error "
        "(1/sqrt(2 ESS) of an sd from ESS effective draws): ratios inside it cannot be told from 1.",
        r"$$r(x)=\frac{\sqrt{v_{\mathrm{method}}(x)}}{\sqrt{v_{\mathrm{MCMC}}(x)}},\qquad "
        r"\frac{\mathrm{se}(\hat s)}{s}\approx\frac1{\sqrt{2\,\mathrm{ESS}}}$$",
    ),
    "site": (
        "Step-through: the next site's cavity, its tilted density and their EP and QP Gaussians (the orange line on "
        "the plots marks this site). On the latent plot the orange dots and bars are the stepped posterior's "
        "q(f_i) = N(μ_i, σ_i²) at each data point (mean ± 2 sd); after a single-site step the dashed blue lines "
        "bound that posterior before the update, the orange band after it (± 2 sd at the data points), and the text under "
        "the plot says how the new site came about.",
        r"$$\hat p(f_i)\propto p(y_i\mid f_i)\,\mathcal N(f_i\mid \mu_{-i},\sigma^2_{-i})$$",
    ),
}


def _fmt(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.4g}"


def table_html(fits: dict) -> str:
    """The per-method table: W2 to MCMC (grid, data), evidence, sweeps, converged, seconds."""
    header = ["method", "W2 to MCMC (grid)", "W2 to MCMC (data)", "log evidence", "sweeps / iterations",
              "converged", "time (ms)"]
    rows = []
    for method, fit in fits.items():
        rows.append([METHOD_LABELS[method], _fmt(fit.w2_grid), _fmt(fit.w2_data), _fmt(fit.evidence),
                     str(fit.n_sweeps), fit.convergence() if fit.converged else f"<strong>{fit.convergence()}</strong>",
                     f"{1000 * fit.seconds:.0f}"])
    cells = lambda tag, row: "".join(f"<{tag}>{cell}</{tag}>" for cell in row)  # noqa: E731
    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table>"


def _empty(*names) -> dict:
    return {name: [] for name in names}


class GP1DFigures:
    """Latent, predictive, sites, convergence, optimisation and step-through figures."""

    def __init__(self):
        self.sources = {m: ColumnDataSource(_empty("x", "mean", "lower", "upper", "pred", "plo", "phi"))
                        for m in (*LINE_METHODS, "mcmc")}
        self.site_sources = {m: ColumnDataSource(_empty("x", "tau")) for m in LINE_METHODS}
        self.trace_sources = {m: ColumnDataSource(_empty("sweep", "change")) for m in LINE_METHODS}
        self.data = ColumnDataSource(_empty("x", "y", "shown"))
        self.optimisation = ColumnDataSource(_empty("step", "evidence"))
        self.step_state = ColumnDataSource(_empty("x", "mean", "lower", "upper"))
        self.site_curves = ColumnDataSource(_empty("x", "cavity", "tilted", "ep", "qp"))
        self.change_bands = {when: ColumnDataSource(_empty("x", "lower", "upper")) for when in ("before", "after")}
        self.ratio_sources = {m: ColumnDataSource(_empty("x", "ratio")) for m in LINE_METHODS}
        self.ratio_band = ColumnDataSource(_empty("x", "lower", "upper"))
        self.figures = {
            "latent": figure(title="Latent f: mean +- 2 sd per method", x_axis_label="x", y_axis_label="latent f(x)",
                             height=330, sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset,save"),
            # a click adds or removes a point through the figure's Tap event (app/gp_1d.py), which needs no
            # TapTool: that tool hit-tested and re-selected every glyph on each click, and its repaint kept
            # the browser from the server's answer for ~15 ms (click -> last change 46-90 ms, 32-50 without)
            "predictive": figure(title="Predictive", x_axis_label="x", y_axis_label="predictive", height=330,
                                 sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset,save"),
            "sites": figure(title="Site precisions per data point", x_axis_label="x",
                            y_axis_label="site precision tau_i", height=280, sizing_mode="stretch_width",
                            tools="pan,wheel_zoom,reset,save"),
            "trace": figure(title="Convergence: site change per sweep", x_axis_label="sweep",
                            y_axis_label="RMS site change", y_axis_type="log", height=280,
                            sizing_mode="stretch_width", tools="pan,wheel_zoom,reset,save"),
            "optimisation": figure(title="EP evidence per optimisation step", x_axis_label="L-BFGS-B step",
                                   y_axis_label="log Z_EP", height=220, sizing_mode="stretch_width",
                                   tools="pan,wheel_zoom,reset,save"),
            "sd_ratio": figure(title="Latent sd / MCMC's sd", x_axis_label="x", y_axis_label="sd ratio to MCMC",
                               height=280, sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset,save"),
            "site": figure(title="Step-through: the next site", x_axis_label="f_i", y_axis_label="density",
                           height=300, sizing_mode="stretch_width", tools="pan,wheel_zoom,reset,save"),
        }
        self._drawn = DrawnContent()  # unchanged sources send nothing to the browser
        self._draw()
        self.marks = [Span(dimension="height", line_color=STEP_COLOUR, line_width=2, visible=False, location=0.0)
                      for _ in range(2)]
        self.figures["latent"].add_layout(self.marks[0])
        self.figures["predictive"].add_layout(self.marks[1])
        #: every view ranged here, in the message that brings its data (FollowedRanges)
        self.ranges = {name: FollowedRanges(fig, log_y=name == "trace") for name, fig in self.figures.items()}
        self.follow_data()

    def _draw(self) -> None:
        latent, pred = self.figures["latent"], self.figures["predictive"]
        ref = self.sources["mcmc"]
        latent.varea("x", "lower", "upper", source=ref, fill_color=METHOD_COLOURS["mcmc"], fill_alpha=0.35,
                     legend_label=METHOD_LABELS["mcmc"])
        pred.varea("x", "plo", "phi", source=ref, fill_color=METHOD_COLOURS["mcmc"], fill_alpha=0.35,
                   legend_label=METHOD_LABELS["mcmc"])
        pred.line("x", "pred", source=ref, color="#666666", line_width=2, legend_label=METHOD_LABELS["mcmc"])
        self.renderers = {"mcmc": []}
        for m in LINE_METHODS:
            src, colour, label, dash = self.sources[m], METHOD_COLOURS[m], METHOD_LABELS[m], METHOD_DASHES[m]
            self.renderers[m] = [
                latent.line("x", "mean", source=src, color=colour, line_width=2.5, line_dash=dash, legend_label=label),
                latent.line("x", "lower", source=src, color=colour, line_width=1.2, line_dash=dash, legend_label=label),
                latent.line("x", "upper", source=src, color=colour, line_width=1.2, line_dash=dash, legend_label=label),
                pred.line("x", "pred", source=src, color=colour, line_width=2.5, line_dash=dash, legend_label=label),
                self.figures["sites"].scatter("x", "tau", source=self.site_sources[m], color=colour, size=6,
                                              marker="circle" if m != "qp" else "triangle", legend_label=label),
                self.figures["trace"].line("sweep", "change", source=self.trace_sources[m], color=colour,
                                           line_width=2, line_dash=dash, legend_label=label),
            ]
        latent.line("x", "mean", source=ref, color="#666666", line_width=2, legend_label=METHOD_LABELS["mcmc"])
        # before the update: a dashed outline (the band after it, filled, lies mostly on top of it)
        for edge in ("lower", "upper"):
            latent.line("x", edge, source=self.change_bands["before"], color=BEFORE_COLOUR, line_width=2,
                        line_dash="dashed", legend_label="before the last site update")
        latent.varea("x", "lower", "upper", source=self.change_bands["after"], fill_color=STEP_COLOUR, fill_alpha=0.3,
                     legend_label="after it")
        latent.scatter("x", "mean", source=self.step_state, color=STEP_COLOUR, size=6, legend_label="step-through q(f_i)")
        latent.segment("x", "lower", "x", "upper", source=self.step_state, color=STEP_COLOUR, line_alpha=0.35,
                       legend_label="step-through q(f_i)")
        pred.scatter("x", "shown", source=self.data, color=DATA_COLOUR, size=6, legend_label="data")
        self.figures["optimisation"].line("step", "evidence", source=self.optimisation, color=METHOD_COLOURS["ep"],
                                          line_width=2, legend_label="EP log evidence")
        self.figures["optimisation"].scatter("step", "evidence", source=self.optimisation, color=METHOD_COLOURS["ep"],
                                             size=6, legend_label="EP log evidence")
        ratio = self.figures["sd_ratio"]
        ratio.varea("x", "lower", "upper", source=self.ratio_band, fill_color=METHOD_COLOURS["mcmc"], fill_alpha=0.35,
                    legend_label="MCMC's own error (± 2 se)")
        ratio.add_layout(Span(dimension="width", location=1.0, line_color="#000000", line_dash="dashed", line_width=1.5))
        for m in LINE_METHODS:
            ratio.line("x", "ratio", source=self.ratio_sources[m], color=METHOD_COLOURS[m], line_width=2.5,
                       line_dash=METHOD_DASHES[m], legend_label=METHOD_LABELS[m])
        site = self.figures["site"]
        for key, colour, dash, label in (("cavity", EXPLORER_COLOURS["cavity"], "dashed", "cavity"),
                                         ("tilted", EXPLORER_COLOURS["tilted"], "solid", "tilted"),
                                         ("ep", METHOD_COLOURS["ep"], "dashdot", "EP (KL)"),
                                         ("qp", METHOD_COLOURS["qp"], "solid", "QP (W2)")):
            site.line("x", key, source=self.site_curves, color=colour, line_dash=dash, line_width=2.5, legend_label=label)
        # the optimisation and the step-through have no data until they are started
        self.extents = {name: EmptyExtent(self.figures[name]) for name in ("optimisation", "site")}
        self.extents["sd_ratio"] = EmptyExtent(self.figures["sd_ratio"], y=(0.8, 1.2))
        for fig in self.figures.values():
            legend_below(fig)
            fig.output_backend = "canvas"

    def show(self, model) -> None:
        """Draw the model's data and fits (methods not shown get empty sources)."""
        fits = model.fits
        for m, src in self.sources.items():
            fit = fits.get(m)
            if not self._drawn.changed(m, fit):
                continue
            if fit is None:
                set_data(src, _empty("x", "mean", "lower", "upper", "pred", "plo", "phi"))
                continue
            sd = np.sqrt(fit.var)
            set_data(src, {"x": fit.grid, "mean": fit.mean, "lower": fit.mean - 2 * sd, "upper": fit.mean + 2 * sd,
                           "pred": fit.predictive, "plo": fit.predictive_lower, "phi": fit.predictive_upper})
        x_data = model.X[:, 0]
        for m in LINE_METHODS:
            fit = fits.get(m)
            if not self._drawn.changed(("sites", m), fit, model.X):
                continue
            for renderer in self.renderers[m]:
                renderer.visible = fit is not None  # a hidden method's legend entry is greyed
            has_sites = fit is not None and fit.site_tau is not None and fit.site_tau.shape == x_data.shape
            # NaN-padded (PAD_TO): a click or one more sweep patches these sources in place
            set_data(self.site_sources[m], padded({"x": x_data if has_sites else [],
                                                    "tau": fit.site_tau if has_sites else []}))
            history = fit.history if fit is not None else []
            set_data(self.trace_sources[m], padded({"sweep": list(range(1, len(history) + 1)),
                                                    "change": [max(h, 1e-16) for h in history]}))
        binary = model.likelihood_object().support == "binary"
        label = next(iter(fits.values())).predictive_label if fits else "predictive"
        self.figures["predictive"].yaxis.axis_label = label
        self.figures["predictive"].title.text = f"Predictive: {label}, {model.y.size} data points"
        if self._drawn.changed("data", model.X, model.y, binary):
            set_data(self.data, padded({"x": x_data, "y": model.y, "shown": (model.y + 1) / 2 if binary else model.y}))
        self._show_optimisation(model)
        self._show_step(model)
        # every view but the sd ratios, which show_sd_ratio draws and ranges (once per redraw)
        self.follow_data([name for name in self.ranges if name != "sd_ratio"])

    def follow_data(self, names=None) -> None:
        """Range the views ``names`` (None: every view) over their data (sent with the data: see
        FollowedRanges)."""
        for name in self.ranges if names is None else names:
            self.ranges[name].follow()

    def show_sd_ratio(self, model) -> str:
        """Each method's latent sd over MCMC's along x (finite values only); returns the sentence
        reading it, or what to do to see it (plain text: the page escapes it)."""
        comparison = model.sd_comparison()
        for m, source in self.ratio_sources.items():
            if comparison is None or m not in comparison.ratios:
                set_data(source, _empty("x", "ratio"))
                continue
            x, ratio = comparison.finite(m, model.fits["mcmc"].grid)
            set_data(source, {"x": x, "ratio": ratio})
        self.extents["sd_ratio"].follow(comparison is not None)
        if comparison is None:
            set_data(self.ratio_band, _empty("x", "lower", "upper"))
            self.figures["sd_ratio"].title.text = "Latent sd / MCMC's sd: turn MCMC on"
            self.ranges["sd_ratio"].follow()
            if "mcmc" not in model.methods:
                return "Turn MCMC on (methods) to compare each method's latent sd with the reference's."
            if "mcmc" not in model.fits:
                return "The MCMC reference is running: the sd ratios appear when it is done."
            return "Show EP, QP, VB or Laplace beside MCMC to compare their latent sd with the reference's."
        grid = model.fits["mcmc"].grid
        lower, upper = comparison.band()
        set_data(self.ratio_band, {"x": [grid[0], grid[-1]], "lower": [lower, lower], "upper": [upper, upper]})
        self.figures["sd_ratio"].title.text = "Latent sd / MCMC's sd (1 = the reference)"
        self.ranges["sd_ratio"].follow()
        return comparison.sentence

    def show_optimisation(self, model) -> None:
        """The EP evidence per optimisation step, and the view's title."""
        self._show_optimisation(model)
        self.ranges["optimisation"].follow()

    def _show_optimisation(self, model) -> None:
        steps = model.optimisation
        set_data(self.optimisation, {"step": [s.iteration for s in steps], "evidence": [s.evidence for s in steps]})
        self.extents["optimisation"].follow(bool(steps))
        title = "EP evidence per optimisation step"
        if steps:
            title += f": {len(steps)} steps, log Z_EP = {steps[-1].evidence:.4f}"
            title += " (done)" if model.optimisation_done else " (running)"
        self.figures["optimisation"].title.text = title

    def show_step(self, model) -> None:
        """The step-through's state: its mark, the bands before and after the update, the site's densities."""
        self._show_step(model)
        self.follow_data()

    def _show_step(self, model) -> None:
        stepper, site = model.stepper, model.site
        for mark in self.marks:
            mark.visible = site is not None
            if site is not None:
                mark.location = site.x
        change = model.change if site is not None else None
        for when, source in self.change_bands.items():
            if change is None:
                set_data(source, _empty("x", "lower", "upper"))
                continue
            mean, var = (change.before_mean, change.before_var) if when == "before" else (change.after_mean, change.after_var)
            order = np.argsort(change.X, kind="stable")
            sd = np.sqrt(np.clip(var[order], 0.0, None))
            set_data(source, {"x": change.X[order], "lower": mean[order] - 2 * sd, "upper": mean[order] + 2 * sd})
        if stepper is None or site is None:
            set_data(self.step_state, _empty("x", "mean", "lower", "upper"))
            set_data(self.site_curves, _empty("x", "cavity", "tilted", "ep", "qp"))
            self.figures["site"].title.text = "Step-through: press 'site (n)' to start"
            self.extents["site"].follow(False)
            return
        self.extents["site"].follow(True)
        sd = np.sqrt(stepper.sweep.var)
        set_data(self.step_state, {"x": model.X[:, 0], "mean": stepper.sweep.mean, "lower": stepper.sweep.mean - 2 * sd,
                                   "upper": stepper.sweep.mean + 2 * sd})
        curves = site.densities
        set_data(self.site_curves, {k: curves[k] for k in ("x", "cavity", "tilted", "ep", "qp")} if curves
                 else _empty("x", "cavity", "tilted", "ep", "qp"))
        self.figures["site"].title.text = (
            f"Step-through ({stepper.method.upper()}, sweep {stepper.n_sweeps + 1}): site {site.index} at "
            f"x = {site.x:.3g}, y = {site.y:g}, cavity N({site.cavity_mean:.3g}, {site.cavity_var:.3g})")

    def style(self, projector: bool) -> None:
        for fig in self.figures.values():
            style_figure(fig, projector)
