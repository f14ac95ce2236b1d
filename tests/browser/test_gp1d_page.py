"""The GP 1-D page in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from pagetools import plot_titles, wait_for_new_text, whole_table
from test_explorer_page import ALERT_JS, console_errors  # noqa: F401  (the fixture fails on console errors)

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
#: URL query showing EP and QP only.
NO_MCMC = "g1_methods=%5B%22ep%22%2C%22qp%22%5D"


def open_gp1d(page: Page, link: str) -> Page:
    """Open ``link``, click the GP 1-D tab and wait for the link's EP and QP fit."""
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(link)
    page.get_by_text("GP 1-D", exact=True).first.click()
    page.locator(".qpviz-gp1d-table table").first.wait_for(timeout=TIMEOUT_MS)
    # the first table may still be the default fit (with MCMC) before the link's methods arrive and
    # refit: wait for the link's table, a header and the EP and QP rows
    expect(page.locator(".qpviz-gp1d-table table").first.locator("tr")).to_have_count(3, timeout=TIMEOUT_MS)
    return page


@pytest.fixture
def gp1d(page: Page, app_url: str, console_errors) -> Page:  # noqa: F811
    """The GP 1-D page opened by its link (the tab already open: its click changes nothing); no
    background job changes the numbers under the test. (Building the opening page first cost each
    test seconds: test_tab_opens_with_ep_and_qp_and_every_view opens the tab from it.)"""
    return open_gp1d(page, f"{app_url}?page=gp-1-d&{NO_MCMC}")


@pytest.fixture
def gp1d_by_tab(page: Page, app_url: str, console_errors) -> Page:  # noqa: F811
    """The app opened on its first page by a link that names no page, then the GP 1-D tab clicked:
    the link's keys reach the tab built later."""
    return open_gp1d(page, f"{app_url}?{NO_MCMC}")


def table_text(page: Page) -> str:
    """The numbers table's text once it is whole (pagetools.whole_table)."""
    return whole_table(page.locator(".qpviz-gp1d-table table").first)


def set_lengthscale(page: Page, value: str) -> None:
    field = page.locator(".qpviz-gp1d-lengthscale input").first
    field.fill(value)
    field.press("Enter")


def test_tab_opens_with_ep_and_qp_and_every_view(gp1d_by_tab: Page):
    gp1d = gp1d_by_tab
    text = table_text(gp1d)
    assert "EP" in text and "QP" in text
    titles = plot_titles(gp1d)
    for prefix in ("Latent f", "Predictive", "Site precisions", "Convergence", "EP evidence", "Step-through"):
        assert any(t.startswith(prefix) for t in titles), (prefix, titles)


def test_a_hyperparameter_change_refits_and_a_bad_value_or_csv_keeps_the_fit(gp1d: Page, tmp_path):
    """One load (each part was a test loading the page): a new length-scale refits, a bad one is
    refused with a message and the fit stays; then a bad CSV is refused (the fit stays), a good one
    is taken. First a key press on the slider: its whole answer (the number box's echo of the new
    value and the refit) arrives as one message (app/explorer_widgets.py: PromptFloatSlider)."""
    before = table_text(gp1d)
    cdp = gp1d.context.new_cdp_session(gp1d)
    received = []  # the server's websocket frames: each message's content is one JSON text frame
    cdp.on("Network.webSocketFrameReceived", lambda event: received.append(event["response"]["payloadData"]))
    cdp.send("Network.enable")
    gp1d.locator(".qpviz-gp1d-lengthscale .noUi-handle").first.press("ArrowRight")
    before = wait_for_new_text(gp1d.locator(".qpviz-gp1d-table table").first, before)
    cdp.detach()
    contents = [frame for frame in received if frame.startswith('{"events"')]
    echoes = [frame for frame in contents if '"attr":"value"' in frame]
    assert len(echoes) == 1 and ('"ColumnsPatched"' in echoes[0] or '"ColumnDataChanged"' in echoes[0]), contents
    set_lengthscale(gp1d, "2.5")
    after = wait_for_new_text(gp1d.locator(".qpviz-gp1d-table table").first, before)
    set_lengthscale(gp1d, "0")
    gp1d.wait_for_function(f"() => ({ALERT_JS})().includes('lengthscale: 0 was not applied')", timeout=TIMEOUT_MS)
    assert table_text(gp1d) == after  # the last good fit stays

    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,a\n2,b\n")
    gp1d.locator("input[type=file]").first.set_input_files(str(bad))
    gp1d.wait_for_function(f"() => ({ALERT_JS})().includes('CSV not loaded')", timeout=TIMEOUT_MS)
    assert table_text(gp1d) == after
    good = tmp_path / "good.csv"
    good.write_text("x,y\n0,-1\n1,-1\n2,1\n3,1\n4,1\n")
    gp1d.locator("input[type=file]").first.set_input_files(str(good))
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& /^Predictive.*, 5 data points$/.test(m.text || ''))", timeout=TIMEOUT_MS)


