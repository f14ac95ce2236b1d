"""Per-session memory: open and close sessions of one page in turn and print the server's memory.

A page that leaks per session makes the resident memory grow with every round; caches and
one-off allocations (compiled kernels, tables, bounded fit caches) make it grow once and then
stay. Prints the server's RSS after every ``--every`` sessions (each opened, waited for, closed),
read after Bokeh has discarded the closed sessions.

Usage: .venv/bin/python benchmarks/bench_session_memory.py [--page gp-1-d] [--sessions 40] [--every 10]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import CLEANUP_SECONDS, QUERY  # noqa: E402
from browser_measure import rss_mib, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", default="gp-1-d")
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args()
    process, url = serve_app(Path(tempfile.mkdtemp()) / "serve.log")
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            readings = []
            for k in range(args.sessions + 1):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                page.goto(f"{url}?page={args.page}{QUERY.get(args.page, '')}")
                wait_for_bokeh(page)
                settle(page, 1000)
                context.close()
                if k % args.every == 0:
                    time.sleep(CLEANUP_SECONDS)
                    readings.append((k, rss_mib(process.pid)))
                    print(f"{args.page}: after {k:3d} sessions (+ warm-up) closed: server RSS {readings[-1][1]:.0f} MiB",
                          flush=True)
            browser.close()
        first, last = readings[0][1], readings[-1][1]
        per = (last - readings[1][1]) / max(1, readings[-1][0] - readings[1][0]) if len(readings) > 2 else float("nan")
        print(f"{args.page}: {100 * (last - first) / first:+.1f}% after {readings[-1][0]} sessions; "
              f"{per * 1024:.0f} KiB per session after the first {readings[1][0]}")
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
