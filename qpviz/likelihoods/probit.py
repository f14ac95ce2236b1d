"""Probit likelihood p(y | f) = Phi(y f), y in {-1, +1} (QP paper App. C.1)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz._jit import JitKernels
from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods import _tilted_cdfs as tilted_cdfs
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.registry import register_likelihood
from qpviz.special import log_ndtr, mills_ratio, truncated_normal_terms


@njit(**NUMBA_OPTIONS)
def tilted_moments_scalar(y, m, v):
    """QP paper eqs. 35-36: z = y m / sqrt(1 + v), Z = Phi(z), r = phi(z)/Phi(z),
    mean = m + y v r / sqrt(1 + v), var = v - v^2 r (z + r) / (1 + v)."""
    root = math.sqrt(1.0 + v)
    z = y * m / root
    log_cdf, r, _, var_factor = truncated_normal_terms(z)
    return log_cdf, m + y * v * r / root, v - v * v * (1.0 - var_factor) / (1.0 + v)


@njit(**NUMBA_OPTIONS)
def tilted_moments_batch(y, m, v):
    """:func:`tilted_moments_scalar` over 1-D arrays, called directly (no function pointer: the
    public projection's rate; rows log Z, mean, var)."""
    out = np.empty((3, y.size))
    for i in range(y.size):
        out[0, i], out[1, i], out[2, i] = tilted_moments_scalar(y[i], m[i], v[i])
    return out


def _log_prob(params, y, f):
    return log_ndtr(y * f)


def _dlog_prob(params, y, f, out):
    z = y * f
    r = mills_ratio(z)
    out[0] = y * r
    out[1] = -r * (z + r)
    return 0.0


def _moments(params, y, m, v, out):
    out[0], out[1], out[2] = tilted_moments_scalar(y, m, v)
    return 1.0


def _starts(params, y, m, v, out):
    out[0] = tilted_moments_scalar(y, m, v)[1]
    out[1] = m
    out[2] = np.nan
    return 0.0


#: Taylor coefficients of log Phi the ``taylor`` kernel writes after the value (<= TAYLOR_TERMS)
PROBIT_TAYLOR_TERMS = 11


def _taylor(params, y, f, out):
    """out[k] = (1/k!) d^k/df^k log Phi(y f), k = 0 ... PROBIT_TAYLOR_TERMS.

    With z = y f and r = phi(z) / Phi(z) (d/dz log Phi = r), r solves the Riccati equation
    r' = -z r - r^2; its Taylor coefficients at z, r(z + u) = sum a_k u^k, follow from
    (k + 1) a_{k+1} = -(z + 2 a_0) a_k - a_{k-1} - sum_{i=1}^{k-1} a_i a_{k-i}, a_0 = r,
    a_1 = -r (r + z) (the r + z and log Phi of :func:`truncated_normal_terms`, without
    cancellation), and log Phi(z + u) = log Phi(z) + sum_k a_k u^(k+1) / (k + 1), u = y t.
    out[1:] holds the a_k while they are built. For z << 0 the recursion's terms nearly cancel and
    the high coefficients lose relative accuracy (1e-4 at z = -8 for k = 11, against mpmath); the
    Taylor route's decay test (qpviz.tilted.hermite) then refuses rather than use them."""
    z = y * f
    log_cdf, r, r_plus_z, _ = truncated_normal_terms(z)
    out[0] = log_cdf
    out[1] = r
    out[2] = -r * r_plus_z
    first = r_plus_z + r  # z + 2 a_0
    for k in range(1, PROBIT_TAYLOR_TERMS - 1):  # a_{k+1} into out[k + 2]
        total = -first * out[k + 1] - out[k]
        for i in range(1, k):
            total -= out[i + 1] * out[k - i + 1]
        out[k + 2] = total / (k + 1)
    sign = 1.0
    for k in range(1, PROBIT_TAYLOR_TERMS + 1):
        sign *= y
        out[k] = out[k] * sign / k
    return PROBIT_TAYLOR_TERMS + 1.0


@register_likelihood
class Probit(Likelihood):
    """p(y | f) = Phi(y f), the standard normal CDF of the signed latent value."""

    name = "probit"
    menu_rank = 20
    support = "binary"
    log_concave = True
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts, moments=_moments, taylor=_taylor)
    qp_table = {"fold": "binary", "t_lo": -10.0, "t_hi": 10.0, "center": 0.0, "width": 1.0}

    def log_prob(self, y, f):
        return special.log_ndtr(np.multiply(y, f))

    def dlog_prob(self, y, f):
        z = np.multiply(y, f)
        r = np.exp(-0.5 * z**2 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(z))
        return y * r, -r * (z + r)

    def _tilted_moments(self, y, m, v):
        return self._batch_moments(tilted_moments_batch, y, m, v)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper):
        """Owen's T closed form, QP paper eqs. 45-49 (see :mod:`._tilted_cdfs`)."""
        return tilted_cdfs.probit_tilted_cdf(x, y, cavity_mean, cavity_var, upper=upper)

