"""A page's methods fitted at once, one thread each: EP and QP side by side on two cores.

A GP page refits every shown method inline on each slider step. The fits spend their time in
numba kernels compiled with ``nogil`` (the site sweeps) and in LAPACK, both of which release the
GIL, so two fits on two threads take little more than the longer one. The page's user waits for
the server meanwhile, so the browser leaves the second core free.

Warnings a fit raises are recorded per method on request (:func:`fit_each_recording`): Python's warning
settings are the process's, not a thread's, so one ``catch_warnings`` around all the fits routes
each warning by the thread that raised it, and passes on those of other threads unchanged.

Only the pages' inline refits use this (a server's callbacks run one at a time, so the pool's
two threads are never shared by two of them); the long jobs keep their own pool
(:mod:`qpviz.gpdemo.jobs`).
"""
from __future__ import annotations

import functools
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Iterable, TypeVar

from numba.core.errors import NumbaWarning

__all__ = ["fit_each", "fit_each_recording", "WORKERS", "MIN_POINTS"]

T = TypeVar("T")

#: Threads of the pool: a page shows EP and QP (and up to two more); more threads than cores gain nothing.
WORKERS = 2

#: Fewest data points for which the fits run at once. Below it a fit is mostly Python, and two
#: threads then wait on each other for the GIL (handed over every 5 ms): measured on the GP 1-D page
#: (EP + QP, sharp step), refit and draw in-process, one thread against two: N = 60 5.8 against 10.5 ms,
#: N = 120 9.7 against 9.7 ms, N = 200 27.3 against 18.6 ms (step likelihood, eps = 0: 52 against 31 ms).
MIN_POINTS = 150

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(WORKERS, thread_name_prefix="qpviz-method-fit")
        return _POOL


def fit_each(fit: Callable[[str], T], methods: Iterable[str], n_points: int) -> dict[str, T]:
    """{method: fit(method)} for each of ``methods`` on ``n_points`` data points, at once on
    :data:`WORKERS` threads when there are two or more methods, at least :data:`MIN_POINTS` points and
    two or more cores, else one after the other in this thread. Every fit has ended when this returns
    or raises; an error of a fit is raised here (the first method's first)."""
    methods = list(methods)
    if len(methods) < 2 or n_points < MIN_POINTS or (os.cpu_count() or 1) < 2:
        return {method: fit(method) for method in methods}
    futures = {method: _pool().submit(fit, method) for method in methods}
    wait(futures.values())
    return {method: future.result() for method, future in futures.items()}


_RECORDING = threading.local()  # .log: the list the thread's warnings go to (None: not recording)


def _route(show_elsewhere, message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` while :func:`fit_each_recording` runs: into the raising thread's log,
    or, for a thread that records nothing, on as before."""
    log = getattr(_RECORDING, "log", None)
    if log is None:
        show_elsewhere(message, category, filename, lineno, file, line)
    else:
        log.append(warnings.WarningMessage(message, category, filename, lineno, file, line))


def fit_each_recording(fit: Callable[[str], T], methods: Iterable[str],
                       n_points: int) -> dict[str, tuple[T, list[warnings.WarningMessage]]]:
    """:func:`fit_each`, each result paired with the warnings its fit raised (every one, repeats
    included; numba's notes on its own features left out)."""
    def recorded(method):
        _RECORDING.log = []
        try:
            return fit(method), _RECORDING.log
        finally:
            _RECORDING.log = None

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", NumbaWarning)  # numba's notes on its own features, not the fit's
        warnings.showwarning = functools.partial(_route, warnings.showwarning)
        return fit_each(recorded, methods, n_points)
