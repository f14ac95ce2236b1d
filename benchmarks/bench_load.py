"""Load test: many concurrent browser sessions against one `panel serve app` (issue 10).

Serves the real app, records the server's resident memory, then opens ``--sessions`` browser
sessions (one Chromium, one context each, so each is its own Bokeh session) spread over every tab
(``?page=<slug>``). For ``--minutes`` each session loops: press an arrow key on a slider of its page
(alternating right/left so values stay in range) or click inside its first plot (on the GP pages a
click adds or removes a point), and measures the latency to the last document change
(browser_measure.measure). Memory "before" is read after one warm-up visit of every page (what a
server loads once: modules, compiled kernels, tables) and the closing of that session. At the end it prints per page and overall p50 / p95 latency, the
number of console errors and server errors (log lines with ERROR or Traceback), closes every
session, waits for the server to drop them and prints its memory before, during and after
(the goal: after within 20% of before).

Usage: .venv/bin/python benchmarks/bench_load.py [--sessions 20] [--minutes 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "app"))

from browser_measure import measure, percentile, rss_mib, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402


#: Bokeh discards a closed session's document after its unused-session lifetime (15 s) at the next
#: check (every 17 s): wait that long before reading the memory
CLEANUP_SECONDS = 40


def slugs(page, app_url) -> list[str]:
    from main import tab_slug  # noqa: PLC0415

    page.goto(app_url)
    page.locator(".bk-tab").first.wait_for(timeout=120_000)
    return [tab_slug(t.strip()) for t in page.locator(".bk-tab").all_inner_texts()]


def actions_for(page):
    """The page's interactive handles: slider handles to nudge and the first plot canvas to click."""
    handles = page.locator(".noUi-handle:visible")
    canvases = page.locator("canvas:visible")
    out = []
    count = handles.count()
    for i in range(min(count, 3)):
        def nudge(p, i=i, state={"right": True}):
            h = p.locator(".noUi-handle:visible").nth(i)
            h.focus()
            h.press("ArrowRight" if state["right"] else "ArrowLeft")
            state["right"] = not state["right"]
        out.append(("slider", nudge))
    if canvases.count():
        def click(p, state={"k": 0}):
            box = p.locator("canvas:visible").first.bounding_box()
            if box:
                state["k"] += 1
                x = box["x"] + box["width"] * (0.3 + 0.4 * ((state["k"] * 37) % 100) / 100)
                y = box["y"] + box["height"] * 0.5
                p.mouse.click(x, y)
        out.append(("click", click))
    return out


def session_loop(url, slug, stop_at, results, errors, lock):
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(f"{slug}: {m.text}"))
        page.on("pageerror", lambda e: errors.append(f"{slug}: {e}"))
        try:
            page.goto(f"{url}?page={slug}")
            wait_for_bokeh(page)
            settle(page, 1500)
            acts = actions_for(page)
            k = 0
            while time.monotonic() < stop_at and acts:
                kind, act = acts[k % len(acts)]
                k += 1
                try:
                    ms = measure(page, act, timeout_ms=20_000)
                    with lock:
                        results[slug].append(ms)
                except Exception as err:  # noqa: BLE001 - counted, the load goes on
                    with lock:
                        results[f"{slug}:timeouts"].append(1)
                        if "no document change" not in str(err):  # an action that changes nothing is counted above
                            errors.append(f"{slug}: {kind}: {str(err)[:120]}")
                page.wait_for_timeout(300)
        finally:
            context.close()
            browser.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--minutes", type=float, default=5.0)
    args = ap.parse_args()
    log = Path(tempfile.mkdtemp()) / "serve.log"
    process, url = serve_app(log)
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        with sync_playwright() as pw:  # warm-up: every page once (imports, kernels, tables load once per server)
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_page()
            pages = slugs(page, url)
            for slug in pages:
                page.goto(f"{url}?page={slug}")
                wait_for_bokeh(page)
                settle(page, 1500)
            browser.close()
        time.sleep(CLEANUP_SECONDS)
        before = rss_mib(process.pid)
        print(f"pages: {pages}; server RSS before sessions: {before:.0f} MiB; load {os.getloadavg()[0]:.2f}")
        results: dict[str, list[float]] = defaultdict(list)
        errors: list[str] = []
        lock = threading.Lock()
        stop_at = time.monotonic() + 60 * args.minutes
        threads = [threading.Thread(target=session_loop, args=(url, pages[i % len(pages)], stop_at,
                                                                results, errors, lock), daemon=True)
                   for i in range(args.sessions)]
        for t in threads:
            t.start()
            time.sleep(0.5)
        peak = before
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_mib(process.pid))
            time.sleep(2)
        time.sleep(CLEANUP_SECONDS)
        after = rss_mib(process.pid)
        server_errors = [line for line in log.read_text().splitlines() if "ERROR" in line or "Traceback" in line]
        print(f"{args.sessions} sessions x {args.minutes:g} min; load {os.getloadavg()[0]:.2f}")
        every = []
        for slug in pages:
            lat = results.get(slug, [])
            every += lat
            print(f"  {slug:22s} n={len(lat):5d}  p50={percentile(lat, 50):7.0f} ms  p95={percentile(lat, 95):7.0f} ms"
                  f"  no-change actions={len(results.get(slug + ':timeouts', []))}")
        print(f"  {'all':22s} n={len(every):5d}  p50={percentile(every, 50):7.0f} ms  p95={percentile(every, 95):7.0f} ms")
        print(f"console/page errors: {len(errors)}; server errors: {len(server_errors)}")
        for e in (errors + server_errors)[:20]:
            print("   ", e[:200])
        print(f"server RSS: before {before:.0f} MiB, peak {peak:.0f} MiB, after close {after:.0f} MiB "
              f"({100 * (after - before) / before:+.1f}%)")
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
