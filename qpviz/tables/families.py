"""Which likelihoods have QP tables, over which domain, in which coordinates.

A *family* is one likelihood with fixed parameters (``probit``, ``step(eps=0.1)``, ...); it
owns one table, or one per count for the Poisson likelihoods. Each table approximates

    h(A, B) = log(sigma_QP / s),   s = sqrt(cavity_var),   B = log s,

(sigma_QP of QP paper eq. 7), so that an absolute error of h is the relative error of
sigma_QP and no EP moment is needed at lookup time. h is bounded and smooth on the domain.

Folding removes the observation (QP paper App. J tabulates y = +-1 separately; we need not):

* binary (probit, logistic, step): p(-1|f) = p(+1|-f), so (y, m) -> t = y m;
* real (student_t, laplace): the tilted of (y, m) is the tilted of (0, m - y) shifted by y,
  and both likelihoods are even, so t = |m - y|;
* poisson_square: p(y|f) is even in f: t = |m|, one table per count;
* poisson_exp: t = m, one table per count;
* step (scale-free): p(y|f) = eps + (1 - 2 eps) H(y f) is unchanged by f -> c f (c > 0), so in
  standard units x = (f - m) / s the tilted distribution depends on z = y m / s alone, and so
  does h. Its table is 1-D: h(z) on the mapped coordinate G = g(z) (below, with u = z) for
  |z| <= Z_MAX = 200 (= 10 / 0.05: the binary domain |m| <= 10, s >= 0.05, and every other
  (m, s) with |m| / s <= 200, at any s).

Mapped mean coordinate A in [0, 1]: with d = sqrt(s^2 + w^2) (w = the likelihood's own
width; w = 0 for the kinked Laplace; the scale-free step uses G = g(z) alone, below),

    u = (t - t_c) / d,  g(u) = u / (1 + u^2)^(1/4),  A = (g(u) - g(u_lo)) / (g(u_hi) - g(u_lo)),

where u_lo, u_hi are u at the ends of the t domain. Near the likelihood's feature (t ~ t_c)
A is linear in t; far from it A grows like sqrt(|t - t_c| / d), so the features of scale
s at small s are not squeezed into a corner, and the domain is exactly the unit square.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpviz import config

__all__ = [
    "TableFamily",
    "FOLD_BINARY",
    "FOLD_REAL",
    "FOLD_COUNT_EVEN",
    "FOLD_COUNT",
    "FOLD_SCALE_FREE",
    "TABLE_STD_RANGE",
    "all_families",
    "family_for",
    "mean_map",
    "mean_unmap",
    "g_map",
    "g_inverse",
]

FOLD_BINARY = 1
FOLD_REAL = 2
FOLD_COUNT_EVEN = 3
FOLD_COUNT = 4
FOLD_SCALE_FREE = 5

#: Cavity standard deviations covered by every table (the paper's tables: 0.1 to 10). The single
#: source of this range for the library, the builder and the tests; the explorer page's slider
#: range (``qpviz.explorer.CAVITY_STD_SLIDER``) is a different, narrower range that must lie inside it
#: (checked in tests/tables/test_tables.py).
TABLE_STD_RANGE = (0.05, 20.0)
#: Cavity means covered: |m| <= 10 for the binary and Poisson likelihoods (the paper's range;
#: a Poisson log-rate of +-10 is a rate from 4.5e-5 to 2.2e4), |m - y| <= 20 for the real ones.
BINARY_MEAN = 10.0
COUNT_MEAN = 10.0
REAL_OFFSET = 20.0
#: |z| = |m| / s covered by the 1-D tables of scale-free likelihoods.
Z_MAX = BINARY_MEAN / TABLE_STD_RANGE[0]


@dataclass(frozen=True)
class TableFamily:
    """Everything that determines a family's tables (recorded in, and checked against, its file)."""

    likelihood: str
    params: tuple  # sorted (name, value) pairs
    fold: int
    t_lo: float
    t_hi: float
    n_tables: int  # 1, or MAX_TABLE_COUNT + 1 for the Poisson likelihoods (counts 0..MAX)
    degree: int = 14
    grid: tuple = (2, 2)
    tol: float = 1e-8
    #: (t_c, w) per table: the class's qp_table "center" / "width", or its "center_width(params, k)"
    centers_widths: tuple = ()

    @property
    def file_name(self) -> str:
        tail = "".join(f"_{k}{v:g}" for k, v in self.params)
        return f"{self.likelihood}{tail}.npz"

    @property
    def mean_domain(self) -> tuple[float, float]:
        """The range of the folded mean t = y m (binary), |m - y| (real) or m (counts) that the
        tables cover for every cavity std in TABLE_STD_RANGE (a scale-free table covers more:
        every |m| / s <= Z_MAX)."""
        if self.fold == FOLD_SCALE_FREE:
            return -BINARY_MEAN, BINARY_MEAN
        return self.t_lo, self.t_hi

    def make_likelihood(self):
        from qpviz.likelihoods import likelihood

        return likelihood(self.likelihood, **dict(self.params))

    def center_width(self, k: int) -> tuple[float, float]:
        """(t_c, w) of table k (k = the count for Poisson families): where the likelihood's feature
        sits on the folded mean axis and its own width (from the class's ``qp_table``)."""
        return self.centers_widths[k]

    def spec(self) -> dict:
        """JSON-able generating parameters; a file whose spec differs is stale."""
        if self.fold == FOLD_SCALE_FREE:
            return {
                "likelihood": self.likelihood,
                "params": {k: v for k, v in self.params},
                "fold": self.fold,
                "z_domain": [self.t_lo, self.t_hi],
                "n_tables": self.n_tables,
                "degree": self.degree,
                "start_cells": self.grid[0],
                "tol": self.tol,
                "quantity": "log(sigma_QP / cavity_std) on G = g(y m / cavity_std), uniform cells",
            }
        return {
            "likelihood": self.likelihood,
            "params": {k: v for k, v in self.params},
            "fold": self.fold,
            "mean_domain": [self.t_lo, self.t_hi],
            "std_domain": list(TABLE_STD_RANGE),
            "n_tables": self.n_tables,
            "centers_widths": [list(self.center_width(k)) for k in range(self.n_tables)],
            "degree": self.degree,
            "grid": list(self.grid),
            "tol": self.tol,
            "quantity": "log(sigma_QP / cavity_std) on (A, log cavity_std)",
        }


