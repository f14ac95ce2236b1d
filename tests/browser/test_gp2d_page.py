"""The GP 2-D page in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagetools import TITLES_JS, link_and_tab_fixtures, plot_titles, read_ready, title_starting
from test_explorer_page import console_errors  # noqa: F401  (the fixture: fail on console errors)

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
#: The error message the page shows ('' if none), read from the Bokeh model of its alert pane.
ALERT_JS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => (m.css_classes || []).includes('qpviz-gp2d-error') && m.visible).map(m => m.text).join(' ')"""
#: Sum of the probability image of the EP figure (changes when the fit changes).
IMAGE_SUM_JS = """() => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.constructor.__name__ !== 'Figure' || !m.title || !m.title.text.startsWith('EP: p(y=+1|x)')) continue;
        for (const r of m.renderers) {
            const image = r.data_source && r.data_source.data && r.data_source.data.image;
            if (image) { let s = 0; for (const v of image[0]) s += v; return s; }
        }
    }
    return null;
}"""
#: Records every <style> in the shadow trees of the figures' renderers (glyphs, axes, grids, titles,
#: colour bars) with its text node and text; COUNT_CHANGED_JS then counts those written again with
#: the same text (their node replaced) and those whose text changed (app/steady_styles.py).
RECORD_STYLES_JS = """() => {
    const found = [];
    const walk = (root) => {
        for (const el of root.querySelectorAll('*')) {
            if (!el.shadowRoot) continue;
            if (/\\bbk-(GlyphRenderer|LinearAxis|Grid|ColorBar|Title|ContourRenderer)\\b/.test(el.className))
                for (const style of el.shadowRoot.querySelectorAll('style'))
                    found.push([style, style.firstChild, style.textContent]);
            walk(el.shadowRoot);
        }
    };
    walk(document);
    window.__qpvizStyles = found;
    return found.length;
}"""
COUNT_CHANGED_JS = """() => [
    window.__qpvizStyles.filter(([style, node, text]) => style.firstChild !== node && style.textContent === text).length,
    window.__qpvizStyles.filter(([style, , text]) => style.textContent !== text).length]"""


def wait_for_title(page: Page, prefix: str) -> str:
    try:
        page.wait_for_function(f"prefix => ({TITLES_JS})().some(text => text.startsWith(prefix))", arg=prefix,
                               timeout=TIMEOUT_MS)
    except PlaywrightTimeoutError:
        raise AssertionError(f"no title starts with {prefix!r}; the titles: {plot_titles(page)}, URL {page.url}") from None
    return title_starting(page, prefix)


def open_gp2d(page: Page, link: str) -> Page:
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(link)
    page.locator(".bk-tab", has_text="GP 2-D").click(timeout=TIMEOUT_MS)
    wait_for_title(page, "EP: p(y=+1|x),\nmoons N=100")
    return page


gp2d, gp2d_by_tab = link_and_tab_fixtures(open_gp2d, "gp-2-d")


def test_page_shows_every_default_view_then_a_preset_and_methods(gp2d_by_tab: Page):
    """The tab's click shows the default views; then, on the same load (a test of its own loaded the
    page again, ~10 s on 2 busy cores), another preset and another method."""
    gp2d = gp2d_by_tab
    titles = plot_titles(gp2d)
    for prefix in ("EP: p(y=+1|x)", "QP: p(y=+1|x)", "EP: latent var", "QP: latent var",
                   "var_QP − var_EP in ["):
        assert any(t.startswith(prefix) for t in titles), (prefix, titles)
    difference = title_starting(gp2d, "var_QP − var_EP")
    largest = float(re.search(r"in \[\S+, (\S+)\]", difference).group(1))
    assert largest <= 1e-8  # var_QP <= var_EP everywhere (QP paper Theorem 2)
    expect(gp2d.locator(".katex").first).to_be_visible()
    preset_and_methods(gp2d)


