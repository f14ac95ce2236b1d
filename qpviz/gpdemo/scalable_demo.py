"""SEP, SVI and GFITC training side by side, each in its own child process (issue 13, paper 003).

Pure computation for the "Scalable" page (app/scalable_page.py; its settings and this session's
runs are :mod:`qpviz.gpdemo.scalable_model`'s), usable without a browser. The
datasets and the 2-D view of their inputs are in :mod:`.scalable_datasets` (importable from here
too).

* A training run (:class:`TrainingJob`): one method in a child process ("spawn" context), so that
  training never holds the server's GIL. The child loads the data itself, fits the logistic
  baseline if asked, starts a Dask ``LocalCluster`` if ``workers > 0`` (SEP / SVI), calls
  :func:`qpviz.fit` and sends small messages through a one-way pipe:

      {"kind": "start", sample, labels, baseline, dashboard, n_train, ...}   first
      {"kind": "entry", step, epoch, wall_time, objective, test_error, ntll, z (M, 2)}
      {"kind": "note", text}                                                 a warning
      {"kind": "end", status: "done" | "stopped" | "error", text}             last

  ``stop()`` sends "stop" through a second pipe (training ends after its current step; the child
  also stops when that pipe closes, i.e. when the server has gone); a child still alive
  :data:`STOP_GRACE_S` seconds later is terminated with everything it started.
* :func:`plan_runs`: the checked configurations of one "Start" (GFITC only up to
  :data:`GFITC_MAX_N` training points; a ValueError says what to change).
"""
from __future__ import annotations

import atexit
import multiprocessing
# imported before _stop_all is registered below: atexit runs handlers last-registered-first, so
# _stop_all now runs before multiprocessing.util's handler, which joins non-daemon children
import multiprocessing.connection  # noqa: F401
import multiprocessing.util  # noqa: F401
import os
import signal
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

from qpviz import scalable_data
from qpviz.gpdemo.scalable_datasets import (DATASETS, DIGITS_TRAINING_POINTS, PCA_ROWS, SYNTHETIC_DIM, VALIDATION_SIZE,
                                            VIEW_SAMPLE, Dataset, DataView, load_dataset)

__all__ = ["DATASETS", "METHODS", "LABELS", "GFITC_MAX_N", "VALIDATION_SIZE", "VIEW_SAMPLE", "STOP_GRACE_S",
           "MAX_RUNNING_JOBS", "RANGES", "Dataset", "load_dataset", "DataView", "RunConfig", "plan_runs",
           "TrainingJob", "running_jobs", "DIGITS_TRAINING_POINTS", "SYNTHETIC_DIM"]

#: The methods, in the page's order, and how the page names them.
METHODS = ("sep", "svi", "gfitc")
LABELS = {"sep": "SEP", "svi": "SVI", "gfitc": "GFITC", "logistic": "logistic regression"}
#: GFITC is batch EP on all N points (O(N M^2) per evaluation): run only up to this N.
GFITC_MAX_N = 20_000
#: L-BFGS-B iterations of GFITC (its "epochs" are not minibatch passes).
GFITC_MAX_ITER = 60
#: Seconds a stopped child gets to finish its step before it is terminated.
STOP_GRACE_S = 5.0
#: Training processes one server runs at a time (2 cores): more are refused with a message.
MAX_RUNNING_JOBS = 3
#: Valid range of each numeric input (the page's widgets say so; a URL may ask for anything).
RANGES = {"m": (1, 2000), "minibatch": (1, 100_000), "epochs": (1, 100), "workers": (0, 2)}
#: How much lower than the server's the training processes' scheduling priority is (os.nice).
CHILD_NICENESS = 10
#: Records per epoch a stochastic run aims at (record_every = steps per epoch / this).
RECORDS_PER_EPOCH = 20


@dataclass(frozen=True)
class RunConfig:
    """One method's training run (what the child needs; small, so it pickles cheaply)."""

    dataset: str
    method: str
    m: int
    minibatch: int
    epochs: int
    workers: int = 0
    seed: int = 0
    baseline: bool = False
    blas_threads: int = 1
    max_opt_iter: int = GFITC_MAX_ITER


def _training_points(dataset: str) -> int | None:
    """N of a dataset choice without loading it (None: all the flights' training rows, ~264,000)."""
    name, n = DATASETS[dataset]
    return DIGITS_TRAINING_POINTS if name == "digits" else n


