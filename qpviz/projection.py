"""Projections of a tilted distribution onto the Gaussian family (EP and QP) and site updates.

EP (KL projection, QP paper eq. 5): the Gaussian with the tilted mean and variance.
QP (L2 Wasserstein projection, eq. 7): the same mean and the standard deviation

    sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du = int phi(Phi^-1(F(f))) df,

which never exceeds the EP standard deviation (Theorem 2) and equals it for a Gaussian tilted
distribution. The site update (eq. 6) divides the projected Gaussian by the cavity.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpviz.checks import check_cavity
from qpviz.likelihoods.base import Likelihood

__all__ = [
    "Projection",
    "SiteUpdate",
    "NonPositiveSitePrecision",
    "project",
    "site_update",
    "site_natural_params",
    "w2_to_gaussian",
    "kl_to_gaussian",
]

METHODS = ("ep", "qp")


class NonPositiveSitePrecision(ArithmeticError):
    """A site update whose precision is <= 0 (the projection is wider than the cavity)."""


@dataclass(frozen=True)
class Projection:
    """A Gaussian N(mean, var) fitted to the tilted distribution, and what it came from."""

    method: str
    mean: np.ndarray
    var: np.ndarray
    log_z: np.ndarray
    cavity_mean: np.ndarray
    cavity_var: np.ndarray

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)

    def site(self) -> "SiteUpdate":
        """The site N(site_mean, site_var) = this Gaussian / the cavity (eq. 6)."""
        return site_update(self.cavity_mean, self.cavity_var, self.mean, self.var)


@dataclass(frozen=True)
class SiteUpdate:
    """Site parameters from eq. 6, in natural and in moment form.

    ``precision`` = 1/var - 1/cavity_var and ``precision_mean`` = mean/var -
    cavity_mean/cavity_var are always finite. Where ``precision <= 0`` the site is not a
    normalisable Gaussian: ``positive`` is False there, ``var`` is +inf (precision 0) or
    negative, and ``mean`` is NaN only where the precision is exactly 0. Call :meth:`check`
    to turn such sites into an error.
    """

    precision: np.ndarray
    precision_mean: np.ndarray
    positive: np.ndarray

    @property
    def var(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.precision != 0, 1.0 / np.where(self.precision != 0, self.precision, 1.0), np.inf)

    @property
    def mean(self) -> np.ndarray:
        safe = np.where(self.precision != 0, self.precision, 1.0)
        return np.where(self.precision != 0, self.precision_mean / safe, np.nan)

    def check(self) -> "SiteUpdate":
        if not np.all(self.positive):
            bad = int(np.size(self.positive) - np.count_nonzero(self.positive))
            raise NonPositiveSitePrecision(
                f"{bad} site update(s) have precision <= 0 (the projected Gaussian is at least as wide "
                "as the cavity); damp the update or skip these sites"
            )
        return self


def site_update(cavity_mean, cavity_var, mean, var) -> SiteUpdate:
    """Site = N(mean, var) / N(cavity_mean, cavity_var), QP paper eq. 6, cancellation-free.

    site precision 1/s~2 = 1/var - 1/cavity_var; site mean mu~ = s~2 (mean/var - cavity_mean/cavity_var).
    Evaluated as (:func:`site_natural_params`)

        precision = (cavity_var - var) / (cavity_var var),
        precision_mean = ((mean - cavity_mean) cavity_var + cavity_mean (cavity_var - var)) / (cavity_var var):

    the differences are exact in floating point when var is near cavity_var (Sterbenz), where
    1/var - 1/cavity_var would cancel (a probit site far from the boundary: var = cavity_var (1 - 1e-14)).
    """
    cavity_mean, cavity_var = check_cavity(cavity_mean, cavity_var)
    mean = np.asarray(mean, float)
    var = np.asarray(var, float)
    if np.any(~(var > 0)):
        raise ValueError("the projected variance must be > 0")
    precision, precision_mean = site_natural_params(cavity_mean, cavity_var, mean, var)
    return SiteUpdate(precision, precision_mean, precision > 0)


def site_natural_params(cavity_mean, cavity_var, mean, var):
    """(precision, precision_mean) of N(mean, var) / N(cavity_mean, cavity_var) (see :func:`site_update`)."""
    scale = cavity_var * var
    return (cavity_var - var) / scale, ((mean - cavity_mean) * cavity_var + cavity_mean * (cavity_var - var)) / scale


def project(likelihood: Likelihood, y, cavity_mean, cavity_var, method: str = "ep", *, use_table: bool = True) -> Projection:
    """Project the tilted distribution p(y|f) N(f|cavity_mean, cavity_var)/Z onto a Gaussian.

    ``method="ep"``: moment matching (QP paper eq. 5). ``method="qp"``: L2 Wasserstein
    projection (eq. 7): same mean, std sigma_QP. ``y``, ``cavity_mean`` and ``cavity_var``
    broadcast. With ``use_table=True`` QP reads the cached lookup tables where they cover the
    query (exact direct computation elsewhere); ``use_table=False`` always computes directly.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(likelihood, Likelihood):
        raise TypeError("likelihood must be a qpviz likelihood, e.g. qpviz.likelihood('probit')")
    y, m, v = _validated(likelihood, y, cavity_mean, cavity_var)  # once: vectorised, no per-point Python
    log_z, mean, var = (np.asarray(a, float) for a in likelihood._tilted_moments(y, m, v))
    var = ep_variance(likelihood, var, v)
    if method == "qp" and not likelihood.gaussian_tilted:
        # Theorem 2 bounds sigma_QP by sigma_EP; a table's 1e-8 error must not cross the bound where
        # the two are nearly equal (far-out cavities: both ~ cavity_var (1 - 1e-14))
        qp_var = _qp_variance_checked(likelihood, y, m, v, use_table)
        reuse = isinstance(qp_var, np.ndarray) and qp_var.shape == var.shape and qp_var.flags.writeable
        var = np.minimum(qp_var, var, out=qp_var if reuse else None)  # no second 1e6-point array
    return Projection(method, mean, var, log_z, m, v)


