"""Moments (stage 2) and sigma_QP (stage 3, QP paper eq. 7) of the NumPy tilted quadrature: tilted_summary."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from qpviz.config import QP_REL_TOL
from qpviz.tilted_numpy.context import LOG_SQRT_2PI, MAX_LEVELS, Context, check_inputs, kink_table
from qpviz.tilted_numpy.panels import GL_CUM, GL_RCUM, GL_W, build_panels, panel_nodes, panel_values

__all__ = ["TiltedSummaryNumpy", "tilted_summary"]

#: parts a failing panel of the sigma_QP pass is cut into
_QP_SPLIT = 2


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


def _moments(ctx, P):
    owner, half = P["owner"], 0.5 * (P["b"] - P["a"])
    n = ctx.m.size
    total = P["total"]
    f, _ = panel_nodes(P["a"], P["b"])
    wv = P["vals"] * GL_W[None, :] * half[:, None]
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
    entropy = np.log(total) - np.bincount(owner, (vlogv * GL_W[None, :] * half[:, None]).sum(axis=1), minlength=n) / total
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
    cum = half[:, None] * (vals @ GL_CUM.T)
    rcum = half[:, None] * (vals @ GL_RCUM.T)
    lower = (left[:, None] + np.maximum(cum, 0.0)) / total[:, None]
    upper = (right[:, None] + np.maximum(rcum, 0.0)) / total[:, None]
    return half * (_phi_ndtri(np.minimum(np.minimum(lower, upper), 0.5)) @ GL_W)


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
    for level in range(MAX_LEVELS + 1):
        if owner.size == 0:
            break
        k = owner.size
        edges = a[None, :] + (b - a)[None, :] * frac[:, None]  # (parts + 1, k)
        o2 = np.tile(owner, parts)
        a2 = edges[:-1].ravel()
        b2 = edges[1:].ravel()
        v2, m2 = panel_values(ctx, o2, a2, b2)
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
        last = level == MAX_LEVELS
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
    y, m, v = check_inputs(log_prob, y, cavity_mean, cavity_var, kinks)
    rel_tol = QP_REL_TOL if rel_tol is None else float(rel_tol)
    if not (0.0 < rel_tol < 1.0):
        raise ValueError(f"rel_tol must be in (0, 1); got {rel_tol!r}")
    shape = y.shape
    ctx = Context(log_prob, y.ravel().copy(), m.ravel().copy(), v.ravel().copy())
    if ctx.m.size == 0:
        empty = np.empty(shape)
        return TiltedSummaryNumpy(empty, empty.copy(), empty.copy(), empty.copy(), np.empty(shape, bool), empty.copy())
    P, ok = build_panels(ctx, kink_table(kinks, ctx.y), rel_tol)
    log_z, mean, var, entropy = _moments(ctx, P)
    sigma = np.full(ctx.m.size, np.nan)
    if want_qp:
        std = np.sqrt(var)
        sigma, ok_qp = _qp_std(ctx, P, std, rel_tol)
        ok = ok & ok_qp
        sigma = np.minimum(sigma, std)  # Theorem 2 holds exactly; rounding may not break it
    return TiltedSummaryNumpy(log_z.reshape(shape), mean.reshape(shape), var.reshape(shape),
                              sigma.reshape(shape), ok.reshape(shape), entropy.reshape(shape))
