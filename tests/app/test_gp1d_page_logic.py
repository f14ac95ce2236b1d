"""The GP 1-D page object (app/gp_1d.py), without a browser: its widgets drive the model
(qpviz/gpdemo/oned_model.py, tested on its own in tests/gpdemo/test_gpdemo_oned_model.py)."""
from __future__ import annotations

import base64

import numpy as np
import panel as pn
import pytest
from bokeh.models import TapTool

import gp_1d
from qpviz.gpdemo import oned_model, presets
from qpviz.gpdemo.oned_model import GP1DModel
from safe_text import shown


def test_a_seed_change_during_the_mcmc_run_draws_the_new_data_reference():
    """Issue 21: the stale reference of the old seed must not be drawn for the new data; the job
    of the new data replaces the old one and its table cell carries the diagnostics."""
    oned_model.FIT_CACHE.clear()
    m = GP1DModel(methods=["ep", "mcmc"])  # the default preset: step likelihood, eps = 0
    assert m.job_running
    old_job = m._job
    m.seed = 3
    assert m._job is not old_job and old_job["cancel"].is_set()
    m.wait()
    data = presets.make(m.preset, m.n_points, 3)
    np.testing.assert_array_equal(m.y, data.y)
    reference = m.fits["mcmc"]
    assert np.all(data.y * reference.train_mean > 0)  # inside the new labels' support
    assert reference.converged and reference.convergence().startswith("converged (R-hat")
    assert "converged (R-hat" in m.job_status and "<strong>" not in gp_1d.table_html(m.fits)


def test_page_builds_and_its_widgets_drive_the_model():
    oned_model.FIT_CACHE.clear()
    title, page = gp_1d.page()
    assert title == "GP 1-D"
    page.model.cancel_job()
    page.lengthscale.value = 2.0
    assert page.model.lengthscale == 2.0
    assert "EP" in page.table.object and "QP" in page.table.object
    page.variance.value = 0.0
    assert page.alert.visible and "kernel variance" in shown(page.alert.object)
    assert page.variance.value == page.model.variance == 9.0  # refused: the last good value is kept and shown
    page.variance.value = 2.0
    page.step_site.clicks += 1
    assert page.views.marks[0].visible and "open site" in page.explorer_link.object


def test_a_refit_patches_the_fits_in_place_and_sends_nothing_for_empty_views():
    """A lengthscale step sends the new fits as patches of the sources' own copies (a new ``data``
    makes the browser rebuild every legend of the figure), and nothing for the views that stay
    empty (optimisation, step-through, sd ratios); the cached fits' arrays are never written."""
    from bokeh.document import Document
    from bokeh.document.events import ColumnDataChangedEvent, ColumnsPatchedEvent

    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.param.update(methods=["ep", "qp"])
    page.model.cancel_job()
    doc = Document()
    doc.add_root(pn.panel(page).get_root(doc))
    first = page.model.fits["ep"]
    first_mean = first.mean.copy()
    events = []
    doc.on_change(events.append)
    page.lengthscale.value = round(page.lengthscale.value + 0.01, 2)
    patched = {e.model for e in events if isinstance(e, ColumnsPatchedEvent)}
    replaced = {e.model for e in events if isinstance(e, ColumnDataChangedEvent)}
    views = page.views
    assert {views.sources["ep"], views.sources["qp"], views.site_sources["ep"]} <= patched
    assert not replaced & {views.optimisation, views.step_state, views.site_curves, views.ratio_band,
                           *views.change_bands.values(), *views.ratio_sources.values()}
    fit = page.model.fits["ep"]
    assert fit is not first and np.array_equal(first.mean, first_mean)  # the old fit kept its numbers
    np.testing.assert_array_equal(views.sources["ep"].data["mean"], fit.mean)
    assert views.sources["ep"].data["mean"] is not fit.mean


def test_projector_mode_enlarges_figures_and_hostile_counts_are_refused_with_the_range():
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.cancel_job()
    latent = page.views.figures["latent"]
    normal = int(latent.title.text_font_size.rstrip("px"))
    page.projector = True
    assert int(latent.title.text_font_size.rstrip("px")) > normal and latent.height > 330
    n, good = page.model.y.size, page.model.fits
    page.n_points.value = "-3"
    assert shown(page.alert.object) == f"number of points: '-3' was not applied; type a whole number from 5 to 1000; kept {n}"
    assert page.model.y.size == n and page.model.fits is good and page.n_points.value == str(n)  # last good shown
    page.lik_params.value = "eps=0.7"  # step's eps must lie in [0, 0.5)
    assert page.alert.visible and "likelihood parameters not applied" in shown(page.alert.object)
    assert page.model.likelihood_params == {"eps": 0.0}


