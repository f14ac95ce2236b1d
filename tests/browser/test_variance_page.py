"""The Variance effects page in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagetools import TITLES_JS, link_and_tab_fixtures, plot_titles
from test_explorer_page import ALERT_JS, console_errors  # noqa: F401 - the fixture fails on console errors

pytestmark = pytest.mark.browser

#: A fit with hyper-parameter optimisation takes ~10 s on wine1 alone; the 2-core machine is shared.
FIT_TIMEOUT_MS = 240_000


def open_variance_page(page: Page, link: str) -> Page:
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(link)
    page.get_by_text("Variance effects", exact=True).click()
    page.locator(".qpviz-ve-dataset select").wait_for(timeout=60_000)
    return page


variance_page, variance_page_by_tab = link_and_tab_fixtures(open_variance_page, "variance-effects")


def title_now(page: Page, prefix: str) -> bool:
    return any(t.startswith(prefix) for t in plot_titles(page))


def wait_for_title(page: Page, prefix: str) -> str:
    try:
        page.wait_for_function(f"prefix => ({TITLES_JS})().some(text => text.startsWith(prefix))", arg=prefix,
                               timeout=FIT_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no plot title starts with {prefix!r}; titles: {plot_titles(page)}; "
                             f"alert: {page.evaluate(ALERT_JS)!r}") from None
    return next(t for t in reversed(plot_titles(page)) if t.startswith(prefix))


def test_wine1_shows_figure_1_histogram_and_scores(variance_page_by_tab: Page):
    page = variance_page_by_tab
    page.locator(".qpviz-ve-dataset select").select_option("wine1")
    title = wait_for_title(page, "Figure 1: wine1")
    held_out = int(re.search(r"(\d+) held-out points", title).group(1))
    assert held_out == 13  # fold 1 of 10 of wine1's 130 rows
    wait_for_title(page, "var_QP / var_EP on wine1")
    scores = page.locator(".qpviz-ve-scores table")
    for method in ("EP", "QP", "VB", "Laplace"):
        expect(scores).to_contain_text(method)
    expect(page.locator(".qpviz-ve-sentence-scatter")).to_contain_text(
        f"All {held_out} held-out points lie on or below the dashed diagonal")
    expect(page.locator(".katex").first).to_be_visible()
    page.wait_for_url(re.compile(r"ve_dataset=wine1"), timeout=30_000)  # the view is in the link
    with page.expect_download(timeout=30_000) as download:
        page.locator(".qpviz-ve-csv").get_by_text("Download the numbers (CSV)").click()
    rows = Path(download.value.path()).read_text().splitlines()
    assert rows[0].startswith("# wine1") and rows[1] == "point,var_ep,var_qp,ratio"
    assert len([r for r in rows[2:] if r and r[0].isdigit()]) == held_out


STATUS_JS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => (m.css_classes || []).includes('qpviz-ve-status')).map(m => m.text).join(' ')"""


def test_a_long_fit_shows_progress_and_cancel_keeps_the_last_views(variance_page: Page):
    page = variance_page
    wait_for_title(page, "Figure 1: synthetic 2-D")  # the default fit
    page.locator(".qpviz-ve-dataset select").select_option("cancer")  # ~30-60 s with optimisation
    page.wait_for_function(f"() => ({STATUS_JS})().includes('Fitting')", timeout=30_000)
    cancel = page.locator(".qpviz-ve-cancel button")
    expect(cancel).to_be_enabled()
    cancel.click()
    page.wait_for_function(f"() => ({STATUS_JS})().includes('cancelled')", timeout=30_000)
    expect(cancel).to_be_disabled()
    expect(page.locator(".qpviz-ve-dataset select")).to_have_value("synthetic 2-D")  # controls = views
    titles = plot_titles(page)
    assert any(t.startswith("Figure 1: synthetic 2-D") for t in titles)
    assert not any(t.startswith("Figure 1: cancer") for t in titles)


def test_a_bad_link_is_reported_and_replaced(page: Page, app_url: str, console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url + "?ve_dataset=wine3&ve_seed=abc&ve_folds=7")
    page.get_by_text("Variance effects", exact=True).click()
    warning = page.locator(".qpviz-ve-link")
    expect(warning).to_contain_text("ve_seed='abc' (split seed: a whole number from 0 to 10000); shown instead: 0",
                                    timeout=60_000)
    expect(warning).to_contain_text("ve_folds=7 (folds: one of 10, 5, 2); shown instead: 10")
    wait_for_title(page, "Figure 1: wine3")


def test_an_out_of_range_seed_is_named_and_replaced(variance_page: Page):
    """Both values on one load (a load each before): each refused value leaves the box at 0 and
    the views as they were, the next one's starting state (checked)."""
    page = variance_page
    wait_for_title(page, "Figure 1: synthetic 2-D")
    box = page.locator(".qpviz-ve-seed input")
    for typed in ("99999", "-3"):
        box.fill(typed)
        box.press("Enter")
        expect(page.locator(".qpviz-error"), f"seed {typed}").to_contain_text(
            f"split seed: '{typed}' was not applied; type a whole number from 0 to 10000; kept 0", timeout=30_000)
        expect(box, f"seed {typed}").to_have_value("0")
        assert title_now(page, "Figure 1: synthetic 2-D"), f"seed {typed}: the views changed"  # the views stay
