"""Logistic likelihood p(y | f) = 1 / (1 + exp(-y f)), y in {-1, +1}; tilted moments by quadrature."""
from __future__ import annotations

import math

import numpy as np

from qpviz._jit import JitKernels
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.registry import register_likelihood
from qpviz.special import log1pexp


def _log_prob(params, y, f):
    return -log1pexp(-y * f)


def _dlog_prob(params, y, f, out):
    # sigma(-y f) = exp(-log1pexp(y f)), stable in both tails
    s_neg = math.exp(-log1pexp(y * f))
    s_pos = math.exp(-log1pexp(-y * f))
    out[0] = y * s_neg
    out[1] = -s_pos * s_neg
    return 0.0


@register_likelihood
class Logistic(Likelihood):
    """p(y | f) = sigmoid(y f)."""

    name = "logistic"
    menu_rank = 30
    support = "binary"
    log_concave = True
    jit = JitKernels(_log_prob, _dlog_prob)
    # sigmoid(f) ~ Phi(f sqrt(pi / 8)): width ~ 1.6
    qp_table = {"fold": "binary", "t_lo": -10.0, "t_hi": 10.0, "center": 0.0, "width": 1.6}

    def log_prob(self, y, f):
        return -np.logaddexp(0.0, -np.multiply(y, f))

    def dlog_prob(self, y, f):
        yf = np.multiply(y, f)
        s_neg = np.exp(-np.logaddexp(0.0, yf))
        s_pos = np.exp(-np.logaddexp(0.0, -yf))
        return y * s_neg, -s_pos * s_neg
