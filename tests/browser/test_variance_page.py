"""The Variance effects page in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagetools import TITLES_JS, plot_titles
from test_explorer_page import ALERT_JS, console_errors  # noqa: F401 - the fixture fails on console errors

pytestmark = pytest.mark.browser

#: A fit with hyper-parameter optimisation takes ~10 s on wine1 alone; the 2-core machine is shared.
FIT_TIMEOUT_MS = 240_000


@pytest.fixture
def variance_page(page: Page, app_url: str, console_errors) -> Page:  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url)
    page.get_by_text("Variance effects", exact=True).click()
    page.locator(".qpviz-ve-dataset select").wait_for(timeout=60_000)
    return page


def wait_for_title(page: Page, prefix: str) -> str:
    try:
        page.wait_for_function(f"prefix => ({TITLES_JS})().some(text => text.startsWith(prefix))", arg=prefix,
                               timeout=FIT_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no plot title starts with {prefix!r}; titles: {plot_titles(page)}; "
                             f"alert: {page.evaluate(ALERT_JS)!r}") from None
    return next(t for t in reversed(plot_titles(page)) if t.startswith(prefix))


def test_wine1_shows_figure_1_histogram_and_scores(variance_page: Page):
    page = variance_page
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
