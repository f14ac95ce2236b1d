"""qpviz.gpdemo.method_threads: a page's methods fitted at once (two threads) give what one thread
gives, raise what a fit raises, and keep each fit's warnings apart (other threads' pass on)."""
from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest

from qpviz import kernels
from qpviz.gpdemo import method_threads, twod
from qpviz.gpdemo.method_threads import MIN_POINTS, fit_each, fit_each_recording


def _thread_and_square(method):
    time.sleep(0.05)  # both submitted before either ends
    return threading.current_thread().name, len(method) ** 2


def test_two_methods_on_enough_points_run_on_two_threads_fewer_points_in_this_one():
    at_once = fit_each(_thread_and_square, ["ep", "qp"], MIN_POINTS)
    assert {value for _, value in at_once.values()} == {4}
    names = {name for name, _ in at_once.values()}
    assert len(names) == 2 and all(name.startswith("qpviz-method-fit") for name in names)
    alone = fit_each(_thread_and_square, ["ep", "qp"], MIN_POINTS - 1)
    assert {name for name, _ in alone.values()} == {threading.current_thread().name}
    assert list(alone) == ["ep", "qp"]  # the methods' order kept
    single = fit_each(_thread_and_square, ["laplace"], 10 * MIN_POINTS)
    assert single == {"laplace": (threading.current_thread().name, 49)}


def test_an_error_of_a_fit_is_raised_after_every_fit_ended():
    ended = []

    def fit(method):
        if method == "qp":
            raise ValueError("qp refused")
        time.sleep(0.1)
        ended.append(method)
        return method

    with pytest.raises(ValueError, match="qp refused"):
        fit_each(fit, ["qp", "ep"], MIN_POINTS)
    assert ended == ["ep"]  # EP had ended when the error reached the caller


@pytest.mark.parametrize("n_points", [MIN_POINTS - 1, MIN_POINTS])
def test_each_fits_warnings_stay_with_it_and_other_threads_warnings_pass_on(n_points):
    """EP warns twice (the same warning: "always" keeps repeats) and QP once, at once on two threads
    or one after the other; a thread outside the fits warns meanwhile: that warning is shown as usual."""
    outside = threading.Event()
    shown = []
    original = warnings.showwarning
    def show(message, *rest, **kw):
        shown.append(str(message))

    warnings.showwarning = show
    try:
        def fit(method):
            if method == "qp":
                outside.wait(5)  # the outside thread has warned while the fits run
                warnings.warn("qp: clipped sites", RuntimeWarning)
            else:
                for _ in range(2):
                    warnings.warn("ep: not converged", UserWarning)
                threading.Thread(target=lambda: (warnings.warn("elsewhere", UserWarning), outside.set())).start()
            return method.upper()

        results = fit_each_recording(fit, ["ep", "qp"], n_points)
    finally:
        restored = warnings.showwarning
        warnings.showwarning = original
    assert {m: value for m, (value, _) in results.items()} == {"ep": "EP", "qp": "QP"}
    assert [str(w.message) for w in results["ep"][1]] == ["ep: not converged"] * 2
    assert [(str(w.message), w.category) for w in results["qp"][1]] == [("qp: clipped sites", RuntimeWarning)]
    assert shown == ["elsewhere"]
    assert restored is show  # the routing ended with the fits


def test_grid_fits_at_once_equal_the_fits_one_after_the_other(monkeypatch):
    """GP 2-D's EP and QP on 200 points (two threads) against the same with one thread: the same maps,
    evidence and sites, bit for bit (each fit runs the same operations on its own thread)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(MIN_POINTS + 50, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=len(X)) > 0, 1.0, -1.0)
    kernel = kernels.RBF(variance=2.0, lengthscale=0.8)
    at_once = twod.fit_grid(X, y, kernel, methods=("ep", "qp"), grid_size=20)
    monkeypatch.setattr(method_threads, "MIN_POINTS", 10**9)
    alone = twod.fit_grid(X, y, kernel, methods=("ep", "qp"), grid_size=20)
    for field in ("proba", "mean", "var"):
        for method in ("ep", "qp"):
            np.testing.assert_array_equal(getattr(at_once, field)[method], getattr(alone, field)[method])
    assert at_once.log_evidence == alone.log_evidence
    for method in ("ep", "qp"):
        for got, want in zip(at_once.sites[method], alone.sites[method]):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(at_once.var_difference, alone.var_difference)
    assert at_once.notes == alone.notes
