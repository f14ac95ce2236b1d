"""Elliptical slice sampling transitions (Murray, Adams and MacKay 2010): the numba kernels and
their NumPy reference.

The target is N(f | centre, L L^T) prod_i p(y_i | f_i)^beta / t_i(f_i) with sites
t_i(f) = exp(-tau_i f^2 / 2 + nu_i f) (tau = nu = 0, centre = 0: the prior N(0, K) times the
likelihood). One transition from f: draw nu = L z (z ~ N(0, I)), a level
log u = log ratio(f) + log U(0,1) and an angle theta ~ U(0, 2 pi) with bracket
[theta - 2 pi, theta]; propose f' = centre + (f - centre) cos theta + nu sin theta, accept if
log ratio(f') > log u, otherwise shrink the bracket towards 0 and redraw theta. Every proposal
stays on the ellipse through f and nu, so no step size is tuned.

The shrink loop is bounded (:data:`MAX_SHRINKS`): a transition that has not found an accepted
angle by then stays at f (still reversible: a move through k shrinks has a reverse move of k
shrinks with the same probability, and the rest of the mass stays put) and is counted.

:func:`ess_block` runs a block of transitions in numba (:mod:`qpviz.inference.mcmc` calls it
between checks of cancel and the time budget), :func:`ess_block_numpy` the same in NumPy for a
Python log-likelihood; :func:`elliptical_slice_chain` and :func:`elliptical_slice_chain_numpy`
run one whole chain.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from qpviz.config import NUMBA_OPTIONS
from qpviz._jit import lk_log_prob

__all__ = ["MAX_SHRINKS", "log_lik_total", "log_ratio", "ess_step_into", "ess_block", "ess_block_numpy",
           "elliptical_slice_chain", "elliptical_slice_chain_numpy"]

#: Bracket shrinks per transition before it gives up and stays at f (a hard constraint whose
#: accepted arc is narrower than 2 pi 2^-100 cannot occur for a start inside the support).
MAX_SHRINKS = 100


@njit(**NUMBA_OPTIONS)
def log_lik_total(lk, y, f):
    """sum_i log p(y_i | f_i) by the numba likelihood handle ``lk``."""
    total = 0.0
    for i in range(f.shape[0]):
        total += lk_log_prob(lk, y[i], f[i])
    return total


@njit(**NUMBA_OPTIONS)
def log_ratio(lk, y, f, tau, nu, beta):
    """sum_i beta log p(y_i | f_i) - log t_i(f_i), t_i(f) = exp(-tau_i f^2 / 2 + nu_i f) (tau = nu = 0: the likelihood)."""
    total = 0.0
    for i in range(f.shape[0]):
        total += beta * lk_log_prob(lk, y[i], f[i]) + f[i] * (0.5 * tau[i] * f[i] - nu[i])
    return total


@njit(**NUMBA_OPTIONS)
def _ess_step(L, centre, tau, nu, y, lk, beta, f, ll, z, proposal, max_shrinks):
    """One ESS transition from f (updated in place) for N(f | centre, L L^T) prod_i p(y_i | f_i)^beta /
    t_i(f_i); ``ll`` = :func:`log_ratio` at f with that ``beta``. Returns (``ll`` at the new f,
    likelihood evaluations, whether an angle was accepted within ``max_shrinks`` shrinks)."""
    for j in range(f.shape[0]):
        z[j] = np.random.standard_normal()
    return _slice_on_ellipse(L @ z, centre, tau, nu, y, lk, beta, f, ll, proposal, max_shrinks)


@njit(**NUMBA_OPTIONS)
def ess_step_into(L, centre, tau, nu, y, lk, beta, f, ll, z, ellipse, proposal, max_shrinks):
    """:func:`_ess_step` with the ellipse's direction L z written into the buffer ``ellipse`` (no
    allocation per transition; the tempered chains' kernel)."""
    n = f.shape[0]
    for j in range(n):
        z[j] = np.random.standard_normal()
    for i in range(n):
        total = 0.0
        for j in range(n):
            total += L[i, j] * z[j]
        ellipse[i] = total
    return _slice_on_ellipse(ellipse, centre, tau, nu, y, lk, beta, f, ll, proposal, max_shrinks)


@njit(**NUMBA_OPTIONS)
def _slice_on_ellipse(ellipse, centre, tau, nu, y, lk, beta, f, ll, proposal, max_shrinks):
    """The slice part of an ESS transition along f' = centre + (f - centre) cos theta + ellipse sin theta."""
    n = f.shape[0]
    log_level = ll + np.log(np.random.random())
    theta = 2.0 * np.pi * np.random.random()
    lo = theta - 2.0 * np.pi
    hi = theta
    for shrink in range(max_shrinks + 1):
        c = np.cos(theta)
        s = np.sin(theta)
        for j in range(n):
            proposal[j] = centre[j] + (f[j] - centre[j]) * c + ellipse[j] * s
        ll_new = log_ratio(lk, y, proposal, tau, nu, beta)
        if ll_new > log_level:
            for j in range(n):
                f[j] = proposal[j]
            return ll_new, shrink + 1, True
        if theta < 0.0:
            lo = theta
        else:
            hi = theta
        theta = lo + (hi - lo) * np.random.random()
    return ll, max_shrinks + 1, False


