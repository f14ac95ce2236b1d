"""Browser latency of the Sparse page (issue 12), printed, not asserted.

Serves the real app (`python -m panel serve app`) and drives Debian's Chromium (Playwright) on the
smooth regression preset at N = 500, M = 20, every method shown (the dense exact GP does not depend
on Z or alpha: cached after the first fit):

* **alpha key press**: one step right on the alpha slider (0.05; a new Power-EP fit each time);
* **handle drag**: a mouse drag of one pseudo-input by half a unit (a new Z each time: FITC,
  VFE and Power EP refit), at alpha ``--drag-alpha`` (default 0, the VFE end; 0.5 is where
  Power QP on "sine boundary" is slowest).

Times per action, from the key press or from the mouse release that ends the drag: **fits drawn** (the numbers table, sent in the same
message as the fits' new data, has changed in the browser: the moment of that change, not the next
animation frame's as before 2026-11-28) and **last change** (the documents
quiet for 400 ms: after a drag this includes the Power-EP evidence curve over 15 alphas, computed
in the job pool after the fits are drawn); and **fits drawn, painted**: the end of the animation
frame in which the fits were drawn, BokehJS's paint included (as browser_measure.last_painted for
the other pages). Goal (issue 12): fits drawn within 250 ms. After fits drawn and after fits
painted, ``ratio to minimal page: R``: the median over that of a minimal Panel page (one slider,
key press to its last document change, and to its frame painted:
bench_explorer_latency.minimal_page_floors) in the same run.

Usage: .venv/bin/python benchmarks/bench_sparse_latency.py [--presses 15] [--preset "sine boundary"]
[--projection qp] [--drag-alpha 0.5] (``--preset``: any preset of the page; the probit ones fit Power
EP / QP with tempered moments; ``--projection``: Power EP's projection, "ep" (KL, the page's default)
or "qp" (W2)).
Each refit starts from the sites of the page's previous fit (a warm start; qpviz/gpdemo/sparse_model.py).
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
from bench_gp_latency import nudge  # noqa: E402
from browser_measure import ARM_JS, QUIET_MS, TIMEOUT_MS, WAIT_JS, percentile, settle, wait_for_bokeh  # noqa: E402
from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop  # noqa: E402
from test_sparse_page import HANDLE_JS  # noqa: E402

PRESET = "smooth regression (N = 200)"


def page_url(preset: str, projection: str = "ep", alpha: float = 0.0) -> str:
    """The Sparse page with ``preset`` at N = 500, M = 20, ``alpha`` (0 for the key steps: they go
    right), Power EP projecting by ``projection``."""
    return (f"?page=sparse&sp_preset={quote(preset)}&sp_n=500&sp_m=20&sp_alpha={alpha:g}"
            f"&sp_proj={projection}")


#: The numbers table's text (its HTML model), read before the action.
NUMBERS_JS = """() => { for (const m of Bokeh.documents[0].all_models)
    if ((m.css_classes || []).includes('qpviz-sp-numbers')) return m.text; return null; }"""
#: Notes the moment the numbers table's text changes (window.__qpvizNumbersAt; hooked once per page).
NUMBERS_HOOK_JS = """() => {
    if (window.__qpvizNumbersHooked) return;
    window.__qpvizNumbersHooked = true;
    for (const doc of Bokeh.documents)
        doc.on_change((ev) => {
            if (ev && ev.model && ev.attr === 'text' && (ev.model.css_classes || []).includes('qpviz-sp-numbers'))
                window.__qpvizNumbersAt = performance.now();
        });
}"""
#: [ms from the arming to the change of the numbers table away from ``before`` (the message with the
#: new fits applied), ms to the end of the next animation frame's callbacks, BokehJS's paint of the new
#: fits among them (a timer set in the frame fires after them; BokehJS asked for the frame when the
#: message came, before this poll did)]
FITS_DRAWN_JS = """([before, timeoutMs]) => new Promise((resolve, reject) => {
    const t0 = window.__qpvizT0;
    const tick = () => {
        const now = performance.now();
        if ((""" + NUMBERS_JS + """)() !== before) {
            const at = window.__qpvizNumbersAt >= t0 ? window.__qpvizNumbersAt : now;
            setTimeout(() => resolve([at - t0, performance.now() - t0]), 0);
            return;
        }
        if (now - t0 > timeoutMs) { reject(new Error('the numbers did not change')); return; }
        requestAnimationFrame(tick);
    };
    tick();
})"""


#: One step right of alpha, timed from the press (its handle is focused before the timer).
alpha_step = nudge(".qpviz-sp-alpha")


def drag_handle():
    state = {"k": 0}

    def act(page) -> None:
        state["k"] += 1
        index = (3 * state["k"]) % 20
        start = page.evaluate(HANDLE_JS, [index])
        # half a unit (about 20 px: a shorter move is a tap, which selects the handle), never the same Z twice
        dx = (0.5 if state["k"] % 2 else -0.4) * start["step"]
        page.mouse.move(start["x"], start["y"])
        page.mouse.down()
        page.mouse.move(start["x"] + dx / 2, start["y"], steps=2)
        page.mouse.move(start["x"] + dx, start["y"], steps=2)
    return act


def release(page) -> None:
    """The end of a drag: the pseudo-input is sent and the fits follow."""
    page.mouse.up()


def measure_both(page, action) -> tuple[float, float, float]:
    """(fits drawn, last change, fits painted) in ms after a key press, or after the release ending a
    drag (the drag's moves happen before the clock starts: the page refits when a drag ends)."""
    before = page.evaluate(NUMBERS_JS)
    if action is alpha_step:
        alpha_step.prepare(page)
    else:
        action(page)  # press and move
        action = release
    page.evaluate(NUMBERS_HOOK_JS)
    page.evaluate(ARM_JS)
    action(page)
    drawn, painted = page.evaluate(FITS_DRAWN_JS, [before, TIMEOUT_MS])
    last = float(page.evaluate(WAIT_JS, [QUIET_MS, TIMEOUT_MS]))
    return float(drawn), last, float(painted)


def report(name, pairs, floors=None) -> None:
    """The case's lines; with ``floors`` (the minimal page's last change and painted medians), the ratio
    of fits drawn to the first and of fits painted to the second."""
    for label, index, floor in (("fits drawn", 0, 0), ("fits drawn, painted", 2, 1), ("last change", 1, None)):
        times = [p[index] for p in pairs]
        print(f"{name + ', ' + label:52s} median {percentile(times, 50):6.0f} ms  p90 {percentile(times, 90):6.0f} ms  "
              f"max {max(times):6.0f} ms  (goal 250 ms for fits drawn, n={len(times)}, load {os.getloadavg()[0]:.2f})",
              flush=True)
        if floors is not None and floor is not None:
            print(ratio_line(percentile(times, 50), floors[floor]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presses", type=int, default=15)
    ap.add_argument("--preset", default=PRESET, help="a Sparse-page preset, e.g. 'sine boundary' (probit)")
    ap.add_argument("--projection", default="ep", choices=("ep", "qp"), help="Power EP's projection (default ep)")
    ap.add_argument("--drag-alpha", type=float, default=0.0, help="alpha during the drags (default 0)")
    args = ap.parse_args()
    process, url = serve_app(Path(tempfile.mkdtemp()) / "serve.log")
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            floors = minimal_page_floors(browser, args.presses)
            print(floors_line(floors), flush=True)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            drag = "handle drag" + (f" at alpha {args.drag_alpha:g}" if args.drag_alpha else "")
            for what, action, alpha in (("alpha key", alpha_step, 0.0), (drag, drag_handle(), args.drag_alpha)):
                name = f"Sparse ({args.preset}, {args.projection.upper()}), N=500, M=20, {what}"
                page.goto(url + page_url(args.preset, args.projection, alpha))
                wait_for_bokeh(page)
                settle(page, 1500)
                pairs = []
                try:
                    for _ in range(args.presses):
                        pairs.append(measure_both(page, action))
                        page.wait_for_timeout(150)
                    report(name, pairs, floors)
                except Exception as err:  # noqa: BLE001 - one failed case is printed, the other still runs
                    print(f"{name:52s} FAILED: {str(err).splitlines()[0]}", flush=True)
            browser.close()
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
