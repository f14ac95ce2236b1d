"""The Scalable page without a browser (app/scalable_page.py): Start runs the planned methods and
its ticks fill the views; bad input only says what to change and keeps the last run."""
from __future__ import annotations

import time

import scalable_page
from qpviz.gpdemo import scalable_demo as sd


def tick_until_idle(page, timeout: float = 50.0) -> None:
    end = time.monotonic() + timeout
    while page.running():
        assert time.monotonic() < end, page.status.object
        page.tick()
        time.sleep(0.1)


def test_a_run_fills_the_views_and_bad_input_keeps_them(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 3)
    page = scalable_page.ScalablePage()
    page.m.value = 8
    page.methods.value = ["gfitc"]
    page.start()
    assert not page.alert.visible and list(page.jobs) == ["gfitc"]
    assert not page.stop_button.disabled
    tick_until_idle(page)
    points = len(page.curves.sources["gfitc"].data["t"])
    assert points >= 3 and page.runs["gfitc"]["state"] == "done"
    assert page.view.shows_data and len(page.view.inducing["gfitc"].data["x"]) == 8
    assert len(page.curves.baseline.data["x"]) == 1 and "logistic" in page.status.object
    assert "N = 1,497" in page.description.object and page.stop_button.disabled
    for widget, value, says in ((page.m, 0, "M (inducing points) must be"), (page.minibatch, 0, "minibatch size"),
                                (page.methods, [], "tick at least one method")):
        good = widget.value
        widget.value = value
        page.start()
        assert page.alert.visible and says in page.alert.object, page.alert.object
        assert len(page.curves.sources["gfitc"].data["t"]) == points  # the last run stays
        widget.value = good


def test_methods_that_cannot_run_say_why():
    page = scalable_page.ScalablePage()
    page.dataset.value = "synthetic 1M"
    page.methods.value = ["gfitc"]
    page.start()
    assert page.alert.visible and "GFITC not run" in page.alert.object and "20,000" in page.alert.object
    assert page.jobs == {}
