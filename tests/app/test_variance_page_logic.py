"""The Variance effects page (app/variance_effects.py) without a browser: its widgets bound to
:class:`qpviz.gpdemo.variance_model.VarianceModel`, the views it draws, the link banner and the typed
seed (the model alone: tests/gpdemo/test_variance_model.py; the computation: tests/test_variance_effects.py)."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz import variance_effects as ve
from qpviz.reproduce import datasets
from safe_text import shown


def _page(**params):
    from variance_effects import VarianceEffects  # app/ module (pyproject pythonpath)

    page = VarianceEffects(optimise=False, **params)
    page.model.wait(120)
    return page


def test_page_draws_scatter_histogram_and_table_of_its_fit():
    page = _page(dataset="synthetic 2-D", seed=2)
    result = page.model.result
    assert result is not None and result.name == "synthetic 2-D" and not page.alert.visible
    np.testing.assert_array_equal(page.views.scatter_source.data["var_ep"], result.var_ep)
    np.testing.assert_array_equal(page.views.scatter_source.data["var_qp"], result.var_qp)
    assert int(np.sum(page.views.histogram_source.data["count"])) == result.n_test
    lo, hi = page.views.diagonal_source.data["x"]
    assert lo < min(result.var_ep.min(), result.var_qp.min()) and hi > max(result.var_ep.max(), result.var_qp.max())
    for label in ("EP", "QP", "VB", "Laplace"):
        assert f"{label}</td>" in page.scores.object
    assert f"{result.scores['qp']['ntll']:.4f}" in page.scores.object
    assert f"All {result.n_test} held-out points lie on or below" in page.sentences["scatter"].object
    assert page.cancel_button.disabled  # idle: nothing to cancel
    assert page.figures["scatter"].x_range.start > 0  # log axis


def test_page_flips_back_to_a_cached_fit_at_once():
    page = _page(dataset="synthetic 1-D", seed=7)
    first = page.model.result
    page.model.seed = 8
    page.model.wait(120)
    assert page.model.result is not first
    page.model.seed = 7
    assert not page.model.busy and page.model.result is first  # from the cache, no job


def test_page_keeps_last_good_views_when_a_dataset_is_missing(monkeypatch, tmp_path):
    page = _page(dataset="synthetic 1-D", seed=7)
    good = page.model.result
    monkeypatch.setattr(datasets, "default_data_dir", lambda: tmp_path)  # a broken install: no packaged files
    page.model.dataset = "sonar"
    page.model.wait(30)
    assert page.model.result is good
    assert page.alert.visible and "sonar skipped" in shown(page.alert.object)
    assert (page.model.dataset, page.model.seed) == ("synthetic 1-D", 7)  # the controls show the views' fit again
    np.testing.assert_array_equal(page.views.scatter_source.data["var_ep"], good.var_ep)


def test_page_cancel_keeps_last_good_views():
    page = _page(dataset="synthetic 1-D", seed=7)
    good = page.model.result
    page.model.param.update(optimise=True, seed=11)
    assert page.model.busy and not page.cancel_button.disabled
    page.cancel_button.clicks += 1
    page.model.wait(60)
    assert page.model.result is good and page.cancel_button.disabled
    assert "cancelled" in shown(page.status.object)
    assert (page.model.seed, page.model.optimise) == (7, False)  # the controls show the views' fit again


def _linked_page(**params):
    """A page whose link values come from ``page.query`` (what the URL sync sets in a session)."""
    import variance_effects as page_module

    page = _page(**params)
    page.query = page_module.VarianceQuery()
    page.query.param.watch(page._on_query, list(page_module.URL_KEYS))
    return page


def test_page_reads_a_link_and_names_its_bad_values():
    page = _linked_page(dataset="synthetic 1-D", seed=7)
    page.query.param.update(ve_dataset="synthetic 2-D", ve_seed="abc", ve_folds=5, ve_optimise="off")
    page.model.wait(120)
    assert (page.model.dataset, page.model.seed, page.model.folds, page.model.optimise) == ("synthetic 2-D", 7, 5, False)
    said = shown(page.link_alert.object)
    assert page.link_alert.visible and "ve_seed='abc' (split seed: a whole number from 0 to 10000); shown instead: 7" in said
    assert "ve_dataset" not in said and "ve_folds" not in said
    assert page.model.result.settings.n_folds == 5 and page.model.result.name == "synthetic 2-D"
    assert page.query.ve_seed == 7  # the link is rewritten to the seed shown


@pytest.mark.parametrize("key, value, words", [
    ("ve_dataset", "<b>nope</b>", "(dataset: one of synthetic 1-D, synthetic 2-D, "),
    ("ve_seed", "10001", "(split seed: a whole number from 0 to 10000); shown instead: 7"),
    ("ve_folds", "7", "(folds: one of 10, 5, 2); shown instead: 10"),
    ("ve_optimise", "maybe", "(optimise hyper-parameters: on or off (true/false, 1/0)); shown instead: off"),
])
def test_a_refused_link_value_is_named_with_its_field_and_accepted_values(key, value, words):
    """Issue 21.3: the banner named the key and value ("... is not valid and was replaced") but not
    what the key accepts."""
    page = _linked_page(dataset="synthetic 1-D", seed=7)
    page.query.param.update(**{key: value})
    said = shown(page.link_alert.object)
    assert page.link_alert.visible and f"{key}={value!r} {words}" in said, said
    assert (page.model.dataset, page.model.seed, page.model.folds, page.model.optimise) == ("synthetic 1-D", 7, 10, False)


def test_a_link_read_in_two_updates_names_both_refusals():
    """link_query.sync hands the values Panel's parsing drops (here "[x") over in a second update of
    the same link: the first update's refusal stays named."""
    page = _linked_page(dataset="synthetic 1-D", seed=7)
    page.query.param.update(ve_seed="abc")
    page.query.param.update(ve_folds="[x")
    said = shown(page.link_alert.object)
    assert "ve_seed='abc'" in said and "ve_folds='[x'" in said, said


