"""SEP training time with 1 and 2 Dask workers (issue 13, "Distribution"; paper 003 sec. 4.4, Fig. 3 right).

Run:  /work/main/.venv/bin/python benchmarks/bench_sep_workers.py [--inducing 100] [--synthetic 300000]
Output recorded in benchmarks/results/bench_sep_workers.txt.

A fixed amount of work: SEP (probit, ARD RBF, M inducing points, K-means start) on the flights
training set (:func:`qpviz.scalable_data.flights`: 263,853 rows, D = 8) or, with ``--synthetic N``,
on :func:`qpviz.scalable_data.synthetic_classification` (N points, D = 8), ``--epochs`` passes with large
minibatches (``--minibatch``, default N / 3), so that each step's shard work (O(B M^2) site
refinement and gradient) dominates the two round trips to the workers; hyper-parameters and Z
learnt (``optimise=True``). Each worker of a ``LocalCluster(n_workers=k, threads_per_worker=1,
processes=True)`` on 127.0.0.1 holds one shard (a Dask actor with its X, y and sites) and runs
with one BLAS thread (threadpoolctl), so 1 vs 2 workers measures the distribution, not BLAS
threads. A warm-up fit on each cluster compiles the site kernels in the workers first; then the
best of ``--repeats`` timed fits counts (the machine is shared: the load average before and after
is printed too; other jobs on the two cores take the second worker's core). Printed: the training
time (``diagnostics["train_seconds"]``: the step loop and the final evidence pass) and the whole
``qpviz.fit`` call (also sending the shards to the workers), per worker count, and the ratio
1-worker / 2-worker time (goal >= 1.6 on 2 cores). Both runs use the same seed and give the same
fit (printed: the difference of their final log Z_q).

The same code against a remote scheduler (a running ``dask scheduler`` with ``dask worker``
processes on other machines; the workers need qpviz installed):

    python benchmarks/bench_sep_workers.py --scheduler tcp://10.0.0.5:8786

which is ``qpviz.fit(X, y, "probit", kernel, method="sep", client="tcp://10.0.0.5:8786", ...)``:
one shard per worker of that cluster, timed once.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import qpviz
from qpviz import scalable_data
from qpviz.inference.inducing import kmeans_inducing


def run(client, X, y, Z, args):
    kernel = qpviz.kernels.RBF(1.0, np.ones(X.shape[1]))
    options = dict(inducing=Z, minibatch=args.minibatch, epochs=args.epochs, optimise=True, seed=0, client=client)
    start = time.perf_counter()
    post = qpviz.fit(X, y, "probit", kernel, method="sep", **options)
    return post, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=0, help="N synthetic points instead of the flights")
    parser.add_argument("--inducing", type=int, default=100)
    parser.add_argument("--minibatch", type=int, default=None, help="points per step (default N / 3)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="timed fits per worker count (the best counts)")
    parser.add_argument("--scheduler", default=None, help="a remote scheduler address, e.g. tcp://host:8786")
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster

    if args.synthetic:
        X, y = scalable_data.synthetic_classification(args.synthetic, dim=8, seed=0)
        data = "synthetic"
    else:
        split = scalable_data.flights(test_size=10_000, seed=0)
        X, y, data = split.X_train, split.y_train, "flights (training rows)"
    args.minibatch = args.minibatch or -(-X.shape[0] // 3)
    Z = kmeans_inducing(X[np.random.default_rng(0).permutation(X.shape[0])[:20_000]], args.inducing, 0)
    print(f"SEP workers benchmark: {data}, N = {X.shape[0]}, D = {X.shape[1]}, M = {args.inducing}, "
          f"minibatch = {args.minibatch}, "
          f"epochs = {args.epochs}, optimise=True; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    if args.scheduler:
        with Client(args.scheduler) as client:
            workers = len(client.scheduler_info()["workers"])
            post, total = run(client, X, y, Z, args)
        train = post.diagnostics["train_seconds"]
        print(f"remote scheduler {args.scheduler} ({workers} workers): train {train:.2f} s, "
              f"fit {total:.2f} s, log Z_q {post.log_marginal_likelihood:.3f}")
        return
    times, evidence = {}, {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            small = slice(0, 20_000)  # warm-up: numba kernels compiled / loaded in each worker
            warm = argparse.Namespace(**{**vars(args), "minibatch": 10_000, "epochs": 1})
            run(client, X[small], y[small], Z, warm)
            fits = [run(client, X, y, Z, args) for _ in range(args.repeats)]
            post, total = min(fits, key=lambda fit: fit[0].diagnostics["train_seconds"])
        train = post.diagnostics["train_seconds"]
        times[workers], evidence[workers] = train, post.log_marginal_likelihood
        print(f"{workers} worker(s): train {train:7.2f} s   whole fit call {total:7.2f} s   "
              f"steps {post.diagnostics['steps']}   log Z_q {post.log_marginal_likelihood:.6f}")
    print(f"speed-up 1 -> 2 workers (training time): {times[1] / times[2]:.2f}x (goal >= 1.6x)")
    print(f"same fit on 1 and 2 workers: |delta log Z_q| = {abs(evidence[1] - evidence[2]):.2e}; "
          f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
