"""The Projection Explorer's Bokeh figures (views a, b, b'), its numbers table (view c) and the
data sources they are fed from, patched in place at every change (see :func:`show_columns`).

Nothing here reads widgets or the URL: :class:`ExplorerFigures` draws what an
``ExplorerState`` holds.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import panel as pn
from bokeh import events
from bokeh.models import CDSView, ColorBar, ColumnDataSource, GlyphRenderer, HoverTool, IndexFilter, LinearColorMapper, Range1d
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from qpviz import explorer
from quick_text import QuickHTML

__all__ = ["DrawnContent", "COLOURS", "DASHES", "LABELS", "CURVES", "ExplorerFigures", "MapView", "RatioMap", "map_view", "NumbersPane",
           "numbers_html", "html_table", "set_data", "show_columns", "style_figure", "legend_below", "EmptyExtent", "PAD_TO",
           "padded", "centred_image"]

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

#: The lines of each Bokeh figure (the Q-Q view draws the tilted quantiles as points).
CURVES = {
    "densities": ("cavity", "likelihood", "tilted", "ep", "qp"),
    "quantiles": ("tilted", "ep", "qp"),
    "qq": ("ep", "qp"),
}


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def html_table(header: list[str], rows: list[list[str]]) -> str:
    """An HTML table of already escaped cells (the callers put user text through safe_text.html_text)."""
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
    tables = [html_table(["quantity", "value"], [[name, _fmt(value)] for name, value in rows])]
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
        tables.append(html_table(["", *(label for _, label in methods)], method_rows))
    return "\n".join(tables)


class NumbersPane(QuickHTML):
    """An HTML pane with the Markdown pane's table style, whose new tables are sent alone
    (app/quick_text.py)."""

    _stylesheets = [*pn.pane.HTML._stylesheets, *pn.pane.Markdown._stylesheets]


def show_columns(source: ColumnDataSource, columns: dict, fixed: dict | None = None) -> None:
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


class DrawnContent:
    """What each view (``key``) last drew, to skip a redraw of the same content.

    Fits and data arrays are replaced, never changed in place, so "the same" is identity for
    objects and equality for plain values (numbers, strings, flags). The content last drawn is held,
    so that a freed array's id cannot come back as a new array's and be taken for it."""

    def __init__(self):
        self._last: dict = {}

    def changed(self, key, *content) -> bool:
        """Whether ``content`` differs from what ``key`` last drew (and if so, it is now what it drew)."""
        last = self._last.get(key)
        if last is not None and len(last) == len(content) and all(map(_same, last, content)):
            return False
        self._last[key] = content
        return True


def _same(a, b) -> bool:
    return a is b or (isinstance(a, (int, float, str, bool)) and type(a) is type(b) and a == b)


def set_data(source: ColumnDataSource, data: dict) -> None:
    """``source.data = data``, sending the browser only what changes.

    An empty source set empty again sends nothing (each new ``data`` makes BokehJS re-render the
    source's renderers and rebuild their legend: a GP 1-D refit sent 16 new data, 10 of them empty
    sources emptied again). Columns keeping their names, lengths and dtypes are sent as one
    whole-column patch (:func:`show_columns`) of the columns whose values change (a hyper-parameter
    step keeps the x grid and the data points: they are not sent again; a source whose values all
    stay sends nothing); anything else as new data. The source keeps copies (a patch writes into
    them: never into the caller's arrays, e.g. a cached fit's).
    """
    current = source.data
    new = {k: np.asarray(v) for k, v in data.items()}
    if set(new) == set(current):
        if not any(len(v) for v in new.values()) and not any(len(v) for v in current.values()):
            return
        if all(len(new[k]) == len(current[k]) and new[k].dtype == np.asarray(current[k]).dtype for k in new):
            changed = {k: v for k, v in new.items()
                       if not np.array_equal(v, current[k], equal_nan=v.dtype.kind in "fc")}
            if changed:
                show_columns(source, changed)
            return
    source.data = {k: np.array(v) for k, v in new.items()}


#: Columns whose length follows the data (or a fit's sweeps) are padded with NaN (not drawn) to a
#: multiple of this: a click or a fit with one more sweep then patches the source in place (new
#: data made the browser re-render the source's renderers and rebuild the figure's legend).
PAD_TO = 32


def padded(columns: dict) -> dict:
    """``columns`` (of one length n) as floats padded with NaN to the next multiple of
    :data:`PAD_TO` (empty columns stay empty)."""
    n = len(next(iter(columns.values())))
    if n == 0:
        return {k: np.zeros(0) for k in columns}
    size = -(-n // PAD_TO) * PAD_TO
    out = {}
    for key, values in columns.items():
        column = np.full(size, np.nan)
        column[:n] = np.asarray(values, dtype=float)
        out[key] = column
    return out


def _span(columns: dict, keys) -> tuple[float, float]:
    """Smallest and largest finite value of ``columns[key]`` over ``keys``."""
    values = np.concatenate([np.asarray(columns[key], float) for key in keys])
    values = values[np.isfinite(values)]
    return (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)


def _set_range(axis_range: Range1d, lo: float, hi: float, pad: float = 0.05) -> None:
    """Show [lo, hi] plus ``pad`` of its width on each side (what DataRange1d's default padding shows)."""
    width = hi - lo if hi > lo else max(abs(hi), 1.0)
    axis_range.update(start=lo - pad * width, end=hi + pad * width)


#: Font sizes in projector mode are this many times the normal ones.
PROJECTOR_SCALE = 1.7


#: Lines are this many times wider in projector mode (EP's dashes stay visible beside QP's line:
#: the dash patterns grow with them), and markers this many times larger.
PROJECTOR_LINE_SCALE = 1.8
PROJECTOR_MARKER_SCALE = 1.4
#: Bokeh's named dash patterns, as on/off lengths in pixels (scaled with the line in projector mode).
DASH_PATTERNS = {"solid": [], "dashed": [6], "dotted": [2, 4], "dotdash": [2, 4, 6, 4], "dashdot": [6, 4, 2, 4]}
#: A legend entry's label longer than this (characters) puts two entries, not three, in a row.
LONG_LABEL = 16
#: Height of one row of a legend below the plot (px, normal size).
LEGEND_ROW = 22

#: Entries per legend row below a plot in projector mode.
PROJECTOR_LEGEND_COLUMNS = 2
#: A legend's own number of entries per row (below its plot), before projector mode changed it.
_BASE_COLUMNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: A glyph's own line width, dash and size, before projector mode scaled them.
_BASE_LOOK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def legend_below(fig, ncols: int = 3) -> None:
    """Put the figure's legends below its plot area, in rows of ``ncols`` entries (a click on an
    entry still hides its lines). Inside the plot a legend covered data, and a click meant for the
    plot (e.g. adding a point) toggled a method instead."""
    for legend in list(fig.legend):
        if legend in fig.center:
            fig.center.remove(legend)
        n_items = len(legend.items)
        labels = [getattr(item.label, "value", None) or str(item.label or "") for item in legend.items]
        if max(map(len, labels), default=0) > LONG_LABEL:  # long labels: rows of two fit a half-width plot
            ncols = min(ncols, 2)
        legend.update(orientation="horizontal", ncols=max(1, min(ncols, n_items)), click_policy="hide", margin=0,
                      padding=4, spacing=12, background_fill_alpha=1.0, border_line_alpha=0.0)
        if legend not in fig.below:
            fig.add_layout(legend, "below")


def _legend_rows(fig) -> int:
    rows = 0
    for legend in fig.legend:
        if legend in fig.below:
            ncols = legend.ncols if isinstance(legend.ncols, int) else len(legend.items)
            rows += math.ceil(len(legend.items) / max(ncols, 1))
    return rows


def _scale_glyphs(fig, projector: bool) -> None:
    """Line widths, dash patterns and marker sizes of every glyph: the glyph's own, or scaled."""
    line, marker = (PROJECTOR_LINE_SCALE, PROJECTOR_MARKER_SCALE) if projector else (1.0, 1.0)
    for renderer in fig.renderers:
        if not isinstance(renderer, GlyphRenderer):
            continue
        for glyph in (renderer.glyph, renderer.nonselection_glyph, renderer.muted_glyph):
            if glyph is None or not hasattr(glyph, "line_width"):
                continue
            base = _BASE_LOOK.get(glyph)
            if base is None:
                width = glyph.line_width if isinstance(glyph.line_width, (int, float)) else None
                dash = getattr(glyph, "line_dash", None)
                size = getattr(glyph, "size", None)
                base = _BASE_LOOK[glyph] = (width, DASH_PATTERNS.get(dash, dash) if isinstance(dash, str) else dash,
                                            size if isinstance(size, (int, float)) else None)
            width, dash, size = base
            if width is not None:
                glyph.line_width = width * line
            if isinstance(dash, list):
                glyph.line_dash = [round(length * line) for length in dash]
            if size is not None:
                glyph.size = size * marker


def style_figure(fig, projector: bool) -> None:
    """Font sizes, line widths and height of one figure, its legends and colour bars (larger in
    projector mode); a legend below the plot gets its own room (the plot area keeps its height)."""
    scale = PROJECTOR_SCALE if projector else 1.0
    fig.title.text_font_size = f"{round(13 * scale)}px"
    for axis in (*fig.xaxis, *fig.yaxis):
        axis.axis_label_text_font_size = f"{round(13 * scale)}px"
        axis.major_label_text_font_size = f"{round(11 * scale)}px"
    for legend in fig.legend:
        legend.label_text_font_size = f"{round(12 * scale)}px"
        if legend in fig.below:  # rows of at most two entries in projector mode: wider than the plot, it ran over the controls
            columns = _BASE_COLUMNS.setdefault(legend, legend.ncols if isinstance(legend.ncols, int) else len(legend.items))
            legend.ncols = min(columns, PROJECTOR_LEGEND_COLUMNS) if projector else columns
        legend.glyph_width = round(20 * (PROJECTOR_LINE_SCALE if projector else 1.0))
        legend.glyph_height = round(20 * scale)
        legend.label_height = round(20 * scale)
    for bar in (r for side in (fig.right, fig.left, fig.below, fig.above) for r in side if isinstance(r, ColorBar)):
        bar.major_label_text_font_size = f"{round(11 * scale)}px"
        bar.title_text_font_size = f"{round(12 * scale)}px"
    _scale_glyphs(fig, projector)
    fig.height = (430 if projector else 330) + round(LEGEND_ROW * scale) * _legend_rows(fig)


class EmptyExtent:
    """An invisible extent for a figure whose data arrive later (optimisation steps, training
    curves): Bokeh's data ranges need some finite data, else the browser logs "could not set
    initial ranges" at every draw. :meth:`follow` tells it whether the figure has data of its own
    (the extent is dropped then, so it does not widen the ranges)."""

    def __init__(self, fig, x=(0.0, 1.0), y=(0.0, 1.0)):
        self.extent = {"x": list(x), "y": list(y)}
        self.source = ColumnDataSource(dict(self.extent))
        fig.scatter("x", "y", source=self.source, size=0, alpha=0.0)

    def follow(self, has_data: bool) -> None:
        """Drop the extent while the figure has data, bring it back when it has none (sends
        nothing when that does not change)."""
        if bool(len(self.source.data["x"])) == has_data:
            self.source.data = {"x": [], "y": []} if has_data else dict(self.extent)


class ExplorerFigures:
    """Bokeh figures for views (a), (b) and (b'), fed by ColumnDataSources that each update
    changes in place (no re-render: only the new arrays travel to the browser), and the data
    source of the cavity marker drawn on the map (d).

    The quantile view and the Q-Q view share one source (x = u and x = z over the same
    quantiles; the Q-Q points are every third row through an IndexFilter), and its u and z
    columns never change, so a cavity move sends the density columns and three quantile
    columns. The axis ranges are computed here (Range1d) rather than by the browser
    (DataRange1d), which would send each new range back to the server after every move.
    """

    def __init__(self, cavity_mean: float, cavity_std: float):
        self.sources = {
            "densities": ColumnDataSource(data={"x": [], **{k: [] for k in CURVES["densities"]}}),
            "quantiles": ColumnDataSource(data={"u": [], "z": [], **{k: [] for k in CURVES["quantiles"]}}),
        }
        self.marker = ColumnDataSource(data={"x": [cavity_mean], "y": [cavity_std]})
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
            legend_below(fig)

    def show(self, state: explorer.ExplorerState) -> None:
        """Push the state's current result into the figures and the marker (call inside pn.io.hold)."""
        s = state
        d, q, summary = s.result.densities, s.result.quantiles, s.result.summary
        shown = [key for key, visible in (("ep", s.show_ep), ("qp", s.show_qp)) if visible]
        show_columns(self.sources["densities"], {"x": d["x"], **{k: d[k] for k in CURVES["densities"]}})
        show_columns(self.sources["quantiles"], {k: q[k] for k in CURVES["quantiles"]}, fixed={"u": q["u"], "z": q["z"]})
        _set_range(self.ranges["densities"][0], d["x"][0], d["x"][-1], pad=0.0)
        _set_range(self.ranges["densities"][1], *_span(d, ("cavity", "likelihood", "tilted", *shown)))
        _set_range(self.ranges["quantiles"][0], 0.0, 1.0)
        _set_range(self.ranges["qq"][0], q["z"][0], q["z"][-1])
        quantile_span = _span(q, ("tilted", *shown))
        _set_range(self.ranges["quantiles"][1], *quantile_span)
        _set_range(self.ranges["qq"][1], *quantile_span)
        # two lines: one line did not fit the plot's width in projector mode
        self.figures["densities"].title.text = (
            f"(a) densities: {s.likelihood}, y = {s.y:g},\ncavity m = {s.cavity_mean:.2f}, s = {s.cavity_std:.2f}"
        )
        self.figures["quantiles"].title.text = f"(b) quantile functions: mean = {summary['mean']:.4f}"
        self.figures["qq"].title.text = (
            f"(b') Q-Q: σ_EP = {np.sqrt(summary['var_ep']):.4f}, σ_QP = {np.sqrt(summary['var_qp']):.4f}"
        )
        for renderers in self.renderers.values():
            for key, visible in (("ep", s.show_ep), ("qp", s.show_qp)):
                renderers[key].visible = visible
        show_columns(self.marker, {"x": [s.cavity_mean], "y": [s.cavity_std]})

    def style(self, projector: bool) -> None:
        """Font sizes of the three figures (larger in projector mode)."""
        for fig in self.figures.values():
            style_figure(fig, projector)
            # a fixed room for the y tick labels: a cavity move that changes their width then
            # repaints the figure without laying the page out again (~10 ms per move measured)
            fig.min_border_left = 100 if projector else 70


def centred_image(xs: np.ndarray, ys: np.ndarray) -> dict:
    """Where a Bokeh image of values on the grid ``xs`` x ``ys`` goes (its ``x``, ``y``, ``dw`` and
    ``dh`` columns) so that each pixel is centred on its grid point."""
    lo, hi, blo, bhi = float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1])
    half_x, half_y = (hi - lo) / (len(xs) - 1) / 2, (bhi - blo) / (len(ys) - 1) / 2
    return {"x": [lo - half_x], "y": [blo - half_y], "dw": [hi - lo + 2 * half_x], "dh": [bhi - blo + 2 * half_y]}


