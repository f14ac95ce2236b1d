"""Sparse GP regression: our FITC / VFE / DTC against GPy 1.15's FITC / VarDTC / DTC (speed).

Run:  /work/main/.venv/bin/python benchmarks/bench_sparse_gpy.py [--repeats 3]
Output recorded in benchmarks/results/bench_sparse_gpy.txt.

Same data, Z, ARD RBF kernel (D = 8) and noise on both sides; N in (2000, 20000), M in (50, 200).
Timed (best of ``--repeats``, interleaved):

* evidence: ours ``sparse_log_evidence(..., gradients=False)``; GPy's ``inference()`` call,
  which always also forms its dL/dK_mm, dL/dK_nm and dL/d diag K_nn (it cannot skip them);
* evidence + gradient: ours with ``gradients=True`` (kernel log hyper-parameters, noise and Z);
  GPy's ``parameters_changed()`` (inference, then the kernel's gradients in its parameters and Z:
  what one step of its optimiser costs);
* prediction: latent mean and variance at 2000 new inputs (ours ``predict_f``, GPy's
  ``_raw_predict``).

The ratio is GPy's time / ours (> 1: ours is faster). Agreement is in tests/inference/test_sparse_gpy.py.
"""
from __future__ import annotations

import os

# One BLAS thread for both libraries (as benchmarks/gpy_compare.py: on this shared 2-core machine
# multi-threaded BLAS oversubscribes). Set before NumPy is imported; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import qpviz  # noqa: E402
from qpviz import kernels  # noqa: E402
from qpviz.inference.sparse_regression import fit_sparse_regression, sparse_log_evidence  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import GPy

D = 8
VARIANCE, LENGTHSCALE, NOISE = 1.0, 2.0, 0.1
#: ours, GPy's inference class, GPy's jitter (ours is rerun with it, so both solve the same problem)
METHODS = (("fitc", "FITC", 1e-6), ("vfe", "VarDTC", 1e-8), ("dtc", "DTC", 0.0))


def problem(n, m, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, D))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2]) + np.sqrt(NOISE) * gen.normal(size=n)
    return X, y, X[gen.choice(n, m, replace=False)].copy(), gen.normal(size=(2000, D))


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def gpy_model(X, y, Z, inference, jitter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        infer = getattr(GPy.inference.latent_function_inference, inference)()
        infer.const_jitter = jitter
        kern = GPy.kern.RBF(D, variance=VARIANCE, lengthscale=np.full(D, LENGTHSCALE), ARD=True)
        return GPy.core.SparseGP(X, y[:, None], Z.copy(), kern, GPy.likelihoods.Gaussian(variance=NOISE),
                                 inference_method=infer)


def measure(n, m, method, inference, jitter, repeats):
    X, y, Z, X_new = problem(n, m)
    kernel = kernels.RBF(VARIANCE, np.full(D, LENGTHSCALE))
    model = gpy_model(X, y, Z, inference, jitter)
    lik = qpviz.likelihood("gaussian", variance=NOISE)
    post = fit_sparse_regression(X, y, lik, kernel, method, Z, jitter=jitter)
    gpy_value = float(np.squeeze(model.log_likelihood()))
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows["evidence"] = (
            best_of(repeats, lambda: sparse_log_evidence(X, y, kernel, Z, NOISE, method, jitter=jitter)),
            best_of(repeats, lambda: model.inference_method.inference(model.kern, model.X, model.Z, model.likelihood,
                                                                       model.Y)))
        rows["evidence + gradient"] = (
            best_of(repeats, lambda: sparse_log_evidence(X, y, kernel, Z, NOISE, method, jitter=jitter,
                                                         gradients=True)),
            best_of(repeats, model.parameters_changed))
        rows["prediction (2000 points)"] = (best_of(repeats, lambda: post.predict_f(X_new)),
                                            best_of(repeats, lambda: model._raw_predict(X_new)))
    return rows, abs(post.log_marginal_likelihood - gpy_value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# bench_sparse_gpy: ours vs GPy {GPy.__version__}, ARD RBF D = {D}, best of {args.repeats}, "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}; {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, NumPy {np.__version__}")
    print(f"{'method':<13}{'N':>7}{'M':>5}  {'what':<26}{'ours [s]':>10}{'GPy [s]':>10}{'GPy/ours':>10}"
          f"{'|dlogZ|':>10}")
    for n in (2000, 20000):
        for m in (50, 200):
            for method, inference, jitter in METHODS:
                rows, diff = measure(n, m, method, inference, jitter, args.repeats)
                for what, (ours, theirs) in rows.items():
                    print(f"{method + '/' + inference:<13}{n:>7}{m:>5}  {what:<26}{ours:>10.4f}{theirs:>10.4f}"
                          f"{theirs / ours:>10.2f}{diff:>10.1e}", flush=True)


if __name__ == "__main__":
    main()