@njit(**NUMBA_OPTIONS)
def ess_block(L, centre, tau, nu, y, lk, f, ll, transitions, thin, out, seed, max_shrinks):
    """``transitions`` ESS transitions from f (updated in place; ``ll`` = :func:`log_ratio` at f)
    for the target N(f | centre, L L^T) prod_i p(y_i | f_i) / t_i(f_i); after every ``thin``-th
    one f is written to the next row of ``out`` (none if ``out`` has no rows).
    Returns (``ll`` at the final f, likelihood evaluations, transitions that hit ``max_shrinks``, 0 swaps)."""
    np.random.seed(seed)
    n = f.shape[0]
    z = np.empty(n)
    proposal = np.empty(n)
    evaluations = capped = kept = 0
    for it in range(transitions):
        ll, evals, accepted = _ess_step(L, centre, tau, nu, y, lk, 1.0, f, ll, z, proposal, max_shrinks)
        evaluations += evals
        capped += 0 if accepted else 1
        if out.shape[0] > 0 and (it + 1) % thin == 0 and kept < out.shape[0]:
            out[kept, :] = f
            kept += 1
    return ll, evaluations, capped, 0


def ess_block_numpy(L, centre, log_lik, f, ll, transitions, thin, out, seed, max_shrinks):
    """:func:`ess_block` in NumPy for a Python ``log_lik(f)`` (the whole log ratio; Murray, Adams and
    MacKay 2010, Fig. 2; NumPy's legacy generator with ``seed``)."""
    rng = np.random.RandomState(seed % 2**32)
    evaluations = kept = capped = 0
    for it in range(transitions):
        nu = L @ rng.standard_normal(f.shape[0])
        log_level = ll + np.log(rng.random_sample())
        theta = 2.0 * np.pi * rng.random_sample()
        lo, hi = theta - 2.0 * np.pi, theta
        for _ in range(max_shrinks + 1):
            proposal = centre + (f - centre) * np.cos(theta) + nu * np.sin(theta)
            ll_new = log_lik(proposal)
            evaluations += 1
            if ll_new > log_level:
                f[:], ll = proposal, ll_new
                break
            if theta < 0.0:
                lo = theta
            else:
                hi = theta
            theta = lo + (hi - lo) * rng.random_sample()
        else:
            capped += 1
        if out.shape[0] > 0 and (it + 1) % thin == 0 and kept < out.shape[0]:
            out[kept] = f
            kept += 1
    return ll, evaluations, capped, 0


def _chain(block, f0, ll0, n_samples, burn_in, thin, seed, max_shrinks):
    """(samples, evaluations) of one chain by two calls of ``block`` (burn-in, then kept transitions)."""
    f = np.array(f0, dtype=np.float64)
    out = np.empty((int(n_samples), f.shape[0]))
    ll, burn_evals = block(f, ll0, int(burn_in), 1, out[:0], int(seed), int(max_shrinks))[:2]
    evals = block(f, ll, int(n_samples) * int(thin), int(thin), out, (int(seed) + 104729) % 2**31,
                  int(max_shrinks))[1]
    return out, burn_evals + evals


def elliptical_slice_chain(L, y, lk, f0, n_samples, burn_in, thin, seed, max_shrinks=MAX_SHRINKS):
    """(samples (n_samples, N), total likelihood evaluations) of an ESS chain started at f0
    (numba kernel ``lk``), keeping every ``thin``-th transition after ``burn_in``."""
    f0 = np.asarray(f0, dtype=np.float64)
    zero = np.zeros_like(f0)
    return _chain(lambda *a: ess_block(L, zero, zero, zero, y, lk, *a), f0, log_lik_total(lk, y, f0), n_samples,
                  burn_in, thin, seed, max_shrinks)


def elliptical_slice_chain_numpy(L, log_lik, f0, n_samples, burn_in, thin, seed, max_shrinks=MAX_SHRINKS):
    """:func:`elliptical_slice_chain` in NumPy for a Python ``log_lik(f)`` (likelihoods without
    numba kernels; also the reference the tests compare the kernel with): :func:`ess_block_numpy`."""
    zero = np.zeros(np.shape(f0))
    return _chain(lambda *a: ess_block_numpy(L, zero, log_lik, *a), f0, log_lik(np.asarray(f0, dtype=np.float64)),
                  n_samples, burn_in, thin, seed, max_shrinks)
