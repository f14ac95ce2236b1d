"""The Scalable page without a browser (app/scalable_page.py): Start runs the planned methods and
its ticks stream the model's news into the views; the boxes show the values the model keeps; an
unexpected error stops the runs and says so. The model's own rules and runs (refusals, stop, a full
server) are tests/gpdemo/test_scalable_model.py's."""
from __future__ import annotations

import time

import panel as pn
import pytest

import scalable_figures
import scalable_page
from qpviz.gpdemo import scalable_demo as sd
from training_jobs import no_leaked_children  # noqa: F401  (autouse: every started child stopped in teardown)
from safe_text import shown


def tick_until_idle(page, timeout: float = 50.0) -> None:
    end = time.monotonic() + timeout
    while page.running():
        assert time.monotonic() < end, shown(page.status.object)
        page.tick()
        time.sleep(0.1)


def test_a_run_fills_the_views_and_bad_input_keeps_them(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 3)
    page = scalable_page.ScalablePage()
    page.m.value = "8"
    page.methods.value = ["gfitc"]
    page.start()
    assert not page.alert.visible and list(page.model.jobs) == ["gfitc"]
    assert not page.stop_button.disabled
    tick_until_idle(page)
    points = len(page.curves.sources["gfitc"].data["t"])
    assert points >= 3 and page.model.runs["gfitc"]["state"] == "done" and "done" in shown(page.status.object)
    assert page.view.shows_data and len(page.view.inducing["gfitc"].data["x"]) == 8
    assert len(page.curves.baseline.data["x"]) == 1 and "logistic" in shown(page.status.object)
    assert "N = 1,497" in shown(page.description.object) and page.stop_button.disabled
    page.methods.value = []
    page.start()
    assert page.alert.visible and "tick at least one method" in shown(page.alert.object), shown(page.alert.object)
    assert len(page.curves.sources["gfitc"].data["t"]) == points  # the last run stays
    assert "N = 1,497" in shown(page.description.object)


@pytest.mark.parametrize("name, typed", [("m", "abc"), ("epochs", "101")])
def test_a_bad_typed_number_is_named_and_the_box_shows_the_value_kept(name, typed):
    """Issue 21: the number boxes dropped letters silently; a bad value was named only at Start."""
    page = scalable_page.ScalablePage()
    box, field, kept = getattr(page, name), scalable_page.TYPED[name], scalable_page.DEFAULTS[name]
    box.value = typed
    assert shown(page.alert.object) == f"{field.name}: {typed!r} was not applied; type {field.accepted}; kept {kept}"
    assert page.alert.visible and box.value == str(kept) and getattr(page.model, name) == kept
    box.value = " 3"
    assert not page.alert.visible and getattr(page.model, name) == 3 and box.value == "3"


def test_the_widgets_and_the_model_show_the_same_values():
    page = scalable_page.ScalablePage()
    page.dataset.value, page.workers.value, page.methods.value = "synthetic 1M", 2, ["sep"]
    assert (page.model.dataset, page.model.workers, page.model.methods) == ("synthetic 1M", 2, ["sep"])
    page.model.param.update(m=33, methods=["svi", "gfitc"])
    assert page.m.value == "33" and page.methods.value == ["svi", "gfitc"] and not page.alert.visible


def long_gfitc_page() -> scalable_page.ScalablePage:
    page = scalable_page.ScalablePage()
    page.m.value = "8"
    page.methods.value = ["gfitc"]
    return page


def test_an_unexpected_error_in_a_tick_stops_the_runs_and_says_so(monkeypatch):
    monkeypatch.setattr(sd, "GFITC_MAX_ITER", 500)
    page = long_gfitc_page()
    page.start()
    job = page.model.jobs["gfitc"]

    def broken_poll():
        raise KeyError("surprise")

    monkeypatch.setattr(job, "poll", broken_poll)
    page.poller._poll()  # what the periodic callback calls: it must not raise
    assert page.alert.visible and "unexpected error: KeyError" in shown(page.alert.object)
    assert not page.running() and page.stop_button.disabled and job.stop_requested
    # the run ends at its next step, or is terminated job.stop_grace s after the stop (SIGTERM, then
    # SIGKILL 1 s later): 7 s on a quiet machine; 10 s was too short under load (a child still
    # starting up reads no "stop"). join returns as soon as it ends.
    job.process.join(job.stop_grace + 30)
    assert not job.alive


def test_an_unexpected_error_in_start_is_a_message(monkeypatch):
    page = long_gfitc_page()

    def broken_plan(*args):
        raise ZeroDivisionError("no")

    monkeypatch.setattr(sd, "plan_runs", broken_plan)
    page.start_button.clicks += 1  # the button's own callback
    assert page.alert.visible and "unexpected error: ZeroDivisionError: no" in shown(page.alert.object)


def test_bad_link_values_go_back_to_defaults_with_a_message(monkeypatch):
    from panel.io.location import Location  # noqa: PLC0415

    location = Location(search='?sc_workers=7&sc_data=nope&sc_methods=["foo"]')
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    page = scalable_page.ScalablePage()
    said = shown(page.link_alert.object)
    for key in ("sc_workers=7", "sc_data=nope", "sc_methods=['foo']"):
        assert key in said and page.link_alert.visible, said
    assert page.workers.value == 0 and page.dataset.value == scalable_page.DEFAULTS["dataset"]
    assert page.methods.value == list(sd.METHODS)
    page.methods.value = ["sep"]  # a valid choice is kept, the banner goes
    assert page.methods.value == ["sep"] and not page.link_alert.visible


def test_the_childs_text_is_escaped_in_the_status():
    table = scalable_figures.status_html({"sep": {"state": "error", "text": "ValueError: <script>x</script>"}}, None)
    assert "<script>" not in table and "&lt;script&gt;" in table
