"""The MCMC reference of the GP 1-D page against EP, for every preset and seeds 0-7 (issue 21).

For each (preset, seed) at N = 60: ``qpviz.gpdemo.oned.mcmc_reference`` with its default settings,
and EP (``fit_method(..., "ep")``). Printed per row: ratio = mean_i |m_MCMC,i| / mean_i |m_EP,i|
at the data (kind "mean"; for a likelihood even in f, whose data identify |f| only, the size
ratio mean_i sqrt(E f_i^2) of MCMC over EP's instead, kind "size", and sign "-"), sign = the
fraction of the points with |m_EP| > 0.25 max |m_EP| where the two means share a sign, max split R-hat and min bulk ESS (the reference's own, NaN when the fit
carries none), the convergence verdict and seconds.

    PYTHONPATH=. python benchmarks/mcmc_reference_check.py [--seeds 8] [--n 60] [--preset NAME ...]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from qpviz import explorer
from qpviz.gpdemo import oned, presets


def check(name: str, seed: int, n: int = 60) -> dict:
    """One row: the reference and EP of preset ``name`` drawn with ``seed``."""
    data = presets.make(name, n, seed)
    lik = explorer.build_likelihood(data.likelihood, **data.likelihood_params)
    kernel = oned.make_kernel(data.kernel, data.variance, data.lengthscale)
    ep = oned.fit_method(data.X, data.y, lik, kernel, "ep")  # no ConvergenceWarning: fit_method reports it
    start = time.perf_counter()
    ref = oned.mcmc_reference(data.X, data.y, lik, kernel)
    seconds = time.perf_counter() - start
    m_ep, m = ep.train_mean, ref.train_mean
    if lik.even_in_f:
        size = np.mean(np.sqrt(m**2 + ref.train_var)) / np.mean(np.sqrt(m_ep**2 + ep.train_var))
        ratio, sign, kind = float(size), math.nan, "size"
    else:
        clear = np.abs(m_ep) > 0.25 * np.max(np.abs(m_ep))
        ratio, sign = float(np.mean(np.abs(m)) / np.mean(np.abs(m_ep))), float(np.mean(np.sign(m[clear]) == np.sign(m_ep[clear])))
        kind = "mean"
    return {"preset": name, "seed": seed, "ratio": ratio, "ratio_kind": kind, "sign": sign,
            "rhat": float(getattr(ref, "rhat", math.nan)), "ess": float(getattr(ref, "ess", math.nan)),
            "converged": bool(ref.converged), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--preset", action="append", help="only these presets (default: all)")
    args = parser.parse_args()
    print(f"{'preset':<44} {'seed':>4} {'ratio':>6} {'kind':>4} {'sign':>5} {'R-hat':>6} {'ESS':>6} {'conv':>5} {'s':>6}")
    for name in args.preset or list(presets.PRESETS):
        for seed in range(args.seeds):
            row = check(name, seed, args.n)
            sign = "-" if math.isnan(row["sign"]) else f"{row['sign']:.2f}"
            print(f"{name[:44]:<44} {seed:>4} {row['ratio']:>6.3f} {row['ratio_kind']:>4} {sign:>5} {row['rhat']:>6.4f} "
                  f"{row['ess']:>6.0f} {'yes' if row['converged'] else 'NO':>5} {row['seconds']:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