def plan_runs(dataset: str, methods, m, minibatch, epochs, workers, seed: int = 0) -> tuple[list[RunConfig], dict]:
    """The runs of one Start and, per method not run, why ({method: reason}). ValueError saying
    what to change for a bad input."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
    for value, name, (low, high) in ((m, "M (inducing points)", RANGES["m"]),
                                     (minibatch, "minibatch size", RANGES["minibatch"]),
                                     (epochs, "epochs", RANGES["epochs"]), (workers, "workers", RANGES["workers"])):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low:,} to {high:,}; got {value!r}")
    methods = [method for method in METHODS if method in methods]
    if not methods:
        raise ValueError("tick at least one method (SEP, SVI or GFITC)")
    n = _training_points(dataset)
    if n is not None and m > n:
        raise ValueError(f"M = {m} inducing points for N = {n:,} training points: lower M")
    skipped = {}
    runnable = []
    for method in methods:
        if method == "gfitc" and (n is None or n > GFITC_MAX_N):
            skipped[method] = f"not run: GFITC is batch EP over all N points, shown up to N = {GFITC_MAX_N:,}"
        else:
            runnable.append(method)
    threads = max(1, (os.cpu_count() or 1) // max(len(runnable), 1))
    configs = [RunConfig(dataset, method, int(m), int(minibatch), int(epochs), int(workers) if method != "gfitc" else 0,
                         int(seed), baseline=index == 0, blas_threads=threads, max_opt_iter=GFITC_MAX_ITER)
               for index, method in enumerate(runnable)]
    return configs, skipped


# -- the child process -------------------------------------------------------------------------

def _kernel(dim: int):
    """RBF ARD started at variance 1 and length-scales sqrt(D): on standardised inputs a typical
    squared distance is 2D, so k starts near exp(-1) between typical points."""
    from qpviz.kernels import RBF  # noqa: PLC0415

    return RBF(variance=1.0, lengthscale=np.full(dim, np.sqrt(dim)))


def _fit_options(config: RunConfig, n: int) -> dict:
    """qpviz.fit's method and options of ``config``'s method."""
    if config.method == "gfitc":
        return {"method": "ep", "optimise_inducing": True, "max_opt_iter": config.max_opt_iter}
    options = {"method": config.method, "minibatch": config.minibatch, "epochs": config.epochs, "seed": config.seed}
    from qpviz.inference.fit import OPTIONS  # noqa: PLC0415 - the child imports qpviz only when it runs

    if "record_every" in OPTIONS.get(config.method, ()):
        steps_per_epoch = -(-n // config.minibatch)
        options["record_every"] = max(1, steps_per_epoch // RECORDS_PER_EPOCH)
    return options


class _Sender:
    """The child's end of the message pipe: one message at a time (training and Dask threads may
    both warn); a parent that has gone sets ``stop``."""

    def __init__(self, connection, stop: threading.Event):
        self.connection, self.stop = connection, stop
        self._lock = threading.Lock()

    def put(self, message: dict) -> None:
        with self._lock:
            try:
                self.connection.send(message)
            except OSError:  # (BrokenPipeError) nobody reads any more
                self.stop.set()


def _listen_for_stop(control, stop: threading.Event) -> None:
    """Set ``stop`` when the parent sends "stop" or closes its end (the server has gone)."""
    def listen():
        try:
            control.recv()
        except (EOFError, OSError):
            pass
        stop.set()

    threading.Thread(target=listen, daemon=True).start()


def _run_child(config: RunConfig, connection, control) -> None:
    """The child's whole life (module docstring): every outcome ends with one "end" message."""
    os.setpgrp()  # its own process group: terminating the run also ends the Dask workers it started
    # below the server's priority (and its Dask workers inherit it): sessions of the dashboard stay
    # responsive while runs use the cores
    os.nice(CHILD_NICENESS)
    stop = threading.Event()
    _listen_for_stop(control, stop)
    messages = _Sender(connection, stop)
    cluster = client = None
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        import qpviz  # noqa: PLC0415

        threadpool_limits(config.blas_threads)  # the runs share the cores
        name, n = DATASETS[config.dataset]
        data = load_dataset(name, n, config.seed)
        if config.m > data.X.shape[0]:
            raise ValueError(f"M = {config.m} inducing points for N = {data.X.shape[0]:,} training points: lower M")
        view = DataView(data.X, config.seed)
        sample, labels = view.sample(data.X, data.y, seed=config.seed)
        from qpviz.inference.inducing import kmeans_inducing  # noqa: PLC0415

        # every method starts from the same inducing inputs: K-means of the same random rows (the
        # flights' rows are in date order, so the first rows would all be January's)
        rows = data.X if data.X.shape[0] <= PCA_ROWS else data.X[np.sort(
            np.random.default_rng(config.seed).choice(data.X.shape[0], PCA_ROWS, replace=False))]
        Z = kmeans_inducing(rows, min(config.m, rows.shape[0]), config.seed)
        baseline = _baseline(data) if config.baseline else None
        dashboard = None
        if config.workers > 0:
            from dask.distributed import Client, LocalCluster  # noqa: PLC0415

            cluster = LocalCluster(n_workers=config.workers, threads_per_worker=1, dashboard_address="127.0.0.1:0")
            client = Client(cluster)
            dashboard = cluster.dashboard_link
        messages.put({"kind": "start", "method": config.method, "sample": sample, "labels": labels,
                      "z": view.project(Z), "baseline": baseline, "dashboard": dashboard,
                      "n_train": data.X.shape[0], "n_valid": data.y_valid.size, "description": data.description,
                      "explained": view.explained})

        def callback(entry):
            numbers = {k: float(entry[k]) for k in ("wall_time", "objective", "test_error", "ntll") if k in entry}
            z = view.project(entry["inducing"]) if entry.get("inducing") is not None else None
            messages.put({"kind": "entry", "step": int(entry["step"]), "epoch": int(entry["epoch"]), **numbers, "z": z})

        def note(message, category, filename, lineno, file=None, line=None):
            messages.put({"kind": "note", "text": f"{category.__name__}: {message}"})

        options = _fit_options(config, data.X.shape[0])
        if client is not None:
            options["client"] = client
        from numba.core.errors import NumbaWarning  # noqa: PLC0415

        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.simplefilter("ignore", NumbaWarning)  # the compiler's notes are not the reader's
            warnings.showwarning = note
            qpviz.fit(data.X, data.y, "probit", _kernel(data.X.shape[1]), optimise=True, inducing=Z,
                      validation=(data.X_valid, data.y_valid), callback=callback, stop=stop, progress=False, **options)
        messages.put({"kind": "end", "status": "stopped" if stop.is_set() else "done", "text": ""})
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the page as a message
        messages.put({"kind": "end", "status": "error", "text": f"{type(exc).__name__}: {exc}"})
    finally:
        for resource in (client, cluster):
            if resource is not None:
                try:
                    resource.close()
                except Exception:  # noqa: BLE001 - the run's outcome is already sent
                    pass
        connection.close()


