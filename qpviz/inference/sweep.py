"""The EP / QP sweep loop, written once for every prior (QP paper Alg. 1, lines 3-13).

A *sweep* updates every site once with a :class:`qpviz.inference.sites.SiteRule` (projection,
damping, negative-precision rule), either

* sequentially (``parallel=False``): each site against the posterior left by the previous
  ones, through ``prior.sequential_sweep`` (the prior's own representation; dense: blocked
  BLAS-3 updates); the order is 0..N-1 (``order="fixed"``) or a fresh random permutation per
  sweep (``order="random"``, seeded); or
* in parallel (``parallel=True``): every cavity from the same posterior marginals, then one
  ``prior.condition`` (damping is usually needed: default 0.5).

A sequential run carries the prior's sweep state from sweep to sweep and conditions the prior
afresh (``prior.condition``: a new factorisation, no accumulated rounding) every ``refresh``
sweeps and at the end; the largest relative difference between the carried and the fresh
marginal variances is reported as ``drift``. Convergence: max(RMS(tau - tau_prev),
RMS(nu - nu_prev)) < ``tol`` within ``max_sweeps`` sweeps; a non-finite change stops the run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpviz import config
from qpviz.inference import sites

__all__ = ["SweepOutcome", "run_sweeps", "rms"]


@dataclass
class SweepOutcome:
    """What :func:`run_sweeps` returns: the exact final state and how the run went."""

    state: object
    converged: bool
    n_sweeps: int
    history: list = field(default_factory=list)
    n_clipped: int = 0
    n_skipped: int = 0
    drift: float = 0.0


def rms(a: np.ndarray) -> float:
    """Root mean square (0 for an empty array)."""
    return float(np.sqrt(np.mean(a * a))) if a.size else 0.0


def run_sweeps(prior, rule, y: np.ndarray, tau: np.ndarray, nu: np.ndarray, *, parallel: bool = False,
               order: str = "fixed", tol: float = 1e-6, max_sweeps: int = 200, seed: int = 0,
               refresh: int | None = None) -> SweepOutcome:
    """Sweep the sites of ``prior`` with ``rule`` from (tau, nu) until converged (module docstring)."""
    refresh = config.SWEEP_REFRESH if refresh is None else int(refresh)
    if refresh < 1:
        raise ValueError(f"refresh must be >= 1 (sweeps between fresh factorisations); got {refresh!r}")
    n = prior.n
    rng = np.random.default_rng(seed)
    state = prior.condition(tau, nu)
    carried = None  # the prior's sweep state (sequential runs)
    out = SweepOutcome(state, False, 0)
    for sweep in range(1, int(max_sweeps) + 1):
        out.n_sweeps = sweep
        tau_prev, nu_prev = tau, nu
        if parallel:
            tau, nu, log_z, status = rule.update_all(y, state.mean, state.var, tau_prev, nu_prev)
            state = prior.condition(tau, nu)
        else:
            if carried is None:
                carried = prior.start_sweeps(state)
            visit = rng.permutation(n) if order == "random" else np.arange(n)
            log_z, status = prior.sequential_sweep(carried, visit, rule, y)
            tau, nu = carried.tau.copy(), carried.nu.copy()
            state = None
        out.n_clipped += int(np.count_nonzero(status == sites.CLIPPED))
        out.n_skipped += int(np.count_nonzero(status >= sites.SKIPPED_CAVITY))
        change = max(rms(tau - tau_prev), rms(nu - nu_prev))
        out.history.append(change)
        done = not np.isfinite(change) or change < tol
        out.converged = bool(change < tol)
        if state is None and (done or sweep % refresh == 0 or sweep == int(max_sweeps)):
            state = prior.condition(tau, nu)
            out.drift = max(out.drift, float(np.max(np.abs(carried.var - state.var) / state.var)))
            carried = None
        if done:
            break
    out.state = state
    return out