def test_slider_refits_and_redraws_a_click_adds_then_removes_a_point_then_projector_mode_enlarges_the_text(
        gp2d: Page):
    """One load of the page's link for three parts (each its own load before; they change the page, in
    this order: the click's point is placed where the default square holds no point, whatever the
    length-scale, and projector mode goes last)."""
    before = gp2d.evaluate(IMAGE_SUM_JS)
    expect(gp2d.locator(".qpviz-steady-styles")).to_have_attribute("data-steady", "on")
    assert gp2d.evaluate(RECORD_STYLES_JS) > 20  # five maps' renderers
    handle = gp2d.locator(".qpviz-gp2d-lengthscale .noUi-handle")
    handle.focus()
    handle.press("ArrowRight")  # length-scale 0.8 -> 0.85
    wait_for_title(gp2d, "EP: p(y=+1|x),\nmoons N=100, rbf σ_f²=4 ℓ=0.85")
    wait_for_title(gp2d, "QP: latent var v(x),\nmoons N=100, rbf σ_f²=4 ℓ=0.85")
    gp2d.wait_for_function(f"before => ({IMAGE_SUM_JS})() !== before", arg=before, timeout=TIMEOUT_MS)
    # the maps repainted in place: no renderer's stylesheet was written again with the same text (BokehJS
    # rewrote each one on every paint, and Chromium then recomputed the styles of every renderer)
    gp2d.evaluate("() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)))")
    assert gp2d.evaluate(COUNT_CHANGED_JS)[0] == 0
    gp2d.wait_for_url(re.compile(r"[?&]g2_ls=0\.85"), timeout=TIMEOUT_MS)
    assert gp2d.evaluate(ALERT_JS) == ""
    hovering_a_map_shows_its_value(gp2d)
    clicking_the_plot_adds_then_removes_a_point(gp2d)
    # projector mode, on the same load (a test of its own loaded the page; opened by its link, so the
    # only colour bars are this page's: the opening page's, built by a tab's click, would answer too)
    projector_mode_enlarges_titles_and_colour_bar_numbers(gp2d)
    # a new position is still written: a narrower window moves the renderers
    assert gp2d.evaluate(RECORD_STYLES_JS) > 20
    gp2d.set_viewport_size({"width": 1200, "height": 1200})
    gp2d.wait_for_function(f"() => ({COUNT_CHANGED_JS})()[1] > 0", timeout=TIMEOUT_MS)


def test_quick_slider_steps_reach_the_url_once_they_rest_as_one_history_entry(gp2d: Page):
    """The page's own changes are written into the URL once they have rested (link_query.WriteWhenRested):
    three quick steps are one entry of the browser's history (Back goes to before them), not three."""
    history = steady_history_length(gp2d)  # the opening's own URL write may still be on its way
    handle = gp2d.locator(".qpviz-gp2d-lengthscale .noUi-handle")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")  # 0.8 -> 0.85 -> 0.9 -> 0.95
        gp2d.wait_for_timeout(60)
    wait_for_title(gp2d, "EP: p(y=+1|x),\nmoons N=100, rbf σ_f²=4 ℓ=0.95")
    gp2d.wait_for_url(re.compile(r"[?&]g2_ls=0\.95"), timeout=TIMEOUT_MS)
    gp2d.wait_for_timeout(600)  # a later write would have come by now
    assert gp2d.evaluate("() => history.length") - history == 1


def steady_history_length(page: Page, quiet_ms: int = 1000) -> int:
    """The browser history's length once it has not changed for ``quiet_ms`` (more than the URL's
    rest, link_query.URL_DELAY_MS: a write of the page's opening lands within it; under CI's load
    one landed after the test had read the length)."""
    length, since = page.evaluate("() => history.length"), time.monotonic()
    while time.monotonic() - since < quiet_ms / 1000:
        page.wait_for_timeout(100)
        now = page.evaluate("() => history.length")
        if now != length:
            length, since = now, time.monotonic()
    return length


def preset_and_methods(gp2d: Page) -> None:
    gp2d.locator(".qpviz-gp2d-preset select").select_option("xor")
    wait_for_title(gp2d, "EP: p(y=+1|x),\nxor N=100")
    gp2d.get_by_role("button", name="VB", exact=True).click()
    wait_for_title(gp2d, "VB: p(y=+1|x),\nxor N=100")
    wait_for_title(gp2d, "VB: latent var v(x),\nxor")
    gp2d.wait_for_url(re.compile(r"g2_preset=xor"), timeout=TIMEOUT_MS)


def hovering_a_map_shows_its_value(gp2d: Page) -> None:
    """The maps are RGBA images coloured in the server; the hover reads their values beside them."""
    box = gp2d.locator(".qpviz-gp2d-proba-ep canvas").first.bounding_box()
    for share in (0.5, 0.45):  # a move onto the plot, then one within it
        gp2d.mouse.move(box["x"] + share * box["width"], box["y"] + 0.5 * box["height"])
    tooltip = gp2d.locator(".bk-tooltip-content", has_text="p(y=+1|x)").first
    expect(tooltip).to_have_text(re.compile(r"x1:\s*-?\d+\.\d\d\s*x2:\s*-?\d+\.\d\d\s*p\(y=\+1\|x\):\s*[01]\.\d{4}"),
                                 timeout=TIMEOUT_MS)
    gp2d.mouse.move(0, 0)  # off the plot: the tooltip goes


