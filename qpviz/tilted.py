"""Adaptive quadrature of the tilted distribution q(f) = p(y|f) N(f|m, v) / Z.

One engine serves every likelihood: log Z, mean, variance, entropy, CDF, quantiles and the QP
standard deviation (QP paper eq. 7)

    sigma_QP = int phi(Phi^-1(F(f))) df.

How (and why):

1. Locate the mass. Newton on log q from the likelihood's start points (``starts_scalar``) finds
   the modes and their curvature widths; the domain grows from the modes until log q has fallen
   ``TAIL_LOG_DROP`` nats below its peak (all likelihoods are bounded, so beyond the outermost
   mode the density decreases). Everything is in log space relative to the peak, so Z may
   underflow (Z = Phi(-200)) without harm.
2. Pass 1: adaptive Gauss-Legendre panels (``GL_NODES`` per panel, bisection until a panel and
   its two halves agree) for the mass, mean, variance and entropy. Break points at the modes,
   at mode +- 1, 2, 4, 8 widths and at the likelihood's kink keep narrow features visible.
3. Pass 2: panel by panel, the CDF at the nodes is the mass to the left plus a spectral
   (Legendre) cumulative integral inside the panel; the survival function is the mass to the
   right plus the rest of the panel, so neither tail suffers 1 - F cancellation. The integrand
   phi(Phi^-1(min(F, 1-F))) is integrated with the same bisection test, which also resolves its
   F sqrt(2 log 1/F) behaviour at a hard truncation (the eps = 0 step likelihood).

The kernels are numba scalar functions (``*_scalar``) with vectorised loops (``*_batch``) and
Python wrappers taking a likelihood object (:mod:`qpviz.likelihoods.base`). Tests compare them with
an independent mpmath computation (tests/reference.py) and with the closed forms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.polynomial import legendre

from qpviz.config import GL_NODES, NUMBA_OPTIONS, QP_MAX_PANELS, QP_REL_TOL, TAIL_LOG_DROP
from qpviz._jit import lk_dlog_prob, lk_kink, lk_log_prob, lk_moments, lk_starts
from qpviz.checks import as_float_array, check_cavity
from qpviz.special import LOG_SQRT_2PI, phi_of_ndtri

__all__ = [
    "TiltedSummary",
    "tilted_summary",
    "quadrature_moments",
    "qp_std",
    "tilted_cdf",
    "tilted_quantile",
    "tilted_moments_scalar",
    "qp_std_scalar",
    "summary_scalar",
]


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
def _log_q(lk, y, m, v, anchor, f):
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
            if _log_q(lk, y, m, v, f, f_new) >= lq:  # both anchored at f
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
def _panel_values(lk, y, m, v, anchor, peak, a, b, out):
    """exp(log q - peak) (anchored, see _log_q) at the GL nodes of [a, b] into ``out``; returns the panel's mass."""
    half = 0.5 * (b - a)
    mid = 0.5 * (a + b)
    mass = 0.0
    for j in range(GL_X.size):
        val = math.exp(_log_q(lk, y, m, v, anchor, mid + half * GL_X[j]) - peak)
        out[j] = val
        mass += GL_W[j] * val
    return mass * half


