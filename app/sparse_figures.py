"""The Sparse page's Bokeh figures: the fits with their pseudo-inputs (draggable handles on a strip
at the bottom of the plot), and the Power-EP evidence over alpha. Nothing here reads widgets: :meth:`SparseFigures.show`
draws what a ``SparseModel`` holds.
"""
from __future__ import annotations

import numpy as np
from bokeh.core.properties import value
from bokeh.models import BoxAnnotation, ColumnDataSource, Legend, LegendItem, PointDrawTool, Range1d
from bokeh.plotting import figure

from colours import SPARSE_COLOURS
from explorer_figures import legend_below, set_data, style_figure
from qpviz.gpdemo import sparse_demo

__all__ = ["SparseFigures", "EXPLANATIONS", "DATA_COLOUR", "HANDLE_Y", "numbers_html"]

DATA_COLOUR = "#E69F00"
DASHES = {"exact": "solid", "fitc": "dashed", "vfe": "dotted", "dtc": "dotdash", "pitc": "dashdot", "power_ep": "solid"}
#: The strip of handles: the bottom STRIP_TOP of the fits plot (its own y range "strip", 0 to 1 over
#: the plot's height), kept free of the fits by the plot's y range; the handles sit at HANDLE_Y.
STRIP_TOP = 0.1
HANDLE_Y = 0.05

#: Below each view: one or two sentences and its formula (KaTeX).
EXPLANATIONS = {
    "fits": (
        "Each method's latent mean with +-2 sd (bands light, lines in the method's colour) on the same pseudo-inputs "
        "Z, drawn as handles on the grey strip at the bottom: drag one sideways (the fits follow when you let go), tap "
        "the plot to add one, tap one and press Backspace to remove it. The M slider restarts Z at K-means centres of the data.",
        r"$$\begin{gathered}q(f_*)=\mathcal N\big(Q_{*f}(Q_{ff}+\Lambda)^{-1}y,\\k_{**}-Q_{*f}(Q_{ff}+\Lambda)^{-1}Q_{f*}\big),"
        r"\\\Lambda_{\mathrm{FITC}}=\mathrm{diag}(K_{ff}-Q_{ff})+\sigma^2I,\quad\Lambda_{\mathrm{VFE,DTC}}=\sigma^2I\end{gathered}$$",
    ),
    "curve": (
        "Power EP's log evidence at 15 alphas (same data, kernel and Z; the diamond marks the slider's alpha; dashed: "
        "the exact GP's). alpha = 0 on the slider means VFE (computed as Power EP at alpha = 1e-6), alpha = 1 is FITC. "
        "The formula is the Gaussian likelihood's; for classification it is the Power-EP energy.",
        r"$$\begin{gathered}\log Z_\alpha=\log\mathcal N\big(y;0,Q_{ff}+\alpha D+\sigma^2I\big)\\-\tfrac{1-\alpha}{2\alpha}"
        r"\sum_n\log\big(1+\alpha d_n/\sigma^2\big),\\D=\mathrm{diag}(K_{ff}-Q_{ff})\end{gathered}$$",
    ),
    "numbers": (
        "Each method's log evidence (exact GP, FITC, DTC, PITC, Power EP) or bound (VFE: a lower bound on the exact "
        "log evidence); classification: the EP / Power-EP energy.",
        r"$$\mathcal F_{\mathrm{VFE}}=\log\mathcal N(y;0,Q_{ff}+\sigma^2I)-\tfrac{1}{2\sigma^2}"
        r"\mathrm{tr}(K_{ff}-Q_{ff})\le\log p(y)$$",
    ),
}


def _empty(*names) -> dict:
    return {name: [] for name in names}


def _fmt(number: float) -> str:
    return "n/a" if not np.isfinite(number) else f"{number:.4f}"


