"""Every page's "Save figures (PNG)" and "Save figures (SVG)" buttons (app/figure_export.py) in a real
Chromium: the download is one image of the open tab's figures laid out as on screen.

Checked per page: the PNG's magic bytes and size (at least the largest figure's, the device pixel
ratio times the figures' common box), and every figure's region of the PNG has drawn (non-white)
pixels; the SVG is XML with an <svg> root of the same size holding one element per figure at the
figure's on-screen offset, each with drawn content (vector paths and text for a Bokeh figure).
"""
from __future__ import annotations

import io
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from pagetools import still
from test_explorer_page import console_errors  # noqa: F401  (fails a test on any console error)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
from pages import PAGES as REGISTERED  # noqa: E402

pytestmark = pytest.mark.browser

SVG_NS = "{http://www.w3.org/2000/svg}"
LOAD_MS = 90_000
#: page slug -> extra URL query: every registered page, opened without a long job (GP 1-D: EP and QP
#: only, so no MCMC job runs)
PAGES = {info.slug: f"&{info.quiet_query}" if info.quiet_query else "" for info in REGISTERED}
#: A pixel counts as drawn when a colour channel is below this (white is 1.0).
WHITE_THRESHOLD = 0.9
#: Smallest share of drawn pixels in a figure's region (axes, ticks and labels alone give more).
MIN_DRAWN_SHARE = 0.005
#: The page whose load, once its exports are checked, also checks that nothing drawn saves nothing.
NOTHING_DRAWN_PAGE = "variance-effects"

#: JavaScript defining ``figureViews()``: every Bokeh Figure/Plot view of the document and every
#: image shown in a pane's shadow DOM, open tab or not.
FIGURE_VIEWS = """const figureViews = () => {
    const plots = [], images = [];
    const walk = v => {
        if (!v) return;
        if (v.model && ['Figure', 'Plot'].includes(v.model.constructor.__name__)) { plots.push(v); return; }
        if (v.el && v.el.shadowRoot) images.push(...v.el.shadowRoot.querySelectorAll('img'));
        for (const c of (v.child_views || [])) walk(c);
    };
    for (const v of Object.values(Bokeh.index)) walk(v);
    return {plots, images};
};
const shownBox = el => {
    const r = el.getBoundingClientRect();
    return el.isConnected && r.width > 0 && r.height > 0 ? r : null;
};"""
#: The figures of the open tab (a hidden tab's have a 0 x 0 box), with their boxes in page coordinates.
SHOWN_FIGURES_JS = """() => {""" + FIGURE_VIEWS + """
    const {plots, images} = figureViews();
    return [...plots.map(v => ['plot', v.el]), ...images.map(img => ['image', img])]
        .map(([kind, el]) => [kind, shownBox(el)]).filter(([, r]) => r)
        .map(([kind, r]) => ({kind, left: r.left, top: r.top, width: r.width, height: r.height}));
}"""
#: Every figure of the open tab has a laid-out plot area (its frame).
DRAWN_JS = """() => {""" + FIGURE_VIEWS + """
    const shown = figureViews().plots.filter(v => shownBox(v.el));
    return shown.length > 0 && shown.every(v => v.frame.bbox.width > 0 && v.frame.bbox.height > 0);
}"""
#: Hide every figure, as on a tab whose figures are not laid out yet (each box 0 x 0).
HIDE_FIGURES_JS = """() => {""" + FIGURE_VIEWS + """
    for (const v of figureViews().plots) v.el.style.display = 'none';
}"""


