"""qpviz.gpdemo.twod: the 2-D classification presets and every method's maps on a grid."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz.gpdemo import twod
from qpviz.kernels import RBF

GRID = 25


@pytest.fixture(scope="module")
def moons_fit():
    X, y = twod.make_preset("moons", n=60, seed=3)
    return twod.fit_grid(X, y, RBF(variance=2.0, lengthscale=0.8), methods=("ep", "qp", "vb", "laplace"), grid_size=GRID)


@pytest.mark.parametrize("name", sorted(twod.PRESETS))
def test_presets_are_deterministic_by_seed_with_both_classes(name):
    X, y = twod.make_preset(name, n=41, seed=7)
    X_again, y_again = twod.make_preset(name, n=41, seed=7)
    X_other, _ = twod.make_preset(name, n=41, seed=8)
    assert X.shape == (41, 2) and y.shape == (41,)
    np.testing.assert_array_equal(X, X_again)
    np.testing.assert_array_equal(y, y_again)
    assert not np.array_equal(X, X_other)
    assert set(np.unique(y)) == {-1.0, 1.0}
    x1_lo, x1_hi, x2_lo, x2_hi = twod.DEFAULT_EXTENT
    inside = (X[:, 0] > x1_lo) & (X[:, 0] < x1_hi) & (X[:, 1] > x2_lo) & (X[:, 1] < x2_hi)
    assert inside.mean() > 0.9  # the presets fill the default plot, not a corner beyond it


def test_preset_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown preset"):
        twod.make_preset("spirals")
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        twod.make_preset("moons", n=1)
    with pytest.raises(ValueError, match="noise must be"):
        twod.make_preset("moons", noise=float("nan"))


def test_grid_shapes_and_probabilities(moons_fit):
    assert moons_fit.methods == ("ep", "qp", "vb", "laplace")
    assert moons_fit.x1.shape == (GRID,) and moons_fit.x2.shape == (GRID,)
    for m in moons_fit.methods:
        for maps in (moons_fit.proba, moons_fit.mean, moons_fit.var):
            assert maps[m].shape == (GRID, GRID)
            assert np.all(np.isfinite(maps[m]))
        assert np.all((moons_fit.proba[m] >= 0) & (moons_fit.proba[m] <= 1))
        assert np.all(moons_fit.var[m] > 0)
        assert moons_fit.converged[m]
    assert moons_fit.var_difference.shape == (GRID, GRID)


def test_grid_is_indexed_x2_rows_x1_columns(moons_fit):
    """proba[j, i] is the prediction at (x1[i], x2[j]): compare with a direct fit at two points."""
    from qpviz import fit

    post = fit(moons_fit.X, moons_fit.y, "probit", moons_fit.kernel, method="ep")
    points = np.array([[moons_fit.x1[3], moons_fit.x2[17]], [moons_fit.x1[20], moons_fit.x2[1]]])
    expected = post.predict_proba(points)
    np.testing.assert_allclose([moons_fit.proba["ep"][17, 3], moons_fit.proba["ep"][1, 20]], expected, rtol=1e-8)


def test_probabilities_follow_the_classes(moons_fit):
    """Far from the boundary each method predicts the class of the nearby training points."""
    i1 = np.abs(moons_fit.x1[:, None] - moons_fit.X[:, 0]).argmin(axis=0)
    i2 = np.abs(moons_fit.x2[:, None] - moons_fit.X[:, 1]).argmin(axis=0)
    for m in moons_fit.methods:
        at_points = moons_fit.proba[m][i2, i1]
        accuracy = np.mean((at_points > 0.5) == (moons_fit.y > 0))
        assert accuracy > 0.9, (m, accuracy)


@pytest.mark.parametrize("name", sorted(twod.PRESETS))
def test_qp_variance_is_never_above_ep_for_probit(name):
    """QP paper Figure 1 / Theorem 2: var_QP <= var_EP, here at every grid point."""
    X, y = twod.make_preset(name, n=50, seed=1)
    result = twod.fit_grid(X, y, RBF(variance=3.0, lengthscale=1.0), methods=("ep", "qp"), grid_size=GRID)
    np.testing.assert_allclose(result.var_difference, result.var["qp"] - result.var["ep"])
    assert result.var_difference.max() <= 1e-8
    assert result.var_difference.min() < -1e-6  # and somewhere QP is visibly below EP


def test_one_class_only_is_a_clear_error():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]])
    with pytest.raises(ValueError, match=r"only one class is present: add a point of class -1"):
        twod.fit_grid(X, np.ones(3), RBF())
    with pytest.raises(ValueError, match=r"add a point of class \+1"):
        twod.fit_grid(X, -np.ones(3), RBF())


def test_bad_inputs_are_clear_errors():
    X, y = twod.make_preset("xor", n=10)
    with pytest.raises(ValueError, match="unknown method"):
        twod.fit_grid(X, y, RBF(), methods=("ep", "gibbs"))
    with pytest.raises(ValueError, match="at least one method"):
        twod.fit_grid(X, y, RBF(), methods=())
    with pytest.raises(ValueError, match="finite"):
        twod.fit_grid(np.where(np.arange(20).reshape(10, 2) == 3, np.nan, X), y, RBF())
    with pytest.raises(ValueError, match="labels must be -1 or \\+1"):
        twod.fit_grid(X, np.where(y > 0, 1.0, 0.0), RBF())
    with pytest.raises(ValueError, match="grid_size"):
        twod.fit_grid(X, y, RBF(), grid_size=1)


def test_difference_map_needs_both_ep_and_qp():
    X, y = twod.make_preset("gaussians", n=20)
    result = twod.fit_grid(X, y, RBF(), methods=("qp", "laplace"), grid_size=5)
    assert result.methods == ("qp", "laplace")
    assert result.var_difference is None


def test_grid_covers_points_outside_the_default_square():
    X = np.array([[-5.0, 0.0], [0.0, 4.0], [1.0, 1.0]])
    x1_lo, x1_hi, x2_lo, x2_hi = twod.grid_extent(X)
    assert x1_lo == -5.0 - twod.EXTENT_MARGIN and x2_hi == 4.0 + twod.EXTENT_MARGIN
    assert (x1_hi, x2_lo) == (twod.DEFAULT_EXTENT[1], twod.DEFAULT_EXTENT[2])


def test_grid_csv_has_one_row_per_grid_point(moons_fit):
    lines = twod.grid_csv(moons_fit).splitlines()
    header = lines[0].split(",")
    assert header[:5] == ["x1", "x2", "p_ep", "mean_ep", "var_ep"]
    assert header[-1] == "var_qp_minus_var_ep"
    assert len(lines) == 1 + GRID * GRID
    table = np.loadtxt(lines[1:], delimiter=",")
    row = 2 * GRID + 7  # x2 index 2, x1 index 7
    assert table[row, 0] == pytest.approx(moons_fit.x1[7]) and table[row, 1] == pytest.approx(moons_fit.x2[2])
    assert table[row, header.index("var_qp")] == pytest.approx(moons_fit.var["qp"][2, 7], rel=1e-9)
    assert table[row, -1] == pytest.approx(moons_fit.var_difference[2, 7], rel=1e-8, abs=1e-15)


# -- the page's logic (app/gp_2d.py), without a browser ------------------------------------------

@pytest.fixture
def gp2d_page():
    import gp_2d

    page = gp_2d.GP2DPage(n=40)
    page._build_views()  # what drawing the tab does: the figures and the first fit
    return page


def _title(page, key: str) -> str:
    return page.figures[key].figure.title.text


def test_page_fits_and_draws_the_shown_methods(gp2d_page):
    from gp_2d_figures import colour_mapped, palette_pixels

    assert gp2d_page.model.fit.methods == ("ep", "qp") and gp2d_page.model.message == ""
    assert _title(gp2d_page, "proba_ep").startswith("EP: p(y=+1|x),\nmoons N=40, rbf")
    assert _title(gp2d_page, "diff").startswith("var_QP − var_EP in [-")
    image = gp2d_page.figures["proba_qp"].image.data["value"][0]
    assert image.dtype == np.float32  # half the bytes of a step's message; as many digits as a colour shows
    np.testing.assert_array_equal(image, gp2d_page.model.fit.proba["qp"].astype(np.float32))
    mapper = gp2d_page.figures["diff"].mapper
    assert mapper.low == -mapper.high and mapper.high > 0  # the difference map's colours are centred at 0
    fit = gp2d_page.model.fit
    maps = {"var_ep": fit.var["ep"], "var_qp": fit.var["qp"], "diff": fit.var_difference, "proba_ep": fit.proba["ep"]}
    for key, values in maps.items():
        figure = gp2d_page.figures[key]
        pixels, mapper = figure.image.data["image"][0], figure.mapper
        # colour ranges rounded out (app/gp_2d_figures.rounded_out): they cover the map
        assert mapper.low <= values.min() and values.max() <= mapper.high
        # the pixels are the colour bar's colours of the values, coloured in the server
        assert pixels.dtype == np.uint32 and pixels.shape == values.shape
        np.testing.assert_array_equal(pixels, colour_mapped(values, mapper.low, mapper.high, palette_pixels(mapper.palette)))
        assert len(np.unique(pixels)) > 5  # not one flat colour
    # the contours are lines only: Bokeh's default fill (opaque grey between p = 0.1 and 0.9) hid the
    # map there and the p = 0.5 line under it; no polygon is computed or sent
    for renderer, levels in gp2d_page.figures["proba_ep"].contours:
        assert not renderer.fill_renderer.visible
        assert len(renderer.fill_renderer.data_source.data["xs"]) == 0
        lines = renderer.line_renderer.data_source.data
        assert list(lines["levels"]) == levels and all(len(xs) > 10 for xs in lines["xs"])
    gp2d_page.model.methods = ["ep", "qp", "laplace"]
    assert gp2d_page.method_rows["laplace"].visible and not gp2d_page.method_rows["vb"].visible
    assert _title(gp2d_page, "proba_laplace").startswith("Laplace: p(y=+1|x)")


def test_only_the_shown_methods_figures_are_built_and_one_shown_later_takes_the_page_mode():
    """The tab builds the maps of the methods it shows (and the difference map); a method shown
    later gets its maps then, drawn from the fit and in the page's mode (projector: larger fonts)."""
    import gp_2d
    import panel as pn

    page = gp_2d.GP2DPage(n=40)
    page._build_views()
    assert set(page.figures) == {"proba_ep", "var_ep", "proba_qp", "var_qp", "diff"}
    assert page.method_rows["vb"].objects == [] and not page.method_rows["vb"].visible
    assert all(pane.objects == [] for pane in page.ratio_panes.values())  # no MCMC reference: no ratio map
    page.projector = True
    page.model.methods = ["ep", "qp", "vb"]
    assert {"proba_vb", "var_vb"} <= set(page.figures) and page.method_rows["vb"].visible
    np.testing.assert_array_equal(page.figures["proba_vb"].image.data["value"][0], page.model.fit.proba["vb"].astype(np.float32))
    assert _title(page, "var_vb").startswith("VB: latent var v(x),\nmoons N=40")
    sizes = {key: page.figures[key].figure.title.text_font_size for key in ("proba_ep", "proba_vb", "var_vb")}
    assert len(set(sizes.values())) == 1, sizes  # the new maps in projector mode, as the others
    page.projector = False
    assert page.figures["proba_vb"].figure.title.text_font_size != sizes["proba_vb"]
    page.projector = True
    page.model.methods = ["ep", "qp", "vb", "laplace"]
    texts = page.method_rows["laplace"].select(pn.pane.Markdown)
    assert texts and all(text.styles.get("font-size") == "150%" for text in texts), [t.styles for t in texts]