def test_page_streams_the_optimisation_into_its_figure():
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.methods = ["ep"]
    page.optimise_button.clicks += 1
    page.model.wait()
    title = page.views.figures["optimisation"].title.text
    assert title.startswith("EP evidence per optimisation step: ") and title.endswith("(done)")
    assert len(page.views.optimisation.data["evidence"]) == len(page.model.optimisation) >= 2


def test_the_likelihood_menu_switches_to_the_new_likelihoods_own_parameters():
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.cancel_job()
    page.methods.value = ["ep", "qp"]
    assert page.model.likelihood_params == {"eps": 0.0}
    page.likelihood.value = "probit"  # step's eps was kept, and probit refused it: no switch was possible
    assert page.model.likelihood == "probit" and page.model.likelihood_params == {}
    assert page.model.message == "" and not page.alert.visible
    page.lik_params.value = "0"
    assert "'0' is not label=value" in shown(page.alert.object)


def test_an_upload_too_large_for_the_browser_or_empty_says_so_every_time():
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.cancel_job()
    page.methods.value = ["ep", "qp"]
    good, n = page.model.fits, page.model.y.size
    page.upload.file = {"count": 1, "name": "big.csv", "size": 52_428_814, "data": None}  # not sent by the browser
    assert "CSV not loaded: the file has 52.4 MB; the limit is 5 MB" in shown(page.alert.object)
    assert page.model.fits is good and page.model.y.size == n
    page.model.message = ""
    page.upload.file = {"count": 2, "name": "empty.csv", "size": 0, "data": ""}
    assert "CSV not loaded: the file is empty" in shown(page.alert.object)
    page.model.message = ""
    page.upload.file = {"count": 3, "name": "empty.csv", "size": 0, "data": ""}  # the same file again
    assert "the file is empty" in shown(page.alert.object)
    content = base64.b64encode(b"x,y\n0,-1\n1,-1\n2,1\n3,1\n").decode()
    page.upload.file = {"count": 4, "name": "good.csv", "size": 24, "data": content}
    assert page.model.y.size == 4 and not page.alert.visible


@pytest.mark.parametrize("name, typed", [("n_points", "abc"), ("n_points", "100000"), ("n_points", "1.5"),
                                          ("n_points", "nan"), ("seed", "1.5"), ("seed", "-3"), ("seed", "abc"),
                                          ("variance", "-1"), ("variance", "0"), ("lengthscale", "1e308"),
                                          ("lengthscale", "inf")])
def test_a_typed_value_out_of_range_is_named_the_box_shows_the_last_good_value_and_a_good_one_clears_it(name, typed):
    """Issue 21: "1.5" in the seed box was taken as 15, "100000" points silently clipped; the bad text stayed."""
    _, page = gp_1d.page()
    page.model.cancel_job()
    page.methods.value = ["ep", "qp"]
    box, field = getattr(page, name), oned_model.TYPED[name]
    kept, good = getattr(page.model, name), page.model.fits
    text_box = isinstance(box, pn.widgets.TextInput)  # else an editable slider's number box
    box.value = typed if text_box else float(typed)
    quoted = f"'{typed}'" if text_box else f"{float(typed)}"
    assert shown(page.alert.object).startswith(f"{field.name}: {quoted} was not applied; type {field.accepted}")
    assert page.alert.visible and page.model.fits is good and getattr(page.model, name) == kept
    assert box.value == (field.show(kept) if text_box else kept)  # the box shows the value in use again
    other = {"n_points": "40", "seed": "3", "variance": 3.7, "lengthscale": 2.5}[name]
    box.value = other  # a good value: refitted, the message goes
    assert not page.alert.visible and page.model.fits is not good and field.show(getattr(page.model, name)) == f"{other}"


def test_an_upload_note_goes_when_the_points_change_and_bad_likelihood_text_is_replaced():
    _, page = gp_1d.page()
    page.model.cancel_job()
    page.methods.value = ["ep", "qp"]
    page.model.upload(b"x,y\n0,1\n1,-1\n2,1\n")
    assert page.info.visible and "3 points from the uploaded CSV" in shown(page.info.object)
    page.seed.value = "2"  # the preset's data drawn again: the upload's note is stale
    assert page.model.y.size == 60 and not page.info.visible
    page.lik_params.value = "eps=2"
    assert "not applied" in shown(page.alert.object) and "kept eps=0" in shown(page.alert.object)
    assert page.lik_params.value == "eps=0" and page.model.likelihood_params == {"eps": 0.0}
    page.lik_params.value = "eps=0.1"
    assert not page.alert.visible and page.model.likelihood_params == {"eps": 0.1}


