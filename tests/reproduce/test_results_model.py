"""The Paper results page's model without Panel: the committed rows of each preprocessing (or the
message saying what to run), the link's checks, and a live rerun (a real child process of
``python -m qpviz.reproduce``, shortened with --folds) polled to its end or cancelled."""
from __future__ import annotations

import time

import pytest

from qpviz.reproduce import live
from qpviz.reproduce.report import write_csv
from qpviz.reproduce.results_model import PaperResultsModel, read_rows

#: a tiny live rerun: one round of 2 folds, 3 optimiser iterations
TINY = {"n_folds": 2, "max_opt_iter": 3}
RUN_TIMEOUT = 240  # seconds; the machine is shared (a tiny run takes ~10 s on an idle one)
KEYS = {"preprocessing": "prep", "live_dataset": "dataset", "live_rounds": "rounds"}


def _rows(dataset, te, ntll):
    return [{"dataset": dataset, "method": method, "te_mean": te, "te_std": 0.3, "ntll_mean": ntll, "ntll_std": 2.0,
             "rounds": 1, "qp_beats_ep_frac": 0.5} for method in ("ep", "qp", "vb")]


def _poll_until_ended(model, timeout=RUN_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = model.poll_live()
        if status != "running":
            return status
        time.sleep(0.2)
    raise AssertionError(f"timed out; stderr:\n{model.live.stderr_tail()}")


def test_rows_of_the_chosen_preprocessing_or_the_message_saying_what_to_run(tmp_path):
    write_csv(_rows("wine1", 1.5, 48.0), tmp_path / "table1.csv")
    model = PaperResultsModel(tmp_path)
    assert [(r["dataset"], r["method"], r["ntll_mean"]) for r in model.rows] == [
        ("wine1", "ep", 48.0), ("wine1", "qp", 48.0), ("wine1", "vb", 48.0)]
    assert model.message == "" and model.message_values == {}
    version = model.version
    model.preprocessing = "clean"  # no table1_clean.csv committed
    assert model.version == version + 1 and model.rows is None
    assert "No committed results yet for the clean preprocessing" in model.message
    assert "table1_clean.csv" in model.message and "--preprocessing clean" in model.message
    assert model.figure_path() is None
    (tmp_path / "folds.jsonl").write_text("")
    assert model.figure_path() == tmp_path / "folds.jsonl"  # the paper preprocessing's records stand in


def test_a_broken_or_empty_results_file_is_a_message_with_its_values(tmp_path):
    (tmp_path / "table1.csv").write_text("dataset,method,te_mean\nwine1,ep,abc\n")
    rows, template, values = read_rows(tmp_path, "paper")
    assert rows is None and "could not be read" in template and values["path"] == tmp_path / "table1.csv"
    assert values["error"].split(":")[0] in {"ValueError", "KeyError", "TypeError"}
    write_csv([], tmp_path / "table1.csv")
    assert read_rows(tmp_path, "paper")[1].startswith("{path} holds no rows")


@pytest.mark.parametrize("rounds", [0, -3, "abc", "[x"])
def test_a_refused_link_value_is_named_and_the_last_good_state_kept(tmp_path, rounds):
    model = PaperResultsModel(tmp_path, live_rounds=2)
    notes = model.apply_link({"preprocessing": "clean", "live_dataset": "pima", "live_rounds": rounds}, KEYS)
    assert (model.preprocessing, model.live_dataset, model.live_rounds) == ("clean", "pima", 2)
    assert notes == [f"rounds={rounds!r} (valid: 1, 2, 3) was replaced by 2"]
    assert model.link_message() == f"This link asked for rounds={rounds!r} (valid: 1, 2, 3) was replaced by 2."
    # the same link's second update (the values Panel's parsing dropped) keeps the first's note
    assert model.apply_link({"live_dataset": "iris"}, KEYS)[0].startswith("dataset='iris' (valid: ionosphere, ")
    assert list(model.link_notes) == ["live_rounds", "live_dataset"] and model.live_dataset == "pima"
    assert model.apply_link({"live_rounds": 3}, KEYS) == [] and list(model.link_notes) == ["live_dataset"]
    model.preprocessing = "paper"  # the reader's next choice: the link's refusals are old news
    assert model.link_notes == {} and model.link_message() == ""


def test_a_live_run_polled_to_its_end_gives_its_rows(tmp_path):
    model = PaperResultsModel(tmp_path, live_options=TINY)
    assert model.live_progress() == (0, 1) and model.live_rows() is None
    assert model.start_live()
    assert model.live_state == "running" and model.live_status.startswith("Running wine1 (paper preprocessing), 1 round")
    assert not model.start_live()  # one rerun at a time
    assert _poll_until_ended(model) == "done", model.live_error
    assert model.live_progress() == (2, 2) and model.live_error == ""
    assert model.live_status.startswith("Done: wine1, 1 round(s), 2 folds in ")
    assert [r["method"] for r in model.live_rows()] == ["ep", "qp", "vb"]
    assert {r["dataset"] for r in model.live_rows()} == {"wine1"}
    folder = model.live.out_dir
    model.close()
    assert not folder.exists() and live.active_runs() == 0


def test_cancel_ends_the_run_and_says_how_far_it_got(tmp_path):
    model = PaperResultsModel(tmp_path, live_options={"n_folds": 6, "max_opt_iter": 50}, live_rounds=3)
    assert model.start_live()
    time.sleep(1.0)
    model.cancel_live()
    done, total = model.live_progress()
    assert model.live_state == "cancelled" and total == 18 and done < total
    assert model.live_status == f"Cancelled after {done} of {total} folds." and model.live_rows() is None
    assert live.active_runs() == 0
    model.close()


def test_a_run_that_cannot_start_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "MAX_ACTIVE_RUNS", 0)
    model = PaperResultsModel(tmp_path, live_options=TINY)
    assert not model.start_live()
    assert model.live_state == "failed" and model.live_status == "Failed." and model.live is None
    assert model.live_error.startswith("The rerun could not start: ") and "already running" in model.live_error
