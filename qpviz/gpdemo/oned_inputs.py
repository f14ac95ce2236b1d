"""The inputs of the "GP 1-D" page: its kernels and methods, the data checks and the grid the
curves are drawn on (each bad input a ValueError saying what to change).
"""
from __future__ import annotations

import numpy as np

from qpviz.explorer.inputs import parse_number
from qpviz.kernels import RBF, Matern32, Matern52
from qpviz.likelihoods.base import Likelihood

__all__ = ["KERNELS", "METHODS", "GRID_POINTS", "MAX_HYPERPARAMETER", "make_kernel", "check_data", "make_grid"]

#: The kernels the page offers, by name.
KERNELS = {"RBF": RBF, "Matern32": Matern32, "Matern52": Matern52}

#: The methods the page can overlay (MCMC is the reference).
METHODS = ("ep", "qp", "vb", "laplace", "mcmc")

#: Grid points of the latent and predictive curves.
GRID_POINTS = 200

#: Largest kernel variance or lengthscale the page accepts (typed values; the sliders stop at 200 and 30).
MAX_HYPERPARAMETER = 1e4


def make_kernel(name: str, variance: float, lengthscale: float):
    """A kernel of the page: ``name`` in :data:`KERNELS`, hyper-parameters in (0, MAX_HYPERPARAMETER]
    (a ValueError says what to change otherwise)."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}; got {name!r}")
    for label, value in (("kernel variance", variance), ("lengthscale", lengthscale)):
        number = parse_number(value, label)
        if not number > 0:
            raise ValueError(f"the {label} must be > 0 (e.g. 1.0); got {value!r}")
        if number > MAX_HYPERPARAMETER:  # e.g. 1e308: K overflows and the fit fails without naming the input
            raise ValueError(f"the {label} must be at most {MAX_HYPERPARAMETER:g} (e.g. 1.0); got {value!r}")
    return KERNELS[name](variance=float(variance), lengthscale=float(lengthscale))


def check_data(X, y, likelihood: Likelihood) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, 1), y (n,)) as float arrays if the likelihood accepts them; else a ValueError
    saying what to change (non-finite inputs, wrong labels or counts, one class only)."""
    X = np.asarray(X, float).reshape(-1, 1)
    y = np.asarray(y, float).ravel()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"need one y per x; got {X.shape[0]} x and {y.shape[0]} y")
    if X.shape[0] < 2:
        raise ValueError("need at least 2 points; add points or pick a preset")
    if not np.all(np.isfinite(X)) or not np.all(np.isfinite(y)):
        raise ValueError("every x and y must be a finite number; remove the NaN / infinite entries")
    y = likelihood.check_y(y)
    if likelihood.support == "binary" and np.unique(y).size < 2:
        raise ValueError("binary classification needs both classes (-1 and +1); add a point of the other class")
    return X, y


def make_grid(X, points: int = GRID_POINTS, pad: float = 0.15) -> np.ndarray:
    """``points`` inputs spanning the data's range widened by ``pad`` of its width on each side, (points, 1)."""
    lo, hi = float(np.min(X)), float(np.max(X))
    width = max(hi - lo, 1.0)
    return np.linspace(lo - pad * width, hi + pad * width, points)[:, None]
