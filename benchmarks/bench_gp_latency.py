"""Browser latency of the GP pages (issue 10), printed, not asserted.

Serves the real app (`python -m panel serve app`) and drives Debian's Chromium (Playwright):

* **GP 1-D**, N = 200, EP and QP shown: a hyper-parameter slider key press (length scale, one step
  right each: a new fit every time) and a click on the predictive plot, the page's second figure (adds a point
  at a new place each time, or removes the one under the pointer), each timed from the
  action to the last Bokeh document change it caused (browser_measure.measure; goal 250 ms).
* **GP 2-D**, N = 200, 60 x 60 grid, EP and QP: a length-scale key press and a click on the first
  map (adds a point of the chosen class, or removes one; goal 1 s).
* **Fits from the cache:** the same length-scale key presses, alternately right and left, so that
  every press after the first two asks for a fit the page has already made (GP 1-D: the server's
  shared cache; GP 2-D: the session's). What remains is the page's own cost of a step (Panel's
  callbacks, the redraw, the reply, BokehJS applying it): the least a new fit can take.
* **During a long job:** a second browser session opens the Variance effects page on Pima with
  hyper-parameter optimisation (a fit of about a minute on a thread of the same server) and the
  GP 1-D and GP 2-D length-scale measurements are repeated in the first session meanwhile, on
  other data (seed 1: the first pass's GP 1-D fits are in the server's cache).

Each case is printed twice: to the last document change, and (", painted") to the frame after it
painted (browser_measure.last_painted: BokehJS paints the GP pages' figures in 40-60 ms of the
browser's main thread, which the last change does not include). Prints median, 90th percentile
and max per case, with the machine's load average, and after each line ``ratio to minimal page:
R``: its median over the median of a minimal Panel page (one slider,
bench_explorer_latency.minimal_page_floors) timed the same way in the same run.

Usage: .venv/bin/python benchmarks/bench_gp_latency.py [--presses 15] [--n 200] (``--n``: the points of
both pages; issue 22 quotes GP 1-D at N = 60)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_explorer_latency import floors_line, minimal_page_floors, ratio_line  # noqa: E402
from browser_measure import last_painted, measure, percentile, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402

EP_QP = quote('["ep", "qp"]')
GP1D = "?page=gp-1-d&g1_preset={preset}&g1_n={n}&g1_methods=" + EP_QP
GP2D = "?page=gp-2-d&g2_n={n}&g2_methods=" + EP_QP
LONG_JOB = "?page=variance-effects&ve_dataset=pima&ve_optimise=true"


def nudge(selector):
    """One step right per press: every press asks for a new fit (the pages cache fits they have
    seen, so going back and forth would measure the cache). Finding and focusing the slider's
    handle are Playwright's round trips (~13 ms, on the minimal page as on the others), not the
    page's work: they run in ``act.prepare``, before the timer starts, and the press is timed from
    the press itself, as a click is (:func:`click_plot`) and as the explorer's benchmark times its presses."""
    def prepare(page):
        page.locator(f"{selector} .noUi-handle").first.focus()

    def act(page):
        page.keyboard.press("ArrowRight")  # to the focused handle

    act.prepare = prepare
    return act


def back_and_forth(selector):
    """Like :func:`nudge`, but alternately one step right and one step left: from the third press
    on, every press asks for a fit the page has in its cache (the "fits from the cache" cases)."""
    state = {"k": 0}
    act = nudge(selector)

    def press(page):
        state["k"] += 1
        page.keyboard.press("ArrowRight" if state["k"] % 2 else "ArrowLeft")

    press.prepare = act.prepare
    press.first_new = 2  # presses that still fit (the first two values are new)
    return press


def click_plot(figure_index):
    """A click on the page's figure ``figure_index``. Finding the figure, scrolling it into view
    and reading its box are Playwright's round trips, not the page's work: they run in
    ``act.prepare``, before the timer starts (browser_measure.measure); timed from the click
    itself, as a key press is timed from the press."""
    state = {"k": 0, "box": None}

    def prepare(page):
        figure = page.locator(".bk-Figure:visible").nth(figure_index)
        figure.scroll_into_view_if_needed()  # a mouse click lands in the viewport only
        state["box"] = figure.bounding_box()

    def act(page):
        box = state["box"]
        state["k"] += 1
        # a new place each time (a point added there: new data, a new fit; the golden-ratio
        # sequence never repeats a place)
        x = box["x"] + box["width"] * (0.25 + 0.5 * ((state["k"] * 0.618034) % 1.0))
        # below the legend (top left of the plot), where a click adds a point or removes one
        page.mouse.click(x, box["y"] + box["height"] * 0.7)
        page.wait_for_timeout(350)  # two clicks within ~0.3 s would be a double tap

    act.prepare = prepare
    return act


