"""Every tab of the app has its own link (?page=<slug>), and clicking a tab writes that link."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))

from pagetools import serve_app, stop, wait_ready  # noqa: E402
from test_hostile_inputs import VIEWS  # noqa: E402


def ready_view(slug: str):
    """The view of test_hostile_inputs.VIEWS that opens page ``slug`` by its link alone (no other
    key): what that page shows when it is ready, and how long it may take."""
    return next(view for view in VIEWS.values() if view.query.split("&")[0] == f"page={slug}")


def test_tab_slugs():
    from dashboard import tab_slug  # noqa: PLC0415

    assert tab_slug("GP 1-D") == "gp-1-d"
    assert tab_slug("Projection Explorer") == "projection-explorer"
    assert tab_slug("Paper results") == "paper-results"


def test_each_page_opens_from_its_link_and_a_click_writes_it(page: Page, app_url: str):
    """The link naming no page: its tabs are the registered pages', and a click on the last and then
    the first tab writes each one's link. That each tab's link opens that tab is checked where every
    page is opened by its link anyway: tests/browser/test_layout.py's open_tab, for every registered
    page (this test loaded every page once more for it, ~20 s of a run)."""
    from dashboard import tab_slug  # noqa: PLC0415
    import pages as registry  # noqa: PLC0415

    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(app_url)
    page.locator(".bk-tab").first.wait_for(timeout=60_000)
    tab_titles = [t.strip() for t in page.locator(".bk-tab").all_inner_texts()]
    assert tab_titles == [info.title for info in registry.PAGES]  # the pages test_layout opens by their links
    first = tab_titles[0]
    if len(tab_titles) > 1:  # on the first load (a load of its own before, ~3 s on 2 busy cores)
        page.locator(".bk-tab", has_text=tab_titles[-1]).click()
        page.wait_for_url(re.compile(rf"[?&]page={tab_slug(tab_titles[-1])}"), timeout=30_000)
        page.locator(".bk-tab", has_text=first).click()
        page.wait_for_url(re.compile(rf"[?&]page={tab_slug(first)}"), timeout=30_000)
    assert errors == []


def test_gp_1d_hands_its_data_to_variance_effects(page: Page, app_url: str):
    """The GP 1-D page's button opens Variance effects on the same data (EP and QP fitted there)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}?page=gp-1-d&g1_preset=sine+boundary&g1_methods=%5B%22ep%22%2C%22qp%22%5D")
    button = page.get_by_role("button", name="study these data in Variance effects")
    button.click(timeout=60_000)
    expect(page.locator(".bk-tab.bk-active")).to_have_text("Variance effects", timeout=30_000)
    expect(page.locator(".qpviz-ve-dataset select")).to_have_value("GP 1-D: sine boundary", timeout=30_000)
    expect(page.locator(".qpviz-ve-scores")).to_contain_text("held-out points, 1 feature(s)", timeout=120_000)
    page.wait_for_url(re.compile(r"[?&]page=variance-effects"), timeout=30_000)
    assert errors == []


def test_a_session_opened_before_the_background_import_builds_every_tab(browser, tmp_path: Path):
    """A server's first visitor: the other pages are imported in the background while the first
    page is open (dashboard.preload_later); every tab opened afterwards builds its page without an
    error. (A custom component first made by that import was unknown to the open page: GP 1-D's tab
    showed "could not resolve type 'CsvUpload1'" and neither its plots nor its table.)"""
    import dashboard  # noqa: PLC0415
    import pages as registry  # noqa: PLC0415

    log = tmp_path / "serve.log"
    process, url = serve_app(log)  # a server of its own: the session's server has long been preloaded
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        quiet = "&".join(info.quiet_query for info in registry.PAGES if info.quiet_query)  # no MCMC job
        page.goto(f"{url}?{quiet}")
        page.locator(".bk-tab").first.wait_for(timeout=60_000)
        deadline = time.monotonic() + dashboard.PRELOAD_DELAY + 120
        while dashboard.PRELOADED not in log.read_text():
            assert time.monotonic() < deadline, f"the background import was not logged:\n{log.read_text()[-2000:]}"
            page.wait_for_timeout(200)
        for info in registry.PAGES[1:]:
            page.locator(".bk-tab", has_text=info.title).first.click()
            expect(page.locator(".bk-tab.bk-active")).to_have_text(info.title, timeout=30_000)
            # the page is built when its tab opens: it has come (with any error about its models) once
            # it shows what it shows when ready (a fixed 1.5 s wait per tab before)
            view = ready_view(info.slug)
            wait_ready(page, view.ready, view.timeout_ms, info.title)
        assert errors == []
        context.close()
    finally:
        stop(process)