def clicking_the_plot_adds_then_removes_a_point(gp2d: Page) -> None:
    box = gp2d.locator(".qpviz-gp2d-proba-ep canvas").first.bounding_box()
    # about (1.2, 1.9): above the moons, where no preset point lies, and inside the default square
    # (a point near its edge would widen the plot, and the same pixel would then be elsewhere)
    x, y = box["x"] + 0.6 * box["width"], box["y"] + 0.3 * box["height"]
    gp2d.mouse.click(x, y)
    wait_for_title(gp2d, "EP: p(y=+1|x),\nmoons N=101, rbf σ_f²=4 ℓ=0.85")  # the slider's ℓ kept
    # the point itself, not the empty list the page wrote first
    gp2d.wait_for_url(re.compile(r"[?&]g2_added=%5B%5B"), timeout=TIMEOUT_MS)
    gp2d.goto(gp2d.url)  # the link reopens the clicked point
    gp2d.locator(".bk-tab", has_text="GP 2-D").click(timeout=TIMEOUT_MS)
    wait_for_title(gp2d, "EP: p(y=+1|x),\nmoons N=101")
    gp2d.wait_for_timeout(600)  # two clicks within Bokeh's double-tap interval make a double tap, not two taps
    gp2d.mouse.click(x, y)  # the same place again: the new point goes
    wait_for_title(gp2d, "EP: p(y=+1|x),\nmoons N=100")


def test_bad_link_opens_a_consistent_page_and_says_what_it_replaced(page: Page, app_url: str, console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url + "?g2_preset=circles&g2_var=0&g2_ls=nan")
    page.locator(".bk-tab", has_text="GP 2-D").click(timeout=TIMEOUT_MS)
    wait_for_title(page, "EP: p(y=+1|x),\ncircles N=100, rbf σ_f²=4 ℓ=0.8")
    banner = page.locator(".qpviz-link-alert")  # the app's one link banner (number_field.LinkValues)
    expect(banner).to_contain_text("g2_var=0", timeout=TIMEOUT_MS)
    expect(banner).to_contain_text("g2_ls=nan")
    page.wait_for_url(re.compile(r"[?&]g2_var=4(\.0)?(&|$)"), timeout=TIMEOUT_MS)  # the link now says what is shown



#: Most whole layouts of the page a projector switch may cause (measured: 1 with app/one_layout_per_patch.py, 24
#: without it).
LAYOUTS_PER_SWITCH = 3

#: Counts the page's whole layouts (BokehJS's compute_layout of a root view) in window.__qpvizLayouts.
COUNT_LAYOUTS_JS = """() => {
    const proto = Bokeh.require('models/layouts/layout_dom').LayoutDOMView.prototype;
    if (!proto.compute_layout.qpvizCounted) {
        const compute = proto.compute_layout;
        const counted = function (...args) {
            if (!(this.parent instanceof proto.constructor)) window.__qpvizLayouts += 1;
            return compute.apply(this, args);
        };
        counted.qpvizCounted = true;
        proto.compute_layout = counted;
    }
    window.__qpvizLayouts = 0;
}"""


def projector_mode_enlarges_titles_and_colour_bar_numbers(gp2d: Page) -> None:
    expect(gp2d.locator(".qpviz-one-layout")).to_have_attribute("data-batched", "on")
    gp2d.evaluate(COUNT_LAYOUTS_JS)
    gp2d.locator(".qpviz-projector .bk-btn").click()
    gp2d.wait_for_function(
        """() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'ColorBar'
                 && m.major_label_text_font_size === '19px')""",
        timeout=TIMEOUT_MS,
    )
    gp2d.wait_for_timeout(1000)  # the browser's own size reports and their answers
    # the page restyled in one message: laid out once for it (app/one_layout_per_patch.py), not once per
    # restyled control (~25 layouts, 2.7 s of the browser before)
    layouts = gp2d.evaluate("() => window.__qpvizLayouts")
    assert 1 <= layouts <= LAYOUTS_PER_SWITCH, layouts
    assert gp2d.evaluate("""() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title'
                            && m.text.startsWith('EP: p(y=+1|x)') && m.text_font_size === '22px')""")
    # "true", or "True" once a page's own change rewrote the query (Panel's Location re-serialises every
    # key it parsed; projector_mode.parse reads both)
    gp2d.wait_for_url(re.compile(r"projector=true", re.IGNORECASE), timeout=TIMEOUT_MS)


