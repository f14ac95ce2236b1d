"""qpviz.fit with inducing points (issue 12's public API): Power EP and VSGP through the one entry point."""
import numpy as np
import pytest

import qpviz
from qpviz.inference.site_fit import fit_power_ep


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


def _regression(n=120, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=n)


@pytest.mark.parametrize("method", ["fitc", "pitc", "dtc", "vfe"])
def test_fit_reaches_the_closed_form_sparse_regression_methods(method):
    from qpviz.inference.sparse_regression import fit_sparse_regression

    X, y = _regression()
    Z = np.linspace(-3, 3, 10)[:, None]
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=0.6)
    lik = qpviz.likelihood("gaussian", variance=0.05)
    post = qpviz.fit(X, y, lik, kernel, method=method, inducing=Z)
    same = fit_sparse_regression(X, y, lik, kernel, method, Z)
    assert post.log_marginal_likelihood == same.log_marginal_likelihood
    X_new = np.linspace(-3.5, 3.5, 9)[:, None]
    np.testing.assert_array_equal(post.predict_f(X_new)[1], same.predict_f(X_new)[1])


def test_fitc_closed_form_equals_power_ep_sweeps_at_alpha_one():
    X, y = _regression()
    Z = np.linspace(-3, 3, 10)[:, None]
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=0.6)
    lik = qpviz.likelihood("gaussian", variance=0.05)
    closed = qpviz.fit(X, y, lik, kernel, method="fitc", inducing=Z)
    swept = qpviz.fit(X, y, lik, kernel, method="ep", inducing=Z, alpha=1.0)
    assert abs(closed.log_marginal_likelihood - swept.log_marginal_likelihood) < 1e-8
    X_new = np.linspace(-3.5, 3.5, 9)[:, None]
    for a, b in zip(closed.predict_f(X_new), swept.predict_f(X_new)):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_fit_learns_inducing_inputs_for_a_gaussian_likelihood_and_says_where_it_cannot():
    X, y = _regression(n=80)
    Z = np.full((5, 1), -2.5) + 0.1 * np.arange(5)[:, None]  # piled up at one end
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=0.6)
    lik = qpviz.likelihood("gaussian", variance=0.05)
    start = qpviz.fit(X, y, lik, kernel, method="vfe", inducing=Z)
    moved = qpviz.fit(X, y, lik, kernel, method="vfe", inducing=Z, optimise_inducing=True)
    assert moved.log_marginal_likelihood > start.log_marginal_likelihood + 1.0
    assert np.ptp(moved.inducing) > np.ptp(Z)
    with pytest.raises(ValueError, match="Gaussian likelihood"):
        qpviz.fit(X, np.sign(y), "probit", kernel, method="fitc", inducing=Z)
    with pytest.raises(TypeError, match="pass inducing=Z"):
        qpviz.fit(X, np.sign(y), "probit", kernel, method="ep", optimise_inducing=True)
    with pytest.raises(TypeError, match="needs inducing"):
        qpviz.fit(X, y, lik, kernel, method="dtc")


@pytest.mark.parametrize("method, alpha", [("ep", 1.0), ("ep", 0.5), ("qp", 1.0)])
def test_power_ep_learns_inducing_inputs_for_probit_from_the_energy_gradient(method, alpha):
    """optimise_inducing=True for a non-Gaussian likelihood: L-BFGS-B on Z with the energy's analytic
    gradient (state.grad_inducing); piled-up inducing inputs spread and the evidence rises to a
    stationary point."""
    X, f = _regression(n=80)
    y = np.where(f > 0, 1.0, -1.0)
    Z = np.full((5, 1), -2.5) + 0.1 * np.arange(5)[:, None]
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=0.6)
    start = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, alpha=alpha)
    moved = qpviz.fit(X, y, "probit", kernel, method=method, inducing=Z, alpha=alpha, optimise_inducing=True,
                      max_opt_iter=200)
    report = moved.diagnostics["optimisation"]
    assert moved.converged and report["success"]
    assert report["log_evidence"] > start.log_marginal_likelihood + 1.0
    assert np.ptp(report["inducing"]) > np.ptp(Z) + 0.5
    assert np.array_equal(moved.diagnostics["inducing"], report["inducing"])
    assert moved.hyperparameters == start.hyperparameters  # optimise=False: the kernel stays
    refit = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=report["inducing"], alpha=alpha, tol=1e-10)
    assert np.max(np.abs(refit.state.grad_inducing()[0])) < 1e-3


