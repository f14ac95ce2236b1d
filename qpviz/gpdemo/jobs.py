"""Long jobs of the GP demos (MCMC references, evidence optimisation), without a web page: one
thread pool for every session, one run per job key, and an LRU cache of results.

A job is a dict: ``kind`` (shown to the reader), ``key`` (equal keys are equal jobs), ``future``,
``cancel`` (a ``threading.Event`` the computation checks), ``progress`` ((done, total), written by
the computation's thread), ``steps`` (streamed results, e.g. optimisation iterates), ``started``
and ``users`` (the sessions waiting for it). :func:`start_or_join` starts one or joins a running
one of the same key (:data:`RUNNING`); :func:`release` leaves it and cancels it when nobody else
waits; :func:`outcome` reads its state. The computation runs in :data:`EXECUTOR` (numba and BLAS
release the GIL), so a server's event loop keeps answering (the dashboard's polling of a job:
app/long_jobs.py).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

__all__ = ["EXECUTOR", "RUNNING", "LRUCache", "start_or_join", "release", "cancel", "outcome", "wait_until", "elapsed",
           "chain_status"]

#: Long jobs of every session and page share this pool (2 cores on the classroom server).
EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="qpviz-job")
#: Long jobs running now, by key: sessions asking for the same job share it (``users`` counts them).
RUNNING: dict = {}


class LRUCache(OrderedDict):
    """A dict that keeps the ``size`` most recently used entries (shared by sessions: equal keys
    are equal results). :meth:`get_recent` and :meth:`put` hold a lock: the job pool's threads
    store results while the sessions read them."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.RLock()

    def get_recent(self, key):
        """The value of ``key`` (now the most recent), or None."""
        with self._lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
            return None

    def put(self, key, value) -> None:
        with self._lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)


def _forget(job: dict) -> None:
    """Drop a finished or cancelled job from :data:`RUNNING` (a newer run of its key stays)."""
    if RUNNING.get(job["key"]) is job:
        RUNNING.pop(job["key"], None)


def start_or_join(kind: str, key, start, progress=(0, 1)) -> dict:
    """The running job of ``key`` with one more user, or a new one: ``start(job)`` submits the
    computation to :data:`EXECUTOR` and returns its future (it may write ``job["progress"]`` and
    append to ``job["steps"]`` from its thread)."""
    job = RUNNING.get(key)
    if job is not None and not job["future"].done():
        job["users"] += 1  # another session runs the same job: share it
        return job
    job = {"kind": kind, "key": key, "cancel": threading.Event(), "progress": progress, "steps": [],
           "started": time.monotonic(), "users": 1}
    job["future"] = start(job)
    RUNNING[key] = job
    job["future"].add_done_callback(lambda future, job=job: _forget(job))
    return job


def cancel(job: dict) -> None:
    """Stop ``job`` whoever waits for it: a queued one never starts, a running one stops at its
    next check of ``job["cancel"]`` (a chain or an EP run finishes first)."""
    job["cancel"].set()
    job["future"].cancel()
    _forget(job)


def release(job: dict) -> None:
    """One session stops waiting for ``job``; the last one cancels it (:func:`cancel`)."""
    job["users"] -= 1
    if job["users"] <= 0:
        cancel(job)


def outcome(job: dict, cancelled=()) -> tuple[str, object]:
    """("running", None), ("done", result), ("cancelled", None) or ("failed", exception);
    ``cancelled`` are the exception types a cancelled computation raises."""
    future = job["future"]
    if not future.done():
        return "running", None
    if future.cancelled():
        return "cancelled", None
    try:
        return "done", future.result()
    except cancelled:
        return "cancelled", None
    except Exception as exc:  # noqa: BLE001 - shown on the page, never raised into the browser
        return "failed", exc


def wait_until(finished, poll, timeout: float = 120.0) -> None:
    """Call ``poll()`` every 20 ms until ``finished()`` or ``timeout`` seconds (tests, scripts)."""
    end = time.monotonic() + timeout
    while not finished() and time.monotonic() < end:
        time.sleep(0.02)
        poll()


def elapsed(job: dict) -> float:
    """Seconds since ``job`` started."""
    return time.monotonic() - job["started"]


def chain_status(job: dict) -> str:
    """'MCMC reference: chain 2/4 done (3 s)': the progress of a job that runs chains."""
    done, total = job["progress"]
    return f"{job['kind']}: chain {done}/{total} done ({elapsed(job):.0f} s)"
