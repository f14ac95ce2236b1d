"""Sequential Power-EP / QP sweeps on a sparse prior
(:meth:`qpviz.inference.sparse_prior.SparsePrior.sequential_sweep`): sites one after the other, each by an O(M^2) rank-one update of the whitened posterior
(Sigma_v, m_v); numba kernels (:func:`sparse_sweep_sites`) and the NumPy reference the tests and
the likelihoods without numba kernels use (:func:`sequential_sweep_reference`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.inference.sites import power_site_step
from qpviz.inference.sparse_columns import VAR_FLOOR

__all__ = ["sparse_sweep_sites", "sparse_sweep_sites_closed", "sparse_sweep_sites_general",
           "sequential_sweep_reference"]


@njit(**NUMBA_OPTIONS)
def sparse_sweep_sites(Wt, cond_var, cov, mean_v, tau, nu, y, order, method, lk, damping, coef, meta, log_z, status,
                       closed):
    """Power-EP / QP site updates in ``order`` on (Sigma_v, m_v) (all arrays change in place).

    Site n: s = Sigma_v w_n, Var h_n = w_n^T s, E h_n = w_n^T m_v; the rule
    (:func:`qpviz.inference.sites.power_site_step`) gives (dtau, dnu), then (R&W eq. 3.70 in v):
    c = dtau / (1 + dtau Var h_n), Sigma_v -= c s s^T, m_v += (dnu - c (E h_n + Var h_n dnu)) s.
    """
    m = cov.shape[0]
    s = np.empty(m)
    for pos in range(order.shape[0]):
        i = order[pos]
        var_h = 0.0
        mean_h = 0.0
        for a in range(m):
            acc = 0.0
            for b in range(m):
                acc += cov[a, b] * Wt[i, b]
            s[a] = acc
            var_h += Wt[i, a] * acc
            mean_h += Wt[i, a] * mean_v[a]
        var_h = max(var_h, VAR_FLOOR)
        t_new, n_new, lz, st = power_site_step(method, lk, y[i], mean_h, var_h, tau[i], nu[i], damping, coef, meta,
                                               closed, cond_var[i])
        log_z[i] = lz
        status[i] = st
        dtau = t_new - tau[i]
        dnu = n_new - nu[i]
        tau[i] = t_new
        nu[i] = n_new
        if dtau == 0.0 and dnu == 0.0:
            continue
        c = dtau / (1.0 + dtau * var_h)
        shift = dnu - c * (mean_h + var_h * dnu)
        for a in range(m):
            mean_v[a] += shift * s[a]
            cs = c * s[a]
            for b in range(m):
                cov[a, b] -= cs * s[b]


@njit(**NUMBA_OPTIONS)
def sparse_sweep_sites_closed(Wt, cond_var, cov, mean_v, tau, nu, y, order, method, lk, damping, coef, meta, log_z,
                              status):
    """:func:`sparse_sweep_sites` compiled for EP by closed-form moments."""
    sparse_sweep_sites(Wt, cond_var, cov, mean_v, tau, nu, y, order, method, lk, damping, coef, meta, log_z, status,
                       True)


@njit(**NUMBA_OPTIONS)
def sparse_sweep_sites_general(Wt, cond_var, cov, mean_v, tau, nu, y, order, method, lk, damping, coef, meta, log_z,
                               status):
    """:func:`sparse_sweep_sites` for every rule (quadrature and tables where needed)."""
    sparse_sweep_sites(Wt, cond_var, cov, mean_v, tau, nu, y, order, method, lk, damping, coef, meta, log_z, status,
                       False)


def sequential_sweep_reference(Wt, cond_var, cov, mean_v, tau, nu, y, order, rule, log_z, status) -> None:
    """:func:`sparse_sweep_sites` in NumPy, each site through :meth:`SiteRule.step` (step 3' literally):
    the tests' reference and the path for likelihoods without numba kernels."""
    for i in np.asarray(order, np.int64):
        w = Wt[i]
        s = cov @ w
        var_h, mean_h = max(float(w @ s), VAR_FLOOR), float(w @ mean_v)
        t_new, n_new, lz, st = (a.item() for a in rule.step(y[i], mean_h, var_h, tau[i], nu[i], cond_var=cond_var[i]))
        log_z[i], status[i] = lz, st
        dtau, dnu = t_new - tau[i], n_new - nu[i]
        tau[i], nu[i] = t_new, n_new
        if dtau == 0.0 and dnu == 0.0:
            continue
        c = dtau / (1.0 + dtau * var_h)
        mean_v += (dnu - c * (mean_h + var_h * dnu)) * s
        cov -= c * np.outer(s, s)
