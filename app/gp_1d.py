"""GP 1-D page: every method's fit of a 1-D GP side by side, with a site-by-site step-through.

A thin Panel view over ``qpviz.gpdemo.oned_model.GP1DModel`` (state, validation, fits, long jobs) and
``gp_1d_figures.GP1DFigures`` (Bokeh figures patched from the model). The widgets only forward
values to the model (app/binding.py: a value the model holds, e.g. the page showing the model,
forwards nothing); the model's ``version`` tells the figures to redraw. A periodic callback
(every JOB_POLL_MS while a job runs) takes MCMC / optimisation progress and results from the
thread pool, so the server's event loop is never blocked by them.
"""
from __future__ import annotations

import io

import panel as pn
import param
from bokeh import events

from binding import forward, holds
from gp_1d_figures import EXPLANATIONS, GP1DFigures, table_html
from explorer_figures import NumbersPane
from explorer_widgets import PromptEditableFloatSlider
from csv_upload import CsvUpload
from step_keys import StepKeys
from long_jobs import GuardedModelCalls, JobPoller, cancel_when_session_ends
from figure_export import export_buttons
from layout import HandOff, enlarge, explained, set_projector, view_grid
from number_field import TYPED_CLASS, LinkValues, link_banner, typed_box
import pages
from quick_text import QuickMarkdown
import safe_text
from qpviz import explorer
from qpviz.gpdemo import oned, presets
from qpviz.gpdemo.oned_data import MAX_UPLOAD_BYTES, decode_data
from qpviz.gpdemo.oned_model import TYPED, GP1DModel

__all__ = ["TITLE", "GP1DPage", "page", "URL_KEYS"]

TITLE = pages.title(__name__)  # registered in app/pages.py
#: How often a running long job is polled for progress.
JOB_POLL_MS = 250
#: Ranges of the hyper-parameter sliders (typed values may go beyond; validated by the model).
VARIANCE_RANGE = (0.01, 200.0)
LENGTHSCALE_RANGE = (0.05, 30.0)
#: URL query keys of the page's state (prefixed: the explorer uses lik, y, m, s, projector).
URL_KEYS = {"preset": "g1_preset", "n_points": "g1_n", "seed": "g1_seed", "likelihood": "g1_lik",
            "kernel": "g1_kernel", "variance": "g1_var", "lengthscale": "g1_ls", "methods": "g1_methods",
            "step_method": "g1_step", "data_query": "g1_data"}

#: Method labels of the method buttons.
_LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace", "mcmc": "MCMC"}


