"""Laplace likelihood p(y | f) = exp(-|y - f| / scale) / (2 scale): log-concave with a kink at f = y."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from qpviz._jit import JitKernels
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.parameter import Parameter
from qpviz.likelihoods.registry import register_likelihood


def _log_prob(params, y, f):
    scale = params[0]
    return -math.log(2.0 * scale) - abs(y - f) / scale


def _dlog_prob(params, y, f, out):
    scale = params[0]
    out[1] = 0.0
    if f < y:
        out[0] = 1.0 / scale
    elif f > y:
        out[0] = -1.0 / scale
    else:
        out[0] = 0.0
    return 0.0


def _starts(params, y, m, v, out):
    """The mode of log q = -(f - m)^2 / 2v - |y - f| / scale, in closed form."""
    shift = v / params[0]
    if m + shift < y:
        out[0] = m + shift
    elif m - shift > y:
        out[0] = m - shift
    else:
        out[0] = y
    out[1] = m
    out[2] = math.nan
    return 0.0


def _kink(params, y):
    return y


@register_likelihood
class Laplace(Likelihood):
    """p(y | f) = exp(-|y - f| / scale) / (2 scale)."""

    name = "laplace"
    menu_rank = 90
    support = "real"
    log_concave = True
    parameters = (Parameter("scale", 1.0, lower=0.0, doc="scale of the noise", choices=(0.5, 1.0, 2.0),
                            fit_scale=True),)
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts, kink=_kink)
    qp_table = {"fold": "real", "t_lo": 0.0, "t_hi": 20.0}  # centre 0, no width of its own (a kink)

    def kinks(self, y):
        return np.unique(np.ravel(y))

    def noise_variance(self):
        return 2.0 * self.scale**2

    def log_prob(self, y, f):
        return -np.log(2 * self.scale) - np.abs(np.subtract(y, f)) / self.scale

    def dlog_prob(self, y, f):
        d1 = np.sign(np.subtract(y, f)) / self.scale
        return d1, np.zeros_like(d1)

    def variational_expectations(self, y, mean, var):
        """Closed form: with d = m - y, r = sqrt(v), u = d / r, E|f - y| = 2 r phi(u) + d (2 Phi(u) - 1):
        E = -log(2 s) - E|f - y| / s, dE/dm = -(2 Phi(u) - 1) / s, 2 dE/dv = -2 phi(u) / (r s)."""
        scale = self.scale
        r = np.sqrt(var)
        d = np.asarray(mean, float) - np.asarray(y, float)
        u = d / r
        pdf = np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)
        abs_mean = 2 * r * pdf + d * (2 * special.ndtr(u) - 1)
        return -np.log(2 * scale) - abs_mean / scale, -(2 * special.ndtr(u) - 1) / scale, -2 * pdf / (r * scale)
