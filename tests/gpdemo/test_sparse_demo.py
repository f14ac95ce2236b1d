"""The Sparse page's computation (qpviz.gpdemo.sparse_demo) and its model (qpviz.gpdemo.sparse_model.SparseModel)."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz.gpdemo import jobs, oned, sparse_demo, sparse_model


def regression(n=30, seed=1):
    data = sparse_demo.make_preset("smooth regression (N = 200)", n, seed)
    lik = sparse_demo.make_likelihood("gaussian", data.noise)
    kernel = oned.make_kernel("RBF", data.variance, 1.5)
    return data.X, data.y, lik, kernel, oned.make_grid(data.X)


def test_fitc_vfe_and_power_ep_equal_the_exact_gp_at_z_equal_x():
    X, y, lik, kernel, grid = regression()
    exact = sparse_demo.fit_sparse(X, y, lik, kernel, "exact", X, grid)
    for method in ("fitc", "vfe", "power_ep"):
        fit = sparse_demo.fit_sparse(X, y, lik, kernel, method, X, grid, alpha=0.3)
        # K_uu = K_ff with the package's jitter: equal up to that jitter
        assert fit.evidence == pytest.approx(exact.evidence, abs=1e-5), method
        np.testing.assert_allclose(fit.mean, exact.mean, atol=1e-3)
        np.testing.assert_allclose(fit.var, exact.var, atol=1e-4)


def test_power_ep_at_the_ends_of_the_slider_is_vfe_and_fitc():
    X, y, lik, kernel, grid = regression()
    Z = sparse_demo.initial_inducing(X, 4)
    fits = {m: sparse_demo.fit_sparse(X, y, lik, kernel, m, Z, grid) for m in ("fitc", "vfe")}
    at_one = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, alpha=1.0)
    at_zero = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, alpha=0.0)
    assert at_one.evidence == pytest.approx(fits["fitc"].evidence, abs=1e-8)
    assert at_zero.evidence == pytest.approx(fits["vfe"].evidence, abs=1e-8)
    assert fits["fitc"].evidence != pytest.approx(fits["vfe"].evidence, abs=1e-3)  # M = 4 is far from exact


def test_evidence_curve_ends_are_vfe_and_fitc_and_vfe_is_a_lower_bound():
    """Facts with a proof: the curve's ends are the VFE bound and FITC's evidence (sparse_demo's
    mapping), VFE's bound is at most the exact log evidence (Titsias 2009), and with Z = X every
    alpha gives the exact evidence (the curve is flat)."""
    X, y, lik, kernel, grid = regression()
    Z = sparse_demo.initial_inducing(X, 4)
    curve = sparse_demo.evidence_curve(X, y, lik, kernel, Z)
    exact = sparse_demo.fit_sparse(X, y, lik, kernel, "exact", Z, grid).evidence
    vfe = sparse_demo.fit_sparse(X, y, lik, kernel, "vfe", Z, grid).evidence
    fitc = sparse_demo.fit_sparse(X, y, lik, kernel, "fitc", Z, grid).evidence
    assert curve.shape == sparse_demo.ALPHA_GRID.shape and np.all(np.isfinite(curve))
    assert curve[0] == pytest.approx(vfe, abs=1e-8) and curve[-1] == pytest.approx(fitc, abs=1e-8)
    assert vfe <= exact + 1e-9
    flat = sparse_demo.evidence_curve(X, y, lik, kernel, X, alphas=[0.0, 0.5, 1.0])
    np.testing.assert_allclose(flat, exact, atol=1e-5)


def test_dtc_and_pitc_are_not_faked():
    X, y, lik, kernel, grid = regression()
    Z = sparse_demo.initial_inducing(X, 4)
    for method in ("dtc", "pitc"):
        fit = sparse_demo.fit_sparse(X, y, lik, kernel, method, Z, grid)
        if sparse_demo.closed_forms_available():
            assert fit.available and np.isfinite(fit.evidence)
        else:
            assert not fit.available and fit.mean is None and np.isnan(fit.evidence)
            assert "not available yet" in fit.label


def test_classification_uses_dense_ep_and_power_ep_and_says_dtc_does_not_apply():
    data = sparse_demo.make_preset("probit step", 40, 0)
    lik = sparse_demo.make_likelihood("probit", None)
    kernel = oned.make_kernel("RBF", data.variance, data.lengthscale)
    grid = oned.make_grid(data.X)
    Z = sparse_demo.initial_inducing(data.X, 6)
    exact = sparse_demo.fit_sparse(data.X, data.y, lik, kernel, "exact", Z, grid)
    fitc = sparse_demo.fit_sparse(data.X, data.y, lik, kernel, "fitc", Z, grid)
    dtc = sparse_demo.fit_sparse(data.X, data.y, lik, kernel, "dtc", Z, grid)
    assert "dense EP" in exact.label and "FITC-EP" in fitc.label
    assert not dtc.available and "Gaussian only" in dtc.label and "Gaussian likelihood only" in dtc.note
    assert np.isfinite(exact.evidence) and np.isfinite(fitc.evidence)


def test_presets_are_seeded_and_have_their_shapes():
    a = sparse_demo.make_preset("gap in the data", None, 3)
    b = sparse_demo.make_preset("gap in the data", None, 3)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.any((a.X > -1.5) & (a.X < 1.5))  # the gap
    assert sparse_demo.make_preset("pseudo-inputs too few (M = 3)").m == 3
    piled = sparse_demo.make_preset("pseudo-inputs piled up")
    assert np.ptp(piled.Z) < 0.15 * np.ptp(piled.X)  # 1.2 of 10
    assert sparse_demo.make_preset("smooth regression (N = 200)").X.shape == (200, 1)
    assert sparse_demo.make_preset("sine boundary").classification


@pytest.mark.parametrize("noise, text", [(0.0, "must be > 0"), (-1, "must be > 0"), ("abc", "must be a number"),
                                         (float("nan"), "finite")])
def test_bad_noise_says_what_to_change(noise, text):
    with pytest.raises(ValueError, match=text):
        sparse_demo.make_likelihood("gaussian", noise)


def test_bad_inputs_say_what_to_change():
    X, y, lik, kernel, grid = regression(n=10)
    with pytest.raises(ValueError, match="M <= 10"):
        sparse_demo.check_inputs(X, y, lik, np.linspace(0, 1, 11))
    with pytest.raises(ValueError, match="finite"):
        sparse_demo.check_inputs(X, y, lik, [0.0, np.nan])
    with pytest.raises(ValueError, match="M <= 10"):
        sparse_demo.initial_inducing(X, 11)
    with pytest.raises(ValueError, match="alpha must be between 0"):
        sparse_demo.power_of(1.5)
    y_bad = y.copy()
    y_bad[0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        sparse_demo.fit_sparse(X, y_bad, lik, kernel, "fitc", X[:3], grid)


def preset_inputs(name):
    """(X, y, likelihood, kernel, Z, grid) of a preset as the page starts it."""
    data = sparse_demo.make_preset(name)
    lik = sparse_demo.make_likelihood(data.likelihood, data.noise)
    kernel = oned.make_kernel("RBF", data.variance, data.lengthscale)
    return data.X, data.y, lik, kernel, sparse_demo.initial_inducing(data.X, data.m), oned.make_grid(data.X)


@pytest.mark.parametrize("projection", ["ep", "qp"])
@pytest.mark.parametrize("preset", ["sine boundary", "smooth regression (N = 200)"])
def test_a_warm_start_reaches_the_cold_fit(preset, projection):
    """From the sites of the fit at alpha 0.45: an alpha step to 0.5, and a drag of one pseudo-input,
    give the cold fit's evidence and predictions (within 1e-6); with the probit likelihood in fewer
    sweeps (a Gaussian likelihood's sites are exact after one sweep from anywhere: 2 sweeps either way)."""
    X, y, lik, kernel, Z, grid = preset_inputs(preset)
    before = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, 0.45, projection)
    assert before.sites is not None and before.sites[0].shape == y.shape
    dragged = Z.copy()
    dragged[Z.shape[0] // 2] += 0.3
    for alpha, Z_new in ((0.5, Z), (0.45, dragged)):
        cold = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z_new, grid, alpha, projection)
        warm = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z_new, grid, alpha, projection,
                                      start=before.sites)
        assert warm.converged and warm.evidence == pytest.approx(cold.evidence, abs=1e-6)
        np.testing.assert_allclose(warm.mean, cold.mean, atol=1e-6)
        np.testing.assert_allclose(warm.var, cold.var, atol=1e-6)
        if lik.name == "probit":
            assert warm.n_sweeps < cold.n_sweeps, (alpha, warm.n_sweeps, cold.n_sweeps)
        else:
            assert warm.n_sweeps <= cold.n_sweeps == 2


