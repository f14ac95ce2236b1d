"""SEP against SVI on a sharp-boundary 2-D problem with label noise: learning curves (issue 24 point 1).

Run:  /work/main/.venv/bin/python benchmarks/bench_sep_accuracy.py [--n 20000] [--inducing 100] [--epochs 2]
Output recorded in benchmarks/results/bench_sep_accuracy.txt.

The issue's setting scaled down so that a run takes about a minute: 200,000 points -> ``--n``
(default 20,000) training points, M = 200 -> ``--inducing`` (default 100), minibatch 200, two
epochs (so 200 steps instead of 2,000). Data: :func:`qpviz.scalable_data.synthetic_classification`
with D = 2: labels are the sign of a random smooth function (a sharp class boundary), each flipped
with probability 0.05 (Bayes error 5%); 5,000 test points from the same draw. Probit likelihood,
RBF kernel (variance 1, length scale 1 to start unless ``--init-variance`` / ``--init-lengthscale``
say otherwise, both learnt), the same K-means inducing inputs for
both methods (learnt too). Each method's history is recorded every ``--every`` steps with the
test error and NTLL (validation time excluded from the clock); printed: the curve (seconds, error,
NTLL) of each, and the learnt signal variance and length scale. A small fit of each method runs
first (numba kernels loaded before the clocks start). Extra SEP option sets to compare
are given with ``--sep-options`` as Python dict literals (e.g. ``"{'damping': 0.5}"``).
"""
from __future__ import annotations

import argparse
import ast
import os

import numpy as np

import qpviz
from qpviz import scalable_data
from qpviz.inference.inducing import kmeans_inducing


def curve(method, X, y, Z, validation, args, **options):
    kernel = qpviz.kernels.RBF(args.init_variance, args.init_lengthscale)
    post = qpviz.fit(X, y, "probit", kernel, method=method, inducing=Z, minibatch=args.minibatch, epochs=args.epochs,
                     optimise=True, seed=args.seed, validation=validation, record_every=args.every, **options)
    return post, [(h["wall_time"], h["test_error"], h["ntll"]) for h in post.history]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--test", type=int, default=5_000)
    parser.add_argument("--inducing", type=int, default=100)
    parser.add_argument("--minibatch", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--every", type=int, default=10, help="steps between recorded points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init-variance", type=float, default=1.0, help="the kernel's signal variance to start from")
    parser.add_argument("--init-lengthscale", type=float, default=1.0, help="the kernel's length scale to start from")
    parser.add_argument("--sep-options", nargs="*", default=[], help="extra SEP runs: dict literals of options")
    args = parser.parse_args()
    X_all, y_all = scalable_data.synthetic_classification(args.n + args.test, dim=2, seed=args.seed,
                                                          label_noise=0.05)
    X, y, validation = X_all[:args.n], y_all[:args.n], (X_all[args.n:], y_all[args.n:])
    Z = kmeans_inducing(X, args.inducing, args.seed)
    print(f"# N = {args.n}, test {args.test}, D = 2, 5% label noise (Bayes error 5%), M = {args.inducing}, "
          f"minibatch {args.minibatch}, {args.epochs} epochs; "
          f"kernel from variance {args.init_variance:g}, length scale {args.init_lengthscale:g}; load {os.getloadavg()}")
    for method in ("svi", "sep"):  # warm-up: numba kernels and caches loaded before the clocks start
        qpviz.fit(X[:500], y[:500], "probit", qpviz.kernels.RBF(), method=method, inducing=Z[:10], minibatch=100,
                  epochs=1, optimise=True)
    runs = [("svi", {}), ("sep", {})] + [("sep", ast.literal_eval(text)) for text in args.sep_options]
    finals = []
    for method, options in runs:
        post, points = curve(method, X, y, Z, validation, args, **options)
        label = method + (f" {options}" if options else "")
        print(f"\n## {label}\n{'seconds':>8} {'error':>7} {'NTLL':>7}")
        for seconds, error, ntll in points:
            print(f"{seconds:>8.2f} {error:>7.4f} {ntll:>7.4f}")
        params = post.kernel.params
        finals.append((label, points[-1], params))
    print(f"\n## final\n{'run':<40} {'seconds':>8} {'error':>7} {'NTLL':>7} {'variance':>9} {'lengthscale':>12}")
    for label, (seconds, error, ntll), params in finals:
        variance = float(np.ravel(params["variance"])[0])
        scale = np.round(np.ravel(params["lengthscale"]), 3).tolist()
        print(f"{label:<40} {seconds:>8.2f} {error:>7.4f} {ntll:>7.4f} {variance:>9.3f} {str(scale):>12}")


if __name__ == "__main__":
    main()
