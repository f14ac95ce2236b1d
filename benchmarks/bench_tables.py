"""QP lookup tables against EP and against direct QP: rates side by side, and accuracy.

    python benchmarks/bench_tables.py [--n 1000000] [--n-direct 2000] [--only probit ...]

For each shipped family, on the same random cavities (uniform over the table domain, std
log-uniform in [0.05, 20]) it prints, per second of CPU time of this process (so that other
jobs on a shared machine do not distort the numbers; wall rates are printed too):

* ``table``: sigma_QP^2 by the numba lookup kernel (qpviz.tables, one core);
* ``EP mom``: EP's tilted moments, ``lik.tilted_moments`` (closed form or quadrature);
* ``direct``: sigma_QP by adaptive quadrature (qpviz.tilted.qp_std), on --n-direct points;
* ``project ep`` / ``project qp``: qpviz.project(...) per point, and their ratio;
* the max relative error of sigma_QP from the table against ``direct``;
* the in-memory fast form: its size and the seconds its derivation took when the family loaded.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz import tables, tilted  # noqa: E402
from qpviz.tables.families import TABLE_STD_RANGE, all_families  # noqa: E402


def cavities(family, rng, n):
    s = np.exp(rng.uniform(math.log(TABLE_STD_RANGE[0]), math.log(TABLE_STD_RANGE[1]), n))
    t_lo, t_hi = family.mean_domain
    if family.likelihood in ("student_t", "laplace"):
        y = rng.uniform(-5, 5, n)
        m = y + rng.uniform(-t_hi, t_hi, n)
    elif family.n_tables > 1:
        y = rng.integers(0, family.n_tables, n).astype(float)
        m = rng.uniform(-t_hi, t_hi, n)
    else:
        y = rng.choice([-1.0, 1.0], n)
        m = rng.uniform(t_lo, t_hi, n)
    return y, m, s * s


def rate(fn, n, repeat=3):
    """(points per CPU second, points per wall second), best of ``repeat``."""
    fn()  # warm up (compilation, cache)
    cpu = wall = math.inf
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return n / max(cpu, 1e-9), n / max(wall, 1e-9)


def fmt(r):
    return f"{r / 1e6:8.2f} M" if r >= 1e5 else f"{r / 1e3:8.2f} k"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="points for the table and closed-form rates")
    parser.add_argument("--n-direct", type=int, default=2000, help="points for direct QP and error")
    parser.add_argument("--only", nargs="*", default=None, help="file or likelihood names")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'family':28s} {'table/s':>11s} {'EP mom/s':>11s} {'direct/s':>11s} "
          f"{'proj ep/s':>11s} {'proj qp/s':>11s} {'qp/ep':>6s} {'max rel err':>11s} {'MB':>5s} {'load s':>6s}"
          "  (CPU-time rates; wall in [])")
    for fam in all_families():
        if args.only and fam.likelihood not in args.only and fam.file_name not in args.only:
            continue
        lik = fam.make_likelihood()
        coef, meta = tables.jit_data(lik)
        if meta.size == 0:
            print(f"{fam.file_name:28s} no usable table file")
            continue
        y, m, v = cavities(fam, rng, args.n)
        out = np.empty(args.n)
        table_cpu, table_wall = rate(lambda: tables.batch.qp_var_batch(coef, meta, y, m, v, out), args.n)
        # EP moments and projections: closed forms are fast, quadratures slow -> size the sample
        quick = lik.name in ("probit", "step", "poisson_square")
        n_ep = args.n if quick else args.n_direct
        ys, ms, vs = y[:n_ep], m[:n_ep], v[:n_ep]
        ep_cpu, _ = rate(lambda: lik.tilted_moments(ys, ms, vs), n_ep)
        pe_cpu, _ = rate(lambda: qpviz.project(lik, ys, ms, vs, method="ep"), n_ep)
        pq_cpu, _ = rate(lambda: qpviz.project(lik, ys, ms, vs, method="qp"), n_ep)
        nd = args.n_direct
        yd, md, vd = y[:nd], m[:nd], v[:nd]
        direct_cpu, _ = rate(lambda: tilted.qp_std(lik, yd, md, vd), nd, repeat=1)
        err = np.max(np.abs(np.sqrt(tables.qp_variance(lik, yd, md, vd)) / tilted.qp_std(lik, yd, md, vd) - 1))
        mem = (coef.nbytes + meta.nbytes) / 1e6
        load = tables.runtime_stats()[fam.file_name]["load_seconds"]
        print(f"{fam.file_name:28s} {fmt(table_cpu)} {fmt(ep_cpu)} {fmt(direct_cpu)} {fmt(pe_cpu)} {fmt(pq_cpu)} "
              f"{pe_cpu / pq_cpu:6.2f} {err:11.2e} {mem:5.2f} {load:6.2f}  [table wall {fmt(table_wall)}]", flush=True)


if __name__ == "__main__":
    main()
