"""The Scalable page's model without Panel (qpviz/gpdemo/scalable_model.py): typed settings refused
with a message and the last good ones kept, real training runs started, drained and stopped, a Start
the server has no room for refused before anything stops."""
from __future__ import annotations

import time

import numpy as np
import pytest

from qpviz.gpdemo import scalable_demo as sd
from qpviz.gpdemo.scalable_model import CURVE_COLUMNS, DEFAULTS, TYPED, ScalableModel
from training_jobs import no_leaked_children  # noqa: F401  (autouse: every started child stopped in teardown)


def drain_until(model: ScalableModel, done, timeout: float = 50.0) -> list:
    """Every drain's news until ``done(model)`` (as the page's poller drains)."""
    news = []
    end = time.monotonic() + timeout
    while True:
        news.append(model.drain())
        if done(model):
            return news
        assert time.monotonic() < end, news[-1].status
        time.sleep(0.1)


def gfitc_model(**settings) -> ScalableModel:
    model = ScalableModel(methods=["gfitc"], **settings)
    assert model.set_typed("m", "8")
    return model


@pytest.mark.parametrize("name, typed", [("m", "0"), ("m", "abc"), ("m", "1.5"), ("minibatch", "-3"),
                                          ("minibatch", "1e308"), ("epochs", "nan"), ("epochs", "101")])
def test_a_bad_typed_number_is_refused_with_its_range_and_the_last_good_value_kept(name, typed):
    """Issue 21: the number boxes dropped letters silently; a bad value was named only at Start."""
    model, field, kept = ScalableModel(), TYPED[name], DEFAULTS[name]
    assert not model.set_typed(name, typed)
    assert model.message == f"{field.name}: {typed!r} was not applied; type {field.accepted}; kept {kept}"
    assert getattr(model, name) == kept
    assert model.set_typed(name, str(kept))  # the value in use (the page shows it back): nothing changes
    assert getattr(model, name) == kept and "was not applied" in model.message
    assert model.set_typed(name, " 3 ") and getattr(model, name) == 3 and model.message == ""


def test_a_bad_setting_starts_nothing_and_says_what_to_change():
    model = ScalableModel(methods=[])
    assert not model.start()
    assert model.message == "Not started: tick at least one method (SEP, SVI or GFITC). The plots keep the last run."
    assert model.jobs == {} and model.runs == {} and not model.running()
    model = ScalableModel(dataset="synthetic 1M", methods=["gfitc"])
    assert not model.start()
    assert model.message.startswith("Nothing to run: GFITC not run") and "20,000" in model.message
    assert model.jobs == {}


def test_a_short_run_is_drained_until_done_with_its_curve_points(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 3)
    model = gfitc_model(message="an old message")
    assert model.start() and model.message == "" and list(model.jobs) == ["gfitc"] and model.running()
    assert model.description == "Starting GFITC on digits odd vs even ..."
    news = drain_until(model, lambda m: not m.running())
    assert news[0].cleared and not any(n.cleared for n in news[1:])  # the last run's plots go once
    points = {column: [x for n in news for x in n.curves.get("gfitc", {}).get(column, [])] for column in CURVE_COLUMNS}
    assert len(points["t"]) >= 3 and all(len(v) == len(points["t"]) for v in points.values())
    assert np.all(np.isfinite(points["test_error"])) and np.all(np.isfinite(points["ntll"]))
    assert np.all(np.diff(points["t"]) > 0) and 0 <= min(points["test_error"]) <= 0.5
    samples = [n.sample for n in news if n.sample is not None]
    assert len(samples) == 1 and samples[0][0].shape[1] == 2 and len(samples[0][1]) == len(samples[0][0])
    assert [n.baseline for n in news if n.baseline is not None] == [model.baseline] and model.baseline is not None
    last_z = [n.inducing["gfitc"] for n in news if "gfitc" in n.inducing][-1]
    assert last_z.shape == (8, 2) and np.all(np.isfinite(last_z))
    row = news[-1].status["gfitc"]
    assert row["state"] == "done" and row["last"]["step"] >= 3 and row["elapsed"] > 0
    assert "N = 1,497" in model.description and "the PCA plane holds" in model.description
    assert model.drain().curves == {}  # nothing new after the end