def ep_variance(likelihood: Likelihood, var, cavity_var):
    """var_EP from the tilted variance ``var``: capped at ``cavity_var`` for a log-concave likelihood,
    which never widens the cavity (var_EP <= v, Brascamp-Lieb); quadrature rounding may (laplace,
    y = 0, m = 5, s = 0.05: var = v (1 + 4e-15), a site precision < 0)."""
    return np.minimum(var, cavity_var) if likelihood.log_concave else var


def _validated(likelihood, y, cavity_mean, cavity_var):
    """Checked y and cavity, broadcast to one shape (contiguous float64, no copy when already so)."""
    m, v = check_cavity(cavity_mean, cavity_var)
    return np.broadcast_arrays(likelihood.check_y(y), m, v)


def qp_variance(likelihood: Likelihood, y, cavity_mean, cavity_var, *, use_table: bool = True) -> np.ndarray:
    """sigma_QP^2 for every (y, cavity_mean, cavity_var), from the tables where they cover it.

    A Gaussian likelihood has a Gaussian tilted distribution, so QP = EP exactly (Theorem 2's
    equality case): its variance is returned without quadrature.
    """
    if not isinstance(likelihood, Likelihood):
        raise TypeError("likelihood must be a qpviz likelihood, e.g. qpviz.likelihood('probit')")
    return _qp_variance_checked(likelihood, *_validated(likelihood, y, cavity_mean, cavity_var), use_table)


def _qp_variance_checked(likelihood: Likelihood, y, m, v, use_table: bool) -> np.ndarray:
    """:func:`qp_variance` of validated, broadcast inputs."""
    from qpviz import tables, tilted

    if likelihood.gaussian_tilted:
        return likelihood._tilted_moments(y, m, v)[2]
    if use_table:
        return tables.qp_variance_checked(likelihood, y, m, v)
    return tilted.qp_std(likelihood, y, m, v) ** 2


def w2_to_gaussian(likelihood: Likelihood, y, cavity_mean, cavity_var, mean, var, *, summary=None) -> np.ndarray:
    """W2(tilted, N(mean, var)), via Prop. 1 expanded with the tilted moments:

    W2^2 = var_t + (mean_t - mean)^2 + var - 2 sqrt(var) sigma_QP,
    since int (F^-1 - mean_t) Phi^-1 du = sigma_QP and int (Phi^-1)^2 du = 1.
    ``summary``: the :class:`qpviz.tilted.TiltedSummary` of these inputs, if already computed.
    """
    s = _tilted_summary(likelihood, y, cavity_mean, cavity_var, summary)
    w2sq = s.var + (s.mean - mean) ** 2 + var - 2.0 * np.sqrt(var) * s.qp_std
    return np.sqrt(np.maximum(w2sq, 0.0))


def kl_to_gaussian(likelihood: Likelihood, y, cavity_mean, cavity_var, mean, var, *, summary=None) -> np.ndarray:
    """KL(tilted || N(mean, var)) = -H(tilted) + 0.5 log(2 pi var) + (var_t + (mean_t - mean)^2) / (2 var).

    ``summary``: the :class:`qpviz.tilted.TiltedSummary` of these inputs, if already computed.
    """
    s = _tilted_summary(likelihood, y, cavity_mean, cavity_var, summary)
    kl = -s.entropy + 0.5 * np.log(2 * np.pi * var) + (s.var + (s.mean - mean) ** 2) / (2 * var)
    return np.maximum(kl, 0.0)


def _tilted_summary(likelihood, y, cavity_mean, cavity_var, summary):
    """The given summary, or one computed (tilted_summary validates and broadcasts the inputs)."""
    from qpviz import tilted

    return summary if summary is not None else tilted.tilted_summary(likelihood, y, cavity_mean, cavity_var)
