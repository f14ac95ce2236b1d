"""Sequential EP / QP sweeps on a dense posterior covariance, with BLAS-3 (blocked) updates.

Updating site i (its new (tau_i, nu_i) from :func:`qpviz.inference.sites.site_step`) changes
the posterior N(mu, Sigma) by a rank-one update (R&W eq. 3.70; QP paper App. I eq. 128): with
s = Sigma[:, i] and the site change (dtau, dnu),

    c = dtau / (1 + dtau Sigma_ii),   Sigma <- Sigma - c s s^T,   mu <- mu + (dnu - c (mu_i + Sigma_ii dnu)) s.

Applied one at a time these are BLAS-2 passes over the N x N matrix, memory-bound: a sweep
then costs several N^3 / (matrix-product rate). Here the Sigma updates of a block of sites are
*delayed*: inside a block, site i's current column is the stored column minus the block's
pending updates, Sigma[:, i] - sum_b c_b s_b s_b[i] (O(N k) for k pending), and at the block's
end Sigma -= S^T diag(c) S is applied by BLAS ``dsyrk`` (in place, one triangle: N^2 k flops).
Only the lower triangle of Sigma is kept. The arithmetic is the same sequence of rank-one
updates; only where they are applied moves, so the fixed point is the rank-one path's (tests:
equal within 1e-10).

* :func:`sweep_sites` (numba): the site updates of a block (or of the whole order, applying
  blocks inside the kernel: small N, where one call beats a Python loop);
* :func:`sequential_sweep` (Python): the loop over blocks, with ``dsyrk`` for large N;
* :func:`sequential_sweep_reference` (NumPy): plain rank-one updates of the full matrix through
  :meth:`SiteRule.step`: the tests' reference, and the path for likelihoods without numba kernels.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from qpviz import config
from qpviz._blas import syrk_update_lower
from qpviz.config import NUMBA_OPTIONS
from qpviz.inference.sites import site_step

__all__ = ["SWEEP_BLOCK", "sweep_sites", "sweep_sites_closed", "sweep_sites_general", "sequential_sweep",
           "sequential_sweep_reference"]

#: Sites whose covariance updates are delayed and applied together (one dsyrk of rank <= 64).
SWEEP_BLOCK = 64


@njit(**NUMBA_OPTIONS)
def _column(cov, i, pending, coefs, t, out):
    """Column i of Sigma: the stored lower triangle (row i, then column i below the diagonal),
    minus the ``t`` pending updates c_b s_b s_b[i]."""
    n = out.shape[0]
    for j in range(i + 1):
        out[j] = cov[i, j]
    for j in range(i + 1, n):
        out[j] = cov[j, i]
    for b in range(t):
        w = coefs[b] * pending[b, i]
        if w != 0.0:
            for j in range(n):
                out[j] -= w * pending[b, j]


@njit(**NUMBA_OPTIONS)
def _apply_lower(cov, pending, coefs, t):
    """cov -= sum_b coefs[b] s_b s_b^T on the lower triangle, by loops (small N)."""
    n = cov.shape[0]
    for b in range(t):
        c = coefs[b]
        for j in range(n):
            w = c * pending[b, j]
            if w != 0.0:
                for k in range(j + 1):
                    cov[j, k] -= w * pending[b, k]


@njit(**NUMBA_OPTIONS)
def sweep_sites(cov, mean, tau, nu, y, order, start, method, lk, damping, coef, meta, log_z, status, pending,
                coefs, apply_inside, closed):
    """Update the sites order[start:], delaying the Sigma updates in ``pending`` / ``coefs``.

    ``apply_inside=False``: stop when ``pending`` is full (or the order ends) and return
    (next position, number of pending updates) for the caller to apply with BLAS.
    ``apply_inside=True``: go through the whole order, applying each full block here, and
    return (len(order), 0). ``mean``, ``tau``, ``nu``, ``log_z``, ``status`` change in place.
    ``closed``: EP by closed-form moments, a compile-time constant when called through
    :func:`sweep_sites_closed` / :func:`sweep_sites_general` (:mod:`qpviz.inference.sites`).
    """
    n = mean.shape[0]
    block = pending.shape[0]
    s = np.empty(n)
    t = 0
    pos = start
    while pos < order.shape[0]:
        i = order[pos]
        pos += 1
        _column(cov, i, pending, coefs, t, s)
        t_new, n_new, lz, st = site_step(method, lk, y[i], mean[i], s[i], tau[i], nu[i], damping, coef, meta, closed)
        log_z[i] = lz
        status[i] = st
        dtau = t_new - tau[i]
        dnu = n_new - nu[i]
        tau[i] = t_new
        nu[i] = n_new
        if dtau == 0.0 and dnu == 0.0:
            continue
        c = dtau / (1.0 + dtau * s[i])
        shift = dnu - c * (mean[i] + s[i] * dnu)
        for j in range(n):
            mean[j] += shift * s[j]
            pending[t, j] = s[j]
        coefs[t] = c
        t += 1
        if t == block:
            if not apply_inside:
                return pos, t
            _apply_lower(cov, pending, coefs, t)
            t = 0
    if apply_inside and t > 0:
        _apply_lower(cov, pending, coefs, t)
        t = 0
    return pos, t


@njit(**NUMBA_OPTIONS)
def sweep_sites_closed(cov, mean, tau, nu, y, order, start, method, lk, damping, coef, meta, log_z, status, pending,
                       coefs, apply_inside):
    """:func:`sweep_sites` compiled for EP by closed-form moments (no quadrature, no tables)."""
    return sweep_sites(cov, mean, tau, nu, y, order, start, method, lk, damping, coef, meta, log_z, status, pending,
                       coefs, apply_inside, True)


@njit(**NUMBA_OPTIONS)
def sweep_sites_general(cov, mean, tau, nu, y, order, start, method, lk, damping, coef, meta, log_z, status, pending,
                        coefs, apply_inside):
    """:func:`sweep_sites` for every rule (quadrature and tables where needed)."""
    return sweep_sites(cov, mean, tau, nu, y, order, start, method, lk, damping, coef, meta, log_z, status, pending,
                       coefs, apply_inside, False)


def _apply_blas(cov: np.ndarray, pending: np.ndarray, coefs: np.ndarray, t: int) -> None:
    """cov -= S^T diag(c) S (lower triangle) as two ``dsyrk``: the rows with c > 0 and c < 0,
    each scaled by sqrt(|c|)."""
    c = coefs[:t]
    scaled = np.sqrt(np.abs(c))[:, None] * pending[:t]
    syrk_update_lower(cov, np.ascontiguousarray(scaled[c > 0]), -1.0)
    syrk_update_lower(cov, np.ascontiguousarray(scaled[c < 0]), 1.0)


def sequential_sweep(cov: np.ndarray, mean: np.ndarray, tau: np.ndarray, nu: np.ndarray, y: np.ndarray,
                     order: np.ndarray, rule, log_z: np.ndarray, status: np.ndarray) -> None:
    """One sequential sweep over ``order`` (numba site updates; all arrays change in place).

    ``cov`` is C-ordered with its lower triangle valid. N >= :data:`qpviz.config.BLAS3_SWEEP_N`:
    blocks of :data:`SWEEP_BLOCK` applied by ``dsyrk``; below, one kernel call does everything.
    """
    method, handle, damping, coef, meta = rule.jit
    n = mean.shape[0]
    pending = np.empty((SWEEP_BLOCK, n))
    coefs = np.empty(SWEEP_BLOCK)
    order = np.ascontiguousarray(order, dtype=np.int64)
    inside = n < config.BLAS3_SWEEP_N
    kernel = sweep_sites_closed if rule.closed else sweep_sites_general
    pos = 0
    while pos < order.shape[0]:
        pos, t = kernel(cov, mean, tau, nu, y, order, pos, method, handle, damping, coef, meta, log_z, status,
                        pending, coefs, inside)
        if t:
            _apply_blas(cov, pending, coefs, t)


def sequential_sweep_reference(cov: np.ndarray, mean: np.ndarray, tau: np.ndarray, nu: np.ndarray, y: np.ndarray,
                               order: np.ndarray, rule, log_z: np.ndarray, status: np.ndarray) -> None:
    """The same sweep by plain rank-one updates of the full (symmetric) ``cov``, each site through
    :meth:`qpviz.inference.sites.SiteRule.step` (NumPy; every array changes in place)."""
    for i in np.asarray(order, np.int64):
        t_new, n_new, lz, st = (a.item() for a in rule.step(y[i], mean[i], cov[i, i], tau[i], nu[i]))
        log_z[i], status[i] = lz, st
        dtau, dnu = t_new - tau[i], n_new - nu[i]
        tau[i], nu[i] = t_new, n_new
        if dtau == 0.0 and dnu == 0.0:
            continue
        s = cov[:, i].copy()
        c = dtau / (1.0 + dtau * s[i])
        mean += (dnu - c * (mean[i] + s[i] * dnu)) * s
        cov -= c * np.outer(s, s)
