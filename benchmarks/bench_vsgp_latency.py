"""Browser latency of the VSGP page (issue 12), printed, not asserted: goal 250 ms at N = 500, M = 20.

Serves the real app (`python -m panel serve app`) and drives Debian's Chromium (Playwright) on
the circle preset, N = 500, M = 20, blur 0.5, full covariances, EP, 50 x 50 grid:

* **blur key press**: one step right each (a new VSGP fit every time; FITC comes from the cache);
* **length-scale key press**: one step right each (both fits new);
* **centre drag**: a centre is pressed and moved with the mouse, and the time runs from the
  button's release (when the point-draw tool sends the new positions) to the last Bokeh
  document change it caused; each drag goes to a new place (both fits new).

Each is timed from the action to the last document change it caused (browser_measure.measure,
quiet 400 ms); when the documents fell quiet before the numbers table changed (the point-draw
tool's own change at the release, then a server update more than 400 ms later), the wait goes on
until the table has changed and the page is quiet again, and the time of its last change counts.
An action after which the table never changes is counted as "no new fit". Each case is printed
twice: to the last change, and (", painted") to the frame after it painted
(browser_measure.last_painted). Prints median, 90th percentile and max per case, with the
machine's load average, and after each line ``ratio to minimal page: R``: its median over that of
a minimal Panel page timed the same way in the same run (bench_explorer_latency.minimal_page_floors).

``--server``: the same three changes made in-process on the page's model (refit + patching the
figures' sources, no browser, no websocket): the server's share of the latency.

Usage: .venv/bin/python benchmarks/bench_vsgp_latency.py [--presses 15]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_explorer_latency import floors_line, minimal_page_floors, ratio_line  # noqa: E402
from bench_gp_latency import nudge  # noqa: E402
from browser_measure import QUIET_MS, last_painted, measure, percentile, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop, wait_for_new_text  # noqa: E402
from test_vsgp_page import CENTRES_JS  # noqa: E402

QUERY = "?page=vsgp&vs_preset=circle&vs_n=500&vs_m=20&vs_blur=0.5&vs_shape=full&vs_method=ep"
TABLE_ROW = ".qpviz-vsgp-table tbody tr"


def drag_centre():
    """Press a centre (a different one each time) and move it 12 px right and 8 px up; the timed
    action is the release."""
    state = {"k": 0}

    def prepare(page):
        centres = page.evaluate(CENTRES_JS, "VSGP: p(y=+1|x)")
        start = centres[(7 * state["k"]) % len(centres)]
        state["k"] += 1
        page.mouse.move(start["px"], start["py"])
        page.mouse.down()
        page.mouse.move(start["px"] + 6, start["py"] - 4, steps=3)
        page.mouse.move(start["px"] + 12, start["py"] - 8, steps=3)

    return prepare, lambda page: page.mouse.up()


def run_case(page, url, prepare, action, presses):
    page.goto(url)
    wait_for_bokeh(page)
    page.locator(TABLE_ROW).first.wait_for(timeout=120_000)
    settle(page, 1500)
    times, painted, unchanged = [], [], 0
    for _ in range(presses):
        row = page.locator(TABLE_ROW).first
        before = row.inner_text()
        if prepare is not None:
            prepare(page)
        elapsed = measure(page, action)
        if row.inner_text() == before:  # quiet before the new fit arrived: wait for it
            try:
                wait_for_new_text(row, before, 30_000)
            except AssertionError:
                unchanged += 1
                continue
            page.wait_for_timeout(QUIET_MS)
            elapsed = page.evaluate("() => window.__qpvizChanges[window.__qpvizChanges.length - 1] - window.__qpvizT0")
        times.append(elapsed)
        painted.append(last_painted(page))
        page.wait_for_timeout(200)
    return times, painted, unchanged


def report(name, times, painted, unchanged, goal_ms, floors=None):
    """The case's line (to the last change) and the painted frame's ("<name>, painted"), each with its
    ratio to ``floors`` (the minimal page's: last change, painted)."""
    if not times:
        print(f"{name:52s} no valid sample ({unchanged} actions showed no new fit)", flush=True)
        return
    for k, (label, values) in enumerate(((name, times), (f"{name}, painted", painted))):
        print(f"{label:52s} median {percentile(values, 50):6.0f} ms  p90 {percentile(values, 90):6.0f} ms  "
              f"max {max(values):6.0f} ms  (goal {goal_ms} ms, n={len(values)}, no new fit shown: {unchanged}, "
              f"load {os.getloadavg()[0]:.2f})", flush=True)
        if floors is not None:
            print(ratio_line(percentile(values, 50), floors[k]), flush=True)


def measure_cases(page, url: str, presses: int, floors: tuple[float, float] | None = None) -> None:
    """Run and print every case (a failed case is printed, the others still run)."""
    prepare, release = drag_centre()
    for name, before, action in (
        ("VSGP, circle N=500 M=20, blur key (VSGP refit)", None, nudge(".qpviz-vsgp-blur")),
        ("VSGP, circle N=500 M=20, length-scale key (both)", None, nudge(".qpviz-vsgp-lengthscale")),
        ("VSGP, circle N=500 M=20, centre drag (both)", prepare, release),
    ):
        try:
            report(name, *run_case(page, url + QUERY, before, action, presses), 250, floors)
        except Exception as err:  # noqa: BLE001
            print(f"{name:52s} FAILED: {str(err).splitlines()[0]}", flush=True)


def server_side(presses: int) -> None:
    """The three changes on the page's model in-process (refit and draw into the figures' sources)."""
    import time  # noqa: PLC0415

    sys.path[:0] = [str(ROOT), str(ROOT / "app")]  # this checkout's qpviz and app, not an installed one
    import vsgp_page  # noqa: PLC0415

    page = vsgp_page.VSGPPage(preset="circle", n=500, m=20, blur=0.5, shape="full")
    page._build_views()
    model = page.model

    def step_blur(k):
        model.blur = round(0.5 + 0.1 * (k + 1), 1)

    def step_lengthscale(k):
        model.lengthscale = round(0.8 + 0.05 * (k + 1), 2)

    def drag(k):
        Z = model.shown[2].copy()
        Z[(7 * k) % len(Z)] += [0.05, 0.03]
        model.move_centres(Z[:, 0], Z[:, 1])

    for name, change in (("blur step (VSGP refit)", step_blur), ("length-scale step (both)", step_lengthscale),
                         ("centre moved (both)", drag)):
        times = []
        for k in range(presses):
            start = time.perf_counter()
            change(k)
            times.append(1000 * (time.perf_counter() - start))
        assert model.message == "", model.message
        print(f"server only, circle N=500 M=20, {name:30s} median {percentile(times, 50):6.0f} ms  "
              f"p90 {percentile(times, 90):6.0f} ms  max {max(times):6.0f} ms  (n={len(times)}, "
              f"load {os.getloadavg()[0]:.2f})", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=15, help="actions per case")
    parser.add_argument("--server", action="store_true", help="in-process page changes only (no browser)")
    args = parser.parse_args(argv)
    presses = args.presses
    if args.server:
        server_side(presses)
        return 0
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder:
        process, url = serve_app(Path(folder) / "serve.log")
        try:
            with sync_playwright() as pw:
                chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
                floors = minimal_page_floors(chromium, presses)
                print(floors_line(floors), flush=True)
                measure_cases(chromium.new_page(viewport={"width": 1500, "height": 1200}), url, presses, floors)
                chromium.close()
        finally:
            stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
