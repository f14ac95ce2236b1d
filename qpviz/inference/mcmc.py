"""MCMC reference for the latent posterior: elliptical slice sampling (Murray, Adams and MacKay 2010).

p(f | y) proportional to N(f | 0, K) prod_i p(y_i | f_i). One ESS transition from f: draw
nu ~ N(0, K) (= L z, K = L L^T), a level log u = log L(f) + log U(0,1) and an angle
theta ~ U(0, 2 pi) with bracket [theta - 2 pi, theta]; propose f' = f cos theta + nu sin theta,
accept if log L(f') > log u, otherwise shrink the bracket towards 0 and redraw theta.
Every proposal stays on the ellipse through f and nu, so no step size is tuned.

Ellipses (:func:`reference_gaussian`): around EP's posterior N(m, S) rather than the prior
(EPESS, Fagan, Bhandari and Cunningham 2016): p(f | y) = N(f | m, S) prod_i p(y_i | f_i) / t_i(f_i)
with EP's sites t_i, so only the per-site ratio is sliced; on the step preset (eps = 0, N = 60)
this raised the bulk ESS of 4 x 1000 draws from 6-37 (prior ellipses) to 116-283.

Starts (:func:`start_points`): inside the likelihood's support, from EP's Gaussian posterior
N(m, S): the first chain at m, the others at m + START_SPREAD L_S z (over-dispersed draws),
pulled towards m until every site has positive likelihood. A hard likelihood (the step with
eps = 0: log p = -inf for y f < 0) needs this: ESS only shrinks its bracket towards the current
point, so a chain keeps its start's support forever, and a start on the jump (f = 0, where
every site has p = 1/2) never left it (samples ~1e-323, a latent mean of 0).

The shrink loop is bounded (:data:`MAX_SHRINKS`): a transition that has not found an accepted
angle by then stays at f (still reversible: a move through k shrinks has a reverse move of k
shrinks with the same probability, and the rest of the mass stays put) and is counted.

:func:`run_chains` runs several chains in blocks (cancel and a time budget are checked between
blocks) and judges them with split R-hat and bulk ESS (:mod:`.diagnostics`).

Likelihoods even in f (``Likelihood.even_in_f``: p(y | f) = p(y | -f), Poisson-square). The data
identify only |f| (the rate f^2); where y_i > 0, p(y_i | f_i) = 0 at f_i = 0, so f keeps its
sign between zero counts, and the posterior is a mixture over the sign patterns of the stretches
between them, weighted by the prior (a change of sign costs smoothness). Which reference:

* the full posterior, sampled over its sign patterns, judged and compared on the quantities the
  data identify: R-hat and ESS of |f_i| (rank-based, so the same as for the rate f_i^2) and of
  mean_i |f_i|, and EP against it on sqrt(E f_i^2) (``tests/gpdemo/test_mcmc_reference_presets.py``);
  its latent mean is near 0 wherever the sign is open, as EP's is there (EP straddles both signs
  where they are close in weight). This is the reference used here: the posterior itself, with
  the sign fixed only up to the exact symmetry f -> -f, which leaves every quantity unchanged
  (samples folded onto sum_i f_i >= 0, ``info["sign_folded"]``).
* not a sign-aligned posterior (the posterior restricted to EP's signs): it would be defined by
  the method under test, and where EP's mean is near 0 at counts y > 0 (measured on seeds 0-7
  of the Poisson-square preset) EP has no sign to align to.

Sampling the sign patterns: ellipses cannot cross f_i = 0 at a count y_i > 0 in one coordinate
without moving its neighbours, and Metropolis flips of stretches of f between local minima of
|f| (the former move) were accepted about 400 times in 1.7 million proposals (seed 6: the flip
leaves a jump in f at the stretch's ends). :func:`_tempered_block` runs parallel tempering
instead: likelihood powers from :data:`TEMPERATURES`, whose hot rows change sign freely, re-spaced
during burn-in so that every neighbour pair swaps about equally often (:func:`equalised_ladder`),
with :data:`TEMPERED_THIN` x ``thin`` tempered transitions per kept draw. Measured on the
Poisson-square preset (N = 60, seeds 0-7, 4 chains x 1000 draws, thin 20): 8 powers 0.02..1,
one transition per draw: R-hat 1.012-1.035, ESS 129-460, no seed converged; the worst variables
are zero counts between counts, whose |f| depends on whether f crosses zero there. The hottest
power 0.1 mixes the sign patterns as well as 0.02 did (the swaps, not the hot rows, limit it) at
half the rows; the rows below beta = 1 slice around N(0, S_beta) with EP's positive site
precisions scaled by beta (32 instead of 45 likelihood evaluations per tempered transition).
With 6 powers and TEMPERED_THIN = 3, seed 4 stayed at R-hat 1.011 (ESS 570); with 4 it converged
(R-hat 1.005, ESS 838). Intended for small N (a reference the dashboard compares EP/QP/VB/Laplace
against), not for large data sets.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numba import njit
from scipy import linalg
from qpviz.config import NUMBA_OPTIONS
from qpviz._jit import lk_log_prob
from qpviz.inference import diagnostics
from qpviz.inference.options import MethodOptions, option
from qpviz.inference.prior import Conditional, CovarianceRoot, Sweeps

__all__ = ["elliptical_slice_chain", "elliptical_slice_chain_numpy", "run_mcmc", "run_chains", "start_points",
           "ChainSet", "Reference", "reference_gaussian", "convergence_status", "MAX_SHRINKS", "TIME_BUDGET", "START_SPREAD", "Cancelled",
           "equalised_ladder", "TEMPERATURES", "COLD_STEPS", "TEMPERED_THIN", "MCMCOptions"]

#: Bracket shrinks per transition before it gives up and stays at f (a hard constraint whose
#: accepted arc is narrower than 2 pi 2^-100 cannot occur for a start inside the support).
MAX_SHRINKS = 100
#: Seconds :func:`run_chains` may take before it stops sampling and says so.
TIME_BUDGET = 60.0
#: Standard deviations of EP's posterior by which the chains' starts are spread (over-dispersed).
START_SPREAD = 2.0
#: Transitions per numba call of :func:`run_chains` (cancel and the time budget are checked between).
BLOCK = 250
#: Likelihood powers of the tempered chains of a likelihood even in f (:func:`_tempered_block`).
TEMPERATURES = tuple(float(b) for b in np.geomspace(0.1, 1.0, 6))
#: ESS transitions of the beta = 1 row per tempered transition (:func:`_tempered_block`).
COLD_STEPS = 1
#: Tempered transitions per kept draw, in multiples of ``thin`` (:func:`run_chains`; likelihoods even in f).
TEMPERED_THIN = 4


class Cancelled(Exception):
    """A chain run was cancelled (its ``cancel`` event was set)."""


@njit(**NUMBA_OPTIONS)
def _log_lik(lk, y, f):
    total = 0.0
    for i in range(f.shape[0]):
        total += lk_log_prob(lk, y[i], f[i])
    return total


@njit(**NUMBA_OPTIONS)
def _log_ratio(lk, y, f, tau, nu, beta):
    """sum_i beta log p(y_i | f_i) - log t_i(f_i), t_i(f) = exp(-tau_i f^2 / 2 + nu_i f) (tau = nu = 0: the likelihood)."""
    total = 0.0
    for i in range(f.shape[0]):
        total += beta * lk_log_prob(lk, y[i], f[i]) + f[i] * (0.5 * tau[i] * f[i] - nu[i])
    return total


@njit(**NUMBA_OPTIONS)
def _ess_step(L, centre, tau, nu, y, lk, beta, f, ll, z, proposal, max_shrinks):
    """One ESS transition from f (updated in place) for N(f | centre, L L^T) prod_i p(y_i | f_i)^beta /
    t_i(f_i); ``ll`` = :func:`_log_ratio` at f with that ``beta``. Returns (``ll`` at the new f,
    likelihood evaluations, whether an angle was accepted within ``max_shrinks`` shrinks)."""
    for j in range(f.shape[0]):
        z[j] = np.random.standard_normal()
    return _slice_on_ellipse(L @ z, centre, tau, nu, y, lk, beta, f, ll, proposal, max_shrinks)


@njit(**NUMBA_OPTIONS)
def _ess_step_into(L, centre, tau, nu, y, lk, beta, f, ll, z, ellipse, proposal, max_shrinks):
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
        ll_new = _log_ratio(lk, y, proposal, tau, nu, beta)
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
def _ess_block(L, centre, tau, nu, y, lk, f, ll, transitions, thin, out, seed, max_shrinks):
    """``transitions`` ESS transitions from f (updated in place; ``ll`` = :func:`_log_ratio` at f)
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


