"""Scalable GP classification on the 2013 New York flights (issue 13; paper 003 sec. 4.6), no assertions.

    .venv/bin/python benchmarks/bench_flights.py [--minutes 10] [--inducing 200] [--minibatch 200] [--sep-options DICT ...]
    .venv/bin/python benchmarks/bench_flights.py --synthetic 1000000 [--minutes 2] [--method sep|svi]

Flights mode: "arrival delayed or not" from the paper's eight airline features
(:func:`qpviz.scalable_data.flights`, 10,000 rows held out). The logistic-regression baseline,
then stochastic SVI (and SEP, when ``qpviz.fit(..., method="sep")`` exists) with M inducing
points (K-means centres of a 20,000-row subsample, shared by the methods) and minibatches of
the given size, each for at most ``--minutes`` of training (validation time excluded). Prints
test error and NTLL against wall time and the time to plateau: the first recorded time after
which the NTLL stays within ``--plateau-tol`` of its final value (averaged over five consecutive records).

Synthetic mode (``--synthetic N``): N points of :func:`qpviz.scalable_data.synthetic_classification`
(8 features), one method (``--method``, SEP by default) for ``--minutes``, and the peak resident
memory (``resource.getrusage``) beside the sizes of the data (N x D) and of one N x M matrix, to
show that memory stays O(N M): SEP keeps one N x M array (each site's direction, paper 003), SVI
none (O(N D + M |batch| + M^2)).
"""
from __future__ import annotations

import argparse
import ast
import resource
import time

import numpy as np

import qpviz
from qpviz import scalable_data
from qpviz.inference.fit import METHODS, OPTIONS
from qpviz.inference.inducing import kmeans_inducing
from qpviz.kernels import RBF

#: methods trained beside the baseline, if ``qpviz.fit`` has them (SEP is merged separately)
GP_METHODS = ("sep", "svi")


def initial_inducing(X, M: int, seed: int) -> np.ndarray:
    """K-means centres of a random subsample of at most 20,000 rows (K-means on all rows costs
    minutes at this size and moves the centres little)."""
    rows = np.random.default_rng(seed).permutation(X.shape[0])[:20_000]
    return kmeans_inducing(X[rows], M, seed)


def time_to_plateau(history, tol: float, window: int = 5) -> float:
    """The first recorded wall time after which the NTLL, averaged over ``window`` consecutive
    records (a stochastic iterate's test scores jitter by about 0.005), stays within ``tol`` of
    its final average."""
    ntll = np.array([h["ntll"] for h in history])
    width = min(window, ntll.size)
    smooth = np.convolve(ntll, np.ones(width) / width, mode="full")[:ntll.size]
    smooth[:width] = np.cumsum(ntll[:width]) / np.arange(1, width + 1)  # partial windows at the start
    inside = np.abs(smooth - smooth[-1]) <= tol
    outside = np.flatnonzero(~inside)
    first = 0 if outside.size == 0 else outside[-1] + 1
    return history[min(first, len(history) - 1)]["wall_time"]


def train(method, X, y, X_test, y_test, Z, args, **extra):
    """One GP method for at most ``args.minutes`` of training time (``extra``: more of its options);
    returns the posterior."""
    budget = 60.0 * args.minutes

    def out_of_time(entry):
        print(f"  {method:4s} {entry['wall_time']:8.1f} s  epoch {entry['epoch']:3d}  step {entry['step']:7d}  "
              f"bound {entry['objective']:14.1f}  TE {entry.get('test_error', np.nan):.4f}  "
              f"NTLL {entry.get('ntll', np.nan):.4f}", flush=True)
        if entry["wall_time"] > budget:
            stop["now"] = True

    stop = {"now": False}
    kernel = RBF(variance=1.0, lengthscale=np.full(X.shape[1], 2.0))
    options = dict(inducing=Z, minibatch=args.minibatch, epochs=args.epochs, seed=args.seed,
                   validation=(X_test, y_test), record_every=args.record_every, progress=args.progress,
                   callback=out_of_time, stop=lambda: stop["now"])
    # only the options this method takes (SEP is written separately and may not take them all)
    options = {name: value for name, value in options.items() if name in OPTIONS[method]}
    return qpviz.fit(X, y, "probit", kernel, method=method, optimise=True, **options, **extra)


