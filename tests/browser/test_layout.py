"""Every page fits the classroom's screens: 1024 x 768, 1280 x 720, 1400 x 1050 and 1920 x 1080,
normal and projector mode (the header's switch, ``?projector=true`` in the URL), in a real
Chromium.

Checked per page and screen: the page is no wider than the window, every Bokeh figure's plot
area (its frame) keeps a readable size, no plot title runs past its plot (each line of the
title measured with the title's own font), and no typeset formula runs past its column. The
colour bars' tick labels grow in projector mode. Images and HTML tables (Paper results' tables)
are checked too: none runs past the window unless it scrolls inside its own box.

The pages come from the dashboard's registry (app/pages.py): a new page is checked without an edit
here (its figures are found through the Bokeh document).
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from test_explorer_page import console_errors  # noqa: F401  (fails a test on any console error)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
from pages import PAGES, tab_slug  # noqa: E402

pytestmark = pytest.mark.browser

#: Tab titles of the pages to check: every registered page.
TABS = [info.title for info in PAGES]
#: Pages without Bokeh figures: what shows that the page has been drawn.
DRAWN_WITHOUT_FIGURES: dict[str, str] = {}  # (Paper results draws its Figure 1 with Bokeh now)
#: The classroom's screens (1400 x 1050: where the projector cut plot (a)'s title before).
VIEWPORTS = [(1024, 768), (1280, 720), (1400, 1050), (1920, 1080)]
#: Height of the header and the tabs in projector mode (px), above a page's first plot.
PROJECTOR_CHROME = 110
#: Smallest plot area (Bokeh frame) a reader can use, in CSS pixels.
MIN_FRAME_WIDTH = 220
MIN_FRAME_HEIGHT = 150
LOAD_MS = 90_000

#: Every rendered Bokeh figure: its title lines with the title's font, the frame (plot area) and
#: the figure's box in page coordinates. Title widths are measured with a canvas context in the
#: title's own font (the title is drawn on the figure's canvas, from the frame's left edge).
FIGURES_JS = """() => {
    const views = [];
    const walk = v => {
        if (!v) return;
        if (v.model && v.model.constructor.__name__ === 'Figure') views.push(v);
        for (const c of (v.child_views || [])) walk(c);
    };
    for (const v of Object.values(Bokeh.index)) walk(v);
    const ctx = document.createElement('canvas').getContext('2d');
    const out = [];
    for (const v of views) {
        const box = v.el.getBoundingClientRect();
        if (!v.el.isConnected || box.width === 0 || box.height === 0) continue;  // not on the active tab
        const title = v.model.title;
        let widest = 0;
        const text = title && title.text ? title.text : '';
        if (text) {
            ctx.font = `${title.text_font_style} ${title.text_font_size} ${title.text_font}`;
            for (const line of text.split('\\n')) widest = Math.max(widest, ctx.measureText(line).width);
        }
        const frame = v.frame.bbox;
        out.push({title: text, title_width: widest, frame_left: frame.left, frame_width: frame.width,
                  frame_height: frame.height, left: box.left, right: box.right, width: box.width, height: box.height});
    }
    return out;
}"""

#: Typeset formulas whose right edge passes the right edge of the pane that holds them (beyond
#: which they would run over the next column) and that cannot scroll there.
SPILLING_FORMULAS_JS = """() => {
    const out = [];
    const visit = root => {
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) visit(el.shadowRoot);
            if (!el.classList.contains('katex')) continue;
            const host = el.getRootNode().host;
            if (!host) continue;
            const r = el.getBoundingClientRect(), h = host.getBoundingClientRect();
            const scrolls = ['auto', 'scroll'].includes(getComputedStyle(host).overflowX);
            if (r.width > 0 && r.right > h.right + 1 && !scrolls) out.push(el.textContent.slice(0, 40));
        }
    };
    visit(document);
    return out;
}"""

#: Tables, images and canvases whose right edge passes the window's and that no box around them
#: scrolls (a wide table must scroll inside its own box, not widen or overflow the page).
SPILLING_BOXES_JS = """() => {
    const out = [];
    const parentOf = el => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
    const visit = root => {
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) visit(el.shadowRoot);
            if (!['TABLE', 'IMG', 'CANVAS'].includes(el.tagName)) continue;
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.right <= innerWidth + 1) continue;
            let scrolled = false;
            for (let p = parentOf(el); p && p !== document.documentElement; p = parentOf(p)) {
                const box = p.getBoundingClientRect();
                if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX) && box.right <= innerWidth + 1) {
                    scrolled = true;
                    break;
                }
            }
            if (!scrolled) out.push(`${el.tagName}.${el.className} right=${Math.round(r.right)}`);
        }
    };
    visit(document);
    return out;
}"""

#: Every element (shadow roots included) that is wider than its container, on the open tab:
#: - "cut": a box that hides or scrolls (overflow hidden, clip, auto, scroll) and whose content is
#:   wider than it (text cut, or hidden behind a scrollbar, e.g. a formula that has to scroll);
#: - "button": a button whose label is wider than the button ("MC" for "MCMC");
#: - "past parent": an element whose left or right edge passes its parent's content box (a label,
#:   a row of check boxes or a button running out of the control column, a legend over the controls);
#: - "word": a word wider than its text box (broken mid-word, "Preprocessi-ng", or running out).
#: Allowed (documented): Bokeh's plot internals (canvases, the frame that clips glyphs, drawn and
#: checked through FIGURES_JS), slider handles (they stick out of the track by design), KaTeX's
#: hidden MathML copy, and text inputs (a long typed value scrolls inside its box while editing).
CLIPPED_JS = """() => {
    const out = [];
    const parentOf = el => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
    const allowed = '.bk-Canvas, .bk-CartesianFrame, .katex-mathml, .noUi-handle';
    const ctx = document.createElement('canvas').getContext('2d');
    const name = el => {
        const cls = (typeof el.className === 'string' ? el.className : '').trim().split(/\\s+/).slice(0, 2).join('.');
        const text = (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
        return `${el.tagName.toLowerCase()}${cls ? '.' + cls : ''} "${text}"`;
    };
    const visit = root => {
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) visit(el.shadowRoot);
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            const s = getComputedStyle(el), p = parentOf(el);
            if (s.visibility === 'hidden' || el.closest(allowed) || ['CANVAS', 'INPUT', 'TEXTAREA'].includes(el.tagName)
                || (p && p.classList && p.classList.contains('bk-CartesianFrame'))) continue;
            if (['hidden', 'clip', 'auto', 'scroll'].includes(s.overflowX) && el.scrollWidth > el.clientWidth + 1)
                out.push(`cut (${s.overflowX}) ${el.scrollWidth} > ${el.clientWidth}: ${name(el)}`);
            else if (el.tagName === 'BUTTON' && el.scrollWidth > el.clientWidth + 1)
                out.push(`button ${el.scrollWidth} > ${el.clientWidth}: ${name(el)}`);
            if (p && p.getBoundingClientRect && !['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) {
                const ps = getComputedStyle(p), pr = p.getBoundingClientRect();
                // a table with collapsed borders ignores its padding
                const collapsed = p.tagName === 'TABLE' && ps.borderCollapse === 'collapse';
                const inset = side => collapsed ? 0 : parseFloat(ps[`border${side}Width`]) + parseFloat(ps[`padding${side}`]);
                if (pr.width > 0 && (r.right > pr.right - inset('Right') + 1 || r.left < pr.left + inset('Left') - 1))
                    out.push(`past parent [${Math.round(r.left)}, ${Math.round(r.right)}] outside `
                             + `[${Math.round(pr.left + inset('Left'))}, ${Math.round(pr.right - inset('Right'))}]: `
                             + `${name(el)} in ${name(p)}`);
            }
            const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join(' ');
            if (own.trim() && s.display !== 'inline' && el.clientWidth > 0) {
                ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
                const inner = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
                const widest = Math.max(...own.split(/\\s+/).filter(w => w).map(w => ctx.measureText(w).width));
                if (widest > inner + 1) out.push(`word ${Math.round(widest)} > ${Math.round(inner)}: ${name(el)}`);
            }
        }
    };
    visit(document);
    return out;
}"""

#: Font sizes (px) of the major tick labels of the colour bars of the figures on the open tab.
COLOUR_BAR_FONTS_JS = """() => {
    const out = [];
    const walk = v => {
        if (!v) return;
        const box = v.el ? v.el.getBoundingClientRect() : null;
        if (v.model && v.model.constructor.__name__ === 'Figure' && v.el.isConnected && box.width > 0)
            for (const side of [v.model.right, v.model.left, v.model.above, v.model.below])
                for (const m of side) if (m.constructor.__name__ === 'ColorBar') out.push(m.major_label_text_font_size);
        for (const c of (v.child_views || [])) walk(c);
    };
    for (const v of Object.values(Bokeh.index)) walk(v);
    return out;
}"""


#: Everything check_screen and the colour-bar test read: the layout has settled when it stays the same.
LAYOUT_JS = f"""() => [document.documentElement.scrollWidth, innerWidth, ({FIGURES_JS})(), ({SPILLING_BOXES_JS})(),
    ({SPILLING_FORMULAS_JS})(), ({CLIPPED_JS})(), ({COLOUR_BAR_FONTS_JS})()]"""
#: How long the layout must stay the same (fonts loaded) to count as settled; a figure's resize is
#: laid out in the next animation frames (the fixed 1500 ms waits this replaces took 3 min a run).
STEADY_MS = 400


def wait_for_steady_layout(page: Page) -> list:
    """Wait for the page's fonts, then until what the checks read stays the same for STEADY_MS;
    return it (LAYOUT_JS's list: the checks read the steady value instead of measuring again)."""
    page.evaluate("() => document.fonts.ready.then(() => true)")
    last, steady_since = None, 0.0
    end = time.monotonic() + LOAD_MS / 1000
    while time.monotonic() < end:
        now = page.evaluate(LAYOUT_JS)
        if now != last:
            last, steady_since = now, time.monotonic()
        elif time.monotonic() - steady_since >= STEADY_MS / 1000:
            return now
        page.wait_for_timeout(100)
    raise AssertionError(f"the layout did not settle within {LOAD_MS / 1000:g} s")


def open_tab(page: Page, app_url: str, tab: str, projector: bool) -> list:
    """Open ``tab`` by its link in the window's size; its steady layout (LAYOUT_JS's list)."""
    # opened by its link, not by a click on its tab: after a click the first tab's figures passed
    # the wait below while a slow page (Sparse's first fits) was still being built
    page.goto(app_url + f"?page={tab_slug(tab)}" + ("&projector=true" if projector else ""), timeout=LOAD_MS)
    expect(page.locator(".bk-tab.bk-active")).to_have_text(tab, timeout=LOAD_MS)
    if tab in DRAWN_WITHOUT_FIGURES:
        page.locator(DRAWN_WITHOUT_FIGURES[tab]).first.wait_for(timeout=LOAD_MS)
    else:
        # checked every 100 ms, not every animation frame: FIGURES_JS walks every view and measures
        # titles, work the renderer would otherwise repeat 60 times a second while it builds the page
        page.wait_for_function(f"() => ({FIGURES_JS})().length > 0 && ({FIGURES_JS})().every(f => f.frame_width > 0)",
                               timeout=LOAD_MS, polling=100)
    # the header's projector switch shows the mode the link asked for
    toggle = page.locator(".qpviz-projector .bk-btn")
    expect(toggle).to_have_count(1, timeout=LOAD_MS)
    if projector:
        expect(toggle).to_have_class(re.compile(r"\bbk-active\b"), timeout=LOAD_MS)
    else:
        expect(toggle).not_to_have_class(re.compile(r"\bbk-active\b"))
    return wait_for_steady_layout(page)  # fonts, KaTeX and the responsive figures


def px(size: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(px|pt|em)", size).groups()
    return float(value) * {"px": 1.0, "pt": 4 / 3, "em": 16.0}[unit]


#: The screen on which the colour bars' tick labels are compared (normal against projector mode).
COLOUR_BAR_SCREEN = (1280, 720)


@pytest.mark.parametrize("tab", TABS)
def test_page_fits_the_screen_and_its_colour_bar_labels_grow_in_projector_mode(page: Page, app_url: str,
                                                                               console_errors, tab):
    """Normal mode, then projector mode (each opened by its link): each screen in turn, the page
    loaded once per mode and the window resized (a reload per screen took about four times as
    long). The colour bars' tick labels are read on the same loads, at COLOUR_BAR_SCREEN: projector
    mode makes them at least 1.5 times as large (a separate test loaded every page twice more).

    A failed check of one mode does not hide the other mode's: the failures are collected per mode
    and screen and reported together."""
    range_warnings: list[str] = []  # Bokeh's "could not set initial ranges": a figure without data
    page.on("console", lambda m: range_warnings.append(m.text) if "could not set initial ranges" in m.text else None)
    failures: list[str] = []
    fonts: dict[bool, list[str]] = {}
    for projector in (False, True):
        mode = "projector" if projector else "normal"
        try:
            fonts[projector] = check_mode(page, app_url, tab, projector, failures)
        except AssertionError as exc:  # the page did not open in this mode
            failures.append(f"{mode}: {exc}")
    normal, projector = fonts.get(False), fonts.get(True)
    if normal and projector is not None:  # a page without colour bars has nothing to grow
        if not projector or min(map(px, projector)) < 1.5 * max(map(px, normal)):
            failures.append(f"colour bar labels do not grow 1.5 times in projector mode: {normal} -> {projector}")
    assert failures == [], "\n".join(failures)
    assert range_warnings == []


def check_mode(page: Page, app_url: str, tab: str, projector: bool, failures: list[str]) -> list[str]:
    """Open ``tab`` in one mode at the first screen and check every screen (a failed screen's
    message is added to ``failures``, the next screen still checked); return the colour bars' tick
    label font sizes at COLOUR_BAR_SCREEN."""
    mode = "projector" if projector else "normal"
    page.set_viewport_size({"width": VIEWPORTS[0][0], "height": VIEWPORTS[0][1]})
    layout = open_tab(page, app_url, tab, projector)  # steady at the first screen already
    fonts: list[str] = []
    for width, height in VIEWPORTS:
        if (width, height) != VIEWPORTS[0]:
            page.set_viewport_size({"width": width, "height": height})
            layout = wait_for_steady_layout(page)  # the responsive figures and the formulas re-flow
        if (width, height) == COLOUR_BAR_SCREEN:
            fonts = layout[6]
        try:
            check_screen(layout, tab, f"{width}x{height}")
            if projector and (width, height) == (1280, 720):
                # a projector's 1280 x 720: one plot with its legend (below it) fits the screen under
                # the header and the tabs (about 110 px in projector mode)
                for fig in layout[2]:
                    assert fig["height"] <= height - PROJECTOR_CHROME, (fig["title"].splitlines()[:1], fig["height"])
        except AssertionError as exc:
            failures.append(f"{mode}, {width}x{height}: {exc}")
    return fonts


def check_screen(layout: list, tab: str, screen: str) -> None:
    """The checks of one screen on its steady layout (LAYOUT_JS's list, measured once the page stood still)."""
    scroll_width, inner_width, figures, spilling_boxes, spilling_formulas, clipped, _ = layout
    assert scroll_width <= inner_width, f"{screen}: the page is {scroll_width} px wide in a {inner_width} px window"
    assert figures or tab in DRAWN_WITHOUT_FIGURES, screen
    assert spilling_boxes == [], screen
    for fig in figures:
        name = fig["title"].splitlines()[0] if fig["title"] else "untitled figure"
        assert fig["frame_width"] >= MIN_FRAME_WIDTH and fig["frame_height"] >= MIN_FRAME_HEIGHT, (screen, name, fig)
        assert fig["right"] <= inner_width + 1, (screen, name, fig)
        # the title starts at the frame's left edge; past the frame's right edge it runs under
        # the toolbar or off the canvas
        assert fig["title_width"] <= fig["frame_width"] + 2, (screen, name, fig)
    assert spilling_formulas == [], screen
    assert clipped == [], screen
