"""Stage 1 of the NumPy tilted quadrature: locate the mass (support, modes and their widths).

No derivatives: a grid over m +- 10 s (plus points at the kinks) is widened until both ends lie
``TAIL_LOG_DROP`` nats below its peak, and every local maximum is zoomed until resolved.
"""
from __future__ import annotations

import numpy as np

from qpviz.config import TAIL_LOG_DROP
from qpviz.tilted_numpy.context import MAX_LEVELS, Context

__all__ = ["locate_mass"]

#: grid points over the cavity (m +- 10 s) for locating the mass
_GRID = 33
#: points per zoom grid around a local maximum
_ZOOM = 9
#: local maxima zoomed per point (highest first)
_MAX_MODES = 4


def _sorted_rows(g, val, lp):
    order = np.argsort(g, axis=1, kind="stable")
    return (np.take_along_axis(g, order, 1), np.take_along_axis(val, order, 1),
            np.take_along_axis(lp, order, 1))


def locate_mass(ctx: Context, kink_tab: np.ndarray):
    """Support [lo, hi], modes (up to _MAX_MODES per point), widths; sets ctx.anchor/shift."""
    n = ctx.m.size
    m, s = ctx.m, ctx.s
    t = np.linspace(-1.0, 1.0, _GRID)
    offsets = np.concatenate([[0.0], 10.0 ** -np.arange(0, 6.0), -(10.0 ** -np.arange(0, 6.0))])
    extra = (kink_tab[:, :, None] + s[:, None, None] * offsets[None, None, :]).reshape(n, -1)
    extra = np.where(np.isfinite(extra), extra, m[:, None])
    lo = m - 10.0 * s
    hi = m + 10.0 * s
    n_cols = _GRID + extra.shape[1]
    grid = np.empty((n, n_cols))
    vals = np.empty((n, n_cols))
    lps = np.empty((n, n_cols))
    ok = np.ones(n, dtype=bool)
    active = np.arange(n)
    for _ in range(MAX_LEVELS):
        span = hi[active] - lo[active]
        g = np.concatenate([lo[active, None] + 0.5 * span[:, None] * (t + 1.0), extra[active]], axis=1)
        lp, val = ctx.logq_cavity(active[:, None], g)
        g, val, lp = _sorted_rows(g, val, lp)
        grid[active], vals[active], lps[active] = g, val, lp
        peak = val.max(axis=1)
        none = ~(peak > -np.inf)
        # an end is closed when its two outermost points lie TAIL_LOG_DROP below the peak (one
        # point alone may sit on an isolated zero of the density, e.g. f = 0 for poisson_square)
        thr = (peak - TAIL_LOG_DROP)[:, None]
        left_open = np.any(val[:, :2] > thr, axis=1) | none
        right_open = np.any(val[:, -2:] > thr, axis=1) | none
        grow = left_open | right_open
        if not grow.any():
            active = active[:0]
            break
        idx = active[grow]
        span = span[grow]
        lo[idx] = np.where(left_open[grow], g[grow, 0] - span, lo[idx])
        hi[idx] = np.where(right_open[grow], g[grow, -1] + span, hi[idx])
        active = idx
    if active.size:
        ok[active] = False
    peak = vals.max(axis=1)
    if not np.all(peak > -np.inf):
        j = int(np.flatnonzero(~(peak > -np.inf))[0])
        raise ValueError(
            f"log_prob(y, f) is -inf at every f searched for y={ctx.y[j]!r}, cavity mean {m[j]!r}, "
            f"cavity var {ctx.v[j]!r}: the observation has zero likelihood under this cavity"
        )
    # local maxima of the grid within TAIL_LOG_DROP of the peak
    left = np.concatenate([np.full((n, 1), -np.inf), vals[:, :-1]], axis=1)
    right = np.concatenate([vals[:, 1:], np.full((n, 1), -np.inf)], axis=1)
    is_max = (vals > left) & (vals >= right) & (vals > (peak - TAIL_LOG_DROP)[:, None])
    score = np.where(is_max, vals, -np.inf)
    pick = np.argsort(-score, axis=1, kind="stable")[:, :_MAX_MODES]
    chosen = np.take_along_axis(is_max, pick, 1)
    job_pt, job_col = np.nonzero(chosen)
    job_k = pick[job_pt, job_col]
    last = n_cols - 1
    a_z = grid[job_pt, np.maximum(job_k - 1, 0)]
    b_z = grid[job_pt, np.minimum(job_k + 1, last)]
    mode, mode_val, mode_lp, width = _zoom(ctx, job_pt, a_z, b_z, grid[job_pt, job_k], vals[job_pt, job_k],
                                           lps[job_pt, job_k])
    # anchor: the highest mode of each point
    true_peak = np.full(n, -np.inf)
    np.maximum.at(true_peak, job_pt, mode_val)
    best = mode_val == true_peak[job_pt]
    first_best = np.zeros(n, dtype=np.int64)
    sel = np.flatnonzero(best)
    first_best[job_pt[sel[::-1]]] = sel[::-1]
    ctx.anchor = mode[first_best].copy()
    ctx.shift = mode_lp[first_best].copy()
    # trim the support to the grid cells around values within TAIL_LOG_DROP of the true peak
    keep = vals > (true_peak - TAIL_LOG_DROP)[:, None]
    first = np.argmax(keep, axis=1)
    final = n_cols - 1 - np.argmax(keep[:, ::-1], axis=1)
    lo = grid[np.arange(n), np.maximum(first - 1, 0)]
    hi = grid[np.arange(n), np.minimum(final + 1, last)]
    significant = mode_val > true_peak[job_pt] - TAIL_LOG_DROP
    lo = np.minimum(lo, ctx.anchor)
    hi = np.maximum(hi, ctx.anchor)
    return lo, hi, job_pt[significant], mode[significant], width[significant], ok


