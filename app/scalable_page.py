"""The "Scalable" page (issue 13, paper 003): SEP, SVI and GFITC trained side by side, live.

A thin Panel view over :class:`qpviz.gpdemo.scalable_model.ScalableModel` (the settings, this
session's runs, Start / Stop and what the runs report; tests drive it without a browser): the
controls pick a dataset, M, the minibatch size, Dask workers, the methods and epochs and forward
them to the model; Start runs each method in its own child process, so training never holds the
server's GIL and other sessions keep answering. While runs go, a periodic callback of this session
(every :data:`POLL_MS` ms) asks the model for news (:meth:`ScalableModel.drain`) and streams it into
the test-error and NTLL curves (``ColumnDataSource.stream``), moves each method's inducing points on
the inputs' PCA plane and updates the status table (:mod:`scalable_figures`). Stop (or closing the
tab) asks the runs to stop. Bad input never starts anything: the model's message says what to
change and the plots keep the last run; a link's invalid choice goes back to its default with a
message; an unexpected error in a callback stops the runs and says "unexpected error: ...".
"""
from __future__ import annotations

import panel as pn
import param

from explorer_figures import NumbersPane
from figure_export import export_buttons
from layout import enlarge, explained, set_projector, view_grid
from long_jobs import JobPoller, cancel_when_session_ends
from number_field import LinkValues, link_banner, typed_box
import pages
import safe_text
from qpviz.gpdemo import scalable_demo as sd
from qpviz.gpdemo.scalable_model import DEFAULTS, TYPED, News, ScalableModel
from scalable_figures import EXPLANATIONS, CurveFigures, DataFigure, status_html

__all__ = ["TITLE", "URL_KEYS", "POLL_MS", "DEFAULTS", "TYPED", "ScalablePage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"dataset": "sc_data", "m": "sc_m", "minibatch": "sc_mb", "workers": "sc_workers", "methods": "sc_methods",
            "epochs": "sc_epochs"}
#: How often a running session drains its runs' messages.
POLL_MS = 300
#: The error message's look (VSGP's and GP 2-D's).
ALERT_STYLES = {"background": "#fbe3d6", "border": "2px solid #D55E00", "border-radius": "4px", "padding": "0 12px"}
#: Before the first Start.
WELCOME = "Press **Start** to train."


