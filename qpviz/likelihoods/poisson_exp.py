"""Poisson likelihood with exponential link, p(y | f) = Poisson(y; exp f); tilted moments by quadrature."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from qpviz._jit import JitKernels
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.registry import register_likelihood


def _log_prob(params, y, f):
    return y * f - math.exp(f) - math.lgamma(y + 1.0)


def _dlog_prob(params, y, f, out):
    rate = math.exp(f)
    out[0] = y - rate
    out[1] = -rate
    return 0.0


def _starts(params, y, m, v, out):
    # the likelihood alone peaks at f = log y; Newton (log q is concave) refines from both
    out[0] = m
    out[1] = math.log(y) if y > 0.0 else math.nan
    out[2] = math.nan
    return 0.0


@register_likelihood
class PoissonExp(Likelihood):
    """p(y | f) = exp(y f - e^f) / y!, counts y = 0, 1, 2, ..."""

    name = "poisson_exp"
    menu_rank = 70
    support = "count"
    log_concave = True
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts)
    # log p = k f - e^f: peak at log k with width 1/sqrt(k); for k = 0 the wall e^f near 0
    qp_table = {"fold": "count", "t_lo": -10.0, "t_hi": 10.0,
                "center_width": lambda params, k: (math.log(k + 1.0), 1.0 / math.sqrt(k + 1.0))}

    def log_prob(self, y, f):
        with np.errstate(over="ignore"):
            return np.multiply(y, f) - np.exp(f) - special.gammaln(np.add(y, 1))

    def dlog_prob(self, y, f):
        rate = np.exp(f)
        return np.subtract(y, rate), -rate

    def observation_moments(self, f):
        rate = np.exp(np.asarray(f, float))
        return rate, rate

    def predictive_band(self, mean, var):
        """E[y] = exp(mean + var / 2); band: the rate exp f at f = mean -+ 2 sd."""
        mean, var = np.asarray(mean, float), np.asarray(var, float)
        sd = np.sqrt(var)
        return self.point_prediction(mean, var), np.exp(mean - 2 * sd), np.exp(mean + 2 * sd)

    def point_prediction(self, mean, var):
        """The predictive mean count E[exp f] = exp(mean + var / 2)."""
        return np.exp(np.asarray(mean) + 0.5 * np.asarray(var))
