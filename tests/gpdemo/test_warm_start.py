"""EP / QP sites carried over to edited data (qpviz/gpdemo/warm_start.py) and the pages' warm
starts: after a click or a hyper-parameter step the next fit starts from the last one's sites,
needs fewer sweeps, and reaches the fit a cold start reaches (the fixed point does not depend on
where the sweeps start)."""
from __future__ import annotations

import numpy as np
import pytest

import qpviz
from qpviz.gpdemo import oned, oned_model, twod, twod_model
from qpviz.gpdemo.oned_model import GP1DModel
from qpviz.gpdemo.twod_model import GP2DModel
from qpviz.gpdemo.warm_start import carried_sites

INITIAL = (np.full(4, 0.5), np.full(4, -0.25))


def test_kept_points_keep_their_sites_new_ones_start_from_the_initial_site():
    old_X, old_y = np.array([[0.0], [1.0], [2.0]]), np.array([1.0, -1.0, 1.0])
    tau, nu = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    # point 1 removed, a new point at 1.5, the others in another order
    new_X, new_y = np.array([[2.0], [1.5], [0.0], [5.0]]), np.array([1.0, 1.0, 1.0, -1.0])
    got_tau, got_nu = carried_sites(old_X, old_y, tau, nu, new_X, new_y, INITIAL)
    np.testing.assert_array_equal(got_tau, [3.0, 0.5, 1.0, 0.5])
    np.testing.assert_array_equal(got_nu, [30.0, -0.25, 10.0, -0.25])


def test_a_point_with_another_target_or_a_repeated_point_is_matched_once():
    old_X, old_y = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 2.0]]), np.array([1.0, 1.0, 1.0])
    tau, nu = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    # three copies of the repeated point (two old sites, in order, then the initial one); the third
    # point with its label flipped is another observation: the initial site
    new_X = np.array([[0.0, 1.0], [2.0, 2.0], [0.0, 1.0], [0.0, 1.0]])
    new_y = np.array([1.0, -1.0, 1.0, 1.0])
    got_tau, got_nu = carried_sites(old_X, old_y, tau, nu, new_X, new_y, INITIAL)
    np.testing.assert_array_equal(got_tau, [1.0, 0.5, 2.0, 0.5])
    np.testing.assert_array_equal(got_nu, [4.0, -0.25, 5.0, -0.25])


def test_nothing_to_carry_is_none():
    old_X, old_y = np.array([[0.0], [1.0]]), np.array([1.0, 1.0])
    sites = (np.ones(2), np.ones(2))
    assert carried_sites(old_X, old_y, *sites, np.array([[3.0]]), np.array([1.0]), (np.zeros(1), np.zeros(1))) is None
    assert carried_sites(old_X, old_y, None, None, old_X, old_y, (np.zeros(2), np.zeros(2))) is None
    # other input dimensions: other data
    assert carried_sites(old_X, old_y, *sites, np.zeros((2, 2)), old_y, (np.zeros(2), np.zeros(2))) is None


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_gp1d_a_click_starts_from_the_kept_sites_and_reaches_the_cold_fit(method):
    oned_model.FIT_CACHE.clear()
    model = GP1DModel(methods=["ep", "qp"], preset="sharp step")
    x_new = float(np.mean(model.X[:2, 0]))  # between the first two points: a new point
    assert model.click(x_new, 0.9) and model.y.size == model.n_points + 1
    warm = model.fits[method]
    lik, kernel = model.likelihood_object(), model.kernel_object()
    cold = oned.fit_method(model.X, model.y, lik, kernel, method, oned.make_grid(model.X))
    assert warm.converged and cold.converged
    assert warm.n_sweeps < cold.n_sweeps, (warm.n_sweeps, cold.n_sweeps)
    np.testing.assert_allclose(warm.train_mean, cold.train_mean, atol=1e-5)
    np.testing.assert_allclose(warm.train_var, cold.train_var, atol=1e-5)
    np.testing.assert_allclose(warm.evidence, cold.evidence, atol=1e-5)


@pytest.mark.parametrize("change", ["lengthscale", "click"])
def test_gp2d_a_change_starts_from_the_last_sites_and_reaches_the_cold_fit(change, monkeypatch):
    model = GP2DModel(n=40)
    model.drawn = True
    model.ensure_fit()
    assert set(model.fit.sites) == {"ep", "qp"} and all(len(s[0]) == 40 for s in model.fit.sites.values())
    starts = []
    fit_grid = twod.fit_grid

    def spy(*args, inits=None, **kwargs):
        starts.append(inits)
        return fit_grid(*args, inits=inits, **kwargs)

    monkeypatch.setattr(twod, "fit_grid", spy)
    if change == "lengthscale":
        model.lengthscale += 0.05
    else:
        model.tap(0.0, 2.9)  # a new point: 41 points, the 40 others keep their sites
        assert model.y.size == 41
    assert len(starts) == 1 and set(starts[0]) == {"ep", "qp"}
    cold = fit_grid(model.X, model.y, model.kernel_object(), methods=("ep", "qp"), grid_size=twod_model.GRID_SIZE,
                    extent=twod.grid_extent(model.X))
    for method in ("ep", "qp"):
        assert model.fit.converged[method]
        np.testing.assert_allclose(model.fit.mean[method], cold.mean[method], atol=1e-5)
        np.testing.assert_allclose(model.fit.var[method], cold.var[method], atol=1e-5)
        warm_run = qpviz.fit(model.X, model.y, "probit", model.kernel_object(), method=method, init=starts[0][method])
        cold_run = qpviz.fit(model.X, model.y, "probit", model.kernel_object(), method=method)
        assert warm_run.n_sweeps < cold_run.n_sweeps, (method, warm_run.n_sweeps, cold_run.n_sweeps)


def test_gp2d_vb_and_laplace_shown_a_step_still_refits_every_method():
    """VB's and Laplace's posteriors have sites too, but their fits take no ``init``: a step with
    them shown refits all four (the warm start only reaches EP and QP)."""
    model = GP2DModel(n=30, methods=["ep", "qp", "vb", "laplace"])
    model.drawn = True
    model.ensure_fit()
    before = {m: model.fit.mean[m] for m in ("ep", "qp", "vb", "laplace")}
    model.lengthscale += 0.1
    assert model.message == "" and model.fit.kernel.lengthscale == pytest.approx(model.lengthscale)
    for method, mean in before.items():
        assert model.fit.converged[method] and not np.allclose(model.fit.mean[method], mean), method