@njit(**NUMBA_OPTIONS)
def _domain(lk, y, m, v, breaks):
    """Modes and break points of the tilted density.

    Returns (n_breaks, anchor, peak, width): the anchor is the highest mode and peak its
    anchored log density, log p(y | anchor) (see _log_q)."""
    s = math.sqrt(v)
    st0, st1, st2 = lk_starts(lk, y, m, v)
    starts = np.array([st0, st1, st2, m])
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
        if not (_log_q(lk, y, m, v, anchor, lo) > threshold):
            break
        lo -= step
        step *= 2.0
    step = w_min
    for _ in range(200):
        if not (_log_q(lk, y, m, v, anchor, hi) > threshold):
            break
        hi += step
        step *= 2.0
    breaks[n] = lo
    breaks[n + 1] = hi
    n += 2
    if lo < kink < hi:
        breaks[n] = kink
        n += 1
    breaks[:n] = np.sort(breaks[:n])
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
    # stack of intervals still to test, seeded with the break-point intervals
    stack_a = np.empty(_MAX_PANELS)
    stack_b = np.empty(_MAX_PANELS)
    stack_m = np.empty(_MAX_PANELS)
    top = 0
    total = 0.0
    for i in range(n_breaks - 1):
        a = breaks[i]
        b = breaks[i + 1]
        if not (b > a):
            continue
        mass = _panel_values(lk, y, m, v, anchor, peak, a, b, tmp)
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
        mass_l = _panel_values(lk, y, m, v, anchor, peak, a, mid, left_vals)
        mass_r = _panel_values(lk, y, m, v, anchor, peak, mid, b, right_vals)
        tiny = (b - a) <= 1e-10 * width  # halves stay far above rounding level
        if abs(mass_l + mass_r - whole) <= tol or tiny or top + 2 >= _MAX_PANELS or n_panels + 2 >= _MAX_PANELS:
            if not (abs(mass_l + mass_r - whole) <= tol or tiny):
                ok = False
            if n_panels + 2 > _MAX_PANELS:
                ok = False
                continue
            pa[n_panels] = a
            pb[n_panels] = mid
            pval[n_panels, :] = left_vals
            pmass[n_panels] = mass_l
            pa[n_panels + 1] = mid
            pb[n_panels + 1] = b
            pval[n_panels + 1, :] = right_vals
            pmass[n_panels + 1] = mass_r
            n_panels += 2
        else:
            stack_a[top] = a
            stack_b[top] = mid
            stack_m[top] = mass_l
            stack_a[top + 1] = mid
            stack_b[top + 1] = b
            stack_m[top + 1] = mass_r
            top += 2
    return n_panels, ok


@njit(**NUMBA_OPTIONS)
def _build_panels(lk, y, m, v, rel_tol):
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
    order = np.argsort(pa[:n])
    return pa[:n][order], pb[:n][order], pval[:n][order], pmass[:n][order], n, anchor, peak, width, ok


@njit(**NUMBA_OPTIONS)
def _moments_from_panels(lk, y, m, v, pa, pb, pval, pmass, n, anchor, peak):
    """(log Z, mean, var, entropy) from the panels of pass 1."""
    total = 0.0
    for k in range(n):
        total += pmass[k]
    first = 0.0
    for k in range(n):
        half = 0.5 * (pb[k] - pa[k])
        mid = 0.5 * (pa[k] + pb[k])
        acc = 0.0
        for j in range(GL_X.size):
            acc += GL_W[j] * pval[k, j] * (mid + half * GL_X[j])
        first += acc * half
    mean = first / total
    second = 0.0
    ent = 0.0
    for k in range(n):
        half = 0.5 * (pb[k] - pa[k])
        mid = 0.5 * (pa[k] + pb[k])
        acc2 = 0.0
        acc_e = 0.0
        for j in range(GL_X.size):
            val = pval[k, j]
            d = mid + half * GL_X[j] - mean
            acc2 += GL_W[j] * val * d * d
            if val > 0.0:
                acc_e += GL_W[j] * val * math.log(val)
        second += acc2 * half
        ent += acc_e * half
    # undo the anchoring: log q_abs(f) = anchored log q(f) - (anchor - m)^2 / (2 v)
    log_z = math.log(total) + peak - 0.5 * (anchor - m) ** 2 / v - 0.5 * math.log(v) - LOG_SQRT_2PI
    # q = val / total on the nodes, so -int q log q = log total - int val log val / total
    entropy = math.log(total) - ent / total
    return log_z, mean, second / total, entropy


@njit(**NUMBA_OPTIONS)
def _qp_piece(lk, y, m, v, anchor, peak, a, b, left_mass, right_mass, total, vals):
    """int_a^b phi(Phi^-1(min(F, S))) df on GL nodes, given exp(log q - peak) ``vals`` there,
    the unnormalised mass left of a and right of b. Returns (integral, panel mass)."""
    half = 0.5 * (b - a)
    mass = 0.0
    for j in range(GL_X.size):
        mass += GL_W[j] * vals[j]
    mass *= half
    acc = 0.0
    for j in range(GL_X.size):
        cum = 0.0
        for k in range(GL_X.size):
            cum += GL_CUM[j, k] * vals[k]
        cum *= half
        lower = (left_mass + cum) / total
        upper = (right_mass + (mass - cum)) / total
        acc += GL_W[j] * phi_of_ndtri(min(lower, upper))
    return acc * half, mass


