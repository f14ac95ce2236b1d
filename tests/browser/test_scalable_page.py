"""The Scalable page in a real Chromium, served by `python -m panel serve app`: a small run of SEP,
SVI and GFITC on digits streams every method's curves and status, Stop ends a long run, bad input
(also a bad link) only says what to change."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from test_explorer_page import console_errors  # noqa: F401  (the fixture: fail on console errors)

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
#: Points streamed into each method's curve source so far ({method colour: count}; the sources with
#: a "test_error" and a "step" column), read from the Bokeh document.
CURVE_POINTS_JS = """() => {
    const out = {};
    for (const m of Bokeh.documents[0].all_models) {
        if (m.constructor.__name__ !== 'GlyphRenderer' || m.glyph.constructor.__name__ !== 'Line') continue;
        const data = m.data_source.data;
        if (!data.step || !data.test_error || m.glyph.y.field !== 'test_error') continue;
        out[m.glyph.line_color.value || m.glyph.line_color] = data.step.length;
    }
    return out;
}"""
#: One method's inducing points on the PCA plane (the scatter in its colour, argument): [x0, y0] of its first.
INDUCING_JS = """(colour) => [...Bokeh.documents[0].all_models]
    .filter(m => m.constructor.__name__ === 'GlyphRenderer' && m.glyph.constructor.__name__ === 'Scatter'
                 && m.glyph.size.value === 11 && (m.glyph.fill_color.value || m.glyph.fill_color) === colour
                 && m.data_source.data.x.length > 0)
    .map(m => [m.data_source.data.x[0], m.data_source.data.y[0]])"""
ALERT_JS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => (m.css_classes || []).includes('qpviz-sc-error') && m.visible).map(m => m.text).join(' ')"""
GFITC, SEP, SVI = "#882255", "#CC6677", "#117733"  # app/colours.py METHOD_COLOURS


def status_row(page: Page, label: str) -> str:
    return page.locator(".qpviz-sc-status tr", has_text=label).first.inner_text()


def states(page: Page) -> dict:
    """{method: its state} of the status table's rows."""
    rows = [row.split("\t") for row in page.locator(".qpviz-sc-status tr").all_inner_texts()[1:]]
    return {cells[0].strip(" ■"): cells[1].strip() for cells in rows if len(cells) > 1}


def total_points(page: Page) -> int:
    return sum(page.evaluate(CURVE_POINTS_JS).values())


def open_scalable(page: Page, url: str) -> Page:
    page.set_viewport_size({"width": 1500, "height": 1100})
    page.goto(url)
    expect(page.locator(".qpviz-sc-start button")).to_be_visible(timeout=TIMEOUT_MS)
    return page


@pytest.fixture
def scalable(page: Page, app_url: str, console_errors) -> Page:  # noqa: F811
    open_scalable(page, f"{app_url}?page=scalable&sc_m=20&sc_epochs=2")
    expect(page.locator(".qpviz-sc-m input")).to_have_value("20", timeout=TIMEOUT_MS)
    return page


def test_every_method_streams_its_curve_without_errors(scalable: Page):
    page = scalable
    assert total_points(page) == 0
    page.locator(".qpviz-sc-start button").click()
    for colour in (SEP, SVI, GFITC):
        page.wait_for_function(f"() => ({CURVE_POINTS_JS})()['{colour}'] >= 2", timeout=TIMEOUT_MS)
    for label in ("SEP", "SVI"):
        expect(page.locator(".qpviz-sc-status tr", has_text=label)).to_contain_text("done", timeout=TIMEOUT_MS)
    assert "error" not in states(page).values(), states(page)
    assert page.evaluate(INDUCING_JS, SEP) and page.evaluate(INDUCING_JS, SVI)


