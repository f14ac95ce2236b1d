"""The Projection Explorer in a real Chromium, served by `python -m panel serve app`."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagetools import TITLES_JS, plot_titles, title_starting, wait_for_new_text

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
    wait_for_title(page, "(a) densities: poisson_square, y = 10,\ncavity m = 1.00, s = 1.50")  # the opening view
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


def test_opening_view_ranges_beside_the_inputs_and_projector_mode(explorer: Page):
    """The opening view, read on one load (each check was a test of its own, each loading the page):
    every view is drawn, EP and QP stand apart and the page says why, the ranges stand beside the
    inputs; then (they change the page: last) another likelihood's range and projector mode."""
    titles = plot_titles(explorer)
    for prefix in ("(a) densities", "(b) quantile functions", "(b') Q-Q: σ_EP", "(d) var_QP / var_EP for poisson_square"):
        assert any(t.startswith(prefix) for t in titles), (prefix, titles)
    assert "var_QP / var_EP" in numbers_text(explorer)
    expect(explorer.locator(".katex").first).to_be_visible()  # the formulas are typeset

    # the opening view shows EP and QP apart and says why
    qq = title_starting(explorer, "(b') Q-Q")
    sigma_ep, sigma_qp = map(float, re.findall(r"= ([\d.]+)", qq))
    assert sigma_qp / sigma_ep < 0.8, qq
    why = explorer.locator(".qpviz-why")
    expect(why).to_contain_text("least-squares slope")
    expect(why).to_contain_text("sigma_QP <= sigma_EP")

    # the ranges stand beside the inputs
    expect(explorer.locator(".qpviz-mean")).to_contain_text("cavity mean m in [-8, 8]")
    expect(explorer.locator(".qpviz-std")).to_contain_text("cavity std s in [0.05, 8]")
    expect(explorer.locator(".qpviz-count")).to_contain_text("count y in [0, 1000]")
    explorer.locator(".qpviz-likelihood select").select_option("laplace")
    expect(explorer.locator(".qpviz-y")).to_contain_text("observation y in [-50, 50]")

    # projector mode enlarges the plot titles (and goes into the link)
    explorer.get_by_role("button", name="Projector mode").click()
    explorer.wait_for_function(
        "() => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title' && m.text_font_size === '22px')",
        timeout=TIMEOUT_MS,
    )  # the page is loaded (fixture), so Bokeh.documents[0] exists
    explorer.wait_for_url(re.compile(r"projector=true"), timeout=TIMEOUT_MS)