def _zoom(ctx, pt, a, b, x0, val0, lp0):
    """Refine local maxima: a _ZOOM-point grid on [a, b], recentred on its argmax's neighbours,
    until a neighbour lies within 0.05 nats of the maximum. Returns (mode, log q, log p, width)."""
    j = pt.size
    mode, mval, mlp = x0.copy(), val0.copy(), lp0.copy()
    width = ctx.s[pt].copy()
    t = np.linspace(0.0, 1.0, _ZOOM)
    active = np.arange(j)
    a = a.copy()
    b = b.copy()
    for _ in range(MAX_LEVELS):
        if active.size == 0:
            break
        p = pt[active]
        g = a[active, None] + (b[active] - a[active])[:, None] * t
        lp, val = ctx.logq_cavity(p[:, None], g)
        k = np.argmax(val, axis=1)
        rows = np.arange(active.size)
        best = val[rows, k]
        improve = best >= mval[active]
        upd = active[improve]
        mode[upd] = g[rows, k][improve]
        mval[upd] = best[improve]
        mlp[upd] = lp[rows, k][improve]
        km = np.maximum(k - 1, 0)
        kp = np.minimum(k + 1, _ZOOM - 1)
        dl = np.where(k > 0, best - val[rows, km], np.inf)
        dr = np.where(k < _ZOOM - 1, best - val[rows, kp], np.inf)
        h = (b[active] - a[active]) / (_ZOOM - 1)
        both = np.isfinite(dl) & np.isfinite(dr)
        one = np.where(np.isfinite(dl), dl, dr)
        curv = np.where(both, dl + dr, 2.0 * one)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(curv > 0, h / np.sqrt(curv), np.inf)
        w = np.clip(w, h, 10.0 * ctx.s[p])
        width[active] = np.where(np.isfinite(w), w, width[active])
        done = (np.minimum(dl, dr) < 0.05) | (h <= 1e-13 * (np.abs(mode[active]) + ctx.s[p]))
        a[active] = g[rows, km]
        b[active] = g[rows, kp]
        active = active[~done]
    return mode, mval, mlp, width
