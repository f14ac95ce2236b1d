"""The MCMC reference of the GP 2-D page: qpviz.gpdemo.twod.mcmc_grid and the page's long job
(qpviz/gpdemo/twod_model.py, drawn by app/gp_2d.py), without a browser."""
from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.stats import norm

import qpviz

from qpviz.gpdemo import oned, twod, twod_model
from qpviz.inference.dense import DensePrior
from qpviz.kernels import RBF

#: A short reference (0.1 s at N = 30): its Monte Carlo error, ~0.007 in p, is below Laplace's distance.
SMALL = {"chains": 2, "n_samples": 500, "burn_in": 500, "thin": 10}
#: A reference that runs for about a second (a second session must find it still running).
SLOWER = {"chains": 4, "n_samples": 1000, "burn_in": 1000, "thin": 50}
GRID = 20


@pytest.fixture(scope="module")
def moons():
    X, y = twod.make_preset("moons", n=30, seed=1)
    kernel = RBF(variance=4.0, lengthscale=0.8)  # the page's default kernel
    fit = twod.fit_grid(X, y, kernel, methods=("ep", "laplace"), grid_size=GRID)
    reference = twod.mcmc_grid(X, y, kernel, grid_size=GRID, **SMALL)
    return X, y, kernel, fit, reference


