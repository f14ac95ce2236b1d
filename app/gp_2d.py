"""GP 2-D page: GP classification of 2-D points by EP, QP, VB, Laplace and an MCMC reference.

A thin Panel view over :class:`qpviz.gpdemo.twod_model.GP2DModel` (the inputs, validation, the
cached fits and the MCMC reference's long job) and app/gp_2d_figures.py (the Bokeh maps). The
widgets and the link (?g2_preset=xor&g2_ls=0.5) are bound to the model's parameters; the model's
``version`` tells the page to redraw. A periodic callback (every JOB_POLL_MS while the MCMC job
runs) takes its progress and result from the thread pool; with the reference, a table gives each
method's distance to it (:func:`qpviz.gpdemo.twod.distances_to_mcmc`).

Views: per method the predictive probability with its 0.1 / 0.5 / 0.9 contours in the method's
colour, per method the latent variance, and var_QP - var_EP on a diverging colour map centred at
0, each with the data points (class +1 circles, class -1 triangles). Clicking a probability plot
adds a point of the chosen class there, or removes the point under the click (Bokeh Tap event).
The figures and the first fit wait until the tab is first drawn, so the other pages open without
waiting for them.
"""
from __future__ import annotations

import io

import panel as pn
import param

from explorer_figures import NumbersPane
from explorer_widgets import PromptFloatSlider, PromptIntSlider
from figure_export import export_buttons
from gp_2d_figures import EXPLANATIONS, GridFigure, distance_table, draw_fit, draw_ratios, make_figure
from layout import HandOff, enlarge, explained, formula as formula_pane, set_projector, view_row
from long_jobs import JobPoller, cancel_when_session_ends
from number_field import LinkValues, NumberField, link_banner, range_checks
import pages
from quick_text import QuickMarkdown
import safe_text
from qpviz.gpdemo import twod
from qpviz.gpdemo.twod_model import INLINE_METHODS, METHOD_LABELS, RANGES, GP2DModel

__all__ = ["TITLE", "RANGES", "URL_KEYS", "GP2DPage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: How often a running MCMC job is polled for progress.
JOB_POLL_MS = 250
#: The seed's typed box (the other numbers are sliders).
SEED = NumberField("seed", *RANGES["seed"], integer=True)
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"preset": "g2_preset", "n": "g2_n", "seed": "g2_seed", "kernel": "g2_kernel", "variance": "g2_var",
            "lengthscale": "g2_ls", "methods": "g2_methods", "added": "g2_added", "removed": "g2_removed"}


