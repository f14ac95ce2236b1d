"""Browser latency of the Projection Explorer: slider key press -> updated numbers and plots.

Serves the real app (`python -m panel serve app`), opens it in Debian's Chromium (Playwright) and,
for every likelihood, presses ArrowRight/ArrowLeft on the cavity-mean slider ``--presses`` times.
In the page, a capturing keydown listener stamps the press; then every animation frame checks
the Bokeh document until (1) the numbers pane's text and (2) the density plot's title (which
changes in the same server message as the curves' data) have changed; one more animation frame
is waited so the new frame is painted. Prints the median and maximum per likelihood, in ms.

With ``--startup`` it first measures the app's cold start (every __pycache__ of this checkout
removed, so numba recompiles its cached kernels) and warm start: time from `panel serve` launch
to the first page showing its numbers.

Usage: .venv/bin/python benchmarks/bench_explorer_latency.py [--presses 12] [--startup]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402

sys.path.insert(0, str(ROOT))
from qpviz.explorer import LIKELIHOOD_NAMES  # noqa: E402

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


def measure_latency(playwright, presses: int) -> None:
    log = Path(tempfile.mkdtemp()) / "serve.log"
    process, url = serve_app(log)
    try:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1200})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)
        wait_loaded(page)
        print(f"{'likelihood':16s} {'numbers median':>15s} {'numbers max':>12s} {'plots median':>13s} {'plots max':>10s}  (ms, {presses} presses)")
        for name in LIKELIHOOD_NAMES:
            page.locator(".qpviz-likelihood select").select_option(name)
            page.wait_for_function(
                "name => [...Bokeh.documents[0].all_models].some(m => m.constructor.__name__ === 'Title'"
                " && (m.text || '').startsWith('(a) densities: ' + name + ','))",
                arg=name, timeout=120_000,
            )
            page.wait_for_timeout(300)  # let the map finish
            handle = page.locator(".qpviz-mean .noUi-handle")
            handle.focus()
            numbers, plots = [], []
            for i in range(presses):
                page.evaluate(ARM_JS)
                handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                result = page.evaluate("() => window.__latency")
                numbers.append(result["numbers"])
                plots.append(result["plots"])
            print(f"{name:16s} {statistics.median(numbers):15.1f} {max(numbers):12.1f} "
                  f"{statistics.median(plots):13.1f} {max(plots):10.1f}")
        browser.close()
        if errors:
            print("page errors:", *errors, sep="\n  ")
    finally:
        stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presses", type=int, default=12, help="key presses per likelihood")
    parser.add_argument("--startup", action="store_true", help="also measure cold and warm start")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        if args.startup:
            print(f"removed {clear_pycache()} __pycache__ folders under {ROOT}")
            measure_startup(playwright, "cold")
            measure_startup(playwright, "warm")
        measure_latency(playwright, args.presses)


if __name__ == "__main__":
    main()
