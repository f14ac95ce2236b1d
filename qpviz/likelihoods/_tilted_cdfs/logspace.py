"""Log-space helpers of the closed-form tilted CDFs: log-sum-exp, log(e^a - e^b), Mills ratios and
normal probabilities of intervals that keep their relative accuracy in the far tails."""
from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["LOG_2PI", "logsumexp_rows", "log_diff_exp", "log_mills", "log_norm_interval", "log_interval_over_tail"]

LOG_2PI = float(np.log(2.0 * np.pi))
_LOG_SQRT_PI_2 = 0.5 * float(np.log(0.5 * np.pi))


def logsumexp_rows(a):
    """log sum exp over the last axis, -inf for rows of -inf (no warnings)."""
    top = np.max(a, axis=-1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.sum(np.exp(a - safe), axis=-1)) + safe[..., 0]
    return np.where(np.isfinite(top[..., 0]), out, top[..., 0])


def log_diff_exp(a, b):
    """log(exp(a) - exp(b)) for a >= b (-inf where equal)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def log_mills(z):
    """log(Phi(-z) / phi(z)) (log of the Mills ratio), accurate for every real z."""
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(special.erfcx(z / np.sqrt(2.0))) + _LOG_SQRT_PI_2


def log_norm_interval(lo, hi, width):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, with ``width`` = hi - lo computed by the caller.

    When the interval lies in one tail the difference of two small CDF values is formed as
    Phi(-lo) (1 - exp(delta)), delta = log Phi(-hi) - log Phi(-lo)
    = -width (hi + lo) / 2 + log(Mills(hi) / Mills(lo)), which keeps relative accuracy even
    for a tiny interval far in the tail.
    """
    lo, hi, width = np.broadcast_arrays(lo, hi, width)
    upper_tail = lo >= 0
    lower_tail = hi <= 0
    # one-tail cases, mirrored so that both ends are >= 0: a = closer end, b = farther end
    a = np.where(upper_tail, lo, np.where(lower_tail, -hi, 0.0))
    b = np.where(upper_tail, hi, np.where(lower_tail, -lo, 1.0))
    with np.errstate(invalid="ignore", over="ignore"):
        delta = -0.5 * width * (a + b) + log_mills(b) - log_mills(a)
    delta = np.where(np.isinf(b), -np.inf, delta)
    delta = np.where(width == 0, 0.0, delta)
    tail = special.log_ndtr(-a) + log_diff_exp(0.0, np.minimum(delta, 0.0))
    with np.errstate(divide="ignore"):
        straddle = np.log1p(-(special.ndtr(np.minimum(lo, 0.0)) + special.ndtr(-np.maximum(hi, 0.0))))
    # a narrow interval (anywhere): see _log_narrow_interval
    half = 0.5 * np.where(np.isfinite(width), width, 0.0)
    c = np.where(np.isfinite(lo), lo, 0.0) + half
    narrow = np.isfinite(width) & (half * (np.abs(c) + 3.0) < 0.1)
    series = -0.5 * c * c - 0.5 * LOG_2PI + _log_narrow_interval(c, half)
    return np.where(narrow, series, np.where(upper_tail | lower_tail, tail, straddle))


def _log_narrow_interval(c, half):
    """log[(Phi(c + half) - Phi(c - half)) / phi(c)] = log(2 half sum_k He_2k(c) half^2k / (2k+1)!).

    The Hermite generating function exp(-c t - t^2/2) = sum_n He_n(-c) t^n / n! integrated over
    [-half, half]; five terms are exact to rounding where half (|c| + 3) < 0.1, where a
    difference of two CDF values would cancel.
    """
    c2, h2 = c * c, half * half
    hermite = (
        1.0
        + (c2 - 1.0) * h2 / 6.0
        + ((c2 - 6.0) * c2 + 3.0) * h2**2 / 120.0
        + (((c2 - 15.0) * c2 + 45.0) * c2 - 15.0) * h2**3 / 5040.0
        + ((((c2 - 28.0) * c2 + 210.0) * c2 - 420.0) * c2 + 105.0) * h2**4 / 362880.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):  # (callers use only the narrow entries)
        return np.log(2.0 * half) + np.log(hermite)


def log_interval_over_tail(a, d):
    """log[(Phi(a + d) - Phi(a)) / Phi(-a)] for a >= 0, d >= 0, without forming either tail.

    With Mills(t) = Phi(-t)/phi(t): = log(1 - exp(Delta)), Delta = log Phi(-a-d) - log Phi(-a)
    = -d (2a + d)/2 + log Mills(a + d) - log Mills(a); for a narrow interval the Hermite series
    around the midpoint c = a + d/2 instead: phi(c)/Phi(-a) = exp(-(d/2)(2a + d/2)/2)/Mills(a).
    """
    half = 0.5 * d
    c = a + half
    narrow = half * (c + 3.0) < 0.1
    with np.errstate(invalid="ignore", over="ignore"):
        delta = -0.5 * d * (2.0 * a + d) + log_mills(a + d) - log_mills(a)
    delta = np.where(np.isinf(d), -np.inf, delta)
    wide = log_diff_exp(0.0, np.minimum(delta, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):  # (d = inf only reaches the wide branch)
        series = -0.5 * half * (2.0 * a + half) - log_mills(a) + _log_narrow_interval(c, half)
    return np.where(narrow, series, wide)