def test_a_site_step_shows_the_posterior_before_and_after_and_says_how_the_site_came_about():
    """Issue 21: the step-through's lesson on the page (its numbers are checked in test_gpdemo_oned)."""
    title, page = gp_1d.page()
    page.model.cancel_job()
    page.model.methods = ["ep", "qp"]
    page.step_site.clicks += 1
    page.step_site.clicks += 1
    change = page.model.change
    assert change.index == 1 and page.model.site.index == 2
    text = shown(page.change_text.object)
    assert text.startswith(f"The update just made: Site 1 at x = {change.x:.3g}") and "dividing by the cavity" in text
    assert f"moved from {change.before_mean[1]:.3g} ± {np.sqrt(change.before_var[1]):.3g}" in text
    for when in ("before", "after"):
        data = page.views.change_bands[when].data
        assert len(data["x"]) == page.model.y.size and np.all(np.diff(data["x"]) >= 0)
        assert all(np.all(np.isfinite(data[k])) for k in ("lower", "upper"))
    after = page.views.change_bands["after"].data
    i = int(np.flatnonzero(after["x"] == change.x)[0])
    assert after["upper"][i] == pytest.approx(change.after_mean[1] + 2 * np.sqrt(change.after_var[1]))
    page.step_sweep.clicks += 1  # a sweep is not one site's lesson: the bands and the text go
    assert page.model.change is None and page.change_text.object == ""
    assert len(page.views.change_bands["before"].data["x"]) == 0
    page.model.lengthscale = 1.5  # new inputs stop the step-through
    assert page.model.change is None and page.model.site is None


def test_sd_ratios_to_mcmc_are_drawn_and_read_once_the_reference_is_in():
    """Issue 21: where EP over-estimates the variance and whether QP fixes it."""
    oned_model.FIT_CACHE.clear()
    title, page = gp_1d.page()  # EP, QP and the MCMC reference
    assert "running" in shown(page.sd_text.object)
    assert len(page.views.ratio_sources["ep"].data["x"]) == 0
    page.model.wait()
    comparison = page.model.sd_comparison()
    reference = page.model.fits["mcmc"]
    for method in ("ep", "qp"):
        data = page.views.ratio_sources[method].data
        assert len(data["x"]) > 100 and np.all(np.isfinite(data["ratio"]))
        expected = np.sqrt(page.model.fits[method].var / reference.var)
        np.testing.assert_allclose(data["ratio"], expected[np.isfinite(expected)])
    assert len(page.views.ratio_sources["vb"].data["x"]) == 0
    text = shown(page.sd_text.object)
    value, index = comparison.peak["ep"]
    assert f"EP's largest sd ratio to the reference is {value:.2f}x at x = {reference.grid[index]:.3g}" in text
    assert f"QP's {comparison.ratios['qp'][index]:.2f}x there" in text and f"ESS {reference.ess:.0f}" in text
    # the step likelihood (eps = 0): QP's latent sd is below EP's wherever they differ (Theorem 2 at every site)
    assert np.all(comparison.ratios["qp"] <= comparison.ratios["ep"] + 1e-9)
    lower, upper = comparison.band()
    assert page.views.ratio_band.data["lower"][0] == pytest.approx(lower) and upper - lower < 0.2
    page.model.methods = ["ep", "qp"]
    assert "Turn MCMC on" in shown(page.sd_text.object) and len(page.views.ratio_sources["ep"].data["x"]) == 0


def test_a_click_on_the_predictive_plot_is_its_tap_event_with_no_tap_tool_selecting_glyphs():
    """The page adds or removes a point on the figure's Tap event; a TapTool would also hit-test and
    select the glyphs under every click, and repaint them, before the browser read the server's answer."""
    oned_model.FIT_CACHE.clear()
    _, page = gp_1d.page()
    page.model.cancel_job()
    predictive = page.views.figures["predictive"]
    assert "tap" in predictive._event_callbacks
    assert not [tool for fig in page.views.figures.values() for tool in fig.tools if isinstance(tool, TapTool)]
