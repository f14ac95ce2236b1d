"""Variance effects page: EP vs QP predictive latent variances on held-out points (QP paper Fig. 1).

A thin Panel view over :class:`qpviz.gpdemo.variance_model.VarianceModel` (the inputs and their
checks, the fits' job in the shared pool, cancel, the last good result and the messages; the
computation is :mod:`qpviz.variance_effects`) and app/variance_figures.py (the views). Choose a
dataset (the paper's real datasets or a seeded synthetic stand-in for the GP pages' current data),
the split's seed, the number of folds and whether EP's evidence is optimised; the page fits EP, QP,
VB and Laplace on the training part in the job pool (never on the server's event loop), shows what
is being fitted with a busy indicator and a Cancel button (polled every POLL_MS), and then draws

* the Figure 1 scatter: var_QP against var_EP per held-out point, log axes, the diagonal QP = EP;
* a histogram of var_QP / var_EP;
* TE and NTLL per method;

each with one sentence saying what to see and its formula. Results are cached in-process per
(dataset, seed, settings), so flipping back is instant. A failed or skipped fit keeps the last
good views and says what to change. URL keys ``ve_dataset``, ``ve_seed``, ``ve_folds``,
``ve_optimise`` (prefixed: the other pages share the URL; projector mode is the app header's).
"""
from __future__ import annotations

import io

import panel as pn
import param

from explorer_figures import NumbersPane, style_figure
from figure_export import export_buttons
from layout import enlarge, formula, set_projector, view_grid
from long_jobs import JobPoller, cancel_when_session_ends
from number_field import typed_box
import link_query
import pages
import safe_text
from qpviz.gpdemo.variance_model import DATASET_CHOICES, SEED, URL_KEYS, VarianceModel
from variance_figures import COLOURS, FORMULAS, VarianceFigures, explanations, scores_html