@njit(**NUMBA_OPTIONS)
def _qp_from_panels(lk, y, m, v, pa, pb, pval, pmass, n, anchor, peak, abs_tol):
    """sigma_QP (eq. 7) by pass 2 over the sorted panels; returns (sigma, ok)."""
    total = 0.0
    for k in range(n):
        total += pmass[k]
    prefix = 0.0
    suffix = total
    sigma = 0.0
    ok = True
    n_nodes = GL_X.size
    depth_cap = 60
    stack_a = np.empty(depth_cap + 2)
    stack_b = np.empty(depth_cap + 2)
    stack_l = np.empty(depth_cap + 2)
    stack_r = np.empty(depth_cap + 2)
    stack_i = np.empty(depth_cap + 2)
    stack_d = np.empty(depth_cap + 2, dtype=np.int64)
    vals_l = np.empty(n_nodes)
    vals_r = np.empty(n_nodes)
    for k in range(n):
        suffix -= pmass[k]
        right_of_panel = max(suffix, 0.0)
        whole, _ = _qp_piece(lk, y, m, v, anchor, peak, pa[k], pb[k], prefix, right_of_panel, total, pval[k])
        top = 0
        stack_a[0] = pa[k]
        stack_b[0] = pb[k]
        stack_l[0] = prefix
        stack_r[0] = right_of_panel
        stack_i[0] = whole
        stack_d[0] = 0
        top = 1
        while top > 0:
            top -= 1
            a = stack_a[top]
            b = stack_b[top]
            lm = stack_l[top]
            rm = stack_r[top]
            whole = stack_i[top]
            depth = stack_d[top]
            mid = 0.5 * (a + b)
            mass_l = _panel_values(lk, y, m, v, anchor, peak, a, mid, vals_l)
            mass_r = _panel_values(lk, y, m, v, anchor, peak, mid, b, vals_r)
            int_l, _ = _qp_piece(lk, y, m, v, anchor, peak, a, mid, lm, rm + mass_r, total, vals_l)
            int_r, _ = _qp_piece(lk, y, m, v, anchor, peak, mid, b, lm + mass_l, rm, total, vals_r)
            tol = abs_tol * (0.5 ** min(depth, 30))
            if abs(int_l + int_r - whole) <= max(tol, 1e-300) or depth >= depth_cap:
                if depth >= depth_cap and abs(int_l + int_r - whole) > abs_tol:
                    ok = False
                sigma += int_l + int_r
            else:
                # push the right half first so the left half is processed next (no ordering need,
                # but keeps the stack shallow for a singular left end)
                stack_a[top] = mid
                stack_b[top] = b
                stack_l[top] = lm + mass_l
                stack_r[top] = rm
                stack_i[top] = int_r
                stack_d[top] = depth + 1
                stack_a[top + 1] = a
                stack_b[top + 1] = mid
                stack_l[top + 1] = lm
                stack_r[top + 1] = rm + mass_r
                stack_i[top + 1] = int_l
                stack_d[top + 1] = depth + 1
                top += 2
        prefix += pmass[k]
    return sigma, ok


@njit(**NUMBA_OPTIONS)
def summary_scalar(lk, y, m, v, want_qp, use_closed=True):
    """(log Z, mean, var, entropy, sigma_QP, ok) of one tilted distribution.

    log Z, mean and var use the likelihood's closed form where it has one (and ``use_closed``),
    else the quadrature. sigma_QP is NaN when ``want_qp`` is False.
    """
    pa, pb, pval, pmass, n, anchor, peak, width, ok = _build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
    if n == 0:
        return np.nan, np.nan, np.nan, np.nan, np.nan, False
    log_z, mean, var, entropy = _moments_from_panels(lk, y, m, v, pa, pb, pval, pmass, n, anchor, peak)
    has_closed, c_log_z, c_mean, c_var = lk_moments(lk, y, m, v)
    if has_closed and use_closed:
        log_z, mean, var = c_log_z, c_mean, c_var
    sigma = np.nan
    if want_qp:
        sigma, ok_qp = _qp_from_panels(lk, y, m, v, pa, pb, pval, pmass, n, anchor, peak,
                                       QP_REL_TOL * math.sqrt(var) / 8.0)
        ok = ok and ok_qp
        # Theorem 2 holds exactly; quadrature noise may not exceed the EP std
        sigma = min(sigma, math.sqrt(var))
    return log_z, mean, var, entropy, sigma, ok


