"""Page-agnostic browser latency: from a user action to the last Bokeh document change it caused.

Used by bench_gp_latency.py and bench_load.py. ``measure(page, action)`` arms a listener on every
Bokeh document of the page, performs ``action`` (a key press, a click...), and waits until the
documents have been quiet for ``QUIET_MS`` after at least one change; the latency is the time of
the last change minus the time the listener was armed, just before the action. A server message
carrying the whole update (new data, titles, numbers) counts once it is applied by BokehJS.

The change is not yet on screen then: BokehJS paints it in the next animation frame, and painting
the GP pages' figures took 40-60 ms of the browser's main thread (GP 2-D, N = 60: change 46 ms,
painted 109 ms). :func:`last_painted` gives that other end, the time at which the frame after the
last change has been painted (a timer set from the frame's animation callback fires after the
frame's callbacks, BokehJS's painting among them): what the user waits for.
"""
from __future__ import annotations

import time

QUIET_MS = 400
TIMEOUT_MS = 30_000

ARM_JS = """() => {
    window.__qpvizChanges = [];
    if (!window.__qpvizHooked) {
        window.__qpvizHooked = true;
        for (const doc of Bokeh.documents)
            doc.on_change((ev) => {
                // the URL (Panel's Location model) is written after the sliders rest: not the update
                const name = ev && ev.model ? ev.model.constructor.__name__ : '';
                if (name === 'Location' || !window.__qpvizChanges) return;
                window.__qpvizChanges.push(performance.now());
                // the end of the next frame's callbacks, in which BokehJS paints the change
                requestAnimationFrame(() => setTimeout(() => window.__qpvizPainted.push(performance.now()), 0));
            });
    }
    window.__qpvizPainted = [];
    window.__qpvizT0 = performance.now();
}"""
#: ms from the action of the last :func:`measure` to the frame after its last change painted
PAINTED_JS = """() => Math.max(...window.__qpvizPainted) - window.__qpvizT0"""

#: resolves with the latency in ms once the documents were quiet for quietMs after a change
WAIT_JS = """([quietMs, timeoutMs]) => new Promise((resolve, reject) => {
    const t0 = window.__qpvizT0;
    const tick = () => {
        const now = performance.now();
        const changes = window.__qpvizChanges;
        if (changes.length && now - changes[changes.length - 1] > quietMs) {
            const last = changes[changes.length - 1];
            resolve(last - t0);
            return;
        }
        if (now - t0 > timeoutMs) { reject(new Error('no document change within ' + timeoutMs + ' ms')); return; }
        setTimeout(tick, 20);
    };
    tick();
})"""


def wait_for_bokeh(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=timeout_ms)


def settle(page, quiet_ms: int = 1000, timeout_ms: int = 120_000) -> None:
    """Wait until the page's documents have not changed for ``quiet_ms`` (initial render done)."""
    page.evaluate(ARM_JS)
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        quiet = page.evaluate("""(q) => { const c = window.__qpvizChanges;
            return performance.now() - (c.length ? c[c.length - 1] : window.__qpvizT0) > q; }""", quiet_ms)
        if quiet:
            return
        page.wait_for_timeout(100)
    raise TimeoutError("the page never settled")


def measure(page, action, quiet_ms: int = QUIET_MS, timeout_ms: int = TIMEOUT_MS) -> float:
    """Milliseconds from ``action(page)`` to the last document change it caused. An action's
    ``prepare(page)``, if it has one (finding and scrolling to what it will click), runs before
    the timer starts."""
    prepare = getattr(action, "prepare", None)
    if prepare is not None:
        prepare(page)
    page.evaluate(ARM_JS)
    action(page)
    return float(page.evaluate(WAIT_JS, [quiet_ms, timeout_ms]))


def last_painted(page) -> float:
    """Milliseconds from the last :func:`measure`'s action to the frame after its last change
    painted (see the module's note)."""
    return float(page.evaluate(PAINTED_JS))


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (MiB), from /proc."""
    total = 0
    pids = [pid]
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024