def numbers_html(fits: dict) -> str:
    """Table: method, log evidence / bound, converged, time (ms); unavailable methods say why."""
    rows = []
    for method, fit in fits.items():
        colour = SPARSE_COLOURS[method]
        swatch = f'<span style="color:{colour}">&#9632;</span> '
        if not fit.available:
            rows.append(f"<tr><td>{swatch}{sparse_demo.LABELS[method]}</td><td colspan=3>{fit.note}</td></tr>")
            continue
        converged = "yes" if fit.converged else "<strong>no</strong>"
        rows.append(f"<tr><td>{swatch}{fit.label}</td><td>{_fmt(fit.evidence)}</td><td>{converged}</td>"
                    f"<td>{1000 * fit.seconds:.0f}</td></tr>")
    head = "<tr><th>method</th><th>log evidence / bound</th><th>converged</th><th>time (ms)</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


class SparseFigures:
    """The fits figure with the strip of pseudo-input handles, and the alpha curve."""

    def __init__(self):
        self.sources = {m: ColumnDataSource(_empty("x", "mean", "lower", "upper")) for m in sparse_demo.METHODS}
        self.data = ColumnDataSource(_empty("x", "y"))
        self.handles = ColumnDataSource({"x": [], "y": []})
        self.curve = ColumnDataSource(_empty("alpha", "evidence"))
        self.current = ColumnDataSource(_empty("alpha", "evidence"))
        self.exact = ColumnDataSource(_empty("alpha", "evidence"))  # the exact evidence, a level line
        self.x_range = Range1d(-1.0, 1.0)
        self.y_range = Range1d(-1.0, 1.0)
        self.figures = {
            "fits": figure(title="Sparse fits: mean +- 2 sd", x_axis_label="x", y_axis_label="latent f(x)",
                           height=430, sizing_mode="stretch_width", x_range=self.x_range, y_range=self.y_range,
                           extra_y_ranges={"strip": Range1d(0.0, 1.0)}, tools="pan,wheel_zoom,box_zoom,reset,save"),
            "curve": figure(title="Power-EP log evidence over alpha", x_axis_label="alpha (0 = VFE, 1 = FITC)",
                            y_axis_label="log evidence", height=280, sizing_mode="stretch_width",
                            tools="pan,wheel_zoom,reset,save"),
        }
        self.legend_items: dict[str, LegendItem] = {}
        self._draw()

    def _draw(self) -> None:
        fits = self.figures["fits"]
        items = []
        for m in sparse_demo.METHODS:
            src, colour, dash = self.sources[m], SPARSE_COLOURS[m], DASHES[m]
            renderers = [
                fits.varea("x", "lower", "upper", source=src, fill_color=colour, fill_alpha=0.12),
                fits.line("x", "mean", source=src, color=colour, line_width=2.5, line_dash=dash),
                fits.line("x", "lower", source=src, color=colour, line_width=1, line_dash=dash, line_alpha=0.7),
                fits.line("x", "upper", source=src, color=colour, line_width=1, line_dash=dash, line_alpha=0.7),
            ]
            self.legend_items[m] = LegendItem(label=value(sparse_demo.LABELS[m]), renderers=renderers)
            items.append(self.legend_items[m])
        data = fits.scatter("x", "y", source=self.data, color=DATA_COLOUR, size=4, line_color="#333333", line_width=0.5)
        fits.add_layout(BoxAnnotation(bottom=0.0, top=STRIP_TOP, y_range_name="strip", fill_color="#999999",
                                      fill_alpha=0.15, line_alpha=0))
        handle = fits.scatter("x", "y", source=self.handles, y_range_name="strip", size=15, marker="circle",
                              fill_color="#444444", line_color="#000000", fill_alpha=0.8)
        draw = PointDrawTool(renderers=[handle], add=True, drag=True, num_objects=sparse_demo.MAX_INDUCING,
                             description="drag a pseudo-input (x only), tap to add, Backspace removes the selected")
        fits.add_tools(draw)
        fits.toolbar.active_tap = draw
        fits.toolbar.active_drag = draw  # dragging is the point of the page; pan stays in the toolbar
        items += [LegendItem(label=value("data"), renderers=[data]),
                  LegendItem(label=value("pseudo-inputs Z (drag)"), renderers=[handle])]
        # below the plot, two columns: beside it the labels would squeeze the plot
        legend = Legend(items=items, click_policy="hide", background_fill_alpha=0.7, ncols=2)
        fits.add_layout(legend, "below")
        curve = self.figures["curve"]
        colour = SPARSE_COLOURS["power_ep"]
        curve.line("alpha", "evidence", source=self.curve, color=colour, line_width=2.5, legend_label="Power EP")
        curve.scatter("alpha", "evidence", source=self.curve, color=colour, size=6, legend_label="Power EP")
        curve.scatter("alpha", "evidence", source=self.current, color="#000000", size=12, marker="diamond",
                      legend_label="current alpha")
        curve.line("alpha", "evidence", source=self.exact, color=SPARSE_COLOURS["exact"], line_dash="dashed",
                   line_width=1.5, legend_label="exact GP")
        legend_below(curve)
        for fig in self.figures.values():
            fig.output_backend = "canvas"

    def show(self, model) -> None:
        """Draw the model's data, fits, pseudo-inputs and curve."""
        X, grid = model.X[:, 0], model.grid[:, 0] if model.grid is not None else model.X[:, 0]
        self.x_range.update(start=float(grid.min()), end=float(grid.max()))
        set_data(self.data, {"x": X, "y": model.y_shown()})
        for m in sparse_demo.METHODS:
            fit = model.fits.get(m)
            item = self.legend_items[m]
            if fit is None or not fit.available:
                set_data(self.sources[m], _empty("x", "mean", "lower", "upper"))
                item.label = value(fit.label if fit is not None else f"{sparse_demo.LABELS[m]} (off)")
                continue
            sd = np.sqrt(fit.var)
            set_data(self.sources[m], {"x": grid, "mean": fit.mean, "lower": fit.mean - 2 * sd, "upper": fit.mean + 2 * sd})
            item.label = value(fit.label)
        Z = model.Z[:, 0]
        shown = [m for m in sparse_demo.METHODS if len(self.sources[m].data["lower"])]
        lo = min([float(np.min(model.y_shown()))] + [float(np.min(self.sources[m].data["lower"])) for m in shown])
        hi = max([float(np.max(model.y_shown()))] + [float(np.max(self.sources[m].data["upper"])) for m in shown])
        pad = 0.05 * (hi - lo or 1.0)
        # the fits in the top (1 - STRIP_TOP) of the plot, the handles' strip below them
        bottom = lo - pad - STRIP_TOP / (1 - STRIP_TOP) * (hi - lo + 2 * pad)
        self.y_range.update(start=bottom, end=hi + pad)
        self.show_handles(Z)
        kind = "probit" if model.classification else "regression"
        self.figures["fits"].title.text = (f"Sparse fits, {kind}: N = {X.size}, M = {Z.size}\n"
                                           "mean +- 2 sd; drag the handles at the bottom")
        self.show_curve(model)

    def show_handles(self, Z) -> None:
        """The handles at Z on the strip's line."""
        self.handles.data = {"x": list(map(float, Z)), "y": [HANDLE_Y] * len(Z)}

    def show_curve(self, model) -> None:
        curve = model.curve
        alphas = sparse_demo.ALPHA_GRID
        if curve is None:
            set_data(self.curve, _empty("alpha", "evidence"))
            set_data(self.current, _empty("alpha", "evidence"))
            self.figures["curve"].title.text = f"Power-EP ({model.projection.upper()}) evidence over alpha\ncomputing ..."
        else:
            set_data(self.curve, {"alpha": alphas, "evidence": curve})
            current = model.fits.get("power_ep")
            here = current.evidence if current is not None and current.available else float(np.interp(model.alpha, alphas, curve))
            set_data(self.current, {"alpha": [model.alpha], "evidence": [here]})
            self.figures["curve"].title.text = (f"Power-EP ({model.projection.upper()}) evidence over alpha\n"
                                                f"log Z = {here:.4f} at alpha = {model.alpha:.2f}")
        exact = model.fits.get("exact")
        shown = exact is not None and exact.available
        set_data(self.exact, {"alpha": [0.0, 1.0] if shown else [], "evidence": [exact.evidence] * 2 if shown else []})

    def style(self, projector: bool) -> None:
        for fig in self.figures.values():
            style_figure(fig, projector)
        self.figures["fits"].height = 560 if projector else 430  # its legend is below the plot
        self.figures["curve"].height = 360 if projector else 280