def report(method, post, tol):
    history = post.history
    last = history[-1]
    print(f"{method}: {len(history)} records, {last['step']} steps, {last['epoch']} epoch(s), "
          f"{last['wall_time']:.1f} s of training; final TE {last['test_error']:.4f}, NTLL {last['ntll']:.4f}; "
          f"time to plateau (5-record mean NTLL within {tol:g} of its final value) {time_to_plateau(history, tol):.1f} s; "
          f"hyper-parameters {post.hyperparameters}")


def flights_mode(args) -> None:
    start = time.perf_counter()
    split = scalable_data.flights(test_size=10_000, seed=args.seed)
    print(f"flights: {split.note}; {split.X_train.shape[0]} training / {split.X_test.shape[0]} test rows; "
          f"loaded in {time.perf_counter() - start:.2f} s")
    baseline = scalable_data.logistic_baseline(*split)
    print(f"logistic regression: TE {baseline['test_error']:.4f}, NTLL {baseline['ntll']:.4f}, "
          f"fit {baseline['fit_time']:.2f} s")
    start = time.perf_counter()
    Z = initial_inducing(split.X_train, args.inducing, args.seed)
    print(f"M = {args.inducing} inducing inputs (K-means of a 20,000-row subsample) in {time.perf_counter() - start:.1f} s; "
          f"minibatch {args.minibatch}; at most {args.minutes:g} min per method")
    runs = [(method, {}) for method in GP_METHODS] + [("sep", ast.literal_eval(text)) for text in args.sep_options]
    for method, extra in runs:
        if method not in METHODS:
            print(f"{method}: skipped (qpviz.fit has no method={method!r} in this build)")
            continue
        if extra:
            print(f"{method} with {extra}:")
        post = train(method, split.X_train, split.y_train, split.X_test, split.y_test, Z, args, **extra)
        report(method, post, args.plateau_tol)
        print(f"{method} vs logistic: TE {post.history[-1]['test_error'] - baseline['test_error']:+.4f}, "
              f"NTLL {post.history[-1]['ntll'] - baseline['ntll']:+.4f}")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def synthetic_mode(args) -> None:
    n, test = args.synthetic, 10_000
    before = peak_rss_mb()
    start = time.perf_counter()
    X, y = scalable_data.synthetic_classification(n + test, dim=8, seed=args.seed)
    print(f"synthetic: {n} + {test} points x 8 features generated in {time.perf_counter() - start:.1f} s; "
          f"peak RSS {before:.0f} MB before, {peak_rss_mb():.0f} MB after")
    X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
    Z = initial_inducing(X_train, args.inducing, args.seed)
    post = train(args.method, X_train, y_train, X_test, y_test, Z, args)
    report(args.method, post, args.plateau_tol)
    mb = 1024.0 ** 2
    print(f"peak RSS {peak_rss_mb():.0f} MB; data X {X.nbytes / mb:.0f} MB; one N x M matrix would be "
          f"{n * args.inducing * 8 / mb:.0f} MB (M = {args.inducing}); minibatch {args.minibatch}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per method")
    parser.add_argument("--sep-options", nargs="*", default=[],
                        help="flights mode: extra SEP runs, dict literals of options (e.g. \"{'step_rule': 'adadelta'}\")")
    parser.add_argument("--inducing", type=int, default=200)
    parser.add_argument("--minibatch", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=1000, help="upper bound; the time budget usually ends first")
    parser.add_argument("--record-every", type=int, default=100, help="steps between validation records")
    parser.add_argument("--plateau-tol", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--synthetic", type=int, default=0, help="N synthetic points instead of the flights")
    parser.add_argument("--method", choices=GP_METHODS, default="sep",
                        help="synthetic mode's method (one per run: the peak RSS is the process's)")
    args = parser.parse_args(argv)
    (synthetic_mode if args.synthetic else flights_mode)(args)


if __name__ == "__main__":
    main()
