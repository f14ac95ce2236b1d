"""Where the tilted density's mass lies, and the adaptive panels that cover it (steps 1-2 of
:mod:`qpviz.tilted`).

Newton on log q from the likelihood's start points finds the modes and their curvature widths;
the domain grows from the modes until log q has fallen ``TAIL_LOG_DROP`` nats below its peak;
break points at the modes, at mode +- 1, 2, 4, 8 widths and at the likelihood's kink keep
narrow features visible; Gauss-Legendre panels (``GL_NODES`` each) are bisected until a panel
and its two halves agree. Everything is in log space relative to the peak (an *anchor*), so Z
may underflow without harm.

The panels come out sorted (the bisection runs left to right) and the few break points are
sorted by a hand-written insertion sort: numba's generic ``np.sort`` / ``np.argsort`` (and
fancy indexing, slice assignment) compile for seconds on a cold cache, these loops in a
fraction of a second.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.polynomial import legendre

from qpviz.config import GL_NODES, NUMBA_OPTIONS, QP_MAX_PANELS, TAIL_LOG_DROP
from qpviz._jit import lk_dlog_prob, lk_kink, lk_log_prob, lk_starts

__all__ = ["GL_X", "GL_W", "GL_CUM", "log_q", "panel_values", "build_panels"]


def _gauss_legendre_rules(n: int):
    """Nodes, weights and the cumulative-integration matrix of n-point Gauss-Legendre on [-1, 1].

    CUM[j, l] gives int_{-1}^{x_j} p = sum_l CUM[j, l] p(x_l) for polynomials p of degree < n:
    p = sum_k c_k P_k with c = diag((2k+1)/2) V^T diag(w) p, and int_{-1}^x P_k = legint.
    """
    nodes, weights = legendre.leggauss(n)
    vander = legendre.legvander(nodes, n - 1)
    to_coef = (np.arange(n) + 0.5)[:, None] * vander.T * weights[None, :]
    antider = np.empty((n, n))
    for k in range(n):
        unit = np.zeros(n)
        unit[k] = 1.0
        antider[:, k] = legendre.legval(nodes, legendre.legint(unit, lbnd=-1.0))
    return nodes, weights, antider @ to_coef


GL_X, GL_W, GL_CUM = _gauss_legendre_rules(GL_NODES)
# Hard cap of the panel stack: splits beyond it are refused and the result is flagged.
_MAX_PANELS = QP_MAX_PANELS
_NEWTON_ITERS = 100


@njit(**NUMBA_OPTIONS)
def log_q(lk, y, m, v, anchor, f):
    """Unnormalised log tilted density relative to an anchor point a:

    log p(y|f) - [(f - m)^2 - (a - m)^2] / (2 v) = log p(y|f) - (f - a)(f + a - 2m) / (2 v).

    The factored form has no cancellation when f and a lie many cavity widths from m (where
    (f - m)^2 / 2v can be ~1e5 while the density varies on the scale of 1).
    """
    return lk_log_prob(lk, y, f) - 0.5 * (f - anchor) * (f + anchor - 2.0 * m) / v


@njit(**NUMBA_OPTIONS)
def _newton_mode(lk, y, m, v, f0):
    """A local mode of log q from f0 (safeguarded Newton with backtracking): (mode, log q, width)."""
    s = math.sqrt(v)
    f = f0
    lq = lk_log_prob(lk, y, f)  # log q(f) - log q(f) + log p(y|f), anchored at f
    if not (lq > -np.inf):
        return f0, -np.inf, s
    for _ in range(_NEWTON_ITERS):
        d1, d2 = lk_dlog_prob(lk, y, f)
        grad = d1 - (f - m) / v
        hess = d2 - 1.0 / v
        step = -grad / hess if hess < 0.0 else grad * v
        if abs(step) > 10.0 * s:
            step = math.copysign(10.0 * s, step)
        accepted = False
        for _ in range(60):
            f_new = f + step
            if log_q(lk, y, m, v, f, f_new) >= lq:  # both anchored at f
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        f = f_new
        lq = lk_log_prob(lk, y, f)
        if abs(step) <= 1e-14 * (abs(f) + s):
            break
    d1, d2 = lk_dlog_prob(lk, y, f)
    hess = d2 - 1.0 / v
    width = 1.0 / math.sqrt(-hess) if hess < 0.0 else s
    # the absolute log q (only compared between modes; its rounding does not reach the integrals)
    d = f - m
    return f, lq - 0.5 * d * d / v, min(width, 10.0 * s)


@njit(**NUMBA_OPTIONS)
def panel_values(lk, y, m, v, anchor, peak, a, b, out):
    """exp(log q - peak) (anchored, see log_q) at the GL nodes of [a, b] into ``out``; returns the panel's mass."""
    half = 0.5 * (b - a)
    mid = 0.5 * (a + b)
    mass = 0.0
    for j in range(GL_X.size):
        val = math.exp(log_q(lk, y, m, v, anchor, mid + half * GL_X[j]) - peak)
        out[j] = val
        mass += GL_W[j] * val
    return mass * half


