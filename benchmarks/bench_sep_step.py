"""One SEP step against one SVI step, side by side in one run (issue 24 point 2; paper 003 sec. 4.3:
"the fastest method is SEP followed by SVI").

Run:  /work/main/.venv/bin/python benchmarks/bench_sep_step.py [--sizes 20000 100000] [--steps 150]
Output recorded in benchmarks/results/bench_sep_step.txt.

For each N: :func:`qpviz.scalable_data.synthetic_classification` (N points, D = 8), probit, ARD RBF,
M inducing inputs (a random subset of X, the same for both), minibatch B; hyper-parameters and Z
learnt (``optimise=True``), one epoch cut after ``--steps`` steps (a stop request). A step's time
is the difference of consecutive ``history`` wall times (``record_every=1``, no validation: the
trainer's own clock, which covers everything a step does: SEP's site refinement, rebuilding q,
the gradient and the hyper-parameter step; SVI's bound, gradient and Adadelta step); the first
``--warmup`` steps are dropped (numba compilation, caches) and the median of the rest counts.
SEP and SVI alternate ``--rounds`` times per N and the best median of each is printed with the
ratio SEP / SVI (goal <= 1). The machine is shared (2 cores, other jobs): the load average is
printed; the ratio from the same run is what counts. The same steps are also timed in CPU time
of the training thread (``time.thread_time`` between callbacks; one BLAS thread at these sizes),
which a loaded machine inflates much less than wall time.

Each point is visited once per epoch, so no first-epoch step removes a stored factor (no site is
set yet): ``--epoch 2`` times steps of the second epoch instead (the first epoch run and dropped),
where SEP also removes each point's old factor (its cavity, one more product per point and one
more rank-B sum; issue 24).
"""
from __future__ import annotations

import argparse
import os
import platform
import threading
import time

import numpy as np

import qpviz
from qpviz import scalable_data


def step_times(method, X, y, Z, args, **extra):
    kernel = qpviz.kernels.RBF(1.0, np.ones(X.shape[1]))
    stop = threading.Event()
    cpu = []
    earlier = (args.epoch - 1) * -(-X.shape[0] // args.minibatch)  # the steps of the epochs before, dropped

    def callback(entry):
        cpu.append(time.thread_time())
        if len(cpu) >= earlier + args.steps:
            stop.set()

    post = qpviz.fit(X, y, "probit", kernel, method=method, inducing=Z, minibatch=args.minibatch, epochs=args.epoch,
                     optimise=True, seed=0, record_every=1, stop=stop, callback=callback, **extra)
    wall = np.array([entry["wall_time"] for entry in post.history])
    return np.diff(wall)[earlier + args.warmup:], np.diff(cpu)[earlier + args.warmup:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--inducing", type=int, default=200)
    parser.add_argument("--minibatch", type=int, default=200)
    parser.add_argument("--steps", type=int, default=150, help="steps per fit")
    parser.add_argument("--warmup", type=int, default=10, help="first steps dropped")
    parser.add_argument("--rounds", type=int, default=2, help="alternating SEP / SVI fits per N (best median)")
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--epoch", type=int, default=1, choices=(1, 2),
                        help="time steps of this epoch (2: sites set, old factors removed)")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()}")
    print(f"# M = {args.inducing}, minibatch {args.minibatch}, D = {args.dim}, {args.steps} steps per fit "
          f"({args.warmup} dropped) of epoch {args.epoch}, {args.rounds} rounds; ms per step (median; best of rounds)")
    print(f"{'N':>8} {'SEP ms':>8} {'SVI ms':>8} {'SEP/SVI':>8} {'SEP cpu':>8} {'SVI cpu':>8} {'cpu ratio':>9}")
    ratios = []
    for n in args.sizes:
        X, y = scalable_data.synthetic_classification(n, dim=args.dim, seed=0)
        Z = X[np.random.default_rng(1).choice(n, args.inducing, replace=False)]
        best = {"sep": np.inf, "svi": np.inf}
        best_cpu = dict(best)
        for _ in range(args.rounds):
            for method in ("sep", "svi"):
                wall, cpu = step_times(method, X, y, Z, args)
                best[method] = min(best[method], float(np.median(wall)))
                best_cpu[method] = min(best_cpu[method], float(np.median(cpu)))
        ratio = best["sep"] / best["svi"]
        ratios.append(ratio)
        print(f"{n:>8} {1e3 * best['sep']:>8.2f} {1e3 * best['svi']:>8.2f} {ratio:>8.2f} "
              f"{1e3 * best_cpu['sep']:>8.2f} {1e3 * best_cpu['svi']:>8.2f} {best_cpu['sep'] / best_cpu['svi']:>9.2f}",
              flush=True)
    print(f"# load after {os.getloadavg()}")
    print(f"SEP_SVI_STEP_RATIO {max(ratios):.3f}")


if __name__ == "__main__":
    main()
