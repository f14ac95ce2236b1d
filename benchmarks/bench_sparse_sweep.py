"""Speed of Power EP / QP sweeps on the sparse prior (qpviz.inference.sparse_prior), no assertions.

Run once on a quiet machine:  .venv/bin/python benchmarks/bench_sparse_sweep.py [--threads 1]
[--n 100000] [--m 200] [--repeats 5] [--small-repeats 20]   (benchmarks/check.py runs a brief version)

1. Issue 12's goal: at N = 10^5, M = 200, probit, one *parallel* Power-EP sweep (every site
   update from the same marginals, then ``prior.condition``: W T W^T by dsyrk, an M x M
   Cholesky, one triangular solve for all marginals) beside the one (N x M)^T (N x M) product
   ``Wt.T @ Wt`` it needs, timed alternately in the same run with the same BLAS threads
   (median of repeats); the ratio should be <= 3. alpha = 1 (EP: probit's closed-form moments),
   alpha = 0.5, 0.1 and 0.9 (Power EP: the tempered tilted moments by the Taylor route or the
   checked Gauss-Hermite rules of qpviz.tilted.hermite, quadrature where they refuse) and QP at
   alpha = 1 and 0.5 (sigma_QP from the tables where they cover the cavity, else Gauss-Hermite,
   else quadrature); each line also says which share of the sites each route took (counted
   outside the timing).
   The kernel matrix K(Z, X) is built once, outside the timed region (``SparsePrior``).
2. The Sparse page's size: N = 500, M = 20, one sequential sweep (numba O(M^2) rank-one
   updates per site), EP and QP, alpha = 1 and 0.5, and a whole fit.
"""
from __future__ import annotations

import os
import sys

_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _threads

import time  # noqa: E402

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz.inference.sites import QP, SiteRule  # noqa: E402
from qpviz.inference.site_fit import fit_power_ep  # noqa: E402
from qpviz.inference.sparse_prior import SparsePrior  # noqa: E402
from qpviz.kernels import RBF  # noqa: E402
from qpviz.tilted.hermite import REFUSED, hermite_rules  # noqa: E402

RULE_NAMES = {-2: "Taylor", -1: "6 nodes", 0: "12 nodes", 1: "32 nodes", 2: "64 nodes", REFUSED: "quadrature"}