__all__ = ["TITLE", "COLOURS", "DATASET_CHOICES", "URL_KEYS", "VarianceEffects", "explanations", "scores_html", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: While a fit runs, the page looks for its result this often (ms).
POLL_MS = 250


class VarianceQuery(param.Parameterized):
    """The URL's view of the page (untyped: a bad link is reported, not raised)."""

    ve_dataset = param.Parameter(default=None)
    ve_seed = param.Parameter(default=None)
    ve_folds = param.Parameter(default=None)
    ve_optimise = param.Parameter(default=None)


class VarianceEffects(pn.viewable.Viewer):
    """The page: controls on the left, the three views with their sentences and formulas."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, model: VarianceModel | None = None, **params):
        """``params``: the model's (e.g. ``dataset="wine1"``), for a model made here."""
        super().__init__(**{k: v for k, v in params.items() if k in self.param})
        self.model = m = model if model is not None else VarianceModel(
            **{k: v for k, v in params.items() if k not in self.param})
        self.dataset_select = pn.widgets.Select.from_param(m.param.dataset, label="dataset",
                                                           css_classes=["qpviz-ve-dataset"])
        # a text box, no start/end: the browser would silently keep an out-of-range number in a number
        # box without sending it; here every typed number reaches the model, which names a bad one
        self.seed_input = typed_box(SEED, m.seed, "qpviz-ve-seed")
        self.folds_select = pn.widgets.Select.from_param(m.param.folds, label="folds (the first is held out)",
                                                         css_classes=["qpviz-ve-folds"])
        self.optimise_box = pn.widgets.Checkbox.from_param(m.param.optimise,
                                                           label="optimise hyper-parameters (slow: seconds)")
        self.cancel_button = pn.widgets.Button(label="Cancel fit", color="warning", disabled=True,
                                               css_classes=["qpviz-ve-cancel"])
        self.download = pn.widgets.FileDownload(callback=lambda: io.StringIO(m.csv_text()),
                                                filename="variance_effects.csv", label="Download the numbers (CSV)",
                                                css_classes=["qpviz-ve-csv"])
        self.spinner = pn.indicators.LoadingSpinner(value=False, size=28, visible=False)
        self.status = pn.pane.Markdown("", css_classes=["qpviz-ve-status"], sizing_mode="stretch_width")
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.link_alert = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-ve-link"])

        self.views = VarianceFigures()
        self.figures = self.views.figures
        self.sentences = {key: pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10),
                                                css_classes=[f"qpviz-ve-sentence-{key}"]) for key in FORMULAS}
        self.formulas = {key: formula(text, margin=(0, 10))
                         for key, text in FORMULAS.items()}
        self.scores = NumbersPane("<p>No fit yet.</p>", css_classes=["qpviz-ve-scores"], sizing_mode="stretch_width")
        self.poller = JobPoller(self._poll, lambda: m.busy, period_ms=POLL_MS)
        self._layout = self._build_layout()
        self._wire()
        self.url = self._sync_url()
        cancel_when_session_ends(m.cancel)  # a closed tab stops its fit (unless another session shares it)
        self._apply_projector_mode()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            # the first fit starts once the browser holds the page: a fit that ended (or came from the
            # cache) before that was drawn into figures whose changes never reached the browser (under
            # load at a server start, 4 of 8 fresh sessions showed empty plots titled "Figure 1")
            pn.state.onload(self._start)
        else:
            self._start()

    def _start(self) -> None:
        self.model.start()
        self._write_url()

    def use_data(self, label: str, X, y, likelihood="probit", kernel=None, select: bool = True) -> None:
        """Another page's data (app/dashboard.py's hand-off): :meth:`VarianceModel.use_data`."""
        self.model.use_data(label, X, y, likelihood, kernel, select)

    # -- wiring ------------------------------------------------------------------------------
    def _wire(self) -> None:
        """Widgets -> model (the model ignores a value equal to its own) and model -> page."""
        m = self.model
        self.seed_input.param.watch(self._on_seed_typed, "value")
        m.param.watch(lambda event: setattr(self.seed_input, "value", SEED.show(event.new)), "seed")
        self.cancel_button.on_click(lambda event: m.cancel(say=True))
        m.param.watch(self._draw, "version")
        m.param.watch(self._show_message, "message")
        m.param.watch(self._show_status, "status")
        m.param.watch(self._show_busy, "busy")
        m.param.watch(self._show_link_notes, "link_notes")
        m.param.watch(self._write_url, ["dataset", "seed", "folds", "optimise"])
        for show in (self._show_message, self._show_status, self._show_busy, self._show_link_notes):
            show()  # a model given to the page may hold them already
        if m.result is not None:
            self._draw()

    def _on_seed_typed(self, event) -> None:
        """A typed seed: the model takes it or names it; the box shows the seed in use."""
        self.model.type_seed(event.new)
        self.seed_input.value = SEED.show(self.model.seed)

    def _poll(self) -> None:
        with pn.io.hold():
            try:
                self.model.poll()
            except Exception as exc:  # noqa: BLE001 - a page callback must not raise
                self.model.message = f"unexpected error: {exc}"

    def _show_busy(self, *events) -> None:
        busy = self.model.busy
        self.spinner.value = self.spinner.visible = busy
        self.cancel_button.disabled = not busy
        self.poller.ensure()

    def _show_message(self, *events) -> None:
        self.alert.object = safe_text.message(self.model.message)
        self.alert.visible = bool(self.model.message)

    def _show_status(self, *events) -> None:
        template, values = self.model.status
        self.status.object = safe_text.fill(template, **values)

    def _draw(self, *events) -> None:
        result = self.model.result
        with pn.io.hold():
            self.views.draw(result)
            for key, sentence in explanations(result).items():
                self.sentences[key].object = sentence
            self.scores.object = scores_html(result)

    # -- views -----------------------------------------------------------------------------
    def _explained(self, view, key: str) -> pn.Column:
        return pn.Column(view, self.sentences[key], self.formulas[key], sizing_mode="stretch_width")

    def _build_layout(self) -> pn.Row:
        self._about = pn.pane.Markdown(
            "EP, QP, VB and Laplace are fitted on the training folds (features standardised on them, isotropic "
            "RBF kernel as the paper's code); QP and Laplace use EP's kernel, VB its own bound.",
            sizing_mode="stretch_width")
        self._scores_heading = pn.pane.Markdown("#### Test error and NTLL per method")
        self._controls = pn.Column(
            pn.pane.Markdown("### Data and split"),
            self.dataset_select, self.seed_input, self.folds_select, self.optimise_box,
            pn.Row(self.cancel_button, self.spinner),
            self.download,
            export_buttons("variance-effects"),
            self._about,
            width=300,
        )
        # as many columns as fit: one on a 1024 px screen, where two left each plot too narrow
        self._views = views = view_grid(
            self._explained(pn.pane.Bokeh(self.figures["scatter"], sizing_mode="stretch_width"), "scatter"),
            self._explained(pn.pane.Bokeh(self.figures["ratio"], sizing_mode="stretch_width"), "ratio"),
            self._explained(pn.Column(self._scores_heading, self.scores,
                                      sizing_mode="stretch_width"), "scores"),
            projector=self.projector,
        )
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, self.status, views, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        texts = (*self.sentences.values(), *self.formulas.values(), self.scores, self.status, self._about,
                 self._scores_heading)
        widgets = [w for w in self._controls.objects if isinstance(w, pn.widgets.Widget)] + [self.cancel_button]
        enlarge(self.projector, texts, widgets)
        set_projector(self._views, self.projector)  # wider columns for the large fonts
        for fig in self.figures.values():
            style_figure(fig, self.projector)

    # -- URL -------------------------------------------------------------------------------
    def _sync_url(self) -> VarianceQuery | None:
        """Keep dataset, seed, folds and optimise in the URL; a bad value in a link is replaced by
        the page's value and named in the link banner (:meth:`VarianceModel.read_link`)."""
        location = pn.state.location
        if location is None:
            return None
        self.query = VarianceQuery()
        self.query.param.watch(self._on_query, list(URL_KEYS), precedence=1)  # after the URL sync writes the link
        link_query.sync(location, self.query, {key: key for key in URL_KEYS})
        return self.query

    def _write_url(self, *events) -> None:
        """The URL shows the inputs (read back, they are no news to the model: nothing is refitted)."""
        if getattr(self, "query", None) is not None:
            self.query.param.update(**self.model.link_view())

    def _on_query(self, *events) -> None:
        """A link's values (read when the page opens) set the model; a refused one is rewritten in the
        link to the value shown once this browser event is handled (Panel does not echo a change back
        to the browser inside the event that sent it)."""
        if self.model.read_link({event.name: event.new for event in events}):
            return
        if pn.state.curdoc is not None:
            pn.state.add_periodic_callback(self._write_url, period=50, count=1)
        else:
            self._write_url()

    def _show_link_notes(self, *events) -> None:
        notes = self.model.link_notes
        text = "The link's values below were not used:\n\n" + safe_text.bullets(notes.values()) if notes else ""
        self.link_alert.param.update(object=text, visible=bool(text))

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, VarianceEffects()