def test_likelihood_step_eps_and_slider_update_numbers_plots_and_the_link(explorer: Page):
    """Step from the menu, its eps input, then the mean slider, on one load (two tests loaded the page
    each, both choosing step): each changes the numbers and goes into the link, and the shared link
    reopens step with eps = 0.2 at m = 1.05, with the same numbers."""
    table = explorer.locator(".qpviz-numbers table").first
    before_numbers = numbers_text(explorer)
    explorer.locator(".qpviz-likelihood select").select_option("step")
    wait_for_title(explorer, "(a) densities: step, y = 1,\ncavity m = 1.00")
    wait_for_title(explorer, "(d) var_QP / var_EP for step")
    wait_for_new_text(table, before_numbers)
    after_likelihood = numbers_text(explorer)

    eps = explorer.locator(".qpviz-param-step_eps select")
    expect(eps).to_be_visible(timeout=TIMEOUT_MS)
    eps.select_option("0.2")
    wait_for_new_text(table, after_likelihood)
    explorer.wait_for_url(re.compile(r"[?&]step_eps=0\.2(&|$)"), timeout=TIMEOUT_MS)
    with_eps = numbers_text(explorer)

    handle = explorer.locator(".qpviz-mean .noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    wait_for_title(explorer, "(a) densities: step, y = 1,\ncavity m = 1.05")
    wait_for_new_text(table, with_eps)
    explorer.wait_for_url(re.compile(r"lik=step.*m=1\.05|m=1\.05.*lik=step"), timeout=TIMEOUT_MS)
    shown = numbers_text(explorer)

    explorer.goto(explorer.url)  # the shared link reopens step with eps = 0.2 at m = 1.05
    wait_for_title(explorer, "(a) densities: step, y = 1,\ncavity m = 1.05")
    wait_for_numbers(explorer, shown)
    expect(explorer.locator(".qpviz-param-step_eps select")).to_have_value("0.2")


def test_shared_link_reopens_the_same_view(explorer: Page, app_url: str):
    explorer.locator(".qpviz-likelihood select").select_option("poisson_exp")
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 10")
    handle = explorer.locator(".qpviz-std .noUi-handle")
    handle.focus()
    handle.press("ArrowLeft")
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 10,\ncavity m = 1.00, s = 1.45")
    explorer.get_by_role("button", name="EP", exact=True).click()  # hide EP
    method_table = explorer.locator(".qpviz-numbers table").nth(1)
    expect(method_table).not_to_contain_text("EP", timeout=TIMEOUT_MS)
    explorer.wait_for_url(re.compile(r"[?&]s=1\.45"), timeout=TIMEOUT_MS)  # the URL follows the view
    # the link shows EP hidden (a "show=" from an earlier write may still list EP under load)
    explorer.wait_for_url(re.compile(r"[?&]show=%5B%22QP%22%5D"), timeout=TIMEOUT_MS)
    shared = explorer.url
    assert shared.startswith(app_url + "?")
    explorer.goto(shared)
    wait_for_title(explorer, "(a) densities: poisson_exp, y = 10,\ncavity m = 1.00, s = 1.45")
    wait_for_title(explorer, "(d) var_QP / var_EP for poisson_exp")
    expect(method_table).to_contain_text("QP", timeout=TIMEOUT_MS)
    expect(method_table).not_to_contain_text("EP")


def test_bad_typed_value_shows_a_message_and_keeps_the_view(explorer: Page):
    before = title_starting(explorer, "(a) densities")
    box = explorer.locator(".qpviz-std-text input")
    box.fill("0")
    box.press("Enter")
    alert = explorer.locator(".qpviz-error:not(.qpviz-page-link)")  # the dashboard's page-link banner has the class too
    expect(alert).to_contain_text("cavity std s: '0' was not applied; type a number from 0.05 to 8; kept 1.5",
                                  timeout=TIMEOUT_MS)
    expect(box).to_have_value("1.5")  # the box shows the value kept
    box.fill("lots")
    box.press("Enter")
    expect(alert).to_contain_text("cavity std s: 'lots' was not applied", timeout=TIMEOUT_MS)
    assert title_starting(explorer, "(a) densities") == before
    box.fill("0.8")
    box.press("Enter")
    wait_for_title(explorer, "(a) densities: poisson_square, y = 10,\ncavity m = 1.00, s = 0.80")
    expect(alert).to_be_hidden()


def test_cloglog_from_the_registry_is_in_the_menu_and_computes(explorer: Page):
    before = numbers_text(explorer)
    explorer.locator(".qpviz-likelihood select").select_option("cloglog")
    wait_for_title(explorer, "(a) densities: cloglog, y = 1,\ncavity m = 1.00")
    wait_for_title(explorer, "(d) var_QP / var_EP for cloglog")
    wait_for_new_text(explorer.locator(".qpviz-numbers table").first, before)
    assert explorer.evaluate(ALERT_JS) == ""
    explorer.wait_for_url(re.compile(r"[?&]lik=cloglog"), timeout=TIMEOUT_MS)


# -- the classroom's findings (issue 10) ----------------------------------------------------------
#: A bad link, the consistent view the page must show instead (likelihood, y, m, s) and the exact
#: note of the banner.
BAD_LINKS = [
    ("lik=bogus", ("poisson_square", 10.0, 1.0, 1.5),
     "lik=bogus: not a likelihood (one of gaussian, probit, logistic, cloglog, step, poisson_square, poisson_exp, "
     "student_t, laplace); showing lik=poisson_square instead"),
    ("lik=poisson_exp&count=-3", ("poisson_exp", 10.0, 1.0, 1.5),
     "count=-3: the count y must be a whole number in [0, 1000]; showing count=10 instead"),
    ("lik=probit&m=-2&s=nan", ("probit", 1.0, -2.0, 1.5),
     "s=nan: the cavity std s must be a number in [0.05, 8]; showing s=1.5 instead"),
    ("lik=laplace&y=1e400&s=0.7", ("laplace", 10.0, 1.0, 0.7),
     "y=1e400: the observation y must be a number in [-50, 50]; showing y=10 instead"),
]
#: The texts of the visible link banner, read from its Bokeh model (Markdown rendered to HTML).
LINK_NOTE_JS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => (m.css_classes || []).includes('qpviz-link-note') && m.visible).map(m => m.text).join(' ')"""


@pytest.mark.parametrize("query, view, note", BAD_LINKS, ids=[q for q, _, _ in BAD_LINKS])
def test_a_bad_link_gives_one_consistent_page_and_says_what_it_replaced(page: Page, app_url: str, console_errors,
                                                                        query, view, note):
    from qpviz import explorer as computation

    lik, y, m, s = view
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(f"{app_url}?{query}")
    page.locator(".qpviz-numbers table").first.wait_for(timeout=60_000)
    wait_for_title(page, f"(a) densities: {lik}, y = {y:g},\ncavity m = {m:.2f}, s = {s:.2f}")
    wait_for_title(page, f"(d) var_QP / var_EP for {lik}, y = {y:g}")
    expect(page.locator(".qpviz-likelihood select")).to_have_value(lik)
    # every view of the same likelihood and values: the table's numbers are those of that view
    summary = computation.compute(computation.build_likelihood(lik, **computation.initial_params(lik)), y, m, s).summary
    table = numbers_text(page)
    for key in ("Z", "mean", "ratio"):
        assert f"{summary[key]:.6g}" in table, (key, table)
    assert all(t.startswith(f"(a) densities: {lik},") for t in plot_titles(page) if t.startswith("(a)"))
    page.wait_for_function(f"note => ({LINK_NOTE_JS})().includes(note)", arg=note, timeout=TIMEOUT_MS)
    assert page.evaluate(ALERT_JS) == ""
    page.wait_for_url(re.compile(rf"[?&]lik={lik}(&|$)"), timeout=TIMEOUT_MS)  # the URL now says what is shown
    replaced_key = note.split("=")[0]
    shown = note.rsplit("showing ", 1)[1].removesuffix(" instead")
    if replaced_key != "lik":
        page.wait_for_url(re.compile(rf"[?&]{re.escape(shown)}(&|$)"), timeout=TIMEOUT_MS)


def test_a_good_link_shows_no_banner(page: Page, app_url: str, console_errors):
    """Opened straight from the good link (the opening page first cost a load)."""
    page.set_viewport_size({"width": 1500, "height": 1200})
    page.goto(f"{app_url}?lik=student_t&student_t=nu%3D4%2C+scale%3D0.5&y=25&m=-2&s=3")
    page.locator(".qpviz-numbers table").first.wait_for(timeout=60_000)
    wait_for_title(page, "(a) densities: student_t, y = 25,\ncavity m = -2.00, s = 3.00")
    page.wait_for_url(re.compile(r"[?&]y=25(&|$)"), timeout=TIMEOUT_MS)
    assert page.evaluate(LINK_NOTE_JS) == ""


def map_ranges(page: Page) -> list[float]:
    """[x start, x end, y start, y end] of the map (d)'s axes."""
    return page.evaluate("""() => {
        const fig = [...Bokeh.documents[0].all_models].filter(m => m.constructor.__name__ === 'Figure'
            && m.title && m.title.text.startsWith('(d)')).pop();
        return [fig.x_range.start, fig.x_range.end, fig.y_range.start, fig.y_range.end];
    }""")


