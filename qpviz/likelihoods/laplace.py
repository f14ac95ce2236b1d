"""Laplace likelihood p(y | f) = exp(-|y - f| / scale) / (2 scale): log-concave with a kink at f = y."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood, check_positive

KIND = 7


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    return -math.log(2.0 * p0) - abs(y - f) / p0


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    if f < y:
        return 1.0 / p0, 0.0
    if f > y:
        return -1.0 / p0, 0.0
    return 0.0, 0.0


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    """The mode of log q = -(f - m)^2 / 2v - |y - f| / scale, in closed form."""
    shift = v / p0
    if m + shift < y:
        mode = m + shift
    elif m - shift > y:
        mode = m - shift
    else:
        mode = y
    return mode, m, np.nan


@njit(**NUMBA_OPTIONS)
def kink_kernel(p0, p1, y):
    return y


class Laplace(Likelihood):
    """p(y | f) = exp(-|y - f| / scale) / (2 scale)."""

    name = "laplace"
    kind = KIND
    support = "real"

    def __init__(self, scale: float = 1.0):
        self.scale = check_positive("scale", scale)

    @property
    def params(self):
        return {"scale": self.scale}

    def _param_pair(self):
        return (self.scale, 0.0)

    def kinks(self, y):
        return np.unique(np.ravel(y))

    def _log_prob_numpy(self, y, f):
        return -np.log(2 * self.scale) - np.abs(y - f) / self.scale

    def _dlog_prob_numpy(self, y, f):
        d1 = np.sign(y - f) / self.scale
        return d1, np.zeros_like(d1)
