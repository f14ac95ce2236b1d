"""The step tilted CDF: a two-piece truncated normal (paper 002, eq. 3), every sum in log space."""
from __future__ import annotations

import numpy as np
from scipy import special

from qpviz.likelihoods._tilted_cdfs.inputs import check_labels, prepare
from qpviz.likelihoods._tilted_cdfs.logspace import log_interval_over_tail, log_mills, log_norm_interval

__all__ = ["step_tilted_cdf"]


def step_tilted_cdf(x, y, m, v, eps, upper: bool = False) -> np.ndarray:
    """CDF (or survival) of q(f) = [eps + (1 - 2 eps) H(y f)] N(f|m, v) / Z (paper 002, eq. 3).

    A two-piece truncated normal. For y = +1, with s = sqrt(v), a = -m/s (the step at f = 0),
    h = (x - m)/s:

        Z = eps Phi(a) + (1 - eps) Phi(-a),
        Z F(x) = eps Phi(h)                                   (x <= 0),
        Z F(x) = eps Phi(a) + (1 - eps) [Phi(h) - Phi(a)]     (x > 0),
        Z (1 - F(x)) = (1 - eps) Phi(-h)                      (x >= 0),
        Z (1 - F(x)) = (1 - eps) Phi(-a) + eps [Phi(a) - Phi(h)]   (x < 0).

    y = -1 follows from f -> -f: F(x; -1, m) = 1 - F(-x; +1, -m). All sums are of positive
    terms, formed in log space and, where a >= 0, relative to Phi(-a) (Z can be as small as
    Phi(-200) when eps = 0): Phi(-h)/Phi(-a) and (Phi(h) - Phi(a))/Phi(-a) come from Mills
    ratios and a Hermite series (``log_interval_over_tail``), never from differences of logs.
    """
    what = "step_tilted_cdf"
    x, y, m, v = prepare(x, y, m, v, what)
    check_labels(y, what)
    eps_arr = np.broadcast_to(np.asarray(eps, dtype=np.float64), x.shape)
    if not np.all((eps_arr >= 0) & (eps_arr < 0.5)):
        raise ValueError(f"{what}: the label-noise probability eps must be in [0, 0.5); got {eps!r}")
    flip = y < 0
    # y = -1: F(x; -1, m) = SF(-x; +1, -m) and SF(x; -1, m) = F(-x; +1, -m)
    xs = np.where(flip, -x, x)
    ms = np.where(flip, -m, m)
    want_upper = flip != bool(upper)
    s = np.sqrt(v)
    with np.errstate(divide="ignore"):
        log_eps = np.log(eps_arr)
    log_keep = np.log1p(-eps_arr)
    a = -ms / s
    with np.errstate(invalid="ignore", over="ignore"):
        h = (xs - ms) / s
    xa = np.where(np.isfinite(xs), xs, 0.0)
    d = xa / s  # = h - a, formed without cancellation
    # where (1 - eps) Phi(-a) dominates Z and a >= 0, every term is scaled by Phi(-a) (Z can be as
    # small as Phi(-200) when eps = 0): tails at h and a are then compared through their Mills
    # ratios, never through their logs
    a_pos = (a >= 0) & (log_keep + special.log_ndtr(-a) >= log_eps + special.log_ndtr(a))
    ref = np.where(a_pos, special.log_ndtr(-a), 0.0)
    tail_a = np.where(a_pos, 0.0, special.log_ndtr(-a))  # log Phi(-a) - ref
    head_a = special.log_ndtr(a) - ref  # log Phi(a) - ref
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = -0.5 * d * (h + a) + log_mills(h) - log_mills(a)  # log Phi(-h)/Phi(-a), h, a >= 0
    tail_h = np.where(a_pos & (h >= 0), np.where(np.isposinf(h), -np.inf, ratio), special.log_ndtr(-h) - ref)
    log_z = np.logaddexp(log_eps + head_a, log_keep + tail_a)
    # lower: x <= 0 -> eps Phi(h); x > 0 -> eps Phi(a) + (1-eps) (Phi(h) - Phi(a))
    low_left = log_eps + special.log_ndtr(h) - ref
    d_pos = np.maximum(np.where(np.isfinite(xs), d, np.inf), 0.0)
    interval = np.where(
        a_pos,
        log_interval_over_tail(np.maximum(a, 0.0), d_pos),
        log_norm_interval(a, np.maximum(h, a), d_pos),
    )
    low_right = np.logaddexp(log_eps + head_a, log_keep + interval)
    log_lower = np.where(xs <= 0, low_left, low_right)
    # upper: x >= 0 -> (1-eps) Phi(-h); x < 0 -> (1-eps) Phi(-a) + eps (Phi(a) - Phi(h))
    up_right = log_keep + tail_h
    up_left = np.logaddexp(
        log_keep + tail_a,
        log_eps + log_norm_interval(np.minimum(h, a), a, np.maximum(-d, 0.0)) - ref,
    )
    log_upper = np.where(xs >= 0, up_right, up_left)
    with np.errstate(invalid="ignore"):
        out = np.exp(np.where(want_upper, log_upper, log_lower) - log_z)
    out = np.where(np.isneginf(x), float(upper), np.where(np.isposinf(x), 1.0 - float(upper), out))
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)
