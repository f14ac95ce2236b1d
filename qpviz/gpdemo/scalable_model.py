"""The Scalable page's settings and training runs, without widgets (tests drive it directly; the
page, app/scalable_page.py, binds widgets to it and app/scalable_figures.py draws what it reports).

:class:`ScalableModel` holds the settings of the next Start (dataset, M, minibatch size, epochs,
Dask workers, methods; a typed number is checked by :data:`TYPED`'s rules, a bad one refused with a
message and the last good one kept), this session's runs (:class:`scalable_demo.TrainingJob`, one
child process per method) and what they reported. :meth:`ScalableModel.start` plans and starts the
runs, refusing a Start the server has no room for (``MAX_RUNNING_JOBS``) before the session's
current runs are stopped; :meth:`ScalableModel.stop` asks them to stop (a run that does not end
within ``STOP_GRACE_S`` is terminated by a timer thread: nothing here waits for a process);
:meth:`ScalableModel.drain` takes the runs' new messages and returns what is new (:class:`News`)
for the page to stream into its figures. The computation is :mod:`qpviz.gpdemo.scalable_demo`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import param

from qpviz.checks import refusal
from qpviz.gpdemo import scalable_demo as sd
from qpviz.number_rules import NumberField

__all__ = ["ScalableModel", "News", "DEFAULTS", "TYPED", "CURVE_COLUMNS"]

DEFAULTS = {"dataset": "digits odd vs even", "m": 20, "minibatch": 200, "workers": 0, "epochs": 5}
#: The typed numbers (checked here; the page's boxes show their labels).
TYPED = {"m": NumberField("inducing points M", *sd.RANGES["m"], integer=True),
         "minibatch": NumberField("minibatch size (SEP, SVI)", *sd.RANGES["minibatch"], integer=True),
         "epochs": NumberField("epochs (SEP, SVI)", *sd.RANGES["epochs"], integer=True)}
#: A curve point's columns (training time, the two validation scores, the optimiser's step) and
#: the keys of a run's entry they come from.
CURVE_COLUMNS = {"t": "wall_time", "test_error": "test_error", "ntll": "ntll", "step": "step"}


@dataclass
class News:
    """What :meth:`ScalableModel.drain` found since the last drain."""

    #: A new Start: the last run's curves, data and inducing points go.
    cleared: bool = False
    #: (inputs on the PCA plane (n, 2), their labels) of the Start's first run to report.
    sample: tuple | None = None
    #: The logistic baseline's {"test_error", "ntll"} (once per Start, with its first run's start).
    baseline: dict | None = None
    #: method -> its new curve points, {column: list} (CURVE_COLUMNS; finite scores only).
    curves: dict = field(default_factory=dict)
    #: method -> its latest inducing inputs on the PCA plane (M, 2).
    inducing: dict = field(default_factory=dict)
    #: method -> its status row: state, the last entry ("last"), "elapsed" seconds, "text".
    status: dict = field(default_factory=dict)


def _finite(z) -> bool:
    return z is not None and np.all(np.isfinite(z))


class ScalableModel(param.Parameterized):
    """The settings, runs and reports of one Scalable session."""

    dataset = param.Selector(default=DEFAULTS["dataset"], objects=list(sd.DATASETS))
    m = param.Integer(default=DEFAULTS["m"], doc="Inducing points M (TYPED['m']).")
    minibatch = param.Integer(default=DEFAULTS["minibatch"], doc="Minibatch size of SEP and SVI.")
    epochs = param.Integer(default=DEFAULTS["epochs"], doc="Epochs of SEP and SVI.")
    workers = param.Selector(default=DEFAULTS["workers"], objects=list(range(sd.RANGES["workers"][1] + 1)),
                             doc="Dask workers of SEP and SVI (0: in the run's own process).")
    methods = param.ListSelector(default=list(sd.METHODS), objects=list(sd.METHODS))
    message = param.String(default="", doc="What to change, or why nothing started ('' if nothing to say).")
    description = param.String(default="", doc="The data of the runs, or what is starting ('' before a Start).")

    def __init__(self, **params):
        super().__init__(**params)
        self.jobs: dict[str, sd.TrainingJob] = {}
        self.runs: dict[str, dict] = {}  # method -> {"state", "last" entry, "elapsed", "text"}
        self.baseline: dict | None = None
        self.dashboards: dict[str, str] = {}  # method -> its Dask dashboard's address
        self._cleared = False
        self._sample_shown = False

    # -- settings ----------------------------------------------------------------------------
    def set_typed(self, name: str, value) -> bool:
        """A typed (or linked) value of the number ``name`` (:data:`TYPED`): a valid new one is taken
        and clears the message; a bad one is refused with a message naming the field, its range and
        the value kept. The value in use again changes nothing (the page shows it back in its box)."""
        rules = TYPED[name]
        try:
            number = rules.parse(value)
        except ValueError as exc:
            self.message = refusal(exc, rules.show(getattr(self, name)))
            return False
        if number != getattr(self, name):
            self.message = ""
            setattr(self, name, number)
        return True

    # -- runs --------------------------------------------------------------------------------
    def running(self) -> bool:
        return any(not job.ended for job in self.jobs.values())

    def _own_running_jobs(self) -> int:
        """This session's runs that the server counts as running (a new Start replaces them)."""
        return sum(1 for job in self.jobs.values() if job.alive and not job.stop_requested)

    def start(self) -> bool:
        """Start the chosen runs (stopping this session's current ones); bad input: a message only.
        A Start the server has no room for (MAX_RUNNING_JOBS) is refused before anything stops."""
        try:
            configs, skipped = sd.plan_runs(self.dataset, self.methods, self.m, self.minibatch, self.epochs,
                                            self.workers)
        except (ValueError, TypeError) as exc:
            self.message = f"Not started: {exc}. The plots keep the last run."
            return False
        if not configs:
            self.message = "Nothing to run: " + "; ".join(f"{sd.LABELS[m]} {why}" for m, why in skipped.items())
            return False
        others = sd.running_jobs() - self._own_running_jobs()
        if others + len(configs) > sd.MAX_RUNNING_JOBS:
            self.message = (f"Not started: this server already trains {others} models for other sessions (at most "
                            f"{sd.MAX_RUNNING_JOBS} at a time on its cores) and this Start needs {len(configs)}: "
                            "tick fewer methods, or try again in a minute. Your runs go on.")
            return False
        self.stop()
        jobs = {}
        try:
            for config in configs:
                jobs[config.method] = sd.TrainingJob(config).start()
        except (RuntimeError, OSError) as exc:  # (another session started in between)
            for job in jobs.values():
                job.stop(grace=0.0, wait=False)
            self.message = f"Not started: {exc}"
            return False
        self.jobs, self.baseline, self.dashboards = jobs, None, {}
        self.runs = {m: {"state": "starting (loading data)"} if m in jobs else {"state": "not run", "text": skipped[m]}
                     for m in sd.METHODS if m in jobs or m in skipped}
        self._cleared, self._sample_shown = True, False
        methods = ", ".join(sd.LABELS[m] for m in jobs)
        self.param.update(message="", description=f"Starting {methods} on {self.dataset} ...")
        return True

    def stop(self) -> bool:
        """Ask every run of this session to stop (each is terminated if it has not ended STOP_GRACE_S
        later, by a timer thread). True if the session has runs (their states changed or not)."""
        for method, job in self.jobs.items():
            if not job.ended and not job.stop_requested:
                job.stop()
                self.runs[method]["state"] = "stopping"
        return bool(self.jobs)

    def fail(self, text: str) -> None:
        """Stop at once (off the caller's thread) and let go of every run of this session; say ``text``."""
        for method, job in self.jobs.items():
            if not job.ended:
                job.stop(grace=0.0, wait=False)
                self.runs.get(method, {})["state"] = "stopped"
        self.jobs = {}  # nothing left to drain
        self.message = text + ". The runs were stopped; press Start to train again."

    def drain(self) -> News:
        """Every run's new messages (never waits), as what the page shows anew (:class:`News`)."""
        news = News(cleared=self._cleared)
        self._cleared = False
        for method, job in self.jobs.items():
            if job.ended:
                continue
            run = self.runs[method]
            run["elapsed"] = job.elapsed()
            points = []
            for message in job.poll():
                if message["kind"] == "entry":
                    run["last"] = message
                    points.append(message)
                    if _finite(message.get("z")):
                        news.inducing[method] = message["z"]
                else:
                    self._take(method, run, message, news)
            curve = _curve_points(points)
            if curve["t"]:
                news.curves[method] = curve
        news.status = {method: dict(run) for method, run in self.runs.items()}
        return news

    def _take(self, method: str, run: dict, message: dict, news: News) -> None:
        """A start, note or end message of ``method``'s run."""
        kind = message["kind"]
        if kind == "start":
            run["state"] = "running" if not self.jobs[method].stop_requested else "stopping"
            if not self._sample_shown:  # the first run to start shows its sample
                self._sample_shown = True
                news.sample = (message["sample"], message["labels"])
                share = 100 * float(sum(message["explained"]))
                self.description = f"{message['description']}; the PCA plane holds {share:.0f}% of the variance."
            if _finite(message.get("z")):
                news.inducing[method] = message["z"]
            if message.get("baseline") is not None:
                self.baseline = news.baseline = message["baseline"]
            if message.get("dashboard"):
                self.dashboards[method] = message["dashboard"]
        elif kind == "note":
            run["text"] = message["text"]
        elif kind == "end":
            run["state"] = message["status"]
            if message.get("text"):
                run["text"] = message["text"]

    def dashboard_lines(self) -> list[tuple[str, str | None, str]]:
        """(method's label, its Dask dashboard's address or None once closed, its state) per run with one."""
        states = {m: self.runs[m]["state"] for m in self.dashboards}
        return [(sd.LABELS[m], link if states[m] in ("running", "stopping") else None, states[m])
                for m, link in self.dashboards.items()]


def _curve_points(entries: list[dict]) -> dict:
    """The curve points of a run's new entries: those with finite validation scores, as columns."""
    scored = [e for e in entries if all(np.isfinite(e.get(key, np.nan)) for key in ("wall_time", "test_error", "ntll"))]
    return {column: [e[key] for e in scored] for column, key in CURVE_COLUMNS.items()}
