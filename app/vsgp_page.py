"""VSGP page: basis points with their own covariances (paper 002) beside FITC on the same centres.

A thin Panel view over :mod:`qpviz.gpdemo.vsgp_demo`: two probability maps side by side, VSGP
(each basis point b_j blurred by N(b_j, C_j)) and FITC (C_j = 0) with the same centres, each
with its 0.1 / 0.5 / 0.9 contours, the data and the basis points (VSGP: 2-sd ellipses of the
C_j); under them each fit's held-out test error, NTLL and log evidence. C_j = blur x the sample
covariance of b_j's cluster (full, or its trace / 2 times I): the rule is in
:func:`qpviz.gpdemo.vsgp_demo.local_covariances`.

The centres are dragged with Bokeh's point-draw tool (the maps' active drag tool; both maps
share the centres' data source): the browser sends the new positions when a drag ends, the page
stores them in ``centres`` (and the URL) and refits. The M slider, a new preset, n or seed go
back to K-means centres. Fits are cached by (data, kernel, centres, C, method)
(:class:`vsgp_demo.FitCache`): a blur step refits VSGP only, FITC comes from the cache. Figures
are :class:`gp_2d_figures.GridFigure`\\ s patched in place, built when the tab is first drawn.
"""
from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, PointDrawTool

from colours import METHOD_COLOURS
from explorer_figures import NumbersPane, _table as html_table, legend_below
from explorer_widgets import PromptFloatSlider, PromptIntSlider
from figure_export import export_buttons
from gp_2d_figures import PROBA_PALETTE, GridFigure
from layout import enlarge, explained, set_projector, view_row
from number_field import LinkValues, NumberField, link_banner, range_checks
import pages
import safe_text
from qpviz.checks import quoted
from qpviz.gpdemo import twod, vsgp_demo
from qpviz.kernels import RBF

__all__ = ["TITLE", "RANGES", "URL_KEYS", "KINDS", "VSGPPage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: The two maps: VSGP (blurred basis points) and FITC (the same centres, C_j = 0).
KINDS = {"vsgp": "VSGP", "fitc": "FITC"}
#: Under each map's contours an outline of this colour keeps them visible on the grey map.
CASING = {"vsgp": "black", "fitc": "white"}
METHOD_LABELS = {"ep": "EP", "qp": "QP"}
#: Valid range of each numeric input (the sliders span it; the URL may ask for anything).
RANGES = {"n": (20, 500), "seed": (0, 10_000), "m": (1, 40), "blur": (0.0, 3.0), "variance": (0.1, 20.0),
          "lengthscale": (0.1, 5.0)}
#: The seed's typed box (the other numbers are sliders).
SEED = NumberField("seed", *RANGES["seed"], integer=True)
#: Grid points along each axis (50 x 50: a drag refits and redraws within 250 ms at N = 500, M = 20).
GRID_SIZE = 50
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"preset": "vs_preset", "n": "vs_n", "seed": "vs_seed", "m": "vs_m", "blur": "vs_blur",
            "shape": "vs_shape", "method": "vs_method", "variance": "vs_var", "lengthscale": "vs_ls",
            "centres": "vs_centres"}
#: The error message's look (GP 2-D's).
ALERT_STYLES = {"background": "#fbe3d6", "border": "2px solid #D55E00", "border-radius": "4px", "padding": "0 12px"}
#: Centres are kept (and put in the URL) to this many decimals.
CENTRE_DECIMALS = 3

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


def out_of_range(values: dict) -> list[str]:
    """For each input of ``values`` (name -> value) outside RANGES, or not a finite number, one
    sentence saying what to change ([] if every one is good)."""
    problems = []
    for name, value in values.items():
        lo, hi = RANGES[name]
        try:
            good = lo <= float(value) <= hi  # False for NaN
        except (TypeError, ValueError):
            good = False
        if not good:
            problems.append(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}")
    return problems


def _number(value: float, digits: int = 3) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def numbers_table(fits: dict) -> str:
    """HTML table, one row per map: test error, NTLL, log evidence, converged, fit + grid time."""
    rows = [[f'<span style="color:{METHOD_COLOURS[kind]}">■</span> {label}', _number(fits[kind].test_error),
             _number(fits[kind].ntll), _number(fits[kind].log_evidence, 2),
             "yes" if fits[kind].converged else "<strong>no</strong>", f"{1000 * sum(fits[kind].seconds):.0f}"]
            for kind, label in KINDS.items()]
    return html_table(["", "test error", "NTLL", "log evidence", "converged", "time (ms)"], rows)


