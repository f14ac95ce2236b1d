"""VSGP page: basis points with their own covariances (paper 002) beside FITC on the same centres.

A thin Panel view over :class:`qpviz.gpdemo.vsgp_model.VSGPModel` (the inputs, their validation,
the data, the cached fits; tests drive it without a browser) and app/vsgp_figures.py (the Bokeh
maps and the numbers table): two probability maps side by side, VSGP (each basis point b_j blurred
by N(b_j, C_j)) and FITC (C_j = 0) with the same centres, each with its 0.1 / 0.5 / 0.9 contours,
the data and the basis points (VSGP: 2-sd ellipses of the C_j); under them each fit's held-out test
error, NTLL and log evidence. C_j = blur x the sample covariance of b_j's cluster (full, or its
trace / 2 times I): the rule is in :func:`qpviz.gpdemo.vsgp_demo.local_covariances`.

The widgets and the link (?vs_blur=0.5&...) are bound to the model's parameters (a value equal to
the model's changes nothing, so showing the model's values in the widgets needs no guard); the
model's ``version`` tells the page to redraw. The centres are dragged with Bokeh's point-draw tool
(the maps' active drag tool; both maps share the centres' data source): the browser sends the new
positions when a drag ends and the model keeps them in ``centres`` (and the URL) and refits. The M
slider, a new preset, n or seed go back to K-means centres. The figures and the first fit wait
until the tab is first drawn.
"""
from __future__ import annotations

import panel as pn
import param

from explorer_figures import NumbersPane
from explorer_widgets import PromptFloatSlider, PromptIntSlider
from figure_export import export_buttons
from layout import enlarge, explained, set_projector, view_row
from number_field import LinkValues, NumberField, link_banner, range_checks
import pages
import safe_text
from qpviz.gpdemo import vsgp_demo
from qpviz.gpdemo.vsgp_model import KINDS, METHOD_LABELS, RANGES, VSGPModel
from vsgp_figures import EXPLANATIONS, RULE, VSGPFigures, numbers_table

__all__ = ["TITLE", "RANGES", "URL_KEYS", "KINDS", "VSGPPage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: The seed's typed box (the other numbers are sliders).
SEED = NumberField("seed", *RANGES["seed"], integer=True)
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"preset": "vs_preset", "n": "vs_n", "seed": "vs_seed", "m": "vs_m", "blur": "vs_blur",
            "shape": "vs_shape", "method": "vs_method", "variance": "vs_var", "lengthscale": "vs_ls",
            "centres": "vs_centres"}
#: The error message's look (GP 2-D's).
ALERT_STYLES = {"background": "#fbe3d6", "border": "2px solid #D55E00", "border-radius": "4px", "padding": "0 12px"}


