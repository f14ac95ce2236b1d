"""Start-up of qpviz, four numbers (issue 9, point 5):

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

Usage: .venv/bin/python benchmarks/bench_startup.py [--repeats 5] [--warm-repeats 3] [--skip-fit] [--skip-serve]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
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


def clear_caches() -> None:
    """What ``python -m qpviz.cache clear`` does, plus the warm-up's stamps (by hand, so that this
    file also measures checkouts from before qpviz.cache)."""
    for pattern in ("*.nbi", "*.nbc", "warmup-*.txt"):
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
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    page = browser.new_page()
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
        while True:  # a serve that prints its URL before it listens (as before issue 9) is retried
            try:
                page.goto(url, timeout=300_000)
                break
            except PlaywrightError as exc:
                if "ERR_CONNECTION_REFUSED" not in str(exc) or process.poll() is not None:
                    raise
                time.sleep(0.2)
        page.locator(".qpviz-numbers table").first.wait_for(timeout=300_000)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="import timings (median reported)")
    parser.add_argument("--skip-serve", action="store_true", help="no browser measurements")
    parser.add_argument("--warm-repeats", type=int, default=3, help="warm serve runs (median reported)")
    parser.add_argument("--skip-fit", action="store_true", help="no cold fit")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall times grow with the load)")

    timed_run([PYTHON, "-c", "import qpviz"])  # the OS file cache warm
    runs = [timed_run([PYTHON, "-c", "import qpviz"]) for _ in range(args.repeats)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    print(f"1. import qpviz (warm, median of {args.repeats}): {wall:.3f} s wall, {cpu:.3f} s CPU "
          f"(interpreter start included; `python -c pass` {timed_run([PYTHON, '-c', 'pass'])[0]:.3f} s)")

    if not args.skip_serve:
        from playwright.sync_api import Error, sync_playwright

        global PlaywrightError
        PlaywrightError = Error

        with sync_playwright() as playwright:
            clear_caches()
            serve_to_numbers(playwright, "2. bash scripts/serve -> numbers shown, cold numba cache")
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
