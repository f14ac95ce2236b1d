"""Figure 1 of the QP paper drawn live on the Paper results page: (a) QP's against EP's predictive
latent variance at every held-out point (log axes, the diagonal QP = EP dashed), (b) their ratio
against EP's variance. Zoom, pan and hover (dataset, round, fold, test point, both variances, the
ratio); a click on a legend entry hides that dataset in both views.

The points are read from the committed per-fold records (``folds.jsonl``, which hold each test
point's EP and QP variance) by :func:`qpviz.reproduce.report.figure1_table`; this module only draws.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, LogTicker
from bokeh.plotting import figure

from explorer_figures import style_figure
from qpviz.gpdemo.jobs import LRUCache
from qpviz.reproduce.datasets import DATASETS
from qpviz.reproduce.report import dataset_style, figure1_summary, figure1_table, read_jsonl

__all__ = ["TOOLS", "TOOLTIPS", "load_points", "figure1_figures", "summary_text"]

#: Every view zooms, pans and resets; hover is added per view
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
#: Figure 1's points per file version (path, size, modification time): the pages' one cache class
POINTS_CACHE = LRUCache(4)
TOOLTIPS = [("dataset", "@dataset"), ("round, fold", "@round, @fold"), ("test point", "@point"),
            ("var_EP", "@var_ep{0.0000e}"), ("var_QP", "@var_qp{0.0000e}"), ("var_QP / var_EP", "@ratio{0.00000}")]
#: how a point is drawn (many overlap: small and translucent)
POINT_STYLE = {"size": 5, "alpha": 0.5, "line_alpha": 0.0}


def load_points(path) -> tuple[dict, dict]:
    """(:func:`figure1_table` of the records in ``path``, {dataset: points left out}); cached per
    file version (path, size, modification time). OSError / ValueError when it cannot be read."""
    stat = Path(path).stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    table = POINTS_CACHE.get_recent(key)
    if table is None:
        table = figure1_table(read_jsonl(path), order=DATASETS)
        POINTS_CACHE.put(key, table)
    return table


def _ticks(fig) -> None:
    for axis in fig.xaxis:
        axis.ticker = LogTicker(desired_num_ticks=6)
    if fig.y_scale.__class__.__name__ == "LogScale":
        fig.yaxis[0].ticker = LogTicker(desired_num_ticks=6)


def figure1_figures(table: dict, projector: bool = False) -> dict:
    """{"scatter": (a), "ratio": (b)} of a :func:`figure1_table` with at least one point: one
    renderer per dataset in each (colour and marker of :func:`dataset_style`), the legend on (a);
    hiding a dataset there hides it in (b) too."""
    ep, qp = table["var_ep"], table["var_qp"]
    low, high = float(min(ep.min(), qp.min())), float(max(ep.max(), qp.max()))
    scatter = figure(x_axis_type="log", y_axis_type="log", tools=TOOLS, title="(a) var_QP against var_EP",
                     x_axis_label="EP predictive latent variance", y_axis_label="QP predictive latent variance")
    ratio = figure(x_axis_type="log", tools=TOOLS, title="(b) var_QP / var_EP",
                   x_axis_label="EP predictive latent variance", y_axis_label="var_QP / var_EP")
    ratio.x_range = scatter.x_range  # zooming one along EP's variance zooms both
    scatter.line([low, high], [low, high], line_dash="dashed", color="black", line_width=1.5, legend_label="QP = EP")
    ratio.line([low, high], [1.0, 1.0], line_dash="dashed", color="black", line_width=1.5)
    pairs = []
    for i, name in enumerate(dict.fromkeys(table["dataset"].tolist())):
        keep = table["dataset"] == name
        source = ColumnDataSource({column: values[keep] for column, values in table.items()})
        colour, marker = dataset_style(i)
        a = scatter.scatter("var_ep", "var_qp", source=source, marker=marker, color=colour, legend_label=name,
                            **POINT_STYLE)
        b = ratio.scatter("var_ep", "ratio", source=source, marker=marker, color=colour, **POINT_STYLE)
        a.js_link("visible", b, "visible")
        pairs.append((a, b))
    for fig, index in ((scatter, 0), (ratio, 1)):
        fig.add_tools(HoverTool(renderers=[pair[index] for pair in pairs], tooltips=TOOLTIPS))
        fig.sizing_mode, fig.min_width, fig.toolbar_location = "stretch_width", 320, "right"
        _ticks(fig)
    scatter.legend.click_policy = "hide"
    scatter.legend.background_fill_alpha = 0.7
    # above the diagonal, where Theorem 2 leaves the plot empty (outside, it took a third of a small screen)
    scatter.legend.location = "top_left"
    scatter.legend.ncols = 2
    figures = {"scatter": scatter, "ratio": ratio}
    for fig in figures.values():
        style_figure(fig, projector)
    return figures


def summary_text(table: dict, dropped: dict, source: str) -> str:
    """One paragraph under the figure, plain text (it quotes the file's dataset names: show it
    through ``safe_text.message``): how many points from ``source``, how many lie above the diagonal
    (per dataset, with the largest excess) and what was left out."""
    summary = figure1_summary(table)
    total = sum(s["points"] for s in summary.values())
    above = {name: s for name, s in summary.items() if s["above"]}
    text = f"{total:,} held-out points of {len(summary)} datasets, from {source}. "
    if above:
        text += "QP's variance lies above EP's at " + "; ".join(
            f"{s['above']} of {s['points']} points of {name} (by at most {100 * (s['max_ratio'] - 1):.2f}%)"
            for name, s in above.items()) + "; at every other point it is at most EP's."
    else:
        text += "QP's variance is at most EP's at every point."
    if dropped:
        text += " Left out (a variance missing, zero, negative or not finite): " + ", ".join(
            f"{n} of {name}" for name, n in dropped.items()) + "."
    median = np.median(table["ratio"])
    return text + f" Median var_QP / var_EP over all points: {median:.4f}."
