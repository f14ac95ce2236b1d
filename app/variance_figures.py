"""The Variance effects page's views: the QP paper's Figure 1 scatter of var_QP against var_EP per
held-out point (log axes, the diagonal QP = EP) and the histogram of var_QP / var_EP
(:class:`VarianceFigures`), the sentence saying what to see in each view (:func:`explanations`),
their formulas and the table of TE / NTLL per method (:func:`scores_html`).
"""
from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, LogTicker, Range1d
from bokeh.plotting import figure

from colours import METHOD_COLOURS as COLOURS
from explorer_figures import legend_below
import safe_text
from qpviz import variance_effects as ve

__all__ = ["COLOURS", "LABELS", "FORMULAS", "VarianceFigures", "explanations", "scores_html"]

#: One colour per method on every page (Okabe-Ito, colour-blind safe).
LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace"}

FORMULAS = {
    "scatter": r"$$\sigma^2_*=k(x_*,x_*)-\mathbf k_*^\top\big(K+\tilde\Sigma\big)^{-1}\mathbf k_*,"
               r"\qquad \sigma^2_{*,QP}\le\sigma^2_{*,EP}$$",
    "ratio": r"$$r_*=\sigma^2_{*,QP}\,/\,\sigma^2_{*,EP}\in(0,1]$$",
    "scores": r"$$\mathrm{TE}=\frac1m\sum_i\frac{|y_i-\hat y_i|}{2},\qquad "
              r"\mathrm{NTLL}=-\frac1m\sum_i\log q(y_i\mid x_i)$$",
}


def explanations(result: ve.VarianceResult) -> dict:
    """One sentence per view saying what the reader should see in ``result``."""
    n, above, ratio = result.n_test, result.n_above, result.ratio
    if above == 0:
        scatter = (f"All {n} held-out points lie on or below the dashed diagonal: QP never reports more latent "
                   "variance than EP, because each QP projection is at most as wide as EP's (Theorem 2), which "
                   "makes QP's sites more precise.")
    else:
        scatter = (f"{above} of {n} held-out points lie above the dashed diagonal (QP more uncertain than EP), "
                   "against the paper's Figure 1: check the fits' warnings below.")
    shrink = 100.0 * (1.0 - float(ratio.min()))
    hint = "" if result.settings.optimise else " (turn on optimisation: with the default kernel they crowd at 1)"
    histogram = (f"The ratios lie between {ratio.min():.4f} and {ratio.max():.4f} (median {np.median(ratio):.4f}): "
                 f"QP's latent variance is up to {shrink:.1f}% below EP's{hint}.")
    ep, qp = result.scores["ep"], result.scores["qp"]
    if qp["ntll"] <= ep["ntll"]:
        verdict = "the smaller variance costs nothing here"
    else:
        verdict = "here the smaller variance costs a little"
    scores = (f"Lower is better in both columns; QP's TE is {qp['test_error']:.3f} against EP's "
              f"{ep['test_error']:.3f} and its NTLL {qp['ntll']:.4f} against {ep['ntll']:.4f}: {verdict}.")
    return {"scatter": scatter, "ratio": histogram, "scores": scores}


def scores_html(result: ve.VarianceResult) -> str:
    """TE / NTLL / fit time per method, and the fitted kernels, as an HTML table."""
    rows = []
    for method in ve.METHODS:
        swatch = f'<span style="color:{COLOURS[method]}">&#9632;</span>'
        score = result.scores[method]
        if method in result.skipped:
            rows.append(f"<tr><td>{swatch} {LABELS[method]}</td><td>n/a</td><td>n/a</td><td>not fitted</td></tr>")
            continue
        rows.append(f"<tr><td>{swatch} {LABELS[method]}</td><td>{score['test_error']:.4f}</td>"
                    f"<td>{score['ntll']:.4f}</td><td>{result.seconds[method]:.2f}</td></tr>")
    head = "<tr><th>method</th><th>TE</th><th>NTLL</th><th>fit time (s)</th></tr>"
    kernel = ", ".join(f"{k} = {v:.4g}" for k, v in result.hyperparameters.items())
    vb_kernel = ", ".join(f"{k} = {v:.4g}" for k, v in result.vb_hyperparameters.items()) or "not fitted"
    note = (f"<p>{result.n_train} training and {result.n_test} held-out points, {result.n_features} feature(s). "
            f"Kernel of EP, QP and Laplace: {kernel}; VB's: {vb_kernel}.</p>")
    warned = "".join(f"<li>{safe_text.html_text(w, safe_text.MESSAGE_LIMIT)}</li>" for w in result.warnings)
    warned += "".join(f"<li>{LABELS[m]} not fitted: {safe_text.html_text(why, safe_text.MESSAGE_LIMIT)}</li>"
                      for m, why in result.skipped.items())
    return (f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>{note}"
            + (f"<p>Warnings:</p><ul>{warned}</ul>" if warned else ""))


