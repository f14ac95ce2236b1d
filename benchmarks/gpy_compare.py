"""Compare qpviz's EP with GPy's EP on probit classification (agreement and speed).

Run:  /work/venv/bin/python benchmarks/gpy_compare.py [--n 500] [--tol 1e-6]
Output recorded in benchmarks/results/gpy_compare.txt.

Agreement: tight tolerances on both sides (ours: RMS site change < 1e-12; GPy: mean squared
change < 1e-24), max abs differences of sites, marginals, predictions and log evidence.
Speed: both to the paper's tolerance (ours RMS < tol; GPy mean squared < tol^2, its criterion),
sequential updates, wall time of the whole EP run (ours after a warm-up run that compiles numba),
best of ``--repeats`` interleaved runs.
"""
from __future__ import annotations

import os

# One BLAS thread for both libraries: on this shared 2-core machine multi-threaded BLAS was
# 10-30x slower (oversubscription). Set before NumPy is imported; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from qpviz import kernels  # noqa: E402
from qpviz.inference import fit  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import GPy


def data(n, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, 2))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * gen.normal(size=n) > 0, 1.0, -1.0)
    return X, y, gen.normal(size=(50, 2))


def run_gpy(X, y, X_new, epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kern = GPy.kern.RBF(2, variance=1.7, lengthscale=[0.8, 1.4], ARD=True)
        ep = GPy.inference.latent_function_inference.EP(epsilon=epsilon, max_iters=5000, ep_mode="nested")
        start = time.perf_counter()
        model = GPy.core.GP(X, (y[:, None] > 0).astype(float), kernel=kern, likelihood=GPy.likelihoods.Bernoulli(),
                            inference_method=ep)
        elapsed = time.perf_counter() - start
        post, sites, _, _ = ep._ep_approximation
        mean, var = model._raw_predict(X_new)
    return elapsed, dict(tau=sites.tau, nu=sites.v, mean=post.mu, var=np.diag(post.Sigma), pred_mean=mean[:, 0],
                         pred_var=var[:, 0], log_ml=float(model.log_likelihood()))


def run_ours(X, y, X_new, tol):
    start = time.perf_counter()
    post = fit(X, y, "probit", kernels.RBF(1.7, [0.8, 1.4]), tol=tol, max_sweeps=5000)
    elapsed = time.perf_counter() - start
    mean, var = post.predict_f(X_new)
    return elapsed, post, dict(tau=post.site_precision, nu=post.site_nu, mean=post.mean, var=post.var,
                               pred_mean=mean, pred_var=var, log_ml=post.log_marginal_likelihood)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# qpviz EP vs GPy {GPy.__version__} EP, probit, RBF ARD (1.7, [0.8, 1.4]), python {platform.python_version()}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    X, y, X_new = data(args.n)
    run_ours(X[:20], y[:20], X_new, 1e-3)  # compile numba kernels

    _, ref = run_gpy(X, y, X_new, 1e-24)
    _, post, ours = run_ours(X, y, X_new, 1e-12)
    print(f"\n## agreement at N = {args.n} (tight tolerances)")
    for key in ("tau", "nu", "mean", "var", "pred_mean", "pred_var", "log_ml"):
        print(f"max |ours - GPy| {key:<10} {np.max(np.abs(np.asarray(ours[key]) - np.asarray(ref[key]))):.2e}")

    print(f"\n## speed at N = {args.n}, tol = {args.tol:g} (GPy epsilon = tol^2, its mean-squared criterion)")
    t_ours, t_gpy = [], []
    for _ in range(args.repeats):  # interleaved, best of each: the machine is shared
        elapsed, post, _ = run_ours(X, y, X_new, args.tol)
        t_ours.append(elapsed)
        t_gpy.append(run_gpy(X, y, X_new, args.tol**2)[0])
    t_ours, t_gpy = min(t_ours), min(t_gpy)
    print(f"qpviz EP: {t_ours:8.3f} s  ({post.n_sweeps} sweeps; best of {args.repeats})")
    print(f"GPy EP:   {t_gpy:8.3f} s  (best of {args.repeats})")
    print(f"speed-up: {t_gpy / t_ours:8.1f}x")


if __name__ == "__main__":
    main()
