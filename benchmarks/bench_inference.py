"""Speed and accuracy of the GP inference engines (numbers printed side by side; no assertions).

Run:  .venv/bin/python benchmarks/bench_inference.py [--sizes 250 500 1000 2000 4000] [--threads 1]
      [--page-repeats 20] [--qp-repeats 5] [--skip-mcmc]   (benchmarks/check.py runs a brief version)

1. Sequential EP time per sweep (numba site updates, delayed covariance updates applied by
   BLAS dsyrk; qpviz.inference.dense_sweep) at several N, beside one N x N ``A @ B`` measured
   in the same run with the same BLAS threads: the ratio sweep / product, the fitted exponent
   of t ~ N^p, and the time of the fresh factorisation (prior.condition) that a run does every
   qpviz.config.SWEEP_REFRESH sweeps and at the end, amortised.
2. The pages' case: EP and QP fits at N = 200 (probit, 1-D) plus predictions on a 400-point
   grid, warm, median of 20.
3. QP (lookup tables where qpviz.tables has them, direct sigma_QP otherwise) vs EP time per
   sweep at N = 500, probit.
4. Distance of each method's latent marginals to the MCMC reference on a 1-D probit problem,
   with a second independent MCMC run as the Monte Carlo noise floor.
"""
from __future__ import annotations

import os
import sys

# BLAS threads: --threads (default 1) for every product, sweep and factorisation of this run
_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _threads

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz import kernels  # noqa: E402
from qpviz.inference import DensePrior, fit  # noqa: E402
from qpviz.inference.metrics import marginal_distances  # noqa: E402
from qpviz.inference.sites import SiteRule  # noqa: E402


def product_seconds(n: int, repeats: int = 3) -> float:
    """Best time of one n x n ``A @ B`` (DGEMM, 2 n^3 flops)."""
    gen = np.random.default_rng(0)
    a, b = gen.random((n, n)), gen.random((n, n))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return best


def probit_data(n: int, seed: int = 0):
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, 2))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * gen.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def time_per_sweep(n: int, method: str = "ep", sweeps: int = 3) -> tuple[float, float]:
    """Median seconds of one sequential sweep (carried state, as a run does between fresh
    factorisations) and of one fresh factorisation prior.condition (+ the sweep state it starts)."""
    X, y = probit_data(n)
    prior = DensePrior(kernels.RBF(1.7, [0.8, 1.4]), X)
    rule = SiteRule.build(method, qpviz.likelihood("probit"), 1.0)
    start = time.perf_counter()
    state = prior.condition(np.zeros(n), np.zeros(n))
    carried = prior.start_sweeps(state)
    t_fresh = [time.perf_counter() - start]
    t_sweep = []
    for _ in range(sweeps):
        start = time.perf_counter()
        prior.sequential_sweep(carried, np.arange(n), rule, y)
        t_sweep.append(time.perf_counter() - start)
    start = time.perf_counter()
    prior.start_sweeps(prior.condition(carried.tau, carried.nu))
    t_fresh.append(time.perf_counter() - start)
    return float(np.median(t_sweep)), float(np.median(t_fresh))