def _baseline(data: Dataset) -> dict:
    """L2-regularised logistic regression on the training inputs, scored on the validation points."""
    return scalable_data.logistic_baseline(data.X, data.y, data.X_valid, data.y_valid)


# -- the parent side ---------------------------------------------------------------------------

_RUNNING: set = set()
_RUNNING_LOCK = threading.Lock()


def running_jobs() -> int:
    """Training processes of this server now running and not asked to stop (the others are
    forgotten: a session that started again without polling its old runs to their end)."""
    with _RUNNING_LOCK:
        dead = [job for job in _RUNNING if not job.alive]
        _RUNNING.difference_update(dead)
    for job in dead:
        if job.stop_requested:
            job._forget()  # pipes closed, process reaped (an unstopped run keeps its last messages for poll)
    with _RUNNING_LOCK:
        return sum(1 for job in _RUNNING if not job.stop_requested)


@atexit.register
def _stop_all() -> None:
    """A server shutting down ends its runs (before multiprocessing waits for its children): every
    job still alive gets "stop" and is terminated now, also those already asked to stop (their
    grace timer is a daemon thread, which dies at exit)."""
    with _RUNNING_LOCK:
        jobs = list(_RUNNING)
    for job in jobs:
        if job.alive:
            job.stop(grace=0.0)  # (terminates at once, also a job already asked to stop)


