"""EP versus direct-QP projections per second, for every likelihood (issue: projection core).

Direct QP integrates eq. 7 adaptively for each tilted distribution, so it is expected to be much
slower than EP's closed forms; the lookup tables (bench_tables.py) close that gap. Points are
random cavities over the stated domain (mean in [-10, 10], std in [0.05, 20], log-uniform std).

    python benchmarks/bench_projection.py [n_points]
"""
from __future__ import annotations

import sys
import time

import numpy as np

import qpviz
from qpviz import tilted

CASES = [
    ("gaussian", {"variance": 0.5}, 0.7),
    ("probit", {}, 1.0),
    ("logistic", {}, 1.0),
    ("step", {"eps": 0.0}, 1.0),
    ("step", {"eps": 0.1}, 1.0),
    ("poisson_square", {}, 5.0),
    ("poisson_exp", {}, 5.0),
    ("student_t", {"nu": 4.0, "scale": 0.5}, 0.7),
    ("laplace", {"scale": 1.0}, 0.7),
]


def rate(fn, n_points: int) -> float:
    fn()  # compile / warm up
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n_points / best


def main(n_points: int = 2000) -> None:
    rng = np.random.default_rng(0)
    m = rng.uniform(-10, 10, n_points)
    v = np.exp(rng.uniform(np.log(0.05), np.log(20.0), n_points)) ** 2
    print(f"{n_points} random cavities, best of 3, one core")
    print(f"{'likelihood':34s} {'EP /s':>12s} {'direct QP /s':>14s} {'EP/QP':>8s}")
    for name, params, y in CASES:
        lik = qpviz.likelihood(name, **params)
        ep = rate(lambda: qpviz.project(lik, y, m, v, method="ep"), n_points)
        qp = rate(lambda: qpviz.project(lik, y, m, v, method="qp", use_table=False), n_points)
        label = f"{name}({', '.join(f'{k}={val}' for k, val in params.items())}) y={y:g}"
        print(f"{label:34s} {ep:12.0f} {qp:14.0f} {ep / qp:8.0f}")
    # accuracy spot check printed beside the speed: the direct QP never exceeds EP
    s = tilted.tilted_summary(qpviz.likelihood("probit"), 1.0, m, v)
    print(f"probit: max sigma_QP/sigma_EP = {np.max(s.qp_std / np.sqrt(s.var)):.12f}, all converged: {s.ok.all()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
