"""Stage 4 of the NumPy tilted quadrature: F(x) and 1 - F(x), tails outside the support included.

Inside the support a probability is the mass of the panels on one side plus Gauss-Legendre on
part of one panel; outside, the tail is its own adaptive integral relative to q(x), so far
tails keep their relative accuracy.
"""
from __future__ import annotations

import numpy as np

from qpviz.config import QP_REL_TOL, TAIL_LOG_DROP
from qpviz.tilted_numpy.context import MAX_LEVELS, Context, check_inputs, float_array, kink_table
from qpviz.tilted_numpy.panels import GL_W, adaptive_mass, build_panels, panel_nodes

__all__ = ["tilted_cdf", "panel_table", "with_tails", "log_mass"]


def panel_table(P, n):
    """Left ends of each point's sorted panels, padded with +inf: shape (n, max panels)."""
    count, start = P["count"], P["start"]
    width = max(int(count.max()), 1)
    table = np.full((n, width), np.inf)
    pos = np.arange(P["owner"].size) - start[P["owner"]]
    table[P["owner"], pos] = P["a"]
    hi = P["b"][start + count - 1]
    return table, hi


def _tail_mass(ctx, owner, x, lower):
    """(log int_{-inf}^x q, or log int_x^inf q with lower=False, relative to exp(ctx.shift);
    ok) outside the support: an adaptive integral of its own, relative to q(x), over the
    range where log q lies within TAIL_LOG_DROP of log q(x)."""
    q = x.size
    sub = Context(ctx.log_prob, ctx.y[owner], ctx.m[owner], ctx.v[owner])
    idx = np.arange(q)
    lp_x = sub.lp(idx, x)
    out = np.full(q, -np.inf)
    ok = np.ones(q, dtype=bool)
    live = lp_x > -np.inf
    if not live.any():
        return out, ok
    sub.anchor = x.copy()
    sub.shift = np.where(live, lp_x, 0.0)
    sign = -1.0 if lower else 1.0  # direction away from the support
    # first guess of the length from the local slope of log q, then doubling
    delta = 1e-7 * (np.abs(x) + sub.s)
    slope = -sub.logq(idx, x + sign * delta) / delta
    with np.errstate(divide="ignore", invalid="ignore"):
        length = np.where(slope > 0, 1.5 * TAIL_LOG_DROP / slope, sub.s)
    length = np.clip(length, 1e-6 * sub.s, 1e3 * sub.s)
    todo = np.flatnonzero(live)
    for _ in range(MAX_LEVELS):
        if todo.size == 0:
            break
        ends = x[todo, None] + sign * length[todo, None] * np.array([0.5, 1.0])
        val = sub.logq(todo[:, None], ends)
        open_ = np.any(val > -TAIL_LOG_DROP, axis=1)
        length[todo[open_]] *= 2.0
        todo = todo[open_]
    ok[todo] = False
    fractions = np.array([0.0, 1.0 / 64, 1.0 / 16, 0.25, 1.0])
    live_idx = np.flatnonzero(live)
    owner_p = np.repeat(live_idx, fractions.size - 1)
    edges = x[live_idx, None] + sign * length[live_idx, None] * fractions[None, :]
    lo_e = np.minimum(edges[:, :-1], edges[:, 1:]).ravel()
    hi_e = np.maximum(edges[:, :-1], edges[:, 1:]).ravel()
    panels, ok_p = adaptive_mass(sub, owner_p, lo_e, hi_e, q, QP_REL_TOL * 1e-2)
    mass = np.bincount(panels[0], panels[4], minlength=q)
    ell = ctx.logq(owner, x)  # log q(x) relative to the owner's anchor
    with np.errstate(divide="ignore"):
        out[live] = np.log(mass[live]) + ell[live]
    return out, ok & ok_p


def with_tails(ctx, P, table, hi):
    """P with the masses beyond the support (below exp(-TAIL_LOG_DROP) of the peak, negligible
    for moments but not for tail probabilities near the support's ends) added to the prefix and
    suffix sums and the total."""
    n = ctx.m.size
    idx = np.arange(n)
    lo = P["a"][P["start"]]
    left, _ = _tail_mass(ctx, idx, lo, True)
    right, _ = _tail_mass(ctx, idx, hi, False)
    left, right = np.exp(left), np.exp(right)
    P = dict(P)
    P["prefix"] = P["prefix"] + left[P["owner"]]
    P["suffix"] = P["suffix"] + right[P["owner"]]
    P["total"] = P["total"] + left + right
    return P


def log_mass(ctx, P, table, hi, owner, x, lower):
    """log of the mass left of x (lower) or right of x, relative to exp(ctx.shift), with
    log q(x) (same scale) and an ok flag."""
    q = x.size
    k = (table[owner] <= x[:, None]).sum(axis=1) - 1
    inside = (k >= 0) & (x < hi[owner])
    out = np.empty(q)
    ok = np.ones(q, dtype=bool)
    ii = np.flatnonzero(inside)
    if ii.size:
        kk = P["start"][owner[ii]] + k[ii]
        if lower:
            f, half = panel_nodes(P["a"][kk], x[ii])
            base = P["prefix"][kk]
        else:
            f, half = panel_nodes(x[ii], P["b"][kk])
            base = P["suffix"][kk]
        part = half * (ctx.density(owner[ii][:, None], f) @ GL_W)
        with np.errstate(divide="ignore"):
            out[ii] = np.log(np.maximum(base + part, 0.0))
    near = ~inside & ((x < hi[owner]) if lower else (k >= 0))
    ni = np.flatnonzero(near)
    if ni.size:
        out[ni], ok[ni] = _tail_mass(ctx, owner[ni], x[ni], lower)
    far = ~inside & ~near
    out[far] = np.log(P["total"][owner[far]])
    return out, ok


def tilted_cdf(log_prob, x, y, cavity_mean, cavity_var, *, upper=False, kinks=None):
    """F(x) = int_{-inf}^x q (or, with ``upper=True``, 1 - F(x) computed directly as
    int_x^inf q) of the tilted distribution q(f) = p(y|f) N(f|m, v) / Z; inputs broadcast."""
    x = float_array(x, "x")
    y, m, v = check_inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    x, y, m, v = np.broadcast_arrays(x, y, m, v)
    shape = x.shape
    if x.size == 0:
        return np.empty(shape)
    trip = np.column_stack([y.ravel(), m.ravel(), v.ravel()])
    uniq, inverse = np.unique(trip, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    ctx = Context(log_prob, uniq[:, 0].copy(), uniq[:, 1].copy(), uniq[:, 2].copy())
    P, _ = build_panels(ctx, kink_table(kinks, ctx.y), QP_REL_TOL)
    table, hi = panel_table(P, ctx.m.size)
    P = with_tails(ctx, P, table, hi)
    log_side, _ = log_mass(ctx, P, table, hi, inverse, x.ravel().copy(), not upper)
    with np.errstate(under="ignore"):
        out = np.exp(log_side - np.log(P["total"][inverse]))
    return np.minimum(out, 1.0).reshape(shape)