class VarianceFigures:
    """The scatter (``figures["scatter"]``) and the histogram (``figures["ratio"]``), drawn by :meth:`draw`."""

    def __init__(self):
        self.scatter_source = ColumnDataSource(data={"var_ep": [], "var_qp": [], "ratio": []})
        self.diagonal_source = ColumnDataSource(data={"x": [], "y": []})
        self.histogram_source = ColumnDataSource(data={"left": [], "right": [], "count": []})
        self.one_source = ColumnDataSource(data={"x": [1.0, 1.0], "y": [0.0, 1.0]})
        self.scatter_range = Range1d(0.1, 1.0)
        scatter = figure(x_axis_type="log", y_axis_type="log", x_range=self.scatter_range, y_range=self.scatter_range,
                         x_axis_label="EP predictive latent variance var_EP(x*)",
                         y_axis_label="QP predictive latent variance var_QP(x*)", title="Figure 1")
        scatter.line("x", "y", source=self.diagonal_source, line_dash="dashed", color="black", line_width=1.5,
                     legend_label="QP = EP")
        points = scatter.scatter("var_ep", "var_qp", source=self.scatter_source, size=9, color=COLOURS["qp"],
                                 line_color="black", alpha=0.8, legend_label="held-out point (var_EP, var_QP)")
        scatter.add_tools(HoverTool(renderers=[points], tooltips=[("var_EP", "@var_ep{0.0000e}"),
                                                                  ("var_QP", "@var_qp{0.0000e}"),
                                                                  ("ratio", "@ratio{0.0000}")]))
        histogram = figure(x_axis_label="var_QP / var_EP", y_axis_label="number of held-out points",
                           title="Histogram of the ratio")
        histogram.quad(left="left", right="right", bottom=0, top="count", source=self.histogram_source,
                       fill_color=COLOURS["qp"], line_color="white", alpha=0.85, legend_label="held-out points")
        histogram.line("x", "y", source=self.one_source, color="black", line_dash="dashed", line_width=1.5,
                       legend_label="ratio = 1 (QP = EP)")
        for axis in (*scatter.xaxis, *scatter.yaxis):
            # ticks at 1, 2, 5 x 10^k: labelled but not crowded on a narrow (1024 px) screen
            axis.ticker = LogTicker(mantissas=[1, 2, 5], desired_num_ticks=5)
        for fig in (scatter, histogram):
            fig.sizing_mode = "stretch_width"
            fig.min_width = 320
            fig.toolbar_location = "right"
            legend_below(fig)
        self.figures = {"scatter": scatter, "ratio": histogram}

    def draw(self, result: ve.VarianceResult) -> None:
        """``result``'s variances and ratios into the figures (each source's data replaced whole)."""
        ratio = result.ratio
        self.scatter_source.data = {"var_ep": result.var_ep, "var_qp": result.var_qp, "ratio": ratio}
        both = np.concatenate([result.var_ep, result.var_qp])
        lo, hi = float(both.min()), float(both.max())
        lo, hi = lo / 1.3, hi * 1.3  # a margin on the log scale
        self.scatter_range.update(start=lo, end=hi)
        self.diagonal_source.data = {"x": [lo, hi], "y": [lo, hi]}
        bins = int(np.clip(result.n_test // 2, 5, 30))
        low = min(float(ratio.min()), 1.0 - 1e-6)
        counts, edges = np.histogram(ratio, bins=bins, range=(low, 1.0))
        self.histogram_source.data = {"left": edges[:-1], "right": edges[1:], "count": counts}
        self.one_source.data = {"x": [1.0, 1.0], "y": [0.0, float(counts.max())]}
        self.figures["scatter"].title.text = f"Figure 1: {result.name},\n{result.n_test} held-out points"
        self.figures["ratio"].title.text = f"var_QP / var_EP on {result.name}"