class TrainingJob:
    """One method's training run in a child process (module docstring)."""

    def __init__(self, config: RunConfig, stop_grace: float = STOP_GRACE_S):
        self.config = config
        self.stop_grace = stop_grace
        self._context = multiprocessing.get_context("spawn")
        # two one-way pipes, each end held by one process only: a child that dies mid-message
        # gives the reader EOF at once, never a read that waits for the rest (a Queue's pipe keeps
        # a writer open in the parent too, so that read would hang the server's event loop)
        self._receive, self._child_send = self._context.Pipe(duplex=False)
        self._child_control, self._control = self._context.Pipe(duplex=False)
        self._eof = False
        # _forget runs from several threads (a stop's daemon thread, a timer, the event loop's poll):
        # two unguarded closes of one pipe close its descriptor twice (EBADF, or another object's fd)
        self._forget_lock = threading.Lock()
        self._forgotten = False
        self.process = None
        self.started_at = None
        self.stop_requested = False
        self.terminated = False
        self.ended = False  # the "end" message has been handed out

    def start(self) -> "TrainingJob":
        if running_jobs() + 1 > MAX_RUNNING_JOBS:
            raise RuntimeError(f"this server already trains {running_jobs()} models (at most {MAX_RUNNING_JOBS} at a "
                               "time on its cores): stop a run or try again in a minute")
        self.process = self._context.Process(target=_run_child, args=(self.config, self._child_send,
                                                                      self._child_control),
                                             name=f"qpviz-{self.config.method}", daemon=False)  # Dask starts children
        self.process.start()
        self._child_send.close()  # the child's ends now live in the child only
        self._child_control.close()
        self.started_at = time.monotonic()
        with _RUNNING_LOCK:
            _RUNNING.add(self)
        return self

    @property
    def alive(self) -> bool:
        """Whether the child still runs. Its sentinel (a pipe the child holds until it exits) is asked as
        well as ``is_alive``: a stop's thread and the event loop may both reap the child, and the
        thread whose ``waitpid`` comes second sees no exit code for a moment."""
        if self.process is None or self.process.exitcode is not None:
            return False
        return not multiprocessing.connection.wait([self.process.sentinel], 0)

    def elapsed(self) -> float:
        return 0.0 if self.started_at is None else time.monotonic() - self.started_at

    def poll(self) -> list[dict]:
        """Every message that has arrived (never waits); an "end" message last, made up here if the
        child died without sending one."""
        out = []
        if self.ended:
            return out
        if self.process is None:
            return out
        was_alive = self.alive
        out += self._drain()
        if not self.ended and (self._eof or not was_alive):
            out += self._drain()  # what the child sent just before it exited
            if not self.ended:
                out.append(self._lost_end())
        if self.ended:
            self._forget()
        return out

    def _drain(self) -> list[dict]:
        out = []
        while not self.ended and not self._eof:
            try:
                if not self._receive.poll():
                    break
                message = self._receive.recv()  # a whole message is there (or EOF): no waiting
            except (EOFError, OSError):
                self._eof = True  # the child has exited (or was terminated)
                break
            out.append(message)
            self.ended = message["kind"] == "end"
        return out

    def _lost_end(self) -> dict:
        self.ended = True
        if self.terminated:
            return {"kind": "end", "status": "stopped", "text": f"terminated: no answer {self.stop_grace:g} s after Stop"}
        if self.stop_requested:  # it ended by itself, and was forgotten before its "end" was read
            return {"kind": "end", "status": "stopped", "text": ""}
        code = self.process.exitcode
        return {"kind": "end", "status": "error", "text": f"the training process ended without a result (exit code {code})"}

    def stop(self, grace: float | None = None, wait: bool = True) -> None:
        """Ask the run to stop after its current step; terminate it if it still runs ``grace``
        seconds later (default ``stop_grace``). ``wait=False``: an immediate termination (grace 0)
        happens in a daemon thread, so that a server's event loop never waits for it."""
        if self.process is None:
            return
        immediate = grace is not None and grace <= 0
        if self.stop_requested and not immediate:
            return
        if not self.stop_requested:
            self.stop_requested = True
            try:
                self._control.send("stop")
            except OSError:  # the child has already gone (or the job was forgotten)
                pass
        grace = self.stop_grace if grace is None else grace
        if grace <= 0 and wait:
            self._terminate()  # (also a second, immediate stop: it does not wait for the first one's timer)
        elif grace <= 0:
            threading.Thread(target=self._terminate, daemon=True).start()
        else:
            timer = threading.Timer(grace, self._terminate)
            timer.daemon = True
            timer.start()

    def _terminate(self) -> None:
        """End the child's process group (the child and its Dask workers): SIGTERM, SIGKILL after 1 s;
        then forget the job if it was stopped (its pipes closed, out of the running set)."""
        if not self.alive:
            self.process.join(0.1)
            if self.stop_requested:
                self._forget()
            return
        self.terminated = True
        for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 1.0)):
            try:
                os.killpg(self.process.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(self.process.pid, sig)  # before the child made its own group
                except (ProcessLookupError, PermissionError):
                    pass
            self.process.join(wait)
            if not self.alive:
                break
        if self.stop_requested and not self.alive:
            self._forget()

    def _forget(self) -> None:
        """Out of the running set, pipes closed, process reaped (safe to call twice, from any thread)."""
        with self._forget_lock:
            if not self._forgotten:
                self._forgotten = True
                with _RUNNING_LOCK:
                    _RUNNING.discard(self)
                self._receive.close()
                self._control.close()
        if self.process is not None:
            self.process.join(0)  # reap it if it has exited, never wait (poll runs on the server's event loop)