@njit(**NUMBA_OPTIONS)
def tilted_moments_scalar(lk, y, m, v):
    """(log Z, mean, var) of the tilted distribution: closed form if any, else quadrature."""
    has_closed, log_z, mean, var = lk_moments(lk, y, m, v)
    if has_closed:
        return log_z, mean, var
    log_z, mean, var, _, _, _ = summary_scalar(lk, y, m, v, False, True)
    return log_z, mean, var


@njit(**NUMBA_OPTIONS)
def qp_std_scalar(lk, y, m, v):
    """sigma_QP of the tilted distribution by direct quadrature (QP paper eq. 7)."""
    return summary_scalar(lk, y, m, v, True, True)[4]


@njit(**NUMBA_OPTIONS)
def _summary_batch(lk, y, m, v, want_qp, use_closed):
    n = y.size
    out = np.empty((5, n))
    ok = np.empty(n, dtype=np.bool_)
    for i in range(n):
        log_z, mean, var, entropy, sigma, ok_i = summary_scalar(lk, y[i], m[i], v[i], want_qp, use_closed)
        out[0, i] = log_z
        out[1, i] = mean
        out[2, i] = var
        out[3, i] = entropy
        out[4, i] = sigma
        ok[i] = ok_i
    return out, ok


@dataclass(frozen=True)
class TiltedSummary:
    """Arrays of log Z, mean, variance, entropy and sigma_QP; ``ok`` flags full convergence."""

    log_z: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    entropy: np.ndarray
    qp_std: np.ndarray
    ok: np.ndarray


def _prepare(lik, y, cavity_mean, cavity_var):
    y = lik.check_y(y)
    m, v = check_cavity(cavity_mean, cavity_var)
    y, m, v = np.broadcast_arrays(y, m, v)
    return y, m, v


def _flat(*arrays):
    return tuple(np.ascontiguousarray(np.ravel(a), dtype=np.float64) for a in arrays)


def tilted_summary(lik, y, cavity_mean, cavity_var, want_qp: bool = True, closed_form: bool = True) -> TiltedSummary:
    """Everything the projections need about the tilted distributions, vectorised.

    Likelihoods with numba kernels (``lik.jit_handle()``) use the kernels of this module; others
    the NumPy engine of :mod:`qpviz.tilted_numpy` on their ``log_prob``. ``closed_form=False``
    reports the quadrature's log Z, mean and variance even where the likelihood has closed forms
    (the tests compare the two).
    """
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    shape = y.shape
    lk = lik.jit_handle()
    if lk is not None:
        out, ok = _summary_batch(lk, *_flat(y, m, v), want_qp, closed_form)
        return TiltedSummary(*(out[j].reshape(shape) for j in range(5)), ok.reshape(shape))
    from qpviz import tilted_numpy

    res = tilted_numpy.tilted_summary(lik.log_prob, y, m, v, kinks=lik.kinks, want_qp=want_qp)
    log_z, mean, var = res.log_z, res.mean, res.var
    if closed_form and _has_own_moments(lik):
        log_z, mean, var = lik._tilted_moments(y, m, v)
    qp = np.minimum(res.qp_std, np.sqrt(var)) if want_qp else np.full(shape, np.nan)
    return TiltedSummary(np.asarray(log_z, float), np.asarray(mean, float), np.asarray(var, float),
                         np.asarray(res.entropy, float), qp, np.asarray(res.ok, bool))


