"""The "Sparse" page: pseudo-inputs you drag, an alpha you slide (paper 001's tutorial; issue 12).

A thin Panel view over :class:`qpviz.gpdemo.sparse_model.SparseModel` (the inputs, the last good
fits, the warm starts and the evidence curve's job; tests drive it without a browser): the widgets
forward values to it (app/binding.py: a value the model holds, e.g. the page showing the model,
forwards nothing; the handles likewise when they show the model's Z) and :class:`sparse_figures.SparseFigures` draws it when its ``version`` (the
fits) or ``curve_version`` (the Power-EP evidence curve, polled every CURVE_POLL_MS while it is
computed in the job pool) moves.
"""
from __future__ import annotations

import numpy as np
import panel as pn
import param

from binding import forward, holds
from explorer_figures import NumbersPane
from explorer_widgets import PromptEditableFloatSlider, PromptFloatSlider, PromptIntSlider
from figure_export import export_buttons
from layout import enlarge, explained, set_projector, view_grid
from long_jobs import GuardedModelCalls, JobPoller, cancel_when_session_ends
from number_field import TYPED_CLASS, LinkValues, NumberField, link_banner
import pages
from quick_text import QuickMarkdown
import safe_text
from qpviz.gpdemo import oned, sparse_demo
from qpviz.gpdemo.sparse_model import SparseModel, decode_z
from sparse_figures import EXPLANATIONS, HANDLE_Y, SparseFigures, numbers_html

__all__ = ["TITLE", "SparsePage", "page", "URL_KEYS", "TYPED"]

TITLE = pages.title(__name__)  # registered in app/pages.py
#: URL keys of the page's state.
URL_KEYS = {"preset": "sp_preset", "n_points": "sp_n", "seed": "sp_seed", "kernel": "sp_kernel",
            "variance": "sp_var", "lengthscale": "sp_ls", "noise": "sp_noise", "m": "sp_m", "z_text": "sp_z",
            "alpha": "sp_alpha", "projection": "sp_proj", "methods": "sp_methods"}
#: The page's typed numbers (model parameter -> rules); the hyper-parameters' sliders span less.
TYPED = {"n_points": NumberField("number of points", sparse_demo.MIN_POINTS, sparse_demo.MAX_POINTS, integer=True),
         "seed": NumberField("seed", 0, 10**9, integer=True),
         "variance": NumberField("kernel variance", 0, 10_000, low_open=True),
         "lengthscale": NumberField("lengthscale", 0, 10_000, low_open=True),
         "noise": NumberField("noise variance sigma^2 (regression)", 0, 10_000, low_open=True)}
#: How often a running curve job is polled.
CURVE_POLL_MS = 100


