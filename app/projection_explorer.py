"""Projection Explorer page: one tilted distribution and its EP (KL) and QP (W2) Gaussians.

A thin Panel view over :mod:`qpviz.explorer`: the widgets call ``ExplorerState.update`` (which
validates and computes), views (a)-(c) are Bokeh figures whose data sources are patched in
place from the state's ``result``, so a slider move only streams new arrays to the browser
(a HoloViews DynamicMap per plot cost ~100 ms of Python per update here, too slow for the
100 ms budget). The var_QP/var_EP map (d) is a HoloViews image, recomputed (and cached with
``pn.cache``) only when the likelihood, its parameters or y change; moving the cavity only moves
its marker. Clicking the map moves the cavity (HoloViews Tap stream).

Where the time of a slider move goes, and what keeps it within 100 ms (key press to painted
plots, benchmarks/bench_explorer_latency.py): see _show_columns (patches, not new data: no
legend rebuild), _build_figures (ranges set here, shared quantile source), PromptFloatSlider
(5 ms debounce), _sync_url (URL written once the sliders rest), _add_marker (marker on the
overlay layer), map_image (canvas, not WebGL) and app/tcp_nodelay.py (no Nagle waits).
"""
from __future__ import annotations

import time

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend that .opts() needs)
import numpy as np
import panel as pn
import param
from bokeh.models import CDSView, ColumnDataSource, IndexFilter, Range1d
from bokeh.plotting import figure

from qpviz import config
from qpviz import explorer
from qpviz.explorer import ExplorerState

TITLE = "Projection Explorer"

#: Okabe-Ito colours (colour-blind safe); curves also differ by dash pattern.
COLOURS = {
    "cavity": "#56B4E9",
    "likelihood": "#009E73",
    "tilted": "#000000",
    "ep": "#D55E00",
    "qp": "#0072B2",
}
DASHES = {"cavity": "dashed", "likelihood": "dotted", "tilted": "solid", "ep": "dashdot", "qp": "solid"}
LABELS = {"cavity": "cavity", "likelihood": "likelihood (scaled)", "tilted": "tilted", "ep": "EP (KL)", "qp": "QP (W2)"}

#: Projector mode: larger text inside every control (labels, inputs, options, buttons) and the numbers.
PROJECTOR_WIDGET_CSS = ":host, :host * { font-size: 20px !important; line-height: 1.3 !important; }"

#: The real-y slider spans +-Y_SLIDER_LIMIT; typed values may go up to +-explorer.MAX_ABS_REAL_Y.
Y_SLIDER_LIMIT = 10.0

#: The lines of each Bokeh figure (the Q-Q view draws the tilted quantiles as points).
CURVES = {
    "densities": ("cavity", "likelihood", "tilted", "ep", "qp"),
    "quantiles": ("tilted", "ep", "qp"),
    "qq": ("ep", "qp"),
}

PARAMETER_WIDGETS = {"gaussian": "gaussian_variance", "step": "step_eps", "student_t": "student_t", "laplace": "laplace_scale"}
PARAMETER_LABELS = {
    "gaussian_variance": "noise variance",
    "step_eps": "label-noise probability eps",
    "student_t": "Student-t (nu, scale)",
    "laplace_scale": "Laplace scale",
}