def open_page(page: Page, app_url: str, slug: str) -> list[dict]:
    """Open the page by its URL, wait until its figures are drawn and return them."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}?page={slug}{PAGES[slug]}")
    page.wait_for_function(DRAWN_JS, timeout=LOAD_MS)
    figures = settled_figures(page)
    assert figures, slug
    return figures


def settled_figures(page: Page, quiet_s: float = 0.5) -> list[dict]:
    """The shown figures once the responsive figures have settled at their final size: their boxes
    the same for ``quiet_s`` (instead of a fixed wait of 1.5 s; most pages are still at once)."""
    figures, settled = still(lambda: page.evaluate(SHOWN_FIGURES_JS), quiet_s, LOAD_MS / 1000)
    assert settled, f"the figures kept moving for {LOAD_MS / 1000:g} s: {figures}"
    return figures


def save(page: Page, fmt: str, slug: str) -> bytes:
    button = page.locator(f".qpviz-export-{fmt} button").filter(has_text=f"Save figures ({fmt.upper()})")
    expect(button).to_have_count(1)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    download = info.value
    assert re.fullmatch(rf"qpviz-{slug}-\d{{8}}-\d{{6}}\.{fmt}", download.suggested_filename), download.suggested_filename
    with open(download.path(), "rb") as file:
        return file.read()


def common_box(figures: list[dict]) -> tuple[float, float, float, float]:
    left, top = min(f["left"] for f in figures), min(f["top"] for f in figures)
    right = max(f["left"] + f["width"] for f in figures)
    bottom = max(f["top"] + f["height"] for f in figures)
    return left, top, right - left, bottom - top


@pytest.mark.parametrize("slug", list(PAGES))
def test_png_and_svg_hold_every_figure_where_it_is_on_screen(page: Page, app_url: str, console_errors, slug):
    """One load of the page, both exports (saving changes nothing on the page; a load per format
    cost each page a second load): the PNG holds every figure where it is on screen, the SVG has
    one element per figure at its place. On NOTHING_DRAWN_PAGE, last (it hides the figures): nothing
    drawn saves nothing (a test of its own loaded that page again). Each part is checked even if
    another fails."""
    figures = open_page(page, app_url, slug)
    failures = []
    checks = [("png", png_holds_every_figure), ("svg", svg_has_one_element_per_figure)]
    if slug == NOTHING_DRAWN_PAGE:
        checks.append(("nothing drawn", lambda page, slug, figures: nothing_drawn_saves_nothing_and_says_so(page)))
    for part, check in checks:
        try:
            check(page, slug, figures)
        except AssertionError as exc:
            failures.append(f"{part}: {exc}")
    assert failures == [], "\n".join(failures)


def png_holds_every_figure(page: Page, slug: str, figures: list[dict]) -> None:
    data = save(page, "png", slug)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    ratio = page.evaluate("() => devicePixelRatio")
    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    height, width = pixels.shape[:2]
    left, top, box_width, box_height = common_box(figures)
    assert width >= max(f["width"] for f in figures) * ratio and height >= max(f["height"] for f in figures) * ratio
    assert abs(width - box_width * ratio) <= 2 and abs(height - box_height * ratio) <= 2, (width, height, box_width)
    drawn = (pixels[..., :3] < WHITE_THRESHOLD).any(axis=-1)
    for fig in figures:  # each figure's own region is drawn, so every figure is in its on-screen place
        x0, y0 = round((fig["left"] - left) * ratio), round((fig["top"] - top) * ratio)
        region = drawn[y0:y0 + round(fig["height"] * ratio), x0:x0 + round(fig["width"] * ratio)]
        assert region.size > 0 and region.mean() > MIN_DRAWN_SHARE, (fig, region.mean() if region.size else None)
    assert not drawn.all()  # a white background, not one filled block


def svg_has_one_element_per_figure(page: Page, slug: str, figures: list[dict]) -> None:
    root = ET.fromstring(save(page, "svg", slug))
    assert root.tag == f"{SVG_NS}svg"
    left, top, box_width, box_height = common_box(figures)
    assert abs(float(root.get("width")) - box_width) <= 1 and abs(float(root.get("height")) - box_height) <= 1
    placed = [child for child in root if "qpviz-figure" in (child.get("class") or "")]
    assert len(placed) == len(figures), (len(placed), figures)
    offsets = sorted((round(float(c.get("x"))), round(float(c.get("y")))) for c in placed)
    expected = sorted((round(f["left"] - left), round(f["top"] - top)) for f in figures)
    assert all(abs(a - b) <= 1 and abs(c - d) <= 1 for (a, c), (b, d) in zip(offsets, expected)), (offsets, expected)
    for child in placed:
        if child.tag == f"{SVG_NS}svg":  # a Bokeh figure in vectors: its axes' paths and tick labels
            assert len(child.findall(f".//{SVG_NS}path")) > 5 and child.findall(f".//{SVG_NS}text"), child.get("data-title")
        else:
            assert child.tag == f"{SVG_NS}image" and child.get("href").startswith("data:image/png;base64,"), child.tag
    # every plot stays vectors; a picture the page shows (Paper results' reproduced Figure 2) is embedded as itself
    kinds = sorted("plot" if child.tag == f"{SVG_NS}svg" else "image" for child in placed)
    assert kinds == sorted(f["kind"] for f in figures), (kinds, figures)


def nothing_drawn_saves_nothing_and_says_so(page: Page) -> None:
    # the figures not (yet) laid out: every figure's box is 0 x 0, as on a tab still loading
    page.evaluate(HIDE_FIGURES_JS)
    assert page.evaluate(SHOWN_FIGURES_JS) == []
    downloads = []
    page.on("download", lambda download: downloads.append(download))
    button = page.locator(".qpviz-export-png button")
    button.click()
    expect(button).to_have_text("No figure drawn yet")
    expect(button).to_have_text("Save figures (PNG)", timeout=10_000)  # the label comes back
    assert downloads == []


@pytest.mark.browser_context_args(device_scale_factor=2)
def test_a_high_density_screen_gives_twice_the_pixels_and_true_size_vectors(page: Page, app_url: str, console_errors):
    figures = open_page(page, app_url, "variance-effects")
    assert page.evaluate("() => devicePixelRatio") == 2
    _, _, box_width, box_height = common_box(figures)
    height, width = matplotlib.image.imread(io.BytesIO(save(page, "png", "variance-effects")), format="png").shape[:2]
    assert abs(width - 2 * box_width) <= 2 and abs(height - 2 * box_height) <= 2, (width, height, box_width, box_height)
    # Bokeh's SVG export drew each legend glyph (an <image> of its on-screen canvas) at the canvas's
    # pixel size, twice too large here: figure_export draws it at the legend's glyph size
    glyph_sizes = {tuple(size) for size in page.evaluate(
        "() => [...Bokeh.documents[0].all_models].filter(m => m.constructor.__name__ === 'Legend')"
        ".map(m => [m.glyph_width, m.glyph_height])")}
    root = ET.fromstring(save(page, "svg", "variance-effects"))
    images = [image for child in root if child.tag == f"{SVG_NS}svg" for image in child.iter(f"{SVG_NS}image")]
    assert images and glyph_sizes
    assert {(round(float(i.get("width"))), round(float(i.get("height")))) for i in images} <= glyph_sizes, glyph_sizes
