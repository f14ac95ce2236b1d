"""qpviz.gpdemo.twod_model: the GP 2-D page's state and logic, without Panel (the page's widgets
and figures: tests/test_gpdemo_twod.py, tests/test_gp2d_mcmc.py)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from qpviz.gpdemo import twod, twod_model
from qpviz.gpdemo.twod_model import GP2DModel


@pytest.fixture
def model():
    model = GP2DModel(n=30)
    yield model
    model.cancel_job(quiet=True)


def test_no_module_of_the_library_imports_panel_bokeh_or_holoviews():
    """Every page's model lives in qpviz/ and is testable without a browser: importing every module of
    the package (the page models included, ``qpviz/gpdemo/*_model.py``) loads no plotting library."""
    code = ("import pkgutil, importlib, sys, qpviz\n"
            "names = [m.name for m in pkgutil.walk_packages(qpviz.__path__, 'qpviz.') if '__main__' not in m.name]\n"
            "for name in names: importlib.import_module(name)\n"
            "assert any(n.endswith('_model') for n in names), names\n"
            "print(len(names), sorted({'panel', 'bokeh', 'holoviews'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, loaded = done.stdout.strip().split(" ", 1)
    assert int(count) > 100 and loaded == "[]", done.stdout


def test_a_change_before_the_page_is_drawn_only_marks_the_fit_stale(model):
    assert model.fit is None and model.version == 0
    model.lengthscale = 1.0
    assert model.fit is None and model.version == 0  # nothing fitted for a page nobody sees
    fit = model.ensure_fit()
    assert fit.methods == ("ep", "qp") and fit.kernel.lengthscale == 1.0 and model.message == ""
    assert model.ensure_fit() is fit  # nothing changed: no refit
    np.testing.assert_array_equal(fit.var_difference, fit.var["qp"] - fit.var["ep"])
    assert model.fit_description == "moons N=30, rbf σ_f²=4 ℓ=1"


def test_once_drawn_a_change_refits_and_bumps_the_version(model):
    model.drawn = True
    model.ensure_fit()
    model.methods = ["ep", "qp", "laplace"]
    assert model.version == 1 and "laplace" in model.fit.proba
    model.variance = 0.0  # refused: the last good fit stays, the version still moves (the points redraw)
    assert model.version == 2 and model.fit.kernel.variance == 4.0
    assert model.message == "variance must be a number in [0.1, 20]; got 0.0. The plots keep the last good fit."


def test_clicks_edit_the_data_and_a_new_preset_starts_afresh(model):
    preset_X, _ = twod.make_preset("moons", 30, 0)
    model.click_class = "-1"
    model.tap(0.0, 2.9)
    assert model.added == [[0.0, 2.9, -1.0]] and len(model.y) == 31 and model.origin[-1] == -1
    model.toggle_point(*(preset_X[4] + 0.01))  # on preset point 4: removed
    assert model.removed == [4] and len(model.y) == 30 and 4 not in model.origin
    model.tap(0.0, 2.9)  # the clicked point goes again
    assert model.added == [] and len(model.y) == 29
    model.tap(None, 1.0)  # no coordinates: nothing happens
    assert model.added == [] and model.message == ""
    model.preset = "xor"
    assert model.added == [] and model.removed == [] and len(model.y) == 30


def test_a_bad_link_value_is_replaced_by_the_default_and_named(model):
    model.param.update(variance=float("nan"), methods=[])
    note = model.replace_bad_inputs({"g2_n": "-3"}, {"n": "g2_n"})
    assert model.variance == 4.0 and model.methods == ["ep", "qp"]
    assert note == ("The link asked for variance = nan (valid: 0.1 to 20) was replaced by 4.0; n = '-3' (valid: 2 to 400) "
                    "was replaced by 30; no method was chosen: EP and QP are shown.")
    assert model.replace_bad_inputs({"g2_n": "30"}, {"n": "g2_n"}) == ""


def test_the_mcmc_reference_is_a_shared_cached_job(model, monkeypatch):
    monkeypatch.setattr(twod_model, "MCMC_SETTINGS", {"chains": 2, "n_samples": 200, "burn_in": 200, "thin": 5})
    monkeypatch.setattr(twod_model, "GRID_SIZE", 15)
    twod_model.MCMC_CACHE.clear()
    model.drawn = True
    model.methods = ["ep", "qp", "mcmc"]
    assert model.job_running and "mcmc" not in model.fit.proba
    model.wait()
    assert not model.job_running and model.job_status.startswith("MCMC reference done in")
    assert "mcmc" in model.fit.proba and model.fit.mcmc_noise["samples"] == 400
    other = GP2DModel(n=30, methods=["ep", "qp", "mcmc"])
    assert other.ensure_fit().proba["mcmc"] is model.fit.proba["mcmc"] and not other.job_running  # from the cache
    model.lengthscale = 2.0  # a new reference is asked for; hiding MCMC stops waiting for it
    assert model.job_running
    model.methods = ["ep", "qp"]
    assert not model.job_running and model.job_status == ""


@pytest.mark.parametrize("name, value", [("n", 1), ("seed", 10_001), ("lengthscale", "abc")])
def test_validated_names_the_input_and_its_range(name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be a number in \["):
        twod_model.validated(name, value)


def test_the_page_keeps_its_most_recent_grids(monkeypatch):
    monkeypatch.setattr(twod_model, "CACHE_ITEMS", 4)  # two (EP, QP) fits
    model = GP2DModel(n=20)
    first = model.ensure_fit().proba["ep"]
    model.variance = 2.0
    model.ensure_fit()
    model.variance = 4.0
    assert model.ensure_fit().proba["ep"] is first  # cached
    model.variance = 3.0
    model.ensure_fit()
    model.variance = 2.0  # variance 2 gave way to variance 3: refitted, and variance 4 goes
    model.ensure_fit()
    model.variance = 4.0
    assert model.ensure_fit().proba["ep"] is not first


def test_methods_not_in_the_cache_are_fitted_together_and_cached_one_by_one(monkeypatch):
    calls = []
    fit_grid = twod_model.twod.fit_grid
    monkeypatch.setattr(twod_model.twod, "fit_grid", lambda *a, **k: calls.append(tuple(k["methods"])) or fit_grid(*a, **k))
    model = GP2DModel(n=20, methods=["ep"])
    model.ensure_fit()
    assert calls == [("ep", "qp")]  # QP for the difference map: one call for both
    model.methods = ["ep", "vb", "laplace"]
    model._stale = True
    fit = model.ensure_fit()
    assert calls == [("ep", "qp"), ("vb", "laplace")]  # EP and QP from the cache
    assert set(fit.proba) >= {"ep", "qp", "vb", "laplace"}
    alone = GP2DModel(n=20, methods=["laplace"]).ensure_fit()
    np.testing.assert_array_equal(fit.proba["laplace"], alone.proba["laplace"])
