"""The Sparse page's Bokeh figures: the fits with their pseudo-inputs (a strip of draggable handles
below), and the Power-EP evidence over alpha. Nothing here reads widgets: :meth:`SparseFigures.show`
draws what a ``SparseModel`` holds.
"""
from __future__ import annotations

import numpy as np
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Legend, LegendItem, PointDrawTool, Range1d, ResetTool, Span
from bokeh.plotting import figure

from colours import SPARSE_COLOURS
from explorer_figures import style_figure
from qpviz.gpdemo import sparse_demo

__all__ = ["SparseFigures", "EXPLANATIONS", "DATA_COLOUR", "HANDLE_Y", "numbers_html"]

DATA_COLOUR = "#E69F00"
DASHES = {"exact": "solid", "fitc": "dashed", "vfe": "dotted", "dtc": "dotdash", "pitc": "dashdot", "power_ep": "solid"}
#: Height of the handles on the strip (its y axis runs from 0 to 1; a drag keeps x only).
HANDLE_Y = 0.5

#: Below each view: one or two sentences and its formula (KaTeX).
EXPLANATIONS = {
    "fits": (
        "Each method's latent mean with +-2 sd (bands light, lines in the method's colour) on the same pseudo-inputs "
        "Z, drawn as handles on the strip below: drag one (the fits follow when you let go), tap the strip to add "
        "one, tap one and press Backspace to remove it. The M slider restarts Z at K-means centres of the data.",
        r"$$q(f_*)=\mathcal N\big(Q_{*f}(Q_{ff}+\Lambda)^{-1}y,\;k_{**}-Q_{*f}(Q_{ff}+\Lambda)^{-1}Q_{f*}\big),"
        r"\;\Lambda_{\mathrm{FITC}}=\mathrm{diag}(K_{ff}-Q_{ff})+\sigma^2I,\;\Lambda_{\mathrm{VFE,DTC}}=\sigma^2I$$",
    ),
    "curve": (
        "Power EP's log evidence at 15 alphas (same data, kernel and Z; the dot marks the slider's alpha). "
        "alpha = 0 on the slider means VFE (computed as Power EP at alpha = 1e-6), alpha = 1 is FITC.",
        r"$$\log Z_\alpha=\log\mathcal N\big(y;0,Q_{ff}+\alpha D+\sigma^2I\big)-\tfrac{1-\alpha}{2\alpha}"
        r"\sum_n\log\big(1+\alpha d_n/\sigma^2\big),\;D=\mathrm{diag}(K_{ff}-Q_{ff})$$",
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
    """The fits figure, the strip of pseudo-input handles (shares the x range) and the alpha curve."""

    def __init__(self):
        self.sources = {m: ColumnDataSource(_empty("x", "mean", "lower", "upper")) for m in sparse_demo.METHODS}
        self.data = ColumnDataSource(_empty("x", "y"))
        self.handles = ColumnDataSource({"x": [], "y": []})
        self.ticks = ColumnDataSource(_empty("x", "y"))
        self.curve = ColumnDataSource(_empty("alpha", "evidence"))
        self.current = ColumnDataSource(_empty("alpha", "evidence"))
        self.x_range = Range1d(-1.0, 1.0)
        self.figures = {
            "fits": figure(title="Sparse fits: mean +- 2 sd", x_axis_label="x", y_axis_label="latent f(x)",
                           height=330, sizing_mode="stretch_width", x_range=self.x_range,
                           tools="pan,wheel_zoom,box_zoom,reset,save"),
            "strip": figure(title="Pseudo-inputs Z: drag a handle", x_axis_label="x (pseudo-input)",
                            y_axis_label="Z", height=120, sizing_mode="stretch_width", x_range=self.x_range,
                            y_range=Range1d(0.0, 1.0), tools=""),
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
        ticks = fits.scatter("x", "y", source=self.ticks, marker="triangle", size=9, color="#444444")
        items += [LegendItem(label=value("data"), renderers=[data]), LegendItem(label=value("pseudo-inputs Z"),
                                                                                  renderers=[ticks])]
        legend = Legend(items=items, location="top_left", click_policy="hide", background_fill_alpha=0.7)
        fits.add_layout(legend, "right")
        strip = self.figures["strip"]
        strip.yaxis.visible = False
        strip.ygrid.visible = False
        handle = strip.scatter("x", "y", source=self.handles, size=16, marker="circle", fill_color="#444444",
                               line_color="#000000", fill_alpha=0.8)
        draw = PointDrawTool(renderers=[handle], add=True, drag=True, num_objects=sparse_demo.MAX_INDUCING,
                             description="drag a pseudo-input (x only), tap to add, Backspace removes the selected")
        strip.add_tools(draw, ResetTool())
        strip.toolbar.active_tap = draw
        strip.toolbar.active_drag = draw
        curve = self.figures["curve"]
        colour = SPARSE_COLOURS["power_ep"]
        curve.line("alpha", "evidence", source=self.curve, color=colour, line_width=2.5, legend_label="Power EP")
        curve.scatter("alpha", "evidence", source=self.curve, color=colour, size=6, legend_label="Power EP")
        curve.scatter("alpha", "evidence", source=self.current, color="#000000", size=12, marker="diamond",
                      legend_label="current alpha")
        self.exact_line = Span(dimension="width", line_color=SPARSE_COLOURS["exact"], line_dash="dashed",
                               line_width=1.5, location=0.0, visible=False)
        curve.add_layout(self.exact_line)
        curve.legend.location = "bottom_right"
        for fig in self.figures.values():
            fig.output_backend = "canvas"

    def show(self, model) -> None:
        """Draw the model's data, fits, pseudo-inputs and curve."""
        X, grid = model.X[:, 0], model.grid[:, 0] if model.grid is not None else model.X[:, 0]
        self.x_range.update(start=float(grid.min()), end=float(grid.max()))
        self.data.data = {"x": X, "y": model.y_shown()}
        for m in sparse_demo.METHODS:
            fit = model.fits.get(m)
            item = self.legend_items[m]
            if fit is None or not fit.available:
                self.sources[m].data = _empty("x", "mean", "lower", "upper")
                item.label = value(fit.label if fit is not None else f"{sparse_demo.LABELS[m]} (off)")
                continue
            sd = np.sqrt(fit.var)
            self.sources[m].data = {"x": grid, "mean": fit.mean, "lower": fit.mean - 2 * sd, "upper": fit.mean + 2 * sd}
            item.label = value(fit.label)
        Z = model.Z[:, 0]
        lows = [self.sources[m].data["lower"] for m in sparse_demo.METHODS if len(self.sources[m].data["lower"])]
        bottom = min([float(np.min(model.y_shown()))] + [float(np.min(low)) for low in lows])
        self.ticks.data = {"x": Z, "y": [bottom] * Z.size}  # a triangle per pseudo-input at the plot's bottom
        self.show_handles(Z)
        kind = "probit classification" if model.classification else "regression"
        self.figures["fits"].title.text = f"Sparse fits ({kind}): N = {X.size}, M = {Z.size}, mean +- 2 sd"
        self.figures["strip"].title.text = (f"Pseudo-inputs Z (M = {Z.size}): drag a handle; tap to add; "
                                            "tap one + Backspace to remove")
        self.show_curve(model)

    def show_handles(self, Z) -> None:
        """The handles at Z on the strip's middle line."""
        self.handles.data = {"x": list(map(float, Z)), "y": [HANDLE_Y] * len(Z)}

    def show_curve(self, model) -> None:
        curve = model.curve
        alphas = sparse_demo.ALPHA_GRID
        if curve is None:
            self.curve.data = _empty("alpha", "evidence")
            self.current.data = _empty("alpha", "evidence")
            self.figures["curve"].title.text = "Power-EP log evidence over alpha: computing ..."
        else:
            self.curve.data = {"alpha": alphas, "evidence": curve}
            current = model.fits.get("power_ep")
            here = current.evidence if current is not None and current.available else float(np.interp(model.alpha, alphas, curve))
            self.current.data = {"alpha": [model.alpha], "evidence": [here]}
            self.figures["curve"].title.text = (f"Power-EP ({model.projection.upper()}) log evidence over alpha: "
                                                f"{here:.4f} at alpha = {model.alpha:.2f}")
        exact = model.fits.get("exact")
        self.exact_line.visible = exact is not None and exact.available
        if self.exact_line.visible:
            self.exact_line.location = exact.evidence

    def style(self, projector: bool) -> None:
        for name, fig in self.figures.items():
            style_figure(fig, projector)
        self.figures["strip"].height = 160 if projector else 120
        self.figures["curve"].height = 360 if projector else 280