def test_a_long_run_streams_its_curves_and_stop_ends_it(page: Page, app_url: str, console_errors):  # noqa: F811
    # GFITC (inducing inputs learnt, so they move) and SEP with 100 epochs (certainly long), in one Start
    open_scalable(page, f"{app_url}?page=scalable&sc_m=20&sc_epochs=100&sc_mb=50"
                        '&sc_methods=%5B%22sep%22%2C%22gfitc%22%5D')
    expect(page.locator(".qpviz-sc-epochs input")).to_have_value("100", timeout=TIMEOUT_MS)
    assert total_points(page) == 0
    page.locator(".qpviz-sc-start button").click()
    expect(page.locator(".qpviz-sc-status")).to_contain_text("GFITC", timeout=TIMEOUT_MS)
    # the curves get points (GFITC's among them) and the status row follows them
    page.wait_for_function(f"() => ({CURVE_POINTS_JS})()['{GFITC}'] >= 3", timeout=TIMEOUT_MS)
    row = status_row(page, "GFITC")
    assert "running" in row, row
    step = int(row.split("\t")[2])
    assert step >= 3
    first_z = page.evaluate(INDUCING_JS, GFITC)
    assert first_z
    page.wait_for_function(f"() => ({CURVE_POINTS_JS})()['{GFITC}'] >= {step + 2}", timeout=TIMEOUT_MS)
    assert int(status_row(page, "GFITC").split("\t")[2]) > step
    # GFITC's inducing inputs move as they are learnt (their drawing can come a message after the curve's)
    page.wait_for_function(f"first => JSON.stringify(({INDUCING_JS})('{GFITC}')) !== JSON.stringify(first)",
                           arg=first_z, timeout=TIMEOUT_MS)
    page.wait_for_function(f"() => ({CURVE_POINTS_JS})()['{SEP}'] >= 2", timeout=TIMEOUT_MS)
    assert "running" in status_row(page, "SEP")
    expect(page.locator(".qpviz-sc-status tr", has_text="logistic")).to_contain_text(re.compile(r"0\.\d{4}"))
    page.locator(".qpviz-sc-stop button").click()
    # SEP's 100 epochs certainly outlast the test; GFITC's 60 optimiser steps may end first on a fast machine
    expect(page.locator(".qpviz-sc-status tr", has_text="SEP")).to_contain_text("stopped", timeout=15_000)
    expect(page.locator(".qpviz-sc-status tr", has_text="GFITC")).to_contain_text(re.compile("stopped|done"))
    assert "error" not in states(page).values(), states(page)
    expect(page.locator(".qpviz-sc-stop button")).to_be_disabled()
    stopped = total_points(page)
    page.wait_for_timeout(1000)
    assert total_points(page) == stopped  # nothing arrives after the stop


def test_bad_input_says_what_to_change_and_starts_nothing(scalable: Page):
    page = scalable
    # a refused typed value: named, the box and the link keep the last good value, nothing starts
    box = page.locator(".qpviz-sc-minibatch input")
    box.fill("0")
    box.press("Enter")
    page.wait_for_function(f"() => ({ALERT_JS})().includes('was not applied; type a whole number')",
                           timeout=TIMEOUT_MS)
    expect(box).to_have_value("200")
    assert "sc_mb=0" not in page.url, page.url  # a copied link never carries the refused value
    # no method ticked: Start says what to change and starts nothing
    for checkbox in page.locator(".qpviz-sc-methods input").all():
        checkbox.uncheck()
    page.locator(".qpviz-sc-start button").click()
    page.wait_for_function(f"() => ({ALERT_JS})().includes('tick at least one method')", timeout=TIMEOUT_MS)
    expect(page.locator(".qpviz-sc-stop button")).to_be_disabled()
    page.wait_for_timeout(500)
    assert total_points(page) == 0
    assert page.locator(".qpviz-sc-status tr").count() == 0


def test_a_bad_link_is_replaced_by_defaults_with_a_message(page: Page, app_url: str, console_errors):  # noqa: F811
    open_scalable(page, f"{app_url}?page=scalable&sc_workers=7&sc_data=nope&sc_methods=%5B%22foo%22%5D")
    banner = page.locator(".qpviz-link-alert")  # the app's one link banner (app/number_field.py LinkValues)
    for says in ("sc_workers=7 (one of 0, 1, 2); shown instead: 0", "sc_data=nope", "sc_methods=['foo']"):
        expect(banner).to_contain_text(says, timeout=TIMEOUT_MS)
    expect(page.locator(".qpviz-sc-dataset select")).to_have_value("digits odd vs even")