@pytest.mark.parametrize("name, bad", [("variance", 0.0), ("variance", float("nan")), ("lengthscale", 0.0),
                                       ("lengthscale", -1.0), ("n", 1), ("n", 10**6), ("seed", -3)])
def test_bad_input_keeps_the_last_good_fit_and_says_what_to_change(gp2d_page, name, bad):
    good_fit, good_title = gp2d_page.model.fit, _title(gp2d_page, "proba_ep")
    setattr(gp2d_page.model, name, bad)
    assert gp2d_page.model.fit is good_fit
    assert _title(gp2d_page, "proba_ep") == good_title
    assert gp2d_page.model.message.startswith(f"{name} must be a number in [")
    assert gp2d_page.alert.visible and "keep the last good" in gp2d_page.alert.object
    setattr(gp2d_page.model, name, gp2d_page.model.param[name].default if name != "n" else 40)
    assert gp2d_page.model.message == "" and not gp2d_page.alert.visible


def test_clicks_add_and_remove_points_and_one_class_is_reported(gp2d_page):
    gp2d_page.model.n = 2  # one point per class
    preset_X, preset_y = gp2d_page.model.X.copy(), gp2d_page.model.y.copy()
    gp2d_page.model.click_class = "-1"
    gp2d_page.model.toggle_point(0.0, 2.9)
    np.testing.assert_array_equal(gp2d_page.model.y, [*preset_y, -1.0])
    assert gp2d_page.model.added == [[0.0, 2.9, -1.0]] and "N=3," in _title(gp2d_page, "proba_ep")
    kept = gp2d_page.model.fit
    positive = int(np.flatnonzero(preset_y > 0)[0])
    gp2d_page.model.toggle_point(*(preset_X[positive] + 0.01))  # on the only point of class +1: it goes
    assert gp2d_page.model.removed == [positive]
    np.testing.assert_array_equal(gp2d_page.model.y, [-1.0, -1.0])
    assert gp2d_page.model.fit is kept
    assert "only one class is present: add a point of class +1" in gp2d_page.model.message
    gp2d_page.model.click_class = "+1"
    gp2d_page.model.toggle_point(2.0, -2.9)
    assert gp2d_page.model.message == "" and "N=3," in _title(gp2d_page, "proba_ep")
    gp2d_page.model.toggle_point(0.0, 2.9)  # a clicked point goes again when clicked
    assert gp2d_page.model.added == [[2.0, -2.9, 1.0]]
    gp2d_page.model.seed = 5  # new preset data start without the edits
    assert gp2d_page.model.added == [] and gp2d_page.model.removed == [] and len(gp2d_page.model.y) == 2


