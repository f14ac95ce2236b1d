"""The Projection Explorer in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagetools import TITLES_JS, plot_titles, title_starting

pytestmark = pytest.mark.browser

TIMEOUT_MS = 30_000
#: The error message the page shows ('' if none), read from the Bokeh model of the alert pane.
ALERT_JS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => (m.css_classes || []).includes('qpviz-error') && m.visible).map(m => m.text).join(' ')"""


@pytest.fixture
def console_errors(page: Page):
    """Every console error and uncaught page error; the test fails if there is any."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    yield errors
    assert errors == []


@pytest.fixture
def explorer(page: Page, app_url: str, console_errors) -> Page:
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(app_url)
    page.locator(".qpviz-numbers table").first.wait_for(timeout=60_000)
    wait_for_title(page, "(a) densities: probit")
    return page


def wait_for_title(page: Page, prefix: str, timeout_ms: int = TIMEOUT_MS) -> str:
    try:
        page.wait_for_function(f"prefix => ({TITLES_JS})().some(text => text.startsWith(prefix))", arg=prefix, timeout=timeout_ms)
    except PlaywrightTimeoutError:
        shown = page.evaluate(ALERT_JS)
        raise AssertionError(f"no plot title starts with {prefix!r}; titles: {plot_titles(page)}; alert: {shown!r}") from None
    return title_starting(page, prefix)


def numbers_text(page: Page) -> str:
    return page.locator(".qpviz-numbers").first.locator("table").first.inner_text()


def wait_for_numbers(page: Page, expected: str, timeout_ms: int = TIMEOUT_MS) -> None:
    """Wait until the first numbers table reads ``expected`` (as numbers_text gives it)."""
    for _ in range(timeout_ms // 100):
        if numbers_text(page) == expected:
            return
        page.wait_for_timeout(100)
    assert numbers_text(page) == expected


def test_page_loads_with_every_view(explorer: Page):
    titles = plot_titles(explorer)
    for prefix in ("(a) densities", "(b) quantile functions", "(b') Q-Q: σ_EP", "(d) var_QP / var_EP for probit"):
        assert any(t.startswith(prefix) for t in titles), (prefix, titles)
    assert "var_QP / var_EP" in numbers_text(explorer)
    expect(explorer.locator(".katex").first).to_be_visible()  # the formulas are typeset


def test_likelihood_and_slider_update_numbers_and_plots(explorer: Page):
    before_numbers = numbers_text(explorer)
    explorer.locator(".qpviz-likelihood select").select_option("step")
    wait_for_title(explorer, "(a) densities: step, y = 1, m = 0.50")
    wait_for_title(explorer, "(d) var_QP / var_EP for step")
    expect(explorer.locator(".qpviz-numbers table").first).not_to_have_text(before_numbers)
    after_likelihood = numbers_text(explorer)

    handle = explorer.locator(".qpviz-mean .noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    wait_for_title(explorer, "(a) densities: step, y = 1, m = 0.55")
    expect(explorer.locator(".qpviz-numbers table").first).not_to_have_text(after_likelihood)
    explorer.wait_for_url(re.compile(r"lik=step.*m=0\.55|m=0\.55.*lik=step"), timeout=TIMEOUT_MS)


def test_shared_link_reopens_the_same_view(explorer: Page, app_url: str):
    explorer.locator(".qpviz-likelihood select").select_option("poisson_exp")
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 1")
    handle = explorer.locator(".qpviz-std .noUi-handle")
    handle.focus()
    handle.press("ArrowLeft")
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 1, m = 0.50, s = 1.45")
    explorer.get_by_role("button", name="EP", exact=True).click()  # hide EP
    method_table = explorer.locator(".qpviz-numbers table").nth(1)
    expect(method_table).not_to_contain_text("EP", timeout=TIMEOUT_MS)
    explorer.wait_for_url(re.compile(r"[?&]s=1\.45"), timeout=TIMEOUT_MS)  # the URL follows the view
    explorer.wait_for_url(re.compile(r"[?&]show="), timeout=TIMEOUT_MS)
    shared = explorer.url
    assert shared.startswith(app_url + "?")
    explorer.goto(shared)
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 1, m = 0.50, s = 1.45")
    wait_for_title(explorer, "(d) var_QP / var_EP for poisson_exp")
    expect(method_table).to_contain_text("QP", timeout=TIMEOUT_MS)
    expect(method_table).not_to_contain_text("EP")


def test_bad_typed_value_shows_a_message_and_keeps_the_view(explorer: Page):
    before = title_starting(explorer, "(a) densities")
    box = explorer.locator(".qpviz-std-text input")
    box.fill("0")
    box.press("Enter")
    alert = explorer.locator(".qpviz-error")
    expect(alert).to_contain_text("cavity std must be > 0", timeout=TIMEOUT_MS)
    box.fill("lots")
    box.press("Enter")
    expect(alert).to_contain_text("must be a number", timeout=TIMEOUT_MS)
    assert title_starting(explorer, "(a) densities") == before
    box.fill("0.8")
    box.press("Enter")
    wait_for_title(explorer, "(a) densities: probit, y = 1, m = 0.50, s = 0.80")
    expect(alert).to_be_hidden()


def test_clicking_the_map_moves_the_cavity(explorer: Page):
    before = title_starting(explorer, "(a) densities")
    box = explorer.locator(".qpviz-map").bounding_box()
    explorer.mouse.click(box["x"] + 0.3 * box["width"], box["y"] + 0.4 * box["height"])
    explorer.wait_for_function(
        f"before => ({TITLES_JS})().some(text => text.startsWith('(a) densities') && text !== before)",
        arg=before,
        timeout=TIMEOUT_MS,
    )
    assert title_starting(explorer, "(a) densities") != before


def test_projector_mode_enlarges_the_plot_titles(explorer: Page):
    explorer.get_by_role("button", name="Projector mode (large fonts)").click()
    explorer.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' && m.text_font_size === '22px')",
        timeout=TIMEOUT_MS,
    )  # the page is loaded (fixture), so Bokeh.documents[0] exists
    explorer.wait_for_url(re.compile(r"projector=true"), timeout=TIMEOUT_MS)


def test_cloglog_from_the_registry_is_in_the_menu_and_computes(explorer: Page):
    before = numbers_text(explorer)
    explorer.locator(".qpviz-likelihood select").select_option("cloglog")
    wait_for_title(explorer, "(a) densities: cloglog, y = 1, m = 0.50")
    wait_for_title(explorer, "(d) var_QP / var_EP for cloglog")
    expect(explorer.locator(".qpviz-numbers table").first).not_to_have_text(before)
    assert explorer.evaluate(ALERT_JS) == ""
    explorer.wait_for_url(re.compile(r"[?&]lik=cloglog"), timeout=TIMEOUT_MS)


def test_step_eps_input_reaches_the_numbers_and_the_url(explorer: Page):
    explorer.locator(".qpviz-likelihood select").select_option("step")
    wait_for_title(explorer, "(a) densities: step, y = 1, m = 0.50")
    eps = explorer.locator(".qpviz-param-step_eps select")
    expect(eps).to_be_visible(timeout=TIMEOUT_MS)
    before = numbers_text(explorer)
    eps.select_option("0.2")
    expect(explorer.locator(".qpviz-numbers table").first).not_to_have_text(before, timeout=TIMEOUT_MS)
    explorer.wait_for_url(re.compile(r"[?&]step_eps=0\.2(&|$)"), timeout=TIMEOUT_MS)
    with_eps = numbers_text(explorer)
    explorer.goto(explorer.url)  # the shared link reopens step with eps = 0.2
    wait_for_title(explorer, "(a) densities: step, y = 1, m = 0.50")
    wait_for_numbers(explorer, with_eps)
    expect(explorer.locator(".qpviz-param-step_eps select")).to_have_value("0.2")
