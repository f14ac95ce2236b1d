"""Speed and accuracy of the GP inference engines (numbers printed side by side; no assertions).

Run:  /work/venv/bin/python benchmarks/bench_inference.py [--sizes 250 500 1000 2000]

1. This machine's DGEMM rate (one thread, 1000 x 1000 product, 2 N^3 flops).
2. Sequential EP time per sweep (numba rank-one site updates + the end-of-sweep Cholesky
   recomputation) at several N, the fitted exponent of t ~ N^p and the ratio
   t / (N^3 / DGEMM rate).
3. QP (lookup tables where qpviz.tables has them, direct sigma_QP otherwise) vs EP time per
   sweep at N = 500, probit.
4. Distance of each method's latent marginals to the MCMC reference on a 1-D probit problem,
   with a second independent MCMC run as the Monte Carlo noise floor.
"""
from __future__ import annotations

import os

# One BLAS thread: on this shared 2-core machine multi-threaded BLAS was 10-30x slower.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz import kernels  # noqa: E402
from qpviz.inference import DensePrior, fit  # noqa: E402
from qpviz.inference.metrics import marginal_distances  # noqa: E402
from qpviz.inference.sites import SiteRule  # noqa: E402


def dgemm_rate(n: int = 1000, repeats: int = 3) -> float:
    a = np.random.default_rng(0).random((n, n))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def probit_data(n: int, seed: int = 0):
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, 2))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * gen.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def time_per_sweep(n: int, method: str = "ep", sweeps: int = 3) -> tuple[float, float]:
    """Median (site sweep, recomputation) seconds over ``sweeps`` sequential sweeps from flat sites."""
    X, y = probit_data(n)
    prior = DensePrior(kernels.RBF(1.7, [0.8, 1.4]), X)
    rule = SiteRule.build(method, qpviz.likelihood("probit"), 1.0)
    state = prior.condition(np.zeros(n), np.zeros(n))
    t_sweep, t_recompute = [], []
    for _ in range(sweeps):
        start = time.perf_counter()
        tau, nu, _, _ = prior.sequential_sweep(state, np.arange(n), rule, y)
        mid = time.perf_counter()
        state = prior.condition(tau, nu)
        t_sweep.append(mid - start)
        t_recompute.append(time.perf_counter() - mid)
    return float(np.median(t_sweep)), float(np.median(t_recompute))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    args = parser.parse_args()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rule = SiteRule.build("qp", qpviz.likelihood("probit"), 1.0)
    table_note = "tables loaded" if rule.coef.size else "NO table (direct sigma_QP): " + "; ".join(
        str(w.message)[:80] for w in caught)
    time_per_sweep(50, "ep", 1)  # compile
    time_per_sweep(50, "qp", 1)

    rate = dgemm_rate()
    print(f"# DGEMM rate (1 thread, n = 1000): {rate / 1e9:.2f} GFLOP/s")
    print("\n## sequential EP, probit, time per sweep")
    print(f"{'N':>6} {'sweep s':>10} {'recompute s':>12} {'total s':>10} {'N^3/rate s':>11} {'ratio':>7}")
    totals = []
    for n in args.sizes:
        sweep, recompute = time_per_sweep(n, "ep", sweeps=3 if n <= 1000 else 2)
        total = sweep + recompute
        totals.append(total)
        ref = n**3 / rate
        print(f"{n:>6} {sweep:>10.4f} {recompute:>12.4f} {total:>10.4f} {ref:>11.4f} {total / ref:>7.2f}")
    if len(args.sizes) > 1:
        slope = np.polyfit(np.log(args.sizes), np.log(totals), 1)[0]
        print(f"fitted exponent p in t ~ N^p: {slope:.2f}")

    print(f"\n## QP vs EP time per sweep, N = 500, probit ({table_note})")
    ep, qp = [], []
    for _ in range(5):  # interleaved, best of 5: the machine is shared
        ep.append(sum(time_per_sweep(500, "ep")))
        qp.append(sum(time_per_sweep(500, "qp")))
    print(f"EP {min(ep):.4f} s   QP {min(qp):.4f} s   QP / EP = {min(qp) / min(ep):.2f}   (best of 5 each)")

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