def test_edits_from_a_link_rebuild_the_same_data(gp2d_page):
    gp2d_page.model.param.update(preset="xor", n=30, added=[[0.5, 0.5, -1.0]], removed=[0, 3])  # as the URL sync does
    X, y = twod.make_preset("xor", 30, 0)
    np.testing.assert_array_equal(gp2d_page.model.X, np.vstack([np.delete(X, [0, 3], axis=0), [[0.5, 0.5]]]))
    np.testing.assert_array_equal(gp2d_page.model.y, [*np.delete(y, [0, 3]), -1.0])
    kept = gp2d_page.model.fit
    gp2d_page.model.added = [["a", 1, 1]]
    assert "clicked points must be [x1, x2, label]" in gp2d_page.model.message and gp2d_page.model.fit is kept


def test_an_edit_reuses_cached_grids(gp2d_page):
    first = gp2d_page.model.fit
    gp2d_page.model.variance = 1.0
    gp2d_page.model.variance = first.kernel.variance
    assert gp2d_page.model.fit.proba["ep"] is first.proba["ep"]  # the cached grid, not a refit


def test_csv_export_is_the_fitted_grid(gp2d_page):
    text = gp2d_page.download.callback().getvalue()
    assert text == twod.grid_csv(gp2d_page.model.fit)
    assert text.splitlines()[0].startswith("x1,x2,p_ep,mean_ep,var_ep,p_qp")


