"""MCMC reference for the latent posterior: elliptical slice sampling (Murray, Adams and MacKay 2010).

p(f | y) proportional to N(f | 0, K) prod_i p(y_i | f_i), sampled by elliptical slice transitions
(:mod:`qpviz.inference.elliptical_slice`) on ellipses around EP's posterior, with chains started
inside the likelihood's support (:mod:`qpviz.inference.ess_reference`).

:func:`run_chains` runs several chains in blocks (cancel and a time budget are checked between
blocks) and judges them with split R-hat and bulk ESS (:mod:`.diagnostics`); :func:`run_mcmc` is
``qpviz.fit(..., method="mcmc")``'s one chain.

Likelihoods even in f (``Likelihood.even_in_f``: p(y | f) = p(y | -f), Poisson-square). The data
identify only |f| (the rate f^2); where y_i > 0, p(y_i | f_i) = 0 at f_i = 0, so f keeps its
sign between zero counts, and the posterior is a mixture over the sign patterns of the stretches
between them, weighted by the prior (a change of sign costs smoothness). Which reference:

* the full posterior, sampled over its sign patterns (parallel tempering,
  :mod:`qpviz.inference.tempering`), judged and compared on the quantities the
  data identify: R-hat and ESS of |f_i| (rank-based, so the same as for the rate f_i^2) and of
  mean_i |f_i|, and EP against it on sqrt(E f_i^2) (``tests/gpdemo/test_mcmc_reference_presets.py``);
  its latent mean is near 0 wherever the sign is open, as EP's is there (EP straddles both signs
  where they are close in weight). This is the reference used here: the posterior itself, with
  the sign fixed only up to the exact symmetry f -> -f, which leaves every quantity unchanged
  (samples folded onto sum_i f_i >= 0, ``info["sign_folded"]``).
* not a sign-aligned posterior (the posterior restricted to EP's signs): it would be defined by
  the method under test, and where EP's mean is near 0 at counts y > 0 (measured on seeds 0-7
  of the Poisson-square preset) EP has no sign to align to.

Intended for small N (a reference the dashboard compares EP/QP/VB/Laplace against), not for large
data sets. The sampler's parts keep their former names here (:func:`elliptical_slice_chain`,
:func:`reference_gaussian`, :func:`start_points`, :func:`equalised_ladder`, the constants).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from qpviz.inference import diagnostics
from qpviz.inference.elliptical_slice import (MAX_SHRINKS, elliptical_slice_chain, elliptical_slice_chain_numpy,
                                              ess_block, ess_block_numpy)
from qpviz.inference.ess_reference import START_SPREAD, Reference, reference_gaussian, start_points
from qpviz.inference.options import MethodOptions, option
from qpviz.inference.prior import Conditional, CovarianceRoot, Sweeps
from qpviz.inference.tempering import COLD_STEPS, TEMPERATURES, TEMPERED_THIN, equalised_ladder, tempered_blocks

__all__ = ["elliptical_slice_chain", "elliptical_slice_chain_numpy", "run_mcmc", "run_chains", "start_points",
           "ChainSet", "Reference", "reference_gaussian", "convergence_status", "MAX_SHRINKS", "TIME_BUDGET", "START_SPREAD", "Cancelled",
           "equalised_ladder", "TEMPERATURES", "COLD_STEPS", "TEMPERED_THIN", "MCMCOptions"]

#: Seconds :func:`run_chains` may take before it stops sampling and says so.
TIME_BUDGET = 60.0
#: Transitions per numba call of :func:`run_chains` (cancel and the time budget are checked between).
BLOCK = 250


class Cancelled(Exception):
    """A chain run was cancelled (its ``cancel`` event was set)."""


def _check_options(n_samples, burn_in, thin, n) -> None:
    for name, value, low in (("n_samples", n_samples, 1), ("burn_in", burn_in, 0), ("thin", thin, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    if n > 2000:
        raise ValueError(f"the MCMC reference is meant for small problems (N <= 2000); got N = {n}")


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
        block_for = tempered_blocks(prior, y, lk, ref)
    elif lk is not None:
        def block_for(start):
            return lambda *args: ess_block(ref.root, ref.centre, ref.tau, ref.nu, y, lk, *args)
    else:
        def block_for(start):
            return lambda *args: ess_block_numpy(ref.root, ref.centre, log_ratio, *args)
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

