"""Projections per second, for every likelihood.

Two tables, measured side by side in one run:

1. the public ``qpviz.project(lik, y, m, v, method="ep" | "qp")`` on arrays of ``--public``
   points (default 10^6; QP reads the lookup tables), and ``qpviz.projection.qp_variance`` (QP's
   variances alone), as CPU-time rates on one core (numba runs single-threaded here);
2. EP versus *direct* QP (eq. 7 integrated adaptively for each tilted distribution, no table)
   on ``n_points`` cavities.

Points are random cavities over the tables' domain (mean in [-10, 10], std in [0.05, 20],
log-uniform std), random labels for binary likelihoods.

First, one line (issue 22 point 5): on ``--ratio-points`` probit points (default 10^6), the CPU
time of ``project(method="qp")`` over ``project(method="ep")``, median of ``--repeats``
interleaved repeats, beside the same ratio for the kernels alone (EP's moment kernel plus the
tables' lookup as ``qpviz.project`` runs it, ``qpviz.tables.qp_variance_checked``: NumPy's log,
the batch kernel, NumPy's exp; over the moment kernel): what the public function adds on top of them.
``--ratio-only`` prints just that line (what ``benchmarks/check.py`` reads).

    python benchmarks/bench_projection.py [n_points] [--public N] [--ratio-points N] [--repeats 7] [--ratio-only]
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


def cpu_rate(fn, n_points: int, repeats: int = 3) -> float:
    """Points per CPU second (process time: one core), best of ``repeats`` after a warm-up."""
    fn()
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return n_points / best


def random_cavities(rng, n_points: int):
    """Cavity means uniform in [-10, 10], stds log-uniform in [0.05, 20] (the tables' domain)."""
    return rng.uniform(-10, 10, n_points), np.exp(rng.uniform(np.log(0.05), np.log(20.0), n_points)) ** 2


def median_cpu_times(fns: dict, repeats: int) -> dict:
    """Median CPU (process) time of each function, its repeats interleaved with the others'
    (a change of the machine's load hits all of them alike), after one warm-up call each."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def qp_ep_ratio(n_points: int = 10**6, repeats: int = 7) -> None:
    """One line: project(qp) / project(ep) CPU time on probit, and the kernels' own ratio."""
    from qpviz.likelihoods.probit import tilted_moments_batch
    from qpviz.tables import qp_variance_checked

    rng = np.random.default_rng(1)
    m, v = random_cavities(rng, n_points)
    y = np.where(rng.random(n_points) < 0.5, -1.0, 1.0)
    lik = qpviz.likelihood("probit")
    t = median_cpu_times({
        "ep": lambda: qpviz.project(lik, y, m, v, method="ep"),
        "qp": lambda: qpviz.project(lik, y, m, v, method="qp"),
        "moments": lambda: tilted_moments_batch(y, m, v),
        "table": lambda: qp_variance_checked(lik, y, m, v),
    }, repeats)
    print(f"probit project qp/ep time ratio {t['qp'] / t['ep']:.3f} (qp {t['qp'] * 1e3:.1f} ms, "
          f"ep {t['ep'] * 1e3:.1f} ms); kernels alone (moments + table)/moments "
          f"{(t['moments'] + t['table']) / t['moments']:.3f} (moments {t['moments'] * 1e3:.1f} ms, "
          f"table {t['table'] * 1e3:.1f} ms); {n_points} points, CPU time, median of {repeats} interleaved",
          flush=True)


def public_rates(n_points: int) -> None:
    from qpviz.projection import qp_variance

    rng = np.random.default_rng(1)
    m, v = random_cavities(rng, n_points)
    print(f"qpviz.project on {n_points} points, CPU-time rates (one core), best of 3, in millions per second")
    print("(likelihoods with closed-form EP moments; the others' EP is quadrature, see the second table)")
    print(f"{'likelihood':34s} {'EP':>8s} {'QP':>8s} {'QP var only':>12s} {'QP/EP time':>11s}")
    for name, params, y in CASES:
        lik = qpviz.likelihood(name, **params)
        if not lik.closed_form_moments:  # EP by quadrature (~50 us a point): table 2 covers it
            continue
        if lik.support == "binary":
            y = np.where(rng.random(n_points) < 0.5, -1.0, 1.0)
        ep = cpu_rate(lambda: qpviz.project(lik, y, m, v, method="ep"), n_points)
        qp = cpu_rate(lambda: qpviz.project(lik, y, m, v, method="qp"), n_points)
        var_only = cpu_rate(lambda: qp_variance(lik, y, m, v), n_points)
        label = f"{name}({', '.join(f'{k}={val}' for k, val in params.items())})"
        print(f"{label:34s} {ep / 1e6:8.2f} {qp / 1e6:8.2f} {var_only / 1e6:12.2f} {ep / qp:11.2f}")


def main(n_points: int = 2000) -> None:
    rng = np.random.default_rng(0)
    m, v = random_cavities(rng, n_points)
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
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n_points", nargs="?", type=int, default=2000, help="cavities for EP vs direct QP")
    parser.add_argument("--public", type=int, default=10**6, help="points for qpviz.project (0: skip)")
    parser.add_argument("--ratio-points", type=int, default=10**6, help="probit points for the qp/ep ratio line")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repeats of the ratio line (median)")
    parser.add_argument("--ratio-only", action="store_true", help="print only the qp/ep ratio line")
    args = parser.parse_args()
    qp_ep_ratio(args.ratio_points, args.repeats)
    if args.ratio_only:
        sys.exit(0)
    print()
    if args.public:
        public_rates(args.public)
        print()
    main(args.n_points)