@njit(**NUMBA_OPTIONS)
def _domain(lk, y, m, v, breaks):
    """Modes and break points of the tilted density.

    Returns (n_breaks, anchor, peak, width): the anchor is the highest mode and peak its
    anchored log density, log p(y | anchor) (see log_q)."""
    s = math.sqrt(v)
    st0, st1, st2 = lk_starts(lk, y, m, v)
    starts = np.empty(4)
    starts[0] = st0
    starts[1] = st1
    starts[2] = st2
    starts[3] = m
    modes = np.empty(4)
    logs = np.empty(4)
    widths = np.empty(4)
    peak = -np.inf
    for i in range(4):
        if math.isnan(starts[i]):
            logs[i] = -np.inf
            continue
        modes[i], logs[i], widths[i] = _newton_mode(lk, y, m, v, starts[i])
        if logs[i] > peak:
            peak = logs[i]
    n = 0
    if not (peak > -np.inf):
        return n, m, peak, s
    anchor = m
    for i in range(4):
        if logs[i] == peak:
            anchor = modes[i]
    peak_rel = lk_log_prob(lk, y, anchor)
    kink = lk_kink(lk, y)
    w_min = 10.0 * s
    lo = np.inf
    hi = -np.inf
    for i in range(4):
        if not (logs[i] > peak - TAIL_LOG_DROP):
            continue
        w = widths[i]
        w_min = min(w_min, w)
        for k in (-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0):
            breaks[n] = modes[i] + k * w
            n += 1
        lo = min(lo, modes[i] - 8.0 * w)
        hi = max(hi, modes[i] + 8.0 * w)
    threshold = peak_rel - TAIL_LOG_DROP
    step = w_min
    for _ in range(200):
        if not (log_q(lk, y, m, v, anchor, lo) > threshold):
            break
        lo -= step
        step *= 2.0
    step = w_min
    for _ in range(200):
        if not (log_q(lk, y, m, v, anchor, hi) > threshold):
            break
        hi += step
        step *= 2.0
    breaks[n] = lo
    breaks[n + 1] = hi
    n += 2
    if lo < kink < hi:
        breaks[n] = kink
        n += 1
    _insertion_sort(breaks, n)
    # merge break points closer than a tiny fraction of the narrowest width (modes found from
    # several starts coincide to rounding): panels of zero or rounding-level width would
    # otherwise tie in the sorted panel list
    kept = 1
    for i in range(1, n):
        if breaks[i] - breaks[kept - 1] > 1e-9 * w_min:
            breaks[kept] = breaks[i]
            kept += 1
    return kept, anchor, peak_rel, w_min