def test_the_map_zooms_and_pans_within_the_valid_cavities_a_click_moves_the_cavity_and_a_common_scale(
        explorer: Page):
    """The map (d) on one load (three tests loaded the page each): its zoom and pan stay within the
    valid cavities (first: it reads the opening ranges), a click on it moves the cavity, then (it
    changes the likelihood: last) the common colour scale fixes its colour range."""
    the_map_zooms_and_pans_only_within_the_valid_cavities(explorer)
    clicking_the_map_moves_the_cavity(explorer)
    the_common_colour_scale_fixes_the_maps_colour_range(explorer)


def the_map_zooms_and_pans_only_within_the_valid_cavities(explorer: Page) -> None:
    from qpviz import explorer as computation

    (m_lo, m_hi), (s_lo, s_hi) = computation.CAVITY_MEAN_SLIDER, computation.CAVITY_STD_SLIDER
    assert map_ranges(explorer) == pytest.approx([m_lo, m_hi, s_lo, s_hi])
    explorer.locator(".qpviz-map").scroll_into_view_if_needed()
    box = explorer.locator(".qpviz-map").bounding_box()
    explorer.mouse.move(box["x"] + 0.4 * box["width"], box["y"] + 0.85 * box["height"])  # near s = 0.05
    for _ in range(3):
        explorer.mouse.wheel(0, -300)  # zoom in: the wheel zoom is active
        explorer.wait_for_timeout(150)
    zoomed = map_ranges(explorer)
    assert zoomed[1] - zoomed[0] < m_hi - m_lo - 1e-6
    for _ in range(10):
        explorer.mouse.wheel(0, 600)  # zoom far out
        explorer.wait_for_timeout(100)
    x0, x1, y0, y1 = map_ranges(explorer)
    assert m_lo - 1e-9 <= x0 < x1 <= m_hi + 1e-9 and s_lo - 1e-9 <= y0 < y1 <= s_hi + 1e-9, (x0, x1, y0, y1)


