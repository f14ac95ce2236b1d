"""Peer agreement: our EP against GPy's EP on probit classification with fixed hyper-parameters.

GPy's conventions: Bernoulli likelihood with the probit link and labels {0, 1}; its EP stops
when the *mean squared* site change is below ``epsilon`` (ours: RMS below ``tol``), visits the
sites in a random order and adds no jitter to K. Both are run to a tight tolerance, so the
fixed points must agree to <= 1e-5 (in practice ~1e-8).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from qpviz import kernels
from qpviz.inference import fit

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # GPy warns on import when matplotlib is absent
    GPy = pytest.importorskip("GPy")


def gpy_ep(X, y, variance, lengthscales, X_new, parallel=False):
    """Run GPy's EP; return its sites, posterior marginals, predictions and log evidence."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kern = GPy.kern.RBF(X.shape[1], variance=variance, lengthscale=lengthscales, ARD=True)
        ep = GPy.inference.latent_function_inference.EP(epsilon=1e-24, max_iters=2000, ep_mode="nested",
                                                        parallel_updates=parallel)
        model = GPy.core.GP(X, (y[:, None] > 0).astype(float), kernel=kern, likelihood=GPy.likelihoods.Bernoulli(),
                            inference_method=ep)
        post, sites, _, _ = ep._ep_approximation
        mean, var = model._raw_predict(X_new)
        return {
            "tau": sites.tau.copy(), "nu": sites.v.copy(), "mean": post.mu.copy(), "var": np.diag(post.Sigma).copy(),
            "pred_mean": mean[:, 0], "pred_var": var[:, 0], "log_ml": float(model.log_likelihood()),
        }


@pytest.mark.parametrize("parallel", [False, True])
def test_ep_matches_gpy(parallel, rng):
    X = rng.normal(size=(50, 2))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=50) > 0, 1.0, -1.0)
    X_new = rng.normal(size=(12, 2))
    ref = gpy_ep(X, y, 1.7, [0.8, 1.4], X_new, parallel=parallel)
    ours = fit(X, y, "probit", kernels.RBF(1.7, [0.8, 1.4]), tol=1e-12, parallel=parallel,
               damping=1.0, max_sweeps=2000)
    assert ours.converged
    mean, var = ours.predict_f(X_new)
    for name, got in (("tau", ours.site_precision), ("nu", ours.site_nu), ("mean", ours.mean), ("var", ours.var),
                      ("pred_mean", mean), ("pred_var", var)):
        np.testing.assert_allclose(got, ref[name], rtol=0, atol=1e-5, err_msg=name)
    assert ours.log_marginal_likelihood == pytest.approx(ref["log_ml"], abs=1e-5)