class ScalablePage(pn.viewable.Viewer):
    """Controls on the left; the curves, the PCA plane and the status table on the right."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, **params):
        super().__init__(**params)
        self.model = model = ScalableModel()
        w = pn.widgets
        self.dataset = w.Select(label="dataset", options=list(sd.DATASETS), value=model.dataset,
                                css_classes=["qpviz-sc-dataset"])
        self.m = typed_box(TYPED["m"], model.m, "qpviz-sc-m")
        self.minibatch = typed_box(TYPED["minibatch"], model.minibatch, "qpviz-sc-minibatch")
        self.workers = w.RadioButtonGroup(label="Dask workers", options={"in-process": 0, "1 worker": 1, "2 workers": 2},
                                          value=model.workers, css_classes=["qpviz-sc-workers"])
        self.methods = w.CheckBoxGroup(label="methods", options={sd.LABELS[m]: m for m in sd.METHODS},
                                       value=list(model.methods), inline=True, css_classes=["qpviz-sc-methods"])
        self.epochs = typed_box(TYPED["epochs"], model.epochs, "qpviz-sc-epochs")
        self.start_button = w.Button(label="Start", color="primary", css_classes=["qpviz-sc-start"])
        self.stop_button = w.Button(label="Stop", disabled=True, css_classes=["qpviz-sc-stop"])
        self.alert = pn.pane.Markdown("", visible=False, css_classes=["qpviz-sc-error"], sizing_mode="stretch_width",
                                      styles=ALERT_STYLES)
        self.link_alert = link_banner()
        self.description = pn.pane.Markdown(WELCOME, sizing_mode="stretch_width", css_classes=["qpviz-sc-description"])
        self.dashboard = pn.pane.Markdown("", visible=False, sizing_mode="stretch_width", css_classes=["qpviz-sc-dask"])
        self.status = NumbersPane("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["qpviz-sc-status"])
        self.curves, self.view = CurveFigures(), DataFigure()
        self.poller = JobPoller(self._guarded(self.tick), self.model.running, period_ms=POLL_MS)
        self._wire()
        self._layout = self._build_layout()
        self._sync_url()
        cancel_when_session_ends(self.model.stop)

    # -- wiring ------------------------------------------------------------------------------
    def _wire(self) -> None:
        """Widgets forward to the model (which ignores a value it has: the widgets show the model's
        values back without a loop), the model's values and words go back to the widgets and panes."""
        for name in ("dataset", "workers", "methods"):
            widget = getattr(self, name)
            widget.param.watch(lambda event, name=name: self.model.param.update({name: event.new}), "value")
            self.model.param.watch(lambda event, widget=widget: setattr(widget, "value", event.new), name)
        for name in TYPED:
            getattr(self, name).param.watch(lambda event, name=name: self._type(name, event.new), "value")
            self.model.param.watch(lambda event: self._show_typed(event.name), name)
        self.model.param.watch(lambda event: self._show_message(), "message")
        self.model.param.watch(lambda event: self._show_description(), "description")
        self.start_button.on_click(self._guarded(self.start))
        self.stop_button.on_click(self.stop)

    def _type(self, name: str, text: str) -> None:
        """A typed number: the model takes or refuses it; the box shows the value in use."""
        self.model.set_typed(name, text)
        self._show_typed(name)

    def _show_typed(self, name: str) -> None:
        getattr(self, name).value = TYPED[name].show(getattr(self.model, name))

    def _show_message(self) -> None:
        self.alert.param.update(object=safe_text.message(self.model.message), visible=bool(self.model.message))

    def _show_description(self) -> None:
        text = self.model.description
        self.description.object = safe_text.message(text) if text else WELCOME

    def _guarded(self, callback):
        """``callback`` for a widget or the poller: an unexpected error stops this session's runs and
        becomes the page's message, never a browser console error repeated at every poll."""
        def guarded(*args, **kwargs):
            try:
                callback(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 (a page callback must not raise)
                self.model.fail(f"unexpected error: {type(exc).__name__}: {exc}")
                try:
                    self._show_status(self.model.runs)
                except Exception:  # noqa: BLE001 (the status view itself may be what failed)
                    self.stop_button.disabled = True
        return guarded

    # -- runs --------------------------------------------------------------------------------
    def running(self) -> bool:
        return self.model.running()

    def start(self, event=None) -> None:
        """Start the chosen runs (the model refuses bad input and a Start the server has no room for)."""
        if self.model.start():
            self.tick()  # the last run's plots go, the status shows the new runs
            self.poller.ensure()

    def stop(self, event=None) -> None:
        """Ask every run of this session to stop (each is terminated if it has not ended in a few seconds)."""
        if self.model.stop():
            self._show_status(self.model.runs)

    def tick(self) -> None:
        """Stream the runs' news into the views (the poller calls this while runs go)."""
        with pn.io.hold():
            self._show(self.model.drain())

    def _show(self, news: News) -> None:
        if news.cleared:
            self.curves.clear()
            self.view.clear()
        if news.sample is not None:
            self.view.show_data(*news.sample)
        if news.baseline is not None:
            self.curves.show_baseline(news.baseline)
        for method, points in news.curves.items():
            self.curves.stream(method, points)
        for method, z in news.inducing.items():
            self.view.show_inducing(method, z)
        self._show_status(news.status)

    def _show_status(self, rows: dict) -> None:
        table = status_html(rows, self.model.baseline)
        if table != self.status.object:  # (most ticks change nothing but a second of elapsed time)
            self.status.object = table
        lines = [f"- {label}: [{link}]({link})" if link else f"- {label}: closed ({state})"
                 for label, link, state in self.model.dashboard_lines()]
        text = "\n".join(["**Dask dashboard** (on the server's machine):", *lines]) if lines else ""
        if text != self.dashboard.object:
            self.dashboard.param.update(object=text, visible=bool(text))
        self.stop_button.disabled = not self.model.running()

    # -- layout ------------------------------------------------------------------------------
    def _explained(self, view, key: str, css: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts, css)

    def _build_layout(self) -> pn.Row:
        self._texts = [self.description, self.dashboard]
        self._controls = pn.Column(
            pn.pane.Markdown("### Data"), self.dataset, self.description,
            pn.pane.Markdown("### Training"), self.m, self.minibatch, self.epochs,
            pn.pane.Markdown("Dask workers (SEP, SVI)"), self.workers,
            pn.pane.Markdown("Methods (GFITC up to N = 20,000)"), self.methods,
            pn.Row(self.start_button, self.stop_button), self.dashboard,
            pn.pane.Markdown("### Share"), export_buttons("scalable"),
            width=320,
        )
        figure = lambda fig, css: pn.pane.Bokeh(fig, sizing_mode="stretch_width", css_classes=[css])  # noqa: E731
        self._grid = view_grid(
            self._explained(figure(self.curves.figures["test_error"], "qpviz-sc-te"), "test_error", "qpviz-sc-te-view"),
            self._explained(figure(self.curves.figures["ntll"], "qpviz-sc-ntll"), "ntll", "qpviz-sc-ntll-view"),
            self._explained(figure(self.view.figure, "qpviz-sc-plane"), "view", "qpviz-sc-plane-view"),
            self._explained(self.status, "status", "qpviz-sc-status-view"),
            projector=self.projector,
        )
        self._texts.append(self.status)
        self._apply_projector_mode()
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, self._grid, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        self.curves.style(self.projector)
        self.view.style(self.projector)
        set_projector(self._grid, self.projector)

    def _sync_url(self) -> None:
        location = pn.state.location
        if location is None:
            return
        self.links = LinkValues(location, {key: (getattr(self, name), "value") for name, key in URL_KEYS.items()},
                                self.link_alert)

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, ScalablePage()
