"""qpviz.gpdemo: the 1-D presets and the computations of the GP 1-D page."""
from __future__ import annotations

from urllib.parse import parse_qs

import numpy as np
import pytest

import qpviz
from qpviz.gpdemo import oned, presets, sd_ratio
from qpviz.inference.dense import DensePrior
from qpviz.likelihoods import REGISTRY


@pytest.mark.parametrize("name", list(presets.PRESETS))
def test_every_preset_is_seeded_valid_and_described(name):
    first = presets.make(name, 40, seed=3)
    again = presets.make(name, 40, seed=3)
    assert first.X.shape == (first.n, 1) and first.y.shape == (first.n,)
    assert first.n == 40
    np.testing.assert_array_equal(first.X, again.X)
    np.testing.assert_array_equal(first.y, again.y)
    assert first.likelihood in REGISTRY
    lik = qpviz.likelihood(first.likelihood, **first.likelihood_params)
    oned.check_data(first.X, first.y, lik)  # raises if the likelihood refuses the data
    assert first.kernel in oned.KERNELS
    assert presets.DESCRIPTIONS[name] == first.description and len(first.description) > 20


def test_number_of_points_is_clipped_with_a_message():
    big = presets.make("sharp step", 5000)
    assert big.n == presets.MAX_POINTS and "clipped" in big.note
    small = presets.make("sharp step", 1)
    assert small.n == presets.MIN_POINTS and "clipped" in small.note
    with pytest.raises(ValueError, match="whole number"):
        presets.make("sharp step", "many")
    with pytest.raises(ValueError, match="preset must be one of"):
        presets.make("nonsense", 10)
    for seed in (-3, 1.5, "abc", True):  # numpy's own refusal did not name the seed
        with pytest.raises(ValueError, match="the seed must be a whole number >= 0"):
            presets.make("sharp step", 10, seed)


def test_kernel_hyperparameters_are_bounded_with_a_message_naming_them():
    assert oned.make_kernel("RBF", oned.MAX_HYPERPARAMETER, oned.MAX_HYPERPARAMETER).params["variance"] == pytest.approx(1e4)
    for variance, lengthscale, name in ((1e308, 1.0, "kernel variance"), (1.0, 1e308, "lengthscale")):
        with pytest.raises(ValueError, match=f"the {name} must be at most 10000"):
            oned.make_kernel("RBF", variance, lengthscale)


def test_coal_counts_bin_all_191_disasters_by_year():
    years, counts = presets.coal_counts()
    assert years[0] == 1851 and years[-1] == 1962
    assert counts.sum() == 191
    np.testing.assert_array_equal(np.diff(years), 1.0)


def test_w2_of_identical_gaussians_is_zero_and_closed_form_otherwise():
    m, v = np.array([0.3, -1.0]), np.array([0.5, 2.0])
    np.testing.assert_array_equal(oned.w2_marginals(m, v, m, v), 0.0)
    # W2^2 = (m1 - m2)^2 + (s1 - s2)^2: N(0, 1) to N(3, 25) is sqrt(9 + 16) = 5
    assert oned.w2_marginals(0.0, 1.0, 3.0, 25.0) == pytest.approx(5.0)


def _step_data():
    data = presets.make("step likelihood, eps = 0 (EP vs QP differ)", 40)
    return data, qpviz.likelihood(data.likelihood, **data.likelihood_params), oned.make_kernel(
        data.kernel, data.variance, data.lengthscale)


def test_ep_and_qp_agree_in_mean_while_qp_variance_is_at_most_eps():
    data, lik, kernel = _step_data()
    fits = oned.fit_methods(data.X, data.y, lik, kernel, ("ep", "qp"))
    ep, qp = fits["ep"], fits["qp"]
    assert ep.converged and qp.converged
    assert np.max(np.abs(ep.train_mean - qp.train_mean)) < 0.1 * np.max(np.abs(ep.train_mean))
    assert np.all(qp.train_var <= ep.train_var * (1 + 1e-9))
    assert np.min(qp.train_var / ep.train_var) < 0.97  # this preset's point: visibly smaller
    assert ep.history[-1] < 1e-6 and len(ep.history) == ep.n_sweeps
    assert np.isfinite(ep.evidence) and np.isfinite(qp.evidence)
    assert np.all((ep.predictive >= 0) & (ep.predictive <= 1))
    assert ep.site_tau.shape == (data.n,) and np.all(ep.site_tau >= 0)