def clicking_the_map_moves_the_cavity(explorer: Page) -> None:
    before = title_starting(explorer, "(a) densities")
    explorer.locator(".qpviz-map").scroll_into_view_if_needed()  # below the fold: a mouse click needs it on screen
    box = explorer.locator(".qpviz-map").bounding_box()
    explorer.mouse.click(box["x"] + 0.3 * box["width"], box["y"] + 0.4 * box["height"])
    explorer.wait_for_function(
        f"before => ({TITLES_JS})().some(text => text.startsWith('(a) densities') && text !== before)",
        arg=before,
        timeout=TIMEOUT_MS,
    )
    assert title_starting(explorer, "(a) densities") != before


def the_common_colour_scale_fixes_the_maps_colour_range(explorer: Page) -> None:
    mappers_js = """() => [...Bokeh.documents[0].all_models].filter(m => m.constructor.__name__ === 'LinearColorMapper')
        .map(m => [m.low, m.high])"""
    own = explorer.evaluate(mappers_js)
    assert own and all(low != 0.5 for low, _ in own)
    explorer.get_by_role("button", name="common [0.5, 1]").click()
    explorer.wait_for_function(f"() => ({mappers_js})().some(([low, high]) => low === 0.5 && high === 1)", timeout=TIMEOUT_MS)
    explorer.wait_for_url(re.compile(r"[?&]scale=common(&|$)"), timeout=TIMEOUT_MS)
    explorer.locator(".qpviz-likelihood select").select_option("student_t")  # another likelihood, the same scale
    wait_for_title(explorer, "(d) var_QP / var_EP for student_t")
    explorer.wait_for_function(f"() => ({mappers_js})().some(([low, high]) => low === 0.5 && high === 1)", timeout=TIMEOUT_MS)


def test_a_first_start_shows_the_explorer_at_once_then_moves_with_its_compiled_kernels(browser, tmp_path):
    """A server whose kernels are not compiled (an empty numba cache; issue 22.4): its start hook
    computes the opening view by NumPy quadrature while a child process compiles the kernels; the
    page shows its numbers, and once the kernels are ready (logged) a typed cavity moves them."""
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from pagetools import serve_app, stop  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
    import dashboard  # noqa: PLC0415

    log = tmp_path / "serve.log"
    process, url = serve_app(log, env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    page = browser.new_page(viewport={"width": 1500, "height": 1200})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    try:
        assert "opening view and map computed by NumPy quadrature; its kernels are compiling" in log.read_text()
        page.goto(url)
        wait_for_title(page, "(a) densities: poisson_square, y = 10,\ncavity m = 1.00, s = 1.50", timeout_ms=60_000)
        opening = numbers_text(page)
        assert "0.0160866" in opening  # Z of the opening view, as the kernels give it
        deadline = time.monotonic() + 300
        while dashboard.KERNELS_READY not in log.read_text():
            assert time.monotonic() < deadline, f"the kernels were not ready in 300 s:\n{log.read_text()[-2000:]}"
            time.sleep(0.5)
        box = page.locator(".qpviz-mean-text input")
        box.fill("0.3")
        box.press("Enter")
        wait_for_title(page, "(a) densities: poisson_square, y = 10,\ncavity m = 0.30, s = 1.50")
        assert numbers_text(page) != opening and errors == []
    finally:
        page.close()
        stop(process)