def test_after_a_drag_power_ep_moved_like_vfe_and_fitc_needs_fewer_sweeps():
    """A drag moves Power QP's sites (alpha 0.5) about as it moves the VFE and FITC sites, mixed by
    alpha: from there fewer sweeps than from the old sites, to the same fit."""
    X, y, lik, kernel, Z, grid = preset_inputs("sine boundary")
    dragged = Z.copy()
    dragged[Z.shape[0] // 2] += 0.4

    def fits(Z_now, start=None):
        return {m: sparse_demo.fit_sparse(X, y, lik, kernel, m, Z_now, grid, 0.5, "qp",
                                          start=None if start is None else start[m].sites)
                for m in ("vfe", "fitc", "power_ep")}

    old = fits(Z)
    new = fits(dragged, old)
    moved = sparse_demo.moved_start(old["power_ep"].sites, 0.5, (old["vfe"].sites, new["vfe"].sites),
                                    (old["fitc"].sites, new["fitc"].sites))
    from_moved = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", dragged, grid, 0.5, "qp", start=moved)
    assert from_moved.n_sweeps < new["power_ep"].n_sweeps, (from_moved.n_sweeps, new["power_ep"].n_sweeps)
    assert from_moved.evidence == pytest.approx(new["power_ep"].evidence, abs=1e-6)
    np.testing.assert_allclose(from_moved.mean, new["power_ep"].mean, atol=1e-6)


def test_a_start_that_does_not_fit_the_data_falls_back_to_a_cold_fit():
    X, y, lik, kernel, Z, grid = preset_inputs("probit step")
    cold = sparse_demo.fit_sparse(X, y, lik, kernel, "fitc", Z, grid)
    wrong_n = (np.ones(y.size + 1), np.zeros(y.size + 1))
    warm = sparse_demo.fit_sparse(X, y, lik, kernel, "fitc", Z, grid, start=wrong_n)
    assert warm.evidence == cold.evidence and warm.n_sweeps == cold.n_sweeps


def test_the_evidence_curve_chains_its_alphas_to_the_cold_fits():
    """Chained alone, or seeded with the page's VFE and Power-QP fits (as the page does): the cold
    fits' evidence at every alpha."""
    X, y, lik, kernel, Z, grid = preset_inputs("sine boundary")
    alphas = [0.0, 0.1, 0.3, 0.35]
    cold = [sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, a, "qp").evidence for a in alphas]
    seed = sparse_demo.SiteTrail()
    seed.add(sparse_demo.VFE_ALPHA, Z, sparse_demo.fit_sparse(X, y, lik, kernel, "vfe", Z, grid).sites)
    seed.add(0.5, Z, sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, 0.5, "qp").sites)
    for trail in (None, seed):
        curve = sparse_demo.evidence_curve(X, y, lik, kernel, Z, "qp", alphas=alphas, trail=trail)
        np.testing.assert_allclose(curve, cold, atol=1e-6)


