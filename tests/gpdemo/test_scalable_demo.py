"""The Scalable page's computation (qpviz/gpdemo/scalable_demo.py): datasets, the 2-D view, the
plan of a Start, and training runs in a child process (messages in order, stop, errors)."""
from __future__ import annotations

import os
import struct
import time
from dataclasses import replace

import numpy as np
import pytest

from qpviz.gpdemo import scalable_demo as sd
from training_jobs import no_leaked_children  # noqa: F401  (autouse: every started child stopped in teardown)

DIGITS = "digits odd vs even"


def run_until_end(job: sd.TrainingJob, timeout: float = 50.0, on_message=None) -> list[dict]:
    """Every message of ``job`` until its "end" (polled as the page does)."""
    messages = []
    end = time.monotonic() + timeout
    while not job.ended:
        assert time.monotonic() < end, f"no end message within {timeout} s; got {[m['kind'] for m in messages]}"
        for message in job.poll():
            messages.append(message)
            if on_message is not None:
                on_message(message)
        time.sleep(0.05)
    return messages


def gfitc_config(**changes) -> sd.RunConfig:
    configs, _ = sd.plan_runs(DIGITS, ["gfitc"], 10, 200, 1, 0)
    return replace(configs[0], **changes)


def test_digits_are_standardised_labels_pm1_and_held_out_apart():
    data = sd.load_dataset("digits", None, seed=0)
    assert data.X.shape == (sd.DIGITS_TRAINING_POINTS, 64) and data.X_valid.shape == (300, 64)
    assert set(np.unique(data.y)) == {-1.0, 1.0} and set(np.unique(data.y_valid)) == {-1.0, 1.0}
    assert np.allclose(data.X.mean(axis=0), 0.0, atol=1e-9)
    assert "N = 1,497" in data.description


def test_synthetic_subsample_size_and_validation_cap():
    data = sd.load_dataset("synthetic", 5000, seed=1)
    assert data.X.shape == (5000, sd.SYNTHETIC_DIM) and data.X_valid.shape[0] == sd.VALIDATION_SIZE
    assert 0.3 < np.mean(data.y > 0) < 0.7  # both classes
    with pytest.raises(ValueError, match="unknown dataset"):
        sd.load_dataset("mnist", 10, 0)


def test_view_is_the_principal_plane_and_projects_inducing_points_alike():
    rng = np.random.default_rng(0)
    # variance 25 along x3, 4 along x1, 0.01 elsewhere: the plane is (x3, x1), in that order
    X = rng.normal(size=(3000, 4)) * np.array([2.0, 0.1, 0.1, 5.0]) + np.array([1.0, 0.0, 0.0, -2.0])
    view = sd.DataView(X)
    assert np.allclose(np.abs(view.components[:, 0]), [0, 0, 0, 1], atol=0.02)
    assert np.allclose(np.abs(view.components[:, 1]), [1, 0, 0, 0], atol=0.02)
    assert view.components[3, 0] > 0 and view.components[0, 1] > 0  # the sign rule: largest loading positive
    assert view.explained[0] > 0.8
    Z = np.array([[1.0, 0.0, 0.0, -2.0], [3.0, 0.0, 0.0, 3.0]])
    assert np.allclose(view.project(Z), [[0, 0], [5.0, 2.0]], atol=0.2)
    sample, labels = view.sample(X, np.arange(3000.0), size=500)
    assert sample.shape == (500, 2) and labels.shape == (500,)
    assert np.allclose(sample, view.project(X[labels.astype(int)]))  # each point with its own label


def test_plan_skips_gfitc_on_large_data_and_refuses_bad_inputs():
    configs, skipped = sd.plan_runs("synthetic 100k", ["gfitc", "sep", "svi"], 50, 200, 2, 1)
    assert "gfitc" in skipped and "20,000" in skipped["gfitc"]
    assert all(config.method != "gfitc" for config in configs)
    configs, skipped = sd.plan_runs(DIGITS, ["gfitc"], 20, 100, 3, 2)
    assert [c.method for c in configs] == ["gfitc"] and configs[0].baseline and configs[0].workers == 0
    with pytest.raises(ValueError, match="M = 1600 inducing points for N = 1,497"):
        sd.plan_runs(DIGITS, ["gfitc"], 1600, 200, 1, 0)
    with pytest.raises(ValueError, match="minibatch size must be a whole number"):
        sd.plan_runs(DIGITS, ["gfitc"], 20, 0, 1, 0)
    with pytest.raises(ValueError, match="workers"):
        sd.plan_runs(DIGITS, ["gfitc"], 20, 10, 1, 3)
    with pytest.raises(ValueError, match="at least one method"):
        sd.plan_runs(DIGITS, [], 20, 10, 1, 0)


