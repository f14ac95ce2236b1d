"""Gaussian likelihood p(y | f) = N(y | f, variance): the case where EP, QP and exact agree."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood, check_positive
from qpviz.special import LOG_SQRT_2PI

KIND = 0


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    r = y - f
    return -0.5 * r * r / p0 - 0.5 * math.log(p0) - LOG_SQRT_2PI


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    return (y - f) / p0, -1.0 / p0


@njit(**NUMBA_OPTIONS)
def closed_moments_kernel(p0, p1, y, m, v):
    """Z = N(y | m, v + variance); mean = m + v (y - m)/(v + variance); var = v variance/(v + variance)."""
    total = v + p0
    r = y - m
    log_z = -0.5 * r * r / total - 0.5 * math.log(total) - LOG_SQRT_2PI
    return True, log_z, m + v * r / total, v * p0 / total


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    return m + v * (y - m) / (v + p0), np.nan, np.nan


class Gaussian(Likelihood):
    """p(y | f) = N(y | f, variance); the tilted distribution is Gaussian, so QP = EP."""

    name = "gaussian"
    kind = KIND
    support = "real"

    def __init__(self, variance: float = 1.0):
        self.variance = check_positive("variance", variance)

    @property
    def params(self):
        return {"variance": self.variance}

    def _param_pair(self):
        return (self.variance, 0.0)

    def _log_prob_numpy(self, y, f):
        return -0.5 * (y - f) ** 2 / self.variance - 0.5 * np.log(2 * np.pi * self.variance)

    def _dlog_prob_numpy(self, y, f):
        d1 = (y - f) / self.variance
        return d1, np.broadcast_to(-1.0 / self.variance, np.shape(d1)).copy()

    def _tilted_moments(self, y, m, v):
        total = v + self.variance
        log_z = -0.5 * (y - m) ** 2 / total - 0.5 * np.log(2 * np.pi * total)
        return log_z, m + v * (y - m) / total, v * self.variance / total
