"""Gaussian likelihood p(y | f) = N(y | f, variance): the case where EP, QP and exact agree."""
from __future__ import annotations

import math

import numpy as np

from qpviz._jit import JitKernels
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.parameter import Parameter
from qpviz.likelihoods.registry import register_likelihood
from qpviz.special import LOG_SQRT_2PI


def _log_prob(params, y, f):
    variance = params[0]
    r = y - f
    return -0.5 * r * r / variance - 0.5 * math.log(variance) - LOG_SQRT_2PI


def _dlog_prob(params, y, f, out):
    variance = params[0]
    out[0] = (y - f) / variance
    out[1] = -1.0 / variance
    return 0.0


def _moments(params, y, m, v, out):
    """Z = N(y | m, v + variance); mean = m + v (y - m)/(v + variance); var = v variance/(v + variance)."""
    variance = params[0]
    total = v + variance
    r = y - m
    out[0] = -0.5 * r * r / total - 0.5 * math.log(total) - LOG_SQRT_2PI
    out[1] = m + v * r / total
    out[2] = v * variance / total
    return 1.0


def _starts(params, y, m, v, out):
    variance = params[0]
    out[0] = m + v * (y - m) / (v + variance)
    out[1] = math.nan
    out[2] = math.nan
    return 0.0


@register_likelihood
class Gaussian(Likelihood):
    """p(y | f) = N(y | f, variance); the tilted distribution is Gaussian, so QP = EP."""

    name = "gaussian"
    menu_rank = 10
    support = "real"
    log_concave = True
    gaussian_tilted = True  # its own W2 projection: sigma_QP = sigma_EP exactly
    is_conjugate = True
    parameters = (Parameter("variance", 1.0, lower=0.0, doc="observation noise variance", choices=(0.1, 0.5, 1.0),
                            fit_scale=True),)
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts, moments=_moments)

    def log_prob(self, y, f):
        return -0.5 * np.subtract(y, f) ** 2 / self.variance - 0.5 * np.log(2 * np.pi * self.variance)

    def dlog_prob(self, y, f):
        d1 = np.subtract(y, f) / self.variance
        return d1, np.full(np.shape(d1), -1.0 / self.variance)

    def noise_variance(self):
        return self.variance

    def _tilted_moments(self, y, m, v):
        total = v + self.variance
        log_z = -0.5 * (y - m) ** 2 / total - 0.5 * np.log(2 * np.pi * total)
        return log_z, m + v * (y - m) / total, v * self.variance / total
