"""Step likelihood with label noise, p(y | f) = eps + (1 - 2 eps) H(y f) (paper 002, eq. 3).

eps is the probability that a label is flipped; eps = 0 is the noise-free Heaviside step, whose
tilted distribution is a truncated Gaussian. Closed forms: paper 002, eqs. 45-48.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz._jit import JitKernels
from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods import _tilted_cdfs as tilted_cdfs
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.parameter import Parameter
from qpviz.likelihoods.registry import register_likelihood
from qpviz.special import logaddexp, truncated_normal_terms


@njit(**NUMBA_OPTIONS)
def tilted_moments_scalar(eps, y, m, v):
    """Paper 002 eqs. 45-48 with s = sqrt(v): z = y m / s, Z = eps + (1 - 2 eps) Phi(z),
    gamma = (1 - 2 eps) phi(z) / (Z s), mean = m + v gamma y, var = v - v gamma (y m + v gamma).
    (Eq. 48 as printed lacks the minus sign of d2 log Z / dm2 = -gamma (y m + v gamma) / v.)"""
    s = math.sqrt(v)
    z = y * m / s
    if eps == 0.0:  # truncated Gaussian: the stable continued-fraction terms
        log_cdf, r, r_plus_z, var_factor = truncated_normal_terms(z)
        # mean = m + y s r = y s (r + z) since y s z = m (y^2 = 1): no cancellation when m is far out
        return log_cdf, y * s * r_plus_z, v * var_factor
    # a mixture: the cavity (weight 1 - w = eps / Z) and the truncated Gaussian (w); with r, r + z
    # and 1 - r (z + r) from truncated_normal_terms, var = v [(1 - w) + w (1 - r (z + r)) + w (1 - w) r^2]
    # equals eq. 48's v - v gamma (y m + v gamma) (v gamma = s w r) as a sum of non-negative terms
    # (eq. 48 cancels to 1e-7 relative at z = -36, eps = 1e-300), and mean = y s (z + w r)
    log_cdf, r, r_plus_z, var_factor = truncated_normal_terms(z)
    if log_cdf > _LINEAR_LOG_CDF and eps > _LINEAR_EPS:
        # both mixture weights are normal numbers: Z = eps + (1 - 2 eps) Phi(z) >= eps summed
        # directly (positive terms; one exp and one log instead of four transcendentals)
        weighted_cdf = (1.0 - 2.0 * eps) * math.exp(log_cdf)
        total = eps + weighted_cdf
        w = weighted_cdf / total
        rest = eps / total
        log_z = math.log(total)
    else:  # Phi(z) or eps near underflow: the same weights in log space
        log_z = logaddexp(math.log(eps), math.log1p(-2.0 * eps) + log_cdf)
        w = math.exp(math.log1p(-2.0 * eps) + log_cdf - log_z)
        rest = math.exp(math.log(eps) - log_z)
    return log_z, y * s * (rest * z + w * r_plus_z), v * (rest + w * var_factor + w * rest * r * r)


#: Above these, exp(log Phi(z)) and eps are normal doubles (> 1e-300 ~ e^-690.8): the weights of
#: the step's mixture are computed in linear space.
_LINEAR_LOG_CDF = -690.0
_LINEAR_EPS = 1e-300


@njit(**NUMBA_OPTIONS)
def tilted_moments_batch(eps, y, m, v):
    """:func:`tilted_moments_scalar` over 1-D arrays, called directly (rows log Z, mean, var)."""
    out = np.empty((3, y.size))
    for i in range(y.size):
        out[0, i], out[1, i], out[2, i] = tilted_moments_scalar(eps, y[i], m[i], v[i])
    return out


def _log_prob(params, y, f):
    eps = params[0]
    z = y * f
    if z > 0.0:
        return math.log1p(-eps)
    if z < 0.0:
        return math.log(eps) if eps > 0.0 else -np.inf
    return math.log(0.5)  # H(0) = 1/2, a set of measure zero


def _dlog_prob(params, y, f, out):
    out[0] = 0.0
    out[1] = 0.0
    return 0.0


def _moments(params, y, m, v, out):
    out[0], out[1], out[2] = tilted_moments_scalar(params[0], y, m, v)
    return 1.0


def _starts(params, y, m, v, out):
    out[0] = tilted_moments_scalar(params[0], y, m, v)[1]
    out[1] = m
    out[2] = 1e-300 * y
    return 0.0


def _kink(params, y):
    return 0.0


@register_likelihood
class Step(Likelihood):
    """p(y | f) = eps + (1 - 2 eps) H(y f), with 0 <= eps < 1/2."""

    name = "step"
    menu_rank = 40
    support = "binary"
    parameters = (Parameter("eps", 0.0, lower=0.0, upper=0.5, lower_inclusive=True,
                            doc="label-noise probability", choices=(0.0, 0.05, 0.1, 0.2)),)
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts, kink=_kink, moments=_moments)
    # scale-free: p(y | c f) = p(y | f), so sigma_QP / s depends on z = y m / s alone (1-D tables)
    qp_table = {"fold": "scale_free"}

    @property
    def log_concave(self):
        # eps = 0 is a truncation (log-concave); eps > 0 mixes two levels, and its tilted
        # distribution can be wider than the cavity (negative EP site precision)
        return self.eps == 0.0

    def kinks(self, y):
        return np.array([0.0])

    def log_prob(self, y, f):
        z = np.multiply(y, f)
        with np.errstate(divide="ignore"):
            return np.where(z > 0, np.log1p(-self.eps), np.where(z < 0, np.log(self.eps), np.log(0.5)))

    def dlog_prob(self, y, f):
        shape = np.broadcast_shapes(np.shape(y), np.shape(f))
        return np.zeros(shape), np.zeros(shape)

    def _tilted_moments(self, y, m, v):
        return self._batch_moments(tilted_moments_batch, y, m, v, self.eps)  # cancellation-free forms

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper):
        """Two-piece truncated-normal closed form (see :mod:`._tilted_cdfs`)."""
        return tilted_cdfs.step_tilted_cdf(x, y, cavity_mean, cavity_var, self.eps, upper=upper)

    def variational_expectations(self, y, mean, var):
        """Closed form (E varies smoothly in m and v although log p jumps): with z = y m / sqrt(v),
        a = log(1 - eps), b = log(eps): E = a Phi(z) + b Phi(-z), dE/dm = (a - b) phi(z) y / sqrt(v),
        2 dE/dv = -(a - b) phi(z) z / v."""
        if self.eps <= 0:
            raise ValueError("VB needs log p(y|f) finite everywhere; the step likelihood with eps = 0 is not: use "
                             "eps > 0, e.g. qpviz.likelihood('step', eps=0.05)")
        y = np.asarray(y, float)
        a, b = np.log1p(-self.eps), np.log(self.eps)
        root = np.sqrt(var)
        z = y * mean / root
        pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
        return a * special.ndtr(z) + b * special.ndtr(-z), (a - b) * pdf * y / root, -(a - b) * pdf * z / var