#: The fold codes of ``Likelihood.qp_table["fold"]`` (module docstring).
FOLDS = {"binary": FOLD_BINARY, "real": FOLD_REAL, "count_even": FOLD_COUNT_EVEN, "count": FOLD_COUNT,
         "scale_free": FOLD_SCALE_FREE}


def _family(cls, params: dict, **overrides) -> TableFamily:
    """The family of likelihood class ``cls`` (its ``qp_table`` spec) at parameters ``params``."""
    spec = dict(cls.qp_table)
    fold = FOLDS[spec.pop("fold")]
    rule = spec.pop("center_width", None)
    center, width = spec.pop("center", 0.0), spec.pop("width", 0.0)
    pairs = tuple(sorted((k, float(v)) for k, v in params.items()))
    if fold == FOLD_SCALE_FREE:
        base = dict(fold=fold, t_lo=-Z_MAX, t_hi=Z_MAX, n_tables=1, degree=7, grid=(64, 1), tol=1e-9)
    elif fold in (FOLD_COUNT_EVEN, FOLD_COUNT):
        base = dict(fold=fold, n_tables=config.MAX_TABLE_COUNT + 1)
    else:
        base = dict(fold=fold, n_tables=1)
    base.update(spec)
    base.update(overrides)
    located = (rule(dict(pairs), k) if rule else (center, width) for k in range(base["n_tables"]))
    base["centers_widths"] = tuple((float(t_c), float(w)) for t_c, w in located)
    return TableFamily(cls.name, pairs, **base)


def table_parameter_sets(cls) -> list[dict]:
    """The parameter sets of ``cls`` that get tables: its ``presets``, else every combination of
    its parameters' ``choices`` (the values the dashboard offers), else its defaults."""
    if cls.presets:
        return [dict(p) for p in cls.presets]
    sets = [{}]
    for p in cls.parameters:
        sets = [dict(s, **{p.name: value}) for s in sets for value in (p.choices or (p.default,))]
    return sets


def all_families() -> list[TableFamily]:
    """The families shipped: every registered likelihood with a ``qp_table`` spec, at the parameter
    sets the dashboard offers (:func:`table_parameter_sets`)."""
    from qpviz.likelihoods import REGISTRY

    return [_family(cls, params) for cls in REGISTRY.values() if cls.qp_table is not None
            for params in table_parameter_sets(cls)]


_BY_KEY: dict[tuple, dict[tuple, TableFamily]] = {}


def family_for(lik) -> TableFamily | None:
    """The shipped family of a likelihood object, or None (no table spec, other parameters, tempered)."""
    if type(lik).qp_table is None or lik.alpha != 1.0:
        return None
    from qpviz.likelihoods import REGISTRY

    config_key = (tuple(REGISTRY.items()), config.MAX_TABLE_COUNT)
    index = _BY_KEY.get(config_key)
    if index is None:  # built once per registry state (lookups are per call)
        index = {(fam.likelihood, fam.params): fam for fam in all_families()}
        _BY_KEY.clear()
        _BY_KEY[config_key] = index
    return index.get((lik.name, tuple(sorted((k, float(v)) for k, v in lik.params.items()))))


def g_map(u):
    """g(u) = u / (1 + u^2)^(1/4) (module docstring), vectorised."""
    return u / np.sqrt(np.sqrt(1.0 + u * u))


def g_inverse(z):
    """u with g(u) = z: u^4 = z^4 (1 + u^2), a quadratic in u^2."""
    z4 = z ** 4
    return np.sign(z) * np.sqrt(0.5 * (z4 + np.sqrt(z4 * z4 + 4.0 * z4)))


def mean_map(t, s, t_lo, t_hi, t_c, w):
    """A in [0, 1] from the folded mean t and the cavity std s (NumPy; see module docstring)."""
    d = np.sqrt(s * s + w * w)
    g_lo, g_hi = g_map((t_lo - t_c) / d), g_map((t_hi - t_c) / d)
    return (g_map((t - t_c) / d) - g_lo) / (g_hi - g_lo)


def mean_unmap(a, s, t_lo, t_hi, t_c, w):
    """The folded mean t at mapped coordinate A (inverse of :func:`mean_map`), clipped to the domain."""
    d = np.sqrt(s * s + w * w)
    g_lo, g_hi = g_map((t_lo - t_c) / d), g_map((t_hi - t_c) / d)
    return np.clip(t_c + d * g_inverse(g_lo + a * (g_hi - g_lo)), t_lo, t_hi)
