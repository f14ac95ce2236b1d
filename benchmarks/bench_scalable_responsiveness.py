"""Does training on the Scalable page slow the dashboard for everyone else? (issue 13), printed, not asserted.

Serves the real app (`python -m panel serve app`), then times cheap requests to it (the app's
static bundle, which every opening tab fetches, served by the server's own event loop): first
idle, then while three training runs go at once, as the page starts them (SEP, SVI and GFITC on
the flights 10k subsample, M = 100, each in its own child process at the lower priority the page
gives them, ``qpviz.gpdemo.scalable_demo.TrainingJob``). Prints the median, p90 and max of each.

Usage: .venv/bin/python benchmarks/bench_scalable_responsiveness.py [--requests 100]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from pagetools import serve_app, stop  # noqa: E402

from qpviz.gpdemo import scalable_demo  # noqa: E402


def probe(url: str, count: int, gap: float = 0.05) -> np.ndarray:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as response:
            response.read()
        times.append(time.perf_counter() - start)
        time.sleep(gap)
    return np.array(times) * 1e3


def report(label: str, ms: np.ndarray) -> None:
    print(f"{label:44s} median {np.median(ms):7.1f} ms  p90 {np.percentile(ms, 90):7.1f} ms  max {ms.max():7.1f} ms  "
          f"(n = {ms.size})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=100)
    args = ap.parse_args()
    process, app_url = serve_app(Path(tempfile.mkdtemp()) / "serve.log")
    url = app_url.rsplit("/", 1)[0] + "/static/extensions/panel/panel.min.js"
    try:
        probe(url, 5)  # warm
        report("idle server", probe(url, args.requests))
        configs, _ = scalable_demo.plan_runs("flights 10k", ["sep", "svi", "gfitc"], 100, 200, 5, 0)
        jobs = [scalable_demo.TrainingJob(config).start() for config in configs]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                m["kind"] == "entry" for job in jobs for m in job.poll()):
            time.sleep(0.2)  # the runs have started training
        report("during 3 training runs (SEP, SVI, GFITC)", probe(url, args.requests))
        for job in jobs:
            job.stop()
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