def page_fit_seconds(repeats: int = 20) -> float:
    """Median seconds of EP + QP fits (N = 200, 1-D probit) and their predictions on 400 points."""
    gen = np.random.default_rng(0)
    X = np.sort(gen.uniform(-3, 3, 200))[:, None]
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * gen.normal(size=200) > 0, 1.0, -1.0)
    grid = np.linspace(-3.5, 3.5, 400)[:, None]
    k = kernels.RBF(2.0, 0.7)

    def once():
        for method in ("ep", "qp"):
            fit(X, y, "probit", k, method=method).predict_f(grid)

    once()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    parser.add_argument("--threads", default="1", help="BLAS threads for the whole run (read at import)")
    parser.add_argument("--page-repeats", type=int, default=20, help="repeats of the pages' case (median)")
    parser.add_argument("--qp-repeats", type=int, default=5, help="interleaved repeats of QP vs EP (best)")
    parser.add_argument("--skip-mcmc", action="store_true", help="skip part 4 (distances to MCMC, not a speed)")
    args = parser.parse_args()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rule = SiteRule.build("qp", qpviz.likelihood("probit"), 1.0)
    table_note = "tables loaded" if rule.coef.size else "NO table (direct sigma_QP): " + "; ".join(
        str(w.message)[:80] for w in caught)
    time_per_sweep(50, "ep", 1)  # compile
    time_per_sweep(50, "qp", 1)

    from qpviz import config

    print(f"# BLAS threads: {_threads}; fresh factorisation every {config.SWEEP_REFRESH} sweeps")
    print("\n## sequential EP, probit: one sweep vs one N x N product A @ B (same run, same threads)")
    print(f"{'N':>6} {'A@B s':>9} {'sweep s':>9} {'ratio':>6} {'fresh s':>9} {'sweep+fresh/' + str(config.SWEEP_REFRESH):>15}"
          f" {'ratio':>6}")
    sweeps = []
    for n in args.sizes:
        product = product_seconds(n)
        sweep, fresh = time_per_sweep(n, "ep", sweeps=3 if n <= 2000 else 2)
        sweeps.append(sweep)
        amortised = sweep + fresh / config.SWEEP_REFRESH
        print(f"{n:>6} {product:>9.4f} {sweep:>9.4f} {sweep / product:>6.2f} {fresh:>9.4f} {amortised:>15.4f}"
              f" {amortised / product:>6.2f}")
    if len(args.sizes) > 1:
        slope = np.polyfit(np.log(args.sizes), np.log(sweeps), 1)[0]
        print(f"fitted exponent p in sweep time ~ N^p: {slope:.2f}")

    print("\n## the pages' case: EP + QP fits at N = 200 (1-D probit) and predictions on 400 points, warm")
    print(f"median of {args.page_repeats}: {1e3 * page_fit_seconds(args.page_repeats):.1f} ms")

    print(f"\n## QP vs EP time per sweep, N = 500, probit ({table_note})")
    ep, qp = [], []
    for _ in range(args.qp_repeats):  # interleaved, best of the repeats: the machine is shared
        ep.append(time_per_sweep(500, "ep")[0])
        qp.append(time_per_sweep(500, "qp")[0])
    print(f"EP {min(ep):.4f} s   QP {min(qp):.4f} s   QP / EP = {min(qp) / min(ep):.2f}   (best of {args.qp_repeats} each)")
    if args.skip_mcmc:
        return

    print("\n## distance of latent marginals to the MCMC reference (1-D probit, N = 30)")
    gen = np.random.default_rng(3)
    X = np.sort(gen.uniform(-3, 3, 30))[:, None]
    y = np.where(np.sin(1.5 * X[:, 0]) + 0.3 * gen.normal(size=30) > 0, 1.0, -1.0)
    k = kernels.RBF(2.0, 0.8)
    ref = fit(X, y, "probit", k, method="mcmc", n_samples=40000, thin=5, burn_in=2000, seed=1)
    print(f"{'method':>12} {'rms mean':>10} {'rms std':>10} {'mean W2':>10}")
    rows = [(m, fit(X, y, "probit", k, method=m, **({"use_table": False} if m == "qp" else {})))
            for m in ("ep", "qp", "vb", "laplace")]
    rows.append(("mcmc seed 2", fit(X, y, "probit", k, method="mcmc", n_samples=40000, thin=5, burn_in=2000, seed=2)))
    for name, post in rows:
        d = marginal_distances(post.mean, post.var, ref.mean, ref.var)
        print(f"{name:>12} {d['rms_mean']:>10.4f} {d['rms_std']:>10.4f} {d['mean_w2']:>10.4f}")


if __name__ == "__main__":
    main()
