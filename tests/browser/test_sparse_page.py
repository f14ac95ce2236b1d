"""The Sparse page in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from pagetools import wait_for_new_text, whole_table
from test_explorer_page import ALERT_JS, console_errors, wait_for_title  # noqa: F401  (the fixture fails on console errors)

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
#: Power EP and FITC only (no dense exact GP): quick fits, and the numbers change only with alpha or Z.
QUERY = "page=sparse&sp_preset=gap+in+the+data&sp_alpha=0.5&sp_methods=%5B%22fitc%22%2C%22power_ep%22%5D"

#: Screen position of handle ``index`` on the fits plot's strip (the Bokeh view maps data to canvas
#: pixels; the strip's own y range runs from 0 to 1 over the plot's height), and the pixels per unit of x.
HANDLE_JS = """([index]) => {
    const views = [];
    const walk = v => { if (!v) return; views.push(v); for (const c of (v.child_views || [])) walk(c); };
    for (const v of Object.values(Bokeh.index)) walk(v);
    const plot = views.find(v => v.frame && v.model.title && (v.model.title.text || '').startsWith('Sparse fits'));
    const source = [...Bokeh.documents[0].all_models].find(m => m.data && m.data.x && m.data.y
        && m.data.y.length > 0 && Array.from(m.data.y).every(y => y === 0.05));
    const x = source.data.x[index];
    plot.el.scrollIntoView({block: 'center'});  // a mouse action lands in the viewport only
    const box = plot.canvas_view.el.getBoundingClientRect(), frame = plot.frame.bbox;
    return {x: box.left + plot.frame.x_scale.compute(x), y: box.top + frame.bottom - 0.05 * frame.height,
            step: Math.abs(plot.frame.x_scale.compute(x + 1) - plot.frame.x_scale.compute(x)), value: x};
}"""


#: The handles' data source once the server has put them in order on the strip's line (y = 0.05 each).
HANDLES_JS = """() => [...Bokeh.documents[0].all_models].find(m => m.data && m.data.x && m.data.y
    && m.data.y.length > 0 && Array.from(m.data.y).every(y => y === 0.05)
    && Array.from(m.data.x).every((x, i, xs) => i === 0 || xs[i - 1] <= x))"""


@pytest.fixture
def sparse(page: Page, app_url: str, console_errors) -> Page:  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(f"{app_url}?{QUERY}")
    expect(page.locator(".qpviz-sp-numbers table").first.locator("tr")).to_have_count(3, timeout=TIMEOUT_MS)
    wait_for_title(page, "Power-EP (EP) evidence over alpha\nlog Z = ")  # the curve has arrived
    return page


def numbers(page: Page) -> str:
    """The numbers table's text once it has its header and the link's two rows (a read right after
    the opening's title once saw an empty table, 2026-11-28)."""
    return whole_table(page.locator(".qpviz-sp-numbers table").first, rows=2)


def row(table: str, method: str) -> str:
    """The table's line of ``method`` (cells separated by tabs; a colour swatch first)."""
    return next(line for line in table.splitlines() if method in line)


def test_the_alpha_slider_changes_the_power_ep_number_and_the_url(sparse: Page):
    before = numbers(sparse)
    handle = sparse.locator(".qpviz-sp-alpha .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    after = wait_for_new_text(sparse.locator(".qpviz-sp-numbers table").first, before)
    assert "Power EP (alpha = 0.55)" in after
    assert row(before, "Power EP").split("\t")[1] != row(after, "Power EP").split("\t")[1]  # another evidence
    assert row(before, "FITC") == row(after, "FITC")  # cached, unchanged
    wait_for_title(sparse, "Power-EP (EP) evidence over alpha\nlog Z = ")
    sparse.wait_for_function("() => window.location.search.includes('sp_alpha=0.55')", timeout=TIMEOUT_MS)


def test_dragging_a_handle_moves_a_pseudo_input_and_refits(sparse: Page):
    z_field = sparse.locator(".qpviz-sp-z input").first
    z_before = z_field.input_value()
    before = numbers(sparse)
    start = sparse.evaluate(HANDLE_JS, [0])
    sparse.mouse.move(start["x"], start["y"])
    sparse.mouse.down()
    sparse.mouse.move(start["x"] + 0.5 * start["step"], start["y"] + 5, steps=4)
    sparse.mouse.move(start["x"] + start["step"], start["y"] + 10, steps=4)  # one unit right (and a little down)
    sparse.mouse.up()
    after = wait_for_new_text(sparse.locator(".qpviz-sp-numbers table").first, before)
    assert after != before
    expect(z_field).not_to_have_value(z_before, timeout=TIMEOUT_MS)
    moved = [float(z) for z in z_field.input_value().split(",")]
    assert len(moved) == 8
    assert any(abs(z - (start["value"] + 1.0)) < 0.2 for z in moved), (start, moved)
    # the handle went back onto the strip's line: only x changed
    sparse.wait_for_function("""() => [...Bokeh.documents[0].all_models].some(m => m.data && m.data.y
        && m.data.y.length === 8 && Array.from(m.data.y).every(y => y === 0.05))""", timeout=TIMEOUT_MS)


def test_a_tap_adds_a_pseudo_input_and_backspace_removes_the_selected_one(sparse: Page):
    z_field = sparse.locator(".qpviz-sp-z input").first
    original = [float(z) for z in z_field.input_value().split(",")]
    first, second = sparse.evaluate(HANDLE_JS, [0]), sparse.evaluate(HANDLE_JS, [1])
    gap = (first["x"] + second["x"]) / 2.0  # between two handles: an empty spot on the strip
    before = numbers(sparse)
    sparse.mouse.click(gap, first["y"])
    after = wait_for_new_text(sparse.locator(".qpviz-sp-numbers table").first, before)
    expect(z_field).to_have_value(re.compile(r"^[^,]+(,[^,]+){8}$"), timeout=TIMEOUT_MS)  # 9 values
    added = [float(z) for z in z_field.input_value().split(",")]
    new = [z for z in added if min(abs(z - o) for o in original) > 1e-6]
    assert len(new) == 1 and abs(new[0] - (first["value"] + second["value"]) / 2.0) < 0.2, (original, added)
    wait_for_title(sparse, "Sparse fits, regression: N = 100, M = 9\n")

    # select the first handle; the server rewrites the handles after each refit (in order, on the
    # strip's line), which drops a selection made just before, so tap again until it holds
    sparse.wait_for_function(f"() => ({HANDLES_JS})()?.data.x.length === 9", timeout=TIMEOUT_MS)
    for _ in range(10):
        handle = sparse.evaluate(HANDLE_JS, [0])
        sparse.mouse.click(handle["x"], handle["y"])
        try:
            sparse.wait_for_function(f"() => ({HANDLES_JS})()?.selected.indices.join() === '0'", timeout=2000)
            break
        except PlaywrightTimeout:
            continue
    else:
        pytest.fail("the first handle never stayed selected after 10 taps")
    sparse.keyboard.press("Backspace")  # ...and remove it
    wait_for_new_text(sparse.locator(".qpviz-sp-numbers table").first, after)
    expect(z_field).to_have_value(re.compile(r"^[^,]+(,[^,]+){7}$"), timeout=TIMEOUT_MS)  # 8 values
    left = [float(z) for z in z_field.input_value().split(",")]
    assert all(abs(z - handle["value"]) > 1e-6 for z in left) and new[0] in left, (added, left)
    wait_for_title(sparse, "Sparse fits, regression: N = 100, M = 8\n")


def test_the_tab_shows_fits_and_messages_and_a_bad_input_keeps_the_last_fit(sparse: Page):
    """One load (each part was a test loading the page): what the opened tab shows, then a refused
    noise value that keeps the fit (a refusal changes nothing the first part reads)."""
    wait_for_title(sparse, "Sparse fits, regression: N = 100, M = 8\n")
    text = numbers(sparse)
    assert "FITC" in text and "Power EP (alpha = 0.50)" in text
    expect(sparse.locator(".qpviz-sp-messages").first).to_contain_text("VFE under-fits")
    expect(sparse.locator(".qpviz-sp-messages").first).to_contain_text("Z = X")

    before = numbers(sparse)
    field = sparse.locator(".qpviz-sp-noise input").first
    field.fill("-1")
    field.press("Enter")
    sparse.wait_for_function(f"() => ({ALERT_JS})().includes('was not applied')", timeout=TIMEOUT_MS)
    assert numbers(sparse) == before


def test_a_link_reopens_the_same_pseudo_inputs_alpha_and_projection(page: Page, app_url: str, console_errors):  # noqa: F811
    query = ("page=sparse&sp_preset=smooth+regression+%28N+%3D+200%29&sp_alpha=0.3&sp_proj=qp"
             "&sp_z=-4%2C+-1%2C+1%2C+4&sp_methods=%5B%22power_ep%22%5D")
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(f"{app_url}?{query}")
    wait_for_title(page, "Sparse fits, regression: N = 200, M = 4\n")
    expect(page.locator(".qpviz-sp-z input").first).to_have_value("-4, -1, 1, 4")
    expect(page.locator(".qpviz-sp-numbers table").first).to_contain_text("Power QP (alpha = 0.30)", timeout=TIMEOUT_MS)
