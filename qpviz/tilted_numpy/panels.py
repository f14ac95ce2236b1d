"""Stage 2 of the NumPy tilted quadrature: adaptive composite Gauss-Legendre panels.

:func:`build_panels` places break points (support ends, kinks, modes +- multiples of their
widths) and bisects panels breadth-first until each agrees with its halves; the sorted panels
carry their masses and the prefix / suffix sums that the CDF and sigma_QP stages read.
"""
from __future__ import annotations

import numpy as np
from numpy.polynomial import legendre

from qpviz.config import GL_NODES, QP_MAX_PANELS
from qpviz.tilted_numpy.context import MAX_LEVELS
from qpviz.tilted_numpy.locate import locate_mass

__all__ = ["gauss_legendre_rules", "GL_X", "GL_W", "GL_CUM", "GL_RCUM", "panel_nodes", "panel_values", "adaptive_mass",
           "build_panels"]

#: multiples of a mode's width used as initial break points
_BREAK_MULTIPLES = np.array([0.0, 2.0, 6.0, 16.0, 40.0])


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


GL_X, GL_W, GL_CUM, GL_RCUM = gauss_legendre_rules(GL_NODES)


def panel_nodes(a, b):
    half = 0.5 * (b - a)
    return 0.5 * (a + b)[:, None] + half[:, None] * GL_X[None, :], half


def panel_values(ctx, owner, a, b):
    f, half = panel_nodes(a, b)
    vals = ctx.density(owner[:, None], f)
    return vals, half * (vals @ GL_W)


def adaptive_mass(ctx, owner, a, b, n_owner, rel_tol):
    """Bisect panels breadth-first until each panel and its halves agree to rel_tol of the
    owner's mass and to 100 rel_tol of the panel's own mass. Returns the final panels (owner, a, b, vals, mass) and ok per owner."""
    vals, mass = panel_values(ctx, owner, a, b)
    total = np.bincount(owner, mass, minlength=n_owner)
    ok = np.ones(n_owner, dtype=bool)
    out = [[], [], [], [], []]
    count = np.bincount(owner, minlength=n_owner)
    for level in range(MAX_LEVELS + 1):
        if owner.size == 0:
            break
        mid = 0.5 * (a + b)
        o2 = np.concatenate([owner, owner])
        a2 = np.concatenate([a, mid])
        b2 = np.concatenate([mid, b])
        v2, m2 = panel_values(ctx, o2, a2, b2)
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
        last = level == MAX_LEVELS
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


def build_panels(ctx, kink_tab, rel_tol):
    """Locate and integrate: the sorted panels of every point, and ok flags."""
    n = ctx.m.size
    lo, hi, mpt, mode, width, ok_loc = locate_mass(ctx, kink_tab)
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
    panels, ok = adaptive_mass(ctx, owner, a, b, n, rel_tol * 1e-2)
    return _sort_panels(panels, n), ok & ok_loc
