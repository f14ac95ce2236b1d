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


@njit(**NUMBA_OPTIONS)
def log_shifted_moment(n, k, beta, log_tau):
    """log A_k = log E[f^n t^k] with f = beta + tau t, t ~ N(0, 1), beta >= 0, k in {0, 1, 2}:

    A_k = sum_j C(n, j) beta^(n-j) tau^j E[t^(j+k)], E[t^i] = (i-1)!! for even i (else 0),
    a sum of positive terms (log-sum-exp). A_0 = E[f^n] is the Gaussian raw moment.
    """
    total = -np.inf
    lg_n1 = math.lgamma(n + 1.0)
    log_beta = math.log(beta) if beta > 0.0 else -np.inf
    for j in range(n + 1):
        i = j + k
        if i % 2 == 1 or (beta == 0.0 and j < n):
            continue
        power = (n - j) * log_beta if j < n else 0.0
        term = (lg_n1 - math.lgamma(j + 1.0) - math.lgamma(n - j + 1.0) + power + j * log_tau
                + math.lgamma(i + 1.0) - 0.5 * i * LOG2 - math.lgamma(0.5 * i + 1.0))
        if term > total:  # log-sum-exp, one term at a time (exp(-inf) = 0)
            total = term + math.log1p(math.exp(total - term))
        else:
            total = total + math.log1p(math.exp(term - total))
    return total


@njit(**NUMBA_OPTIONS)
def log_shifted_moments(n, beta, log_tau):
    """(log A_0, log A_1, log A_2) of :func:`log_shifted_moment` in one pass over j.

    The j-th term's logarithm log C(n, j) + (n - j) log beta + j log tau + log (j+k-1)!! is
    built incrementally (log C(n, j+1) = log C(n, j) + log((n - j) / (j + 1)),
    log (i+1)!! = log (i-1)!! + log(i + 1)): about two logarithms and 1.5 exponentials per j
    instead of nine log-gamma calls (the sums are the same positive terms, summed as
    exp(term - max)).
    """
    log_beta = math.log(beta) if beta > 0.0 else -np.inf
    base = np.empty(n + 1)
    log_dfact = np.zeros(n + 3)  # [i] = log (i-1)!! for even i
    for i in range(2, n + 3, 2):
        log_dfact[i] = log_dfact[i - 2] + math.log(i - 1.0)
    log_binom = 0.0
    for j in range(n + 1):
        if j == n:
            base[j] = log_binom + j * log_tau
        elif beta == 0.0:
            base[j] = -np.inf
        else:
            base[j] = log_binom + (n - j) * log_beta + j * log_tau
        if j < n:
            log_binom += math.log((n - j) / (j + 1.0))
    top0 = top1 = top2 = -np.inf
    for j in range(n + 1):
        b = base[j]
        if j % 2 == 0:
            top0 = max(top0, b + log_dfact[j])
            top2 = max(top2, b + log_dfact[j + 2])
        else:
            top1 = max(top1, b + log_dfact[j + 1])
    sum0 = sum1 = sum2 = 0.0
    for j in range(n + 1):
        b = base[j]
        if b == -np.inf:
            continue
        if j % 2 == 0:
            sum0 += math.exp(b + log_dfact[j] - top0)
            sum2 += math.exp(b + log_dfact[j + 2] - top2)
        else:
            sum1 += math.exp(b + log_dfact[j + 1] - top1)
    log_a1 = top1 + math.log(sum1) if sum1 > 0.0 else -np.inf
    return top0 + math.log(sum0), log_a1, top2 + math.log(sum2)


@njit(**NUMBA_OPTIONS)
def tilted_moments_scalar(y, m, v):
    """Paper eqs. 53-60 as positive sums around beta (f = beta + tau t):
    log Z = log(tau/sqrt v) - h - log y! + log A_0, mean = sign(m) (beta + tau A_1/A_0),
    var = tau^2 (A_2/A_0 - (A_1/A_0)^2) (no E[f^2] - mean^2 cancellation)."""
    n = int(y)
    tau2 = v / (1.0 + 2.0 * v)
    beta = abs(m) / (1.0 + 2.0 * v)
    log_tau = 0.5 * math.log(tau2)
    h = m * m / (1.0 + 2.0 * v)
    a0, a1, a2 = log_shifted_moments(2 * n, beta, log_tau)
    ratio1 = math.exp(a1 - a0)
    ratio2 = math.exp(a2 - a0)
    log_z = 0.5 * math.log(tau2 / v) - h - math.lgamma(y + 1.0) + a0
    mean = beta + math.sqrt(tau2) * ratio1
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
