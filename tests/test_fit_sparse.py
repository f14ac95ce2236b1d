"""qpviz.fit with inducing points (issue 12's public API): Power EP and VSGP through the one entry point."""
import numpy as np
import pytest

import qpviz
from qpviz.inference.sparse_prior import fit_power_ep


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    y = np.where(np.sin(1.5 * X[:, 0]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def test_fit_with_inducing_points_is_power_ep_and_reports_the_sparse_prior():
    X, y = _data()
    Z = np.linspace(-3, 3, 8)[:, None]
    kernel = qpviz.kernels.RBF(variance=2.0, lengthscale=0.8)
    post = qpviz.fit(X, y, "probit", kernel, method="qp", inducing=Z, alpha=0.5)
    same = fit_power_ep(X, y, "probit", kernel, "qp", Z, alpha=0.5)
    X_new = np.linspace(-4, 4, 7)[:, None]
    np.testing.assert_array_equal(post.predict_f(X_new)[0], same.predict_f(X_new)[0])
    assert post.log_marginal_likelihood == same.log_marginal_likelihood
    assert post.converged
    assert post.diagnostics["alpha"] == 0.5 and post.diagnostics["M"] == 8
    np.testing.assert_array_equal(post.diagnostics["inducing"], Z)
    assert post.likelihood.alpha == 1.0  # predictions are for the model, not p(y|f)^alpha
    dense = qpviz.fit(X, y, "probit", kernel, method="qp")
    assert np.max(np.abs(post.predict_proba(X_new) - dense.predict_proba(X_new))) < 0.1


def test_fit_with_an_int_takes_k_means_inducing_inputs_and_optimises_the_kernel():
    X, y = _data(seed=1)
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=2.0)
    start = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=6)
    fitted = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=6, optimise=True)
    assert fitted.diagnostics["inducing"].shape == (6, 1)
    assert fitted.log_marginal_likelihood > start.log_marginal_likelihood + 0.1
    assert fitted.hyperparameters != kernel.params


@pytest.mark.parametrize("options, message", [
    ({"alpha": 0.5}, "pass inducing=Z"),
    ({"inducing_cov": np.ones(3)}, "pass inducing=Z"),
    ({"inducing": 4, "alpha": 0.0}, "alpha must be in"),
    ({"inducing": 4, "alpha": 1.5}, "alpha must be in"),
    ({"inducing": np.zeros((3, 2))}, "column"),
])
def test_fit_refuses_inconsistent_sparse_options_with_a_message(options, message):
    X, y = _data(n=20)
    with pytest.raises((TypeError, ValueError), match=message):
        qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="ep", **options)


def test_fit_refuses_likelihood_optimisation_with_inducing_points():
    X, y = _data(n=20)
    with pytest.raises(ValueError, match="optimise_likelihood"):
        qpviz.fit(X, y[:, None].ravel() * 0.3, "gaussian", qpviz.kernels.RBF(), method="ep", inducing=5,
                  optimise=True, optimise_likelihood=True)