class VSGPPage(pn.viewable.Viewer):
    """The page: controls on the left; the VSGP and FITC maps side by side, the numbers below."""

    preset = param.Selector(objects=list(vsgp_demo.PRESETS), default="circle", doc="Data preset.")
    n = param.Integer(default=200, doc="Number of training points.")
    seed = param.Integer(default=0, doc="Random seed of the training set.")
    m = param.Integer(default=6, doc="Number of basis points M (K-means centres).")
    blur = param.Number(default=1.0, doc="C_j = blur x the cluster covariance (0 = FITC).")
    shape = param.Selector(objects=list(vsgp_demo.SHAPES), default="full", doc="Local covariance shape.")
    method = param.Selector(objects=list(METHOD_LABELS), default="ep", doc="Site projection: EP or QP.")
    variance = param.Number(default=4.0, doc="RBF kernel variance σ_f².")
    lengthscale = param.Number(default=0.8, doc="RBF kernel length-scale ℓ.")
    centres = param.List(default=[], doc="Dragged centres [[x1, x2], ...] ([]: K-means centres).")
    projector = param.Boolean(default=False, doc="Large fonts for a projector.")
    message = param.String(default="", doc="What to change when an input is bad ('' if none).")

    def __init__(self, **params):
        super().__init__(**params)
        self.cache = vsgp_demo.FitCache()
        self.fits: dict | None = None  # the last good fits, kind -> SparseGridFit
        self.shown = None  # (X, y, Z, C) of the last good fits
        self.description = ""  # what the last good fits were fitted to (plot titles)
        self._link_note = ""
        self._drawing_tab = False
        self._kmeans: dict = {}  # (X, M) -> K-means centres, the last one
        self._drawing = False  # True while draw() sets the centres' source (its change is no drag)
        self._texts: list = []
        self.views: pn.Column | None = None
        self.param.watch(self._on_data_inputs, ["preset", "n", "seed", "m", "centres"])
        self._layout = self._build_layout()
        if pn.state.location is not None:  # the page's state in the URL (?vs_blur=0.5&...): a link reopens it
            self.links = LinkValues(pn.state.location, {key: (self, name) for name, key in URL_KEYS.items()},
                                    self.link_alert, checks=range_checks(self, RANGES, URL_KEYS))

    # -- computation -----------------------------------------------------------------------
    def centres_array(self, X) -> np.ndarray:
        """The dragged centres, or M K-means centres of X."""
        if self.centres:
            try:
                Z = np.asarray(self.centres, dtype=float).reshape(-1, 2)
            except (TypeError, ValueError):
                raise ValueError("the centres must be [x1, x2] pairs: press 'K-means centres'") from None
            if not np.isfinite(Z).all():
                raise ValueError("every centre needs finite coordinates: press 'K-means centres'")
            return Z
        m = int(self.m)
        if m > len(X):
            raise ValueError(f"M = {m} basis points need at least as many training points: lower M or raise n")
        key = (X.tobytes(), m)
        if key not in self._kmeans:  # K-means costs ~10 ms at N = 500: once per data and M
            self._kmeans = {key: vsgp_demo.kmeans_centres(X, m)}
        return self._kmeans[key]

    def compute(self) -> dict:
        """Both fits of the current inputs (cached), and what they were fitted to; ValueError naming
        every bad numeric input (a link may bring several)."""
        problems = out_of_range({name: getattr(self, name) for name in RANGES})
        if problems:
            raise ValueError("; ".join(problems))
        kernel = RBF(variance=float(self.variance), lengthscale=float(self.lengthscale))  # VSGP's blur: RBF only
        X, y = twod.check_data(*vsgp_demo.make_preset(self.preset, int(self.n), int(self.seed)))
        Z = self.centres_array(X)
        C = vsgp_demo.local_covariances(X, Z, float(self.blur), self.shape)
        X_test, y_test = vsgp_demo.held_out_set(self.preset)
        grid = twod.make_grid(X, GRID_SIZE, twod.grid_extent(np.vstack([X, Z])))
        fits = {kind: self.cache.fit(X, y, kernel, Z, C if kind == "vsgp" else None, self.method, grid, X_test, y_test)
                for kind in KINDS}
        return {"fits": fits, "X": X, "y": y, "Z": Z, "C": C}

    def refit(self) -> bool:
        """Fit VSGP and FITC to the current inputs; on bad input keep the last good fits, set
        ``message`` (what to change) and return False."""
        try:
            result = self.compute()
        except Exception as exc:  # shown on the page; never raised into the browser
            self.message = f"{exc}. The plots keep the last good fit."
            return False
        self.fits = result["fits"]
        self.shown = (result["X"], result["y"], result["Z"], result["C"])
        self.description = (f"{self.preset} N={len(result['y'])}, M={len(result['Z'])}, {METHOD_LABELS[self.method]}, "
                            f"blur={self.blur:g} {self.shape}")  # the kernel is in the widgets: the title fits 1024 px
        notes = [note for fit in self.fits.values() for note in fit.notes]
        self.message = "; ".join(filter(None, [self._link_note, *notes]))
        return True

    def move_centres(self, xs, ys) -> None:
        """New centre positions (a drag): kept in ``centres`` (and the URL), rounded; M follows
        their number (the point-draw tool can delete one)."""
        Z = np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]).round(CENTRE_DECIMALS)
        shown = None if self.shown is None else self.shown[2]
        if shown is not None and Z.shape == shown.shape and np.allclose(Z, shown, rtol=0, atol=10.0**-CENTRE_DECIMALS):
            return  # nothing moved (or the page's own redraw, echoed)
        if len(Z) == 0:
            self.message = "every centre was deleted: press 'K-means centres' (or move the M slider) to get them back"
            return
        self.param.update(centres=Z.tolist(), m=min(max(len(Z), RANGES["m"][0]), RANGES["m"][1]))

    def reset_centres(self, event=None) -> None:
        """Back to M K-means centres."""
        self.centres = []

    # -- reacting to inputs ------------------------------------------------------------------
    def _on_data_inputs(self, *events) -> None:
        """A new preset, n, seed or M goes back to K-means centres, unless the same change brings
        its own centres (a drag, or a link)."""
        if "centres" not in {event.name for event in events} and self.centres:
            self.centres = []  # calls this again, with the centres: one refit
            return
        self._changed()

    @param.depends("blur", "shape", "method", "variance", "lengthscale", watch=True)
    def _changed(self) -> None:
        if self.views is not None:
            self._link_note = ""  # the reader has moved on from the link
            self.refit()
            self.draw()

    # -- views -----------------------------------------------------------------------------
    def draw(self) -> None:
        """Push the last good fits into the figures (sources patched in place)."""
        if self.fits is None or self.views is None:
            return
        X, y, Z, C = self.shown
        self._drawing = True
        with pn.io.hold():
            for kind, label in KINDS.items():
                self.figures[kind].show(self.fits[kind], self.fits[kind].proba, X, y,
                                        f"{label}: p(y=+1|x),\n{self.description}")
            blurred = vsgp_demo.ellipses(Z, C)
            self.ellipse_source.data = {key: np.asarray(value) for key, value in blurred.items()}
            self.centre_source.data = {"x": Z[:, 0], "y": Z[:, 1]}
            self.table.object = numbers_table(self.fits)
        self._drawing = False

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

    def _on_centres_moved(self, attr, old, new) -> None:
        if self._drawing:
            return  # the page's own redraw
        try:
            self.move_centres(new["x"], new["y"])
        except Exception as exc:  # never into the browser console
            self.message = f"that move could not be used: {exc}"

    def _explained(self, view, key: str, css: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts, css)

    def _build_views(self) -> pn.Column:
        """The figures, built (and the first fit run) when the tab is first drawn."""
        if self.views is None:
            self._link_note = self._replace_bad_inputs()
            self.centre_source = ColumnDataSource({"x": [], "y": []})
            self.ellipse_source = ColumnDataSource({"x": [], "y": [], "width": [], "height": [], "angle": []})
            self.figures = {}
            maps = []
            for kind, label in KINDS.items():
                self.figures[kind] = GridFigure("p(y=+1|x)", PROBA_PALETTE, (0.0, 1.0), contour_colour=METHOD_COLOURS[kind],
                                                contour_label=label, casing=CASING[kind])
                self._add_basis_points(kind)
                view = pn.pane.Bokeh(self.figures[kind].figure, sizing_mode="stretch_width")
                maps.append(self._explained(view, kind, f"qpviz-vsgp-map-{kind}"))
            self.centre_source.on_change("data", self._on_centres_moved)
            self.maps = view_row(*maps, projector=self.projector)
            self.views = pn.Column(self.maps, self._explained(self.table, "table", "qpviz-vsgp-numbers"),
                                   sizing_mode="stretch_width")
            self._texts.append(self.table)
            self._apply_projector_mode()
            self._drawing_tab = True
            try:
                self.refit()
                self.draw()
            finally:
                self._drawing_tab = False
        return self.views

    def _replace_bad_inputs(self) -> str:
        """Before the first fit: numeric inputs out of range (a bad link) go back to their
        defaults, so the page opens consistent; returns what was replaced ('' if nothing)."""
        bad = [name for name in RANGES if out_of_range({name: getattr(self, name)})]
        replaced = [f"{name} = {quoted(getattr(self, name))} (valid: {RANGES[name][0]:g} to {RANGES[name][1]:g}) was "
                    f"replaced by {self.param[name].default!r}" for name in bad]
        self.param.update({name: self.param[name].default for name in bad})
        return "The link asked for " + "; ".join(replaced) + "." if replaced else ""

    @param.depends("message", watch=True)
    def _show_message(self) -> None:
        """The message in the alert pane; while the tab is first drawn on the next tick (a change
        to the alert then made Panel give it the theme stylesheets' CDN addresses, as on GP 2-D)."""
        doc = pn.state.curdoc
        in_session = doc is not None and doc.session_context is not None
        if not (self._drawing_tab and in_session):
            self.alert.param.update(object=safe_text.message(self.message), visible=bool(self.message))
        else:
            doc.add_next_tick_callback(self._show_message)

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        if self.views is not None:
            for grid_figure in self.figures.values():
                grid_figure.style(self.projector)
            set_projector(self.maps, self.projector)

    def _build_controls(self) -> pn.Column:
        w = pn.widgets
        r = RANGES
        self.widgets = {
            "preset": w.Select.from_param(self.param.preset, name="data preset", css_classes=["qpviz-vsgp-preset"]),
            "n": PromptIntSlider.from_param(self.param.n, name=f"training points n  [{r['n'][0]}, {r['n'][1]}]",
                                        start=r["n"][0], end=r["n"][1], step=10, css_classes=["qpviz-vsgp-n"]),
            # a text box: a number box drops letters silently; SEED names a bad seed with its range
            "seed": SEED.bind(self, "seed", "qpviz-vsgp-seed", lambda text: setattr(self, "message", text)),
            "m": PromptIntSlider.from_param(self.param.m, name=f"basis points M  [{r['m'][0]}, {r['m'][1]}]",
                                        start=r["m"][0], end=r["m"][1], css_classes=["qpviz-vsgp-m"]),
            "blur": PromptFloatSlider.from_param(self.param.blur, name=f"blur  [{r['blur'][0]:g}, {r['blur'][1]:g}]",
                                             start=r["blur"][0], end=r["blur"][1], step=0.1,
                                             css_classes=["qpviz-vsgp-blur"]),
            "shape": w.RadioButtonGroup.from_param(self.param.shape, name="local covariance",
                                                   css_classes=["qpviz-vsgp-shape"]),
            "method": w.RadioButtonGroup.from_param(self.param.method, name="site projection",
                                                    options={label: m for m, label in METHOD_LABELS.items()},
                                                    css_classes=["qpviz-vsgp-method"]),
            "variance": PromptFloatSlider.from_param(self.param.variance, name=f"kernel variance σ_f²  "
                                                 f"[{r['variance'][0]:g}, {r['variance'][1]:g}]",
                                                 start=r["variance"][0], end=r["variance"][1], step=0.1),
            "lengthscale": PromptFloatSlider.from_param(self.param.lengthscale, name=f"length-scale ℓ  "
                                                    f"[{r['lengthscale'][0]:g}, {r['lengthscale'][1]:g}]",
                                                    start=r["lengthscale"][0], end=r["lengthscale"][1], step=0.05,
                                                    css_classes=["qpviz-vsgp-lengthscale"]),
        }
        reset = w.Button(label="K-means centres", css_classes=["qpviz-vsgp-reset"])
        reset.on_click(self.reset_centres)
        notes = "\n".join(f"- **{name}**: {note}" for name, note in vsgp_demo.PRESETS.items())
        return pn.Column(
            pn.pane.Markdown("### Data"), self.widgets["preset"], self.widgets["n"], self.widgets["seed"],
            pn.pane.Markdown("### Basis points"), self.widgets["m"], reset, self.widgets["blur"],
            self.widgets["shape"], pn.pane.Markdown(RULE, sizing_mode="stretch_width"),
            pn.pane.Markdown("### Model (RBF kernel, probit likelihood)"), self.widgets["method"],
            self.widgets["variance"], self.widgets["lengthscale"],
            export_buttons("vsgp"),
            pn.pane.Markdown(notes, sizing_mode="stretch_width"),
            width=300,
        )

    def _build_layout(self) -> pn.Row:
        # a Markdown pane styled as an alert (pn.pane.Alert asks the CDN for its stylesheets)
        self.alert = pn.pane.Markdown("", visible=False, css_classes=["qpviz-vsgp-error"], sizing_mode="stretch_width",
                                      styles=ALERT_STYLES)
        self.link_alert = link_banner()
        self.table = NumbersPane("", css_classes=["qpviz-vsgp-table"], sizing_mode="stretch_width", margin=(0, 10))
        self._controls = self._build_controls()
        views = pn.param.ParamFunction(lambda: self._build_views(), lazy=True, sizing_mode="stretch_width")
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, views, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, VSGPPage()