#: Beside each view: two lines of explanation and its formula (rendered by KaTeX).
EXPLANATIONS = {
    "densities": (
        "The tilted distribution is cavity times likelihood, renormalised; EP matches its mean and variance, "
        "QP keeps the mean and minimises the 2-Wasserstein distance (QP paper eqs. 4, 5, 7).",
        r"$$\tilde q(f)=\frac{p(y\mid f)\,\mathcal N(f\mid m,s^2)}{Z},\qquad "
        r"\sigma_{QP}=\int_0^1 F^{-1}(u)\,\Phi^{-1}(u)\,du\le\sigma_{EP}$$"
    ),
    "quantiles": (
        "Quantile functions over u; W2 between two 1-D distributions is the L2 distance between their "
        "quantile functions (QP paper Prop. 1, eq. 11).",
        r"$$W_2^2(\tilde q,\mathcal N(\mu,\sigma^2))=\int_0^1\big(F^{-1}(u)-\mu-\sigma\,\Phi^{-1}(u)\big)^2du$$"
    ),
    "qq": (
        "Tilted quantiles against normal quantiles: QP is the least-squares line (slope sigma_QP), "
        "EP the line with slope sigma_EP, both through the tilted mean (eqs. 17, 20).",
        r"$$\sigma_{QP}=\arg\min_\sigma\int_0^1\big(F^{-1}(u)-\mu-\sigma z_u\big)^2du,\quad z_u=\Phi^{-1}(u)$$"
    ),
    "numbers": (
        "Sites follow from dividing the projection by the cavity (eq. 6); a non-positive site precision "
        "is flagged.",
        r"$$\tilde\sigma^{-2}=\sigma^{-2}-s^{-2},\qquad \tilde\mu=\tilde\sigma^{2}\big(\mu/\sigma^{2}-m/s^{2}\big)$$"
    ),
    "map": (
        "var_QP / var_EP over cavities for this likelihood and y (<= 1 by Theorem 2); the circled cross marks the "
        "current cavity. Click the map to move the cavity there.",
        r"$$r(m,s)=\sigma^2_{QP}(m,s)\,/\,\sigma^2_{EP}(m,s)\le 1$$"
    ),
}


#: The sliders reach the URL this long after their last move (see ProjectionExplorer._sync_url).
URL_DELAY_MS = 300
#: URL query keys of the sliders (SliderQuery's parameters).
SLIDER_QUERY = ("count", "y", "m", "s")


class SliderQuery(param.Parameterized):
    """The slider values the URL shows (query keys count, y, m, s)."""

    count = param.Integer(default=1, doc="Count observation y (count likelihoods).")
    y = param.Number(default=0.0, doc="Real observation y (real likelihoods).")
    m = param.Number(default=0.5, doc="Cavity mean.")
    s = param.Number(default=1.5, doc="Cavity standard deviation.")


class PromptFloatSlider(pn.widgets.FloatSlider):
    """A FloatSlider whose moves reach the page's callback after 5 ms instead of Panel's 50 ms.

    Not 0: a key press sends two messages (``value``, then ``value_throttled``), and the server
    writes an OK reply to each in several awaited frames. A callback started at once runs between
    the frames of the first OK, finds the socket's write lock taken, and Panel then retries the
    reply 10 ms later; started 5 ms later, it usually finds both OKs sent, handles both changes
    in one call and sends the reply at once (measured: ~10 ms less from key press to paint).
    """

    _debounce = 5


class PromptIntSlider(pn.widgets.IntSlider):
    """An IntSlider with the same 5 ms debounce as PromptFloatSlider."""

    _debounce = 5


@pn.cache(max_items=64)
def cached_ratio_map(name: str, gaussian_variance, step_eps, student_t, laplace_scale, y: float) -> dict:
    """explorer.ratio_map for one likelihood and y (the map does not depend on the cavity)."""
    lik = explorer.build_likelihood(
        name, gaussian_variance=gaussian_variance, step_eps=step_eps, student_t=student_t, laplace_scale=laplace_scale
    )
    return explorer.ratio_map(lik, y)


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    cells = lambda tag, row: "".join(f"<{tag}>{cell}</{tag}>" for cell in row)  # noqa: E731
    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table>"


def numbers_html(summary: dict, show_ep: bool, show_qp: bool) -> str:
    """The numbers view (c) as HTML tables (built directly: rendering Markdown cost ~3 ms a move)."""
    rows = [
        ("Z (evidence)", summary["Z"]),
        ("log Z", summary["log_Z"]),
        ("mean (EP = QP)", summary["mean"]),
        ("var_QP / var_EP", summary["ratio"]),
    ]
    tables = [_table(["quantity", "value"], [[name, _fmt(value)] for name, value in rows])]
    methods = [(m, label) for m, label, shown in (("ep", "EP", show_ep), ("qp", "QP", show_qp)) if shown]
    if methods:
        method_rows = [
            [label, *(_fmt(summary[f"{key}_{m}"]) for m, _ in methods)]
            for key, label in (
                ("var", "variance"),
                ("w2", "W2 to tilted"),
                ("kl", "KL(tilted ‖ ·)"),
                ("site_mean", "site mean"),
                ("site_var", "site variance"),
            )
        ]
        positive = [("yes" if summary[f"site_positive_{m}"] else "<strong>no</strong>") for m, _ in methods]
        method_rows.append(["site precision &gt; 0", *positive])
        tables.append(_table(["", *(label for _, label in methods)], method_rows))
    return "\n".join(tables)


