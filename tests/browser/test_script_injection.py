"""A shared link, a typed value or an uploaded CSV never runs script in the viewer's browser
(issue 25), and where the page shows such a value it shows it as literal text.

The cases are generated, so a new page, URL key, field or upload is covered without an edit here:

* every URL key that a page reads (``dashboard.url_keys()``: each page's declared keys, which its
  URL sync reads from; tests/app/test_safe_text.py checks that a page syncs no other key), given the
  payload in a link that opens the page;
* every visible text and number box of every page (found in the browser: every ``input`` of the
  opened page), typed the payload and Enter;
* every file upload of every page (each ``input[type=file]``), given a CSV whose file name, header
  and a cell hold the payload.

The payload calls ``window.qpvizRan`` when HTML runs it (an image's ``onerror``, an SVG's
``onload``, a ``javascript:`` link a click would follow). Each case asserts: the function never ran,
no element of the payload exists anywhere in the page (shadow DOMs included), and wherever the
page's text mentions the payload, it shows its characters literally.
"""
from __future__ import annotations

import re
import sys
import time
from functools import partial
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page

from pagetools import still, wait_ready
from test_hostile_inputs import VIEWS

pytestmark = pytest.mark.browser

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
import dashboard  # noqa: E402
import pages  # noqa: E402

#: Runs script if any page inserts it as HTML; short enough not to be shortened in a banner.
PAYLOAD = '<img src=x onerror=qpvizRan()><svg onload=qpvizRan()>'
#: The parts a page that shows the payload must show as they are.
LITERAL = "<img src=x onerror=qpvizRan()>"
MARKDOWN_PAYLOAD = "[link](javascript:qpvizRan())"
#: The Markdown payload for every key's link: Panel's own parsing ignores a query value that starts with
#: "[" or "{" and is not JSON, so a letter goes first here; the pages read such a value themselves
#: (app/link_query.py), and test_a_link_value_starting_with_a_bracket_is_refused_as_text gives one key
#: MARKDOWN_PAYLOAD itself.
LINK_MARKDOWN_PAYLOAD = "x" + MARKDOWN_PAYLOAD
TIMEOUT_MS = 90_000
#: A page has settled when its elements and texts (shadow DOMs included) have not changed this long.
QUIET_S = 1.5
#: The same, once the page shows what it was waited for (drawn, and its answer to a link: a link's
#: values are read when the page is built, so its banner comes with the first drawing), or once it
#: answered a typed value or an upload (changed).
ANSWERED_QUIET_S = 0.75

#: Installed before any page script: counts calls, so a payload that ran is seen.
INIT_JS = "window.qpvizRuns = 0; window.qpvizRan = () => { window.qpvizRuns += 1; };"

#: Every element and the text of the page, shadow roots included; the text of a style sheet only where
#: it holds the payload's name (Bokeh's and Panel's ~5 MB of shadow-DOM style sheets, sent whole,
#: took 0.2-0.4 s a call; every text the checks read holds ``qpvizRan``, or is no style sheet's).
DEEP_JS = """() => {
    const elements = [], texts = [];
    const walk = root => {
        for (const node of root.querySelectorAll('*')) {
            elements.push(node);
            if (node.shadowRoot) walk(node.shadowRoot);
        }
    };
    walk(document);
    for (const node of elements) {
        for (const child of node.childNodes)
            if (child.nodeType === 3 && child.textContent.trim()
                && (node.tagName !== 'STYLE' || child.textContent.includes('qpvizRan'))) texts.push(child.textContent);
    }
    const injected = elements.filter(e => (e.tagName === 'IMG' && e.getAttribute('src') === 'x')
        || e.hasAttribute('onerror') || e.hasAttribute('onload')
        || (e.tagName === 'A' && (e.getAttribute('href') || '').trim().toLowerCase().startsWith('javascript:')))
        .map(e => e.outerHTML.slice(0, 200));
    return {count: elements.length, texts: texts, injected: injected, runs: window.qpvizRuns};
}"""

