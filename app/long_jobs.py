"""Long jobs of the GP pages (MCMC references, evidence optimisation): the jobs themselves (one
thread pool for every session, one run per job key, an LRU cache of results) are
:mod:`qpviz.gpdemo.jobs`, re-exported here; this module adds the page side's polling.

A page polls a running job with :class:`JobPoller` (a periodic callback of its session).
"""
from __future__ import annotations

import panel as pn

from qpviz.gpdemo.jobs import (EXECUTOR, RUNNING, LRUCache, chain_status, elapsed, outcome, release, start_or_join,
                               wait_until)

__all__ = ["EXECUTOR", "RUNNING", "LRUCache", "GuardedModelCalls", "start_or_join", "release", "outcome", "wait_until", "elapsed", "chain_status",
           "JobPoller", "cancel_when_session_ends"]


class JobPoller:
    """Calls ``tick()`` every ``period_ms`` while ``running()`` is true: a periodic callback of
    the session, started by :meth:`ensure` and stopped by itself when the job is over."""

    def __init__(self, tick, running, period_ms: int = 250):
        self._tick, self._running, self.period_ms = tick, running, period_ms
        self._callback = None

    def ensure(self) -> None:
        """Start polling if a job runs and nobody polls it yet (nothing without a session)."""
        if self._running() and self._callback is None and pn.state.curdoc is not None:
            self._callback = pn.state.add_periodic_callback(self._poll, period=self.period_ms)

    def _poll(self) -> None:
        if not pn.state.loaded:
            # Panel (1.9) drops the model changes a pn.io.hold() makes after the browser has pulled
            # the document but before the session has loaded ("the full serialization has them":
            # the browser already had it). A job result taken then never reached the page (GP 1-D's
            # first visitor saw no MCMC band): it is taken at the first tick after the load.
            return
        self._tick()
        if not self._running() and self._callback is not None:
            self._callback.stop()
            self._callback = None


def cancel_when_session_ends(cancel) -> None:
    """A closed browser tab calls ``cancel()`` (which leaves the job to other sessions sharing it)."""
    if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
        pn.state.on_session_destroyed(lambda context: cancel())


class GuardedModelCalls:
    """Mixin of pages whose widgets call a model (``self.model``, ``self._refresh_widgets()``,
    ``self.poller``): :meth:`_run` calls it so that an unexpected error becomes the model's
    message, never a browser console error, then shows the model and polls any job it started."""

    def _run(self, function, *args, **kwargs) -> None:
        with pn.io.hold():
            try:
                function(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 (a page callback must not raise)
                self.model.message = f"unexpected error: {exc}"
            self._refresh_widgets()
            self.poller.ensure()