def test_one_site_button_and_keys_step_and_highlight_a_site(gp1d: Page):
    gp1d.get_by_role("button", name="site (n)").click()
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& (m.text || '').startsWith('Step-through (EP, sweep 1): site 1'))", timeout=TIMEOUT_MS)
    expect(gp1d.locator(".qpviz-gp1d-explorer-link a")).to_contain_text("Projection Explorer", timeout=TIMEOUT_MS)
    # the lesson of the update just made (issue 21): how the site came about, how the posterior moved
    change = gp1d.locator(".qpviz-gp1d-change").first
    expect(change).to_contain_text("Site 0 at x =", timeout=TIMEOUT_MS)
    expect(change).to_contain_text("dividing by the cavity")
    expect(change).to_contain_text("posterior at x =")
    # without the MCMC reference the sd-ratio view says how to get it
    expect(gp1d.locator(".qpviz-gp1d-sd-text").first).to_contain_text("Turn MCMC on")
    gp1d.keyboard.press("n")
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& (m.text || '').startsWith('Step-through (EP, sweep 1): site 2'))", timeout=TIMEOUT_MS)
    gp1d.keyboard.press("s")
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& (m.text || '').startsWith('Step-through (EP, sweep 2): site 0'))", timeout=TIMEOUT_MS)


def predictive_title(page: Page) -> str:
    return next(t for t in plot_titles(page) if t.startswith("Predictive"))


def test_clicking_the_predictive_plot_adds_or_removes_a_point(gp1d: Page):
    before = predictive_title(gp1d)
    assert before.endswith("60 data points")
    figure = gp1d.locator(".bk-Figure").nth(1)  # latent, then predictive
    box = figure.bounding_box()
    gp1d.mouse.click(box["x"] + 0.55 * box["width"], box["y"] + 0.3 * box["height"])
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& /^Predictive.*, (59|61) data points$/.test(m.text || ''))", timeout=TIMEOUT_MS)


def test_a_shared_link_reopens_the_tab_with_its_settings_and_data(page: Page, app_url: str, console_errors):  # noqa: F811
    query = "page=gp-1-d&g1_preset=sharp+step&g1_ls=2.5&g1_methods=%5B%22ep%22%5D&g1_data=0:-1;1:-1;2:1;3:1;4:1;5:-1"
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(f"{app_url}?{query}")
    page.locator(".qpviz-gp1d-table table").first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& /^Predictive.*, 6 data points$/.test(m.text || ''))", timeout=TIMEOUT_MS)
    expect(page.locator(".qpviz-gp1d-lengthscale input").first).to_have_value("2.5")
    text = table_text(page)
    assert "EP" in text and "QP" not in text


def test_optimise_streams_the_evidence_and_finishes(gp1d: Page):
    gp1d.get_by_role("button", name="optimise (EP evidence)").click()
    gp1d.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' "
        "&& /^EP evidence per optimisation step: .* \\(done\\)$/.test(m.text || ''))", timeout=120_000)
    points = gp1d.evaluate("""() => { for (const m of Bokeh.documents[0].all_models)
        if (m.data && m.data.evidence) return Array.from(m.data.evidence); return []; }""")
    assert len(points) >= 2 and points[-1] > points[0]
