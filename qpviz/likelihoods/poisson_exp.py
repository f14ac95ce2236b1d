"""Poisson likelihood with exponential link, p(y | f) = Poisson(y; exp f); tilted moments by quadrature."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood

KIND = 5


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    return y * f - math.exp(f) - math.lgamma(y + 1.0)


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    rate = math.exp(f)
    return y - rate, -rate


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    # the likelihood alone peaks at f = log y; Newton (log q is concave) refines from both
    return m, math.log(y) if y > 0.0 else np.nan, np.nan


class PoissonExp(Likelihood):
    """p(y | f) = exp(y f - e^f) / y!, counts y = 0, 1, 2, ..."""

    name = "poisson_exp"
    kind = KIND
    support = "count"

    def __init__(self):
        pass

    def _log_prob_numpy(self, y, f):
        with np.errstate(over="ignore"):
            return y * f - np.exp(f) - special.gammaln(y + 1)

    def _dlog_prob_numpy(self, y, f):
        rate = np.exp(f)
        return y - rate, -rate
