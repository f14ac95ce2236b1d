"""The Paper results page in a real Chromium, served by `python -m panel serve app`.

The live rerun is shortened (wine1, one round of 2 folds, 3 optimiser iterations) through
``QPVIZ_LIVE_OPTIONS``, set here at import, i.e. before the session's server starts.
"""
from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from pagetools import ROOT, link_and_tab_fixtures
from test_explorer_page import console_errors  # noqa: F401  (the fixture: no console errors)

pytestmark = pytest.mark.browser

os.environ.setdefault("QPVIZ_LIVE_OPTIONS", '{"n_folds": 2, "max_opt_iter": 3}')

TIMEOUT_MS = 60_000
RUN_TIMEOUT_MS = 120_000
COMMITTED = ROOT / "benchmarks" / "results" / "paper" / "table1.csv"
FOLDS = ROOT / "benchmarks" / "results" / "paper" / "folds.jsonl"
#: Figure 1's Bokeh figures on the open tab: title, axis scales, tool types, points drawn, frame size
FIGURE1_JS = """() => {
    const out = [];
    const walk = v => {
        if (!v) return;
        if (v.model && v.model.constructor.__name__ === 'Figure') {
            const r = v.el.getBoundingClientRect();
            if (r.width > 0 && String(v.model.title.text).match(/var_QP/)) out.push({
                title: v.model.title.text, x_scale: v.model.x_scale.constructor.__name__,
                y_scale: v.model.y_scale.constructor.__name__,
                tools: v.model.toolbar.tools.map(t => t.constructor.__name__),
                points: v.model.renderers.filter(g => g.glyph.constructor.__name__ === 'Scatter')
                    .reduce((n, g) => n + g.data_source.get_length(), 0),
                frame_width: v.frame.bbox.width});
            return;
        }
        for (const c of (v.child_views || [])) walk(c);
    };
    for (const v of Object.values(Bokeh.index)) walk(v);
    return out;
}"""


def open_paper_page(page: Page, link: str) -> Page:
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(link)
    tab = page.locator(".bk-tab").filter(has_text="Paper results")
    tab.wait_for(timeout=TIMEOUT_MS)
    tab.click()
    page.locator(".qpviz-paper-table table").wait_for(timeout=TIMEOUT_MS)
    return page


paper_page, paper_page_by_tab = link_and_tab_fixtures(open_paper_page, "paper-results")


def test_table_shows_ours_or_the_missing_results_message_and_figure1(paper_page_by_tab: Page):
    """One load (Figure 1 and the TE unit were a test loading the page by its link)."""
    paper_page = paper_page_by_tab
    table = paper_page.locator(".qpviz-paper-table table")
    expect(table).to_contain_text("IonoS (351 x 34)")
    expect(table).to_contain_text("215.9 ± 8.4")  # the paper's column
    if COMMITTED.is_file():
        assert table.locator("td.qpviz-within, td.qpviz-outside").count() > 0
    else:
        expect(paper_page.locator(".qpviz-paper-message")).to_contain_text("No committed results yet")
        expect(paper_page.locator(".qpviz-paper-message")).to_contain_text("python -m qpviz.reproduce table1")
    expect(paper_page.locator(".qpviz-paper-legend")).to_contain_text("more than the paper's std")
    expect(paper_page.locator(".katex").first).to_be_visible()
    minings_te_has_its_own_unit_and_figure1_is_drawn_live(paper_page)  # read-only, on the same load


def minings_te_has_its_own_unit_and_figure1_is_drawn_live(paper_page: Page) -> None:
    expect(paper_page.locator(".qpviz-paper-table .qpviz-te-unit")).to_contain_text("disasters / year")
    if not FOLDS.is_file():
        expect(paper_page.locator(".qpviz-figure-message")).to_contain_text("No committed Figure 1 data yet")
        return
    paper_page.wait_for_function(f"() => ({FIGURE1_JS})().length === 2", timeout=TIMEOUT_MS)
    scatter, ratio = paper_page.evaluate(FIGURE1_JS)
    assert scatter["title"].startswith("(a)") and ratio["title"].startswith("(b)")
    assert (scatter["x_scale"], scatter["y_scale"], ratio["x_scale"]) == ("LogScale",) * 3
    for fig in (scatter, ratio):
        assert {"PanTool", "WheelZoomTool", "BoxZoomTool", "HoverTool"} <= set(fig["tools"]), fig["tools"]
        assert fig["points"] > 20_000 and fig["frame_width"] > 200  # every held-out point of the committed run
    expect(paper_page.locator(".qpviz-figure-summary")).to_contain_text("held-out points of 10 datasets")
    assert paper_page.locator(".qpviz-figure1 img").count() == 0  # no static PNG any more


def test_preprocessing_switch_reaches_the_url(paper_page: Page, app_url: str):
    paper_page.locator(".bk-btn").filter(has_text=re.compile(r"^clean$")).click()
    paper_page.wait_for_url(re.compile(r"[?&]prep=clean"), timeout=TIMEOUT_MS)
    if not (ROOT / "benchmarks" / "results" / "paper" / "table1_clean.csv").is_file():
        expect(paper_page.locator(".qpviz-paper-message")).to_contain_text("clean preprocessing")


def test_live_rerun_shows_progress_and_its_rows_beside_the_paper(paper_page: Page):
    paper_page.locator(".qpviz-live-run button").click()
    status = paper_page.locator(".qpviz-live-status")
    expect(status).to_contain_text(re.compile(r"Running wine1|Done"), timeout=TIMEOUT_MS)
    expect(status).to_contain_text("Done: wine1", timeout=RUN_TIMEOUT_MS)
    assert paper_page.locator(".qpviz-live-progress progress").get_attribute("value") == "2"
    live = paper_page.locator(".qpviz-live-table table")
    expect(live).to_contain_text("Wine1 (130 x 13)")
    expect(live).not_to_contain_text("IonoS")
    assert live.locator("td.qpviz-within, td.qpviz-outside").count() == 6


def test_live_rerun_can_be_cancelled(paper_page: Page):
    paper_page.locator(".qpviz-live-rounds .bk-btn").filter(has_text="3").click()
    paper_page.wait_for_url(re.compile(r"[?&]rounds=3"), timeout=TIMEOUT_MS)
    paper_page.locator(".qpviz-live-run button").click()
    cancel = paper_page.locator(".qpviz-live-cancel button")
    expect(cancel).to_be_enabled(timeout=TIMEOUT_MS)
    cancel.click()
    expect(paper_page.locator(".qpviz-live-status")).to_contain_text("Cancelled after", timeout=TIMEOUT_MS)
    expect(paper_page.locator(".qpviz-live-run button")).to_be_enabled()


def test_shared_link_reopens_preprocessing_dataset_and_rounds(page: Page, app_url: str, console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url + "?prep=clean&dataset=pima&rounds=2")
    page.locator(".bk-tab").filter(has_text="Paper results").click(timeout=TIMEOUT_MS)
    page.locator(".qpviz-paper-table table").wait_for(timeout=TIMEOUT_MS)
    expect(page.locator(".bk-btn.bk-active").filter(has_text=re.compile(r"^clean$"))).to_have_count(1)
    expect(page.locator(".qpviz-live-rounds .bk-btn.bk-active")).to_have_text("2")
    expect(page.locator(".qpviz-live-dataset select")).to_have_value("pima")