#: Every visible typed box of the page: (index among all inputs, type).
BOXES_JS = """() => {
    const inputs = [];
    const walk = root => {
        for (const node of root.querySelectorAll('*')) {
            if (node.tagName === 'INPUT' || node.tagName === 'TEXTAREA') inputs.push(node);
            if (node.shadowRoot) walk(node.shadowRoot);
        }
    };
    walk(document);
    return inputs.map((e, i) => [i, (e.type || 'text').toLowerCase(), e.offsetParent !== null && !e.disabled]);
}"""

PAGES = dashboard.url_keys()
URL_CASES = [(slug, key) for slug, keys in PAGES.items() for key in keys]
#: What each page shows once drawn (a CSS selector or ``title:<prefix>``), from the views of
#: test_hostile_inputs.py (which fails until every registered page has one). Without it, a quiet
#: moment of a loaded server (load 10 on 2 cores) passed for a settled page: a page checked before
#: its boxes existed was skipped as having none, and a banner looked for before it was drawn was missed.
READY: dict[str, str] = {}
for _view in VIEWS.values():
    READY.setdefault(_view.query.split("&")[0].removeprefix("page="), _view.ready)
#: What the page a link names no page of shows: the first page, and its banner naming the refused page.
NO_PAGE_READY = (READY[next(iter(PAGES))], ".qpviz-page-link")


#: What settle() compares, computed in the page: the number of elements and a hash of the texts, style
#: sheets left out (they never change once drawn; hashing their ~5 MB took 16-120 ms a poll).
SIGNATURE_JS = """() => {
    let count = 0, texts = 0, hash = 0;
    const walk = root => {
        for (const node of root.querySelectorAll('*')) {
            count += 1;
            if (node.shadowRoot) walk(node.shadowRoot);
            if (node.tagName === 'STYLE' || node.tagName === 'SCRIPT') continue;
            for (const child of node.childNodes) {
                if (child.nodeType !== 3) continue;
                const text = child.textContent;
                for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
                hash = (Math.imul(hash, 31) + 1) | 0;
                texts += 1;
            }
        }
    };
    walk(document);
    return [count, texts, hash];
}"""


def deep(page: Page) -> dict:
    return page.evaluate(DEEP_JS)


def settle(page: Page, ready: tuple[str, ...] = (), quiet_s: float = QUIET_S) -> dict:
    """Wait until the page shows each of ``ready`` (see :data:`READY`), then until it stops changing
    for ``quiet_s`` (or TIMEOUT_MS has passed); returns its last deep view."""
    for mark in ready:
        wait_ready(page, mark, TIMEOUT_MS)
    still(lambda: page.evaluate(SIGNATURE_JS), quiet_s, TIMEOUT_MS / 1000, poll_s=0.25)
    return deep(page)


def answered(page: Page, act) -> dict:
    """Do ``act()`` (type, upload), wait for the page's answer (its elements or texts change; at most
    QUIET_S), then until it stands still for ANSWERED_QUIET_S; returns its last deep view. (A fixed
    QUIET_S after each act cost every typed box and file 1.5 s at least, and passed a page that had not
    answered yet for a settled one.)"""
    before = page.evaluate(SIGNATURE_JS)
    act()
    end = time.monotonic() + QUIET_S
    while page.evaluate(SIGNATURE_JS) == before and time.monotonic() < end:
        time.sleep(0.1)
    return settle(page, (), ANSWERED_QUIET_S)