def test_poisson_square_small_counts_preset_shows_qp_variances_visibly_below_eps():
    """The preset's point (issue #10: EP and QP differ visibly): at the page's n = 60, seed 0 the
    mean of var_QP / var_EP over the GP 1-D grid is at most 0.9 and, in places, QP's band is less
    than half as wide as EP's; the counts are small."""
    data = presets.make("Poisson-square, small counts (EP vs QP differ)", 60, seed=0)
    assert np.mean(data.y <= 2) >= 0.9 and data.y.max() <= 3
    lik = qpviz.likelihood(data.likelihood, **data.likelihood_params)
    kernel = oned.make_kernel(data.kernel, data.variance, data.lengthscale)
    grid = oned.make_grid(data.X)
    ep = qpviz.fit(data.X, data.y, lik, kernel, method="ep")
    qp = qpviz.fit(data.X, data.y, lik, kernel, method="qp")
    assert ep.converged and qp.converged
    ratio = qp.predict_f(grid)[1] / ep.predict_f(grid)[1]
    assert np.mean(ratio) <= 0.9 and np.min(ratio) < 0.25
    assert "0.87" in presets.DESCRIPTIONS["Poisson-square, small counts (EP vs QP differ)"]  # the measured ratio
    assert f"{np.mean(ratio):.2f}" == "0.87"


def test_mcmc_reference_stays_within_the_prior_beyond_the_data_for_poisson_square():
    """The sampler's start sqrt(y) jumps between points; unsmoothed, the chains carried it and the
    reference's latent variance beyond the data reached ~1e5 (kernel variance 9)."""
    data = presets.make("Poisson-square, small counts (EP vs QP differ)", 60, seed=0)
    lik = qpviz.likelihood(data.likelihood)
    kernel = oned.make_kernel(data.kernel, data.variance, data.lengthscale)
    reference = oned.mcmc_reference(data.X, data.y, lik, kernel, chains=2, n_samples=300, burn_in=300, thin=2)
    assert np.max(reference.var) < 1.2 * data.variance
    assert np.all(np.isfinite(reference.mean)) and np.max(np.abs(reference.mean)) < 3.0


def test_gaussian_likelihood_gives_exact_gp_regression():
    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(-3, 3, 25))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(25)
    noise = 0.09
    kernel = oned.make_kernel("Matern52", 1.3, 0.8)
    lik = qpviz.likelihood("gaussian", variance=noise)
    fits = oned.fit_methods(X, y, lik, kernel, ("ep", "qp"), options={m: {"tol": 1e-12} for m in ("ep", "qp")})
    grid = fits["ep"].grid[:, None]
    K = kernel(X) + (noise + qpviz.config.JITTER) * np.eye(25)
    Ks = kernel(X, grid)
    mean = Ks.T @ np.linalg.solve(K, y)
    var = kernel.diag(grid) - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))
    log_ml = -0.5 * y @ np.linalg.solve(K, y) - 0.5 * np.linalg.slogdet(K)[1] - 12.5 * np.log(2 * np.pi)
    for method in ("ep", "qp"):
        np.testing.assert_allclose(fits[method].mean, mean, atol=1e-8)
        np.testing.assert_allclose(fits[method].var, var, atol=1e-8)
        assert fits[method].evidence == pytest.approx(log_ml, abs=1e-6)
        # predictive y band: mean +- 2 sqrt(var + noise)
        np.testing.assert_allclose(fits[method].predictive_upper, mean + 2 * np.sqrt(var + noise), atol=1e-7)


def test_distances_to_mcmc_are_small_and_ranked_sensibly():
    data = presets.make("sharp step", 30, seed=2)
    lik = qpviz.likelihood("probit")
    kernel = oned.make_kernel("RBF", 2.0, 1.5)
    fits = oned.fit_methods(data.X, data.y, lik, kernel, ("ep", "qp", "laplace", "mcmc"),
                            options={"mcmc": {"n_samples": 3000, "burn_in": 500, "thin": 2}})
    assert fits["mcmc"].w2_grid == 0.0 and fits["mcmc"].site_tau is None
    assert np.isnan(fits["mcmc"].evidence)
    for method in ("ep", "qp", "laplace"):
        assert 0 < fits[method].w2_data < 0.5
    # EP is known to be far closer to the exact posterior than Laplace for probit classification
    assert fits["ep"].w2_grid < fits["laplace"].w2_grid


