"""The GP 1-D page's model (qpviz/gpdemo/oned_model.py) and its data files and links
(qpviz/gpdemo/oned_data.py), without Panel: validation, cached fits, edited data, long jobs."""
from __future__ import annotations

import time

import numpy as np
import pytest

from qpviz.gpdemo import jobs, oned_model, presets
from qpviz.gpdemo.oned_data import parse_csv
from qpviz.gpdemo.oned_model import GP1DModel


@pytest.fixture
def model():
    """A model without the MCMC reference (its job is tested on its own)."""
    oned_model.FIT_CACHE.clear()
    m = GP1DModel(methods=["ep", "qp"])
    assert m.message == "" and set(m.fits) == {"ep", "qp"}
    return m


def test_opens_on_a_preset_where_ep_and_qp_differ(model):
    assert model.preset == oned_model.DEFAULT_PRESET and model.likelihood == "step"
    ep, qp = model.fits["ep"], model.fits["qp"]
    assert np.min(qp.train_var / ep.train_var) < 0.97


def test_a_hyperparameter_change_refits_and_bad_values_keep_the_last_fit(model):
    before = model.fits["ep"]
    model.lengthscale = 2.0
    assert model.message == "" and model.fits["ep"] is not before
    assert not np.allclose(model.fits["ep"].mean, before.mean)
    good = model.fits
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        model.variance = bad
        assert model.fits is good
        assert "kernel variance must be" in model.message
    model.variance = 3.0
    assert model.message == "" and model.fits is not good


def test_refits_are_cached_so_flipping_back_is_instant(model):
    first = model.fits["qp"]
    model.lengthscale = 2.5
    model.lengthscale = 1.0
    assert model.fits["qp"] is first  # the same object: taken from the cache, not refitted


def test_one_class_only_and_wrong_labels_say_what_to_change(model):
    good = model.fits
    X = np.linspace(0, 1, 6)[:, None]
    assert not model.set_data(X, np.ones(6))
    assert "both classes" in model.message and model.fits is good
    model.load_preset()
    model.likelihood = "poisson_exp"  # labels -1 are no counts
    assert model.fits is not None and "Not refitted" in model.message


def test_preset_changes_take_the_presets_model_and_clip_n(model):
    model.preset = "coal-mining disasters"
    assert model.likelihood == "poisson_exp" and model.message == ""
    assert model.fits["ep"].predictive_label.startswith("expected count")
    model.param.update(preset="sharp step", n_points=5000)
    assert model.X.shape[0] == presets.MAX_POINTS and "clipped" in model.note


def test_click_adds_a_point_and_a_second_click_removes_it(model):
    n = model.y.size
    x_new = float(model.X[:, 0].max()) + 1.0
    model.click(x_new, 0.9)
    assert model.y.size == n + 1 and model.y[model.X[:, 0] == x_new] == 1.0
    model.click(x_new + 1e-3, 0.97)  # on the point's marker (drawn at p = 1)
    assert model.y.size == n and x_new not in model.X[:, 0]
    assert not model.click(float("nan"), 0.5)


def test_a_click_on_an_empty_spot_above_a_point_adds_one_and_removes_none(model):
    """Issue 21: one click on an empty spot removed a point (only x was compared)."""
    x0, y0 = float(model.X[0, 0]), float(model.y[0])
    n = model.y.size
    empty = 0.6 if y0 < 0 else 0.4  # the same x, far from the point's marker at p = 0 or 1
    model.click(x0 + 1e-3, empty)
    assert model.y.size == n + 1 and x0 in model.X[:, 0]


def test_csv_upload_and_bad_files():
    X, y = parse_csv(b"x,y\n0.5,1\n1.5,-1\n2.5,1\n")
    np.testing.assert_array_equal(X[:, 0], [0.5, 1.5, 2.5])
    np.testing.assert_array_equal(y, [1, -1, 1])
    for content, message in ((b"", "empty"), (b"x,y\n", "at least 2"), (b"1,2,3\n4,5,6\n", "two columns"),
                             (b"x,y\n1,a\n2,b\n", "must be a number"), (b"1,nan\n2,1\n", "finite"),
                             (b"1,1\n" * 3_000_000, "limit is 5 MB"), (b"\xff\xfe\x00", "not text"),
                             ("\n".join(f"{i},1" for i in range(1001)).encode(), "at most 1000")):
        with pytest.raises(ValueError, match=message):
            parse_csv(content)


def test_a_bad_upload_keeps_the_data_and_fit(model):
    good, n = model.fits, model.y.size
    assert not model.upload(b"x,y\n1,a\n")
    assert "CSV not loaded" in model.message and model.fits is good and model.y.size == n
    assert model.upload(b"x,y\n0,-1\n1,-1\n2,1\n3,1\n")
    assert model.y.size == 4 and model.message == ""


