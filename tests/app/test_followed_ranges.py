"""Axis ranges computed in the server (app/followed_ranges.py) and the NaN-padded sources
(explorer_figures.padded), alone and on the GP pages: a slider step sends the new ranges with the
new data, a click patches the data sources in place."""
from __future__ import annotations

import numpy as np
import panel as pn
import pytest
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ColumnsPatchedEvent, ModelChangedEvent
from bokeh.models import ColumnDataSource, DataRange1d, Range1d
from bokeh.plotting import figure

import gp_1d
import gp_2d
from explorer_figures import PAD_TO, padded, set_data
from followed_ranges import FollowedRanges, data_extent
from qpviz.gpdemo import oned_model


def _figure_with_data():
    fig = figure()
    fig.line([0.0, 1.0, 3.0], [2.0, np.nan, 4.0])
    fig.varea(x=[1.0, 2.0], y1=[-1.0, -2.0], y2=[5.0, 6.0])
    fig.scatter([np.nan, -4.0], [0.5, 0.5])
    return fig


def test_ranges_cover_every_glyphs_finite_data_padded_as_data_range1d_shows_it():
    fig = _figure_with_data()
    ranges = FollowedRanges(fig)
    ranges.follow()
    assert fig.x_range is ranges.x and isinstance(ranges.x, Range1d)
    # x over [-4, 3] (NaN skipped), y over [-2, 6] (varea's y1 and y2 included), 5% each side
    assert (ranges.x.start, ranges.x.end) == pytest.approx((-4 - 0.35, 3 + 0.35))
    assert (ranges.y.start, ranges.y.end) == pytest.approx((-2 - 0.4, 6 + 0.4))
    assert (ranges.x.reset_start, ranges.x.reset_end) == (ranges.x.start, ranges.x.end)


def test_a_log_axis_is_padded_in_log_space_over_positive_values():
    assert data_extent([np.array([1e-4, 1.0, -1.0, 0.0])], log=True) == pytest.approx((10 ** -4.2, 10 ** 0.2))
    assert data_extent([np.array([7.0])]) == pytest.approx((7 - 0.35, 7 + 0.35))
    assert data_extent([np.array([np.nan])[np.isfinite([np.nan])]]) is None


def test_a_figure_without_data_keeps_its_ranges():
    fig = figure()
    fig.line([], [])
    ranges = FollowedRanges(fig)
    ranges.follow()
    assert (ranges.x.start, ranges.x.end, ranges.y.start, ranges.y.end) == (0.0, 1.0, 0.0, 1.0)


def test_a_zoomed_view_is_kept_until_reset_then_it_follows_the_data_again():
    fig = figure()
    source = fig.line([0.0, 10.0], [0.0, 10.0]).data_source
    ranges = FollowedRanges(fig)
    ranges.follow()
    ranges.x.update(start=2.0, end=3.0)  # the user zoomed (the browser sent the range)
    source.data = {"x": [0.0, 20.0], "y": [0.0, 20.0]}
    ranges.follow()
    assert (ranges.x.start, ranges.x.end) == (2.0, 3.0)  # the zoom stays
    assert (ranges.y.start, ranges.y.end) == pytest.approx((-1.0, 21.0))  # the axis not zoomed follows
    assert (ranges.x.reset_start, ranges.x.reset_end) == pytest.approx((-1.0, 21.0))  # reset goes to the data
    ranges.x.update(start=ranges.x.reset_start, end=ranges.x.reset_end)  # the reset tool
    source.data = {"x": [0.0, 40.0], "y": [0.0, 40.0]}
    ranges.follow()
    assert (ranges.x.start, ranges.x.end) == pytest.approx((-2.0, 42.0))


def test_padded_columns_are_nan_to_a_multiple_of_pad_to_and_a_new_length_patches():
    columns = padded({"x": [1, 2, 3], "y": [4.0, 5.0, 6.0]})
    assert len(columns["x"]) == PAD_TO and np.all(np.isnan(columns["x"][3:]))
    np.testing.assert_array_equal(columns["y"][:3], [4.0, 5.0, 6.0])
    assert all(len(v) == 0 for v in padded({"x": [], "y": []}).values())
    doc = Document()
    fig = figure()
    source = ColumnDataSource(padded({"x": [1.0, 2.0], "y": [1.0, 2.0]}))
    fig.scatter("x", "y", source=source)
    doc.add_root(fig)
    events = []
    doc.on_change(events.append)
    set_data(source, padded({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}))  # one more point
    assert [type(e) for e in events] == [ColumnsPatchedEvent]
    events.clear()
    set_data(source, padded({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 7.0]}))  # only y changes: only y is sent
    assert len(events) == 1 and set(events[0].patches) == {"y"}


def _served(page):
    doc = Document()
    doc.add_root(pn.panel(page).get_root(doc))
    events = []
    doc.on_change(events.append)
    return doc, events


def test_a_gp1d_key_press_sends_its_ranges_with_the_data_and_a_click_patches_the_points():
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.param.update(methods=["ep", "qp"])
    page.model.cancel_job()
    doc, events = _served(page)
    for fig in page.views.figures.values():
        assert isinstance(fig.x_range, Range1d) and isinstance(fig.y_range, Range1d)
    assert not [m for m in doc.models if isinstance(m, DataRange1d)]
    latent = page.views.ranges["latent"].y
    before = (latent.start, latent.end)
    page.lengthscale.value = round(page.lengthscale.value * 0.5, 2)
    assert (latent.start, latent.end) != before
    changed = {(e.model, e.attr) for e in events if isinstance(e, ModelChangedEvent)}
    assert (latent, "start") in changed and (latent, "end") in changed
    # the x grid and the data points did not change: only the fitted columns were sent
    patched = [e for e in events if isinstance(e, ColumnsPatchedEvent) and e.model is page.views.sources["ep"]]
    assert patched and "x" not in patched[0].patches and "mean" in patched[0].patches
    events.clear()
    n = page.model.y.size
    box = page.views.figures["predictive"]
    page.model.click(float(np.mean(page.model.X[:, 0])) + 0.0123, 0.5)  # a new point
    assert page.model.y.size != n
    assert not [e for e in events if isinstance(e, ColumnDataChangedEvent) and e.model is page.views.data]
    assert [e for e in events if isinstance(e, ColumnsPatchedEvent) and e.model is page.views.data]
    assert box.x_range is page.views.ranges["predictive"].x


def test_a_gp2d_key_press_sends_nothing_for_the_unchanged_points_and_patches_the_pixels():
    page = gp_2d.GP2DPage(n=40, methods=["ep", "qp"])
    page._build_views()
    doc, events = _served(page)
    points = {source for grid_figure in page.figures.values() for source in grid_figure.points.values()}
    page.model.lengthscale = round(page.model.lengthscale * 0.8, 3)
    page.model.changed()
    assert not [e for e in events if getattr(e, "model", None) in points]
    # the maps' pixels are patched (the grid stays): no image source gets new data
    images = {grid_figure.image for grid_figure in page.figures.values()}
    assert not [e for e in events if isinstance(e, ColumnDataChangedEvent) and e.model in images]
    patched = {e.model for e in events if isinstance(e, ColumnsPatchedEvent) and set(e.patches) == {"image", "value"}}
    assert {page.figures[key].image for key in ("proba_ep", "var_ep", "proba_qp", "var_qp", "diff")} <= patched
    np.testing.assert_array_equal(page.figures["proba_ep"].image.data["value"][0], page.model.fit.proba["ep"].astype(np.float32))