def open_page(context, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    page.locator(".bk-tab.bk-active").first.wait_for(timeout=TIMEOUT_MS)
    return page


def assert_safe(view: dict) -> None:
    assert view["runs"] == 0, "the payload ran as script"
    assert view["injected"] == [], f"the payload became elements: {view['injected']}"
    for text in view["texts"]:
        if "qpvizRan" in text:
            shown = [p for p in (LITERAL, MARKDOWN_PAYLOAD, "<svg onload=qpvizRan()>") if p in text]
            assert shown or "…" in text, f"the payload is shown, but not as its characters: {text!r}"


@pytest.fixture(scope="module")
def context(browser: Browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(INIT_JS)
    yield context
    context.close()


def test_every_page_reads_url_keys():
    """The registry the cases come from names every page of the app, each with its keys."""
    assert len(PAGES) == len(dashboard.PAGES) >= 8
    assert all(len(keys) >= 2 for keys in PAGES.values())
    assert len(URL_CASES) >= 80


#: Links of one page opened at once (their sessions build and settle side by side).
BATCH = 4


def named_keys(view: dict, keys, payload: str) -> set[str]:
    """The keys among ``keys`` whose value the page names: ``key=`` and the payload's start (a link
    banner quoting the refused value, e.g. ``g1_n=<img src=x…`` or ``prep='<img src=x…'``)."""
    text = "\n".join(view["texts"])
    head = re.escape(payload[:8])
    return {key for key in keys if re.search(rf"(?<![\w]){re.escape(key)}='?{head}", text)}


def checked(page: Page, ready: tuple[str, ...]) -> tuple[dict, str | None]:
    """Let ``page`` show ``ready`` and settle, and close it; its last deep view and what went wrong
    (None if nothing)."""
    try:
        view = settle(page, ready, ANSWERED_QUIET_S)
        assert_safe(view)
        assert page.locator("a[href^='javascript']").count() == 0, "a javascript: link is shown"
        return view, None
    except AssertionError as exc:
        return {}, str(exc)
    finally:
        page.close()


def link_findings(context, app_url: str, slug: str, keys, payload: str) -> dict[str, str]:
    """{key: what went wrong} for links opening page ``slug`` with ``payload`` in each key.

    First one link gives the payload to every key of the page but ``page``: a key whose value the
    page then names (its banner quotes ``key=`` and the payload) was read, and its case is checked
    by that link. Every other key (a key the page did not name, and every key if that link shows the
    payload unsafely, to find which) gets a link of its own. The ``page`` key's link names no page
    (``?page=<payload>``), the same link for every page: test_a_page_key_value_is_shown_as_text opens it."""
    findings, alone = {}, []
    together = [key for key in keys if key != dashboard.PAGE_KEY]
    if together:
        query = f"page={slug}&" + "&".join(f"{key}={quote(payload)}" for key in together)
        view, wrong = checked(open_page(context, f"{app_url}?{query}"), (READY[slug],))
        named = set() if wrong else named_keys(view, together, payload)
        alone += [key for key in together if key not in named]
        print(f"{slug}: {len(named)} URL keys in one link given {payload!r}" + (f" ({wrong})" if wrong else ""))
    for start in range(0, len(alone), BATCH):
        pages = {}
        for key in alone[start:start + BATCH]:
            pages[key] = open_page(context, f"{app_url}?page={slug}&{key}={quote(payload)}")
        for key, page in pages.items():
            wrong = checked(page, (READY[slug],))[1]
            if wrong:
                findings[key] = wrong
    print(f"{slug}: {len(alone)} URL keys each in a link of its own: {alone}")
    return findings


@pytest.mark.parametrize("payload", [PAYLOAD, LINK_MARKDOWN_PAYLOAD], ids=["html", "markdown"])
@pytest.mark.parametrize("slug", list(PAGES))
def test_a_link_value_is_shown_as_text(context, app_url: str, slug: str, payload: str):
    """Every URL key of the page given the payload (in one link for every key the page names as
    refused, else one link each)."""
    assert link_findings(context, app_url, slug, PAGES[slug], payload) == {}


@pytest.mark.parametrize("payload", [PAYLOAD, LINK_MARKDOWN_PAYLOAD], ids=["html", "markdown"])
def test_a_page_key_value_is_shown_as_text(context, app_url: str, payload: str):
    """The ``page`` key (every page reads it) given the payload: one link, whichever page it opens."""
    assert all(dashboard.PAGE_KEY in keys for keys in PAGES.values())
    assert checked(open_page(context, f"{app_url}?page={quote(payload)}"), NO_PAGE_READY)[1] is None


@pytest.mark.parametrize("slug, key", [("gp-1-d", "g1_n")])
def test_a_link_value_starting_with_a_bracket_is_refused_as_text(context, app_url: str, slug: str, key: str):
    """A value starting with "[" that is no JSON (Panel's query parsing drops it) reaches the page: its
    banner names the key and shows the value as its characters, refused, with no link made of it."""
    view, wrong = checked(open_page(context, f"{app_url}?page={slug}&{key}={quote(MARKDOWN_PAYLOAD)}"),
                          (READY[slug], ".qpviz-link-alert"))
    assert wrong is None, wrong
    assert named_keys(view, [key], MARKDOWN_PAYLOAD) == {key}, [t for t in view["texts"] if key in t]
    said = [text for text in view["texts"] if f"{key}={MARKDOWN_PAYLOAD} (" in text]  # the refusal's words follow
    assert said and "values below were not used" in "\n".join(view["texts"]), said


def _typed_boxes(page: Page) -> list[tuple[int, str]]:
    return [(i, kind) for i, kind, visible in page.evaluate(BOXES_JS)
            if visible and kind in ("text", "number", "search", "textarea", "")]


def typed_values_are_safe(page: Page, slug: str) -> int:
    """Every visible, editable typed box of the page given the payload and Enter; returns how many."""
    boxes = _typed_boxes(page)
    inputs = page.locator("input, textarea")
    typed = 0
    for index, kind in boxes:
        box = inputs.nth(index)
        if not box.is_visible() or not box.is_editable():
            continue
        box.click()
        box.press("Control+a")
        # a number box refuses the letters keystroke by keystroke, as a user would see it
        box.press_sequentially(PAYLOAD if kind != "number" else PAYLOAD + "1")
        typed += 1
        assert_safe(answered(page, partial(box.press, "Enter")))
    print(f"{slug}: {typed} typed box(es) given the payload")
    return typed


def uploads_are_safe(page: Page, slug: str) -> int:
    """Every file upload of the page given CSVs with the payload in the file name, the header and a
    cell (and the Markdown payload in a cell); returns how many uploads the page has."""
    uploads = page.locator("input[type=file]")
    print(f"{slug}: {uploads.count()} upload(s) given {4 * uploads.count()} files")
    files = [
        (f"{PAYLOAD}.csv", b"x,y\n0,1\n1,-1\n2,1\n"),  # file name
        ("header.csv", f"x,{PAYLOAD}\n0,1\n1,-1\n2,1\n".encode()),  # header
        ("cell.csv", f"x,y\n0,1\n1,{PAYLOAD}\n2,1\n".encode()),  # cell
        ("markdown.csv", f"x,y\n0,{MARKDOWN_PAYLOAD}\n".encode()),
    ]
    for i in range(uploads.count()):
        for name, content in files:
            file = {"name": name, "mimeType": "text/csv", "buffer": content}
            view = answered(page, partial(uploads.nth(i).set_input_files, files=[file]))
            assert_safe(view)
            if name.startswith("<img"):  # the upload names its file: literally
                assert any(LITERAL in text for text in view["texts"]), "the file name is not shown as text"
    return uploads.count()


@pytest.mark.parametrize("slug", list(PAGES))
def test_a_typed_value_and_an_uploaded_csv_are_shown_as_text(context, app_url: str, slug: str):
    """One load of the page (a load each for the typed boxes and the uploads cost every page a
    second load, and a page without uploads loaded only to be skipped): the typed boxes first, then
    the uploads. Each part is checked even if the other fails; skipped only if the page has neither."""
    # the page's quiet link: GP 1-D's default MCMC reference reran for each typed number and uploaded
    # file, its progress kept every settle waiting for its end (30-48 s a call); no value typed here reaches it
    quiet = next(info.quiet_query for info in pages.PAGES if info.slug == slug)
    page = open_page(context, f"{app_url}?page={slug}" + (f"&{quiet}" if quiet else ""))
    failures, counts = [], {}
    try:
        settle(page, (READY[slug],))
        for part, check in (("typed boxes", typed_values_are_safe), ("uploads", uploads_are_safe)):
            try:
                counts[part] = check(page, slug)
            except AssertionError as exc:
                failures.append(f"{part}: {exc}")
    finally:
        page.close()
    assert failures == [], "\n".join(failures)
    if not any(counts.values()):
        pytest.skip(f"{slug} has no typed box and no file upload")
