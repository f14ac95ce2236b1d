"""Helpers shared by the browser tests and benchmarks/bench_explorer_latency.py: serve the real app
in a subprocess, launch Debian's Chromium, and read what the page shows.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 240  # a cold start compiles the numba kernels

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

#: JavaScript returning the texts of every Bokeh Title model in the page (plot titles are drawn
#: on a canvas, so they are read from the Bokeh document).
TITLES_JS = """() => {
    const out = [];
    if (!window.Bokeh) return out;
    for (const doc of Bokeh.documents)
        for (const model of doc.all_models)
            if (model.constructor.__name__ === "Title" && model.text) out.push(model.text);
    return out;
}"""

#: The page's text, shadow roots included (Bokeh and Panel draw inside them), for a failure message.
VISIBLE_TEXT_JS = """() => {
    const parts = [];
    const walk = (node) => {
        if (node.nodeType === Node.TEXT_NODE) { const t = node.textContent.trim(); if (t) parts.push(t); return; }
        if (node.nodeName === "STYLE" || node.nodeName === "SCRIPT") return;
        if (node.shadowRoot) walk(node.shadowRoot);
        for (const child of node.childNodes) walk(child);
    };
    walk(document.body);
    return parts.join(" | ");
}"""


#: Debian's Chromium builds, the lighter first: its headless-only shell, then the full browser (the
#: order scripts/test picks in, which also installs the shell where neither is there, and for CI where
#: only the full browser is: QPVIZ_HEADLESS_SHELL=install).
CHROMIUM_BUILDS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")


def chromium_path() -> str:
    """$CHROMIUM_PATH (scripts/test sets it), else the first of CHROMIUM_BUILDS that is there."""
    if "CHROMIUM_PATH" in os.environ:
        return os.environ["CHROMIUM_PATH"]
    return next((path for path in CHROMIUM_BUILDS if os.access(path, os.X_OK)), CHROMIUM_BUILDS[-1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_app(log_path: Path, cwd: Path = ROOT, app: str = "app",
              env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """Start `python -m panel serve <app>` in ``cwd`` on a free port (``env``: more environment
    variables); return the process and the app URL once it answers."""
    port = free_port()
    with open(log_path, "w") as log:  # the child keeps its own copy of the file descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "panel", "serve", app, "--port", str(port), "--address", "127.0.0.1",
             f"--allow-websocket-origin=127.0.0.1:{port}"],
            cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **(env or {})},
        )
    url = f"http://127.0.0.1:{port}/{Path(app).stem}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"panel serve exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                if response.status == 200:
                    return process, url
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    stop(process)
    raise RuntimeError(f"panel serve did not answer within {STARTUP_SECONDS} s:\n{log_path.read_text()}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def plot_titles(page) -> list[str]:
    return page.evaluate(TITLES_JS)


def title_starting(page, prefix: str) -> str:
    """The current title of the plot whose title starts with ``prefix`` (the newest one)."""
    matches = [t for t in plot_titles(page) if t.startswith(prefix)]
    return matches[-1] if matches else ""


def wait_ready(page, ready: str, timeout_ms: float, name: str = "the page") -> None:
    """Wait until ``page`` shows ``ready``: a CSS selector, or ``title:<prefix>`` of a plot title (drawn
    on a canvas, read from the Bokeh document); on a timeout, fail saying what the page shows instead
    (a note, a status, an error)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # noqa: PLC0415

    try:
        if ready.startswith("title:"):
            page.wait_for_function(f"p => window.Bokeh && Bokeh.documents.length && ({TITLES_JS})().some(t => t.startsWith(p))",
                                   arg=ready.removeprefix("title:"), timeout=timeout_ms)
        else:
            page.locator(ready).first.wait_for(timeout=timeout_ms)
    except PlaywrightTimeoutError as exc:
        raise AssertionError(f"{name} not ready within {timeout_ms} ms; the page shows:\n"
                             f"{page.evaluate(VISIBLE_TEXT_JS)[:3000]}") from exc


def wait_for_new_text(locator, old: str, timeout_ms: float = 60_000, ready=None) -> str:
    """Wait until ``locator.inner_text()`` differs from ``old`` (and ``ready(text)`` holds, if
    given: e.g. a table row has all its cells, not a moment of Bokeh rewriting the pane) and
    return the new text.

    (Playwright's ``not_to_have_text(old)`` compares the element's textContent, which has no tabs
    or newlines between cells, with ``old`` from ``inner_text()``: it never matches, so it would
    not wait at all.)
    """
    end = time.monotonic() + timeout_ms / 1000
    while True:
        text = locator.inner_text()
        if text != old and (ready is None or ready(text)):
            return text
        if time.monotonic() > end:
            raise AssertionError(f"the text stayed {old!r} for {timeout_ms / 1000:g} s")
        time.sleep(0.05)


def read_ready(locator, ready, timeout_ms: float = 60_000) -> str:
    """``locator.inner_text()`` once ``ready(text)`` holds: a table row read while Bokeh rewrites
    its pane can come back with cells missing."""
    end = time.monotonic() + timeout_ms / 1000
    while True:
        text = locator.inner_text()
        if ready(text):
            return text
        if time.monotonic() > end:
            raise AssertionError(f"the text was still {text!r} after {timeout_ms / 1000:g} s")
        time.sleep(0.05)


def whole_table(locator, rows: int | None = None, timeout_ms: float = 60_000) -> str:
    """The text of the HTML table ``locator`` once it has its header and ``rows`` rows (at least one
    if None), each line with as many cells as the header: a read while Bokeh rewrites the pane can
    come back empty or with cells missing (CI failures, issue 22.6)."""
    def whole(text: str) -> bool:
        lines = text.splitlines()
        return (len(lines) == rows + 1 if rows is not None else len(lines) >= 2) \
            and len({line.count("\t") for line in lines}) == 1

    return read_ready(locator, whole, timeout_ms)


def still(read, quiet_s: float, timeout_s: float, poll_s: float = 0.1) -> tuple[object, bool]:
    """Call ``read()`` until its value stays the same for ``quiet_s``; return the last value and
    whether it stood still before ``timeout_s`` ran out."""
    end = time.monotonic() + timeout_s
    last, since = read(), time.monotonic()
    while time.monotonic() < end:
        time.sleep(poll_s)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return last, True
    return last, False


def link_and_tab_fixtures(open_page, slug: str):
    """Two fixtures for a page's tests, ``open_page(page, link)`` opening the page (it clicks the
    page's tab): by its link ``?page=<slug>`` (the tab already open, its click changes nothing; no
    opening page is built first, which cost each test seconds) and by a link naming no page, then
    the tab's click (for the one test that keeps that path)."""
    import pytest  # noqa: PLC0415 - the benchmarks import this module without pytest's fixtures

    @pytest.fixture
    def by_link(page, app_url: str, console_errors):
        return open_page(page, f"{app_url}?page={slug}")

    @pytest.fixture
    def by_tab(page, app_url: str, console_errors):
        return open_page(page, app_url)

    return by_link, by_tab
