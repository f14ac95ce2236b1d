"""Quantiles F^-1(u) of one tilted distribution by safeguarded Newton on log F or log(1 - F)."""
from __future__ import annotations

import numpy as np

from qpviz.config import QP_REL_TOL
from qpviz.tilted_numpy.context import MAX_LEVELS, Context, check_inputs, float_array, kink_table
from qpviz.tilted_numpy.panels import build_panels
from qpviz.tilted_numpy.tails import log_mass, panel_table, with_tails

__all__ = ["tilted_quantile"]


def tilted_quantile(log_prob, u, y, cavity_mean, cavity_var, *, kinks=None):
    """F^-1(u) of one tilted distribution (scalar y, cavity_mean, cavity_var), for probabilities
    ``u`` in [0, 1] (u = 0 and 1 give the ends of the numerical support).

    Safeguarded Newton on log F(x) = log u for u <= 1/2 and on log S(x) = log(1 - u) above, so
    both tails keep their relative accuracy."""
    u = float_array(u, "u")
    if np.any((u < 0) | (u > 1)):
        raise ValueError("u must lie in [0, 1]")
    y, m, v = check_inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    if y.ndim != 0:
        raise ValueError("tilted_quantile takes one tilted distribution: scalar y, cavity_mean, cavity_var")
    ctx = Context(log_prob, y.reshape(1), m.reshape(1), v.reshape(1))
    P, _ = build_panels(ctx, kink_table(kinks, ctx.y), QP_REL_TOL)
    table, hi = panel_table(P, 1)
    P = with_tails(ctx, P, table, hi)
    lo = P["a"][0]
    total = P["total"][0]
    flat = u.ravel()
    out = np.empty(flat.size)
    out[flat == 0.0] = lo
    out[flat == 1.0] = hi[0]
    for lower in (True, False):
        sel = np.flatnonzero(((flat <= 0.5) if lower else (flat > 0.5)) & (flat > 0.0) & (flat < 1.0))
        if sel.size == 0:
            continue
        prob = flat[sel] if lower else 1.0 - flat[sel]
        target = np.log(prob) + np.log(total)
        out[sel] = _solve_quantile(ctx, P, table, hi, target, lower)
    return out.reshape(u.shape)


def _solve_quantile(ctx, P, table, hi, target, lower):
    """x with log G(x) = target, G the mass left of x (lower) or right of x: bracketed Newton."""
    q = target.size
    owner = np.zeros(q, dtype=np.int64)
    n_p = P["count"][0]
    a, b = P["a"][:n_p], P["b"][:n_p]
    with np.errstate(divide="ignore"):
        if lower:
            cum = np.log(P["prefix"][:n_p] + P["mass"][:n_p])  # mass left of each panel's right end
            k = np.minimum(np.searchsorted(cum, target), n_p - 1)
        else:
            cum = np.log(P["suffix"][:n_p] + P["mass"][:n_p])  # mass right of each panel's left end
            k = np.clip(np.searchsorted(-cum, -target, side="right") - 1, 0, n_p - 1)
    xl, xr = a[k].copy(), b[k].copy()
    span = hi[0] - a[0]
    # targets beyond the support: open the bracket outwards (the tail is monotone there)
    if lower:
        beyond = target < log_mass(ctx, P, table, hi, owner, xl, True)[0]
        xl = np.where(beyond, xl - span, xl)
        xr = np.where(beyond, a[0], xr)
    else:
        beyond = target < log_mass(ctx, P, table, hi, owner, xr, False)[0]
        xr = np.where(beyond, xr + span, xr)
        xl = np.where(beyond, hi[0], xl)
    for _ in range(MAX_LEVELS):
        idx = np.flatnonzero(beyond)
        if idx.size == 0:
            break
        probe = xl[idx] if lower else xr[idx]
        g = log_mass(ctx, P, table, hi, owner[idx], probe, lower)[0]
        still = target[idx] < g
        w = xr[idx] - xl[idx]
        if lower:
            xr[idx[still]] = xl[idx[still]]
            xl[idx[still]] -= 2.0 * w[still]
        else:
            xl[idx[still]] = xr[idx[still]]
            xr[idx[still]] += 2.0 * w[still]
        beyond[idx[~still]] = False
    x = 0.5 * (xl + xr)
    active = np.arange(q)
    scale = np.abs(x) + np.sqrt(ctx.v[0])
    for _ in range(100):
        if active.size == 0:
            break
        xa = x[active]
        g, _ = log_mass(ctx, P, table, hi, owner[active], xa, lower)
        resid = g - target[active]  # increasing in x for lower, decreasing otherwise
        rising = resid > 0 if lower else resid < 0
        xr[active] = np.where(rising, xa, xr[active])
        xl[active] = np.where(rising, xl[active], xa)
        ell = ctx.logq(owner[active], xa)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            slope = np.exp(ell - g) * (1.0 if lower else -1.0)  # d log G / dx
            step = -resid / slope
        new = np.where(resid == 0, xa, xa + step)
        bad = ~np.isfinite(new) | (new < xl[active]) | (new > xr[active])
        new = np.where(bad, 0.5 * (xl[active] + xr[active]), new)
        done = (np.abs(new - xa) <= 1e-15 * scale[active]) | (xr[active] - xl[active] <= 1e-15 * scale[active])
        x[active] = new
        active = active[~done]
    return x