def test_an_alpha_step_after_two_starts_from_the_secant_in_one_sweep():
    """Two fits on the same Z at alpha 0.4 and 0.45: the next step, 0.5, starts from the secant through
    their sites (SiteTrail) and needs fewer sweeps than from the last sites alone, same fit."""
    X, y, lik, kernel, Z, grid = preset_inputs("sine boundary")
    trail = sparse_demo.SiteTrail()
    fits = {}
    for alpha in (0.4, 0.45):
        fits[alpha] = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, alpha, "qp",
                                             start=trail.start(alpha, Z))
        trail.add(alpha, Z, fits[alpha].sites)
    last = fits[0.45].sites
    secant = trail.start(0.5, Z)
    assert secant is not last and np.all(secant[0] >= 0)
    np.testing.assert_allclose(secant[1], 2 * last[1] - fits[0.4].sites[1], rtol=1e-12)
    between = trail.start(0.425, Z)  # half-way: the mean of the two fits' sites
    np.testing.assert_allclose(between[1], (last[1] + fits[0.4].sites[1]) / 2, rtol=1e-12)
    assert trail.start(0.5, Z + 0.1) is last and trail.start(0.3, Z) is last  # a drag, a step back past 0.4
    cold = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, 0.5, "qp")
    from_last = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, 0.5, "qp", start=last)
    from_secant = sparse_demo.fit_sparse(X, y, lik, kernel, "power_ep", Z, grid, 0.5, "qp", start=secant)
    assert from_secant.n_sweeps < from_last.n_sweeps < cold.n_sweeps
    assert from_secant.evidence == pytest.approx(cold.evidence, abs=1e-6)
    np.testing.assert_allclose(from_secant.mean, cold.mean, atol=1e-6)


