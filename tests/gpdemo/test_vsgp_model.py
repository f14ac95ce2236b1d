"""The VSGP page's state and logic (qpviz.gpdemo.vsgp_model.VSGPModel), without Panel or a browser."""
from __future__ import annotations

import math

import numpy as np
import pytest

from qpviz.gpdemo import vsgp_demo
from qpviz.gpdemo.vsgp_model import RANGES, VSGPModel, decode_centres, encode_centres


@pytest.fixture
def model() -> VSGPModel:
    m = VSGPModel(n=120, m=5)
    m.first_fit()
    assert m.message == "" and m.fits is not None and m.version == 1
    return m


def test_nothing_is_fitted_before_the_page_is_drawn():
    m = VSGPModel(n=120, m=5)
    m.param.update(blur=0.5, seed=3, method="qp")
    assert m.fits is None and m.fitted == 0 and m.version == 0
    m.first_fit()
    assert m.fitted == 2 and m.description == "circle N=120, M=5, QP, blur=0.5 full"


def test_a_blur_step_refits_vsgp_only_and_takes_fitc_from_the_cache(model):
    fitc, vsgp, fitted = model.fits["fitc"], model.fits["vsgp"], model.fitted
    model.blur = 0.5
    assert model.fits["fitc"] is fitc and model.fits["vsgp"] is not vsgp
    assert model.fitted == fitted + 1 and model.version == 2
    assert model.title("vsgp") == "VSGP: p(y=+1|x),\ncircle N=120, M=5, EP, blur=0.5 full"
    model.blur = 1.0  # back: both from the cache
    assert model.fits["vsgp"] is vsgp and model.fitted == fitted + 1


def test_a_value_equal_to_the_one_held_changes_nothing(model):
    """What lets the page show the model's values in its widgets without a guard."""
    fits, version = model.fits, model.version
    model.param.update(blur=model.blur, m=model.m, preset=model.preset, centres=list(model.centres))
    assert model.version == version and model.fits is fits


def test_a_bad_input_is_named_with_its_range_and_the_last_good_fit_is_kept(model):
    fits, shown, description = model.fits, model.shown, model.description
    model.lengthscale = 0.0
    assert model.message == "lengthscale must be a number in [0.1, 5]; got 0.0. The plots keep the last good fit."
    assert model.fits is fits and model.shown is shown and model.description == description
    model.param.update(n=5, blur=float("nan"))  # several at once (a link): each named
    assert "n must be a number in [20, 500]; got 5" in model.message
    assert "blur must be a number in [0, 3]; got nan" in model.message
    assert "lengthscale must be a number in [0.1, 5]" in model.message and model.fits is fits
    model.param.update(n=120, blur=1.0, lengthscale=0.8)
    assert model.message == "" and model.fits["vsgp"] is fits["vsgp"]  # the same inputs again: from the cache


def test_more_basis_points_than_training_points_is_refused():
    m = VSGPModel(n=20, m=30)
    m.first_fit()
    assert m.fits is None and "M = 30 basis points need at least as many training points" in m.message


def test_a_drag_moves_one_centre_and_m_follows_a_deletion(model):
    Z = model.shown[2].copy()
    xs, ys = Z[:, 0].copy(), Z[:, 1].copy()
    xs[0] += 0.4
    model.move_centres(xs, ys)
    assert np.allclose(model.shown[2][0], [round(xs[0], 3), round(ys[0], 3)])
    assert np.allclose(model.shown[2][1:], Z[1:], atol=1e-3) and len(model.centres) == 5
    fits, version = model.fits, model.version
    model.move_centres(model.shown[2][:, 0], model.shown[2][:, 1])  # the page's own redraw, echoed: no move
    assert model.fits is fits and model.version == version
    model.move_centres(xs[1:], ys[1:])  # the tool deleted a centre
    assert model.m == 4 and len(model.shown[2]) == 4 and model.message == ""
    model.move_centres([], [])
    assert "every centre was deleted" in model.message and len(model.shown[2]) == 4
    model.move_centres([1.0, 2.0], [3.0])
    assert model.message.startswith("that move could not be used")


