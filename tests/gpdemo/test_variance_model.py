"""qpviz.gpdemo.variance_model: the Variance effects page's state, checks and fits' job, without Panel."""
from __future__ import annotations

from concurrent import futures

import pytest

from qpviz import variance_effects as ve
from qpviz.gpdemo import jobs
from qpviz.gpdemo.variance_model import SEED, VarianceModel
from qpviz.reproduce import datasets


def _fitted(**inputs) -> VarianceModel:
    """A model whose first fit (no optimisation unless asked) ran to completion."""
    model = VarianceModel(**{"optimise": False, **inputs})
    model.start()
    model.wait(120)
    assert model.result is not None and not model.busy, model.message
    return model


def test_a_fit_runs_in_the_job_pool_and_a_second_request_is_served_from_the_cache():
    settings = ve.Settings(seed=101, n_folds=5, optimise=False)
    assert ve.cached("synthetic 1-D", settings) is None
    model = VarianceModel(dataset="synthetic 1-D", seed=101, folds=5, optimise=False)
    assert model.result is None and not model.busy  # nothing runs before the page holds its views
    model.start()
    assert model.busy
    job = jobs.RUNNING[("variance effects", ve.cache_key("synthetic 1-D", settings))]
    assert job["future"] is not None and job["kind"] == "Variance effects fit"
    template, values = model.status
    assert template.startswith("Fitting **{name}**") and values["name"] == "synthetic 1-D" and values["seed"] == 101
    model.wait(120)
    result = model.result
    assert not model.busy and model.version == 1 and model.message == ""
    assert result.name == "synthetic 1-D" and result.settings == settings and result.n_test > 0
    assert ve.cached("synthetic 1-D", settings) is result
    assert model.status[0].endswith("(cached now).") and model.status[1]["folds"] == 5

    other = VarianceModel(dataset="synthetic 1-D", seed=101, folds=5, optimise=False)
    other.start()
    assert not other.busy and other.result is result and other.version == 1  # at once, no job


def test_sessions_asking_for_the_same_fit_share_one_job():
    first = VarianceModel(dataset="synthetic 2-D", seed=102, optimise=False)
    second = VarianceModel(dataset="synthetic 2-D", seed=102, optimise=False)
    first.start()
    second.start()
    assert first.busy and second.busy
    assert first._job is second._job and first._job["users"] == 2
    first.cancel()  # one session leaves: the other's fit goes on
    assert not first._job and not second._job["cancel"].is_set()
    second.wait(120)
    assert second.result is not None and second.result.settings.seed == 102


@pytest.mark.parametrize("typed", ["10001", "-3", "", "abc", "3.7", "nan"])
def test_a_refused_seed_is_named_and_the_last_good_state_kept(typed):
    model = _fitted(dataset="synthetic 1-D", seed=7)
    good, version = model.result, model.version
    assert not model.type_seed(typed)
    assert model.message == f"split seed: {typed!r} was not applied; type a whole number from 0 to 10000; kept 7"
    assert model.seed == 7 and model.result is good and model.version == version and not model.busy
    assert model.type_seed(SEED.show(7))  # the box showing the seed in use again is no news
    assert model.message.startswith("split seed:")
    assert model.type_seed("8")  # a valid seed is taken and the message goes
    assert model.seed == 8 and model.message == ""
    model.wait(120)
    assert model.result.settings.seed == 8


def test_a_value_equal_to_the_models_changes_nothing():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    version, status = model.version, model.status
    model.param.update(dataset="synthetic 1-D", seed=7, folds=10, optimise=False)
    assert model.version == version and model.status == status and not model.busy


