"""Peer agreement: our FITC, VFE and DTC regression against GPy 1.15's FITC, VarDTC and DTC
inference with the same Z, kernel and noise (evidence, gradients and predictions).

GPy adds its own jitter to K_uu: FITC 1e-6, VarDTC 1e-8 (ours too: qpviz.config.JITTER), DTC
none (its ``pdinv`` adds jitter only when the Cholesky fails). With our default jitter 1e-8 the
differences are the jitter's effect (measured on this problem, N = 200, M = 15: FITC 3.3e-4 in
the evidence and 7.6e-6 in the predictions; DTC 2.9e-7 and 7.3e-8; VarDTC 4.5e-13 and 1e-14;
the tolerances below are ~5x these). Rerun with GPy's jitter (``jitter=``), the remaining
difference is rounding (<= 2e-13 in the evidence, 1e-14 in the predictions): the formulas are
the same and only the jitter differs.

Gradients are compared with both jitters at 0: GPy's FITC gradient in the kernel variance
ignores its own jitter's absence from dK_uu/d variance (it is off by 2.6e-4 = 9e-6 relative
from a finite difference of GPy's own evidence at jitter 1e-6, and within 5e-8 at 0), while
ours is the exact derivative of the jittered evidence.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import qpviz
from qpviz import kernels
from qpviz.inference.sparse_regression import fit_sparse_regression, sparse_log_evidence

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # GPy warns on import when matplotlib is absent
    GPy = pytest.importorskip("GPy")

VARIANCE, LENGTHSCALES, NOISE = 1.3, [0.9, 1.4], 0.2

#: (our method, GPy's inference class name, GPy's jitter, evidence / prediction tolerance at our jitter)
CASES = [("fitc", "FITC", 1e-6, 2e-3, 4e-5), ("vfe", "VarDTC", 1e-8, 1e-10, 1e-12), ("dtc", "DTC", 0.0, 2e-6, 4e-7)]


@pytest.fixture
def problem(rng):
    X = rng.uniform(-3, 3, size=(200, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1]) + 0.3 * rng.normal(size=200)
    return X, y, rng.uniform(-3, 3, size=(15, 2)), rng.uniform(-4, 4, size=(30, 2))


def gpy_sparse(X, y, Z, X_new, inference, jitter=None):
    """GPy's evidence, its gradient (Z, kernel variance, length scales, noise; natural units) and
    latent predictions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        infer = getattr(GPy.inference.latent_function_inference, inference)()
        if jitter is not None:
            infer.const_jitter = jitter
        kern = GPy.kern.RBF(2, variance=VARIANCE, lengthscale=LENGTHSCALES, ARD=True)
        model = GPy.core.SparseGP(X, y[:, None], Z.copy(), kern, GPy.likelihoods.Gaussian(variance=NOISE),
                                  inference_method=infer)
        mean, var = model._raw_predict(X_new)
        return float(np.squeeze(model.log_likelihood())), model.gradient.copy(), mean[:, 0], var[:, 0]


@pytest.mark.parametrize("method, inference, gpy_jitter, tol_value, tol_pred", CASES)
def test_sparse_regression_matches_gpy(method, inference, gpy_jitter, tol_value, tol_pred, problem):
    X, y, Z, X_new = problem
    value, _, mean, var = gpy_sparse(X, y, Z, X_new, inference)
    lik = qpviz.likelihood("gaussian", variance=NOISE)
    kernel = kernels.RBF(VARIANCE, LENGTHSCALES)
    ours = fit_sparse_regression(X, y, lik, kernel, method, Z)  # the package jitter 1e-8
    assert ours.log_marginal_likelihood == pytest.approx(value, abs=tol_value)
    got_mean, got_var = ours.predict_f(X_new)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=tol_pred)
    np.testing.assert_allclose(got_var, var, rtol=0, atol=tol_pred)
    same = fit_sparse_regression(X, y, lik, kernel, method, Z, jitter=gpy_jitter)  # GPy's jitter
    assert same.log_marginal_likelihood == pytest.approx(value, abs=1e-10)
    got_mean, got_var = same.predict_f(X_new)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-11)
    np.testing.assert_allclose(got_var, var, rtol=0, atol=1e-11)
    # gradients at zero jitter (module docstring): ours in log hyper-parameters, GPy's in natural
    # units (d/d log p = p d/dp)
    gradient = gpy_sparse(X, y, Z, X_new, inference, jitter=0.0)[1]
    _, grads = sparse_log_evidence(X, y, kernel, Z, NOISE, method, jitter=0.0, gradients=True)
    natural = np.concatenate([grads["Z"].ravel(), grads["kernel"] / np.exp(kernel.log_params()),
                              [grads["log_noise"] / NOISE]])
    np.testing.assert_allclose(natural, gradient, rtol=1e-7, atol=1e-8)