def test_a_new_m_or_seed_or_the_reset_goes_back_to_kmeans_centres(model):
    Z = model.shown[2]
    model.move_centres(Z[:, 0] + 0.2, Z[:, 1])
    assert model.centres
    model.m = 4
    assert model.centres == [] and len(model.shown[2]) == 4
    assert np.allclose(model.shown[2], vsgp_demo.kmeans_centres(model.shown[0], 4))
    model.move_centres(model.shown[2][:, 0] + 0.2, model.shown[2][:, 1])
    model.seed = 1
    assert model.centres == [] and len(model.shown[2]) == 4
    model.move_centres(model.shown[2][:, 0] + 0.2, model.shown[2][:, 1])
    model.reset_centres()
    assert model.centres == [] and np.allclose(model.shown[2], vsgp_demo.kmeans_centres(model.shown[0], 4))


def test_a_link_with_centres_and_a_new_m_keeps_its_centres(model):
    """A link (or a drag) brings M and the centres in one change: the centres are used."""
    centres = [[0.5, 0.5], [-1.0, 1.0], [1.0, -1.0]]
    model.param.update(m=3, centres=centres)
    assert model.centres == centres and np.allclose(model.shown[2], centres)


def test_centres_round_trip_through_the_link_form():
    Z = np.array([[0.12345, -1.0], [2.5, 3.0004]])
    encoded = encode_centres(Z)
    assert encoded == [[0.123, -1.0], [2.5, 3.0]]
    assert np.array_equal(decode_centres(encoded), np.array(encoded))
    assert encode_centres(decode_centres(encoded)) == encoded
    assert decode_centres([]).shape == (0, 2)
    assert VSGPModel.centres_check([[1, 2], [3.00049, 4]]) == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("value", ["bogus<b>", "[x", [[1, "a"]], [[math.nan, 0.0]], [[1.0, math.inf]], [1.0, 2.0],
                                   [[1.0, 2.0, 3.0]], [[0.0, 0.0]] * (RANGES["m"][1] + 1), None, 7])
def test_a_bad_centres_value_from_a_link_is_named_with_what_it_accepts(value):
    with pytest.raises(ValueError, match=r"^centres must be a list of at most 40 \[x1, x2\] pairs of finite numbers"):
        VSGPModel.centres_check(value)


def test_bad_centres_set_on_the_model_keep_the_last_good_fit(model):
    fits = model.fits
    model.centres = [[0.0, math.nan], [1.0, 1.0]]
    assert model.fits is fits and model.message.startswith("centres must be a list of at most 40")
    assert model.message.endswith("The plots keep the last good fit.")


def test_a_bad_link_is_replaced_by_the_defaults_before_the_first_fit_and_said_until_a_change():
    m = VSGPModel(blur=-1.0, lengthscale=math.nan, n=120)
    m.first_fit()
    assert (m.blur, m.lengthscale) == (1.0, 0.8) and m.fits is not None
    assert m.message == ("The link asked for blur = -1.0 (valid: 0 to 3) was replaced by 1.0; "
                         "lengthscale = nan (valid: 0.1 to 5) was replaced by 0.8.")
    m.method = "qp"
    assert m.message == "" and m.description.endswith("QP, blur=1 full")


def test_what_the_figures_draw_is_finite(model):
    for fit in model.fits.values():
        assert np.isfinite(fit.proba).all() and 0.0 <= fit.proba.min() and fit.proba.max() <= 1.0
        assert all(np.isfinite([fit.test_error, fit.ntll, fit.log_evidence]))
    shapes = model.ellipses()
    assert set(shapes) == {"x", "y", "width", "height", "angle"} and len(shapes["x"]) == 5
    assert all(np.isfinite(column).all() for column in shapes.values())
    assert np.all(shapes["width"] >= shapes["height"]) and np.all(shapes["height"] > 0)  # blur 1 of real clusters
