"""Poisson likelihood with square link, p(y | f) = Poisson(y; f^2) (QP paper App. C.2, H).

With tau2 = v / (1 + 2 v) and beta = m / (1 + 2 v) (paper eq. 55: alpha = 2 tau2, h = m beta),

    p(y|f) N(f|m, v) = f^(2y) N(f | beta, tau2) (tau / sqrt v) exp(-h) / y!,

so the tilted distribution is f^(2y) N(f | beta, tau2) normalised; its moments are ratios of sums of
positive terms for beta >= 0 (reflect f -> -f otherwise): the terminating series of eqs. 53-60's 1F1.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from qpviz._jit import JitKernels
from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods import _tilted_cdfs as tilted_cdfs
from qpviz.likelihoods.base import Likelihood, check_cavity
from qpviz.likelihoods.registry import register_likelihood

#: Starting site variance: the variance of sqrt(Poisson) (delta method).
SQRT_COUNT_VARIANCE = 0.25
LOG2 = math.log(2.0)


#: Rescale the raw-moment recurrence when a moment exceeds this (keeps every value finite).
_RESCALE = 1e200
_LOG_RESCALE = math.log(_RESCALE)


@njit(**NUMBA_OPTIONS)
def raw_moment_tail(n, beta, tau2):
    """(log M_n, M_(n-1) / M_n, M_(n-2) / M_n) of the raw moments M_k = E[f^k], f ~ N(beta, tau2),
    beta >= 0, by the recurrence M_(k+1) = beta M_k + k tau2 M_(k-1) (M_0 = 1, M_1 = beta): sums
    of non-negative terms, O(n) multiply-adds and no transcendental function but one log
    (rescaled by 1e-200 whenever a moment exceeds 1e200)."""
    if n == 0:
        return 0.0, 0.0, 0.0
    older, old, new = 0.0, 1.0, beta  # M_(k-2), M_(k-1), M_k at k = 1
    log_scale = 0.0
    for k in range(1, n):
        older, old, new = old, new, beta * new + k * tau2 * old
        if new > _RESCALE:
            older /= _RESCALE
            old /= _RESCALE
            new /= _RESCALE
            log_scale += _LOG_RESCALE
    return math.log(new) + log_scale, old / new, older / new


@njit(**NUMBA_OPTIONS)
def tilted_moments_scalar(y, m, v):
    """Paper eqs. 53-60 around beta (f = beta + tau t, f^(2y) N(f | beta, tau2) normalised):
    log Z = log(tau/sqrt v) - h - log y! + log A_0, mean = sign(m) (beta + tau A_1/A_0),
    var = tau^2 (A_2/A_0 - (A_1/A_0)^2), with A_k = E[f^n t^k], n = 2y, from the raw moments by
    Stein's identity: A_0 = M_n, A_1 = tau n M_(n-1), A_2 = M_n + tau^2 n (n-1) M_(n-2)
    (:func:`raw_moment_tail`; the tests compare it with the per-term binomial sums in mpmath)."""
    n = int(y)
    tau2 = v / (1.0 + 2.0 * v)
    beta = abs(m) / (1.0 + 2.0 * v)
    h = m * m / (1.0 + 2.0 * v)
    log_a0, below1, below2 = raw_moment_tail(2 * n, beta, tau2)
    tau = math.sqrt(tau2)
    ratio1 = tau * (2 * n) * below1
    ratio2 = 1.0 + tau2 * (2 * n) * (2 * n - 1) * below2
    log_z = 0.5 * math.log(tau2 / v) - h - math.lgamma(y + 1.0) + log_a0
    mean = beta + tau * ratio1
    var = tau2 * (ratio2 - ratio1 * ratio1)
    if m < 0.0:
        mean = -mean
    return log_z, mean, var


@njit(**NUMBA_OPTIONS)
def tilted_moments_batch(y, m, v):
    """:func:`tilted_moments_scalar` over 1-D arrays, called directly (rows log Z, mean, var)."""
    out = np.empty((3, y.size))
    for i in range(y.size):
        out[0, i], out[1, i], out[2, i] = tilted_moments_scalar(y[i], m[i], v[i])
    return out


def _log_prob(params, y, f):
    if y == 0.0:
        return -f * f
    if f == 0.0:
        return -np.inf
    return 2.0 * y * math.log(abs(f)) - f * f - math.lgamma(y + 1.0)


def _dlog_prob(params, y, f, out):
    if y == 0.0:
        out[0] = -2.0 * f
        out[1] = -2.0
    else:
        out[0] = 2.0 * y / f - 2.0 * f
        out[1] = -2.0 * y / (f * f) - 2.0
    return 0.0


def _moments(params, y, m, v, out):
    out[0], out[1], out[2] = tilted_moments_scalar(y, m, v)
    return 1.0


def _starts(params, y, m, v, out):
    """Stationary points of log q: (1 + 2v) f^2 - m f - 2 y v = 0."""
    a = 1.0 + 2.0 * v
    out[2] = np.nan
    if y == 0.0:
        out[0] = m / a
        out[1] = np.nan
        return 0.0
    root = math.sqrt(m * m + 8.0 * y * v * a)
    out[0] = (m + root) / (2.0 * a)
    out[1] = (m - root) / (2.0 * a)
    return 0.0


@register_likelihood
class PoissonSquare(Likelihood):
    """p(y | f) = (f^2)^y exp(-f^2) / y!, counts y = 0, 1, 2, ..."""

    name = "poisson_square"
    menu_rank = 60
    support = "count"
    log_concave = False  # bimodal in f for y > 0
    even_in_f = True
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts, moments=_moments)
    qp_table = {"fold": "count_even", "t_lo": 0.0, "t_hi": 10.0, "center": 0.0, "width": 1.0}

    def log_prob(self, y, f):
        f2 = np.square(f)
        with np.errstate(divide="ignore"):
            return special.xlogy(y, f2) - f2 - special.gammaln(np.add(y, 1))

    def dlog_prob(self, y, f):
        y = np.asarray(y, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            d1 = np.where(y == 0, -2 * f, 2 * y / f - 2 * f)
            d2 = np.where(y == 0, -2.0, -2 * y / np.square(f) - 2.0)
        return d1, d2

    def _tilted_moments(self, y, m, v):
        return self._batch_moments(tilted_moments_batch, y, m, v)

    def initial_sites(self, y):
        """p(y|f) is symmetric under f -> -f: from flat sites the first cavities have mean 0, every
        tilted distribution is symmetric and EP stays at the symmetric fixed point q = prior. Start
        from sites N(f | sqrt(y_i), 1/4) (the variance-stabilised counts), which selects the
        positive branch f = +sqrt(rate)."""
        tau = np.full(np.shape(y)[0], 1.0 / SQRT_COUNT_VARIANCE)
        return tau, tau * np.sqrt(np.asarray(y, float))

    def evaluation_log_density(self, y, mean, var):
        """The QP paper's predictive for counts (App. H): the negative binomial of eq. 122."""
        return self.negative_binomial(mean, var).logpmf(self.check_y(y))

    def observation_moments(self, f):
        rate = np.square(np.asarray(f, float))
        return rate, rate

    def predictive_band(self, mean, var):
        """E[y] = mean^2 + var; band: the range of f^2 over f in mean +- 2 sd (0 where it holds 0)."""
        mean, var = np.asarray(mean, float), np.asarray(var, float)
        sd = np.sqrt(var)
        lo = np.where(np.abs(mean) > 2 * sd, np.minimum((mean - 2 * sd) ** 2, (mean + 2 * sd) ** 2), 0.0)
        hi = np.maximum((mean - 2 * sd) ** 2, (mean + 2 * sd) ** 2)
        return mean**2 + var, lo, hi

    def point_prediction(self, mean, var):
        """Mode of the App. H negative binomial: floor(c (k - 1)) if k > 1 else 0."""
        k, c = negative_binomial_params(mean, var)
        return np.where(k > 1, np.floor(c * (k - 1)), 0.0)

    def count_distribution(self, mean, var, counts):
        """p(y = count) for each (mean, var) row and count column, by the App. H negative binomial."""
        return self.negative_binomial(np.asarray(mean)[:, None], np.asarray(var)[:, None]).pmf(
            np.asarray(counts, float)[None, :])

    def variational_expectations(self, y, mean, var):
        """Closed form: E[d^2 log p] = E[-2 y / f^2 - 2] diverges although E is smooth in (m, v).
        f^2 / v is non-central chi-square(1, lambda = m^2 / v), a Poisson(mu = lambda / 2) mixture
        of chi-square(1 + 2k), and E[log chi-square(n)] = log 2 + psi(n / 2); with
        S0 = sum_k Pois(k; mu) psi(k + 1/2) and S1 = dS0/dmu = sum_k Pois(k; mu) / (k + 1/2):
        E[log f^2] = log(2 v) + S0, d/dm = S1 m / v, d/dv = 1/v - S1 m^2 / (2 v^2),
        E = y E[log f^2] - (m^2 + v) - log y!."""
        y = np.asarray(y, float)
        mean = np.asarray(mean, float)
        var = np.asarray(var, float)
        mu = mean * mean / (2.0 * var)
        k_max = int(np.max(mu + 12.0 * np.sqrt(mu) + 40.0))
        k = np.arange(k_max + 1.0)
        from scipy import stats  # ~0.3 s to import: only where a count distribution is asked for

        weights = stats.poisson.pmf(k, mu[..., None])
        s0 = weights @ special.digamma(k + 0.5)
        s1 = weights @ (1.0 / (k + 0.5))
        e_log_f2 = np.log(2.0 * var) + s0
        d_m = s1 * mean / var
        d_v = 1.0 / var - s1 * mean * mean / (2.0 * var * var)
        expectation = y * e_log_f2 - (mean * mean + var) - special.gammaln(y + 1.0)
        return expectation, y * d_m - 2.0 * mean, 2.0 * (y * d_v - 1.0)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper):
        """Incomplete-gamma sum, QP paper eqs. 61-67 (see :mod:`._tilted_cdfs`)."""
        return tilted_cdfs.poisson_square_tilted_cdf(x, y, cavity_mean, cavity_var, upper=upper)

    def negative_binomial(self, mean, var):
        """The paper's predictive count distribution (App. H, eqs. 119-122) as a frozen
        ``scipy.stats.nbinom``: NB(y | k, c / (1 + c)) (SciPy's success probability is 1/(1 + c)).

        g = f^2 with f ~ N(mean, var) is matched by Gamma(k, c) (eq. 119), so
        p(y) = c^y (1 + c)^(-k-y) Gamma(k + y) / (y! Gamma(k)) (eq. 122).
        """
        mean, var = check_cavity(mean, var)
        k, c = negative_binomial_params(mean, var)
        from scipy import stats

        return stats.nbinom(k, 1.0 / (1.0 + c))

    def negative_binomial_predictive(self, y, mean, var) -> np.ndarray:
        """p(y) under the App. H negative binomial (see :meth:`negative_binomial`)."""
        return self.negative_binomial(mean, var).pmf(self.check_y(y))


def negative_binomial_params(mean, var) -> tuple[np.ndarray, np.ndarray]:
    """Shape k and scale c of the Gamma matching g = f^2, f ~ N(mean, var) (QP paper eq. 119):

    k = (mean^2 + var)^2 / (2 var (2 mean^2 + var)),  c = 2 var (2 mean^2 + var) / (mean^2 + var).
    """
    m2 = np.asarray(mean, float) ** 2
    s2 = np.asarray(var, float)
    k = (m2 + s2) ** 2 / (2.0 * s2 * (2.0 * m2 + s2))
    c = 2.0 * s2 * (2.0 * m2 + s2) / (m2 + s2)
    return k, c