def test_mcmc_grid_averages_the_exact_predictive_over_the_samples(moons):
    X, y, kernel, _, reference = moons
    assert reference.methods == ("mcmc",) and reference.proba["mcmc"].shape == (GRID, GRID)
    # the same chains by hand: p = avg_s Phi(g_s / sqrt(1 + c)), g_s = P^T f_s (probit, R&W eq. 3.82 per sample)
    prior = DensePrior(kernel, X)
    samples = np.concatenate(oned.sample_chains(prior, qpviz.likelihood("probit"), y, SMALL["chains"],
                                                SMALL["n_samples"], SMALL["burn_in"], SMALL["thin"]))
    _, _, grid = twod.make_grid(X, GRID)
    P, cond_var = prior.conditional(grid)
    projected = samples @ P
    expected_p = norm.cdf(projected / np.sqrt(1.0 + cond_var)).mean(axis=0)
    np.testing.assert_allclose(reference.proba["mcmc"].ravel(), expected_p, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(reference.mean["mcmc"].ravel(), projected.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(reference.var["mcmc"].ravel(), cond_var + projected.var(axis=0), rtol=1e-9)
    assert reference.mcmc_noise["samples"] == samples.shape[0]
    assert 0.0 < reference.mcmc_noise["proba"] < 0.05 and reference.mcmc_noise["w2"] > 0.0


def test_distances_put_ep_close_to_mcmc_and_laplace_further(moons):
    _, _, _, fit, reference = moons
    assert twod.distances_to_mcmc(fit) == {}  # no reference, no distances
    for field in ("proba", "mean", "var"):
        getattr(fit, field).update(getattr(reference, field))
    distances = twod.distances_to_mcmc(fit)
    assert set(distances) == {"ep", "laplace"}
    expected = np.mean(np.abs(fit.proba["ep"] - fit.proba["mcmc"]))
    assert distances["ep"][0] == pytest.approx(expected)
    # EP is known to be close to the exact posterior for GP classification; Laplace is not
    assert distances["ep"][0] < 0.03 and distances["laplace"][1] > 2 * distances["ep"][1]


def test_mcmc_grid_stops_between_chains_when_cancelled(moons):
    import threading

    X, y, kernel, _, _ = moons
    cancel, seen = threading.Event(), []

    def progress(done, total):
        seen.append((done, total))
        cancel.set()  # the reader pressed cancel during the first chain

    with pytest.raises(oned.Cancelled):
        twod.mcmc_grid(X, y, kernel, grid_size=GRID, on_progress=progress, cancel=cancel, **SMALL)
    assert seen == [(1, SMALL["chains"])]


# -- the page ------------------------------------------------------------------------------------

@pytest.fixture
def page(monkeypatch):
    import gp_2d

    monkeypatch.setattr(twod_model, "MCMC_SETTINGS", dict(SMALL))
    twod_model.MCMC_CACHE.clear()
    page = gp_2d.GP2DPage(n=30)
    page._build_views()  # what drawing the tab does: the figures and the first fit
    yield page
    page.model.cancel_job(quiet=True)


def test_mcmc_is_not_a_default_method_and_runs_off_the_caller(page):
    assert "mcmc" not in page.model.methods and page.model._job is None and not page.model.job_running
    assert "Choose MCMC" in page.table.object
    start = time.monotonic()
    page.model.methods = ["ep", "qp", "mcmc"]
    assert time.monotonic() - start < 2.0  # the job did not block the page
    assert page.model.job_running and page.model.job_status.startswith("MCMC reference")
    assert "mcmc" not in page.model.fit.proba and not page.method_rows["mcmc"].visible
    assert "being computed" in page.table.object and not page.cancel_button.disabled and page.progress.visible
    page.model.wait()
    assert not page.model.job_running and "done" in page.model.job_status and page.cancel_button.disabled
    assert "mcmc" in page.model.fit.proba and page.method_rows["mcmc"].visible
    assert page.figures["proba_mcmc"].figure.title.text.startswith("MCMC: p(y=+1|x),\nmoons N=30")
    np.testing.assert_array_equal(page.figures["var_mcmc"].image.data["value"][0], page.model.fit.var["mcmc"].astype(np.float32))
    distances = twod.distances_to_mcmc(page.model.fit)
    assert set(distances) == {"ep", "qp"}
    assert f"{distances['qp'][0]:.4f}" in page.table.object and "Monte Carlo error" in page.table.object


def test_the_reference_is_cached_so_flipping_back_is_instant(page):
    page.model.methods = ["ep", "qp", "mcmc"]
    page.model.wait()
    reference = page.model.fit.proba["mcmc"]
    page.model.lengthscale = 1.2  # new settings: a new job
    assert page.model.job_running
    page.model.wait()
    page.model.lengthscale = 0.8  # back: the cached reference, no job
    assert not page.model.job_running and page.model.fit.proba["mcmc"] is reference
    page.model.methods = ["ep", "qp"]
    page.model.methods = ["ep", "qp", "mcmc"]
    assert not page.model.job_running and page.model.fit.proba["mcmc"] is reference


def test_cancel_stops_the_job_and_hiding_mcmc_cancels_it(page):
    import long_jobs

    page.model.methods = ["ep", "qp", "mcmc"]
    job = page.model._job
    page.model.cancel_job()
    assert not page.model.job_running and page.model.job_status == "MCMC reference cancelled" and job["cancel"].is_set()
    assert job["key"] not in long_jobs.RUNNING and "mcmc" not in page.model.fit.proba
    page.model.seed = 3  # any change asks for the reference again
    assert page.model.job_running
    page.model.methods = ["ep", "qp"]  # nobody waits for it: it stops
    assert not page.model.job_running and page.model._job is None


def test_two_sessions_share_one_reference_and_one_cancel_leaves_the_other(page, monkeypatch):
    import gp_2d
    import long_jobs

    monkeypatch.setattr(twod_model, "MCMC_SETTINGS", dict(SLOWER))
    other = gp_2d.GP2DPage(n=30)
    other._build_views()
    page.model.methods = ["ep", "qp", "mcmc"]
    other.model.methods = ["ep", "qp", "mcmc"]
    job = page.model._job
    assert other.model._job is job and job["users"] == 2 and long_jobs.RUNNING[job["key"]] is job
    page.model.cancel_job()
    assert not job["cancel"].is_set()
    other.model.wait()
    assert "mcmc" in other.model.fit.proba


def test_bad_input_while_mcmc_is_shown_keeps_the_last_fit(page):
    page.model.methods = ["ep", "qp", "mcmc"]
    page.model.wait()
    good = page.model.fit
    page.model.lengthscale = 0.0
    assert page.model.fit is good and page.model.message.startswith("lengthscale must be a number in [")
    assert not page.model.job_running  # no reference is started for a refused input
    np.testing.assert_array_equal(page.figures["proba_mcmc"].image.data["value"][0], good.proba["mcmc"].astype(np.float32))
    assert page.method_rows["mcmc"].visible


def test_sd_ratio_maps_compare_each_method_with_the_reference(moons):
    """Issue 21: where EP over-estimates the latent sd on GP 2-D, and QP's ratio there."""
    X, y, kernel, _, reference = moons
    combined = twod.fit_grid(X, y, kernel, methods=("ep", "qp", "laplace"), grid_size=GRID)
    assert twod.sd_comparison(combined) is None  # no reference yet
    for field in ("proba", "mean", "var", "converged"):
        getattr(combined, field).update(getattr(reference, field))
    combined.mcmc_diagnostics = dict(reference.mcmc_diagnostics)
    comparison = twod.sd_comparison(combined)
    assert set(comparison.ratios) == {"ep", "qp", "laplace"}
    ratio = comparison.ratios["ep"]
    assert ratio.shape == (GRID, GRID)
    np.testing.assert_allclose(ratio, np.sqrt(combined.var["ep"] / reference.var["mcmc"]))
    # the peak is inside the data's bounding box, at the grid point the sentence names
    value, index = comparison.peak["ep"]
    row, col = divmod(index, GRID)
    assert ratio[row, col] == value
    assert X[:, 0].min() <= combined.x1[col] <= X[:, 0].max() and X[:, 1].min() <= combined.x2[row] <= X[:, 1].max()
    assert (f"EP's largest sd ratio to the reference is {value:.2f}x at (x1, x2) = "
            f"({combined.x1[col]:.3g}, {combined.x2[row]:.3g})") in comparison.sentence
    assert f"QP's {comparison.ratios['qp'][row, col]:.2f}x" in comparison.sentence
    # probit: QP's latent variance is never above EP's (Theorem 2), so neither is its ratio
    assert np.all(comparison.ratios["qp"] <= comparison.ratios["ep"] + 1e-9)
    assert comparison.error == pytest.approx(1 / np.sqrt(2 * reference.mcmc_diagnostics["ess"]))
    assert twod.sd_comparison(combined, methods=["mcmc"]) is None


def test_the_page_maps_sd_ratios_once_mcmc_is_on_and_reads_them(page):
    from safe_text import shown

    assert "Turn MCMC on" in shown(page.sd_text.object)
    assert not any(pane.visible for pane in page.ratio_panes.values())
    page.model.methods = ["ep", "qp", "mcmc"]
    assert "being computed" in shown(page.sd_text.object)
    page.model.wait()
    assert [m for m, pane in page.ratio_panes.items() if pane.visible] == ["ep", "qp"]
    comparison = twod.sd_comparison(page.model.fit, ["ep", "qp"])
    image = page.figures["ratio_ep"].image.data["value"][0]
    assert np.all(np.isfinite(image))
    np.testing.assert_allclose(image, np.sqrt(page.model.fit.var["ep"] / page.model.fit.var["mcmc"]), rtol=1e-6)  # float32 pixels
    mapper = page.figures["ratio_qp"].mapper
    assert (mapper.low + mapper.high) / 2 == pytest.approx(1.0) and mapper.high - 1.0 >= np.max(np.abs(image - 1.0)) - 1e-6
    text = shown(page.sd_text.object)
    assert "EP's largest sd ratio to the reference is" in text and f"ESS {page.model.fit.mcmc_diagnostics['ess']:.0f}" in text
    assert text == " ".join(comparison.sentence.split())  # all of it, not shortened
    # the short test reference may not pass R-hat < 1.01 / ESS >= 400: then the sentence says so first
    assert text.startswith("This comparison is unreliable") == (not page.model.fit.converged["mcmc"])
    page.model.methods = ["qp", "mcmc"]  # without EP the largest over-estimate among the shown leads
    assert [m for m, pane in page.ratio_panes.items() if pane.visible] == ["qp"]
    text = shown(page.sd_text.object)
    assert "QP's largest sd ratio" in text and "EP" not in text

