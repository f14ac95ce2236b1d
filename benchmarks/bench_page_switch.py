"""Browser latency of the app's whole-page changes, printed, not asserted: a tab opened for the first
time in a session, and the projector switch.

Serves the real app (`python -m panel serve app`) and drives Debian's Chromium (Playwright):

* **a tab opens**: a new session opened at the Projection Explorer, then a click on the tab of
  GP 1-D, Sparse or Paper results (the page is built in the server, sent, laid out and painted);
  one new session per repeat, after one warm-up session that waits for the server's background
  preparation (kernels, imports) to end;
* **projector switch**: on GP 2-D (N = 60), the header's switch clicked on and off in turn (the
  page in view restyled; app/projector_mode.py, app/one_layout_per_patch.py).

Each is timed from the click to the last Bokeh document change it caused (browser_measure.measure,
quiet 1.5 s: a page's later messages, e.g. its first fit, count) and to the frame after it painted
(", painted"). Prints median, 90th percentile and max per case with the load average, and after
each line ``ratio to minimal page: R``, its median over a minimal Panel page's key press timed the
same way in the same run (bench_explorer_latency.minimal_page_floors): for benchmarks/check.py.

This script on ``366963e``, before the changes it was written for (2026-11-28, medians, ms to the
last change): the projector switch 3279 (24 whole layouts of the page in the browser, 20 recounts of
the session's models in the server), a GP 1-D tab 5633, Sparse 2976, Paper results 2854; after them
(``ae8b617``, the same machine, back to back): 470, 1672, 1106, 1615.

Usage: .venv/bin/python benchmarks/bench_page_switch.py [--repeats 3] [--switches 6]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_explorer_latency import floors_line, minimal_page_floors  # noqa: E402
from bench_gp_latency import report  # noqa: E402
from browser_measure import last_painted, measure, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402

#: The tabs opened, each in a session of its own (the first tab of a session builds its page).
TABS = ("GP 1-D", "Sparse", "Paper results")
#: A page's later messages (a first fit, its table) come within this of each other.
QUIET_MS = 1500
TIMEOUT_MS = 60_000
#: Seconds the warm-up session waits for the server's background preparation after its first page.
PREPARATION_S = 10
VIEWPORT = {"width": 1500, "height": 1200}


def click(selector: str, has_text: str | None = None):
    def act(page):
        page.locator(selector, has_text=has_text).first.click()

    return act


def open_tabs(browser, url: str, repeats: int) -> dict[str, tuple[list, list]]:
    """tab -> (ms to the last change, ms to painted) of ``repeats`` first openings."""
    results = {tab: ([], []) for tab in TABS}
    for _ in range(repeats):
        for tab in TABS:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url)
            wait_for_bokeh(page)
            settle(page, 1500)
            times, painted = results[tab]
            times.append(measure(page, click(".bk-tab", tab), quiet_ms=QUIET_MS, timeout_ms=TIMEOUT_MS))
            painted.append(last_painted(page))
            page.close()
    return results


def switch_projector(browser, url: str, switches: int) -> tuple[list, list]:
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url + "?page=gp-2-d&g2_n=60")
    wait_for_bokeh(page)
    settle(page, 2000)
    times, painted = [], []
    for _ in range(switches):
        times.append(measure(page, click(".qpviz-projector .bk-btn"), quiet_ms=QUIET_MS, timeout_ms=TIMEOUT_MS))
        painted.append(last_painted(page))
    page.close()
    return times, painted


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="first openings of each tab")
    parser.add_argument("--switches", type=int, default=6, help="projector switches (on and off in turn)")
    parser.add_argument("--presses", type=int, default=12, help="key presses on the minimal page (the floor)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder:
        process, url = serve_app(Path(folder) / "serve.log")
        try:
            with sync_playwright() as pw:
                chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
                warm_up = chromium.new_page(viewport=VIEWPORT)
                warm_up.goto(url)
                wait_for_bokeh(warm_up)
                warm_up.wait_for_timeout(PREPARATION_S * 1000)
                warm_up.close()
                floors = minimal_page_floors(chromium, args.presses)
                print(floors_line(floors), flush=True)
                for tab, (times, painted) in open_tabs(chromium, url, args.repeats).items():
                    report(f"{tab} tab opens (first time in a session)", times, 3000, floors[0], painted, floors[1])
                times, painted = switch_projector(chromium, url, args.switches)
                report("GP 2-D, N=60, projector switch", times, 1000, floors[0], painted, floors[1])
                chromium.close()
        finally:
            stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
