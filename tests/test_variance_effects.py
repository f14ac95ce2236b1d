"""qpviz.variance_effects: held-out EP vs QP latent variances, the QP paper's Figure 1 (the page's
logic without a browser: tests/app/test_variance_page_logic.py)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import qpviz
from qpviz import variance_effects as ve
from qpviz.inference import metrics
from qpviz.reproduce import datasets, protocol


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
