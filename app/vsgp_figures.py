"""The VSGP page's Bokeh figures: the VSGP and FITC probability maps (:class:`gp_2d_figures.GridFigure`
each, patched in place) with their contours, the data, the basis points' 2-sd ellipses (VSGP) and
the draggable centres (both maps share the centres' source), and the numbers table. Nothing here
reads widgets: :meth:`VSGPFigures.show` draws what a ``VSGPModel`` holds.
"""
from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, PointDrawTool

from colours import METHOD_COLOURS
from explorer_figures import html_table, legend_below
from gp_2d_figures import PROBA_PALETTE, GridFigure
from qpviz.gpdemo.vsgp_model import KINDS

__all__ = ["VSGPFigures", "CASING", "EXPLANATIONS", "RULE", "numbers_table"]

#: Under each map's contours an outline of this colour keeps them visible on the grey map.
CASING = {"vsgp": "black", "fitc": "white"}

#: The rule that sets the local covariances, in one sentence (shown on the page).
RULE = ("Local covariances: C_j = blur × the covariance of the training points nearest to centre b_j "
        "(its K-means cluster); spherical uses (trace / 2)·I; blur 0 gives FITC.")

#: Below each view: two lines of explanation and its formula (paper 002 eqs. 5 and 14).
EXPLANATIONS = {
    "vsgp": (
        "VSGP: each basis point b_j summarises f blurred by a Gaussian N(b_j, C_j) (ellipses: 2 sd); the blurred "
        "covariance K̃ replaces k(x, b_j), so a few wide basis points can follow a long boundary. Drag a centre.",
        r"$$\begin{gathered}q(f)\propto GP(f\mid0,K)\prod_j\mathcal N\big(u_j\mid\bar f_j,\lambda_j^{-1}\big)\ \text{(5)},"
        r"\\\bar f_j=\!\int\! f(x)\mathcal N(x\mid b_j,C_j)dx,\\\tilde K(x,b_j)=\sigma_f^2\sqrt{\tfrac{|\Lambda|}{|\Lambda+C_j|}}"
        r"\,e^{-\frac12(x-b_j)^\top(\Lambda+C_j)^{-1}(x-b_j)}\ \text{(14)}\end{gathered}$$",
    ),
    "fitc": (
        "FITC on the same centres: the blur N(b_j, C_j) shrinks to a point (C_j → 0), so u_j = f(b_j) and "
        "K̃(x, b_j) = k(x, b_j): each centre only reaches about one length-scale around it.",
        r"$$\begin{gathered}q(f)\propto GP(f\mid0,K)\prod_j\mathcal N\big(u_j\mid f(b_j),\lambda_j^{-1}\big)\ "
        r"\text{(5, } C_j\to0),\\\tilde K(x,b_j)=k(x,b_j)\ \text{(14, } C_j=0)\end{gathered}$$",
    ),
    "table": (
        "Each fit on a held-out set of 1000 points from the same preset: the fraction on the wrong side of "
        "p = 1/2 and the negative test log-likelihood (lower is better); log evidence: the EP / QP energy's log Z.",
        r"$$\mathrm{err}=\tfrac1T\sum_t\mathbb 1[y_t m_t\le0],\quad \mathrm{NTLL}=-\tfrac1T\sum_t"
        r"\log\Phi\Big(\frac{y_t m_t}{\sqrt{1+v_t}}\Big)$$",
    ),
}


def _number(value: float, digits: int = 3) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def numbers_table(fits: dict) -> str:
    """HTML table, one row per map: test error, NTLL, log evidence, converged, fit + grid time."""
    rows = [[f'<span style="color:{METHOD_COLOURS[kind]}">■</span> {label}', _number(fits[kind].test_error),
             _number(fits[kind].ntll), _number(fits[kind].log_evidence, 2),
             "yes" if fits[kind].converged else "<strong>no</strong>", f"{1000 * sum(fits[kind].seconds):.0f}"]
            for kind, label in KINDS.items()]
    return html_table(["", "test error", "NTLL", "log evidence", "converged", "time (ms)"], rows)


class VSGPFigures:
    """The two maps (``figures``: kind -> GridFigure), the centres' and the ellipses' sources."""

    def __init__(self):
        self.centre_source = ColumnDataSource({"x": [], "y": []})
        self.ellipse_source = ColumnDataSource({"x": [], "y": [], "width": [], "height": [], "angle": []})
        self.figures = {}
        for kind, label in KINDS.items():
            self.figures[kind] = GridFigure("p(y=+1|x)", PROBA_PALETTE, (0.0, 1.0), contour_colour=METHOD_COLOURS[kind],
                                            contour_label=label, casing=CASING[kind])
            self._add_basis_points(kind)

    def _add_basis_points(self, kind: str) -> None:
        """Ellipses (VSGP only) and the draggable centres on one map."""
        fig = self.figures[kind].figure
        colour = METHOD_COLOURS[kind]
        if kind == "vsgp":
            fig.ellipse("x", "y", width="width", height="height", angle="angle", source=self.ellipse_source,
                        fill_color=colour, fill_alpha=0.15, line_color=colour, line_width=2,
                        legend_label="basis blur N(b_j, C_j), 2 sd")
        centres = fig.scatter("x", "y", source=self.centre_source, marker="diamond", size=16, fill_color="white",
                              line_color=colour if kind == "vsgp" else "black", line_width=2.5,
                              legend_label="centre b_j (drag)")
        legend_below(fig, ncols=2)  # five or six entries: rows of two (rows of three ran over the controls at 1280 px)
        draw_tool = PointDrawTool(renderers=[centres], add=False, description="Drag a centre")
        fig.add_tools(draw_tool)
        fig.toolbar.active_drag = draw_tool

    def show(self, model) -> None:
        """Push the model's last good fits into the figures (sources patched in place); the
        centres' source gets the centres fitted (its echo is no move: ``VSGPModel.move_centres``)."""
        X, y, Z, _ = model.shown
        for kind in KINDS:
            fit = model.fits[kind]
            self.figures[kind].show(fit, fit.proba, X, y, model.title(kind))
        self.ellipse_source.data = model.ellipses()
        self.centre_source.data = {"x": Z[:, 0], "y": Z[:, 1]}

    def style(self, projector: bool) -> None:
        for grid_figure in self.figures.values():
            grid_figure.style(projector)
