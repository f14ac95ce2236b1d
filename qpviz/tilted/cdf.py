"""The tilted CDF, survival function and quantiles from the adaptive panels (numba kernels).

The CDF at x is the mass of the panels left of x plus one Gauss-Legendre rule over the part of
x's panel left of x; the survival function the mass to the right plus the rest of the panel
(no 1 - F cancellation). Quantiles bracket on the panel edges, then run safeguarded Newton on F
(on 1 - F for u > 1/2, so the upper tail keeps its relative accuracy).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS, QP_REL_TOL
from qpviz.tilted.panels import GL_W, GL_X, build_panels, log_q

__all__ = ["cdf_many", "cdf_elementwise", "quantiles"]


@njit(**NUMBA_OPTIONS)
def _partial_mass(lk, y, m, v, anchor, peak, a, x):
    """int_a^x exp(log q - peak) df by one GL rule (x inside a converged panel)."""
    half = 0.5 * (x - a)
    mid = 0.5 * (x + a)
    acc = 0.0
    for j in range(GL_X.size):
        acc += GL_W[j] * math.exp(log_q(lk, y, m, v, anchor, mid + half * GL_X[j]) - peak)
    return acc * half


@njit(**NUMBA_OPTIONS)
def cdf_many(lk, y, m, v, xs, upper):
    pa, pb, pval, pmass, n, anchor, peak, width, ok = build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
    out = np.empty(xs.size)
    total = pmass[:n].sum()
    prefix = np.zeros(n + 1)
    for k in range(n):
        prefix[k + 1] = prefix[k] + pmass[k]
    for i in range(xs.size):
        x = xs[i]
        if n == 0 or math.isnan(x):
            out[i] = np.nan
            continue
        if x <= pa[0]:
            out[i] = 1.0 if upper else 0.0
            continue
        if x >= pb[n - 1]:
            out[i] = 0.0 if upper else 1.0
            continue
        k = np.searchsorted(pa, x, side="right") - 1
        part = _partial_mass(lk, y, m, v, anchor, peak, pa[k], x)
        if upper:
            out[i] = max((total - prefix[k + 1]) + (pmass[k] - part), 0.0) / total
        else:
            out[i] = max(prefix[k] + part, 0.0) / total
    return out


@njit(**NUMBA_OPTIONS)
def cdf_elementwise(lk, y, m, v, xs, upper):
    out = np.empty(xs.size)
    one = np.empty(1)
    for i in range(xs.size):
        one[0] = xs[i]
        out[i] = cdf_many(lk, y[i], m[i], v[i], one, upper)[0]
    return out



@njit(**NUMBA_OPTIONS)
def quantiles(lk, y, m, v, us):
    """Tilted quantiles: bracket on the panel edges, then safeguarded Newton on F (or on 1 - F
    for u > 1/2, so the upper tail keeps its relative accuracy)."""
    pa, pb, pval, pmass, n, anchor, peak, width, ok = build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
    total = pmass[:n].sum()
    prefix = np.zeros(n + 1)
    for k in range(n):
        prefix[k + 1] = prefix[k] + pmass[k]
    log_norm = peak + math.log(total)
    out = np.empty(us.size)
    for i in range(us.size):
        u = us[i]
        if not (0.0 < u < 1.0) or n == 0:
            out[i] = np.nan if not (0.0 <= u <= 1.0) or n == 0 else (pa[0] if u == 0.0 else pb[n - 1])
            continue
        use_upper = u > 0.5
        target = (1.0 - u) * total if use_upper else u * total
        # panel k with prefix[k] <= u total < prefix[k + 1] (from the right for the upper tail)
        k = 0
        if use_upper:
            k = n - 1
            while k > 0 and total - prefix[k] < target:
                k -= 1
        else:
            while k < n - 1 and prefix[k + 1] < target:
                k += 1
        lo = pa[k]
        hi = pb[k]
        x = 0.5 * (lo + hi)
        for _ in range(100):
            part = _partial_mass(lk, y, m, v, anchor, peak, pa[k], x)
            if use_upper:
                # target - S(x): increasing in x like F(x) - u, so one bisection/Newton rule serves
                resid = target - ((total - prefix[k + 1]) + (pmass[k] - part))
            else:
                resid = prefix[k] + part - target
            if resid > 0.0:
                hi = x
            else:
                lo = x
            dens = math.exp(log_q(lk, y, m, v, anchor, x) - log_norm) * total
            x_new = x - resid / dens if dens > 0.0 else 0.5 * (lo + hi)
            if not (lo < x_new < hi):
                x_new = 0.5 * (lo + hi)
            if abs(x_new - x) <= 1e-15 * (abs(x) + width):
                x = x_new
                break
            x = x_new
        out[i] = x
    return out

