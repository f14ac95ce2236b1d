"""Hyper-parameter fitting: explicit bounds, a warning on a bound, fitted values as numbers."""
from __future__ import annotations

import numpy as np
import pytest

import qpviz
from qpviz import config
from qpviz.inference.fit import OptimiserBoundWarning, resolve_bounds


@pytest.fixture
def data(rng):
    X = np.sort(rng.uniform(-3, 3, 40))[:, None]
    y = np.where(np.sin(1.5 * X[:, 0]) + 0.4 * rng.normal(size=40) > 0, 1.0, -1.0)
    return X, y


def test_fitted_hyperparameters_are_numbers_inside_the_default_bounds(data):
    X, y = data
    post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(1.0, 1.0), method="ep", optimise=True)
    report = post.diagnostics["optimisation"]
    assert set(post.hyperparameters) == {"variance", "lengthscale"}
    assert post.hyperparameters == pytest.approx(report["values"], rel=1e-12)
    assert post.hyperparameters["variance"] == pytest.approx(post.kernel.variance, rel=1e-12)
    assert report["at_bound"] == []
    low, high = config.HYPER_BOUNDS
    assert all(low < v < high for v in post.hyperparameters.values())


def test_a_value_on_a_bound_warns_and_is_reported(data):
    X, y = data
    with pytest.warns(OptimiserBoundWarning, match="lengthscale = 3") as caught:
        post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(1.0, 1.0), method="qp", optimise=True,
                         bounds={"lengthscale": (3.0, 5.0)})
    # the warning points at the caller of qpviz.fit, not inside the package
    assert [w.filename for w in caught if w.category is OptimiserBoundWarning] == [__file__]
    assert "lengthscale" in post.diagnostics["optimisation"]["at_bound"]
    assert post.hyperparameters["lengthscale"] == pytest.approx(3.0, rel=1e-6)
    assert post.diagnostics["optimisation"]["bounds"]["variance"] == pytest.approx(config.HYPER_BOUNDS)


def test_likelihood_parameters_are_named_and_bounded(rng):
    X = np.linspace(-2, 2, 30)[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=30)
    post = qpviz.fit(X, y, qpviz.likelihood("gaussian", variance=1.0), qpviz.kernels.RBF(), optimise=True,
                     optimise_likelihood=True, bounds={"likelihood.variance": (0.01, 1.0)})
    assert 0.01 < post.hyperparameters["likelihood.variance"] < 1.0


def test_bad_bounds_say_what_to_change():
    names = ("variance", "lengthscale")
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        resolve_bounds(names, {"length": (1, 2)})
    with pytest.raises(ValueError, match="0 < low < high"):
        resolve_bounds(names, (2.0, 1.0))
    with pytest.raises(TypeError, match="pair"):
        resolve_bounds(names, {"variance": "wide"})
    assert resolve_bounds(names, (1.0, np.e)) == [(0.0, 1.0), (0.0, 1.0)]
    with pytest.raises(TypeError, match="optimise=True"):
        qpviz.fit(np.zeros((3, 1)), [1, -1, 1], "probit", qpviz.kernels.RBF(), bounds=(1, 2))


def test_vb_fits_its_own_bound_with_the_envelope_gradient(data):
    """fit(method="vb", optimise=True) maximises VB's ELBO (the paper's VB, sec. 6), and the
    gradient it uses, grad_log_marginal of the VB optimum, is the derivative of the optimised ELBO
    (envelope theorem): checked by central differences of re-optimised ELBOs."""
    from qpviz.inference import DensePrior
    from qpviz.inference.vb import run_vb

    X, y = data
    lik = qpviz.likelihood("probit")
    kernel = qpviz.kernels.RBF(1.3, 0.8)

    def elbo(k):
        return run_vb(DensePrior(k, X), lik, y, tol=1e-10, max_iter=5000)

    state, _, converged, _, _ = elbo(kernel)
    assert converged
    grad = state.grad_log_marginal()
    theta, h = kernel.log_params(), 1e-4
    for j in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        numeric = (elbo(kernel.with_log_params(up))[1] - elbo(kernel.with_log_params(down))[1]) / (2 * h)
        assert grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-6)
    post = qpviz.fit(X, y, lik, kernel, method="vb", optimise=True)
    report = post.diagnostics["optimisation"]
    assert report["objective"] == "vb" and post.converged
    assert post.log_marginal_likelihood >= elbo(kernel)[1] - 1e-9  # the fitted bound is higher
    assert post.log_marginal_likelihood == pytest.approx(report["log_evidence"], abs=1e-6)


def test_vb_and_ep_fit_the_same_hyperparameters_for_a_gaussian_likelihood(rng):
    """With a Gaussian likelihood both VB's bound and EP's evidence are the exact log marginal
    likelihood, so both fits (kernel and noise variance) land on the same optimum."""
    X = np.linspace(-2, 2, 25)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=25)
    lik = qpviz.likelihood("gaussian", variance=0.5)
    ep = qpviz.fit(X, y, lik, qpviz.kernels.RBF(), method="ep", optimise=True, optimise_likelihood=True)
    vb = qpviz.fit(X, y, lik, qpviz.kernels.RBF(), method="vb", optimise=True, optimise_likelihood=True)
    assert vb.diagnostics["optimisation"]["objective"] == "vb"
    for name, value in ep.hyperparameters.items():
        assert vb.hyperparameters[name] == pytest.approx(value, rel=1e-3), name
    assert vb.log_marginal_likelihood == pytest.approx(ep.log_marginal_likelihood, abs=1e-5)


@pytest.mark.parametrize("objective", ["ep", "vb"])
def test_a_failed_inner_fit_makes_the_optimiser_step_back_not_stop(data, monkeypatch, objective):
    """Where the inner fit fails (here: forced for log lengthscale < -1, on the way of the first
    trial step), the optimiser must backtrack and go on, not stop at its start (a constant 1e300
    with a zero gradient stopped VB on crabs at its initial kernel in every fold)."""
    import importlib

    fit_module = importlib.import_module("qpviz.inference.hyper")
    X, y = data
    real = {"ep": fit_module.run_sites, "vb": fit_module.run_vb}[objective]
    failed = []

    def sometimes_failing(prior, *args, **kwargs):
        out = real(prior, *args, **kwargs)
        if np.log(prior.kernel.lengthscale) < -1.0:
            failed.append(prior.kernel.lengthscale)
            if objective == "vb":
                return out[0], out[1], False, out[3], out[4]
            out.converged = False
        return out

    monkeypatch.setattr(fit_module, "run_sites" if objective == "ep" else "run_vb", sometimes_failing)
    start = qpviz.kernels.RBF(1.0, 3.0)  # the fitted length scale is far below: the first steps overshoot
    post = qpviz.fit(X, y, "probit", start, method=objective, optimise=True)
    report = post.diagnostics["optimisation"]
    assert report["ep_not_converged"] == len(failed) > 0
    assert post.hyperparameters["lengthscale"] < 2.0 and np.log(post.hyperparameters["lengthscale"]) >= -1.0
    assert report["evaluations"] > len(failed) + 2