class SparsePage(GuardedModelCalls, pn.viewable.Viewer):
    """Controls on the left; the fits with their handles, the alpha curve, the numbers and the messages."""

    projector = param.Boolean(default=False)

    def __init__(self, **params):
        super().__init__(**params)
        self.model = m = SparseModel()
        self.preset = pn.widgets.Select(name="data preset", options=list(sparse_demo.PRESETS), value=m.preset,
                                        css_classes=["qpviz-sp-preset"])
        say, apply = self._say, lambda name, value: self._run(m.param.update, **{name: value})
        self.n_points = TYPED["n_points"].bind(m, "n_points", "qpviz-sp-n", say, apply=apply)
        self.seed = TYPED["seed"].bind(m, "seed", "qpviz-sp-seed", say, apply=apply)
        self.kernel = pn.widgets.Select(name="kernel", options=list(oned.KERNELS), value=m.kernel)
        # sliders with a number box (the browser drops letters there; a number out of range is named)
        self.variance = TYPED["variance"].bind(m, "variance", "", say, apply=apply, box=PromptEditableFloatSlider(
            label=TYPED["variance"].label, start=0.05, end=20.0, step=0.05, value=m.variance,
            css_classes=["qpviz-sp-variance", TYPED_CLASS]))
        self.lengthscale = TYPED["lengthscale"].bind(m, "lengthscale", "", say, apply=apply, box=PromptEditableFloatSlider(
            label=TYPED["lengthscale"].label, start=0.05, end=10.0, step=0.05, value=m.lengthscale,
            css_classes=["qpviz-sp-lengthscale", TYPED_CLASS]))
        self.noise = TYPED["noise"].bind(m, "noise", "qpviz-sp-noise", say, apply=apply)
        self.m_slider = PromptIntSlider(name="M pseudo-inputs (restarts Z by K-means)", start=1,
                                             end=sparse_demo.MAX_INDUCING, value=m.m, css_classes=["qpviz-sp-m"])
        self.z_text = pn.widgets.TextInput(name="pseudo-inputs Z (comma-separated)", value=m.z_text,
                                           css_classes=["qpviz-sp-z"])
        self.alpha = PromptFloatSlider(name="Power EP alpha (0 = VFE, 1 = FITC)", start=0.0, end=1.0, step=0.05,
                                            value=m.alpha, css_classes=["qpviz-sp-alpha"])
        self.projection = pn.widgets.RadioButtonGroup(name="projection", options={"EP (KL)": "ep", "QP (W2)": "qp"},
                                                      value=m.projection, css_classes=["qpviz-sp-projection"])
        # check boxes: six buttons would not fit the control column
        self.methods = pn.widgets.CheckBoxGroup(name="methods", options={v: k for k, v in sparse_demo.LABELS.items()},
                                                value=list(m.methods), inline=True, css_classes=["qpviz-sp-methods"],
                                                width=300)
        self.description = QuickMarkdown("", sizing_mode="stretch_width", css_classes=["qpviz-sp-description"])
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.link_alert = link_banner()
        self.numbers = NumbersPane("", css_classes=["qpviz-sp-numbers"], sizing_mode="stretch_width")
        self.messages = pn.pane.Markdown("\n".join(f"- {s}" for s in sparse_demo.MESSAGES), sizing_mode="stretch_width",
                                         css_classes=["qpviz-sp-messages"])
        self.views = SparseFigures()
        self.poller = JobPoller(self._poll_curve, lambda: self.model.curve_pending, period_ms=CURVE_POLL_MS)
        self._wire()
        self._refresh_widgets()
        self._redraw()
        self._layout = self._build_layout()
        self._sync_url()
        self.poller.ensure()  # the first curve is on its way
        cancel_when_session_ends(self.model.cancel_curve)

    # -- wiring ------------------------------------------------------------------------------
    def _wire(self) -> None:
        m = self.model
        chosen = {self.preset: ("preset", None), self.kernel: ("kernel", None), self.m_slider: ("m", _m_shown),
                  self.alpha: ("alpha", None), self.projection: ("projection", None), self.methods: ("methods", None)}
        for widget, (name, shown) in chosen.items():
            forward(widget, holds(m, name, shown), lambda value, name=name: self._run(m.param.update, **{name: value}))
        forward(self.z_text, holds(m, "z_text"), lambda text: self._run(m.type_z, text))
        self.views.handles.on_change("data", self._on_handles)
        self.model.param.watch(self._redraw, ["version"])
        self.model.param.watch(lambda *e: self.views.show_curve(self.model), ["curve_version"])
        self.model.param.watch(self._show_messages, ["message", "note"])

    def _say(self, text: str) -> None:
        """A typed number's refusal (or "" once a good one is in): the page's message."""
        self.model.message = text

    def _on_handles(self, attr, old, new) -> None:
        """The point-draw tool moved, added or removed a handle: refit on the handles' x. Handles
        showing the model's Z on the strip's line (the page drawing them, the browser echoing that)
        are held: nothing is forwarded."""
        xs = np.asarray(new.get("x", []), float)
        held = np.array_equal(np.sort(xs), np.ravel(self.model.Z)) and all(y == HANDLE_Y for y in new.get("y", []))
        if not held:
            self._run(self._take_handles, xs)

    def _take_handles(self, xs) -> None:
        if not self.model.set_inducing(xs):
            self._show_handles()  # refused: the handles go back to the last good Z
        elif self.model.Z.size == xs.size:
            self._show_handles()  # a drag moves x only: back onto the strip's line

    def _show_handles(self) -> None:
        self.views.show_handles(np.ravel(self.model.Z))

    def _poll_curve(self) -> None:
        with pn.io.hold():
            try:
                self.model.poll_curve()
            except Exception as exc:  # noqa: BLE001
                self.model.message = f"unexpected error: {exc}"

    def _refresh_widgets(self) -> None:
        m = self.model  # (values the model holds: they forward nothing back, app/binding.py)
        self.preset.value = m.preset
        self.kernel.value = m.kernel
        self.noise.disabled = m.classification
        self.m_slider.value = _m_shown(m.m)
        self.z_text.value = m.z_text
        self.alpha.value = m.alpha
        self.projection.value = m.projection
        self.methods.value = list(m.methods)

    # -- views -------------------------------------------------------------------------------
    def _redraw(self, *events) -> None:
        with pn.io.hold():
            self.views.show(self.model)  # (the handles show the model's Z: not a drag, see _on_handles)
            self.numbers.object = numbers_html(self.model.fits)

    def _show_messages(self, *events) -> None:
        self.alert.object, self.alert.visible = safe_text.message(self.model.message), bool(self.model.message)
        self.description.object = f"*{safe_text.message(self.model.note)}*" if self.model.note else ""

    def _explained(self, view, key: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts)

    def _figure(self, name: str) -> pn.pane.Bokeh:
        return pn.pane.Bokeh(self.views.figures[name], sizing_mode="stretch_width", css_classes=[f"qpviz-sp-{name}"])

    def _build_layout(self) -> pn.Row:
        self._texts = [self.numbers, self.messages, self.description]
        self._controls = pn.Column(
            pn.pane.Markdown("### Data"), self.preset, self.description, self.n_points, self.seed,
            pn.pane.Markdown("### Model"), self.kernel, self.variance, self.lengthscale, self.noise,
            pn.pane.Markdown("### Pseudo-inputs and Power EP"), self.m_slider, self.z_text, self.alpha, self.projection,
            self.methods, pn.pane.Markdown("### Share"), export_buttons("sparse"),
            width=320,
        )
        heading = pn.pane.Markdown("#### What the tutorial shows")
        self._texts.append(heading)
        messages = pn.Column(heading, self.messages, sizing_mode="stretch_width")
        self._grid = view_grid(
            self._explained(self._figure("fits"), "fits"),
            self._explained(self._figure("curve"), "curve"),
            self._explained(self.numbers, "numbers"),
            messages,
            projector=self.projector,
        )
        self._show_messages()
        self.views.style(False)
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, self._grid, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        self.views.style(self.projector)
        set_projector(self._grid, self.projector)

    def _sync_url(self) -> None:
        """Every input in the URL (the preset first: it resets the others; Z after M)."""
        location = pn.state.location
        if location is None:
            return
        widgets = {"preset": self.preset, "n_points": self.n_points, "seed": self.seed, "kernel": self.kernel,
                   "variance": self.variance, "lengthscale": self.lengthscale, "noise": self.noise,
                   "m": self.m_slider, "z_text": self.z_text, "alpha": self.alpha, "projection": self.projection,
                   "methods": self.methods}
        fields = {URL_KEYS[name]: (widget, "value") for name, widget in widgets.items()}
        self.links = LinkValues(location, fields, self.link_alert, checks={URL_KEYS["z_text"]: _z_text})

    def __panel__(self):
        return self._layout


def _m_shown(m: int) -> int:
    """The M slider's value for the model's M (within the slider's range)."""
    return min(max(m, 1), sparse_demo.MAX_INDUCING)


def _z_text(value) -> str:
    """A link's pseudo-inputs, if :func:`decode_z` reads them."""
    try:
        decode_z(str(value))
    except ValueError as exc:
        raise ValueError(f"pseudo-inputs as 'z1, z2, ...': {exc}") from None
    return str(value)


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, SparsePage()
