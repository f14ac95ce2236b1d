"""Start-up of qpviz, four numbers (issue 9, point 5), and two timelines (issue 22, points 3 and 4):

1. ``import qpviz`` on a warm machine (a fresh interpreter; median of ``--repeats``);
2. ``bash scripts/serve`` to the Projection Explorer showing its numbers, cold: numba's cache
   removed (as ``python -m qpviz.cache clear`` does, and the warm-up's stamp with it);
3. the same, warm (caches from run 2);
4. the first ``qpviz.fit(X, y, "probit", RBF(), method="ep")`` at N = 200 in a fresh process,
   cold (cache cleared; the time includes ``import qpviz``).

"Numbers shown" is the explorer's summary table in Debian's Chromium (Playwright), as
``bench_explorer_latency.py --startup`` waits for it; the browser opens the URL as soon as
``scripts/serve`` prints it. Each line gives wall time and the CPU time (user + sys) of the
processes started, which is steadier than wall time on a shared machine; the load average is
printed before and after. This clears the numba caches of this checkout: run it in a checkout
you may slow down. The cold serve run leaves the caches warm again.

``--first-start [REF]`` clones this repository (REF, default HEAD: commit first) into a fresh folder
with nothing beside it and runs ``bash scripts/serve`` there twice (the first start installs
``.venv``, the second reuses it), printing each start's timeline: the seconds at which each phase's
marker line appeared (the install's first and last line, each warm-up's start and end, the URL),
the explorer's numbers in Chromium, and the longest silence of the console (no line printed) with
the line before it. uv and pip use their usual caches (say whether they were warm:
``PIP_NO_CACHE_DIR=1 UV_NO_CACHE=1`` makes them download everything). ``--panel-serve`` measures
``python -m panel serve app`` (as the design card says users run it) from launch to the explorer's
numbers in Chromium, cold (numba caches cleared) and warm; ``--python`` names the venv's interpreter
(default: this one).

Usage: .venv/bin/python benchmarks/bench_startup.py [--repeats 5] [--warm-repeats 3] [--skip-fit] [--skip-serve]
       .venv/bin/python benchmarks/bench_startup.py --first-start [REF] [--keep DIR]
       .venv/bin/python benchmarks/bench_startup.py --panel-serve [--warm-repeats 3] [--python PY]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from pagetools import CHROMIUM_ARGS, chromium_path, free_port  # noqa: E402

PYTHON = sys.executable
PlaywrightError = Exception  # playwright's Error once imported (main)
FIT_CODE = """
import numpy as np
import qpviz
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 1))
y = np.where(np.sin(3 * X[:, 0]) + 0.3 * rng.normal(size=200) > 0, 1.0, -1.0)
qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="ep")
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def timed_run(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process run to completion."""
    cpu0, start = children_cpu(), time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env(), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - cpu0


def rewarm() -> None:
    """Compile every kernel again after a cold run (a cold server stopped at its numbers has not
    finished compiling them in the background: its warm-up child ends with it)."""
    subprocess.run([PYTHON, "-m", "qpviz.warmup", "--what", "all"], cwd=ROOT, env=env(), check=True,
                   stdout=subprocess.DEVNULL)


def clear_caches() -> None:
    """What ``python -m qpviz.cache clear`` does, plus the warm-up's stamps (by hand, so that this
    file also measures checkouts from before qpviz.cache)."""
    for pattern in ("*.nbi", "*.nbc", "warmup-*.txt", "*.fastform.npz", "*.ratiomap.npz"):  # and the tables' cached fast forms, the stored maps
        for path in (ROOT / "qpviz").rglob(f"__pycache__/{pattern}"):
            path.unlink()


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + sys) used so far by ``pid`` and its live descendants (from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick  # incl. waited children
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except (OSError, IndexError):
            continue
        pending += [int(c) for c in children]
    return total


def serve_to_numbers(playwright, label: str) -> tuple[float, float]:
    """(wall, CPU) from launching ``bash scripts/serve`` to the explorer's numbers in the browser
    (launched before: a user's browser is already open)."""
    port = free_port()
    browser, page = new_browser_page(playwright)
    start = time.perf_counter()
    process = subprocess.Popen(["bash", "scripts/serve"], cwd=ROOT, env=dict(env(), PORT=str(port)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url = None
        for line in process.stdout:
            print(f"    | {line.rstrip()}")
            found = re.search(r"qpviz dashboard: (\S+)", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            raise RuntimeError(f"scripts/serve exited with {process.wait()} before printing the URL")
        goto_until_numbers(page, url, process)  # a serve that prints its URL before it listens is retried
        wall = time.perf_counter() - start
        cpu = process_tree_cpu(process.pid)
    finally:
        browser.close()
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    print(f"{label}: {wall:.2f} s wall, {cpu:.1f} s CPU (server and warm-up processes, not the browser)")
    return wall, cpu


sys.path.insert(0, str(ROOT / "app"))
from dashboard import ALL_COMPILED  # noqa: E402 - a first start's server line: every kernel compiled in the background
#: Marker lines of a start's phases (old and new scripts): (phase, regex).
MARKERS = [
    ("install starts", r"^(qpviz: installing|Collecting|Obtaining|Processing|Looking in)"),
    ("install ends", r"^(Successfully installed|qpviz: installed)"),
    ("warm-up starts", r"compiling numerical kernels"),
    ("warm-up ends", r"numerical kernels (ready|: compiled earlier)"),
    ("all compiled", re.escape(ALL_COMPILED)),
    ("server asked", r"starting the dashboard"),
    ("URL printed", r"qpviz dashboard: "),
]


class Timeline:
    """The lines a process prints, each with the second it appeared (from ``start``)."""

    def __init__(self, start: float):
        self.start = start
        self.lines: list[tuple[float, str]] = []

    def add(self, line: str) -> None:
        self.lines.append((time.perf_counter() - self.start, line.rstrip("\n")))

    def longest_silence(self, until: float) -> tuple[float, float, str]:
        """(seconds, at, the line before) of the longest stretch without a line, up to ``until``."""
        best = (0.0, 0.0, "(launch)")
        previous, before = 0.0, "(launch)"
        for at, line in [*self.lines, (until, "")]:
            if at > until:
                at = until
            if at - previous > best[0]:
                best = (at - previous, previous, before)
            previous, before = at, line
            if at >= until:
                break
        return best

    def report(self, numbers_at: float) -> None:
        """The first line of each phase (a warm-up's second run too), the numbers, the longest silence."""
        marks = []
        for phase, pattern in MARKERS:
            found = [(at, line) for at, line in self.lines if re.search(pattern, line)]
            marks += [(at, phase, line) for at, line in found[:2 if phase.startswith("warm-up") else 1]]
        for at, phase, line in sorted(marks):
            print(f"    {at:7.1f} s  {phase:15s} {line[:90]}")
        print(f"    {numbers_at:7.1f} s  numbers shown in Chromium")
        silence, at, before = self.longest_silence(numbers_at)
        print(f"    longest silence: {silence:.1f} s, from {at:.1f} s, after: {before[:100]}")
        last = self.lines[-1][0] if self.lines else 0.0
        if last > numbers_at:  # the background compile's lines after the numbers
            silence, at, before = self.longest_silence(last)
            print(f"    longest silence up to the last line ({last:.1f} s): {silence:.1f} s, from {at:.1f} s, "
                  f"after: {before[:100]}")


def goto_until_numbers(page, url: str, process: subprocess.Popen) -> None:
    """Open ``url`` in the browser's ``page`` and wait for the explorer's numbers (retrying a
    refused connection while ``process`` runs)."""
    while True:
        try:
            page.goto(url, timeout=300_000)
            break
        except PlaywrightError as exc:
            if "ERR_CONNECTION_REFUSED" not in str(exc) or process.poll() is not None:
                raise
            time.sleep(0.1)
    page.locator(".qpviz-numbers table").first.wait_for(timeout=600_000)


def new_browser_page(playwright):
    """A page of a new Chromium (launched before the server: a user's browser is already open)."""
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    return browser, browser.new_page()


def stop_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start_timeline(playwright, checkout: Path, label: str, log: Path, wait_for: str | None = None) -> float:
    """Run ``bash scripts/serve`` in ``checkout`` (nothing of this checkout on its paths) until the
    explorer shows its numbers (and then, with ``wait_for``, until a line holding it is printed, at
    most 15 minutes: a user's first session lasts that long); print the timeline; returns the
    seconds to the numbers."""
    port = free_port()
    browser, page = new_browser_page(playwright)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean["PATH"] = os.pathsep.join(p for p in clean.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    start = time.perf_counter()
    process = subprocess.Popen(["bash", "scripts/serve"], cwd=checkout, env=dict(clean, PORT=str(port)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    timeline = Timeline(start)
    url_seen = threading.Event()
    url = []

    def read():
        with open(log, "a") as out:
            for line in process.stdout:
                timeline.add(line)
                out.write(f"{timeline.lines[-1][0]:8.1f} {line}")
                out.flush()
                found = re.search(r"qpviz dashboard: (\S+)", line)
                if found and not url:
                    url.append(found.group(1))
                    url_seen.set()
        url_seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url_seen.wait()
        if not url:
            raise RuntimeError(f"scripts/serve exited with {process.wait()} before printing the URL (log: {log})")
        goto_until_numbers(page, url[0], process)
        numbers_at = time.perf_counter() - start
        load = os.getloadavg()
        deadline = time.perf_counter() + 900
        while wait_for and not any(wait_for in line for _, line in timeline.lines):
            if process.poll() is not None or time.perf_counter() > deadline:
                print(f"    ({wait_for!r} not printed)")
                break
            time.sleep(0.5)
    finally:
        browser.close()
        stop_group(process)
    print(f"{label}: numbers shown at {numbers_at:.1f} s (load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
    timeline.report(numbers_at)
    return numbers_at


def first_start(playwright, ref: str, keep: str | None) -> None:
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="qpviz-first-start-"))
    checkout = folder / "qpviz"
    if checkout.exists():
        shutil.rmtree(checkout)
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(checkout)], check=True)
    subprocess.run(["git", "checkout", "-q", ref], cwd=checkout, check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, text=True,
                            capture_output=True, check=True).stdout.strip()
    log = folder / "serve.log"
    no_cache = os.environ.get("PIP_NO_CACHE_DIR") and os.environ.get("UV_NO_CACHE")
    installer_cache = "off (PIP_NO_CACHE_DIR, UV_NO_CACHE)" if no_cache else "the installers' usual caches"
    print(f"first start of {ref} ({commit}) in {checkout}, {installer_cache}; full output in {log}")
    start_timeline(playwright, checkout, "first start (install included)", log, wait_for=ALL_COMPILED)
    start_timeline(playwright, checkout, "second start", log)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)


def panel_serve_to_numbers(playwright, python: str, label: str) -> float:
    """Seconds from launching ``python -m panel serve app`` (in this checkout) to the explorer's
    numbers in Chromium (launched before); the line also gives the server's CPU seconds until
    then (steadier than wall time when other work shares the cores)."""
    port = free_port()
    browser, page = new_browser_page(playwright)
    start = time.perf_counter()
    process = subprocess.Popen([python, "-m", "panel", "serve", "app", "--address", "127.0.0.1", "--port", str(port),
                                f"--allow-websocket-origin=127.0.0.1:{port}"], cwd=ROOT, env=env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        goto_until_numbers(page, f"http://127.0.0.1:{port}/app", process)
        wall = time.perf_counter() - start
        cpu = process_tree_cpu(process.pid)
    finally:
        browser.close()
        stop_group(process)
    print(f"{label}: {wall:.2f} s, server CPU {cpu:.2f} s (load average {os.getloadavg()[0]:.1f})")
    return wall


def panel_serve(playwright, python: str, warm_repeats: int) -> None:
    clear_caches()
    panel_serve_to_numbers(playwright, python, "panel serve app -> numbers, cold numba cache")
    rewarm()
    warm = [panel_serve_to_numbers(playwright, python, f"   warm run {k + 1} of {warm_repeats}")
            for k in range(warm_repeats)]
    print(f"panel serve app -> numbers, warm: median {statistics.median(warm):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="import timings (median reported)")
    parser.add_argument("--skip-serve", action="store_true", help="no browser measurements")
    parser.add_argument("--warm-repeats", type=int, default=3, help="warm serve runs (median reported)")
    parser.add_argument("--skip-fit", action="store_true", help="no cold fit")
    parser.add_argument("--first-start", nargs="?", const="HEAD", default=None, metavar="REF",
                        help="first and second `bash scripts/serve` in a fresh clone of REF (default HEAD)")
    parser.add_argument("--keep", default=None, help="--first-start: clone into this folder and keep it")
    parser.add_argument("--panel-serve", action="store_true", help="`panel serve app` -> numbers, cold and warm")
    parser.add_argument("--python", default=PYTHON, help="--panel-serve: the venv's interpreter")
    args = parser.parse_args()
    global PlaywrightError
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall times grow with the load)")
    if args.first_start or args.panel_serve:
        from playwright.sync_api import Error, sync_playwright

        PlaywrightError = Error
        with sync_playwright() as playwright:
            if args.first_start:
                first_start(playwright, args.first_start, args.keep)
            if args.panel_serve:
                panel_serve(playwright, args.python, args.warm_repeats)
        return

    timed_run([PYTHON, "-c", "import qpviz"])  # the OS file cache warm
    runs = [timed_run([PYTHON, "-c", "import qpviz"]) for _ in range(args.repeats)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    print(f"1. import qpviz (warm, median of {args.repeats}): {wall:.3f} s wall, {cpu:.3f} s CPU "
          f"(interpreter start included; `python -c pass` {timed_run([PYTHON, '-c', 'pass'])[0]:.3f} s)")

    if not args.skip_serve:
        from playwright.sync_api import Error, sync_playwright

        PlaywrightError = Error

        with sync_playwright() as playwright:
            clear_caches()
            serve_to_numbers(playwright, "2. bash scripts/serve -> numbers shown, cold numba cache")
            rewarm()
            warm = [serve_to_numbers(playwright, f"   warm run {k + 1} of {args.warm_repeats}")[0]
                    for k in range(args.warm_repeats)]
            print(f"3. bash scripts/serve -> numbers shown, warm: median {statistics.median(warm):.2f} s wall "
                  f"(runs: {', '.join(f'{w:.2f}' for w in warm)})")

    if not args.skip_fit:
        clear_caches()
        wall, cpu = timed_run([PYTHON, "-c", FIT_CODE])
        print(f"4. first EP fit, N = 200, cold numba cache (fresh process): {wall:.2f} s wall, {cpu:.1f} s CPU")
        wall, cpu = timed_run([PYTHON, "-c", FIT_CODE])
        print(f"   the same again, warm cache: {wall:.2f} s wall, {cpu:.1f} s CPU")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