@pytest.mark.parametrize("move", ["typed seed", "folds", "optimise", "later good link"])
def test_the_link_banner_goes_at_the_next_valid_change(move):
    """The banner spoke of a link the page no longer shows: it used to stay after the reader (or a
    later good link) changed the view. A refused typed seed is no change: the banner stays."""
    page = _linked_page(dataset="synthetic 1-D", seed=7)
    page.query.param.update(ve_seed="abc")
    assert page.link_alert.visible
    page.seed_input.value = "-1"  # refused: not a change of the view
    assert page.link_alert.visible and page.model.seed == 7
    if move == "typed seed":
        page.seed_input.value = "8"
    elif move == "folds":
        page.folds_select.value = 5
    elif move == "optimise":
        page.optimise_box.value = True
    else:
        page.query.param.update(ve_seed="9")
    try:
        assert not page.link_alert.visible and page.link_alert.object == ""
    finally:
        page.model.cancel()
        page.model.wait(120)


def test_the_link_banner_stays_when_a_link_reads_the_view_shown_again():
    """Another key's good value that asks for the view shown (Panel's sync reading the link again,
    e.g. after the tab corrected page=) is no new view: the refusal stays named."""
    page = _linked_page(dataset="synthetic 1-D", seed=7)
    page.query.param.update(ve_seed="abc")
    page.query.param.update(ve_dataset="synthetic 1-D", ve_optimise="off")
    assert page.link_alert.visible and "ve_seed='abc'" in shown(page.link_alert.object)


def test_page_fits_data_another_page_passes_and_exports_csv():
    page = _page(dataset="synthetic 1-D", seed=7)
    X, y = ve.synthetic_data("synthetic 2-D", m=50, seed=9)
    page.model.use_data("current data (GP 2-D)", X, y)
    assert page.model.dataset == "current data (GP 2-D)"
    assert "current data (GP 2-D)" in page.dataset_select.options
    page.model.wait(120)
    r = page.model.result
    assert r.name == "current data (GP 2-D)" and r.n_train + r.n_test == 50
    assert ve.cached("current data (GP 2-D)", page.model.settings(), X, y) is r
    rows = page.model.csv_text().splitlines()
    assert rows[1] == "point,var_ep,var_qp,ratio"
    first = rows[2].split(",")
    assert float(first[1]) == r.var_ep[0] and float(first[2]) == r.var_qp[0]
    assert rows[-4].split(",")[0] == "ep" and float(rows[-3].split(",")[2]) == r.scores["qp"]["ntll"]


@pytest.mark.parametrize("typed", ["10001", "-3", "", "abc", "3.7", "nan"])
def test_page_names_a_refused_seed_with_its_range_and_shows_the_seed_in_use(typed):
    """Issue 21: "3.7" in the number box became 37 and "abc" was dropped, silently."""
    page = _page(dataset="synthetic 1-D", seed=7)
    good = page.model.result
    page.seed_input.value = typed
    assert page.model.seed == 7 and page.seed_input.value == "7" and not page.model.busy
    assert page.alert.visible
    assert shown(page.alert.object) == f"split seed: '{typed}' was not applied; type a whole number from 0 to 10000; kept 7"
    assert page.model.result is good
    page.seed_input.value = "8"  # a valid seed still reaches the page, and the message goes
    assert page.model.seed == 8 and not page.alert.visible
    page.model.wait(120)
