"""Browser latency of the Projection Explorer: slider key press -> updated numbers and plots.

Serves the real app (`python -m panel serve app`), opens it in Debian's Chromium (Playwright) and,
for every likelihood, presses ArrowRight/ArrowLeft on the cavity-mean slider ``--presses`` times.
In the page, a capturing keydown listener stamps the press; then every animation frame checks
the Bokeh document until (1) the numbers pane's text and (2) the density plot's title (which
changes in the same server message as the curves' data) have changed; one more animation frame
is waited so the new frame is painted. Prints the median and maximum per likelihood, in ms,
with the in-process compute time of one update beside them.

Then the same measurement of a minimal Panel page (one slider -> one Markdown table and one
400-point line plot), twice: with Bokeh's and Panel's defaults except the slider debounce (the
floor the explorer was first compared with), and with the explorer's server settings
(app/tcp_nodelay.py and the explorer sliders' 5 ms debounce), this machine's floor at its current
load for any page served like the explorer. The load average is printed before and after.

With ``--startup`` it first measures the app's cold start (every __pycache__ of this checkout
removed, so numba recompiles its cached kernels) and warm start: time from `panel serve` launch
to the first page showing its numbers.

The last line but one, ``ratio to minimal page: R``, is the slowest likelihood's plots median over
the plots median of the minimal page with the explorer's server settings, both from this run (the
goal of issue 22: R <= 1.5). The GP, Sparse, VSGP and page-switch benchmarks print the same line
against :func:`minimal_page_floors`.

Usage: .venv/bin/python benchmarks/bench_explorer_latency.py [--presses 12] [--startup]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from qpviz.explorer import ExplorerState, compute, likelihood_names  # noqa: E402

#: Arms window.__latency, a promise of {numbers, plots} in ms after the next keydown.
ARM_JS = """() => { window.__latency = new Promise((resolve, reject) => {
    // find the two watched models once: scanning all models every frame would itself cost frames
    const models = [...Bokeh.documents[0].all_models];
    const titles = models.filter(m => m.constructor.__name__ === 'Title' && (m.text || '').startsWith('(a) densities'));
    const title = titles[titles.length - 1];
    const numbers = models.find(m => (m.css_classes || []).includes('qpviz-numbers'));
    const title0 = title.text, numbers0 = numbers.text;
    let t0 = null, tNumbers = null;
    window.addEventListener('keydown', () => { t0 = performance.now(); }, {once: true, capture: true});
    const deadline = performance.now() + 20000;
    const frame = () => {
        const now = performance.now();
        if (now > deadline) { reject(new Error('no update within 20 s')); return; }
        if (t0 !== null) {
            if (tNumbers === null && numbers.text !== numbers0) tNumbers = now;
            if (tNumbers !== null && title.text !== title0) {
                requestAnimationFrame(() => resolve({numbers: tNumbers - t0, plots: performance.now() - t0}));
                return;
            }
        }
        requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
}); }"""


#: A minimal Panel app (one slider -> one Markdown table and one 400-point Bokeh line, same page
#: hooks as the explorer): its latency is this machine's floor for any Panel page. {settings} is
#: replaced by the server settings of the variant measured (see BASELINE_VARIANTS).
BASELINE_APP = """
import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
{settings}


slider = Slider(start=-8, end=8, step=0.05, value=0.5, css_classes=["qpviz-mean"])
numbers = pn.pane.Markdown("| m |\\n|---|\\n| 0.5 |", css_classes=["qpviz-numbers"])
x = np.linspace(-5, 5, 400)
source = ColumnDataSource(data={"x": x, "y": np.exp(-(x - 0.5) ** 2)})
fig = figure(height=330, sizing_mode="stretch_width", title="(a) densities: baseline, m = 0.50")
fig.line("x", "y", source=source)


def move(event):
    with pn.io.hold():
        source.data = {"x": x, "y": np.exp(-(x - event.new) ** 2)}
        numbers.object = f"| m |\\n|---|\\n| {event.new:.2f} |"
        fig.title.text = f"(a) densities: baseline, m = {event.new:.2f}"


slider.param.watch(move, "value")
pn.Row(slider, pn.Column(numbers, fig, sizing_mode="stretch_width")).servable()
"""

#: The app modules the minimal page's settings import (app/main.py enables them for the app).
APP_SETTINGS_MODULES = ("tcp_nodelay.py", "inline_arrays.py")
#: (row label, settings code) of the minimal page: Bokeh's defaults (slider debounce 0, as first
#: measured), and the app's server settings (TCP_NODELAY, arrays inside the message, the sliders'
#: 5 ms debounce: the floor of every page's ratio).
BASELINE_VARIANTS = (
    ("(minimal page)", "\n\nclass Slider(pn.widgets.FloatSlider):\n    _debounce = 0\n"),
    ("(minimal+app settings)",
     "import inline_arrays\nimport tcp_nodelay\n\ntcp_nodelay.enable()\ninline_arrays.enable()\n\n\n"
     "class Slider(pn.widgets.FloatSlider):\n    _debounce = 5\n"),
)


def wait_loaded(page, timeout_ms: int = 300_000) -> None:
    page.locator(".qpviz-numbers table").first.wait_for(timeout=timeout_ms)


def measure_startup(playwright, label: str) -> float:
    """Seconds from `panel serve` launch to the first page showing its numbers."""
    log = Path(tempfile.mkdtemp()) / "serve.log"
    start = time.perf_counter()
    process, url = serve_app(log)
    try:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url, timeout=300_000)
        wait_loaded(page)
        elapsed = time.perf_counter() - start
        browser.close()
    finally:
        stop(process)
    print(f"{label} start (serve launch -> numbers shown): {elapsed:.2f} s")
    return elapsed


def clear_pycache() -> int:
    removed = 0
    for cache in ROOT.rglob("__pycache__"):
        if ".venv" not in cache.parts:
            shutil.rmtree(cache, ignore_errors=True)
            removed += 1
    return removed


def compute_ms(name: str, repeats: int = 10) -> float:
    """Median in-process time of one cavity move's computation (explorer.compute), in ms."""
    state = ExplorerState(likelihood=name)
    lik = state.likelihood_object()
    compute(lik, state.y, state.cavity_mean, state.cavity_std)  # compile / warm up
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        compute(lik, state.y, state.cavity_mean + 0.05 * (i % 2), state.cavity_std)
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def press_and_measure(page, presses: int) -> tuple[list[float], list[float]]:
    """Latencies (numbers, plots) in ms of ``presses`` alternating arrow presses on the mean slider."""
    handle = page.locator(".qpviz-mean .noUi-handle")
    handle.focus()
    numbers, plots = [], []
    for i in range(presses):
        page.evaluate(ARM_JS)
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        result = page.evaluate("() => window.__latency")
        numbers.append(result["numbers"])
        plots.append(result["plots"])
    return numbers, plots


def row(name: str, numbers: list[float], plots: list[float], compute: str) -> str:
    p90 = statistics.quantiles(plots, n=10, method="inclusive")[-1]
    return (f"{name:22s} {statistics.median(numbers):15.1f} {max(numbers):12.1f} "
            f"{statistics.median(plots):13.1f} {p90:9.1f} {max(plots):10.1f} {compute:>8s}")


@contextmanager
def minimal_page_served(settings: str = BASELINE_VARIANTS[1][1]):
    """Serve BASELINE_APP with ``settings`` (default: the explorer's server settings) from a
    temporary folder that also holds copies of the app's server-setting modules; yields its URL."""
    folder = Path(tempfile.mkdtemp())
    (folder / "app").mkdir()
    (folder / "app" / "main.py").write_text(BASELINE_APP.replace("{settings}", settings))
    for module in APP_SETTINGS_MODULES:
        shutil.copy(ROOT / "app" / module, folder / "app" / module)
    process, url = serve_app(folder / "serve.log", cwd=folder)
    try:
        yield url
    finally:
        stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def measure_baseline(playwright, presses: int, label: str, settings: str) -> tuple[str, float]:
    """The same measurement on BASELINE_APP with ``settings``: (printed row, plots median)."""
    with minimal_page_served(settings) as url:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1200})
        page.goto(url)
        wait_loaded(page)
        numbers, plots = press_and_measure(page, presses)
        browser.close()
    return row(label, numbers, plots, "-"), statistics.median(plots)