class GP2DPage(pn.viewable.Viewer):
    """The page: controls on the left; probability maps, variance maps and the difference map."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, model: GP2DModel | None = None, **params):
        """``params``: the model's (e.g. ``n=40``), for a model made here."""
        super().__init__(**{k: v for k, v in params.items() if k in self.param})
        self.model = model if model is not None else GP2DModel(**{k: v for k, v in params.items() if k not in self.param})
        self._drawing_tab = False  # True while the tab's figures are first built
        self._texts: list = []  # explanation panes (larger in projector mode)
        self.views: pn.Column | None = None  # built when the tab is first drawn
        self.poller = JobPoller(self.poll_job, lambda: self.model.job_running, period_ms=JOB_POLL_MS)
        self._layout = self._build_layout()
        self.model.param.watch(lambda *events: self.draw(), ["version"])
        self.model.param.watch(lambda *events: self._show_methods(), ["methods"])
        self.model.param.watch(self._show_job, ["job_status", "job_running"])
        self.model.param.watch(self._show_message, ["message"])
        self.url = self._sync_url()
        # a closed browser tab stops its job (unless another session shares it)
        cancel_when_session_ends(lambda: self.model.cancel_job(quiet=True))

    def draw(self) -> None:
        """Push the last good fit and the current points into the shown figures (their sources'
        data replaced: no figure is rebuilt)."""
        m, fit = self.model, self.model.fit
        if fit is None or self.views is None:
            return
        with pn.io.hold():
            self._show_methods()  # first: builds the figures of a method shown for the first time
            draw_fit(self.figures, fit, m.X, m.y, m.methods, m.fit_description)
            self.table.object = distance_table(fit, m.methods)
            self._draw_sd_ratios(fit, m.fit_description)

    def _draw_sd_ratios(self, fit: twod.GridFit, subtitle: str) -> None:
        """The maps of sd / sd_MCMC of the shown methods and the sentence reading them; without the
        reference, what to do to see them."""
        methods = self.model.methods
        comparison = twod.sd_comparison(fit, [m for m in INLINE_METHODS if m in methods])
        for method, pane in self.ratio_panes.items():
            pane.visible = comparison is not None and method in comparison.ratios
            if pane.visible and not pane.objects:  # its figure, built when first shown
                pane.objects = [pn.pane.Bokeh(self._figure(f"ratio_{method}").figure, sizing_mode="stretch_width")]
        if comparison is None:
            if "mcmc" not in methods:
                note = "Turn MCMC on (Show) to compare each method's latent sd with the reference's."
            elif "mcmc" not in fit.var:
                note = "The MCMC reference is being computed: the sd ratio maps appear when it is done."
            else:
                note = "Show EP, QP, VB or Laplace beside MCMC to compare their latent sd with the reference's."
            self.sd_text.object = safe_text.message(note)
            return
        draw_ratios(self.figures, fit, self.model.X, self.model.y, comparison, subtitle)
        self.sd_text.object = safe_text.text(comparison.sentence, None)  # the page's own words and numbers: not shortened

    def poll_job(self) -> None:
        """The periodic callback while the MCMC job runs: the model takes its progress or result."""
        with pn.io.hold():
            try:
                self.model.poll()
            except Exception as exc:  # noqa: BLE001 - a page callback must not raise
                self.model.message = f"unexpected error: {exc}"

    def _style_figures(self) -> None:
        for grid_figure in self.figures.values():
            grid_figure.style(self.projector)

    def _explained(self, figure: GridFigure, key: str, css: str) -> pn.Column:
        view = pn.pane.Bokeh(figure.figure, sizing_mode="stretch_width")
        texts: list = []
        shown = explained(view, EXPLANATIONS[key], texts, css)
        enlarge(self.projector, texts, [])  # a view built after a switch to projector mode: its size
        self._texts += texts
        return shown

    def _figure(self, key: str) -> GridFigure:
        """The figure ``key`` (see gp_2d_figures.make_figure), built on first use in the page's mode.

        Only the shown methods' figures are built: all 15 (five methods' two maps, the difference and
        four sd-ratio maps) took 0.7 s of the server's 1.4 s for the tab, and the browser built views
        for the hidden ten too (the page settled 2.9-3.4 s after its link; 1.4-1.7 s with the five
        shown by default, measured back to back on one server)."""
        if key not in self.figures:
            figure = make_figure(key, self.model.tap)
            figure.style(self.projector)
            self.figures[key] = figure
        return self.figures[key]

    def _method_row(self, method: str) -> None:
        """Build ``method``'s two maps into its row (once; the row is empty until it is first shown)."""
        if method in self.pair_rows:
            return
        pair = [self._explained(self._figure(f"{kind}_{method}"),
                                f"{kind}_{method}" if f"{kind}_{method}" in EXPLANATIONS else kind,
                                f"qpviz-gp2d-{kind}-{method}") for kind in ("proba", "var")]
        # side by side where two fit, else one above the other
        self.pair_rows[method] = view_row(*pair, projector=self.projector)
        self.method_rows[method].objects = [self.pair_rows[method]]

    def _build_views(self) -> pn.Column:
        """The figures, built (and the first fit run) when the tab is first drawn."""
        if self.views is None:
            location = pn.state.location
            # a link's values have arrived by now (pn.state.location syncs after the page loads)
            query = dict(location.query_params) if location is not None else {}
            self.model.link_note = self.model.replace_bad_inputs(query, URL_KEYS)
            self.figures: dict[str, GridFigure] = {}  # built on first use (_figure)
            # each method's row: empty until the method is first shown (_method_row)
            rows = {method: pn.Column(sizing_mode="stretch_width", visible=False) for method in METHOD_LABELS}
            self.pair_rows: dict[str, pn.Row] = {}
            self.ratio_panes = {}
            for method in INLINE_METHODS:
                # in a Column: a Bokeh pane made visible again takes back its figure's visible=False;
                # the pane is added when the map is first shown (_draw_sd_ratios)
                self.ratio_panes[method] = pn.Column(sizing_mode="stretch_width", visible=False,
                                                     css_classes=[f"qpviz-gp2d-ratio-{method}"])
            # two maps a row: a Row's smallest width is the sum of its maps' (four made the page 1500 px wide)
            panes = list(self.ratio_panes.values())
            self.ratio_rows = [view_row(*panes[i:i + 2], projector=self.projector) for i in range(0, len(panes), 2)]
            self.ratio_row = pn.Column(*self.ratio_rows, sizing_mode="stretch_width")
            self.sd_text = QuickMarkdown("", css_classes=["qpviz-gp2d-sd-text"], sizing_mode="stretch_width",
                                            margin=(0, 10))
            ratios = explained(pn.Column(pn.pane.Markdown("#### Latent sd against the MCMC reference", margin=(0, 10)),
                                         self.sd_text, self.ratio_row, sizing_mode="stretch_width"),
                               EXPLANATIONS["sd_ratio"], self._texts, "qpviz-gp2d-sd-ratio")
            self._texts.append(self.sd_text)
            self.method_rows = rows
            self.views = pn.Column(sizing_mode="stretch_width")
            self.model.drawn = True
            sentence, formula = EXPLANATIONS["table"]
            table_text = pn.pane.Markdown(sentence, sizing_mode="stretch_width", margin=(0, 10))
            table_formula = formula_pane(formula, margin=(0, 10))
            self._texts += [self.table, table_text, table_formula]
            table = pn.Column(self.table, table_text, table_formula, sizing_mode="stretch_width")
            self.views.objects = [table, *rows.values(), self._explained(self._figure("diff"), "diff", "qpviz-gp2d-diff"),
                                  ratios]
            self._show_methods()
            self._style_figures()
            self._apply_projector_mode()
            self._drawing_tab = True
            try:
                self.model.ensure_fit()
                self.draw()
            finally:
                self._drawing_tab = False
        return self.views

    def _show_methods(self) -> None:
        """A method's row is shown when it is chosen and fitted (MCMC: when its reference is in)."""
        if self.views is not None:
            fit, methods = self.model.fit, self.model.methods
            for method, row in self.method_rows.items():
                shown = method in methods and (fit is None or method in fit.proba)
                if shown:
                    self._method_row(method)
                row.visible = shown

    def _show_job(self, *events) -> None:
        m = self.model
        self.status.object = safe_text.message(m.job_status)
        self.progress.visible = self.progress.active = m.job_running
        self.cancel_button.disabled = not m.job_running
        self.poller.ensure()

    def _show_message(self, *events) -> None:
        doc = pn.state.curdoc
        if self._drawing_tab and doc is not None and doc.session_context is not None:
            # while the tab is first drawn, a change to the alert made Panel give it the theme
            # stylesheets' CDN addresses (console errors offline): show it on the next tick instead
            doc.add_next_tick_callback(self._show_message)
            return
        self.alert.object = safe_text.message(self.model.message)
        self.alert.visible = bool(self.model.message)

    def _arrange_pairs(self) -> None:
        """A method's two views side by side where both fit at their smallest width (wider in
        projector mode, for the large fonts), else one above the other."""
        for row in [*self.pair_rows.values(), *self.ratio_rows]:
            set_projector(row, self.projector)

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        if self.views is not None:
            self._style_figures()
            self._arrange_pairs()

    def _build_controls(self) -> pn.Column:
        w, m = pn.widgets, self.model
        (n_lo, n_hi), (v_lo, v_hi), (l_lo, l_hi) = RANGES["n"], RANGES["variance"], RANGES["lengthscale"]
        self.widgets = {
            "preset": w.Select.from_param(m.param.preset, name="data preset", css_classes=["qpviz-gp2d-preset"]),
            "n": PromptIntSlider.from_param(m.param.n, name=f"points n  [{n_lo}, {n_hi}]", start=n_lo, end=n_hi,
                                            css_classes=["qpviz-gp2d-n"]),
            # a text box: a number box clamped a typed -3 and dropped letters silently; SEED names a bad seed
            "seed": SEED.bind(m, "seed", "qpviz-gp2d-seed", lambda text: setattr(m, "message", text)),
            "kernel": w.Select.from_param(m.param.kernel, name="kernel"),
            "variance": PromptFloatSlider.from_param(m.param.variance, name=f"kernel variance σ_f²  [{v_lo:g}, {v_hi:g}]",
                                                     start=v_lo, end=v_hi, step=0.1, css_classes=["qpviz-gp2d-variance"]),
            "lengthscale": PromptFloatSlider.from_param(m.param.lengthscale, name=f"length-scale ℓ  [{l_lo:g}, {l_hi:g}]",
                                                        start=l_lo, end=l_hi, step=0.05, css_classes=["qpviz-gp2d-lengthscale"]),
            "methods": w.CheckButtonGroup.from_param(m.param.methods, name="methods",
                                                     options={label: key for key, label in METHOD_LABELS.items()}),
            "click_class": w.RadioButtonGroup.from_param(m.param.click_class, name="a click adds class",
                                                         options={"class +1 (●)": "+1", "class −1 (▲)": "-1"}),
        }
        self.cancel_button = w.Button(label="cancel MCMC", color="warning", disabled=True,
                                      css_classes=["qpviz-gp2d-cancel"])
        self.cancel_button.on_click(lambda event: m.cancel_job())
        self.progress = w.Progress(active=False, value=-1, visible=False, sizing_mode="stretch_width")
        self.status = QuickMarkdown("", css_classes=["qpviz-gp2d-status"], sizing_mode="stretch_width")
        self.download = w.FileDownload(callback=lambda: io.StringIO(m.csv_text()), filename="gp2d_grid.csv",
                                       label="Download the grid numbers (CSV)", css_classes=["qpviz-gp2d-csv"])
        preset_notes = "\n".join(f"- **{name}**: {note}" for name, (_, _, note) in twod.PRESETS.items())
        return pn.Column(
            pn.pane.Markdown("### Data"), self.widgets["preset"], self.widgets["n"], self.widgets["seed"],
            pn.pane.Markdown("A click on a probability plot adds:"), self.widgets["click_class"],
            pn.pane.Markdown("### Kernel (probit likelihood)"), self.widgets["kernel"], self.widgets["variance"],
            self.widgets["lengthscale"],
            pn.pane.Markdown("### Show"), self.widgets["methods"],
            pn.pane.Markdown("MCMC is a reference computed in the background (seconds)."), self.progress,
            self.status, self.cancel_button, self.download,
            export_buttons("gp-2-d"), self.hand_off.button,
            pn.pane.Markdown(preset_notes, sizing_mode="stretch_width"),
            width=300,
        )

    def _build_layout(self) -> pn.Row:
        m = self.model
        # a Markdown pane styled as an alert: pn.pane.Alert, when first drawn inside a tab opened
        # later, asks the CDN for its stylesheets (console errors offline)
        self.alert = pn.pane.Markdown("", visible=False, css_classes=["qpviz-gp2d-error"], sizing_mode="stretch_width",
                                      styles={"background": "#fbe3d6", "border": "2px solid #D55E00",
                                              "border-radius": "4px", "padding": "0 12px"})
        self.link_alert = link_banner()
        self.hand_off = HandOff(
            lambda: (f"GP 2-D: {m.preset}" + (" (edited)" if m.added or m.removed else ""), m.X, m.y,
                     "probit", m.kernel_object()),
            lambda text: setattr(m, "message", text))
        self.table = NumbersPane("", css_classes=["qpviz-gp2d-table"], sizing_mode="stretch_width", margin=(0, 10))
        self._controls = self._build_controls()
        # lazy: the figures and the first fit wait until the tab is first shown (pn.Tabs(dynamic=True))
        views = pn.param.ParamFunction(lambda: self._build_views(), lazy=True, sizing_mode="stretch_width")
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, views, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def _sync_url(self):
        """Keep the page's state in the URL (e.g. ?g2_preset=xor&g2_ls=0.5) so that a link reopens it."""
        location = pn.state.location
        if location is None:
            return None
        self.links = LinkValues(location, {key: (self.model, name) for name, key in URL_KEYS.items()},
                                self.link_alert, checks=range_checks(self.model, RANGES, URL_KEYS))
        return location

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, GP2DPage()