@pytest.mark.parametrize("typed", ["-3", "1.5", "abc", "1e308", "nan"])
def test_a_bad_typed_seed_is_named_with_its_range_and_the_box_shows_the_seed_in_use(gp2d_page, typed):
    """Issue 21: the seed's number box dropped letters and clamped -3 silently."""
    from safe_text import shown

    box, fit = gp2d_page.widgets["seed"], gp2d_page.model.fit
    box.value = typed
    assert gp2d_page.model.message == f"seed: {typed!r} was not applied; type a whole number from 0 to 10000; kept 0"
    assert shown(gp2d_page.alert.object) == gp2d_page.model.message and gp2d_page.model.fit is fit and box.value == "0"
    box.value = "4"
    gp2d_page.model.ensure_fit()
    assert gp2d_page.model.message == "" and gp2d_page.model.seed == 4 and gp2d_page.model.fit is not fit


def test_the_methods_share_one_grid_cross_covariance_and_predict_as_alone():
    """K(X, grid) is computed once for every method fitted together (their posteriors share the
    kernel and the inputs), and each method's maps equal its own posterior's predict_f bit for bit."""
    from qpviz.inference.fit import fit

    class CountingRBF(RBF):
        grid_calls = 0

        def __call__(self, X1, X2=None):
            if X2 is not None and len(X2) == GRID * GRID:
                CountingRBF.grid_calls += 1
            return super().__call__(X1, X2)

    X, y = twod.make_preset("moons", n=60, seed=3)
    kernel = CountingRBF(variance=2.0, lengthscale=0.8)
    result = twod.fit_grid(X, y, kernel, methods=("ep", "qp", "vb", "laplace"), grid_size=GRID)
    assert CountingRBF.grid_calls == 1
    grid = twod.make_grid(X, GRID)[2]
    for method in ("ep", "qp", "vb", "laplace"):
        mean, var = fit(X, y, "probit", kernel, method=method).predict_f(grid)
        np.testing.assert_array_equal(result.mean[method].ravel(), mean)
        np.testing.assert_array_equal(result.var[method].ravel(), var)