def minimal_page_floors(browser, presses: int) -> tuple[float, float]:
    """Median ms from a key press on the minimal page's slider (served with the explorer's settings)
    to the last Bokeh document change it caused, and to the frame after it painted, timed as the GP,
    Sparse and VSGP benchmarks time their pages (benchmarks/browser_measure): the floors of their
    ratio lines."""
    from bench_gp_latency import nudge, run_case  # noqa: PLC0415 (it imports this module)
    from browser_measure import percentile  # noqa: PLC0415

    with minimal_page_served() as url:
        page = browser.new_page(viewport={"width": 1500, "height": 1200})
        times, painted = run_case(page, url, nudge(".qpviz-mean"), presses)
        page.close()
    return percentile(times, 50), percentile(painted, 50)


def floors_line(floors: tuple[float, float]) -> str:
    """The line the page benchmarks print for :func:`minimal_page_floors`' two medians."""
    return (f"minimal page (one slider, app settings), key press -> last change: median {floors[0]:.0f} ms, "
            f"-> painted: median {floors[1]:.0f} ms")


def ratio_line(latency_ms: float, floor_ms: float) -> str:
    """The one line the benchmarks print for benchmarks/check.py."""
    return f"ratio to minimal page: {latency_ms / floor_ms:.2f}"