#: The ratio of view (d), as the hover tool and the colour bar name it.
RATIO_LABEL = "var_QP / var_EP"


@dataclass(frozen=True)
class MapView:
    """What view (d) draws: ``ratio[i_std, i_mean]`` on the grid ``means`` x ``stds``, its title
    and its colour range (``low``, ``high``)."""

    means: np.ndarray
    stds: np.ndarray
    ratio: np.ndarray
    title: str
    low: float
    high: float


def map_view(data: dict | None, likelihood: str, y, scale: str = "own") -> MapView:
    """View (d) of a ratio map (:func:`qpviz.explorer.ratio_map`'s dict; None: it could not be
    computed, shown as "not available" over the valid cavities), in its own colour range (its
    smallest to largest ratio) or, ``scale`` "common", in explorer.COMMON_RATIO_SCALE."""
    title = f"(d) {RATIO_LABEL} for {likelihood}, y = {float(y):g}"
    if data is None:
        data = {"means": np.array(explorer.CAVITY_MEAN_SLIDER), "stds": np.array(explorer.CAVITY_STD_SLIDER),
                "ratio": np.full((2, 2), np.nan)}
        title += ": not available"
    ratio = data["ratio"]
    finite = ratio[np.isfinite(ratio)]
    if scale == "common":
        low, high = explorer.COMMON_RATIO_SCALE
    elif finite.size:
        low, high = float(finite.min()), float(finite.max())
        if not high > low:  # one value everywhere (a Gaussian likelihood: ratio 1): its colour is the top one
            low = high - 0.01
    else:
        low, high = explorer.COMMON_RATIO_SCALE
    return MapView(data["means"], data["stds"], ratio, title, low, high)