def probit_data(n: int, seed: int = 0):
    gen = np.random.default_rng(seed)
    X = gen.uniform(-5, 5, size=(n, 1))
    y = np.where(np.sin(X[:, 0]) + 0.3 * gen.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def parallel_sweep(prior, rule, y, state):
    """One parallel sweep: all site updates from ``state``'s marginals, then a fresh condition."""
    tau, nu, _, _ = rule.update_all(y, state.mean, state.var, state.tau, state.nu)
    return prior.condition(tau, nu)


def route(rule, y, state) -> str:
    """How the rule's sites get their moments (and sigma_QP), for the printed line: the share of
    the f-cavities N(m, v + d_i) each route of qpviz.tilted.hermite takes (``hermite_rules``)."""
    if rule.closed:
        return "closed-form moments"
    alpha = rule.power
    tau_c = 1.0 / state.var - alpha * state.tau
    mean_c = (state.mean / state.var - alpha * state.nu) / tau_c
    rules = hermite_rules(rule.likelihood, y, mean_c, 1.0 / tau_c + rule.cond_var, qp=rule.method_code == QP)
    shares = ", ".join(f"{name} {np.mean(rules == code):.1%}" for code, name in RULE_NAMES.items()
                       if np.any(rules == code))
    return f"moments / sigma_QP by: {shares}"


def large(n: int = 100_000, m: int = 200, repeats: int = 5) -> None:
    X, y = probit_data(n)
    kernel = RBF(1.0, 0.7)
    start = time.perf_counter()
    prior = SparsePrior(kernel, X, np.linspace(-5, 5, m))
    print(f"N = {n}, M = {m}, BLAS threads {_threads}: SparsePrior (K(Z, X), W = L_uu^-1 K_uf, d_n) built in "
          f"{time.perf_counter() - start:.2f} s (outside the timed region)")
    Wt = prior.Wt
    for label, method, alpha in (("EP, alpha = 1", "ep", 1.0), ("Power EP, alpha = 0.5", "ep", 0.5), ("Power EP, alpha = 0.1", "ep", 0.1), ("Power EP, alpha = 0.9", "ep", 0.9),
                                 ("QP, alpha = 1", "qp", 1.0), ("QP, alpha = 0.5", "qp", 0.5)):
        lik = qpviz.likelihood("probit").tempered(alpha)
        rule = SiteRule.build(method, lik, 0.5, cond_var=prior.cond_var)
        state = prior.condition(np.zeros(n), np.zeros(n))
        state = parallel_sweep(prior, rule, y, state)  # compiles; then sites away from zero
        state = parallel_sweep(prior, rule, y, state)
        sweep_times, product_times, site_times, condition_times = [], [], [], []
        for _ in range(repeats):  # alternate, so that both see the same machine
            start = time.perf_counter()
            tau, nu, _, _ = rule.update_all(y, state.mean, state.var, state.tau, state.nu)
            mid = time.perf_counter()
            new_state = prior.condition(tau, nu)
            end = time.perf_counter()
            sweep_times.append(end - start)
            site_times.append(mid - start)
            condition_times.append(end - mid)
            start = time.perf_counter()
            Wt.T @ Wt
            product_times.append(time.perf_counter() - start)
        state = new_state
        sweep, product = np.median(sweep_times), np.median(product_times)
        print(f"  {label:22s} parallel sweep {sweep * 1e3:8.1f} ms (site updates {np.median(site_times) * 1e3:7.1f} ms, "
              f"condition {np.median(condition_times) * 1e3:7.1f} ms); (N x M)^T (N x M) product "
              f"{product * 1e3:7.1f} ms; ratio {sweep / product:5.2f} (goal <= 3); {route(rule, y, state)}")


def small(n: int = 500, m: int = 20, repeats: int = 20) -> None:
    X, y = probit_data(n, seed=1)
    kernel = RBF(1.0, 0.7)
    prior = SparsePrior(kernel, X, np.linspace(-5, 5, m))
    print(f"N = {n}, M = {m} (the Sparse page):")
    for method in ("ep", "qp"):
        for alpha in (1.0, 0.5):
            lik = qpviz.likelihood("probit").tempered(alpha)
            rule = SiteRule.build(method, lik, 1.0, cond_var=prior.cond_var)
            state = prior.condition(np.zeros(n), np.zeros(n))
            carried = prior.start_sweeps(state)
            order = np.arange(n)
            prior.sequential_sweep(carried, order, rule, y)  # compiles
            seconds = median_seconds(lambda: prior.sequential_sweep(carried, order, rule, y), repeats)
            fit_seconds = median_seconds(
                lambda: fit_power_ep(X, y, "probit", kernel, method, prior.Z, alpha=alpha, tol=1e-6), 5)
            print(f"  {method.upper()} alpha = {alpha:3.1f}: sequential sweep {seconds * 1e3:6.2f} ms; "
                  f"whole fit (build, sweeps to tol 1e-6, evidence) {fit_seconds * 1e3:6.1f} ms")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1", help="BLAS threads for the whole run (read at import)")
    parser.add_argument("--n", type=int, default=100_000, help="N of part 1")
    parser.add_argument("--m", type=int, default=200, help="M of part 1")
    parser.add_argument("--repeats", type=int, default=5, help="alternating repeats of part 1 (median)")
    parser.add_argument("--small-repeats", type=int, default=20, help="repeats of part 2's sweeps (median)")
    args = parser.parse_args()
    large(args.n, args.m, args.repeats)
    small(repeats=args.small_repeats)
