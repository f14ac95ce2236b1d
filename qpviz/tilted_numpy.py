"""Pure-NumPy adaptive quadrature of 1-D tilted distributions q(f) = p(y|f) N(f|m, v) / Z.

The engine needs only a vectorised ``log_prob(y, f)`` (and, optionally, the break points
``kinks(y)`` where log p is not smooth), so it serves likelihoods that users write in Python; it
is also the NumPy reference the numba engine (:mod:`qpviz.tilted`) can be checked against.

Everything is vectorised over the points (y, m, v) and over the quadrature panels: each stage
below is a short loop over *levels*, and each level makes one ``log_prob`` call on a flat array
of nodes of all points and all panels.

1. Locate the mass (no derivatives needed). A grid over m +- 10 s (s = sqrt v), plus points at
   and next to the kinks, is widened until log q at both ends lies ``TAIL_LOG_DROP`` nats below
   the grid's peak. Every local maximum of the grid within that range is zoomed (a 9-point grid
   on the two neighbouring cells, repeated) until the peak is resolved; the curvature of the last
   grid gives a width w. The support is trimmed to the grid cells that carry mass.
2. Pass 1: composite Gauss-Legendre panels (``GL_NODES`` nodes) between break points (the
   kinks, each mode and mode +- 2w, 6w, 16w, 40w); breadth-first bisection until each panel and
   its two halves agree to ``rel_tol * 1e-2`` of the mass. log Z, mean and variance follow.
   Log densities are relative to an anchor a (the highest mode):
   log q(f) - log q(a) = log p(y|f) - log p(y|a) - (f - a)(f + a - 2m) / 2v, which does not
   cancel when a lies many cavity widths from m.
3. Pass 2 (sigma_QP, QP paper eq. 7): F at the nodes is the mass of the panels to the left
   plus a spectral (Legendre) cumulative integral inside the panel, and the survival function
   S is the mass to the right plus the spectral integral to the panel's right end, so
   phi(Phi^-1(min(F, S))) never suffers 1 - F cancellation. Panels are bisected again until the
   integral of that integrand settles (it behaves like F sqrt(2 log 1/F) at a hard truncation).
4. CDF and quantiles: F(x) = (mass left of x's panel + GL on [a_k, x]) / Z and
   S(x) = (mass right of the panel + GL on [x, b_k]) / Z; outside the support the tail
   int_{-inf}^x q (or int_x^inf q) is its own adaptive integral, relative to q(x), so the far
   tails keep their relative accuracy. Quantiles solve log F(x) = log u (or log S(x) = log(1 - u)
   for u > 1/2) by safeguarded Newton.

Nothing is silent: panels or levels running out set ``ok = False``; NaN or +inf from
``log_prob``, and invalid cavities, raise ``ValueError``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import legendre
from scipy import special

from qpviz.config import GL_NODES, QP_MAX_PANELS, QP_REL_TOL, TAIL_LOG_DROP

__all__ = ["TiltedSummaryNumpy", "tilted_summary", "tilted_cdf", "tilted_quantile", "gauss_legendre_rules"]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: grid points over the cavity (m +- 10 s) for locating the mass
_GRID = 33
#: points per zoom grid around a local maximum
_ZOOM = 9
#: local maxima zoomed per point (highest first)
_MAX_MODES = 4
#: multiples of a mode's width used as initial break points
_BREAK_MULTIPLES = np.array([0.0, 2.0, 6.0, 16.0, 40.0])
_MAX_LEVELS = 64
#: parts a failing panel of the sigma_QP pass is cut into
_QP_SPLIT = 2


def gauss_legendre_rules(n: int):
    """Nodes x, weights w of n-point Gauss-Legendre on [-1, 1] and its cumulative matrices.

    With L_l the Lagrange basis of the nodes, ``cum[j, l] = int_{-1}^{x_j} L_l`` and
    ``rcum[j, l] = int_{x_j}^{1} L_l``: exact for polynomials of degree < n. L_l has the Legendre
    expansion w_l sum_k (k + 1/2) P_k(x_l) P_k(t) (GL is exact to degree 2n - 1), and
    int_{-1}^x P_k = (P_{k+1}(x) - P_{k-1}(x)) / (2k + 1) for k >= 1.
    """
    x, w = legendre.leggauss(n)
    vander = legendre.legvander(x, n)  # P_0 .. P_n at the nodes
    diff = vander[:, 2:n + 1] - vander[:, 0:n - 1]  # P_{k+1} - P_{k-1}, k = 1 .. n-1
    series = 0.5 * diff @ vander[:, 1:n].T  # [j, l]
    cum = w[None, :] * (0.5 * (x[:, None] + 1.0) + series)
    rcum = w[None, :] * (0.5 * (1.0 - x[:, None]) - series)
    return x, w, cum, rcum


_X, _W, _CUM, _RCUM = gauss_legendre_rules(GL_NODES)


@dataclass(frozen=True)
class TiltedSummaryNumpy:
    """log Z, mean, variance and sigma_QP of tilted distributions (arrays); ``ok`` is True where
    every adaptive stage met its tolerance."""

    log_z: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    qp_std: np.ndarray
    ok: np.ndarray
    entropy: np.ndarray  # -int q log q (for KL to a Gaussian)


# -- input handling --------------------------------------------------------------------------
def _float_array(x, name):
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (a number or an array of numbers), got {x!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got a NaN or infinite value")
    return arr


def _inputs(log_prob, y, cavity_mean, cavity_var, kinks):
    if not callable(log_prob):
        raise ValueError(f"log_prob must be a callable log_prob(y, f); got {log_prob!r}")
    if kinks is not None and not callable(kinks):
        raise ValueError(f"kinks must be None or a callable kinks(y) returning break points; got {kinks!r}")
    y = _float_array(y, "y")
    m = _float_array(cavity_mean, "cavity_mean")
    v = _float_array(cavity_var, "cavity_var")
    if np.any(v <= 0):
        raise ValueError(f"cavity_var must be > 0 (a Gaussian needs a positive variance); got min {v.min():g}")
    try:
        y, m, v = np.broadcast_arrays(y, m, v)
    except ValueError as exc:
        raise ValueError(f"y, cavity_mean and cavity_var do not broadcast: shapes {y.shape}, {m.shape}, {v.shape}") from exc
    return y, m, v


def _kink_table(kinks, y_flat):
    """(N, K) array of break points per point (NaN-padded), from kinks(y) per distinct y."""
    n = y_flat.size
    if kinks is None:
        return np.full((n, 0), np.nan)
    uniq, inverse = np.unique(y_flat, return_inverse=True)
    rows = []
    for yu in uniq:
        k = np.asarray(kinks(yu), dtype=np.float64).ravel()
        k = k[np.isfinite(k)]
        rows.append(np.unique(k))
    width = max((r.size for r in rows), default=0)
    table = np.full((uniq.size, width), np.nan)
    for i, r in enumerate(rows):
        table[i, : r.size] = r
    return table[inverse.ravel()]


class _Context:
    """Per-point data: y, m, v (flat), anchor a and the shift log p(y|a) of the log densities."""

    def __init__(self, log_prob, y, m, v):
        self.log_prob = log_prob
        self.y = y
        self.m = m
        self.v = v
        self.s = np.sqrt(v)
        self.anchor = m.copy()
        self.shift = np.zeros_like(m)
        self.calls = 0

    def lp(self, idx, f):
        """log p(y[idx], f) for an index array ``idx`` broadcast against f."""
        f = np.asarray(f, dtype=np.float64)
        yy = np.broadcast_to(self.y[idx], np.broadcast_shapes(np.shape(idx), f.shape))
        shape = yy.shape
        if f.shape != shape:
            f = np.broadcast_to(f, shape)
        with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
            out = self.log_prob(yy.ravel(), f.ravel())
        self.calls += 1
        out = np.asarray(out, dtype=np.float64)
        if out.size != yy.size:
            raise ValueError(
                f"log_prob(y, f) must broadcast y and f elementwise; for {yy.size} inputs it returned shape {out.shape}"
            )
        out = out.reshape(shape)
        bad = np.isnan(out) | (out == np.inf)
        if np.any(bad):
            j = np.flatnonzero(bad.ravel())[0]
            raise ValueError(
                f"log_prob(y, f) returned {out.ravel()[j]} at y={yy.ravel()[j]!r}, f={f.ravel()[j]!r}; "
                "it must return a finite log density or -inf (zero density)"
            )
        return out

    def logq_cavity(self, idx, f):
        """(log p, log p - (f - m)^2 / 2v): log q up to a constant, anchored at the cavity mean."""
        lp = self.lp(idx, f)
        d = f - self.m[idx]
        return lp, lp - 0.5 * d * d / self.v[idx]

    def logq(self, idx, f):
        """log q(f) - log q(anchor) (factored cavity term; see the module docstring)."""
        a = self.anchor[idx]
        quad = 0.5 * (f - a) * (f + a - 2.0 * self.m[idx]) / self.v[idx]
        return self.lp(idx, f) - self.shift[idx] - quad

    def density(self, idx, f):
        with np.errstate(under="ignore"):
            return np.exp(self.logq(idx, f))


# -- 1. locating the mass --------------------------------------------------------------------
def _sorted_rows(g, val, lp):
    order = np.argsort(g, axis=1, kind="stable")
    return (np.take_along_axis(g, order, 1), np.take_along_axis(val, order, 1),
            np.take_along_axis(lp, order, 1))


def _locate(ctx: _Context, kink_tab: np.ndarray):
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
    for _ in range(_MAX_LEVELS):
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
    for _ in range(_MAX_LEVELS):
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


# -- 2. adaptive Gauss-Legendre panels -------------------------------------------------------
def _nodes(a, b):
    half = 0.5 * (b - a)
    return 0.5 * (a + b)[:, None] + half[:, None] * _X[None, :], half


def _panel_values(ctx, owner, a, b):
    f, half = _nodes(a, b)
    vals = ctx.density(owner[:, None], f)
    return vals, half * (vals @ _W)


def _adaptive_mass(ctx, owner, a, b, n_owner, rel_tol):
    """Bisect panels breadth-first until each panel and its halves agree to rel_tol of the
    owner's mass and to 100 rel_tol of the panel's own mass. Returns the final panels (owner, a, b, vals, mass) and ok per owner."""
    vals, mass = _panel_values(ctx, owner, a, b)
    total = np.bincount(owner, mass, minlength=n_owner)
    ok = np.ones(n_owner, dtype=bool)
    out = [[], [], [], [], []]
    count = np.bincount(owner, minlength=n_owner)
    for level in range(_MAX_LEVELS + 1):
        if owner.size == 0:
            break
        mid = 0.5 * (a + b)
        o2 = np.concatenate([owner, owner])
        a2 = np.concatenate([a, mid])
        b2 = np.concatenate([mid, b])
        v2, m2 = _panel_values(ctx, o2, a2, b2)
        k = owner.size
        ml, mr = m2[:k], m2[k:]
        err = np.abs(ml + mr - mass)
        scale = np.abs(a) + np.abs(b) + ctx.s[owner]
        tiny = (b - a) <= 1e-13 * scale
        # relative to the point's mass, and to the panel's own mass so that tail probabilities
        # (sums of small panels) keep their relative accuracy
        tol = np.minimum(rel_tol * total[owner], 1e2 * rel_tol * np.abs(ml + mr))
        conv = (err <= np.maximum(tol, 1e-300 * total[owner])) | tiny
        full = count[owner] >= QP_MAX_PANELS
        last = level == _MAX_LEVELS
        stop = conv | full | last
        if np.any(stop & ~conv):
            ok[owner[stop & ~conv]] = False
        both = np.concatenate([stop, stop])
        out[0].append(o2[both])
        out[1].append(a2[both])
        out[2].append(b2[both])
        out[3].append(v2[both])
        out[4].append(m2[both])
        go = np.concatenate([~stop, ~stop])
        # the total follows the refined masses (the first estimate may be far off)
        total = total + np.bincount(owner, ml + mr - mass, minlength=n_owner)
        count = count + np.bincount(owner[~stop], minlength=n_owner)
        owner, a, b, vals, mass = o2[go], a2[go], b2[go], v2[go], m2[go]
    return tuple(np.concatenate(x) for x in out), ok


def _sort_panels(panels, n_owner):
    """Sort panels by (owner, a); exclusive prefix (mass to the left) and suffix (to the right)
    sums per owner without cross-owner cancellation (a padded 2-D cumsum)."""
    owner, a, b, vals, mass = panels
    order = np.lexsort((a, owner))
    owner, a, b, vals, mass = owner[order], a[order], b[order], vals[order], mass[order]
    count = np.bincount(owner, minlength=n_owner)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    pos = np.arange(owner.size) - start[owner]
    width = max(int(count.max()) if count.size else 0, 1)
    grid = np.zeros((n_owner, width + 1))
    grid[owner, pos] = mass
    left = np.zeros_like(grid)
    left[:, 1:] = np.cumsum(grid[:, :-1], axis=1)
    right = np.zeros_like(grid)
    right[:, :-1] = np.cumsum(grid[:, :0:-1], axis=1)[:, ::-1]
    prefix = left[owner, pos]
    suffix = right[owner, pos]
    total = left[np.arange(n_owner), count]
    return dict(owner=owner, a=a, b=b, vals=vals, mass=mass, prefix=prefix, suffix=suffix, total=total,
                start=start, count=count)


def _build(ctx, kink_tab, rel_tol):
    """Locate and integrate: the sorted panels of every point, and ok flags."""
    n = ctx.m.size
    lo, hi, mpt, mode, width, ok_loc = _locate(ctx, kink_tab)
    # break points: support ends, kinks inside, modes +- multiples of their widths
    mults = np.concatenate([_BREAK_MULTIPLES, -_BREAK_MULTIPLES[1:]])
    pts = [np.repeat(np.arange(n), 2), np.column_stack([lo, hi]).ravel()]
    kpt, kcol = np.nonzero(np.isfinite(kink_tab))
    brk_pt = [pts[0], kpt, np.repeat(mpt, mults.size)]
    brk_x = [pts[1], kink_tab[kpt, kcol], (mode[:, None] + width[:, None] * mults[None, :]).ravel()]
    bp = np.concatenate(brk_pt)
    bx = np.concatenate(brk_x)
    inside = (bx >= lo[bp]) & (bx <= hi[bp])
    bp, bx = bp[inside], bx[inside]
    order = np.lexsort((bx, bp))
    bp, bx = bp[order], bx[order]
    same = bp[1:] == bp[:-1]
    gap = bx[1:] - bx[:-1]
    scale = np.abs(bx[1:]) + ctx.s[bp[1:]]
    use = same & (gap > 1e-13 * scale)
    owner = bp[1:][use]
    a = bx[:-1][use]
    b = bx[1:][use]
    panels, ok = _adaptive_mass(ctx, owner, a, b, n, rel_tol * 1e-2)
    return _sort_panels(panels, n), ok & ok_loc


def _moments(ctx, P):
    owner, half = P["owner"], 0.5 * (P["b"] - P["a"])
    n = ctx.m.size
    total = P["total"]
    f, _ = _nodes(P["a"], P["b"])
    wv = P["vals"] * _W[None, :] * half[:, None]
    # first moment about the anchor (near the mass), then centred second moment
    d = f - ctx.anchor[owner][:, None]
    mean_off = np.bincount(owner, (wv * d).sum(axis=1), minlength=n) / total
    mean = ctx.anchor + mean_off
    c = f - mean[owner][:, None]
    var = np.bincount(owner, (wv * c * c).sum(axis=1), minlength=n) / total
    log_z = (np.log(total) + ctx.shift - 0.5 * (ctx.anchor - ctx.m) ** 2 / ctx.v - 0.5 * np.log(ctx.v) - LOG_SQRT_2PI)
    # q = vals / total on the nodes (vals are relative to the peak), so -int q log q = log total - int vals log vals / total
    with np.errstate(divide="ignore", invalid="ignore"):
        vlogv = np.where(P["vals"] > 0.0, P["vals"] * np.log(P["vals"]), 0.0)
    entropy = np.log(total) - np.bincount(owner, (vlogv * _W[None, :] * half[:, None]).sum(axis=1), minlength=n) / total
    return log_z, mean, var, entropy


# -- 3. sigma_QP -----------------------------------------------------------------------------
def _phi_ndtri(p):
    """phi(Phi^-1(p)) for p in [0, 1/2] (0 below 1e-300)."""
    small = p <= 1e-300
    with np.errstate(divide="ignore", under="ignore"):
        x = special.ndtri(np.where(small, 0.5, p))
        out = np.exp(-0.5 * x * x - LOG_SQRT_2PI)
    return np.where(small, 0.0, out)


def _qp_piece(vals, half, left, right, total):
    """int over a panel of phi(Phi^-1(min(F, S))) from node values and the masses outside."""
    cum = half[:, None] * (vals @ _CUM.T)
    rcum = half[:, None] * (vals @ _RCUM.T)
    lower = (left[:, None] + np.maximum(cum, 0.0)) / total[:, None]
    upper = (right[:, None] + np.maximum(rcum, 0.0)) / total[:, None]
    return half * (_phi_ndtri(np.minimum(np.minimum(lower, upper), 0.5)) @ _W)


def _qp_std(ctx, P, std, rel_tol):
    n = ctx.m.size
    owner, a, b = P["owner"], P["a"], P["b"]
    total = P["total"]
    left, right = P["prefix"], P["suffix"]
    whole = _qp_piece(P["vals"], 0.5 * (b - a), left, right, total[owner])
    span = np.zeros(n)
    np.add.at(span, owner, b - a)
    abs_tol = rel_tol * std
    sigma = np.zeros(n)
    ok = np.ones(n, dtype=bool)
    # failing panels are cut in _QP_SPLIT equal parts (the integrand's F sqrt(2 log 1/F) end
    # at a hard truncation needs many levels; quarters halve their number)
    parts = _QP_SPLIT
    frac = np.arange(parts + 1) / parts
    for level in range(_MAX_LEVELS + 1):
        if owner.size == 0:
            break
        k = owner.size
        edges = a[None, :] + (b - a)[None, :] * frac[:, None]  # (parts + 1, k)
        o2 = np.tile(owner, parts)
        a2 = edges[:-1].ravel()
        b2 = edges[1:].ravel()
        v2, m2 = _panel_values(ctx, o2, a2, b2)
        mp = m2.reshape(parts, k)
        before = np.zeros_like(mp)
        before[1:] = np.cumsum(mp[:-1], axis=0)
        after = np.zeros_like(mp)
        after[:-1] = np.cumsum(mp[:0:-1], axis=0)[::-1]
        l2 = (left[None, :] + before).ravel()
        r2 = (right[None, :] + after).ravel()
        i2 = _qp_piece(v2, 0.5 * (b2 - a2), l2, r2, total[o2])
        pieces = i2.reshape(parts, k).sum(axis=0)
        err = np.abs(pieces - whole)
        tiny = (b - a) <= 1e-13 * (np.abs(a) + np.abs(b) + ctx.s[owner])
        conv = (err <= abs_tol[owner] * (b - a) / span[owner]) | tiny
        last = level == _MAX_LEVELS
        if last and np.any(~conv):
            ok[owner[~conv]] = False
        stop = conv | last
        np.add.at(sigma, owner[stop], pieces[stop])
        go = np.tile(~stop, parts)
        owner, a, b, left, right, whole = o2[go], a2[go], b2[go], l2[go], r2[go], i2[go]
    return sigma, ok


# -- public API ------------------------------------------------------------------------------
def tilted_summary(log_prob, y, cavity_mean, cavity_var, *, kinks=None, want_qp=True, rel_tol=None):
    """log Z, mean, variance and sigma_QP (QP paper eq. 7) of q(f) = p(y|f) N(f|m, v) / Z.

    ``log_prob(y, f)`` is a vectorised NumPy log p(y|f) (-inf allowed); ``kinks(y)`` optionally
    returns the f where log p is not smooth. Inputs broadcast; ``rel_tol`` defaults to
    ``qpviz.config.QP_REL_TOL``. ``qp_std`` is NaN when ``want_qp`` is False.
    """
    y, m, v = _inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    rel_tol = QP_REL_TOL if rel_tol is None else float(rel_tol)
    if not (0.0 < rel_tol < 1.0):
        raise ValueError(f"rel_tol must be in (0, 1); got {rel_tol!r}")
    shape = y.shape
    ctx = _Context(log_prob, y.ravel().copy(), m.ravel().copy(), v.ravel().copy())
    if ctx.m.size == 0:
        empty = np.empty(shape)
        return TiltedSummaryNumpy(empty, empty.copy(), empty.copy(), empty.copy(), np.empty(shape, bool), empty.copy())
    P, ok = _build(ctx, _kink_table(kinks, ctx.y), rel_tol)
    log_z, mean, var, entropy = _moments(ctx, P)
    sigma = np.full(ctx.m.size, np.nan)
    if want_qp:
        std = np.sqrt(var)
        sigma, ok_qp = _qp_std(ctx, P, std, rel_tol)
        ok = ok & ok_qp
        sigma = np.minimum(sigma, std)  # Theorem 2 holds exactly; rounding may not break it
    return TiltedSummaryNumpy(log_z.reshape(shape), mean.reshape(shape), var.reshape(shape),
                              sigma.reshape(shape), ok.reshape(shape), entropy.reshape(shape))


# -- 4. CDF and quantiles --------------------------------------------------------------------
def _panel_table(P, n):
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
    sub = _Context(ctx.log_prob, ctx.y[owner], ctx.m[owner], ctx.v[owner])
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
    for _ in range(_MAX_LEVELS):
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
    panels, ok_p = _adaptive_mass(sub, owner_p, lo_e, hi_e, q, QP_REL_TOL * 1e-2)
    mass = np.bincount(panels[0], panels[4], minlength=q)
    ell = ctx.logq(owner, x)  # log q(x) relative to the owner's anchor
    with np.errstate(divide="ignore"):
        out[live] = np.log(mass[live]) + ell[live]
    return out, ok & ok_p


def _with_tails(ctx, P, table, hi):
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


def _log_mass(ctx, P, table, hi, owner, x, lower):
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
            f, half = _nodes(P["a"][kk], x[ii])
            base = P["prefix"][kk]
        else:
            f, half = _nodes(x[ii], P["b"][kk])
            base = P["suffix"][kk]
        part = half * (ctx.density(owner[ii][:, None], f) @ _W)
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
    x = _float_array(x, "x")
    y, m, v = _inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    x, y, m, v = np.broadcast_arrays(x, y, m, v)
    shape = x.shape
    if x.size == 0:
        return np.empty(shape)
    trip = np.column_stack([y.ravel(), m.ravel(), v.ravel()])
    uniq, inverse = np.unique(trip, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    ctx = _Context(log_prob, uniq[:, 0].copy(), uniq[:, 1].copy(), uniq[:, 2].copy())
    P, _ = _build(ctx, _kink_table(kinks, ctx.y), QP_REL_TOL)
    table, hi = _panel_table(P, ctx.m.size)
    P = _with_tails(ctx, P, table, hi)
    log_mass, _ = _log_mass(ctx, P, table, hi, inverse, x.ravel().copy(), not upper)
    with np.errstate(under="ignore"):
        out = np.exp(log_mass - np.log(P["total"][inverse]))
    return np.minimum(out, 1.0).reshape(shape)


def tilted_quantile(log_prob, u, y, cavity_mean, cavity_var, *, kinks=None):
    """F^-1(u) of one tilted distribution (scalar y, cavity_mean, cavity_var), for probabilities
    ``u`` in [0, 1] (u = 0 and 1 give the ends of the numerical support).

    Safeguarded Newton on log F(x) = log u for u <= 1/2 and on log S(x) = log(1 - u) above, so
    both tails keep their relative accuracy."""
    u = _float_array(u, "u")
    if np.any((u < 0) | (u > 1)):
        raise ValueError("u must lie in [0, 1]")
    y, m, v = _inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    if y.ndim != 0:
        raise ValueError("tilted_quantile takes one tilted distribution: scalar y, cavity_mean, cavity_var")
    ctx = _Context(log_prob, y.reshape(1), m.reshape(1), v.reshape(1))
    P, _ = _build(ctx, _kink_table(kinks, ctx.y), QP_REL_TOL)
    table, hi = _panel_table(P, 1)
    P = _with_tails(ctx, P, table, hi)
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
        beyond = target < _log_mass(ctx, P, table, hi, owner, xl, True)[0]
        xl = np.where(beyond, xl - span, xl)
        xr = np.where(beyond, a[0], xr)
    else:
        beyond = target < _log_mass(ctx, P, table, hi, owner, xr, False)[0]
        xr = np.where(beyond, xr + span, xr)
        xl = np.where(beyond, hi[0], xl)
    for _ in range(_MAX_LEVELS):
        idx = np.flatnonzero(beyond)
        if idx.size == 0:
            break
        probe = xl[idx] if lower else xr[idx]
        g = _log_mass(ctx, P, table, hi, owner[idx], probe, lower)[0]
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
        g, _ = _log_mass(ctx, P, table, hi, owner[active], xa, lower)
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
