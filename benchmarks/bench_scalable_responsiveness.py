"""Does training on the Scalable page slow the dashboard for everyone else? (issue 13), printed, not asserted.

Serves the real app (`python -m panel serve app`), then times cheap requests to it (the app's
static bundle, which every opening tab fetches, served by the server's own event loop): first
idle, then while three training runs go at once, as the page starts them (SEP, SVI and GFITC on
the flights 10k subsample, M = 100, each in its own child process at the lower priority the page
gives them, ``qpviz.gpdemo.scalable_demo.TrainingJob``). Prints the median, p90 and max of each.
It refuses to time unless all three runs have started training and none has ended, and the
timing counts only if all three still run after it (else it says so and exits with 1).

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


#: Epochs of SEP and SVI: far more than the timing lasts (the runs are stopped after it).
EPOCHS = 50
#: Seconds the runs get to load their data and start training.
START_TIMEOUT_S = 180


class Runs:
    """The three training jobs and what their messages said so far (poll() hands each out once)."""

    def __init__(self, jobs):
        self.jobs = jobs
        self.training = {job.config.method: False for job in jobs}
        self.ended = {}  # method -> its "end" message

    def update(self) -> None:
        for job in self.jobs:
            for message in job.poll():
                if message["kind"] == "entry":
                    self.training[job.config.method] = True
                elif message["kind"] == "end":
                    self.ended[job.config.method] = message

    def problem(self) -> str:
        """Why the runs cannot be timed now ('' if they can)."""
        self.update()
        if self.ended:
            return "ended: " + "; ".join(f"{m} {e['status']} {e.get('text', '')}" for m, e in self.ended.items())
        waiting = [m for m, started in self.training.items() if not started]
        return "not training yet: " + ", ".join(waiting) if waiting else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=100)
    args = ap.parse_args()
    process, app_url = serve_app(Path(tempfile.mkdtemp()) / "serve.log")
    url = app_url.rsplit("/", 1)[0] + "/static/extensions/panel/panel.min.js"
    jobs = []
    try:
        probe(url, 5)  # warm
        report("idle server", probe(url, args.requests))
        configs, _ = scalable_demo.plan_runs("flights 10k", ["sep", "svi", "gfitc"], 100, 200, EPOCHS, 0)
        jobs.extend(scalable_demo.TrainingJob(config).start() for config in configs)
        runs = Runs(jobs)
        deadline = time.monotonic() + START_TIMEOUT_S
        while runs.problem() and time.monotonic() < deadline:
            time.sleep(0.2)  # the runs load their data, then start training
        if runs.problem():
            print(f"not timed: the three runs must all be training; {runs.problem()}", flush=True)
            return 1
        during = probe(url, args.requests)
        if runs.problem():
            print(f"not valid: a run stopped training during the timing; {runs.problem()}", flush=True)
            return 1
        report("during 3 training runs (SEP, SVI, GFITC)", during)
    finally:
        for job in jobs:
            job.stop(grace=0.0)
        stop(process)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
