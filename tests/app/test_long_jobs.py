"""app/long_jobs.py's JobPoller: a job's result is taken only once the session has loaded."""
from __future__ import annotations

import panel as pn

from long_jobs import JobPoller


def test_a_poll_before_the_session_has_loaded_takes_nothing_and_the_next_one_does(monkeypatch):
    """Panel drops the changes a hold makes between the browser's pull of the document and the
    session's load: a job result taken then never reached the browser (GP 1-D's first visitor saw
    no MCMC band: 7 of 8 first visits to fresh servers). The poller waits for the load."""
    loaded = {"value": False}
    monkeypatch.setattr(type(pn.state), "loaded", property(lambda self: loaded["value"]))
    ticks = []
    poller = JobPoller(lambda: ticks.append(1), lambda: True)
    poller._poll()
    assert ticks == []
    loaded["value"] = True
    poller._poll()
    assert ticks == [1]
