"""Probit likelihood p(y | f) = Phi(y f), y in {-1, +1} (QP paper App. C.1)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood, _vectorised_closed_moments
from qpviz.special import log_ndtr, mills_ratio, truncation_terms

KIND = 1


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    return log_ndtr(y * f)


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    z = y * f
    r = mills_ratio(z)
    return y * r, -r * (z + r)


@njit(**NUMBA_OPTIONS)
def closed_moments_kernel(p0, p1, y, m, v):
    """QP paper eqs. 35-36: z = y m / sqrt(1 + v), Z = Phi(z), r = phi(z)/Phi(z),
    mean = m + y v r / sqrt(1 + v), var = v - v^2 r (z + r) / (1 + v)."""
    root = math.sqrt(1.0 + v)
    z = y * m / root
    r, _, var_factor = truncation_terms(z)
    return True, log_ndtr(z), m + y * v * r / root, v - v * v * (1.0 - var_factor) / (1.0 + v)


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    ok, log_z, mean, var = closed_moments_kernel(p0, p1, y, m, v)
    return mean, m, np.nan


class Probit(Likelihood):
    """p(y | f) = Phi(y f), the standard normal CDF of the signed latent value."""

    name = "probit"
    kind = KIND
    support = "binary"

    def __init__(self):
        pass

    def _log_prob_numpy(self, y, f):
        return special.log_ndtr(y * f)

    def _dlog_prob_numpy(self, y, f):
        z = y * f
        r = np.exp(-0.5 * z**2 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(z))
        return y * r, -r * (z + r)

    def _tilted_moments(self, y, m, v):
        return _vectorised_closed_moments(self, y, m, v)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper):
        """Owen's T closed form, QP paper eqs. 45-49 (see :mod:`.tilted_cdfs`)."""
        from qpviz.likelihoods import tilted_cdfs

        return tilted_cdfs.probit_tilted_cdf(x, y, cavity_mean, cavity_var, upper=upper)
