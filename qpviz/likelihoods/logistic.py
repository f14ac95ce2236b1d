"""Logistic likelihood p(y | f) = 1 / (1 + exp(-y f)), y in {-1, +1}; tilted moments by quadrature."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood
from qpviz.special import log1pexp

KIND = 2


@njit(**NUMBA_OPTIONS)
def log_prob_kernel(p0, p1, y, f):
    return -log1pexp(-y * f)


@njit(**NUMBA_OPTIONS)
def dlog_prob_kernel(p0, p1, y, f):
    # sigma(-y f) = exp(-log1pexp(y f)), stable in both tails
    s_neg = math.exp(-log1pexp(y * f))
    s_pos = math.exp(-log1pexp(-y * f))
    return y * s_neg, -s_pos * s_neg


@njit(**NUMBA_OPTIONS)
def starts_kernel(p0, p1, y, m, v):
    return m, np.nan, np.nan


class Logistic(Likelihood):
    """p(y | f) = sigmoid(y f)."""

    name = "logistic"
    kind = KIND
    support = "binary"

    def __init__(self):
        pass

    def _log_prob_numpy(self, y, f):
        return -np.logaddexp(0.0, -y * f)

    def _dlog_prob_numpy(self, y, f):
        s_neg = np.exp(-np.logaddexp(0.0, y * f))
        s_pos = np.exp(-np.logaddexp(0.0, -y * f))
        return y * s_neg, -s_pos * s_neg