@njit(**NUMBA_OPTIONS)
def _pass_one(lk, y, m, v, anchor, peak, breaks, n_breaks, rel_tol, width, pa, pb, pval, pmass):
    """Adaptive panels for the mass. Fills panel arrays; returns (n_panels, ok)."""
    n_nodes = GL_X.size
    tmp = np.empty(n_nodes)
    left_vals = np.empty(n_nodes)
    right_vals = np.empty(n_nodes)
    # stack of intervals still to test, seeded with the break-point intervals, leftmost on top;
    # a split pushes its right half first, so panels come out left to right (no sort needed)
    stack_a = np.empty(_MAX_PANELS)
    stack_b = np.empty(_MAX_PANELS)
    stack_m = np.empty(_MAX_PANELS)
    top = 0
    total = 0.0
    for i in range(n_breaks - 2, -1, -1):
        a = breaks[i]
        b = breaks[i + 1]
        if not (b > a):
            continue
        mass = panel_values(lk, y, m, v, anchor, peak, a, b, tmp)
        stack_a[top] = a
        stack_b[top] = b
        stack_m[top] = mass
        total += mass
        top += 1
    tol = rel_tol * total
    n_panels = 0
    ok = True
    while top > 0:
        top -= 1
        a = stack_a[top]
        b = stack_b[top]
        whole = stack_m[top]
        mid = 0.5 * (a + b)
        mass_l = panel_values(lk, y, m, v, anchor, peak, a, mid, left_vals)
        mass_r = panel_values(lk, y, m, v, anchor, peak, mid, b, right_vals)
        tiny = (b - a) <= 1e-10 * width  # halves stay far above rounding level
        if abs(mass_l + mass_r - whole) <= tol or tiny or top + 2 >= _MAX_PANELS or n_panels + 2 >= _MAX_PANELS:
            if not (abs(mass_l + mass_r - whole) <= tol or tiny):
                ok = False
            if n_panels + 2 > _MAX_PANELS:
                ok = False
                continue
            pa[n_panels] = a
            pb[n_panels] = mid
            for j in range(n_nodes):  # element loops: numba's slice assignment compiles for seconds
                pval[n_panels, j] = left_vals[j]
                pval[n_panels + 1, j] = right_vals[j]
            pmass[n_panels] = mass_l
            pa[n_panels + 1] = mid
            pb[n_panels + 1] = b
            pmass[n_panels + 1] = mass_r
            n_panels += 2
        else:
            stack_a[top] = mid
            stack_b[top] = b
            stack_m[top] = mass_r
            stack_a[top + 1] = a
            stack_b[top + 1] = mid
            stack_m[top + 1] = mass_l
            top += 2
    return n_panels, ok


@njit(**NUMBA_OPTIONS)
def build_panels(lk, y, m, v, rel_tol):
    """Sorted adaptive panels of the tilted density: (pa, pb, pval, pmass, n, anchor, peak, width, ok)."""
    breaks = np.empty(64)
    n_breaks, anchor, peak, width = _domain(lk, y, m, v, breaks)
    pa = np.empty(_MAX_PANELS)
    pb = np.empty(_MAX_PANELS)
    pval = np.empty((_MAX_PANELS, GL_X.size))
    pmass = np.empty(_MAX_PANELS)
    if n_breaks == 0:
        return pa, pb, pval, pmass, 0, anchor, peak, width, False
    n, ok = _pass_one(lk, y, m, v, anchor, peak, breaks, n_breaks, rel_tol, width, pa, pb, pval, pmass)
    sa = np.empty(n)
    sb = np.empty(n)
    sval = np.empty((n, GL_X.size))
    smass = np.empty(n)
    for i in range(n):  # copied by hand (the panels are already sorted, see _pass_one)
        sa[i] = pa[i]
        sb[i] = pb[i]
        smass[i] = pmass[i]
        for j in range(GL_X.size):
            sval[i, j] = pval[i, j]
    return sa, sb, sval, smass, n, anchor, peak, width, ok


@njit(**NUMBA_OPTIONS)
def _insertion_sort(values, n):
    """Sort values[:n] in place (n is a few dozen break points)."""
    for i in range(1, n):
        x = values[i]
        j = i - 1
        while j >= 0 and values[j] > x:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = x