# -- the page's model (no browser) ------------------------------------------------------------
@pytest.fixture
def model():
    return sparse_model.SparseModel(background=False)


def test_model_keeps_the_last_good_fit_on_bad_input(model):
    fits, z = model.fits, model.Z.copy()
    model.noise = "0"
    assert "noise variance must be > 0" in model.message and model.fits is fits
    model.noise = 0.05
    assert model.message == "" and model.fits is not fits
    fits = model.fits
    model.z_text = "1, two"
    assert "numbers separated by commas" in model.message and model.fits is fits
    np.testing.assert_array_equal(model.Z, z)
    model.m = model.X.shape[0] + 1
    assert f"M <= {model.X.shape[0]}" in model.message and model.fits is fits


def test_model_alpha_changes_power_ep_only_and_cached_fits_come_back(model):
    before = model.fits
    model.alpha = 0.9
    after = model.fits
    assert after["power_ep"].evidence != before["power_ep"].evidence
    assert after["fitc"] is before["fitc"]  # cached: same key
    model.alpha = 0.5
    assert model.fits["power_ep"] is before["power_ep"]  # flipping back is a cache hit
    assert model.curve is not None and model.curve.shape == sparse_demo.ALPHA_GRID.shape


def test_model_new_pseudo_inputs_refit_and_m_follows(model):
    before = model.fits["fitc"].evidence
    assert model.set_inducing([-4.0, -2.0, 2.0, 4.0])
    assert model.m == 4 and model.z_text == "-4, -2, 2, 4"
    assert model.fits["fitc"].evidence != before
    model.m = 6  # K-means restart
    assert model.Z.shape == (6, 1) and model.message == ""