def test_flights_subsamples_load_with_a_validation_subsample():
    configs, skipped = sd.plan_runs("flights 10k", ["gfitc"], 20, 200, 1, 0)
    assert [c.method for c in configs] == ["gfitc"] and skipped == {}
    data = sd.load_dataset("flights", 10_000, 0)
    assert data.X.shape == (10_000, 8) and data.X_valid.shape == (sd.VALIDATION_SIZE, 8)


def test_gfitc_run_in_a_child_sends_start_entries_and_done_in_order():
    job = sd.TrainingJob(gfitc_config(max_opt_iter=4)).start()
    messages = run_until_end(job)
    kinds = [m["kind"] for m in messages if m["kind"] != "note"]
    assert kinds[0] == "start" and kinds[-1] == "end" and "entry" in kinds
    assert set(kinds[1:-1]) == {"entry"}
    start = messages[0]
    assert start["sample"].shape == (sd.DIGITS_TRAINING_POINTS, 2) and start["labels"].shape == (sd.DIGITS_TRAINING_POINTS,)
    assert start["z"].shape == (10, 2) and start["dashboard"] is None
    assert 0.0 <= start["baseline"]["test_error"] < 0.5 and start["baseline"]["ntll"] > 0
    entries = [m for m in messages if m["kind"] == "entry"]
    assert [e["step"] for e in entries] == list(range(1, len(entries) + 1))
    assert np.all(np.diff([e["wall_time"] for e in entries]) > 0)
    for entry in entries:
        assert all(np.isfinite(entry[k]) for k in ("wall_time", "objective", "test_error", "ntll"))
        assert entry["z"].shape == (10, 2) and np.all(np.isfinite(entry["z"]))
    assert entries[-1]["test_error"] < 0.3
    assert messages[-1]["status"] == "done"
    job.process.join(60)  # the child exits after its last message: slow on a loaded machine
    assert not job.alive and sd.running_jobs() == 0


def test_stop_ends_a_run_and_reports_stopped():
    # a long grace: a slow machine's step is not terminated (the child must stop by itself)
    job = sd.TrainingJob(gfitc_config(max_opt_iter=500), stop_grace=60.0).start()
    stopped_at = []

    def stop_at_first_entry(message):
        if message["kind"] == "entry" and not stopped_at:
            job.stop()
            stopped_at.append(time.monotonic())

    messages = run_until_end(job, on_message=stop_at_first_entry)
    assert messages[-1] == {"kind": "end", "status": "stopped", "text": ""}  # by the child itself, not terminated
    assert time.monotonic() - stopped_at[0] < 30
    assert len([m for m in messages if m["kind"] == "entry"]) < 20
    job.process.join(60)  # the child has said "end"; under load its exit can take seconds
    assert not job.alive


def test_a_run_that_does_not_stop_in_time_is_terminated():
    job = sd.TrainingJob(gfitc_config(max_opt_iter=500), stop_grace=0.0).start()
    job.stop()  # at once: the child is still importing, so it is terminated
    messages = run_until_end(job, timeout=10)
    assert messages[-1]["status"] == "stopped" and "terminated" in messages[-1]["text"]
    assert not job.alive and job.process.exitcode != 0


def test_errors_in_the_child_come_back_as_a_message():
    job = sd.TrainingJob(gfitc_config(m=5000)).start()  # past plan_runs' check: the child finds it
    messages = run_until_end(job)
    assert [m["kind"] for m in messages] == ["end"]
    assert messages[0]["status"] == "error" and "M = 5000 inducing points for N = 1,497" in messages[0]["text"]


class _Exited:
    """A child process that has exited (killed by SIGTERM)."""

    pid, exitcode = 2 ** 22 + 1, -15

    def is_alive(self) -> bool:
        return False

    def join(self, timeout=None) -> None:
        pass


def test_a_child_killed_in_the_middle_of_a_message_gives_an_end_at_once():
    job = sd.TrainingJob(gfitc_config())
    job._child_control.close()
    # what a child killed while writing leaves: a message's length header and the first bytes
    os.write(job._child_send.fileno(), struct.pack("!i", 1_000_000) + b"x" * 100)
    job._child_send.close()
    job.process = _Exited()
    started = time.monotonic()
    messages = job.poll()
    assert time.monotonic() - started < 1.0  # the reader got EOF; it never waits for the rest
    assert messages == [{"kind": "end", "status": "error",
                         "text": "the training process ended without a result (exit code -15)"}]
    assert job.poll() == []


