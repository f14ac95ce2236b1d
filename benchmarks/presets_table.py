"""How much EP and QP differ on every data preset of the GP pages: one line per preset.

    python benchmarks/presets_table.py [--out benchmarks/results/presets.txt]

For each GP 1-D preset (qpviz.gpdemo.presets.PRESETS, drawn as the page opens it: n = 60,
seed 0, the preset's likelihood and kernel) and each GP 2-D preset (qpviz.gpdemo.twod.PRESETS:
n = 100, seed 0, probit, RBF with variance 4 and lengthscale 0.8, the page's defaults), EP and
QP are fitted with qpviz.fit (no optimisation) and predict the latent variance on the page's
grid (GP 1-D: 200 points over the data +- 15%; GP 2-D: 60 x 60 over grid_extent). Printed:
name, N, likelihood, mean and min over the grid of var_QP / var_EP, and the log evidence of EP
and of QP (QP's is its sites' EP-style energy). Not a test: it prints and asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz.gpdemo import oned, presets, twod  # noqa: E402
from qpviz.kernels import RBF  # noqa: E402

#: The pages' opening settings.
ONED_N, TWOD_N, SEED = 60, 100, 0
TWOD_KERNEL = {"variance": 4.0, "lengthscale": 0.8}
HEADER = f"{'page':5s} {'preset':58s} {'N':>4s} {'likelihood':15s} {'mean QP/EP':>10s} {'min QP/EP':>9s} " \
         f"{'logZ EP':>10s} {'logZ QP':>10s}"


def ep_qp_line(page: str, name: str, X, y, likelihood, kernel, grid) -> str:
    """One table line: EP and QP fitted to (X, y), their latent variance ratio on ``grid``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a convergence note must not stop the table
        ep = qpviz.fit(X, y, likelihood, kernel, method="ep")
        qp = qpviz.fit(X, y, likelihood, kernel, method="qp")
    ratio = qp.predict_f(grid)[1] / ep.predict_f(grid)[1]
    lik_name = likelihood if isinstance(likelihood, str) else likelihood.name
    return (f"{page:5s} {name:58s} {len(y):4d} {lik_name:15s} {np.mean(ratio):10.3f} {np.min(ratio):9.3f} "
            f"{ep.log_marginal_likelihood:10.3f} {qp.log_marginal_likelihood:10.3f}")


def lines() -> list[str]:
    out = [HEADER]
    for name in presets.PRESETS:
        data = presets.make(name, ONED_N, SEED)
        lik = qpviz.likelihood(data.likelihood, **data.likelihood_params)
        kernel = oned.make_kernel(data.kernel, data.variance, data.lengthscale)
        out.append(ep_qp_line("1-D", name, data.X, data.y, lik, kernel, oned.make_grid(data.X)))
    for name in twod.PRESETS:
        X, y = twod.make_preset(name, TWOD_N, SEED)
        grid = twod.make_grid(X, 60)[2]
        out.append(ep_qp_line("2-D", name, X, y, "probit", RBF(**TWOD_KERNEL), grid))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args()
    table = lines()
    text = "\n".join(table) + "\n"
    print(text, end="")
    if args.out is not None:
        note = (f"# benchmarks/presets_table.py: GP 1-D presets at n = {ONED_N}, GP 2-D at n = {TWOD_N} "
                f"(RBF {TWOD_KERNEL}), seed {SEED}; var ratio over each page's grid\n")
        args.out.write_text(note + text)


if __name__ == "__main__":
    main()