class RatioMap:
    """View (d): the var_QP/var_EP map as a Bokeh image (canvas, not WebGL: without a GPU, as on
    classroom laptops and CI, canvas draws faster), with its colour bar, a hover tool, the cavity
    marker and a click that calls ``on_tap(mean, std)``.

    Plain Bokeh rather than a HoloViews element: HoloViews, and the pandas and colorcet it imported
    to draw one image, cost the page's first build about a second (issue 22 point 4). The axes
    show the valid cavities only, and zoom and pan stay within them (the image's half pixels beyond
    them include a negative std). :meth:`show` replaces the image's data in place.
    """

    def __init__(self, marker: ColumnDataSource, on_tap):
        (mean_lo, mean_hi), (std_lo, std_hi) = explorer.CAVITY_MEAN_SLIDER, explorer.CAVITY_STD_SLIDER
        self.colours = LinearColorMapper(palette=list(Cividis256), low=0.0, high=1.0, nan_color="#d9d9d9")
        self.source = ColumnDataSource({"ratio": [np.full((2, 2), np.nan)], "x": [mean_lo], "y": [std_lo],
                                        "dw": [mean_hi - mean_lo], "dh": [std_hi - std_lo]})
        fig = figure(x_range=Range1d(mean_lo, mean_hi, bounds=(mean_lo, mean_hi)),
                     y_range=Range1d(std_lo, std_hi, bounds=(std_lo, std_hi)),
                     x_axis_label="cavity mean m", y_axis_label="cavity std s", height=330, min_width=300,
                     sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset,save", active_scroll="wheel_zoom",
                     toolbar_location="right", output_backend="canvas")
        image = fig.image(image="ratio", x="x", y="y", dw="dw", dh="dh", source=self.source, color_mapper=self.colours)
        fig.add_tools(HoverTool(renderers=[image], tooltips=[
            ("cavity mean m", "$x{0.00}"), ("cavity std s", "$y{0.00}"), (RATIO_LABEL, "@ratio{0.0000}")]))
        fig.add_layout(ColorBar(color_mapper=self.colours, width=12), "right")
        fig.grid.visible = False
        # level "overlay": Bokeh repaints only the overlay canvas of the map when the marker moves,
        # not the image, axes and colour bar beneath it
        fig.scatter("x", "y", source=marker, marker="circle_x", size=18, line_width=2.5, line_color="black",
                    fill_color="white", level="overlay")
        fig.on_event(events.Tap, lambda event: on_tap(event.x, event.y))
        self.figure = fig

    def show(self, view: MapView) -> None:
        """Draw ``view`` (call inside pn.io.hold)."""
        self.source.data = {"ratio": [view.ratio], **centred_image(view.means, view.stds)}
        self.colours.update(low=view.low, high=view.high)
        self.figure.title.text = view.title