#: The page with 40 points (a short MCMC reference: 2-8 s on 2 busy cores).
SMALL_LINK = "?g2_n=40"


def test_mcmc_reference_runs_with_progress_then_draws_its_maps_and_distances(page: Page, app_url: str,
                                                                             console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url + SMALL_LINK)
    page.locator(".bk-tab", has_text="GP 2-D").click(timeout=TIMEOUT_MS)
    wait_for_title(page, "EP: p(y=+1|x),\nmoons N=40")
    expect(page.locator(".qpviz-gp2d-table")).to_contain_text("Choose MCMC", timeout=TIMEOUT_MS)
    page.get_by_role("button", name="MCMC", exact=True).click()
    status = page.locator(".qpviz-gp2d-status")
    expect(status).to_contain_text(re.compile(r"MCMC reference: (started|chain \d/4 done)"), timeout=TIMEOUT_MS)
    expect(page.locator(".qpviz-gp2d-cancel button")).to_be_enabled()
    wait_for_title(page, "MCMC: p(y=+1|x),\nmoons N=40")
    wait_for_title(page, "MCMC: latent var v(x),\nmoons N=40")
    expect(status).to_contain_text("MCMC reference done in")
    table = page.locator(".qpviz-gp2d-table")
    expect(table).to_contain_text("Monte Carlo error")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(3)  # EP, QP, MCMC
    ep_row = read_ready(rows.first, lambda text: text.count("\t") >= 2, TIMEOUT_MS)  # not a row being rewritten
    assert ep_row.startswith("■ EP") and float(ep_row.split("\t")[1]) < 0.05  # mean |p - p_MCMC|
    page.wait_for_url(re.compile(r"[?&]g2_methods=[^&]*mcmc"), timeout=TIMEOUT_MS)  # the link keeps the reference
    assert page.evaluate(ALERT_JS) == ""


def test_a_link_with_mcmc_starts_the_reference_when_the_tab_opens(page: Page, app_url: str,
                                                                  console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url + "?g2_n=30&g2_preset=xor&g2_methods=%5B%22ep%22%2C%22qp%22%2C%22mcmc%22%5D")
    page.locator(".bk-tab", has_text="GP 2-D").click(timeout=TIMEOUT_MS)
    wait_for_title(page, "EP: p(y=+1|x),\nxor N=30")
    wait_for_title(page, "MCMC: p(y=+1|x),\nxor N=30")
    expect(page.locator(".qpviz-gp2d-table")).to_contain_text("Monte Carlo error", timeout=TIMEOUT_MS)


#: The font sizes of the Projection Explorer's plot titles ("(a) densities ...", "(b) ...").
EXPLORER_TITLE_SIZES_JS = """() => !window.Bokeh || !Bokeh.documents.length ? [] : [...Bokeh.documents[0].all_models]
    .filter(m => m.constructor.__name__ === 'Title' && /^\\([a-d]'?\\) /.test(m.text || '')).map(m => m.text_font_size)"""


def test_the_projector_switch_restyles_the_page_in_view_and_another_page_when_it_is_shown(
        page: Page, app_url: str, console_errors):  # noqa: F811
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url)  # the Projection Explorer
    page.wait_for_function(f"() => ({EXPLORER_TITLE_SIZES_JS})().length >= 3", timeout=TIMEOUT_MS)
    normal = set(page.evaluate(EXPLORER_TITLE_SIZES_JS))
    page.locator(".bk-tab", has_text="GP 2-D").click()
    wait_for_title(page, "EP: p(y=+1|x)")
    projector_mode_enlarges_titles_and_colour_bar_numbers(page)
    # the Explorer, out of view, keeps its look until it is shown (the switch restyles the page in view)
    assert set(page.evaluate(EXPLORER_TITLE_SIZES_JS)) == normal
    page.locator(".bk-tab", has_text="Projection Explorer").click()
    page.wait_for_function(f"normal => ({EXPLORER_TITLE_SIZES_JS})().every(size => !normal.includes(size))",
                           arg=sorted(normal), timeout=TIMEOUT_MS)
    assert page.evaluate(ALERT_JS) == ""