def test_too_many_runs_are_refused(monkeypatch):
    monkeypatch.setattr(sd, "MAX_RUNNING_JOBS", 0)
    with pytest.raises(RuntimeError, match="already trains"):
        sd.TrainingJob(gfitc_config()).start()


def stochastic_config(method: str) -> sd.RunConfig:
    configs, _ = sd.plan_runs(DIGITS, [method], 8, 500, 1, 0)
    return configs[0]


@pytest.mark.parametrize("method", ["sep", "svi"])
def test_fit_options_of_stochastic_methods_are_qpviz_fit_options(method):
    from qpviz.inference.fit import OPTIONS

    config = stochastic_config(method)
    options = sd._fit_options(config, 10_000)
    assert options["method"] == method and options["minibatch"] == 500 and options["epochs"] == 1
    # 20 steps per epoch, RECORDS_PER_EPOCH records of them: one record per step
    assert options["record_every"] == max(1, 20 // sd.RECORDS_PER_EPOCH)
    assert sd._fit_options(replace(config, minibatch=10), 10_000)["record_every"] == 1000 // sd.RECORDS_PER_EPOCH
    assert set(options) - {"method"} <= set(OPTIONS[method])


def test_fit_options_of_gfitc_are_batch_ep_with_learnt_inducing_inputs():
    options = sd._fit_options(gfitc_config(max_opt_iter=7), sd.DIGITS_TRAINING_POINTS)
    assert options == {"method": "ep", "optimise_inducing": True, "max_opt_iter": 7}


@pytest.mark.parametrize("method", ["sep", "svi"])
def test_a_short_stochastic_run_in_a_child_ends_done_with_entries(method):
    job = sd.TrainingJob(stochastic_config(method)).start()
    messages = run_until_end(job, timeout=120)
    end = messages[-1]
    assert end["kind"] == "end" and end["status"] == "done", end
    entries = [m for m in messages if m["kind"] == "entry"]
    assert len(entries) >= 2
    assert all(np.isfinite(e["test_error"]) and e["z"].shape == (8, 2) for e in entries)


def test_stopped_runs_are_forgotten_once_dead_and_exit_ends_every_run():
    first = sd.TrainingJob(gfitc_config(max_opt_iter=500), stop_grace=60.0).start()
    second = sd.TrainingJob(gfitc_config(max_opt_iter=500), stop_grace=60.0).start()
    first.stop()  # asked to stop: its 60 s timer would outlive an exiting server
    assert first in sd._RUNNING and sd.running_jobs() == 1
    sd._stop_all()  # what atexit calls
    assert not first.alive and not second.alive
    assert first not in sd._RUNNING and first._receive.closed and first._control.closed
    assert sd.running_jobs() == 0


EXITING_SERVER = """
import sys
from dataclasses import replace
from qpviz.gpdemo import scalable_demo as sd
configs, _ = sd.plan_runs("digits odd vs even", ["gfitc"], 10, 200, 1, 0)
job = sd.TrainingJob(replace(configs[0], max_opt_iter=100_000), stop_grace=600.0).start()
print(job.process.pid, flush=True)  # and exit while it trains
"""


def test_an_exiting_server_ends_its_runs_at_once():
    import subprocess
    import sys

    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-c", EXITING_SERVER], capture_output=True, text=True, timeout=30,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    except subprocess.TimeoutExpired as exc:  # the exit waited for the child: end it, then fail
        os.killpg(int(exc.stdout.split()[0]), 9)
        raise
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 20  # not waiting for the child (multiprocessing joins non-daemon ones)
    pid = int(result.stdout.split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_job_is_forgotten_once_when_threads_race_to_forget_it():
    """A stop's daemon thread, a timer and the event loop's poll can all forget a job at once: its
    pipes are closed exactly once (two closes of one descriptor gave EBADF in CI, and could close
    another object's reused descriptor)."""
    import threading

    job = sd.TrainingJob(gfitc_config(max_opt_iter=4))  # not started: pipes only
    closes = []
    real_close = job._receive.close

    def slow_close():
        closes.append(threading.get_ident())
        time.sleep(0.05)  # wide enough for the other threads to arrive meanwhile
        real_close()

    job._receive.close = slow_close
    threads = [threading.Thread(target=job._forget) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(closes) == 1 and job._receive.closed and job._control.closed
