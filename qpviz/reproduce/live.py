"""Rerun one dataset of Table 1 in the background, for the dashboard: progress, cancel, result.

:class:`LiveRun` starts ``python -m qpviz.reproduce table1 --datasets X --rounds R --out DIR
--workers 1 --no-progress`` as a child process in its own session (its own process group), so
the caller (a Panel server's event loop) never waits for it and a cancel ends the process and
anything it started. Progress is read from the run's per-fold cache: finished folds are the
files ``DIR/folds/*.json`` (each appears by an atomic rename of a complete file), of
``rounds x folds`` (mining: ``rounds``). Every method returns at once; call :meth:`poll`
periodically.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS
from qpviz.reproduce.protocol import tasks_for
from qpviz.reproduce.report import read_csv

__all__ = ["LiveRun", "MAX_ROUNDS", "MAX_ACTIVE_RUNS", "STDERR_TAIL_LINES", "active_runs", "LIVE_OPTIONS_ENV",
           "live_options_from_env"]

#: environment variable with JSON of shorter live reruns, e.g. {"n_folds": 2, "max_opt_iter": 3} (the
#: browser tests set it before they serve the app; the CLI's hidden --folds / --max-opt-iter)
LIVE_OPTIONS_ENV = "QPVIZ_LIVE_OPTIONS"
_LIVE_OPTION_KEYS = ("n_folds", "max_opt_iter")


def live_options_from_env(environ=os.environ) -> dict:
    """The :data:`LIVE_OPTIONS_ENV` options (only n_folds and max_opt_iter, as ints; {} if unset or bad)."""
    try:
        given = json.loads(environ.get(LIVE_OPTIONS_ENV) or "{}")
        return {key: int(given[key]) for key in _LIVE_OPTION_KEYS if key in given}
    except (ValueError, TypeError, AttributeError):
        return {}

#: rounds a live rerun may ask for (a round of 10 folds takes ~5-50 s on one CPU)
MAX_ROUNDS = 3
#: live reruns one server process runs at a time (each takes one CPU); more are refused
MAX_ACTIVE_RUNS = 2
#: lines of the child's stderr shown when it fails
STDERR_TAIL_LINES = 12
#: seconds a cancelled process gets to end after SIGTERM before SIGKILL
KILL_GRACE_SECONDS = 0.5

#: the repository holding this package: the child imports this very qpviz, whatever its cwd
_REPO = Path(__file__).resolve().parents[2]

_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()
#: every started rerun, so that a server that shuts down ends them and deletes their folders
_STARTED: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for run in list(_STARTED):
        run.close()


def active_runs() -> int:
    """Live reruns of this process now running."""
    with _ACTIVE_LOCK:
        return len(_ACTIVE)


class LiveRun:
    """One background rerun of one dataset (see the module docstring).

    ``status``: "idle" (not started), "running", "done" (``rows`` holds the ``table1.csv`` rows),
    "failed" (``error`` says why, with the tail of the child's stderr) or "cancelled".
    ``n_folds`` and ``max_opt_iter`` are the CLI's ``--folds`` and ``--max-opt-iter`` (tests
    shorten a run with them).
    """

    def __init__(self, dataset: str, rounds: int = 1, *, preprocessing: str = "paper", n_folds: int = 10,
                 max_opt_iter: int = 1000, data_dir=None, python: str = sys.executable):
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
        if not 1 <= int(rounds) <= MAX_ROUNDS:
            raise ValueError(f"rounds must be between 1 and {MAX_ROUNDS}; got {rounds}")
        if preprocessing not in PREPROCESSINGS:
            raise ValueError(f"preprocessing must be one of {PREPROCESSINGS}; got {preprocessing!r}")
        self.dataset, self.rounds, self.preprocessing = dataset, int(rounds), preprocessing
        self.n_folds, self.max_opt_iter, self.data_dir, self.python = int(n_folds), int(max_opt_iter), data_dir, python
        self.total = len(tasks_for(dataset, preprocessing, self.rounds, self.n_folds, self.max_opt_iter))
        self.out_dir: Path | None = None
        self.process: subprocess.Popen | None = None
        self.status = "idle"
        self.rows: list[dict] | None = None
        self.error = ""
        self.started_at: float | None = None
        self.seconds: float | None = None
        self._killed_at: float | None = None

    def command(self) -> list[str]:
        """The child's command line (``--out`` is filled in by :meth:`start`)."""
        cmd = [self.python, "-m", "qpviz.reproduce", "table1", "--datasets", self.dataset,
               "--rounds", str(self.rounds), "--out", str(self.out_dir), "--workers", "1", "--no-progress",
               "--preprocessing", self.preprocessing, "--folds", str(self.n_folds),
               "--max-opt-iter", str(self.max_opt_iter)]
        if self.data_dir is not None:
            cmd += ["--data-dir", str(self.data_dir)]
        return cmd

    def start(self) -> "LiveRun":
        """Start the child in a fresh temporary folder; returns at once. Raises RuntimeError when
        :data:`MAX_ACTIVE_RUNS` reruns are already running in this process."""
        if self.status != "idle":
            raise RuntimeError(f"this rerun was already started (status {self.status})")
        with _ACTIVE_LOCK:
            if len(_ACTIVE) >= MAX_ACTIVE_RUNS:
                raise RuntimeError(f"{len(_ACTIVE)} live reruns are already running on this server; "
                                   "wait for one to finish (or cancel yours) and try again")
            _ACTIVE.add(self)
        try:
            self.out_dir = Path(tempfile.mkdtemp(prefix=f"qpviz-live-{self.dataset}-"))
            _STARTED.add(self)
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
            # files, not pipes: nobody reads a pipe while the child runs, and a full pipe would stall it
            with open(self.out_dir / "stdout.txt", "wb") as out, open(self.out_dir / "stderr.txt", "wb") as err:
                self.process = subprocess.Popen(self.command(), cwd=_REPO, env=env, stdin=subprocess.DEVNULL,
                                                stdout=out, stderr=err, start_new_session=True)
        except BaseException:
            self._finish("failed")
            raise
        self.started_at = time.monotonic()
        self.status = "running"
        return self

    def folds_done(self) -> int:
        """Finished folds: the cache files the child has written so far."""
        if self.out_dir is None:
            return 0
        return min(self.total, sum(1 for _ in (self.out_dir / "folds").glob("*.json")))

    def progress(self) -> tuple[int, int]:
        """(folds cached, folds in all)."""
        return self.folds_done(), self.total

    def poll(self) -> str:
        """Check the child without waiting; on its exit read the rows (or the error). The status."""
        if self.status == "cancelled" and self.process is not None and self.process.poll() is None:
            self._kill_group(signal.SIGKILL if self._grace_over() else signal.SIGTERM)
        if self.status != "running":
            return self.status
        code = self.process.poll()
        if code is None:
            return self.status
        self.seconds = time.monotonic() - self.started_at
        csv_path = self.out_dir / "table1.csv"
        if code == 0 and csv_path.is_file():
            try:
                self.rows = read_csv(csv_path)
            except (OSError, ValueError, KeyError) as err:
                self.error = f"the rerun finished but its table1.csv could not be read: {err}"
                self._finish("failed")
                return self.status
            self._finish("done")
        else:
            self.error = f"the rerun of {self.dataset} failed (exit code {code}):\n{self.stderr_tail()}"
            self._finish("failed")
        return self.status

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The last ``lines`` lines of the child's stderr ('' before the start)."""
        if self.out_dir is None:
            return ""
        try:
            text = (self.out_dir / "stderr.txt").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def cancel(self) -> None:
        """End the child and everything in its process group (SIGTERM, SIGKILL after a short grace)."""
        if self.status != "running":
            return
        self.status = "cancelled"
        self._killed_at = time.monotonic()
        self._kill_group(signal.SIGTERM)
        try:
            self.process.wait(KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGKILL)
        self._finish("cancelled")

    def _grace_over(self) -> bool:
        return self._killed_at is not None and time.monotonic() - self._killed_at > KILL_GRACE_SECONDS

    def _kill_group(self, sig) -> None:
        try:
            os.killpg(self.process.pid, sig)  # the child leads its own group (start_new_session)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.poll()  # reap it if it has ended

    def _finish(self, status: str) -> None:
        self.status = status
        with _ACTIVE_LOCK:
            _ACTIVE.discard(self)

    def close(self) -> None:
        """Cancel if running and delete the temporary folder (the rows stay in memory)."""
        self.cancel()
        if self.out_dir is not None:
            shutil.rmtree(self.out_dir, ignore_errors=True)
