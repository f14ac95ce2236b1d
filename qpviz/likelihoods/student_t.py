"""Student-t likelihood p(y | f) = t_nu((y - f) / scale) / scale: robust regression, not log-concave."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood, check_positive

KIND = 6


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    r = (y - f) / p1
    return (math.lgamma(0.5 * (p0 + 1.0)) - math.lgamma(0.5 * p0) - 0.5 * math.log(p0 * math.pi)
            - math.log(p1) - 0.5 * (p0 + 1.0) * math.log1p(r * r / p0))


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    r = (y - f) / p1
    denom = p0 + r * r
    return (p0 + 1.0) * r / (p1 * denom), (p0 + 1.0) * (r * r - p0) / (p1 * p1 * denom * denom)


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    # the tilted can be bimodal: one mode near the cavity, one near the observation
    return m, y, 0.5 * (m + y)


class StudentT(Likelihood):
    """p(y | f) = Gamma((nu+1)/2) / (Gamma(nu/2) sqrt(nu pi) scale) (1 + ((y-f)/scale)^2/nu)^(-(nu+1)/2)."""

    name = "student_t"
    kind = KIND
    support = "real"
    log_concave = False

    def __init__(self, nu: float = 4.0, scale: float = 1.0):
        self.nu = check_positive("nu", nu)
        self.scale = check_positive("scale", scale)

    @property
    def params(self):
        return {"nu": self.nu, "scale": self.scale}

    def _param_pair(self):
        return (self.nu, self.scale)

    def _log_prob_numpy(self, y, f):
        nu, scale = self.nu, self.scale
        r = (y - f) / scale
        return (special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
                - np.log(scale) - (nu + 1) / 2 * np.log1p(r**2 / nu))

    def _dlog_prob_numpy(self, y, f):
        nu, scale = self.nu, self.scale
        r = (y - f) / scale
        denom = nu + r**2
        return (nu + 1) * r / (scale * denom), (nu + 1) * (r**2 - nu) / (scale**2 * denom**2)
