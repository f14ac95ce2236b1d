"""Complementary log-log likelihood (Bernoulli): p(y = +1 | f) = 1 - exp(-exp(f)), y in {-1, +1}.

The link of a Poisson process observed as "any event" (hazard exp(f)): p(y = -1 | f) =
exp(-exp(f)). Asymmetric, unlike probit and logistic. log p is concave in f for both labels.
No closed form for the tilted moments: quadrature (and direct sigma_QP: no QP table).

With t = exp(f): log p(+1 | f) = log(1 - e^-t), d/df = t / expm1(t) =: r,
d^2/df^2 = r (1 - t - r); log p(-1 | f) = -t, d/df = d^2/df^2 = -t.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz._jit import JitKernels
from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.registry import register_likelihood

#: Below this t, 1 - t - r is summed as its series (the direct form cancels).
_SERIES_T = 1e-3
#: Below this f, log(1 - e^-t) = f - t/2 + O(t^2) (exact in double; exp(f) may be subnormal).
_TINY_F = -30.0


@njit(**NUMBA_OPTIONS)
def _log1mexp(t):
    """log(1 - exp(-t)) for t > 0, accurate in both regimes (Maechler 2012)."""
    return math.log(-math.expm1(-t)) if t < math.log(2.0) else math.log1p(-math.exp(-t))


def _log_prob(params, y, f):
    t = math.exp(f)
    if y > 0.0:
        return _log1mexp(t) if f > _TINY_F else f - 0.5 * t
    return -t


def _dlog_prob(params, y, f, out):
    t = math.exp(f)
    if y > 0.0:
        r = t / math.expm1(t) if t > 0.0 else 1.0
        if t < _SERIES_T:
            out[1] = r * (-0.5 * t - t * t / 12.0)
        else:
            out[1] = r * (1.0 - t - r)
        out[0] = r
    else:
        out[0] = -t
        out[1] = -t
    return 0.0


@register_likelihood
class Cloglog(Likelihood):
    """p(y = +1 | f) = 1 - exp(-exp(f)), p(y = -1 | f) = exp(-exp(f))."""

    name = "cloglog"
    menu_rank = 35
    support = "binary"
    log_concave = True
    jit = JitKernels(_log_prob, _dlog_prob)

    def log_prob(self, y, f):
        t = np.exp(f)
        with np.errstate(divide="ignore"):
            positive = np.where(t < math.log(2.0), np.log(-np.expm1(-t)), np.log1p(-np.exp(-t)))
        positive = np.where(f > _TINY_F, positive, f - 0.5 * t)
        return np.where(np.asarray(y) > 0, positive, -t)

    def dlog_prob(self, y, f):
        t = np.exp(f)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.where(t > 0.0, t / np.expm1(t), 1.0)
            d2_pos = r * np.where(t < _SERIES_T, -0.5 * t - t * t / 12.0, 1.0 - t - r)
        positive = np.asarray(y) > 0
        return np.where(positive, r, -t), np.where(positive, d2_pos, -t)
