"""Step likelihood with label noise, p(y | f) = eps + (1 - 2 eps) H(y f) (paper 002, eq. 3).

eps is the probability that a label is flipped; eps = 0 is the noise-free Heaviside step, whose
tilted distribution is a truncated Gaussian. Closed forms: paper 002, eqs. 45-48.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood, _vectorised_closed_moments, as_float_array
from qpviz.special import log_ndtr, logaddexp, norm_logpdf, truncation_terms

KIND = 3


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    z = y * f
    if z > 0.0:
        return math.log1p(-p0)
    if z < 0.0:
        return math.log(p0) if p0 > 0.0 else -np.inf
    return math.log(0.5)  # H(0) = 1/2, a set of measure zero


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    return 0.0, 0.0


@njit(**NUMBA_OPTIONS)
def closed_moments_kernel(p0, p1, y, m, v):
    """Paper 002 eqs. 45-48 with s = sqrt(v): z = y m / s, Z = eps + (1 - 2 eps) Phi(z),
    gamma = (1 - 2 eps) phi(z) / (Z s), mean = m + v gamma y, var = v - v gamma (y m + v gamma).
    (Eq. 48 as printed lacks the minus sign of d2 log Z / dm2 = -gamma (y m + v gamma) / v.)"""
    s = math.sqrt(v)
    z = y * m / s
    if p0 == 0.0:  # truncated Gaussian: the stable continued-fraction terms
        r, r_plus_z, var_factor = truncation_terms(z)
        # mean = m + y s r = y s (r + z) since y s z = m (y^2 = 1): no cancellation when m is far out
        return True, log_ndtr(z), y * s * r_plus_z, v * var_factor
    log_noise = math.log(p0)
    log_z = logaddexp(log_noise, math.log1p(-2.0 * p0) + log_ndtr(z))
    gamma = (1.0 - 2.0 * p0) * math.exp(norm_logpdf(z) - log_z) / s
    return True, log_z, m + v * gamma * y, v - v * gamma * (y * m + v * gamma)


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    ok, log_z, mean, var = closed_moments_kernel(p0, p1, y, m, v)
    return mean, m, 1e-300 * y


@njit(**NUMBA_OPTIONS)
def kink_kernel(p0, p1, y):
    return 0.0


class Step(Likelihood):
    """p(y | f) = eps + (1 - 2 eps) H(y f), with 0 <= eps < 1/2."""

    name = "step"
    kind = KIND
    support = "binary"

    def __init__(self, eps: float = 0.0):
        eps = float(as_float_array(eps, "eps"))
        if not (0.0 <= eps < 0.5):
            raise ValueError(f"eps (label-noise probability) must be in [0, 0.5); got {eps!r}")
        self.eps = eps
        # eps = 0 is a truncation (log-concave); eps > 0 mixes two levels, and its tilted
        # distribution can be wider than the cavity (negative EP site precision)
        self.log_concave = eps == 0.0

    @property
    def params(self):
        return {"eps": self.eps}

    def _param_pair(self):
        return (self.eps, 0.0)

    def kinks(self, y):
        return np.array([0.0])

    def _log_prob_numpy(self, y, f):
        z = y * f
        with np.errstate(divide="ignore"):
            return np.where(z > 0, np.log1p(-self.eps), np.where(z < 0, np.log(self.eps), np.log(0.5)))

    def _dlog_prob_numpy(self, y, f):
        shape = np.broadcast_shapes(np.shape(y), np.shape(f))
        return np.zeros(shape), np.zeros(shape)

    def _tilted_moments(self, y, m, v):
        if self.eps == 0.0:  # the numba kernel holds the stable far-tail form
            return _vectorised_closed_moments(self, y, m, v)
        s = np.sqrt(v)
        z = y * m / s
        with np.errstate(divide="ignore"):
            log_z = np.logaddexp(np.log(self.eps), np.log1p(-2 * self.eps) + special.log_ndtr(z))
        gamma = (1 - 2 * self.eps) * np.exp(-0.5 * z**2 - 0.5 * np.log(2 * np.pi) - log_z) / s
        return log_z, m + v * gamma * y, v - v * gamma * (y * m + v * gamma)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper):
        """Two-piece truncated-normal closed form (see :mod:`.tilted_cdfs`)."""
        from qpviz.likelihoods import tilted_cdfs

        return tilted_cdfs.step_tilted_cdf(x, y, cavity_mean, cavity_var, self.eps, upper=upper)