class VSGPPage(pn.viewable.Viewer):
    """The page: controls on the left; the VSGP and FITC maps side by side, the numbers below."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, model: VSGPModel | None = None, **params):
        """``params``: the model's (e.g. ``n=120``), for a model made here."""
        super().__init__(**{k: v for k, v in params.items() if k in self.param})
        self.model = model if model is not None else VSGPModel(**{k: v for k, v in params.items() if k not in self.param})
        self._drawing_tab = False  # True while the tab's figures are first built
        self._texts: list = []  # explanation panes (larger in projector mode)
        self.views: pn.Column | None = None  # built when the tab is first drawn
        self._layout = self._build_layout()
        self.model.param.watch(lambda *events: self.draw(), ["version"])
        self.model.param.watch(self._show_message, ["message"])
        if pn.state.location is not None:  # the page's state in the URL (?vs_blur=0.5&...): a link reopens it
            checks = {**range_checks(self.model, RANGES, URL_KEYS), URL_KEYS["centres"]: self.model.centres_check}
            self.links = LinkValues(pn.state.location, {key: (self.model, name) for name, key in URL_KEYS.items()},
                                    self.link_alert, checks=checks)

    # -- views -----------------------------------------------------------------------------
    def draw(self) -> None:
        """Push the model's last good fits into the figures and the numbers table."""
        if self.model.fits is None or self.views is None:
            return
        with pn.io.hold():
            self.figures.show(self.model)
            self.table.object = numbers_table(self.model.fits)

    def _on_centres_moved(self, attr, old, new) -> None:
        """The point-draw tool moved (or deleted) a centre; the page's own redraw is no move."""
        self.model.move_centres(new.get("x", []), new.get("y", []))

    def _explained(self, view, key: str, css: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts, css)

    def _build_views(self) -> pn.Column:
        """The figures, built (and the first fit run) when the tab is first drawn."""
        if self.views is None:
            self.figures = VSGPFigures()
            maps = [self._explained(pn.pane.Bokeh(self.figures.figures[kind].figure, sizing_mode="stretch_width"),
                                    kind, f"qpviz-vsgp-map-{kind}") for kind in KINDS]
            self.figures.centre_source.on_change("data", self._on_centres_moved)
            self.maps = view_row(*maps, projector=self.projector)
            self.views = pn.Column(self.maps, self._explained(self.table, "table", "qpviz-vsgp-numbers"),
                                   sizing_mode="stretch_width")
            self._texts.append(self.table)
            self._apply_projector_mode()
            self._drawing_tab = True
            try:
                self.model.first_fit()  # bumps the model's version: drawn
            finally:
                self._drawing_tab = False
        return self.views

    def _show_message(self, *events) -> None:
        """The message in the alert pane; while the tab is first drawn on the next tick (a change
        to the alert then made Panel give it the theme stylesheets' CDN addresses, as on GP 2-D)."""
        doc = pn.state.curdoc
        if self._drawing_tab and doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(self._show_message)
            return
        message = self.model.message
        self.alert.param.update(object=safe_text.message(message), visible=bool(message))

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        if self.views is not None:
            self.figures.style(self.projector)
            set_projector(self.maps, self.projector)

    def _build_controls(self) -> pn.Column:
        w, m, r = pn.widgets, self.model, RANGES
        self.widgets = {
            "preset": w.Select.from_param(m.param.preset, name="data preset", css_classes=["qpviz-vsgp-preset"]),
            "n": PromptIntSlider.from_param(m.param.n, name=f"training points n  [{r['n'][0]}, {r['n'][1]}]",
                                            start=r["n"][0], end=r["n"][1], step=10, css_classes=["qpviz-vsgp-n"]),
            # a text box: a number box drops letters silently; SEED names a bad seed with its range
            "seed": SEED.bind(m, "seed", "qpviz-vsgp-seed", lambda text: setattr(m, "message", text)),
            "m": PromptIntSlider.from_param(m.param.m, name=f"basis points M  [{r['m'][0]}, {r['m'][1]}]",
                                            start=r["m"][0], end=r["m"][1], css_classes=["qpviz-vsgp-m"]),
            "blur": PromptFloatSlider.from_param(m.param.blur, name=f"blur  [{r['blur'][0]:g}, {r['blur'][1]:g}]",
                                                 start=r["blur"][0], end=r["blur"][1], step=0.1,
                                                 css_classes=["qpviz-vsgp-blur"]),
            "shape": w.RadioButtonGroup.from_param(m.param.shape, name="local covariance",
                                                   css_classes=["qpviz-vsgp-shape"]),
            "method": w.RadioButtonGroup.from_param(m.param.method, name="site projection",
                                                    options={label: key for key, label in METHOD_LABELS.items()},
                                                    css_classes=["qpviz-vsgp-method"]),
            "variance": PromptFloatSlider.from_param(m.param.variance, name=f"kernel variance σ_f²  "
                                                     f"[{r['variance'][0]:g}, {r['variance'][1]:g}]",
                                                     start=r["variance"][0], end=r["variance"][1], step=0.1),
            "lengthscale": PromptFloatSlider.from_param(m.param.lengthscale, name=f"length-scale ℓ  "
                                                        f"[{r['lengthscale'][0]:g}, {r['lengthscale'][1]:g}]",
                                                        start=r["lengthscale"][0], end=r["lengthscale"][1], step=0.05,
                                                        css_classes=["qpviz-vsgp-lengthscale"]),
        }
        reset = w.Button(label="K-means centres", css_classes=["qpviz-vsgp-reset"])
        reset.on_click(m.reset_centres)
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
        # lazy: the figures and the first fit wait until the tab is first shown (pn.Tabs(dynamic=True))
        views = pn.param.ParamFunction(lambda: self._build_views(), lazy=True, sizing_mode="stretch_width")
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, views, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, VSGPPage()