@njit(**NUMBA_OPTIONS)
def _half_square(tau, f):
    """sum_i tau_i f_i^2 / 2."""
    total = 0.0
    for i in range(f.shape[0]):
        total += 0.5 * tau[i] * f[i] * f[i]
    return total


@njit(**NUMBA_OPTIONS)
def _tempered_block(roots, taus, root, centre, tau, nu, y, lk, betas, F, LL, transitions, thin, out, seed,
                    max_shrinks, cold_steps, pair_swaps):
    """Parallel tempering (Swendsen and Wang 1986; Geyer 1991) for a likelihood even in each f_i:
    row t of F (updated in place) targets N(f | 0, K) prod_i p(y_i | f_i)^betas[t] (``betas``
    increasing to 1, ``LL[t]`` = sum_i log p(y_i | F[t, i])) = N(f | 0, S_t) prod_i
    p(y_i | f_i)^betas[t] exp(taus[t, i] f_i^2 / 2) up to a constant, S_t^-1 = K^-1 + diag(taus[t])
    and ``roots[t]`` a square root of S_t (ellipses centred at 0, so both signs stay alike). Each
    transition is one ESS transition per row below the last and ``cold_steps``
    for the last row, beta = 1 (ellipses around EP's posterior: ``root``, ``centre`` and sites
    ``tau``, ``nu`` as :func:`_ess_block`), then swaps of the adjacent pairs (t, t + 1), even t
    after even transitions and odd t after odd ones (non-reversible even-odd swaps, Syed et al.
    2021), each accepted with probability min(1, exp((betas[t + 1] - betas[t]) (LL[t] - LL[t + 1])))
    and counted in ``pair_swaps[t]``. At small beta the zero of p(y_i | f_i) at f_i = 0 (y_i > 0)
    barely binds, rows there change the sign of f between counts freely, and swaps carry the new
    sign patterns up to beta = 1. After every ``thin``-th transition the last row is written to
    ``out``. Returns (likelihood evaluations, transitions that hit ``max_shrinks``, accepted swaps)."""
    np.random.seed(seed)
    temps, n = F.shape
    z = np.empty(n)
    ellipse = np.empty(n)
    proposal = np.empty(n)
    zero = np.zeros(n)
    evaluations = capped = kept = swaps = 0
    for it in range(transitions):
        for t in range(temps):
            f = F[t]  # a view: the transitions update the row in place
            if t == temps - 1:  # beta = 1: ellipses around EP's posterior (as :func:`_ess_block`)
                ll = _log_ratio(lk, y, f, tau, nu, 1.0)
                for _ in range(cold_steps):
                    ll, evals, accepted = _ess_step_into(root, centre, tau, nu, y, lk, 1.0, f, ll, z, ellipse,
                                                         proposal, max_shrinks)
                    evaluations += evals
                    capped += 0 if accepted else 1
                LL[t] = _log_lik(lk, y, f)
                evaluations += 2
            else:  # betas[t] > 0: the log ratio is betas[t] LL[t] + sum_i taus[t, i] f_i^2 / 2
                ll, evals, accepted = _ess_step_into(roots[t], zero, taus[t], zero, y, lk, betas[t], f,
                                                     betas[t] * LL[t] + _half_square(taus[t], f), z, ellipse, proposal,
                                                     max_shrinks)
                LL[t] = (ll - _half_square(taus[t], f)) / betas[t]
                evaluations += evals
                capped += 0 if accepted else 1
        for t in range(it % 2, temps - 1, 2):  # even pairs, then odd pairs (deterministic even-odd swaps)
            if np.log(np.random.random()) < (betas[t + 1] - betas[t]) * (LL[t] - LL[t + 1]):
                for j in range(n):
                    F[t, j], F[t + 1, j] = F[t + 1, j], F[t, j]
                LL[t], LL[t + 1] = LL[t + 1], LL[t]
                swaps += 1
                pair_swaps[t] += 1
        if out.shape[0] > 0 and (it + 1) % thin == 0 and kept < out.shape[0]:
            out[kept, :] = F[temps - 1]
            kept += 1
    return evaluations, capped, swaps


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
    return _chain(lambda *a: _ess_block(L, zero, zero, zero, y, lk, *a), f0, _log_lik(lk, y, f0), n_samples, burn_in,
                  thin, seed, max_shrinks)


