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
    with pytest.warns(OptimiserBoundWarning, match="lengthscale = 3"):
        post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(1.0, 1.0), method="qp", optimise=True,
                         bounds={"lengthscale": (3.0, 5.0)})
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
