"""The quadrature behind the likelihood contract's prediction defaults
(:class:`qpviz.likelihoods.base.Likelihood`): Gauss-Hermite nodes for expectations over a Gaussian
latent f, and the moments E[y | f], Var[y | f] of one observation given f, by sums over counts
(:func:`count_moments`) or adaptive quadrature over real y (:func:`real_moments`), for a
likelihood that defines only ``log_prob``.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["BAND_GH_NODES", "BAND_RANGE_POINTS", "MAX_COUNT_WINDOW", "gauss_hermite", "count_moments", "real_moments"]

#: Gauss-Hermite nodes of :meth:`qpviz.Likelihood.predictive_band` (the outermost at mean +- 7.6 sd)
BAND_GH_NODES = 20

#: latent points where the count band takes the range of the rate (exact for a monotone rate)
BAND_RANGE_POINTS = 257

#: widest window of counts :func:`count_moments` sums over
MAX_COUNT_WINDOW = 2**20


@functools.lru_cache(maxsize=8)
def gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x and weights w / sqrt(pi) of n-point Gauss-Hermite quadrature, computed once (an
    eigenvalue problem: 9 ms for 64 nodes, which dominated a 200-point minibatch step of SVI)."""
    x, w = np.polynomial.hermite.hermgauss(n)
    x.flags.writeable = False
    w = w / np.sqrt(np.pi)
    w.flags.writeable = False
    return x, w


def count_moments(lik, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[y | f], Var[y | f]) of a count likelihood by sums over a window of counts around the
    mode of p(y | f) (first guessed on 0, 1, 2, 4, ..., 2^50, then the window's own peak), the
    window doubling for the rows whose mass at its ends is not yet below 1e-12 of the total
    (a second mode far from the first is not looked for)."""
    flat = f.reshape(-1)
    mean, var = np.full(flat.shape, np.nan), np.full(flat.shape, np.nan)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        guesses = np.concatenate([[0.0], 2.0 ** np.arange(51)])
        logp = np.broadcast_to(np.asarray(lik.log_prob(guesses[None, :], flat[:, None]), float),
                               (flat.size, guesses.size))
        centre = guesses[np.argmax(np.where(np.isnan(logp), -np.inf, logp), axis=1)]
    todo = np.arange(flat.size)
    half = 32
    while todo.size:
        counts = np.maximum(centre[todo, None] - half, 0.0) + np.arange(2 * half + 1.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            logp = np.broadcast_to(np.asarray(lik.log_prob(counts, flat[todo, None]), float), counts.shape)
            p = np.exp(logp - np.max(logp, axis=1, keepdims=True))
        total = p.sum(axis=1)
        edge = np.maximum(np.where(counts[:, 0] > 0, p[:, 0], 0.0), p[:, -1])
        done = np.isfinite(total) & (total > 0) & (edge <= 1e-12 * total)
        rows = todo[done]
        m1 = np.einsum("ij,ij->i", p[done], counts[done]) / total[done]
        mean[rows] = m1
        var[rows] = np.maximum(np.einsum("ij,ij->i", p[done], (counts[done] - m1[:, None]) ** 2) / total[done], 0.0)
        if not done.all() and half >= MAX_COUNT_WINDOW:
            bad = todo[~done][0]
            raise ValueError(f"E[y | f] of the {lik.name} likelihood did not converge at f = {flat[bad]:g} (p(y | f) "
                             f"wider than {MAX_COUNT_WINDOW} counts, or log_prob not finite); define "
                             "observation_moments(f) for it")
        peak = counts[np.arange(todo.size), np.argmax(np.where(np.isnan(p), -np.inf, p), axis=1)]
        centre[todo] = peak
        todo = todo[~done]
        half *= 2
    return mean.reshape(f.shape), var.reshape(f.shape)


def real_moments(lik, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[y | f], Var[y | f]) of a real likelihood by adaptive quadrature over u = y - f (one
    vector integral for every f); Var = inf (for every f) where the integrals do not converge."""
    from scipy.integrate import quad_vec

    flat = f.reshape(-1)

    def integrand(u):
        with np.errstate(over="ignore", under="ignore"):
            p = np.exp(np.asarray(lik.log_prob(flat + u, flat), float)) * np.ones_like(flat)
        return np.stack([p, u * p, u * u * p])

    # Gaussian, Student-t and Laplace noise converge in < 20 intervals; a divergent second moment
    # (Cauchy) uses all 100 (~5 s for the GP 1-D page's 200 points x BAND_GH_NODES)
    moments, error, info = quad_vec(integrand, -np.inf, np.inf, epsabs=0.0, epsrel=1e-11, limit=100,
                                    full_output=True)
    total, first, second = moments
    if info.status != 0 or not error <= 1e-8 * np.max(np.abs(moments)):
        second = np.full(flat.shape, np.inf)  # heavy tails (the error estimate is one for all rows)
    if not (np.all(np.isfinite(total)) and np.all(total > 0)):
        raise ValueError(f"p(y | f) of the {lik.name} likelihood does not integrate to a positive finite mass over y; "
                         "check log_prob or define observation_moments(f)")
    shift = first / total
    with np.errstate(invalid="ignore"):
        var = second / total - shift * shift
    var = np.where(np.isfinite(var) & (var >= 0), var, np.inf)
    return (flat + shift).reshape(f.shape), var.reshape(f.shape)