def elliptical_slice_chain_numpy(L, log_lik, f0, n_samples, burn_in, thin, seed, max_shrinks=MAX_SHRINKS):
    """:func:`elliptical_slice_chain` in NumPy for a Python ``log_lik(f)`` (likelihoods without
    numba kernels; also the reference the tests compare the kernel with): :func:`_ess_block_numpy`."""
    zero = np.zeros(np.shape(f0))
    return _chain(lambda *a: _ess_block_numpy(L, zero, log_lik, *a), f0, log_lik(np.asarray(f0, dtype=np.float64)),
                  n_samples, burn_in, thin, seed, max_shrinks)


def _check_options(n_samples, burn_in, thin, n) -> None:
    for name, value, low in (("n_samples", n_samples, 1), ("burn_in", burn_in, 0), ("thin", thin, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    if n > 2000:
        raise ValueError(f"the MCMC reference is meant for small problems (N <= 2000); got N = {n}")


def equalised_ladder(betas: np.ndarray, swap_rates: np.ndarray) -> np.ndarray:
    """A ladder with the same ends and number of rungs as ``betas`` (increasing, > 0) on which the
    neighbour swaps are rejected about equally often: rungs equally spaced in the cumulative
    rejection sum_t (1 - swap_rates[t]), interpolated linearly in log beta (the schedule update of
    non-reversible parallel tempering, Syed et al. 2021). Rates of 1 everywhere keep the ladder."""
    rejection = np.concatenate([[0.0], np.cumsum(1.0 - np.clip(swap_rates, 0.0, 1.0))])
    if not rejection[-1] > 0.0:
        return betas.copy()
    targets = np.linspace(0.0, rejection[-1], betas.shape[0])
    ladder = np.exp(np.interp(targets, rejection, np.log(betas)))
    ladder[0], ladder[-1] = betas[0], betas[-1]
    return np.maximum.accumulate(ladder)


def _tempered_blocks(prior, y, lk, ref):
    """``block_for(start)``: the :func:`run_chains` block of one tempered chain (:func:`_tempered_block`,
    all rows started at ``start``), its ladder starting at :data:`TEMPERATURES` and, after every
    burn-in block (``out`` without rows), re-spaced by :func:`equalised_ladder` from that block's
    swap rates; the kept draws use the ladder burn-in ended with. ``block_for.pair_swaps`` counts
    the accepted swaps of each neighbour pair in the kept part of all chains, ``block_for.ladders``
    holds each chain's final ladder."""
    K = np.asarray(prior.cov_sqrt())
    K = K @ K.T
    positive = np.clip(ref.tau, 0.0, None)  # EP's site precisions where positive (0: prior ellipses)
    pair_swaps = np.zeros(len(TEMPERATURES) - 1, dtype=np.int64)
    ladders = []

    def gaussians(betas):
        """(roots, taus): row t the ellipses' N(0, S_t), S_t^-1 = K^-1 + betas[t] diag(positive)."""
        taus = np.ascontiguousarray(betas[:, None] * positive[None, :])
        roots = np.empty((betas.shape[0],) + K.shape)
        for t, tau in enumerate(taus):
            d = np.sqrt(tau)
            inner = np.eye(K.shape[0]) + d[:, None] * K * d[None, :]
            KD = K * d[None, :]
            roots[t] = _root(K - KD @ np.linalg.solve(inner, KD.T))
        return np.ascontiguousarray(roots), taus

    def block_for(start):
        betas = np.array(TEMPERATURES, dtype=np.float64)
        ladders.append(betas)
        state = list(gaussians(betas))
        F = np.ascontiguousarray(np.tile(start, (betas.shape[0], 1)))
        LL = np.array([_log_lik(lk, y, row) for row in F])

        def block(f, ll, transitions, thin, out, seed, max_shrinks):
            burning = out.shape[0] == 0
            counts = np.zeros_like(pair_swaps)
            result = _tempered_block(state[0], state[1], ref.root, ref.centre, ref.tau, ref.nu, y, lk, betas, F, LL,
                                     transitions, thin, out, seed, max_shrinks, COLD_STEPS, counts)
            if burning and transitions >= 2:
                betas[:] = equalised_ladder(betas, counts / (transitions // 2))
                state[:] = gaussians(betas)
            else:
                pair_swaps[:] += counts
            f[:] = F[-1]
            return (LL[-1],) + result
        return block
    block_for.pair_swaps = pair_swaps
    block_for.ladders = ladders
    return block_for


def _fold(samples: np.ndarray, likelihood) -> np.ndarray:
    """p(f | y) symmetric under f -> -f (``even_in_f``): every sample onto the positive branch
    (sum_i f_i >= 0), the branch EP/QP/VB/Laplace describe (their starting sites pick it)."""
    if not likelihood.even_in_f:
        return samples
    return samples * np.where(samples.sum(axis=-1) < 0, -1.0, 1.0)[..., None]


@dataclass(frozen=True)
class MCMCOptions(MethodOptions):
    """The options of ``qpviz.fit(..., method="mcmc")`` (:func:`run_mcmc`)."""

    n_samples: int = option(4000, "samples kept (after burn-in and thinning)")
    burn_in: int = option(1000, "transitions dropped at the start")
    thin: int = option(5, "transitions per kept sample")
    seed: int = option(0, "random seed of the chain")

    #: EP's posterior (sweeps) centres the ellipses, K's root draws them, predictions condition on f
    needs: ClassVar[tuple] = (Sweeps, CovarianceRoot, Conditional)


def run_mcmc(prior, likelihood, y, *, n_samples: int = 4000, burn_in: int = 1000, thin: int = 5, seed: int = 0):
    """Samples of one chain of f | y (:func:`run_chains` with one chain and no time budget: ellipses
    around EP's posterior, started at its mean) and a diagnostics dict (the reference Gaussian,
    likelihood evaluations per transition, capped transitions, bulk ESS)."""
    chains = run_chains(prior, likelihood, y, chains=1, n_samples=n_samples, burn_in=burn_in, thin=thin, seed=seed,
                        time_budget=math.inf)
    info = {**chains.info, "burn_in": int(burn_in), "thin": int(thin), "ess": chains.ess}
    return chains.samples[0], info


@dataclass
class Reference:
    """The Gaussian N(centre, root root^T) the ellipses are drawn from, the sites t_i(f) =
    exp(-tau_i f^2 / 2 + nu_i f) it divides out of the likelihood (zero for the prior), and where
    chains start: ``start`` and draws start + spread * start_root z."""

    centre: np.ndarray
    root: np.ndarray
    tau: np.ndarray
    nu: np.ndarray
    start: np.ndarray
    start_root: np.ndarray
    origin: str  #: "EP posterior", or "prior (why EP was not used)"


def _root(cov: np.ndarray) -> np.ndarray:
    """A square root R of a covariance (R R^T = cov): Cholesky, or eigenvalues clipped at 0 if
    that fails (EP's S may be numerically singular)."""
    cov = 0.5 * (cov + cov.T)
    try:
        return np.ascontiguousarray(linalg.cholesky(cov, lower=True, check_finite=True))
    except (np.linalg.LinAlgError, ValueError):
        values, vectors = np.linalg.eigh(cov)
        return np.ascontiguousarray(vectors * np.sqrt(np.clip(values, 0.0, None)))


def reference_gaussian(prior, likelihood, y) -> Reference:
    """EP's posterior N(m, S) and sites as the sampler's reference (EPESS: Fagan, Bhandari and
    Cunningham 2016): p(f | y) = N(f | m, S) prod_i p(y_i | f_i) / t_i(f_i) up to a constant, so
    ellipses through N(m, S) draws already follow the posterior's shape and scale, and only the
    per-site ratio is sliced. If EP fails, or its mean has zero likelihood, the prior N(0, K)
    (plain ESS) with starts around :func:`_start`'s point."""
    from qpviz.inference.ep import run_sites

    y = np.ascontiguousarray(likelihood.check_y(y), dtype=np.float64)
    try:
        state = run_sites(prior, likelihood, y, "ep", warn=False).state
        mean = np.ascontiguousarray(state.mean, dtype=np.float64)
        tau, nu = (np.ascontiguousarray(a, dtype=np.float64) for a in (state.tau, state.nu))
        root = _root(np.asarray(state.cov, dtype=np.float64))
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(root)) and np.all(np.isfinite(tau))
                and np.all(np.isfinite(nu))):
            why = "EP's posterior is not finite"
        elif not math.isfinite(float(np.sum(likelihood.log_prob(y, mean)))):
            why = "EP's mean lies outside the likelihood's support"
        else:
            return Reference(mean, root, tau, nu, mean, root, "EP posterior")
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, FloatingPointError) as exc:
        why = f"EP failed: {exc}"
    L = np.ascontiguousarray(prior.cov_sqrt())
    zero = np.zeros(y.shape[0])
    return Reference(zero, L, zero, zero.copy(), _start(likelihood, y, L), 0.1 * L, f"prior ({why})")


def start_points(reference: Reference, log_lik, count: int, seed: int = 0, spread: float = START_SPREAD) -> np.ndarray:
    """(count, N) chain starts with finite ``log_lik``: the first at ``reference.start`` (EP's mean),
    the others over-dispersed at start + spread R z (R = ``reference.start_root``, z ~ N(0, I)
    from ``seed``), each step pulled halfway back to the start until its log-likelihood is finite
    (at most 40 times, then the start itself)."""
    rng = np.random.default_rng(seed)
    centre = reference.start
    starts = np.empty((int(count), centre.shape[0]))
    for k in range(int(count)):
        step = spread * (reference.start_root @ rng.standard_normal(centre.shape[0])) if k else np.zeros_like(centre)
        for _ in range(40):
            if math.isfinite(log_lik(centre + step)):
                break
            step = 0.5 * step
        else:
            step = np.zeros_like(centre)
        starts[k] = centre + step
    return starts


@dataclass
class ChainSet:
    """Chains of f | y and their convergence report (:func:`run_chains`)."""

    samples: np.ndarray  #: (chains, draws, N), folded for likelihoods even in f
    rhat: float  #: max split R-hat over the latents and mean |f| (NaN: too few chains / draws)
    ess: float  #: min bulk ESS over the same
    converged: bool  #: rhat < RHAT_THRESHOLD and ess >= ESS_THRESHOLD, all chains complete
    seconds: float
    note: str = ""  #: why not converged, or why the run stopped early (plain text, no HTML characters)
    info: dict = field(default_factory=dict)  #: reference, evaluations per transition, capped transitions

    def __len__(self) -> int:  # a sequence of chains, as the former list of (draws, N) arrays
        return self.samples.shape[0]

    def __getitem__(self, index):
        return self.samples[index]

    def status(self) -> str:
        """'converged (R-hat 1.003, ESS 812, 2.1 s)' or 'not converged (R-hat 1.3, ESS 12, 60.0 s): why'."""
        return convergence_status(self.converged, self.rhat, self.ess, self.seconds, self.note)


def convergence_status(converged: bool, rhat: float, ess: float, seconds: float, note: str = "") -> str:
    """'converged (R-hat 1.003, ESS 812, 2.1 s)' or 'not converged (R-hat 1.3, ESS 12, 60.0 s): note'."""
    numbers = f"R-hat {rhat:.3g}, ESS {ess:.0f}, {seconds:.1f} s"
    if converged:
        return f"converged ({numbers})"
    return f"not converged ({numbers})" + (f": {note}" if note else "")


def run_chains(prior, likelihood, y, chains: int = 4, n_samples: int = 1000, burn_in: int = 500, thin: int = 2,
               seed: int = 0, on_progress=None, cancel=None, time_budget: float = TIME_BUDGET,
               max_shrinks: int = MAX_SHRINKS) -> ChainSet:
    """``chains`` elliptical-slice chains around :func:`reference_gaussian` (EP's posterior), started
    by :func:`start_points`, each ``n_samples`` kept (every ``thin``-th transition after
    ``burn_in``), judged by split R-hat and bulk ESS over the latents at the data and mean_i |f_i|
    (:func:`diagnostics.summary`).

    ``on_progress(done, chains)`` is called after each chain, ``cancel`` (a ``threading.Event``)
    is checked every :data:`BLOCK` transitions (:class:`Cancelled`), and after ``time_budget``
    seconds sampling stops: the chains finished by then are kept (or the part of the first one)
    and the result is "not converged" with the reason in ``note``."""
    _check_options(n_samples, burn_in, thin, prior.n)
    if int(chains) != chains or chains < 1:
        raise ValueError(f"chains must be an integer >= 1; got {chains!r}")
    started = time.perf_counter()
    y = np.ascontiguousarray(likelihood.check_y(y), dtype=np.float64)
    ref = reference_gaussian(prior, likelihood, y)
    lk = likelihood.jit_handle()

    def log_ratio(f):
        return float(np.sum(likelihood.log_prob(y, f))) + float(np.sum(f * (0.5 * ref.tau * f - ref.nu)))

    starts = start_points(ref, log_ratio, int(chains), seed=seed)
    tempered = likelihood.even_in_f and lk is not None
    spacing = int(thin) * (TEMPERED_THIN if tempered else 1)  # transitions per kept draw
    if tempered:
        block_for = _tempered_blocks(prior, y, lk, ref)
    elif lk is not None:
        def block_for(start):
            return lambda *args: _ess_block(ref.root, ref.centre, ref.tau, ref.nu, y, lk, *args)
    else:
        def block_for(start):
            return lambda *args: _ess_block_numpy(ref.root, ref.centre, log_ratio, *args)
    samples = np.empty((int(chains), int(n_samples), y.shape[0]))
    finished = evaluations = capped = transitions = kept = swaps = 0
    out_of_time = False
    for c in range(int(chains)):
        f = starts[c].copy()
        ll = log_ratio(f)
        block = block_for(f)
        kept = blocks = 0
        for total, step, out in ((int(burn_in), 1, samples[c, :0]), (int(n_samples) * spacing, spacing, samples[c])):
            chunk = max(BLOCK // step, 1) * step  # whole multiples of thin: kept draws stay aligned
            done = 0
            while done < total and not out_of_time:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("MCMC cancelled")
                size = min(chunk, total - done)
                rows = size // step if out.shape[0] else 0
                block_seed = int(np.random.SeedSequence([int(seed), c, blocks]).generate_state(1)[0] >> 1)
                ll, evals, hit, swapped = block(f, ll, size, step, out[kept:kept + rows], block_seed, int(max_shrinks))
                kept, done, blocks = kept + rows, done + size, blocks + 1
                evaluations, capped, transitions, swaps = evaluations + evals, capped + hit, transitions + size, swaps + swapped
                out_of_time = time.perf_counter() - started > time_budget
        if out_of_time and kept < n_samples:
            break
        finished += 1
        if on_progress is not None:
            on_progress(c + 1, int(chains))
    info = {"reference": ref.origin, "chains": int(chains), "finished_chains": finished, "max_shrinks": int(max_shrinks),
            "capped_transitions": int(capped), "seed": int(seed),
            "evaluations_per_transition": evaluations / max(transitions, 1), "sign_folded": bool(likelihood.even_in_f),
            "temperatures": [float(b) for b in TEMPERATURES] if tempered else [1.0], "accepted_swaps": int(swaps)}
    if tempered:  # each neighbour pair is offered a swap every second transition
        kept_transitions = max(finished, 1) * int(n_samples) * spacing
        info["swap_rates"] = [float(k) / max(kept_transitions / 2, 1) for k in block_for.pair_swaps]
        info["ladders"] = [[float(b) for b in ladder] for ladder in block_for.ladders]
        info["cold_steps"] = COLD_STEPS
        info["transitions_per_draw"] = spacing
    notes = []
    kept_samples = samples[:finished] if finished else samples[:1, :kept]
    kept_samples = _fold(kept_samples, likelihood)
    if out_of_time:
        notes.append(f"stopped by the {time_budget:g} s time budget after {finished} of {int(chains)} chains"
                     + ("" if finished else f" ({kept} of {n_samples} draws of the first)"))
    if capped:
        notes.append(f"{capped} transitions hit the {max_shrinks}-shrink limit")
    rhat = ess = math.nan
    if kept_samples.shape[1] >= 4:  # one chain: its halves give an ESS, and an R-hat that cannot see other modes
        judged = np.abs(kept_samples) if likelihood.even_in_f else kept_samples
        summary_variable = np.abs(kept_samples).mean(axis=2, keepdims=True)
        report = diagnostics.summary(np.concatenate([judged, summary_variable], axis=2))
        rhat, ess = report["rhat"], report["ess"]
    if kept_samples.shape[0] < 2 and not out_of_time:
        notes.append("convergence needs at least 2 chains")
    converged = bool(rhat < diagnostics.RHAT_THRESHOLD and ess >= diagnostics.ESS_THRESHOLD and not out_of_time)
    if not converged and not out_of_time and kept_samples.shape[0] >= 2:
        notes.insert(0, f"needs R-hat below {diagnostics.RHAT_THRESHOLD:g} and ESS of at least "
                        f"{diagnostics.ESS_THRESHOLD:g}; run more samples")
    if not np.all(np.isfinite(kept_samples)):
        converged = False
        notes.append("non-finite samples")
    return ChainSet(kept_samples, rhat, ess, converged, time.perf_counter() - started, "; ".join(notes), info)


def _ess_block_numpy(L, centre, log_lik, f, ll, transitions, thin, out, seed, max_shrinks):
    """:func:`_ess_block` in NumPy for a Python ``log_lik(f)`` (the whole log ratio; Murray, Adams and
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


def _start(likelihood, y, L=None) -> np.ndarray:
    """The most probable of the starts 0, sqrt(|y|) (Poisson-square) and y / 2 (binary labels),
    each also smoothed by the prior (K (K + I/4)^-1 f0, when the prior's factor ``L`` is given).

    The most probable, not the first finite one: for the step likelihood with eps = 0, f = 0 lies on
    the jump of every site, and the elliptical slice sampler, which shrinks its bracket towards
    the current point, never left it (every sample ~1e-323, variance 0). Smoothed: a start that
    jumps from point to point (sqrt(|y|) beside zeros) lies almost outside an ill-conditioned
    prior, f0^T K^-1 f0 ~ 1e8 for 60 points at lengthscale 0.5, and the sampler, whose steps
    multiply it by cos(theta) with small theta where the likelihood is sharp, still carried it
    after thousands of steps (latent variances ~1e5 beyond the data, measured); scored by
    log p(y | f0) + log N(f0 | 0, K), the smoothed start wins there.
    """
    candidates = [np.zeros(y.shape[0]), np.sqrt(np.abs(y)), 0.5 * y]
    if L is None:
        scores = [float(np.sum(likelihood.log_prob(y, f0))) for f0 in candidates]
    else:
        K = L @ L.T
        smoothing = K + 0.25 * np.eye(y.shape[0])
        candidates += [K @ np.linalg.solve(smoothing, f0) for f0 in candidates[1:]]
        # log N(f0 | 0, K) up to a constant: -|L^-1 f0|^2 / 2
        scores = [float(np.sum(likelihood.log_prob(y, f0))) - 0.5 * float(np.sum(np.square(
            linalg.solve_triangular(L, f0, lower=True, check_finite=False)))) for f0 in candidates]
    finite = [k for k, score in enumerate(scores) if np.isfinite(score)]
    if not finite:
        raise ValueError(f"found no start with positive likelihood for the {likelihood.name} likelihood; MCMC needs one")
    return np.ascontiguousarray(candidates[max(finite, key=lambda k: scores[k])])
