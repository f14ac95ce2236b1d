"""The tilted distribution's log Z, mean, variance, entropy and sigma_QP from the panels
(steps 2-3 of :mod:`qpviz.tilted`).

Pass 1's panels give the mass, mean, variance and entropy. Pass 2, panel by panel, takes the
CDF at the nodes as the mass to the left plus a spectral (Legendre) cumulative integral inside
the panel, and the survival function as the mass to the right plus the rest of the panel, so
neither tail suffers 1 - F cancellation; it integrates phi(Phi^-1(min(F, 1 - F))) (QP paper
eq. 7) with the same bisection test, which also resolves its F sqrt(2 log 1/F) behaviour at a
hard truncation (the eps = 0 step likelihood).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS, QP_REL_TOL
from qpviz._jit import lk_moments
from qpviz.special import LOG_SQRT_2PI, phi_of_ndtri
from qpviz.tilted.panels import GL_CUM, GL_W, GL_X, build_panels, panel_values

__all__ = ["summary_scalar", "tilted_moments_scalar", "qp_std_scalar", "summary_batch"]


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
            mass_l = panel_values(lk, y, m, v, anchor, peak, a, mid, vals_l)
            mass_r = panel_values(lk, y, m, v, anchor, peak, mid, b, vals_r)
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

    Callers pass the flags as ``bool(...)`` values, never as bare literals: numba would compile
    one copy of this kernel per literal combination (each ~1 s on a cold cache).
    """
    pa, pb, pval, pmass, n, anchor, peak, width, ok = build_panels(lk, y, m, v, QP_REL_TOL * 1e-2)
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
    log_z, mean, var, _, _, _ = summary_scalar(lk, y, m, v, bool(False), bool(True))
    return log_z, mean, var


@njit(**NUMBA_OPTIONS)
def qp_std_scalar(lk, y, m, v):
    """sigma_QP of the tilted distribution by direct quadrature (QP paper eq. 7)."""
    return summary_scalar(lk, y, m, v, bool(True), bool(True))[4]


@njit(**NUMBA_OPTIONS)
def summary_batch(lk, y, m, v, want_qp, use_closed):
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