def test_bad_input_says_what_to_change():
    lik = qpviz.likelihood("probit")
    X = np.linspace(0, 1, 5)[:, None]
    with pytest.raises(ValueError, match="both classes"):
        oned.check_data(X, np.ones(5), lik)
    with pytest.raises(ValueError, match="finite"):
        oned.check_data(np.array([[0.0], [np.nan], [1.0]]), np.array([1.0, -1.0, 1.0]), lik)
    with pytest.raises(ValueError, match="> 0"):
        oned.make_kernel("RBF", 0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        oned.make_kernel("RBF", 1.0, float("nan"))
    with pytest.raises(ValueError):
        oned.check_data(X, np.array([0.0, 1.0, -2.0, 3.0, 1.0]), qpviz.likelihood("poisson_exp"))


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_stepping_full_sweeps_reproduces_the_sequential_fit(method):
    data, lik, kernel = _step_data()
    stepper = oned.SiteStepper(data.X, data.y, lik, kernel, method)
    for _ in range(data.n):  # the first sweep site by site
        stepper.step_site()
    assert stepper.n_sweeps == 1 and stepper.position == 0
    for _ in range(3):
        stepper.step_sweep()
    post = qpviz.fit(data.X, data.y, lik, kernel, method=method, parallel=False, order="fixed", max_sweeps=4,
                     warn=False)
    np.testing.assert_allclose(stepper.sweep.tau, post.site_precision, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(stepper.sweep.nu, post.site_nu, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(stepper.history, post.history, rtol=1e-6)


def test_site_view_shows_the_cavity_and_both_projections():
    data, lik, kernel = _step_data()
    stepper = oned.SiteStepper(data.X, data.y, lik, kernel, "qp")
    stepper.step_sweep()
    stepper.step_site()
    view = stepper.site_view()
    assert view.index == 1 and view.y == data.y[1]
    # the cavity divides the site out of the posterior marginal: 1/v_c = 1/var - tau
    assert 1 / view.cavity_var == pytest.approx(1 / stepper.sweep.var[1] - stepper.sweep.tau[1])
    assert view.qp_var <= view.ep_var
    curves = view.densities
    assert {"x", "cavity", "tilted", "ep", "qp"} <= set(curves)
    area = np.trapezoid(curves["tilted"], curves["x"])
    assert area == pytest.approx(1.0, abs=1e-2)


def test_explorer_query_carries_likelihood_y_and_clipped_cavity():
    query, note = oned.explorer_query(qpviz.likelihood("step", eps=0.1), -1.0, 0.5, 4.0)
    parsed = parse_qs(query)
    assert parsed == {"lik": ["step"], "step_eps": ["0.1"], "label": ["-1.0"], "m": ["0.5"], "s": ["2.0"]}
    assert note == ""
    query, note = oned.explorer_query(qpviz.likelihood("poisson_exp"), 3, -20.0, 0.0001)
    parsed = parse_qs(query)
    assert parsed["count"] == ["3"] and parsed["m"] == ["-8.0"] and parsed["s"] == ["0.05"]
    assert "outside the explorer's sliders" in note


def test_optimisation_streams_a_climbing_evidence_and_matches_qpviz_fit():
    data = presets.make("noisy boundary", 60)
    lik = qpviz.likelihood("probit")
    kernel = oned.make_kernel("RBF", 1.0, 3.0)
    seen = []
    fitted, steps = oned.optimise_evidence(data.X, data.y, lik, kernel, on_step=seen.append)
    assert seen == steps and len(steps) >= 3
    evidence = np.array([s.evidence for s in steps])
    assert evidence[-1] > evidence[0] + 1.0
    assert np.all(np.diff(evidence) > -1e-6)  # L-BFGS-B iterates never lose evidence here
    post = qpviz.fit(data.X, data.y, lik, kernel, method="ep", optimise=True)
    assert evidence[-1] == pytest.approx(post.log_marginal_likelihood, abs=1e-3)
    assert fitted.params["lengthscale"] == pytest.approx(post.hyperparameters["lengthscale"], rel=1e-2)


def test_optimisation_can_be_cancelled():
    import threading

    data = presets.make("sine boundary", 30)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(oned.Cancelled):
        oned.optimise_evidence(data.X, data.y, qpviz.likelihood("probit"), oned.make_kernel("RBF", 1.0, 3.0),
                               cancel=cancel)


def test_mcmc_reference_pools_chains_reports_progress_and_agrees_with_ep():
    import threading

    data = presets.make("sharp step", 25, seed=4)
    lik = qpviz.likelihood("probit")
    kernel = oned.make_kernel("RBF", 2.0, 1.5)
    progress = []
    ref = oned.mcmc_reference(data.X, data.y, lik, kernel, chains=3, n_samples=800, burn_in=300,
                              on_progress=lambda done, total: progress.append((done, total)))
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert ref.n_sweeps == 2400 and ref.method == "mcmc"
    ep = oned.fit_methods(data.X, data.y, lik, kernel, ("ep",), reference=ref)["ep"]
    assert ep.w2_data < 0.3
    cancel = threading.Event()
    with pytest.raises(oned.Cancelled):
        oned.mcmc_reference(data.X, data.y, lik, kernel, chains=3, n_samples=100, burn_in=10,
                            on_progress=lambda done, total: cancel.set(), cancel=cancel)


def test_mcmc_reference_moves_for_the_step_likelihood_without_noise():
    data, lik, kernel = _step_data()
    ref = oned.mcmc_reference(data.X, data.y, lik, kernel, chains=2, n_samples=500, burn_in=300)
    ep = oned.fit_methods(data.X, data.y, lik, kernel, ("ep",), reference=ref)["ep"]
    assert np.all(ref.train_var > 0.01)  # a chain stuck at f = 0 has variance 0
    assert np.all(np.sign(ref.train_mean) == data.y)  # labels are certain under eps = 0
    assert ep.w2_data < 0.5


@pytest.mark.parametrize("method", ["ep", "qp"])
def test_a_site_change_is_the_projection_over_the_cavity_and_moves_the_posterior_to_it(method):
    """Issue 21: the step-through's lesson, checked against computations independent of the stepper."""
    data, lik, kernel = _step_data()
    stepper = oned.SiteStepper(data.X, data.y, lik, kernel, method)
    stepper.step_sweep()
    for _ in range(5):
        change = stepper.step_site_change()
    i = change.index
    assert i == 4 and change.status == "updated" and change.x == data.X[i, 0]
    # the cavity: the old site divided out of the posterior before the update
    assert 1 / change.cavity_var == pytest.approx(1 / change.before_var[i] - change.old_tau, rel=1e-10)
    # the tilted moments and the projection, from qpviz.project on that cavity
    tilted = qpviz.project(lik, data.y[i], change.cavity_mean, change.cavity_var, method="ep")
    projected = qpviz.project(lik, data.y[i], change.cavity_mean, change.cavity_var, method=method)
    assert (change.tilted_mean, change.tilted_var) == pytest.approx((float(tilted.mean), float(tilted.var)))
    assert change.projected_mean == pytest.approx(change.tilted_mean, rel=1e-9)  # QP keeps the mean too
    assert (change.projected_var < change.tilted_var) == (method == "qp")
    # the new site = projection / cavity in natural parameters (eq. 6)
    assert change.site_tau == pytest.approx(1 / change.projected_var - 1 / change.cavity_var, rel=1e-7)
    assert change.site_nu == pytest.approx(change.projected_mean / change.projected_var
                                           - change.cavity_mean / change.cavity_var, rel=1e-7)
    # after the update q(f_i) is the projection, and the whole marginal vector is a fresh posterior of the sites
    assert change.after_mean[i] == pytest.approx(change.projected_mean, rel=1e-7)
    assert change.after_var[i] == pytest.approx(change.projected_var, rel=1e-7)
    fresh = DensePrior(kernel, data.X).condition(stepper.sweep.tau, stepper.sweep.nu)
    np.testing.assert_allclose(change.after_mean, fresh.mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(change.after_var, fresh.var, rtol=1e-7, atol=1e-9)
    before = DensePrior(kernel, data.X).condition(
        np.where(np.arange(data.n) == i, change.old_tau, stepper.sweep.tau),
        np.where(np.arange(data.n) == i, change.old_nu, stepper.sweep.nu))
    np.testing.assert_allclose(change.before_var, before.var, rtol=1e-7, atol=1e-9)
    first, second = change.sentences()
    assert first.startswith(f"Site 4 at x = {data.X[i, 0]:.3g}") and f"sd {np.sqrt(change.tilted_var):.3g}" in first
    assert ("EP matched both" in first) == (method == "ep") and f"τ̃ = {change.site_tau:.3g}" in first
    assert (f"moved from {change.before_mean[i]:.3g} ± {np.sqrt(change.before_var[i]):.3g} to "
            f"{change.after_mean[i]:.3g} ± {np.sqrt(change.after_var[i]):.3g}") in second


def test_a_site_change_that_ends_a_sweep_and_a_clipped_site_are_reported():
    data, lik, kernel = _step_data()
    stepper = oned.SiteStepper(data.X, data.y, lik, kernel, "ep")
    for _ in range(data.n):
        change = stepper.step_site_change()
    assert change.index == data.n - 1 and stepper.n_sweeps == 1  # the sweep's last site, re-conditioned after it
    assert change.after_var[-1] == pytest.approx(change.projected_var, rel=1e-7)
    # Student-t, an outlier y = 4 against the prior cavity N(0, 1): the tilted density is bimodal,
    # wider than the cavity (var 1.79), so the site's precision would be < 0 and is clipped to 0
    lik_t = qpviz.likelihood("student_t", nu=3.0, scale=0.3)
    X, y = np.array([[0.0], [50.0]]), np.array([4.0, 0.0])
    stepper = oned.SiteStepper(X, y, lik_t, oned.make_kernel("RBF", 1.0, 1.0), "ep")
    change = stepper.step_site_change()
    assert change.status == "clipped" and change.site_tau == 0.0
    assert change.projected_var == pytest.approx(1.791, abs=1e-3) and change.cavity_var == pytest.approx(1.0)
    assert change.after_var[0] == pytest.approx(1.0)  # a flat site leaves the posterior's variance as it was
    assert "clipped to τ̃ = 0" in change.sentences()[0]