def run_case(page, url, action, presses):
    """(ms to the last document change, ms to the frame after it painted) of ``presses`` actions."""
    page.goto(url)
    wait_for_bokeh(page)
    settle(page, 1500)
    times, painted = [], []
    skip = getattr(action, "first_new", 0)  # presses not timed (back_and_forth's first two)
    for _ in range(skip + presses):
        times.append(measure(page, action))
        painted.append(last_painted(page))
        page.wait_for_timeout(150)
    return times[skip:], painted[skip:]


def report(name, times, goal_ms, floor_ms, painted=None, painted_floor_ms=None):
    """The case's line and ratio; with ``painted``, the same for the painted frame ("<name>, painted")."""
    for label, values, floor in ((name, times, floor_ms), (f"{name}, painted", painted, painted_floor_ms)):
        if values is None:
            continue
        print(f"{label:58s} median {percentile(values, 50):6.0f} ms  p90 {percentile(values, 90):6.0f} ms  "
              f"max {max(values):6.0f} ms  (goal {goal_ms} ms, n={len(values)}, load {os.getloadavg()[0]:.2f})", flush=True)
        print(ratio_line(percentile(values, 50), floor), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presses", type=int, default=15)
    ap.add_argument("--n", type=int, default=200, help="points of the GP 1-D and GP 2-D data (default 200)")
    args = ap.parse_args()
    n = args.n
    process, url = serve_app(Path(tempfile.mkdtemp()) / "serve.log")
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            floor, painted_floor = floors = minimal_page_floors(browser, args.presses)
            print(floors_line(floors), flush=True)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            cases = [
                (f"GP 1-D, sharp step, N={n}, length-scale key", GP1D.format(preset=quote("sharp step"), n=n),
                 nudge(".qpviz-gp1d-lengthscale"), 250),
                (f"GP 1-D, step eps=0 (default), N={n}, length-scale key",
                 GP1D.format(preset=quote("step likelihood, eps = 0 (EP vs QP differ)"), n=n),
                 nudge(".qpviz-gp1d-lengthscale"), 250),
                (f"GP 1-D, sharp step, N={n}, click adds/removes a point", GP1D.format(preset=quote("sharp step"), n=n),
                 click_plot(1), 250),
                (f"GP 2-D, moons, N={n}, 60x60 grid, length-scale key", GP2D.format(n=n), nudge(".qpviz-gp2d-lengthscale"), 1000),
                (f"GP 2-D, moons, N={n}, 60x60 grid, click adds/removes a point", GP2D.format(n=n), click_plot(0), 1000),
                (f"GP 1-D, step eps=0 (default), N={n}, length-scale key, fits from the cache",
                 GP1D.format(preset=quote("step likelihood, eps = 0 (EP vs QP differ)"), n=n),
                 back_and_forth(".qpviz-gp1d-lengthscale"), 250),
                (f"GP 2-D, moons, N={n}, 60x60 grid, length-scale key, fits from the cache", GP2D.format(n=n),
                 back_and_forth(".qpviz-gp2d-lengthscale"), 1000),
            ]
            for name, query, action, goal in cases:
                try:
                    times, painted = run_case(page, url + query, action, args.presses)
                    report(name, times, goal, floor, painted, painted_floor)
                except Exception as err:  # noqa: BLE001 - one failed case is printed, the others still run
                    print(f"{name:58s} FAILED: {str(err).splitlines()[0]}", flush=True)
            # a long job in another session of the same server
            other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            other.goto(url + LONG_JOB)
            wait_for_bokeh(other)
            other.wait_for_timeout(3000)  # the fit is under way
            # other data (seed 1): the GP 1-D fits of the first pass are in the server's shared cache, and
            # the same presses again would time the cache (GP 2-D caches per session: a new page starts empty)
            for index, key in ((0, "g1_seed"), (3, "g2_seed")):
                name, query, action, goal = cases[index]
                times, painted = run_case(page, url + query + f"&{key}=1", action, args.presses)
                report(name + ", during a long job", times, goal, floor, painted, painted_floor)
            browser.close()
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
