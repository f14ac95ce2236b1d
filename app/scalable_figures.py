"""The Scalable page's Bokeh figures: test error and NTLL against training time (one line per
method, streamed), the inputs' principal plane with each method's inducing points, and the status
table. Nothing here reads widgets: the page hands over what its training runs sent.
"""
from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from colours import METHOD_COLOURS
from explorer_figures import html_table
from explorer_figures import EmptyExtent, legend_below, style_figure
import safe_text
from qpviz.gpdemo.scalable_demo import LABELS, METHODS

__all__ = ["EXPLANATIONS", "CurveFigures", "DataFigure", "status_html", "MAX_POINTS"]

#: Points a curve keeps (older ones roll off: a long run's curve stays cheap to draw).
MAX_POINTS = 5000
#: Each method's line dash and marker (the colours differ too, but not for every reader).
DASHES = {"sep": "solid", "svi": "dashdot", "gfitc": "dotted"}
MARKERS = {"sep": "triangle", "svi": "square", "gfitc": "diamond"}
#: The data's classes in the 2-D view (the app's data colours).
CLASS_COLOURS = {-1.0: "#000000", 1.0: "#E69F00"}
#: What each measure is called on the axes.
MEASURES = {"test_error": "test error", "ntll": "NTLL"}

#: Below each view: one or two sentences and its formula (KaTeX).
EXPLANATIONS = {
    "test_error": (
        "Each method's test error on the same held-out points (at most 2,000) against its training time, "
        "scoring excluded; grey dashed: logistic regression on the same data. The runs share the machine's cores.",
        r"$$\mathrm{err}=\frac1T\sum_{t=1}^T\mathbb 1\big[y_t\,\mathbb E_q[f(x_t)]\le0\big]$$",
    ),
    "ntll": (
        "Negative test log-likelihood of the probit predictive: lower is better, and it also rewards honest "
        "uncertainty. SEP takes one step of the paper's sign-adaptive rates per minibatch, SVI one Adadelta step; "
        "GFITC one L-BFGS-B step on all N points.",
        r"$$\mathrm{NTLL}=-\frac1T\sum_{t=1}^T\log\Phi\Big(\frac{y_t m_t}{\sqrt{1+v_t}}\Big),\quad "
        r"q(f(x_t))=\mathcal N(m_t,v_t)$$",
    ),
    "view": (
        "The training inputs on their first two principal components (a sample of at most 2,000; black y = -1, "
        "orange y = +1) and each method's inducing inputs Z projected the same way, moving as they are learnt.",
        r"$$z=V^\top(x-\bar x),\quad V=\text{the two leading right singular vectors of }X-\mathbf 1\bar x^\top$$",
    ),
    "status": (
        "SEP keeps one averaged site per data point, refined on minibatches; SVI maximises the variational bound "
        "estimated on minibatches; GFITC runs EP on the FITC prior over all N points (paper 003).",
        r"$$q_{\mathrm{SEP}}(u)\propto p(u)\,\tilde f(u)^N,\quad \mathcal L_{\mathrm{SVI}}\approx\frac{N}{|B|}"
        r"\sum_{n\in B}\mathbb E_q\log p(y_n|f_n)-\mathrm{KL}\big(q(u)\,\|\,p(u)\big)$$",
    ),
}


def _curve_figure(measure: str):
    fig = figure(x_axis_label="training time (s)", y_axis_label=MEASURES[measure],
                 title=f"{MEASURES[measure]} on held-out points", tools="pan,wheel_zoom,box_zoom,reset,save")
    fig.sizing_mode, fig.height, fig.min_width = "stretch_width", 330, 360
    fig.toolbar_location = "right"
    return fig