def test_power_ep_learns_kernel_and_inducing_inputs_together():
    X, f = _regression(n=80)
    flip = np.random.default_rng(5).uniform(size=f.size) < 0.15  # label noise: a finite signal variance
    y = np.where((f > 0) ^ flip, 1.0, -1.0)
    Z = np.linspace(-2.0, 2.0, 6)[:, None]
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=2.0)
    # alpha = 0.5: with alpha = 1 (FITC-EP) and free Z this problem's evidence keeps rising with the
    # signal variance (FITC's over-fitting, paper 001; it ends on the optimiser's bound)
    only_kernel = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, alpha=0.5, optimise=True)
    both = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, alpha=0.5, optimise=True,
                     optimise_inducing=True)
    assert both.diagnostics["optimisation"]["log_evidence"] >= only_kernel.log_marginal_likelihood - 1e-6
    assert not np.allclose(both.diagnostics["inducing"], Z)
    assert set(both.diagnostics["optimisation"]["values"]) == {"variance", "lengthscale"}


@pytest.mark.parametrize("spherical", [True, False])
def test_vsgp_learns_centres_and_local_covariances(spherical):
    """VSGP (inducing_cov) with optimise_inducing=True: the energy's gradient in the packed local
    covariances matches finite differences of the converged evidence, and learning raises the evidence
    while keeping the covariances' form (spherical stays spherical)."""
    from qpviz.inference.sparse_prior import SparsePrior

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 2))
    y = np.where(np.sum(X**2, axis=1) < 1.2, 1.0, -1.0)
    Z = X[:5].copy()
    C = np.full(5, 0.2) if spherical else np.tile(np.array([[0.2, 0.05], [0.05, 0.1]]), (5, 1, 1))
    kernel = qpviz.kernels.RBF(variance=2.0, lengthscale=1.0)
    start = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, inducing_cov=C, tol=1e-12, max_sweeps=1000)
    prior = start.prior
    params = prior.inducing_params()
    grad = start.state.grad_inducing_params()
    assert grad.shape == params.shape == (10 + (5 if spherical else 15),)

    def evidence(p):
        trial = prior.with_inducing_params(kernel, p)
        return qpviz.fit(X, y, "probit", kernel, method="ep", prior=trial, tol=1e-12,
                         max_sweeps=1000).log_marginal_likelihood

    step = 1e-5
    for j in (0, 3, 10, params.size - 1):  # a centre's coordinates and the covariance packing
        up, down = params.copy(), params.copy()
        up[j] += step
        down[j] -= step
        assert grad[j] == pytest.approx((evidence(up) - evidence(down)) / (2 * step), abs=1e-6, rel=1e-5)

    learnt = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, inducing_cov=C, optimise_inducing=True,
                       max_opt_iter=50)
    report = learnt.diagnostics["optimisation"]
    assert report["log_evidence"] > start.log_marginal_likelihood + 0.5
    assert isinstance(learnt.prior, SparsePrior) and learnt.prior.spherical_cov == spherical
    cov = report["inducing_cov"]
    if spherical:
        assert np.allclose(cov, cov[:, :1, :1] * np.eye(2))
    assert not np.allclose(cov, start.prior.inducing_cov)


def test_gfitc_training_reports_validation_curves_and_stops_on_request():
    """``method="ep", inducing=Z, optimise=True`` (GFITC) with the training options of SEP / SVI:
    one history entry per converged evaluation with the validation scores; a stop request keeps the
    best point so far, and the posterior is usable."""
    import threading

    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (120, 1))
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)
    X_val = rng.uniform(-3, 3, (50, 1))
    y_val = np.where(np.sin(2 * X_val[:, 0]) > 0, 1.0, -1.0)
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=2.0)
    seen = []
    post = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=8, optimise=True, validation=(X_val, y_val),
                     callback=seen.append)
    history = post.history
    assert len(history) == len(seen) >= 3
    assert {"step", "epoch", "wall_time", "objective", "test_error", "ntll"} <= set(history[0])
    assert seen[0]["inducing"].shape == (8, 1) and "inducing" not in history[0]
    assert history[-1]["test_error"] < history[0]["test_error"] or history[-1]["ntll"] < history[0]["ntll"]
    assert max(e["objective"] for e in history) == pytest.approx(post.diagnostics["optimisation"]["log_evidence"],
                                                                    abs=1e-6)
    stop = threading.Event()
    stopped = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=8, optimise=True,
                        callback=lambda entry: stop.set() if entry["step"] >= 2 else None, stop=stop)
    assert stopped.diagnostics["optimisation"]["stopped"] and len(stopped.history) == 2
    assert np.all(np.isfinite(stopped.predict_proba(X_val)))
    with pytest.raises(TypeError, match="need optimise=True"):
        qpviz.fit(X, y, "probit", kernel, method="ep", inducing=8, validation=(X_val, y_val))