def _has_own_moments(lik) -> bool:
    from qpviz.likelihoods.base import Likelihood

    return type(lik)._tilted_moments is not Likelihood._tilted_moments


def quadrature_moments(lik, y, cavity_mean, cavity_var):
    """(log Z, mean, var) by the adaptive quadrature (the default of Likelihood.tilted_moments)."""
    s = tilted_summary(lik, y, cavity_mean, cavity_var, want_qp=False, closed_form=False)
    return s.log_z, s.mean, s.var


def qp_std(lik, y, cavity_mean, cavity_var) -> np.ndarray:
    """sigma_QP (eq. 7) by direct adaptive quadrature, vectorised over broadcast inputs."""
    return tilted_summary(lik, y, cavity_mean, cavity_var, want_qp=True).qp_std


# -- CDF and quantiles -----------------------------------------------------------------------
@njit(**NUMBA_OPTIONS)
def _partial_mass(lk, y, m, v, anchor, peak, a, x):
    """int_a^x exp(log q - peak) df by one GL rule (x inside a converged panel)."""
    half = 0.5 * (x - a)
    mid = 0.5 * (x + a)
    acc = 0.0
    for j in range(GL_X.size):
        acc += GL_W[j] * math.exp(_log_q(lk, y, m, v, anchor, mid + half * GL_X[j]) - peak)
    return acc * half


@njit(**NUMBA_OPTIONS)
def _cdf_many(lk, y, m, v, xs, upper):
    pa, pb, pval, pmass, n, anchor, peak, width, ok = _build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
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
def _cdf_elementwise(lk, y, m, v, xs, upper):
    out = np.empty(xs.size)
    one = np.empty(1)
    for i in range(xs.size):
        one[0] = xs[i]
        out[i] = _cdf_many(lk, y[i], m[i], v[i], one, upper)[0]
    return out


def tilted_cdf(lik, x, y, cavity_mean, cavity_var, upper: bool = False) -> np.ndarray:
    """F(x) (or 1 - F(x) with ``upper=True``, computed directly) of the tilted distribution."""
    x = as_float_array(x, "x")
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    lk = lik.jit_handle()
    if lk is None:
        from qpviz import tilted_numpy

        return tilted_numpy.tilted_cdf(lik.log_prob, x, y, m, v, upper=upper, kinks=lik.kinks)
    if y.ndim == 0:
        out = _cdf_many(lk, float(y), float(m), float(v), *_flat(x), upper)
        return out.reshape(x.shape)
    x, y, m, v = np.broadcast_arrays(x, y, m, v)
    out = _cdf_elementwise(lk, *_flat(y, m, v, x), upper)
    return out.reshape(x.shape)


@njit(**NUMBA_OPTIONS)
def _quantiles(lk, y, m, v, us):
    """Tilted quantiles: bracket on the panel edges, then safeguarded Newton on F (or on 1 - F
    for u > 1/2, so the upper tail keeps its relative accuracy)."""
    pa, pb, pval, pmass, n, anchor, peak, width, ok = _build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
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
            dens = math.exp(_log_q(lk, y, m, v, anchor, x) - log_norm) * total
            x_new = x - resid / dens if dens > 0.0 else 0.5 * (lo + hi)
            if not (lo < x_new < hi):
                x_new = 0.5 * (lo + hi)
            if abs(x_new - x) <= 1e-15 * (abs(x) + width):
                x = x_new
                break
            x = x_new
        out[i] = x
    return out


def tilted_quantile(lik, u, y, cavity_mean, cavity_var) -> np.ndarray:
    """F^-1(u) of one tilted distribution (scalar y, cavity) at probabilities ``u`` in (0, 1)."""
    u = as_float_array(u, "u")
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    if y.ndim != 0:
        raise ValueError("tilted_quantile takes one tilted distribution: scalar y, cavity_mean, cavity_var")
    lk = lik.jit_handle()
    if lk is None:
        from qpviz import tilted_numpy

        return tilted_numpy.tilted_quantile(lik.log_prob, u, y, m, v, kinks=lik.kinks)
    out = _quantiles(lk, float(y), float(m), float(v), *_flat(u))
    return out.reshape(u.shape)