class CurveFigures:
    """Test error and NTLL against training time: one source per method, streamed by both figures."""

    def __init__(self):
        self.sources = {m: ColumnDataSource({"t": [], "test_error": [], "ntll": [], "step": []}) for m in METHODS}
        self.baseline = ColumnDataSource({"x": [], "test_error": [], "ntll": []})
        self.figures = {measure: _curve_figure(measure) for measure in MEASURES}
        for measure, fig in self.figures.items():
            for method in METHODS:
                colour = METHOD_COLOURS[method]
                fig.line("t", measure, source=self.sources[method], color=colour, line_width=2.5,
                         line_dash=DASHES[method], legend_label=LABELS[method])
                fig.scatter("t", measure, source=self.sources[method], marker=MARKERS[method], color=colour, size=6,
                            legend_label=LABELS[method])
            # a ray from t = 0 to the right edge, whatever the time axis shows
            fig.ray("x", measure, source=self.baseline, length=0, angle=0, color=METHOD_COLOURS["logistic"],
                    line_dash="dashed", line_width=2, legend_label="logistic")
            legend_below(fig, ncols=4)
        # no curve until a run reports
        self.extents = {measure: EmptyExtent(fig) for measure, fig in self.figures.items()}

    def clear(self) -> None:
        for source in self.sources.values():
            source.data = {"t": [], "test_error": [], "ntll": [], "step": []}
        self.baseline.data = {"x": [], "test_error": [], "ntll": []}
        for extent in self.extents.values():
            extent.follow(False)

    def stream(self, method: str, points: dict) -> None:
        """Append a run's new curve points ({column: list}, :data:`scalable_model.CURVE_COLUMNS`)."""
        if points["t"]:
            for extent in self.extents.values():
                extent.follow(True)
            self.sources[method].stream(points, rollover=MAX_POINTS)

    def show_baseline(self, baseline: dict) -> None:
        self.baseline.data = {"x": [0.0], "test_error": [baseline["test_error"]], "ntll": [baseline["ntll"]]}

    def style(self, projector: bool) -> None:
        for fig in self.figures.values():
            style_figure(fig, projector)


class DataFigure:
    """The inputs' principal plane: the data sample by class and each method's inducing points."""

    def __init__(self):
        self.classes = {label: ColumnDataSource({"x": [], "y": []}) for label in CLASS_COLOURS}
        self.inducing = {m: ColumnDataSource({"x": [], "y": []}) for m in METHODS}
        fig = figure(x_axis_label="principal component 1", y_axis_label="principal component 2",
                     title="inputs and inducing points (PCA plane)", tools="pan,wheel_zoom,box_zoom,reset,save")
        fig.sizing_mode, fig.height, fig.min_width = "stretch_width", 330, 360
        fig.toolbar_location = "right"
        for label, colour in CLASS_COLOURS.items():
            fig.scatter("x", "y", source=self.classes[label], color=colour, size=3, alpha=0.35,
                        legend_label=f"data y = {label:+.0f}")
        for method in METHODS:
            fig.scatter("x", "y", source=self.inducing[method], marker=MARKERS[method], size=11,
                        fill_color=METHOD_COLOURS[method], line_color="white", line_width=1,
                        legend_label=f"Z ({LABELS[method]})")
        legend_below(fig)
        self.extent = EmptyExtent(fig, x=(-1.0, 1.0), y=(-1.0, 1.0))  # no data until a run starts
        self.figure = fig

    def clear(self) -> None:
        for source in (*self.classes.values(), *self.inducing.values()):
            source.data = {"x": [], "y": []}
        self.extent.follow(False)

    def show_data(self, sample: np.ndarray, labels: np.ndarray) -> None:
        self.extent.follow(True)
        for label, source in self.classes.items():
            mine = np.asarray(labels) == label
            source.data = {"x": sample[mine, 0], "y": sample[mine, 1]}

    @property
    def shows_data(self) -> bool:
        return any(len(source.data["x"]) for source in self.classes.values())

    def show_inducing(self, method: str, z) -> None:
        if z is not None:
            self.inducing[method].data = {"x": z[:, 0], "y": z[:, 1]}

    def style(self, projector: bool) -> None:
        style_figure(self.figure, projector)


def _number(value, digits: int = 4) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def status_html(runs: dict, baseline: dict | None) -> str:
    """One row per method: state, step, epoch, training time, elapsed time, last test error / NTLL,
    and what it said (an error, a warning, why it was not run); the logistic baseline last."""
    rows = []
    for method, run in runs.items():
        swatch = f'<span style="color:{METHOD_COLOURS[method]}">■</span> {LABELS[method]}'
        last = run.get("last") or {}
        state = "<strong>error</strong>" if run["state"] == "error" else run["state"]
        rows.append([swatch, state, str(last.get("step", "–")), str(last.get("epoch", "–")),
                     _number(last.get("wall_time"), 1), _number(run.get("elapsed"), 0),
                     _number(last.get("test_error")), _number(last.get("ntll")),
                     safe_text.html_text(run.get("text", ""), safe_text.MESSAGE_LIMIT)])  # an exception's words
    if baseline is not None:
        rows.append([f'<span style="color:{METHOD_COLOURS["logistic"]}">■</span> logistic', "done", "", "", "", "",
                     _number(baseline["test_error"]), _number(baseline["ntll"]), "scikit-learn, L2, lbfgs"])
    return html_table(["method", "state", "step", "epoch", "training (s)", "elapsed (s)", "test error", "NTLL", "note"],
                      rows)
