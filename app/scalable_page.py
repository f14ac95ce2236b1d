"""The "Scalable" page (issue 13, paper 003): SEP, SVI and GFITC trained side by side, live.

A thin Panel view over :mod:`qpviz.gpdemo.scalable_demo`: the controls pick a dataset, M, the
minibatch size, Dask workers, the methods and epochs; Start runs each method in its own child
process (:class:`scalable_demo.TrainingJob`), so training never holds the server's GIL and other
sessions keep answering. While runs go, a periodic callback of this session (every
:data:`POLL_MS` ms) drains their queues and streams the new points into the test-error and NTLL
curves (``ColumnDataSource.stream``), moves each method's inducing points on the inputs' PCA
plane and updates the status table. Stop (or closing the tab) asks the runs to stop; a run that
does not end within a few seconds is terminated (in a thread: the server's event loop never waits
for a process). Bad input never starts anything: a message says what to change and the plots keep
the last run; a Start the server has no room for (at most ``MAX_RUNNING_JOBS`` runs) is refused
before the session's current runs are stopped; a link's invalid choice goes back to its default
with a message; an unexpected error in a callback stops the runs and says "unexpected error: ...".
"""
from __future__ import annotations

import panel as pn
import param

from explorer_figures import NumbersPane
from figure_export import export_buttons
from layout import enlarge, explained, set_projector, view_grid
from long_jobs import JobPoller, cancel_when_session_ends
from number_field import LinkValues, NumberField, link_banner
import pages
import safe_text
from qpviz.gpdemo import scalable_demo as sd
from scalable_figures import EXPLANATIONS, CurveFigures, DataFigure, status_html

__all__ = ["TITLE", "URL_KEYS", "POLL_MS", "ScalablePage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"dataset": "sc_data", "m": "sc_m", "minibatch": "sc_mb", "workers": "sc_workers", "methods": "sc_methods",
            "epochs": "sc_epochs"}
#: How often a running session drains its runs' messages.
POLL_MS = 300
#: The error message's look (VSGP's and GP 2-D's).
ALERT_STYLES = {"background": "#fbe3d6", "border": "2px solid #D55E00", "border-radius": "4px", "padding": "0 12px"}
DEFAULTS = {"dataset": "digits odd vs even", "m": 20, "minibatch": 200, "workers": 0, "epochs": 5}
#: The typed numbers (their values in :class:`Settings`, read at Start).
TYPED = {"m": NumberField("inducing points M", *sd.RANGES["m"], integer=True),
         "minibatch": NumberField("minibatch size (SEP, SVI)", *sd.RANGES["minibatch"], integer=True),
         "epochs": NumberField("epochs (SEP, SVI)", *sd.RANGES["epochs"], integer=True)}


class Settings(param.Parameterized):
    """The typed numbers in use (the boxes show a refused value's replacement: these)."""

    m = param.Integer(default=DEFAULTS["m"])
    minibatch = param.Integer(default=DEFAULTS["minibatch"])
    epochs = param.Integer(default=DEFAULTS["epochs"])