class NumbersPane(pn.pane.HTML):
    """An HTML pane with the Markdown pane's table style."""

    _stylesheets = [*pn.pane.HTML._stylesheets, *pn.pane.Markdown._stylesheets]


def _show_columns(source: ColumnDataSource, columns: dict, fixed: dict | None = None) -> None:
    """Show new values of ``columns`` in ``source``; ``fixed`` columns are sent only the first time.

    When no column changes length, the values are sent as one whole-column patch: BokehJS applies
    a patch without the model change that a new ``data`` dict signals, and that signal reaches each
    legend through its items' renderers and made it rebuild its entries (new DOM and canvases for
    every swatch, three legends per move). The source keeps its own copies, which patches overwrite.
    """
    current = source.data
    lengths = {len(values) for values in columns.values()}
    if len(lengths) == 1 and set(columns) <= set(current) and {len(current[k]) for k in columns} == lengths:
        n = lengths.pop()
        source.patch({k: [(slice(0, n), np.asarray(v))] for k, v in columns.items()})
    else:
        source.data = {k: np.array(v) for k, v in {**(fixed or {}), **columns}.items()}


def _span(columns: dict, keys) -> tuple[float, float]:
    """Smallest and largest finite value of ``columns[key]`` over ``keys``."""
    values = np.concatenate([np.asarray(columns[key], float) for key in keys])
    values = values[np.isfinite(values)]
    return (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)


def _set_range(axis_range: Range1d, lo: float, hi: float, pad: float = 0.05) -> None:
    """Show [lo, hi] plus ``pad`` of its width on each side (what DataRange1d's default padding shows)."""
    width = hi - lo if hi > lo else max(abs(hi), 1.0)
    axis_range.update(start=lo - pad * width, end=hi + pad * width)