def test_stop_ends_a_run(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 500)
    model = gfitc_model()
    assert not model.stop()  # no runs yet: nothing to show
    assert model.start()
    drain_until(model, lambda m: m.runs["gfitc"]["state"] == "running")
    job = model.jobs["gfitc"]
    assert model.stop() and job.stop_requested and model.runs["gfitc"]["state"] == "stopping"
    news = drain_until(model, lambda m: not m.running(), timeout=job.stop_grace + 40)
    assert news[-1].status["gfitc"]["state"] == "stopped"
    job.process.join(5)
    assert not job.alive


def test_a_start_the_server_has_no_room_for_is_refused_before_the_sessions_runs_stop(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 500)
    monkeypatch.setattr(sd, "MAX_RUNNING_JOBS", 1)
    model, other = gfitc_model(), gfitc_model()
    assert model.start()
    first = model.jobs["gfitc"]
    assert not other.start()  # another session: the server trains one model already
    assert other.message == ("Not started: this server already trains 1 models for other sessions (at most 1 at a time "
                             "on its cores) and this Start needs 1: tick fewer methods, or try again in a minute. "
                             "Your runs go on.")
    assert other.jobs == {}
    model.methods = ["sep", "gfitc"]  # 2 runs: more than the server's room, even in place of this session's own
    assert not model.start() and "this Start needs 2" in model.message
    assert model.jobs["gfitc"] is first and not first.stop_requested and first.alive
    model.methods = ["gfitc"]  # replaces this session's own run: room enough
    assert model.start() and model.message == ""
    assert model.jobs["gfitc"] is not first and first.stop_requested


def test_fail_stops_every_run_at_once_and_says_so(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 500)
    model = gfitc_model()
    assert model.start()
    job = model.jobs["gfitc"]
    model.fail("unexpected error: KeyError: 'x'")
    assert model.message == "unexpected error: KeyError: 'x'. The runs were stopped; press Start to train again."
    assert model.jobs == {} and not model.running() and model.runs["gfitc"]["state"] == "stopped"
    assert job.stop_requested
    job.process.join(10)  # terminated at once (grace 0), in a thread
    assert not job.alive


class ReportingJob:
    """A run whose messages are given (the drain's bookkeeping without a child process)."""

    def __init__(self, messages):
        self.messages, self.ended, self.stop_requested = list(messages), False, False

    def elapsed(self) -> float:
        return 1.5

    def poll(self) -> list[dict]:
        out, self.messages = self.messages, []
        self.ended = any(m["kind"] == "end" for m in out)
        return out


def test_no_nan_point_or_inducing_input_reaches_the_news():
    entry = {"kind": "entry", "step": 1, "epoch": 0, "wall_time": 0.5, "objective": 1.0, "test_error": 0.2,
             "ntll": 0.4, "z": np.zeros((2, 2))}
    start = {"kind": "start", "sample": np.ones((3, 2)), "labels": np.array([1.0, -1.0, 1.0]), "z": np.ones((2, 2)),
             "explained": [0.3, 0.2], "description": "digits: N = 3", "baseline": None,
             "dashboard": "http://127.0.0.1:8787/status"}
    model = ScalableModel()
    model.runs = {"sep": {"state": "starting (loading data)"}}
    model.jobs = {"sep": ReportingJob([start, entry, {**entry, "step": 2, "ntll": np.nan},
                                       {**entry, "step": 3, "wall_time": np.inf, "z": np.full((2, 2), np.nan)},
                                       {"kind": "note", "text": "RuntimeWarning: overflow"},
                                       {**entry, "step": 4, "z": None}])}
    news = model.drain()
    assert news.curves == {"sep": {"t": [0.5, 0.5], "test_error": [0.2, 0.2], "ntll": [0.4, 0.4], "step": [1, 4]}}
    assert np.array_equal(news.inducing["sep"], np.zeros((2, 2)))  # the last finite one
    assert news.status["sep"]["text"] == "RuntimeWarning: overflow" and news.status["sep"]["last"]["step"] == 4
    assert news.status["sep"]["elapsed"] == 1.5 and news.status["sep"]["state"] == "running" and model.running()
    assert news.sample[0].shape == (3, 2) and news.baseline is None
    assert model.description == "digits: N = 3; the PCA plane holds 50% of the variance."
    assert model.dashboard_lines() == [("SEP", "http://127.0.0.1:8787/status", "running")]
    model.jobs["sep"].messages = [{"kind": "end", "status": "error", "text": "ValueError: no"}]
    news = model.drain()
    assert news.status["sep"]["state"] == "error" and news.status["sep"]["text"] == "ValueError: no"
    assert model.dashboard_lines() == [("SEP", None, "error")]  # closed with its run
    assert not model.running()
