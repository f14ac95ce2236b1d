"""Inputs and per-point state of the NumPy tilted quadrature: checks, kinks, log q anchored at a mode.

:class:`Context` holds the flat (y, m, v) of every point and evaluates the user's ``log_prob``
on arrays of nodes (one call per stage level), raising on NaN or +inf; log densities are taken
relative to an anchor a (see :mod:`qpviz.tilted_numpy`).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["LOG_SQRT_2PI", "MAX_LEVELS", "float_array", "check_inputs", "kink_table", "Context"]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: levels of every adaptive loop (grid widening, zooms, bisections, bracketing)
MAX_LEVELS = 64


def float_array(x, name):
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (a number or an array of numbers), got {x!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got a NaN or infinite value")
    return arr


def check_inputs(log_prob, y, cavity_mean, cavity_var, kinks):
    if not callable(log_prob):
        raise ValueError(f"log_prob must be a callable log_prob(y, f); got {log_prob!r}")
    if kinks is not None and not callable(kinks):
        raise ValueError(f"kinks must be None or a callable kinks(y) returning break points; got {kinks!r}")
    y = float_array(y, "y")
    m = float_array(cavity_mean, "cavity_mean")
    v = float_array(cavity_var, "cavity_var")
    if np.any(v <= 0):
        raise ValueError(f"cavity_var must be > 0 (a Gaussian needs a positive variance); got min {v.min():g}")
    try:
        y, m, v = np.broadcast_arrays(y, m, v)
    except ValueError as exc:
        raise ValueError(f"y, cavity_mean and cavity_var do not broadcast: shapes {y.shape}, {m.shape}, {v.shape}") from exc
    return y, m, v


def kink_table(kinks, y_flat):
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


class Context:
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