class ScalablePage(pn.viewable.Viewer):
    """Controls on the left; the curves, the PCA plane and the status table on the right."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, **params):
        super().__init__(**params)
        w = pn.widgets
        self.dataset = w.Select(label="dataset", options=list(sd.DATASETS), value=DEFAULTS["dataset"],
                                css_classes=["qpviz-sc-dataset"])
        self.settings = Settings()
        self.m = TYPED["m"].bind(self.settings, "m", "qpviz-sc-m", self._say)
        self.minibatch = TYPED["minibatch"].bind(self.settings, "minibatch", "qpviz-sc-minibatch", self._say)
        self.workers = w.RadioButtonGroup(label="Dask workers", options={"in-process": 0, "1 worker": 1, "2 workers": 2},
                                          value=DEFAULTS["workers"], css_classes=["qpviz-sc-workers"])
        self.methods = w.CheckBoxGroup(label="methods", options={sd.LABELS[m]: m for m in sd.METHODS},
                                       value=list(sd.METHODS), inline=True, css_classes=["qpviz-sc-methods"])
        self.epochs = TYPED["epochs"].bind(self.settings, "epochs", "qpviz-sc-epochs", self._say)
        self.start_button = w.Button(label="Start", color="primary", css_classes=["qpviz-sc-start"])
        self.stop_button = w.Button(label="Stop", disabled=True, css_classes=["qpviz-sc-stop"])
        self.alert = pn.pane.Markdown("", visible=False, css_classes=["qpviz-sc-error"], sizing_mode="stretch_width",
                                      styles=ALERT_STYLES)
        self.link_alert = link_banner()
        self.description = pn.pane.Markdown("Press **Start** to train.", sizing_mode="stretch_width",
                                            css_classes=["qpviz-sc-description"])
        self.dashboard = pn.pane.Markdown("", visible=False, sizing_mode="stretch_width", css_classes=["qpviz-sc-dask"])
        self.status = NumbersPane("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["qpviz-sc-status"])
        self.curves, self.view = CurveFigures(), DataFigure()
        self.jobs: dict[str, sd.TrainingJob] = {}
        self.runs: dict[str, dict] = {}  # method -> {"state", "last" entry, "elapsed", "text"}
        self.baseline = None
        self.links: dict[str, str] = {}  # method -> its Dask dashboard's address
        self.poller = JobPoller(self._guarded(self.tick), self.running, period_ms=POLL_MS)
        self.start_button.on_click(self._guarded(self.start))
        self.stop_button.on_click(self.stop)
        self._layout = self._build_layout()
        self._sync_url()
        cancel_when_session_ends(self.stop)

    # -- runs --------------------------------------------------------------------------------
    def running(self) -> bool:
        return any(not job.ended for job in self.jobs.values())

    def _guarded(self, callback):
        """``callback`` for a widget or the poller: an unexpected error stops this session's runs and
        becomes the page's message, never a browser console error repeated at every poll."""
        def guarded(*args, **kwargs):
            try:
                callback(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 (a page callback must not raise)
                self._fail(f"unexpected error: {type(exc).__name__}: {exc}")
        return guarded

    def _fail(self, text: str) -> None:
        """Stop (at once, off the event loop) and let go of every run of this session; say ``text``."""
        for method, job in self.jobs.items():
            if not job.ended:
                job.stop(grace=0.0, wait=False)
                self.runs.get(method, {})["state"] = "stopped"
        self.jobs = {}  # nothing left to poll: the poller stops
        self._say(text + ". The runs were stopped; press Start to train again.")
        try:
            self._show_status()
        except Exception:  # noqa: BLE001 (the status view itself may be what failed)
            self.stop_button.disabled = True

    def _own_running_jobs(self) -> int:
        """This session's runs that the server counts as running (a new Start replaces them)."""
        return sum(1 for job in self.jobs.values() if job.alive and not job.stop_requested)

    def start(self, event=None) -> None:
        """Start the chosen runs (stopping this session's current ones); bad input: a message only.
        A Start the server has no room for (MAX_RUNNING_JOBS) is refused before anything stops."""
        try:
            configs, skipped = sd.plan_runs(self.dataset.value, self.methods.value, self.settings.m,
                                            self.settings.minibatch, self.settings.epochs, self.workers.value)
        except (ValueError, TypeError) as exc:
            self._say(f"Not started: {exc}. The plots keep the last run.")
            return
        if not configs:
            self._say("Nothing to run: " + "; ".join(f"{sd.LABELS[m]} {why}" for m, why in skipped.items()))
            return
        others = sd.running_jobs() - self._own_running_jobs()
        if others + len(configs) > sd.MAX_RUNNING_JOBS:
            self._say(f"Not started: this server already trains {others} models for other sessions (at most "
                      f"{sd.MAX_RUNNING_JOBS} at a time on its cores) and this Start needs {len(configs)}: "
                      "tick fewer methods, or try again in a minute. Your runs go on.")
            return
        self.stop()
        jobs = {}
        try:
            for config in configs:
                jobs[config.method] = sd.TrainingJob(config).start()
        except (RuntimeError, OSError) as exc:  # (another session started in between)
            for job in jobs.values():
                job.stop(grace=0.0, wait=False)
            self._say(f"Not started: {exc}")
            return
        self.jobs, self.baseline, self.links = jobs, None, {}
        self.runs = {m: {"state": "starting (loading data)"} if m in jobs else {"state": "not run", "text": skipped[m]}
                     for m in sd.METHODS if m in jobs or m in skipped}
        with pn.io.hold():
            self._say("")
            self.curves.clear()
            self.view.clear()
            self.description.object = safe_text.fill("Starting {methods} on {dataset} ...", methods=", ".join(
                sd.LABELS[m] for m in jobs), dataset=self.dataset.value)
            self._show_status()
        self.poller.ensure()

    def stop(self, event=None) -> None:
        """Ask every run of this session to stop (each is terminated if it has not ended in a few seconds)."""
        for method, job in self.jobs.items():
            if not job.ended and not job.stop_requested:
                job.stop()
                self.runs[method]["state"] = "stopping"
        if self.jobs:
            self._show_status()

    def tick(self) -> None:
        """Take every run's new messages into the views (the poller calls this while runs go)."""
        with pn.io.hold():
            for method, job in self.jobs.items():
                if job.ended:
                    continue
                run = self.runs[method]
                run["elapsed"] = job.elapsed()
                entries = []
                for message in job.poll():
                    if message["kind"] == "entry":
                        entries.append(message)
                    else:
                        self._take(method, run, message)
                if entries:
                    self.curves.stream(method, entries)
                    self.view.show_inducing(method, entries[-1]["z"])
                    run["last"] = entries[-1]
            self._show_status()

    def _take(self, method: str, run: dict, message: dict) -> None:
        """A start, note or end message of ``method``'s run."""
        kind = message["kind"]
        if kind == "start":
            run["state"] = "running" if not self.jobs[method].stop_requested else "stopping"
            if not self.view.shows_data:  # the first run to start shows its sample
                self.view.show_data(message["sample"], message["labels"])
                share = 100 * float(sum(message["explained"]))
                self.description.object = safe_text.fill("{description}; the PCA plane holds {share:.0f}% of the variance.",
                                                         description=message["description"], share=share)
            self.view.show_inducing(method, message["z"])
            if message.get("baseline") is not None:
                self.baseline = message["baseline"]
                self.curves.show_baseline(self.baseline)
            if message.get("dashboard"):
                self.links[method] = message["dashboard"]
        elif kind == "note":
            run["text"] = message["text"]
        elif kind == "end":
            run["state"] = message["status"]
            if message.get("text"):
                run["text"] = message["text"]

    def _show_status(self) -> None:
        table = status_html(self.runs, self.baseline)
        if table != self.status.object:  # (most ticks change nothing but a second of elapsed time)
            self.status.object = table
        lines = [f"- {sd.LABELS[m]}: [{link}]({link})" if self.runs[m]["state"] in ("running", "stopping")
                 else f"- {sd.LABELS[m]}: closed ({self.runs[m]['state']})" for m, link in self.links.items()]
        text = "\n".join(["**Dask dashboard** (on the server's machine):", *lines]) if lines else ""
        if text != self.dashboard.object:
            self.dashboard.param.update(object=text, visible=bool(text))
        self.stop_button.disabled = not self.running()

    def _say(self, text: str) -> None:
        self.alert.param.update(object=safe_text.message(text), visible=bool(text))

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
