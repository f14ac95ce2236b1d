"""A fixture shared by the tests that start the Scalable page's training processes
(tests/gpdemo/test_scalable_demo.py, tests/gpdemo/test_scalable_model.py, tests/app/test_app_scalable_page.py)."""
from __future__ import annotations

import pytest

from qpviz.gpdemo import scalable_demo as sd


@pytest.fixture(autouse=True)
def no_leaked_children(monkeypatch):
    """Every training process a test starts is stopped (grace 0) in teardown, whatever the test did."""
    started = []
    start = sd.TrainingJob.start

    def start_and_remember(job):
        started.append(job)
        return start(job)

    monkeypatch.setattr(sd.TrainingJob, "start", start_and_remember)
    yield started
    for job in started:
        job.stop(grace=0.0)
        assert not job.alive
