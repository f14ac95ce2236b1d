"""Load test: many concurrent browser sessions against one `panel serve app` (issue 10).

Serves the real app, records the server's resident memory, then opens ``--sessions`` browser
sessions (one headless Chromium driven by Playwright's async API, one context each, so each is
its own user and Bokeh session) spread over every tab (``?page=<slug>``), started 0.5 s apart. For
``--minutes`` each session loops over its page's actions (:func:`actions_for`: sliders, clicks on
the GP plots, Variance effects' seed, Paper results' preprocessing) and measures the latency from
each action to the last document change it caused (browser_measure). Memory "before" is read
after one warm-up visit of every page (what a server loads once: modules, compiled kernels,
tables) and the closing of that session. At the end it prints per page and overall p50 / p95
latency, how many sessions loaded and how long loading took, the number of console errors and
server errors (log lines with ERROR or Traceback), closes every session, waits for the server to
drop them and prints its memory before, at its peak and after (the goal: after within 20% of before).

Usage: .venv/bin/python benchmarks/bench_load.py [--sessions 20] [--minutes 5] [--rounds 1]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "app"))

from browser_measure import ARM_JS, QUIET_MS, WAIT_JS, percentile, rss_mib, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402


#: Bokeh discards a closed session's document after its unused-session lifetime (15 s) at the next
#: check (every 17 s): wait that long before reading the memory
CLEANUP_SECONDS = 40
#: A session that has not shown its page after this long counts as failed to load.
LOAD_TIMEOUT_MS = 120_000


def slugs(page, app_url) -> list[str]:
    from pages import tab_slug  # noqa: PLC0415

    page.goto(app_url)
    page.locator(".bk-tab").first.wait_for(timeout=120_000)
    return [tab_slug(t.strip()) for t in page.locator(".bk-tab").all_inner_texts()]


#: Each page's query for the load: GP 1-D without the MCMC reference (a long job a slider would
#: restart every time), Variance effects without the hyper-parameter optimisation (a fit in ~1 s).
QUERY = {"gp-1-d": "&g1_methods=%5B%22ep%22%2C%22qp%22%5D", "variance-effects": "&ve_optimise=false"}


async def actions_for(page, slug):
    """The page's user actions, each ``async act(page)``: nudge a slider handle (alternating right
    and left, so values stay in range), click inside the first plot (on the GP pages a click adds
    or removes a point), type another split seed (Variance effects: seeds 0-4, so later visits hit
    the cache as a classroom's would), or flip the preprocessing (Paper results)."""
    out = []
    for i in range(min(await page.locator(".noUi-handle:visible").count(), 3)):
        async def nudge(p, i=i, state={"right": True}):
            handle = p.locator(".noUi-handle:visible").nth(i)
            await handle.focus()
            await handle.press("ArrowRight" if state["right"] else "ArrowLeft")
            state["right"] = not state["right"]
        out.append(("slider", nudge))
    if slug in ("gp-1-d", "gp-2-d"):
        async def click(p, state={"k": 0}, figure=1 if slug == "gp-1-d" else 0):
            # GP 1-D: the predictive plot (the second) takes clicks; below its legend (top left)
            target = p.locator(".bk-Figure:visible").nth(figure)
            await target.scroll_into_view_if_needed()
            box = await target.bounding_box()
            if box:
                state["k"] += 1
                x = box["x"] + box["width"] * (0.3 + 0.4 * ((state["k"] * 37) % 100) / 100)
                await p.mouse.click(x, box["y"] + box["height"] * (0.7 if slug == "gp-1-d" else 0.5))
        out.append(("click", click))
    if slug == "variance-effects":
        async def seed(p, state={"k": 0}):
            state["k"] += 1
            field = p.locator(".qpviz-ve-seed input").first
            await field.fill(str(state["k"] % 5))
            await field.press("Enter")
        out.append(("seed", seed))
    if slug == "paper-results":
        async def flip(p, state={"k": 0}):
            state["k"] += 1
            await p.locator(".bk-btn-group:visible").first.locator("button").nth(state["k"] % 2).click()
        out.append(("preprocessing", flip))
    return out


async def measure_async(page, act, quiet_ms=QUIET_MS, timeout_ms=20_000) -> float:
    """browser_measure.measure for the async API: action to the last document change (ms)."""
    await page.evaluate(ARM_JS)
    await act(page)
    return float(await page.evaluate(WAIT_JS, [quiet_ms, timeout_ms]))


async def session_loop(browser, url, slug, stop_at, results, errors, load_seconds):
    """One user: their own browser context (own cookies, own Bokeh session) on one page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.on("console", lambda m: m.type == "error" and errors.append(f"{slug}: {m.text}"))
    page.on("pageerror", lambda e: errors.append(f"{slug}: {e}"))
    try:
        started = time.monotonic()
        try:
            await page.goto(f"{url}?page={slug}{QUERY.get(slug, '')}", timeout=LOAD_TIMEOUT_MS)
            await page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=LOAD_TIMEOUT_MS)
            await page.locator(".bk-Figure:visible, .qpviz-paper-table:visible").first.wait_for(timeout=LOAD_TIMEOUT_MS)
        except Exception as err:  # noqa: BLE001 - a session that never loads is a failure, reported
            errors.append(f"{slug}: did not load: {str(err)[:120]}")
            return
        load_seconds.append(time.monotonic() - started)
        await page.wait_for_timeout(1500)
        acts = await actions_for(page, slug)
        k = 0
        while time.monotonic() < stop_at and acts:
            kind, act = acts[k % len(acts)]
            k += 1
            try:
                results[slug].append(await measure_async(page, act))
            except Exception as err:  # noqa: BLE001 - counted, the load goes on
                results[f"{slug}:no-change"].append(1)
                if "no document change" not in str(err):
                    errors.append(f"{slug}: {kind}: {str(err)[:120]}")
            await page.wait_for_timeout(300)
        # a user closes the tab once the page has settled: the page writes the URL after the
        # sliders rest (not counted as the update), and an update still on its way when the socket
        # closes makes tornado log a WebSocketClosedError
        await page.wait_for_timeout(2000)
    finally:
        await context.close()


async def drive(url, pages, sessions, minutes, process):
    """``sessions`` users spread over the pages, in one headless Chromium (one context each); returns
    (latencies per page, errors, load times, peak server memory)."""
    from playwright.async_api import async_playwright  # noqa: PLC0415

    results, errors, load_seconds = defaultdict(list), [], []
    peak = rss_mib(process.pid)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        stop_at = time.monotonic() + 60 * minutes
        tasks = []
        for i in range(sessions):
            tasks.append(asyncio.create_task(session_loop(browser, url, pages[i % len(pages)], stop_at, results,
                                                          errors, load_seconds)))
            await asyncio.sleep(0.5)
        while not all(t.done() for t in tasks):
            peak = max(peak, rss_mib(process.pid))
            await asyncio.sleep(2)
        for t in tasks:
            if t.exception() is not None:
                errors.append(f"session crashed: {t.exception()!r}"[:200])
        await browser.close()
    return results, errors, load_seconds, peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the load this many times on the same server, memory after each (a leak grows "
                         "every round; a cache or the allocator's high-water mark only once)")
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
                page.goto(f"{url}?page={slug}{QUERY.get(slug, '')}")
                wait_for_bokeh(page)
                settle(page, 1500)
            browser.close()
        time.sleep(CLEANUP_SECONDS)
        before = rss_mib(process.pid)
        print(f"pages: {pages}; server RSS before sessions: {before:.0f} MiB; load {os.getloadavg()[0]:.2f}")
        after_rounds = []
        for _ in range(args.rounds):
            results, errors, load_seconds, peak = asyncio.run(drive(url, pages, args.sessions, args.minutes, process))
            time.sleep(CLEANUP_SECONDS)
            after_rounds.append(rss_mib(process.pid))
        after = after_rounds[0]
        server_errors = [line for line in log.read_text().splitlines()
                         if any(mark in line for mark in ("ERROR", "Traceback", "failed with following error"))]
        print(f"{args.sessions} sessions x {args.minutes:g} min; load {os.getloadavg()[0]:.2f}")
        every = []
        for slug in pages:
            lat = results.get(slug, [])
            every += lat
            print(f"  {slug:22s} n={len(lat):5d}  p50={percentile(lat, 50):7.0f} ms  p95={percentile(lat, 95):7.0f} ms"
                  f"  no-change actions={len(results.get(slug + ':no-change', []))}")
        print(f"  {'all':22s} n={len(every):5d}  p50={percentile(every, 50):7.0f} ms  p95={percentile(every, 95):7.0f} ms")
        print(f"sessions loaded: {len(load_seconds)} of {args.sessions}; load time p50 "
              f"{percentile(load_seconds, 50):.1f} s, max {max(load_seconds, default=float('nan')):.1f} s")
        print(f"console/page errors: {len(errors)}; server errors: {len(server_errors)}")
        for e in (errors + server_errors)[:20]:
            print("   ", e[:200])
        print(f"server RSS: before {before:.0f} MiB, peak {peak:.0f} MiB, after close {after:.0f} MiB "
              f"({100 * (after - before) / before:+.1f}%)")
        if args.rounds > 1:
            print("server RSS after each round (latencies above: the last round; after close: the first): "
                  + ", ".join(f"{rss:.0f} MiB ({100 * (rss - before) / before:+.1f}%)" for rss in after_rounds))
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