def test_model_warm_starts_on_an_alpha_step_and_not_after_a_preset_change(model, monkeypatch):
    monkeypatch.setattr(sparse_model, "FIT_CACHE", jobs.LRUCache(512))  # every fit below is computed
    starts = {}
    fit_sparse = sparse_demo.fit_sparse

    def recording(X, y, lik, kernel, method, *args, start=None, **kwargs):
        starts[method] = start
        return fit_sparse(X, y, lik, kernel, method, *args, start=start, **kwargs)

    monkeypatch.setattr(sparse_demo, "fit_sparse", recording)
    assert model.alpha == 0.5
    at_50, noise = model.fits["power_ep"].sites, model.noise
    model.noise = "0"  # a failed refit keeps the last good sites
    model.alpha = 0.55  # (fails too: the noise is still bad)
    assert "noise variance" in model.message and starts == {}
    model.noise = noise  # the preset's noise again: the same likelihood, so the last good fits start these
    assert starts["power_ep"] is at_50 and starts["fitc"] is not None and starts["exact"] is None
    at_55 = model.fits["power_ep"].sites
    starts.clear()
    model.alpha = 0.6  # a slider step: only Power EP refits, from the secant through 0.5 and 0.55
    assert list(starts) == ["power_ep"]
    np.testing.assert_allclose(starts["power_ep"][0], np.maximum(2 * at_55[0] - at_50[0], 0.0), rtol=1e-12)
    np.testing.assert_allclose(starts["power_ep"][1], 2 * at_55[1] - at_50[1], rtol=1e-12)
    at_60 = model.fits["power_ep"].sites
    starts.clear()
    model.alpha = 0.45  # a step back (and beyond): from the last sites
    assert list(starts) == ["power_ep"] and starts["power_ep"] is at_60
    starts.clear()
    model.projection = "qp"  # another projection: nothing of its own to start from yet
    assert list(starts) == ["power_ep"] and starts["power_ep"] is None
    starts.clear()
    model.preset = "probit step"  # new data, likelihood and kernel: every fit cold
    assert {"exact", "fitc", "vfe", "power_ep"} <= set(starts) and all(s is None for s in starts.values())
    starts.clear()
    before = {m: f.sites for m, f in model.fits.items() if f.sites is not None}
    model.set_inducing(model.Z[:, 0] + 0.1)  # a drag on the new preset starts from its fits
    assert "exact" not in starts and starts["fitc"] is before["fitc"] and starts["vfe"] is before["vfe"]
    after = model.fits  # Power EP: its sites moved as the drag moved VFE's and FITC's
    expected = sparse_demo.moved_start(before["power_ep"], model.alpha, (before["vfe"], after["vfe"].sites),
                                       (before["fitc"], after["fitc"].sites))
    for got, want in zip(starts["power_ep"], expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_new_pseudo_inputs_stop_the_old_curve_before_fitting_and_a_failed_fit_restarts_it(monkeypatch):
    monkeypatch.setattr(sparse_model, "CURVE_CACHE", jobs.LRUCache(64))  # the curve is computed
    model = sparse_model.SparseModel(background=True)
    old = model._curve_job
    assert model.curve_pending and not old["cancel"].is_set()
    stopped_before_fitting = []

    def failing(*args, **kwargs):
        stopped_before_fitting.append(old["cancel"].is_set())
        raise ArithmeticError("no fixed point")

    monkeypatch.setattr(sparse_demo, "fit_sparse", failing)
    assert not model.set_inducing(model.Z[:, 0] + 0.1)
    assert stopped_before_fitting == [True] and "no fixed point" in model.message
    again = model._curve_job  # the plots show the last good fits: their curve is computed after all
    assert again is not old and again["key"] == old["key"] and not again["cancel"].is_set()
    again["future"].result(timeout=120)
    model.poll_curve()
    assert not model.curve_pending and np.all(np.isfinite(model.curve))


@pytest.fixture(scope="module")
def sparse_page_built():
    import sparse_page

    page = sparse_page.SparsePage()
    yield page
    page.model.cancel_curve()


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")  # (the page's widgets)
@pytest.mark.parametrize("name, typed", [("n_points", "abc"), ("n_points", "100000"), ("n_points", "1.5"),
                                          ("seed", "-3"), ("seed", "1.5"), ("noise", "0"), ("noise", "garbage"),
                                          ("variance", -1.0), ("lengthscale", 0.0)])
def test_page_a_bad_typed_number_is_named_with_its_range_the_box_shows_the_value_kept(sparse_page_built, name, typed):
    """Issue 21: the page's number boxes dropped letters or clipped silently; its text boxes kept bad text."""
    import sparse_page
    from safe_text import shown

    page, field = sparse_page_built, sparse_page.TYPED[name]
    box, kept, fits = getattr(page, name), getattr(page.model, name), page.model.fits
    box.value = typed
    quoted = repr(typed) if isinstance(typed, str) else f"{typed}"
    assert shown(page.alert.object) == f"{field.name}: {quoted} was not applied; type {field.accepted}; kept {field.show(kept)}"
    assert page.alert.visible and page.model.fits is fits and getattr(page.model, name) == kept
    assert box.value == (field.show(kept) if isinstance(typed, str) else kept)  # the value in use, shown again
    other = {"n_points": "40", "seed": "3", "noise": "0.1", "variance": 3.7, "lengthscale": 2.5}[name]
    box.value = other  # a good value: refitted, the message goes
    assert not page.alert.visible and page.model.fits is not fits and field.show(getattr(page.model, name)) == f"{other}"
    box.value = field.show(kept) if isinstance(typed, str) else kept


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")  # (the page's widgets)
@pytest.mark.parametrize("typed", ["abc", "", "1, nan", "-2, 0, 1e400"])
def test_page_bad_pseudo_input_text_is_named_and_replaced_by_the_pseudo_inputs_in_use(sparse_page_built, typed):
    from safe_text import shown

    page = sparse_page_built
    kept, fits = page.z_text.value, page.model.fits
    page.z_text.value = typed
    assert shown(page.alert.object).startswith("Pseudo-inputs not used, the plots show the last good fit: ")
    assert shown(page.alert.object).endswith(f"(typed {typed!r}); kept {kept}")
    assert page.z_text.value == page.model.z_text == kept and page.model.fits is fits
    other = "-1, 0, 1" if kept != "-1, 0, 1" else "-1, 0, 2"
    page.z_text.value = other
    assert not page.alert.visible and page.model.Z.size == 3 and page.z_text.value == other
