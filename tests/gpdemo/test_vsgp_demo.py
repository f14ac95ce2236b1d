"""The VSGP page's computation (qpviz.gpdemo.vsgp_demo); its state and logic: test_vsgp_model.py."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz.gpdemo import twod, vsgp_demo
from qpviz.kernels import RBF

KERNEL = RBF(variance=4.0, lengthscale=0.8)


def _fit_pair(preset, n, seed, M, blur, shape, method="ep", grid_size=20):
    X, y = vsgp_demo.make_preset(preset, n, seed)
    X_test, y_test = vsgp_demo.held_out_set(preset)
    Z = vsgp_demo.kmeans_centres(X, M)
    C = vsgp_demo.local_covariances(X, Z, blur, shape)
    grid = twod.make_grid(X, grid_size)
    vsgp = vsgp_demo.fit_sparse_grid(X, y, KERNEL, Z, C, method, grid, X_test, y_test)
    fitc = vsgp_demo.fit_sparse_grid(X, y, KERNEL, Z, None, method, grid, X_test, y_test)
    return vsgp, fitc


@pytest.mark.parametrize("preset", list(vsgp_demo.PRESETS))
def test_presets_are_seeded_two_class_sets_and_the_test_set_differs(preset):
    X, y = vsgp_demo.make_preset(preset, 120, 3)
    again, _ = vsgp_demo.make_preset(preset, 120, 3)
    assert X.shape == (120, 2) and np.array_equal(X, again) and set(np.unique(y)) == {-1.0, 1.0}
    X_test, y_test = vsgp_demo.held_out_set(preset)
    assert X_test.shape == (vsgp_demo.N_TEST, 2) and not np.allclose(X_test[:120], X)


def test_circle_preset_puts_one_class_inside_the_circle():
    X, y = vsgp_demo.make_preset("circle", 500, 0)
    inside = np.hypot(X[:, 0], X[:, 1]) < 1.5
    assert np.mean(y[inside] == 1.0) > 0.9 and np.mean(y[~inside] == -1.0) > 0.9


@pytest.mark.parametrize("preset", list(vsgp_demo.PRESETS))
def test_local_covariances_are_psd_and_scale_with_the_blur(preset):
    X, _ = vsgp_demo.make_preset(preset, 200, 1)
    Z = vsgp_demo.kmeans_centres(X, 7)
    full = vsgp_demo.local_covariances(X, Z, 1.5, "full")
    assert full.shape == (7, 2, 2)
    assert np.allclose(full, np.swapaxes(full, 1, 2))
    assert np.linalg.eigvalsh(full).min() >= -1e-12
    assert np.all(np.trace(full, axis1=1, axis2=2) > 0)  # K-means clusters hold several points
    spherical = vsgp_demo.local_covariances(X, Z, 1.5, "spherical")
    assert spherical.shape == (7,) and np.allclose(spherical, np.trace(full, axis1=1, axis2=2) / 2)
    assert np.allclose(vsgp_demo.local_covariances(X, Z, 0.75, "full"), full / 2)
    # a centre's cluster: the points nearer to it than to any other centre, their sample covariance
    nearest = np.argmin(((X[:, None] - Z[None]) ** 2).sum(axis=2), axis=1)
    assert np.allclose(full[2], 1.5 * np.cov(X[nearest == 2], rowvar=False, bias=True))


def test_a_lone_or_empty_cluster_has_no_blur_and_bad_settings_are_named():
    X = np.array([[0.0, 0.0], [0.1, 0.2], [-0.1, 0.1], [5.0, 5.0]])
    C = vsgp_demo.local_covariances(X, [[0.0, 0.0], [5.0, 5.0], [9.0, -9.0]], 1.0, "full")
    assert np.all(C[1] == 0) and np.all(C[2] == 0) and np.trace(C[0]) > 0
    with pytest.raises(ValueError, match="blur must be a finite number >= 0"):
        vsgp_demo.local_covariances(X, X[:2], -0.5)
    with pytest.raises(ValueError, match="shape must be one of"):
        vsgp_demo.local_covariances(X, X[:2], 1.0, "diagonal")


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_blur_zero_equals_fitc_on_the_same_centres(method):
    vsgp, fitc = _fit_pair("moons", 150, 0, 8, 0.0, "full", method)
    for name in ("proba", "mean", "var"):
        assert np.max(np.abs(getattr(vsgp, name) - getattr(fitc, name))) < 1e-10, name
    assert abs(vsgp.log_evidence - fitc.log_evidence) < 1e-10
    assert vsgp.test_error == fitc.test_error and abs(vsgp.ntll - fitc.ntll) < 1e-10


def test_a_blur_changes_the_fit():
    vsgp, fitc = _fit_pair("moons", 150, 0, 8, 1.0, "full")
    assert np.max(np.abs(vsgp.proba - fitc.proba)) > 0.02  # measured 0.045
    assert abs(vsgp.log_evidence - fitc.log_evidence) > 0.1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vsgp_beats_fitc_on_the_circle_with_six_basis_points(seed):
    """Paper 002 sec. 5: with few basis points the full local covariances help. Measured here at
    M = 6, blur 1, full: test error 0.085-0.159 vs FITC's 0.109-0.182, NTLL and evidence better
    on each seed. (At M = 3-4 neither model finds the circle: both near the base rate 0.285, and
    VSGP is sometimes worse, e.g. 0.389 at seed 0, M = 4: the claim does not hold there.)"""
    vsgp, fitc = _fit_pair("circle", 200, seed, 6, 1.0, "full", grid_size=10)
    assert vsgp.test_error <= fitc.test_error
    assert vsgp.ntll < fitc.ntll
    assert vsgp.log_evidence > fitc.log_evidence


def test_metrics_are_those_of_the_probit_predictive():
    X, y = vsgp_demo.make_preset("two_gaussians", 100, 0)
    X_test, y_test = vsgp_demo.held_out_set("two_gaussians")
    Z = vsgp_demo.kmeans_centres(X, 5)
    grid = twod.make_grid(X, 10)
    result = vsgp_demo.fit_sparse_grid(X, y, KERNEL, Z, None, "ep", grid, X_test, y_test)
    from qpviz.inference.site_fit import fit_power_ep
    posterior = fit_power_ep(X, y, "probit", KERNEL, inducing=Z)
    log_p = posterior.predictive_log_density(X_test, y_test, exact=True)
    assert abs(result.ntll + np.mean(log_p)) < 1e-8
    mean, _ = posterior.predict_f(X_test)
    assert result.test_error == pytest.approx(np.mean(np.sign(mean) != y_test))
    assert result.proba.shape == (10, 10) and 0.0 <= result.proba.min() and result.proba.max() <= 1.0


def test_ellipses_follow_the_eigenvectors_at_two_standard_deviations():
    C = np.array([[[4.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 9.0]], [[2.0, 1.0], [1.0, 2.0]]])
    shapes = vsgp_demo.ellipses([[0, 0], [1, 1], [2, 2]], C)
    assert np.allclose(shapes["width"], [8.0, 12.0, 4 * np.sqrt(3.0)])
    assert np.allclose(shapes["height"], [4.0, 4.0, 4.0])
    assert np.allclose(np.abs(np.cos(shapes["angle"])), [1.0, 0.0, np.sqrt(0.5)], atol=1e-12)
    circles = vsgp_demo.ellipses([[0, 0]], np.array([0.25]))
    assert np.allclose([circles["width"], circles["height"]], 2.0)


def test_fit_key_is_equal_for_equal_inputs_and_tells_each_input_apart():
    X, y = vsgp_demo.make_preset("two_gaussians", 80, 0)
    X_test, _ = vsgp_demo.held_out_set("two_gaussians")
    Z = vsgp_demo.kmeans_centres(X, 4)
    grid = twod.make_grid(X, 8)
    args = {"X": X, "y": y, "kernel": KERNEL, "centres": Z, "covariances": None, "method": "ep", "grid": grid,
            "X_test": X_test}
    key = vsgp_demo.fit_key(**args)
    assert vsgp_demo.fit_key(**{**args, "X": X.copy(), "centres": Z.copy()}) == key  # equal values, other arrays
    moved = Z.copy()
    moved[0] += 0.5
    flipped = y.copy()
    flipped[0] = -flipped[0]
    changes = {"y": flipped, "kernel": RBF(variance=4.0, lengthscale=0.9), "centres": moved,
               "covariances": np.full(4, 0.1), "method": "qp", "grid": twod.make_grid(X, 9), "X_test": X_test[:-1]}
    for name, value in changes.items():
        assert vsgp_demo.fit_key(**{**args, name: value}) != key, name
    # spherical and full covariances of the same blur are different fits
    full = vsgp_demo.local_covariances(X, Z, 1.0, "full")
    spherical = vsgp_demo.local_covariances(X, Z, 1.0, "spherical")
    assert vsgp_demo.fit_key(**{**args, "covariances": full}) != vsgp_demo.fit_key(**{**args, "covariances": spherical})