class ProjectionExplorer(pn.viewable.Viewer):
    """The page: controls on the left, four views with their formulas on the right."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, **params):
        super().__init__(**params)
        self.state = ExplorerState()
        self._syncing = False
        self._query = None
        self._query_pending = False
        self._writing_query = False
        self._last_move = 0.0
        s = self.state
        self.likelihood = pn.widgets.Select(
            label="likelihood", options=list(explorer.LIKELIHOOD_NAMES), value=s.likelihood, css_classes=["qpviz-likelihood"]
        )
        self.parameter_widgets = {
            name: pn.widgets.Select(label=PARAMETER_LABELS[name], options=list(s.param[name].objects), value=getattr(s, name))
            for name in PARAMETER_WIDGETS.values()
        }
        self.y_label = pn.widgets.RadioButtonGroup(label="label y", options={"-1": -1.0, "+1": 1.0}, value=1.0)
        self.y_count = PromptIntSlider(label="count y", start=0, end=config.MAX_TABLE_COUNT, value=1)
        self.y_real = PromptFloatSlider(label="observation y", start=-Y_SLIDER_LIMIT, end=Y_SLIDER_LIMIT, step=0.05, value=0.0)
        self.y_text = pn.widgets.TextInput(label="type y (Enter)", placeholder="e.g. 2.5")
        self.mean_slider = PromptFloatSlider(
            label="cavity mean m", start=explorer.MEAN_RANGE[0], end=explorer.MEAN_RANGE[1], step=0.05, value=s.cavity_mean,
            css_classes=["qpviz-mean"],
        )
        self.std_slider = PromptFloatSlider(
            label="cavity std s", start=explorer.STD_RANGE[0], end=explorer.STD_RANGE[1], step=0.05, value=s.cavity_std,
            css_classes=["qpviz-std"],
        )
        self.mean_text = pn.widgets.TextInput(label="type m (Enter)", placeholder="e.g. -1.25", css_classes=["qpviz-mean-text"])
        self.std_text = pn.widgets.TextInput(label="type s (Enter)", placeholder="e.g. 0.8", css_classes=["qpviz-std-text"])
        self.show = pn.widgets.CheckButtonGroup(label="projections", options=["EP", "QP"], value=["EP", "QP"])
        self.projector_toggle = pn.widgets.Toggle(label="Projector mode (large fonts)", value=False)
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.numbers = NumbersPane("", css_classes=["qpviz-numbers"], sizing_mode="stretch_width")

        self.likelihood.param.watch(self._on_likelihood, "value")
        for name, widget in self.parameter_widgets.items():
            widget.param.watch(lambda event, name=name: self._apply(**{name: event.new}), "value")
        self.y_label.param.watch(lambda e: self._on_y("binary", e.new), "value")
        self.y_count.param.watch(lambda e: self._on_y("count", e.new), "value")
        self.y_real.param.watch(lambda e: self._on_y("real", e.new), "value")
        self.y_text.param.watch(lambda e: self._apply(y=e.new), "value")
        self.mean_slider.param.watch(lambda e: self._apply(cavity_mean=e.new), "value")
        self.std_slider.param.watch(lambda e: self._apply(cavity_std=e.new), "value")
        self.mean_text.param.watch(lambda e: self._apply(cavity_mean=e.new), "value")
        self.std_text.param.watch(lambda e: self._apply(cavity_std=e.new), "value")
        self.show.param.watch(self._on_show, "value")
        self.projector_toggle.link(self, value="projector")
        self.state.param.watch(self._show_error, "error")
        self.state.param.watch(self._refresh_views, ["result", "show_ep", "show_qp"])

        self._refresh_widgets()
        self._layout = self._build_layout()
        self._sync_url()

    # -- input -----------------------------------------------------------------------------
    def _apply(self, **changes) -> bool:
        """Forward a widget change to the state (unless it is the page echoing the state back)."""
        if self._syncing:
            return False
        with pn.io.hold():  # one message to the browser for all the changes below
            try:
                ok = self.state.update(**changes)
            except Exception as exc:  # never let a callback error reach the browser console
                self.state.error = f"unexpected error: {exc}"
                ok = False
            self._refresh_widgets()  # sliders and selects show the last good (or adjusted) input
        return ok

    def _on_likelihood(self, event) -> None:
        self._apply(likelihood=event.new)

    def _on_y(self, support: str, value) -> None:
        if self.state.likelihood_object().support == support:
            self._apply(y=value)

    def _on_show(self, event) -> None:
        self.state.param.update(show_ep="EP" in event.new, show_qp="QP" in event.new)

    def _refresh_widgets(self) -> None:
        """Make every widget show the state (after a change that the state accepted or adjusted)."""
        s = self.state
        support = s.likelihood_object().support
        self._syncing = True
        try:
            self.likelihood.value = s.likelihood
            for lik_name, name in PARAMETER_WIDGETS.items():
                widget = self.parameter_widgets[name]
                widget.value = getattr(s, name)
                widget.visible = s.likelihood == lik_name
            self.y_label.visible = support == "binary"
            self.y_count.visible = support == "count"
            self.y_real.visible = support == "real"
            if support == "binary":
                self.y_label.value = s.y
            elif support == "count" and s.y <= self.y_count.end:
                self.y_count.value = int(s.y)
            elif support == "real" and abs(s.y) <= Y_SLIDER_LIMIT:
                self.y_real.value = float(s.y)
            self.mean_slider.value = s.cavity_mean
            self.std_slider.value = s.cavity_std
        finally:
            self._syncing = False

    def _show_error(self, event=None) -> None:
        self.alert.object = self.state.error
        self.alert.visible = bool(self.state.error)

    def _on_tap(self, x=None, y=None) -> None:
        """Tap stream subscriber: move the cavity to the clicked (mean, std), clipped to the map."""
        if x is None or y is None:
            return
        lo, hi = explorer.STD_RANGE
        self._apply(cavity_mean=round(float(np.clip(x, *explorer.MEAN_RANGE)), 2), cavity_std=round(float(np.clip(y, lo, hi)), 2))

    def _sync_url(self) -> None:
        """Keep the view in the URL query so that a shared link reopens it.

        The sliders reach the URL through ``self._query``, written URL_DELAY_MS after they stop
        moving: writing the URL at every step (pushState, then the browser echoing the new href)
        cost about 10 ms of each update and left one browser-history entry per slider step.
        """
        location = pn.state.location
        if location is None:
            return
        location.sync(self.likelihood, {"value": "lik"})
        for name, widget in self.parameter_widgets.items():
            location.sync(widget, {"value": name})
        location.sync(self.y_label, {"value": "label"})
        self._query = SliderQuery(**self._slider_values())
        self._query.param.watch(self._on_query, list(SLIDER_QUERY))  # a shared link moves the sliders
        location.sync(self._query)
        for widget in self._query_sliders().values():
            widget.param.watch(self._on_slider_moved, "value")
        location.sync(self.show, {"value": "show"})
        location.sync(self.projector_toggle, {"value": "projector"})

    def _query_sliders(self) -> dict:
        return {"count": self.y_count, "y": self.y_real, "m": self.mean_slider, "s": self.std_slider}

    def _slider_values(self) -> dict:
        return {name: widget.value for name, widget in self._query_sliders().items()}

    def _on_query(self, *events) -> None:
        """The URL's slider values (a shared link, read when the page opens) move the sliders."""
        if self._writing_query:
            return
        sliders = self._query_sliders()
        for event in events:
            sliders[event.name].value = event.new

    def _on_slider_moved(self, event=None) -> None:
        self._last_move = time.monotonic()
        if not self._query_pending:
            self._query_pending = True
            pn.state.add_periodic_callback(self._write_query, period=URL_DELAY_MS, count=1)

    def _write_query(self) -> None:
        """Copy the sliders into the URL once they have rested URL_DELAY_MS."""
        wait_ms = URL_DELAY_MS - 1000 * (time.monotonic() - self._last_move)
        if wait_ms > 10:
            pn.state.add_periodic_callback(self._write_query, period=round(wait_ms), count=1)
            return
        self._query_pending = False
        self._writing_query = True
        try:
            self._query.param.update(**self._slider_values())
        finally:
            self._writing_query = False

    # -- views -----------------------------------------------------------------------------
    def _build_figures(self) -> None:
        """Bokeh figures for views (a), (b) and (b'), fed by ColumnDataSources that each update
        changes in place (no re-render: only the new arrays travel to the browser).

        The quantile view and the Q-Q view share one source (x = u and x = z over the same
        quantiles; the Q-Q points are every third row through an IndexFilter), and its u and z
        columns never change, so a cavity move sends the density columns and three quantile
        columns. The axis ranges are computed here (Range1d) rather than by the browser
        (DataRange1d), which would send each new range back to the server after every move.
        """
        self.sources = {
            "densities": ColumnDataSource(data={"x": [], **{k: [] for k in CURVES["densities"]}}),
            "quantiles": ColumnDataSource(data={"u": [], "z": [], **{k: [] for k in CURVES["quantiles"]}}),
        }
        self.ranges = {name: (Range1d(0, 1), Range1d(0, 1)) for name in CURVES}
        self.figures = {
            "densities": figure(x_axis_label="f", y_axis_label="density"),
            "quantiles": figure(x_axis_label="u", y_axis_label="quantile F^-1(u)"),
            "qq": figure(x_axis_label="Phi^-1(u) (standard normal quantile)", y_axis_label="tilted quantile F^-1(u)"),
        }
        x_columns = {"densities": "x", "quantiles": "u", "qq": "z"}
        self.renderers = {name: {} for name in self.figures}
        for name, keys in CURVES.items():
            fig = self.figures[name]
            fig.x_range, fig.y_range = self.ranges[name]
            source = self.sources["densities" if name == "densities" else "quantiles"]
            for key in keys:
                self.renderers[name][key] = fig.line(
                    x_columns[name], key, source=source, color=COLOURS[key], line_dash=DASHES[key],
                    line_width=3 if key == "tilted" else 2, legend_label=LABELS[key],
                )
        every_third = CDSView(filter=IndexFilter(list(range(0, explorer.QUANTILE_POINTS, 3))))
        self.renderers["qq"]["tilted"] = self.figures["qq"].scatter(
            "z", "tilted", source=self.sources["quantiles"], view=every_third, color=COLOURS["tilted"], size=5,
            legend_label="tilted quantiles",
        )
        for fig in self.figures.values():
            fig.sizing_mode = "stretch_width"
            fig.height = 330
            fig.min_width = 360
            fig.toolbar_location = "right"  # beside the plot: a long title above never runs under the tools
            fig.legend.location = "top_left"
            fig.legend.click_policy = "hide"
            fig.legend.background_fill_alpha = 0.7
        densities = self.figures["densities"]
        densities.add_layout(densities.legend[0], "right")  # five entries: beside the curves, not over them

    def _refresh_views(self, *events) -> None:
        """Push the state's current result into the numbers and the figures (views a, b, b', c)."""
        s = self.state
        result = s.result
        d, q, summary = result.densities, result.quantiles, result.summary
        shown = [key for key, visible in (("ep", s.show_ep), ("qp", s.show_qp)) if visible]
        with pn.io.hold():
            self.numbers.object = numbers_html(summary, s.show_ep, s.show_qp)
            _show_columns(self.sources["densities"], {"x": d["x"], **{k: d[k] for k in CURVES["densities"]}})
            _show_columns(self.sources["quantiles"], {k: q[k] for k in CURVES["quantiles"]}, fixed={"u": q["u"], "z": q["z"]})
            _set_range(self.ranges["densities"][0], d["x"][0], d["x"][-1], pad=0.0)
            _set_range(self.ranges["densities"][1], *_span(d, ("cavity", "likelihood", "tilted", *shown)))
            _set_range(self.ranges["quantiles"][0], 0.0, 1.0)
            _set_range(self.ranges["qq"][0], q["z"][0], q["z"][-1])
            quantile_span = _span(q, ("tilted", *shown))
            _set_range(self.ranges["quantiles"][1], *quantile_span)
            _set_range(self.ranges["qq"][1], *quantile_span)
            self.figures["densities"].title.text = (
                f"(a) densities: {s.likelihood}, y = {s.y:g}, m = {s.cavity_mean:.2f}, s = {s.cavity_std:.2f}"
            )
            self.figures["quantiles"].title.text = f"(b) quantile functions: mean = {summary['mean']:.4f}"
            self.figures["qq"].title.text = (
                f"(b') Q-Q: σ_EP = {np.sqrt(summary['var_ep']):.4f}, σ_QP = {np.sqrt(summary['var_qp']):.4f}"
            )
            for name, renderers in self.renderers.items():
                for key, visible in (("ep", s.show_ep), ("qp", s.show_qp)):
                    renderers[key].visible = visible
            _show_columns(self.marker, {"x": [s.cavity_mean], "y": [s.cavity_std]})

    def _style_figures(self, *events) -> None:
        """Font sizes of every figure (larger in projector mode)."""
        scale = 1.7 if self.projector else 1.0
        for fig in self._all_figures():
            fig.title.text_font_size = f"{round(13 * scale)}px"
            for axis in (*fig.xaxis, *fig.yaxis):
                axis.axis_label_text_font_size = f"{round(13 * scale)}px"
                axis.major_label_text_font_size = f"{round(11 * scale)}px"
            for legend in fig.legend:
                legend.label_text_font_size = f"{round(12 * scale)}px"
            fig.height = 430 if self.projector else 330
        for fig in self.figures.values():
            # a fixed room for the y tick labels: a cavity move that changes their width then
            # repaints the figure without laying the page out again (~10 ms per move measured)
            fig.min_border_left = 100 if self.projector else 70

    def _all_figures(self):
        figures = list(self.figures.values())
        if self._map_figure is not None:
            figures.append(self._map_figure)
        return figures

    def map_image(self, likelihood, gaussian_variance, step_eps, student_t, laplace_scale, y) -> hv.Image:
        """View (d): the var_QP/var_EP map for the current likelihood and y (not the cavity)."""
        try:
            data = cached_ratio_map(likelihood, gaussian_variance, step_eps, student_t, laplace_scale, float(y))
            title = f"(d) var_QP / var_EP for {likelihood}, y = {float(y):g}"
        except Exception as exc:  # shown on the page, never raised into the browser
            self.state.error = f"the var_QP/var_EP map could not be computed: {exc}"
            data = {"means": np.array(explorer.MEAN_RANGE), "stds": np.array(explorer.STD_RANGE), "ratio": np.full((2, 2), np.nan)}
            title = f"(d) var_QP / var_EP for {likelihood}, y = {float(y):g}: not available"
        image = hv.Image((data["means"], data["stds"], data["ratio"]), ["cavity mean m", "cavity std s"], "var_QP / var_EP")
        return image.opts(
            cmap="cividis", colorbar=True, tools=["hover", "tap"], title=title, height=330, responsive=True,
            min_width=360, toolbar="right", hooks=[self._add_marker],
            # HoloViews asks for WebGL; without a GPU (classroom laptops, CI) canvas draws faster
            backend_opts={"plot.output_backend": "canvas"},
        )

    def _add_marker(self, plot, element) -> None:
        """HoloViews hook: draw the cavity marker from self.marker on the map's Bokeh figure once,
        so moving the cavity updates one tiny data source instead of re-rendering the map."""
        fig = plot.state
        self._map_figure = fig
        if self._marker_renderer is None or self._marker_renderer not in fig.renderers:
            # level "overlay": Bokeh repaints only the overlay canvas of the map when the marker
            # moves, not the image, axes and colour bar beneath it
            self._marker_renderer = fig.scatter("x", "y", source=self.marker, marker="circle_x", size=18, line_width=2.5,
                                                  line_color="black", fill_color="white", level="overlay")
        self._style_figures()

    def _build_map(self) -> pn.pane.HoloViews:
        self.marker = ColumnDataSource(data={"x": [self.state.cavity_mean], "y": [self.state.cavity_std]})
        self._map_figure = None
        self._marker_renderer = None
        inputs = hv.streams.Params(self.state, ["likelihood", "gaussian_variance", "step_eps", "student_t", "laplace_scale", "y"])
        image = hv.DynamicMap(self.map_image, streams=[inputs])
        self.tap = hv.streams.Tap(source=image, x=None, y=None)
        self.tap.add_subscriber(self._on_tap)
        return pn.pane.HoloViews(image, sizing_mode="stretch_width", css_classes=["qpviz-map"])

    def _explained(self, view, key: str) -> pn.Column:
        sentence, formula = EXPLANATIONS[key]
        text = pn.pane.Markdown(sentence, sizing_mode="stretch_width", margin=(0, 10))
        latex = pn.pane.LaTeX(formula, sizing_mode="stretch_width", margin=(0, 10))
        self._texts += [text, latex]
        return pn.Column(view, text, latex, sizing_mode="stretch_width")

    def _build_views(self) -> pn.GridBox:
        self._texts = [self.numbers]
        self._build_figures()
        map_pane = self._build_map()
        numbers = pn.Column(self.numbers, sizing_mode="stretch_width")
        return pn.GridBox(
            self._explained(pn.pane.Bokeh(self.figures["densities"], sizing_mode="stretch_width"), "densities"),
            self._explained(numbers, "numbers"),
            self._explained(pn.pane.Bokeh(self.figures["quantiles"], sizing_mode="stretch_width"), "quantiles"),
            self._explained(pn.pane.Bokeh(self.figures["qq"], sizing_mode="stretch_width"), "qq"),
            self._explained(map_pane, "map"),
            ncols=2,
            sizing_mode="stretch_width",
        )

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        size = {"font-size": "150%" if self.projector else "100%"}
        for text in self._texts:
            text.styles = size
        # widgets draw inside their own shadow DOM: only a stylesheet of their own reaches it
        for widget in (*self._controls.objects, self.numbers):
            widget.stylesheets = [PROJECTOR_WIDGET_CSS] if self.projector else []
        self._style_figures()

    def _build_controls(self) -> pn.Column:
        return pn.Column(
            pn.pane.Markdown("### Likelihood and observation"),
            self.likelihood,
            *self.parameter_widgets.values(),
            self.y_label,
            self.y_count,
            self.y_real,
            self.y_text,
            pn.pane.Markdown("### Cavity N(m, s²)"),
            self.mean_slider,
            self.mean_text,
            self.std_slider,
            self.std_text,
            pn.pane.Markdown("### Show"),
            self.show,
            self.projector_toggle,
            width=300,
        )

    def _build_layout(self) -> pn.Row:
        self._controls = self._build_controls()
        views = self._build_views()
        self._refresh_views()
        self._style_figures()
        return pn.Row(self._controls, pn.Column(self.alert, views, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/main.py."""
    return TITLE, ProjectionExplorer()