def measure_latency(playwright, presses: int, baseline: bool) -> None:
    log = Path(tempfile.mkdtemp()) / "serve.log"
    process, url = serve_app(log)
    try:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1200})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)
        wait_loaded(page)
        medians = []
        print(f"{'likelihood':22s} {'numbers median':>15s} {'numbers max':>12s} {'plots median':>13s} {'plots p90':>9s} {'plots max':>10s}"
              f" {'compute':>8s}  (ms; {presses} presses; compute = server-side explorer.compute, in-process)")
        for name in likelihood_names():
            page.locator(".qpviz-likelihood select").select_option(name)
            page.wait_for_function(
                "name => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title'"
                " && (m.text || '').startsWith('(a) densities: ' + name + ','))",
                arg=name, timeout=120_000,
            )
            page.wait_for_timeout(300)  # let the map finish
            numbers, plots = press_and_measure(page, presses)
            medians.append(statistics.median(plots))
            print(row(name, numbers, plots, f"{compute_ms(name):.1f}"))
        browser.close()
        if errors:
            print("page errors:", *errors, sep="\n  ")
    finally:
        stop(process)
    if baseline:
        for label, settings in BASELINE_VARIANTS:
            text, floor = measure_baseline(playwright, presses, label, settings)
            print(text)
        print(ratio_line(max(medians), floor))  # floor: the last variant, the explorer's settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presses", type=int, default=12, help="key presses per likelihood")
    parser.add_argument("--startup", action="store_true", help="also measure cold and warm start")
    parser.add_argument("--no-baseline", action="store_true", help="skip the minimal-page comparison row")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} (latencies grow with the load)")

    with sync_playwright() as playwright:
        if args.startup:
            print(f"removed {clear_pycache()} __pycache__ folders under {ROOT}")
            measure_startup(playwright, "cold")
            measure_startup(playwright, "warm")
        measure_latency(playwright, args.presses, baseline=not args.no_baseline)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