class GP1DPage(GuardedModelCalls, pn.viewable.Viewer):
    """Controls on the left; latent, predictive, sites, convergence, table and step-through views."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, **params):
        super().__init__(**params)
        self.model = GP1DModel()
        m = self.model
        self.preset = pn.widgets.Select(label="data preset", options=list(presets.PRESETS), value=m.preset)
        self.description = QuickMarkdown("", sizing_mode="stretch_width", css_classes=["qpviz-gp1d-description"])
        self.n_points = typed_box(TYPED["n_points"], m.n_points, "qpviz-gp1d-n")
        self.seed = typed_box(TYPED["seed"], m.seed, "qpviz-gp1d-seed")
        self.likelihood = pn.widgets.Select(label="likelihood", options=explorer.likelihood_names(), value=m.likelihood)
        self.lik_params = pn.widgets.TextInput(label="likelihood parameters (label=value, ...)", value="",
                                               css_classes=["qpviz-gp1d-lik-params"])
        self.kernel = pn.widgets.Select(label="kernel", options=list(oned.KERNELS), value=m.kernel)
        self.variance = PromptEditableFloatSlider(
            label=TYPED["variance"].label, start=VARIANCE_RANGE[0],
            end=VARIANCE_RANGE[1], step=0.01, value=m.variance, css_classes=["qpviz-gp1d-variance", TYPED_CLASS])
        self.lengthscale = PromptEditableFloatSlider(
            label=TYPED["lengthscale"].label,
            start=LENGTHSCALE_RANGE[0], end=LENGTHSCALE_RANGE[1], step=0.01, value=m.lengthscale,
            css_classes=["qpviz-gp1d-lengthscale", TYPED_CLASS])
        self.methods = pn.widgets.CheckButtonGroup(label="methods", options={v: k for k, v in _LABELS.items()},
                                                   value=list(m.methods))
        self.optimise_button = pn.widgets.Button(label="optimise (EP evidence)", color="primary")
        self.cancel_button = pn.widgets.Button(label="cancel job", color="warning", disabled=True)
        self.progress = pn.indicators.Progress(active=False, value=-1, visible=False, sizing_mode="stretch_width")
        self.status = QuickMarkdown("", css_classes=["qpviz-gp1d-status"])
        self.step_method = pn.widgets.RadioButtonGroup(label="step-through", options={"EP": "ep", "QP": "qp"},
                                                       value=m.step_method)
        self.step_site = pn.widgets.Button(label="site (n)", css_classes=["qpviz-step-site"])
        self.step_sweep = pn.widgets.Button(label="sweep (s)", css_classes=["qpviz-step-sweep"])
        self.step_reset = pn.widgets.Button(label="reset")
        self.step_keys = StepKeys(width=0, height=0, margin=0)
        self.explorer_link = pn.pane.HTML("", css_classes=["qpviz-gp1d-explorer-link"])
        self.upload = CsvUpload(max_bytes=MAX_UPLOAD_BYTES, css_classes=["qpviz-gp1d-upload"])
        self.download = pn.widgets.FileDownload(callback=self._csv_file, filename="gp1d_fit.csv",
                                                label="export fitted numbers (CSV)", color="light")
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.info = pn.pane.Alert("", alert_type="info", visible=False, css_classes=["qpviz-gp1d-note"])
        self.link_alert = link_banner()
        self.table = NumbersPane("", css_classes=["qpviz-gp1d-table"], sizing_mode="stretch_width")
        self.sd_text = QuickMarkdown("", css_classes=["qpviz-gp1d-sd-text"], sizing_mode="stretch_width",
                                        margin=(0, 10))
        self.change_text = QuickMarkdown("", css_classes=["qpviz-gp1d-change"], sizing_mode="stretch_width",
                                            margin=(0, 10))
        self.views = GP1DFigures()
        self.hand_off = HandOff(self._current_data, lambda text: setattr(self.model, "message", text))
        self.poller = JobPoller(self._poll_job, lambda: self.model.job_running, period_ms=JOB_POLL_MS)

        self._wire()
        self._refresh_widgets()
        self._redraw()
        self._layout = self._build_layout()
        self._sync_url()
        self.poller.ensure()  # the MCMC reference the default methods started: shown when done, without a click
        # a closed browser tab stops its job (unless another session shares it)
        cancel_when_session_ends(lambda: self.model.cancel_job(quiet=True))

    # -- wiring ------------------------------------------------------------------------------
    def _wire(self) -> None:
        m = self.model
        chosen = {self.preset: "preset", self.kernel: "kernel", self.methods: "methods", self.step_method: "step_method"}
        for widget, name in chosen.items():
            forward(widget, holds(m, name), lambda value, name=name: self._run(m.param.update, **{name: value}))
        # typed numbers, checked by the model: a refused value is named, the last good one kept and shown
        typed = {self.n_points: ("n_points", TYPED["n_points"].show), self.seed: ("seed", TYPED["seed"].show),
                 self.variance: ("variance", None), self.lengthscale: ("lengthscale", None)}
        for widget, (name, shown) in typed.items():
            forward(widget, holds(m, name, shown), lambda value, name=name: self._run(m.set_typed, name, value))
        forward(self.likelihood, holds(m, "likelihood"), self._apply_likelihood)
        forward(self.lik_params, holds(m, "likelihood_params", _params_text), self._apply_lik_params)
        self.optimise_button.on_click(lambda event: self._run(self.model.optimise))
        self.cancel_button.on_click(lambda event: self._run(self.model.cancel_job))
        self.step_site.on_click(lambda event: self._run(self.model.step, "site"))
        self.step_sweep.on_click(lambda event: self._run(self.model.step, "sweep"))
        self.step_reset.on_click(lambda event: self._run(self.model.step, "reset"))
        self.step_keys.param.watch(
            lambda event: self._run(self.model.step, "site" if self.step_keys.key == "n" else "sweep"), "presses")
        self.upload.param.watch(lambda event: self._run(self._on_upload, event.new), "file")
        self.views.figures["predictive"].on_event(events.Tap, self._on_tap)
        self.model.param.watch(self._redraw, ["version"])
        self.model.param.watch(lambda *events: self.views.show_optimisation(self.model),
                               ["optimisation", "optimisation_done"])
        self.model.param.watch(self._on_site, ["site"])
        self.model.param.watch(self._show_messages, ["message", "note", "job_status", "job_running"])

    def _apply_likelihood(self, name: str) -> None:
        """Another likelihood, with its own starting parameters (the old one's, e.g. step's eps,
        would be refused by it)."""
        self._run(lambda: self.model.param.update(likelihood=name, likelihood_params=explorer.initial_params(name)))

    def _apply_lik_params(self, text: str) -> None:
        try:
            params = {}
            for part in filter(None, (p.strip() for p in text.split(","))):
                name, equals, value = part.partition("=")
                if not equals:
                    raise ValueError(f"{part!r} is not label=value")
                params[name.strip()] = explorer.parse_number(value, name.strip())
            explorer.build_likelihood(self.model.likelihood, **params)
        except (ValueError, TypeError) as exc:
            kept = _params_text(self.model.likelihood_params)
            self.model.message = f"likelihood parameters not applied: {exc} (write e.g. eps=0.1); kept {kept}"
            self._refresh_widgets()  # the box shows the parameters in use again
            return
        self._run(self.model.param.update, likelihood_params=params)

    def _on_upload(self, file: dict) -> None:
        """A file chosen in the upload: the browser sent its content, or only its size (too large)."""
        content = self.upload.content()
        if content is None:
            self.model.refuse_upload(int(file.get("size", 0)))
        else:
            self.model.upload(content)

    def _on_tap(self, event) -> None:
        if event.x is not None and event.y is not None:
            self._run(self.model.click, float(event.x), float(event.y))

    def _poll_job(self) -> None:
        with pn.io.hold():
            try:
                self.model.poll()
            except Exception as exc:  # noqa: BLE001
                self.model.message = f"unexpected error: {exc}"
            self._refresh_widgets()

    def _refresh_widgets(self) -> None:
        """Make the widgets show the model (after accepted, adjusted or refused changes)."""
        m = self.model  # (values the model holds: they forward nothing back, app/binding.py)
        self.preset.value = m.preset
        self.n_points.value = TYPED["n_points"].show(m.n_points)
        self.seed.value = TYPED["seed"].show(m.seed)
        self.likelihood.value = m.likelihood
        self.lik_params.value = _params_text(m.likelihood_params)
        self.lik_params.disabled = not m.likelihood_params
        self.kernel.value = m.kernel
        self.variance.value = m.variance
        self.lengthscale.value = m.lengthscale
        self.methods.value = list(m.methods)
        self.step_method.value = m.step_method
        self.description.object = f"*{safe_text.message(presets.DESCRIPTIONS[m.preset])}*"

    # -- views -------------------------------------------------------------------------------
    def _redraw(self, *events) -> None:
        with pn.io.hold():
            self.views.show(self.model)
            self.table.object = table_html(self.model.fits)
            self.sd_text.object = safe_text.text(self.views.show_sd_ratio(self.model), None)  # numbers: not shortened

    def _on_site(self, *events) -> None:
        self.views.show_step(self.model)
        change = self.model.change if self.model.site is not None else None
        self.change_text.object = ("" if change is None else "**The update just made:** " +
                                   "\n\n".join(safe_text.text(line, None) for line in change.sentences()))
        query, note = self.model.explorer_link()
        if not query:
            self.explorer_link.object = ""
            return
        link = f'<a href="?{safe_text.html_text(query, None)}" target="_blank">open site {self.model.site.index} in the Projection Explorer</a>'
        self.explorer_link.object = link + (f"<br><small>{safe_text.html_text(note, safe_text.MESSAGE_LIMIT)}</small>"
                                            if note else "")

    def _show_messages(self, *events) -> None:
        m = self.model
        self.alert.object, self.alert.visible = safe_text.message(m.message), bool(m.message)
        self.info.object, self.info.visible = safe_text.message(m.note), bool(m.note)
        self.status.object = safe_text.message(m.job_status)
        self.progress.visible = self.progress.active = m.job_running
        self.cancel_button.disabled = not m.job_running

    def _current_data(self) -> tuple:
        """(label, X, y, likelihood, kernel) of the fit shown, for the Variance-effects page."""
        m = self.model
        label = f"GP 1-D: {m.preset}" + (" (edited)" if m.data_query else "")
        return label, m.X, m.y, m.likelihood_object(), m.kernel_object()

    def _csv_file(self) -> io.StringIO:
        return io.StringIO(self.model.export_csv())

    def _explained(self, view, key: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts)

    def _figure(self, name: str) -> pn.pane.Bokeh:
        return pn.pane.Bokeh(self.views.figures[name], sizing_mode="stretch_width", css_classes=[f"qpviz-gp1d-{name}"])

    def _build_layout(self) -> pn.Row:
        self._texts = [self.table, self.sd_text, self.change_text]
        self._controls = pn.Column(
            pn.pane.Markdown("### Data"), self.preset, self.description, self.n_points, self.seed,
            pn.pane.Markdown("Upload a CSV with columns x, y (at most 1000 rows, 5 MB):"), self.upload,
            pn.pane.Markdown("### Model"), self.likelihood, self.lik_params, self.kernel, self.variance,
            self.lengthscale, self.methods, self.optimise_button, self.cancel_button, self.progress, self.status,
            pn.pane.Markdown("### Step-through"), self.step_method,
            pn.Row(self.step_site, self.step_sweep, self.step_reset), self.step_keys, self.explorer_link,
            pn.pane.Markdown("### Share"), self.download, export_buttons("gp-1-d"), self.hand_off.button,
            width=320,
        )
        # as many columns as fit: one on a 1024 px screen, where two left each plot too narrow
        self._grid = views = view_grid(
            self._explained(self._figure("latent"), "latent"),
            self._explained(self._figure("predictive"), "predictive"),
            self._explained(self._figure("sites"), "sites"),
            self._explained(pn.Column(self._figure("trace"), self._figure("optimisation"),
                                      sizing_mode="stretch_width"), "trace"),
            self._explained(self.table, "table"),
            self._explained(pn.Column(self._figure("sd_ratio"), self.sd_text, sizing_mode="stretch_width"), "sd_ratio"),
            self._explained(pn.Column(self._figure("site"), self.change_text, sizing_mode="stretch_width"), "site"),
            projector=self.projector,
        )
        self._show_messages()
        self.views.style(False)
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, self.info, views, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        self.views.style(self.projector)
        set_projector(self._grid, self.projector)  # wider columns for the large fonts

    def _sync_url(self) -> None:
        """Keep the page's inputs in the URL (a copied link reopens the same fit)."""
        location = pn.state.location
        if location is None:
            return
        widgets = {"preset": self.preset, "n_points": self.n_points, "seed": self.seed, "likelihood": self.likelihood,
                   "kernel": self.kernel, "variance": self.variance, "lengthscale": self.lengthscale,
                   "methods": self.methods, "step_method": self.step_method}
        fields = {URL_KEYS[name]: (widget, "value") for name, widget in widgets.items()}
        fields[URL_KEYS["data_query"]] = (self.model, "data_query")  # clicked / uploaded points
        self.links = LinkValues(location, fields, self.link_alert, checks={URL_KEYS["data_query"]: _data_text})

    def __panel__(self):
        return self._layout


def _params_text(params: dict) -> str:
    """The likelihood parameters as the page shows them ("eps=0.1, ...")."""
    return ", ".join(f"{k}={v:g}" for k, v in params.items())


def _data_text(value) -> str:
    """A link's data text, if :func:`qpviz.gpdemo.oned_data.decode_data` reads it."""
    if value == "":
        return ""  # the page's own data
    try:
        decode_data(str(value))
    except ValueError as exc:
        raise ValueError(f"points as 'x:y;x:y;...': {exc}") from None
    return str(value)


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, GP1DPage()
