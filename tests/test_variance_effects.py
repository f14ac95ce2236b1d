"""qpviz.variance_effects (held-out EP vs QP latent variances, the QP paper's Figure 1) and the
Variance-effects page's logic without a browser."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import qpviz
from qpviz import variance_effects as ve
from qpviz.inference import metrics
from qpviz.reproduce import datasets, protocol
from safe_text import shown


@pytest.fixture(scope="module")
def wine1_optimised():
    """wine1, paper protocol (fold 0 of 10, seed 0), EP's evidence optimised: Figure 1's setting."""
    return ve.variances_for("wine1", ve.Settings(seed=0, optimise=True))


def test_qp_latent_variance_never_exceeds_ep_on_wine1(wine1_optimised):
    r = wine1_optimised
    assert r.n_test == len(r.var_ep) == len(r.var_qp) > 0
    assert np.all(r.var_qp <= r.var_ep), f"QP above EP at {np.flatnonzero(r.var_qp > r.var_ep)}"
    assert r.n_above == 0
    # optimised hyper-parameters make the difference visible (not a trivially equal pair)
    assert r.ratio.min() < 0.99


def test_ratios_lie_in_zero_one(wine1_optimised):
    ratio = wine1_optimised.ratio
    assert np.all(np.isfinite(ratio))
    assert np.all((ratio > 0) & (ratio <= 1))


def test_scores_are_metrics_evaluate_of_the_same_fits():
    """TE and NTLL per method equal metrics.evaluate on fits made here from the protocol's split."""
    settings = ve.Settings(seed=3, optimise=False)
    result = ve.held_out_variances(*_wine1(), settings=settings, name="wine1")
    data = datasets.load("wine1", "paper")
    X_train, y_train, X_test, y_test = protocol.split(
        data, protocol.Task("wine1", "paper", 3, 0, 10, settings.max_opt_iter))
    assert (result.n_train, result.n_test) == (len(y_train), len(y_test))
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=1.0)
    for method in ve.METHODS:
        post = qpviz.fit(X_train, y_train, "probit", kernel, method=method,
                         **({} if method == "laplace" else {"tol": settings.tol}))
        expected = metrics.evaluate(post, X_test, y_test)
        assert result.scores[method]["test_error"] == pytest.approx(expected["test_error"], abs=1e-12)
        assert result.scores[method]["ntll"] == pytest.approx(expected["ntll"], rel=1e-6)
        if method in ("ep", "qp"):
            np.testing.assert_allclose(getattr(result, f"var_{method}"), post.predict_f(X_test)[1], rtol=1e-6)


def _wine1():
    data = datasets.load("wine1", "paper")
    return data.X, data.y


def test_missing_dataset_is_skipped_with_its_message(tmp_path):
    outcome = ve.variances_for("sonar", ve.Settings(optimise=False), data_dir=tmp_path)
    assert isinstance(outcome, ve.Skipped)
    assert outcome.name == "sonar"
    assert "sonar skipped" in outcome.message and "sonar.all-data" in outcome.message


def test_results_are_cached_per_dataset_and_settings():
    ve.clear_cache()
    settings = ve.Settings(seed=1, optimise=False)
    assert ve.cached("synthetic 1-D", settings) is None
    first = ve.variances_for("synthetic 1-D", settings)
    assert ve.cached("synthetic 1-D", settings) is first
    assert ve.variances_for("synthetic 1-D", settings) is first
    assert ve.cached("synthetic 1-D", ve.Settings(seed=2, optimise=False)) is None


def test_callers_arrays_are_fitted_and_keyed_by_their_content():
    X, y = ve.synthetic_data("synthetic 2-D", m=60, seed=4)
    settings = ve.Settings(optimise=False, n_folds=5)
    result = ve.variances_for("current data", settings, X, y)
    assert result.n_train + result.n_test == 60 and result.n_features == 2
    assert np.all(result.var_qp <= result.var_ep)
    y_other = y.copy()
    y_other[0] *= -1
    assert ve.cached("current data", settings, X, y_other) is None


def test_a_method_that_does_not_apply_is_reported_and_the_others_are_scored():
    """Laplace needs a twice-differentiable log-likelihood: on Laplace-noise regression it is
    skipped with the reason, while EP, QP and VB are fitted and scored."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (60, 1))
    y = np.sin(X[:, 0]) + rng.laplace(0.0, 0.2, 60)
    lik = qpviz.likelihood("laplace")
    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=1.5)
    result = ve.variances_for("robust", ve.Settings(optimise=False, n_folds=5), X, y, lik, kernel)
    assert set(result.skipped) == {"laplace"} and "twice-differentiable" in result.skipped["laplace"]
    assert np.isnan(result.scores["laplace"]["ntll"])
    assert all(np.isfinite(result.scores[m]["ntll"]) for m in ("ep", "qp", "vb"))
    assert np.all(result.var_qp <= result.var_ep * (1 + 1e-9))
    # the kernel is part of the key: another start kernel is another fit
    assert ve.cached("robust", ve.Settings(optimise=False, n_folds=5), X, y, lik, kernel) is result
    assert ve.cached("robust", ve.Settings(optimise=False, n_folds=5), X, y, lik,
                     qpviz.kernels.RBF(variance=1.0, lengthscale=1.0)) is None
    from variance_effects import scores_html  # noqa: PLC0415 - app/ module

    table = scores_html(result)
    assert "not fitted" in table and "Laplace not fitted: the Laplace approximation needs" in table


def test_cancel_stops_the_optimisation_and_caches_nothing():
    cancel = threading.Event()
    seen = []

    def progress(text):
        seen.append(text)
        if "evaluation 2" in text:
            cancel.set()

    settings = ve.Settings(seed=5, optimise=True)
    with pytest.raises(ve.FitCancelled):
        ve.variances_for("synthetic 2-D", settings, cancel=cancel, progress=progress)
    assert any("evaluation 2" in text for text in seen)
    assert not any("evaluation 3" in text for text in seen)  # stopped at the next evaluation
    assert ve.cached("synthetic 2-D", settings) is None


@pytest.mark.parametrize("X, y, message", [
    (np.zeros((10, 1)), np.ones(10), "too few"),
    (np.c_[np.r_[np.nan, np.arange(39.0)]], np.where(np.arange(40) % 2, 1.0, -1.0), "finite"),
    (np.arange(40.0)[:, None], np.ones(40), "one class"),
])
def test_bad_data_raise_a_message_saying_what_to_change(X, y, message):
    with pytest.raises(ValueError, match=message):
        ve.held_out_variances(X, y, settings=ve.Settings(optimise=False))


def test_settings_reject_bad_values():
    with pytest.raises(ValueError, match="fold"):
        ve.Settings(n_folds=1)
    with pytest.raises(ValueError, match="seed"):
        ve.Settings(seed=-1)


# -- the page's logic (no browser) ---------------------------------------------------------------

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