def test_step_through_highlights_a_site_and_links_to_the_explorer(model):
    model.step("site")
    assert model.site.index == 1 and model.stepper.position == 1
    query, _ = model.explorer_link()
    assert query.startswith("lik=step&step_eps=0") and "&label=" in query and "&m=" in query
    model.step("sweep")
    assert model.stepper.n_sweeps == 1 and model.site.index == 0
    model.step_method = "qp"
    assert model.stepper is None  # a new method starts afresh
    model.step("site")
    assert model.stepper.method == "qp"
    model.step("reset")
    assert model.stepper.position == 0 and model.stepper.n_sweeps == 0


def test_export_csv_has_one_column_triple_per_method(model):
    lines = model.export_csv().splitlines()
    assert lines[0] == "x,ep_mean,ep_var,ep_predictive,qp_mean,qp_var,qp_predictive"
    assert len(lines) == 1 + model.fits["ep"].grid.size
    values = np.array(lines[1].split(","), float)
    assert values[0] == model.fits["ep"].grid[0]


def test_mcmc_runs_off_the_caller_and_fills_the_w2_column():
    oned_model.FIT_CACHE.clear()
    m = GP1DModel(methods=["ep", "mcmc"], n_points=20)
    start = time.monotonic()
    m.load_preset()
    assert time.monotonic() - start < 2.0  # the MCMC job did not block
    assert m.job_running and "MCMC" in m.job_status and "mcmc" not in m.fits
    m.wait()
    assert not m.job_running and "done" in m.job_status
    assert np.isfinite(m.fits["ep"].w2_grid) and m.fits["ep"].w2_grid > 0
    m.lengthscale = 2.0  # a new job for the new settings...
    assert m.job_running
    m.cancel_job()
    assert not m.job_running and "cancelled" in m.job_status
    m.lengthscale = 1.0  # ...and back: the reference is cached
    assert "mcmc" in m.fits and not m.job_running
    m.lengthscale = 3.0
    assert m.job_running
    m.methods = ["ep"]  # nobody waits for the reference: its job stops
    assert not m.job_running


def test_optimise_streams_evidence_and_sets_the_fitted_hyperparameters():
    oned_model.FIT_CACHE.clear()
    m = GP1DModel(preset="noisy boundary", methods=["ep"])
    m.param.update(likelihood="probit", lengthscale=4.0)
    assert m.optimise() and m.job_running and not m.optimisation_done
    m.wait()
    assert m.optimisation_done
    assert len(m.optimisation) >= 3 and m.optimisation[-1].evidence > m.optimisation[0].evidence
    assert m.lengthscale != 4.0 and m.message == ""
    assert m.fits["ep"].evidence == pytest.approx(m.optimisation[-1].evidence, abs=1e-3)


def test_edited_data_travel_in_the_link_and_a_preset_clears_them(model):
    x_new = float(model.X[:, 0].max()) + 1.0
    model.click(x_new, 0.9)
    query = model.data_query
    assert query.count(";") == model.y.size - 1 and query.endswith(f"{x_new:.6g}:1")
    other = GP1DModel(methods=["ep"])
    other.data_query = query  # a shared link
    np.testing.assert_allclose(other.X[:, 0], model.X[:, 0], rtol=1e-5)
    np.testing.assert_array_equal(other.y, model.y)
    other.data_query = "1:2;nonsense"
    assert "not used" in other.message and other.y.size == model.y.size
    model.load_preset()
    assert model.data_query == ""


def test_two_sessions_share_one_mcmc_run_and_one_cancel_does_not_stop_the_other():
    oned_model.FIT_CACHE.clear()
    first = GP1DModel(methods=["ep", "mcmc"], n_points=15)
    second = GP1DModel(methods=["ep", "mcmc"], n_points=15)
    job = first._job
    assert job is second._job and job["users"] == 2 and jobs.RUNNING[job["key"]] is job
    first.cancel_job()
    assert not second._job["cancel"].is_set()
    second.wait()
    assert "mcmc" in second.fits and job["key"] not in jobs.RUNNING


def test_hostile_seed_and_huge_hyperparameters_keep_the_fit_and_name_the_input(model):
    good = model.fits
    model.seed = -3  # numpy said "expected non-negative integer", naming no input
    assert model.message == "the seed must be a whole number >= 0 (e.g. 0); got -3" and model.fits is good
    model.seed = 0
    assert model.message == ""
    good = model.fits  # the same preset drawn again: a new fit dict
    for name in ("variance", "lengthscale"):
        setattr(model, name, 1e308)  # K overflowed: "13-th leading minor ... not positive definite"
        assert "must be at most 10000" in model.message and model.fits is good
        setattr(model, name, 2.0)
        assert model.message == ""
        good = model.fits