def test_cancel_stops_the_fit_and_shows_the_last_good_one_again():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    good = model.result
    model.param.update(dataset="synthetic 2-D", seed=103, optimise=True)  # optimisation: seconds
    assert model.busy
    job = model._job
    model.cancel(say=True)
    assert not model.busy and model.result is good
    assert job["cancel"].is_set()
    assert (model.dataset, model.seed, model.optimise) == ("synthetic 1-D", 7, False)  # the views' fit
    template, values = model.status
    assert "cancelled" in template.format(**values) and values == {"name": "synthetic 2-D", "shown": "synthetic 1-D"}
    futures.wait([job["future"]], timeout=120)  # stopped at its next optimiser evaluation (or before it ran)
    assert jobs.outcome(job, cancelled=ve.FitCancelled) == ("cancelled", None)
    assert ve.cached("synthetic 2-D", ve.Settings(seed=103, optimise=True)) is None


def test_a_failed_fit_is_named_and_the_last_good_state_kept(monkeypatch):
    model = _fitted(dataset="synthetic 1-D", seed=7)
    good = model.result

    def broken(*args, **kwargs):
        raise ValueError("the training part holds one class only")

    monkeypatch.setattr(ve, "variances_for", broken)
    model.seed = 104
    model.wait(30)
    assert model.result is good and model.seed == 7
    assert model.message == ("The fit of synthetic 1-D failed: the training part holds one class only. "
                             "Try another seed or dataset, or turn optimisation off.")
    assert model.status == ("The views show the last good fit.", {})


def test_a_skipped_dataset_keeps_the_last_good_state(monkeypatch, tmp_path):
    model = _fitted(dataset="synthetic 1-D", seed=7)
    good = model.result
    monkeypatch.setattr(datasets, "default_data_dir", lambda: tmp_path)  # a broken install: no packaged files
    model.dataset = "sonar"
    model.wait(30)
    assert model.result is good and model.dataset == "synthetic 1-D"
    assert "sonar skipped" in model.message


def test_data_another_page_passes_are_offered_and_fitted():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    X, y = ve.synthetic_data("synthetic 2-D", m=50, seed=105)
    model.use_data("GP 2-D: moons", X, y)
    assert model.param.dataset.objects[0] == "GP 2-D: moons" and model.dataset == "GP 2-D: moons"
    model.wait(120)
    assert model.result.name == "GP 2-D: moons" and model.result.n_train + model.result.n_test == 50
    assert model.csv_text().splitlines()[1] == "point,var_ep,var_qp,ratio"


def test_a_link_sets_the_inputs_and_names_each_refused_value():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    assert not model.read_link({"ve_seed": "abc", "ve_folds": "5", "ve_optimise": "maybe"})
    assert (model.seed, model.folds, model.optimise) == (7, 5, False)
    assert model.link_notes == {
        "ve_seed": "ve_seed='abc' (split seed: a whole number from 0 to 10000); shown instead: 7",
        "ve_optimise": "ve_optimise='maybe' (optimise hyper-parameters: on or off (true/false, 1/0)); "
                       "shown instead: off"}
    assert model.read_link(model.link_view())  # the link rewritten to the view shown: no news
    assert set(model.link_notes) == {"ve_seed", "ve_optimise"}
    assert not model.read_link({"ve_seed": "-1"})  # a later refusal of the same key replaces the first
    assert model.link_notes["ve_seed"].startswith("ve_seed='-1' ") and "ve_optimise" in model.link_notes
    assert model.read_link({"ve_seed": "9"})  # a good link for another view: its refusals are old news
    assert model.seed == 9 and model.link_notes == {}
    assert not model.read_link({"ve_folds": "7"})
    model.optimise = True  # the reader's own change: the link's refusals are old news too
    assert model.link_notes == {}
    model.cancel()


def test_cancel_without_a_fit_is_quiet():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    status = model.status
    model.cancel(say=True)
    assert model.status == status and model.message == "" and not model.busy


def test_the_fits_progress_reaches_the_status():
    model = _fitted(dataset="synthetic 1-D", seed=7)
    model.param.update(dataset="synthetic 2-D", seed=106, optimise=True)
    jobs.wait_until(lambda: "optimiser evaluation" in model.status[1].get("progress", ""), model.poll, timeout=60)
    template, values = model.status
    assert "optimiser evaluation" in values["progress"] and values["elapsed"] >= 0
    model.cancel()
