"""Expectation Propagation and Quantile Propagation: one loop, two projections (QP paper Alg. 1).

The loop keeps the site parameters (tau_i, nu_i) and the posterior of the prior object
(:mod:`.prior`). A *sweep* updates every site once (:mod:`.sites`), either

* sequentially (``parallel=False``): each site update is followed by a rank-one update of the
  posterior (inside one numba kernel); the order is 0..N-1 (``order="fixed"``) or a fresh
  random permutation per sweep (``order="random"``, seeded); or
* in parallel (``parallel=True``): all cavities from the same posterior, all projections, then
  one recomputation (damping is usually needed: default 0.5).

After every sweep the posterior is recomputed from scratch (Cholesky of B = I + T^1/2 K T^1/2)
for stability. Convergence: max(RMS(tau - tau_prev), RMS(nu - nu_prev)) < ``tol`` (the paper
uses 1e-6) within ``max_sweeps`` sweeps; otherwise ``converged`` is False, the per-sweep history
is kept and a :class:`ConvergenceWarning` is issued.

The approximate log evidence (QP paper eq. 4, with the proper site normalisers Z~_i, written as
in GPML's infEP):

    log Z_EP = sum_i log Z_i - 1/2 log|B| + 1/2 nu^T Sigma nu
               + 1/2 sum_i [ nu_ci (tau_i nu_ci / tau_ci - 2 nu_i) - nu_i^2 ] / (tau_i + tau_ci)
               + 1/2 sum_i log(1 + tau_i / tau_ci),

with the cavities (tau_ci, nu_ci) of the final posterior and Z_i = int p(y_i|f) N(f|cavity) df.
For QP the same expression is evaluated at the QP sites (its "own" evidence; the paper fits
hyper-parameters on EP's, Alg. 1 line 15).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from qpviz.inference import sites

__all__ = ["SiteFit", "ConvergenceWarning", "run_sites", "site_log_marginal", "default_sites"]

def default_sites(likelihood, y) -> tuple[np.ndarray, np.ndarray]:
    """Starting sites (tau, nu): the likelihood's own choice (``initial_sites``; flat (0, 0) unless
    the likelihood is symmetric in f, e.g. Poisson-square)."""
    return likelihood.initial_sites(y)


class ConvergenceWarning(UserWarning):
    """An iterative engine stopped at its iteration limit before reaching its tolerance."""


@dataclass
class SiteFit:
    """Result of an EP / QP run: the sites, the posterior state and the convergence report."""

    method: str
    tau: np.ndarray
    nu: np.ndarray
    state: object
    log_marginal_likelihood: float
    converged: bool
    n_sweeps: int
    history: list = field(default_factory=list)
    n_clipped: int = 0
    n_skipped: int = 0
    cavity_tau: np.ndarray | None = None
    cavity_nu: np.ndarray | None = None
    log_z: np.ndarray | None = None


def _rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(a * a))) if a.size else 0.0


def run_sites(prior, likelihood, y, method: str = "ep", *, tol: float = 1e-6, damping: float | None = None,
              order: str = "fixed", parallel: bool = False, max_sweeps: int = 200, seed: int = 0,
              init=None, use_table: bool = True, warn: bool = True) -> SiteFit:
    """Run EP (``method="ep"``) or QP (``"qp"``) to convergence on ``prior`` and ``likelihood``.

    ``init`` = (tau, nu) warm-starts the sites (all tau >= 0; default :func:`default_sites`). See the module docstring for the
    options; the returned :class:`SiteFit` carries the per-sweep change history and counts of
    clipped / skipped site updates.
    """
    y = np.ascontiguousarray(likelihood.check_y(y), dtype=np.float64)
    n = prior.n
    if y.shape != (n,):
        raise ValueError(f"y must have one entry per input (shape ({n},)); got shape {y.shape}")
    if order not in ("fixed", "random"):
        raise ValueError(f"order must be 'fixed' or 'random', got {order!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be > 0 (the paper uses 1e-6); got {tol!r}")
    if int(max_sweeps) < 1:
        raise ValueError(f"max_sweeps must be >= 1, got {max_sweeps!r}")
    if damping is None:
        damping = 0.5 if parallel else 1.0
    rule = sites.SiteRule.build(method, likelihood, damping, use_table=use_table)
    rng = np.random.default_rng(seed)

    if init is None:
        tau, nu = default_sites(likelihood, y)
    else:
        tau, nu = (np.array(a, dtype=np.float64) for a in init)
        if tau.shape != (n,) or nu.shape != (n,) or np.any(tau < 0):
            raise ValueError(f"init must be (tau, nu) with shape ({n},) each and tau >= 0")
    state = prior.condition(tau, nu)
    history: list[float] = []
    n_clipped = n_skipped = 0
    converged = False
    sweep = 0
    for sweep in range(1, int(max_sweeps) + 1):
        tau_prev, nu_prev = tau, nu
        if parallel and rule.jit is None:  # no numba kernels: the same update on arrays
            tau, nu, log_z, status = rule.step(y, state.mean, state.var, tau_prev, nu_prev)
        elif parallel:
            tau, nu = np.empty(n), np.empty(n)
            log_z = np.empty(n)
            status = np.zeros(n, dtype=np.int64)
            sites.parallel_site_updates(state.mean, state.var, tau_prev, nu_prev, y, rule.method_code, rule.handle,
                                        rule.damping, rule.coef, rule.meta, tau, nu, log_z, status)
        else:
            visit = rng.permutation(n) if order == "random" else np.arange(n)
            tau, nu, log_z, status = prior.sequential_sweep(state, visit, rule, y)
        n_clipped += int(np.count_nonzero(status == sites.CLIPPED))
        n_skipped += int(np.count_nonzero(status >= sites.SKIPPED_CAVITY))
        state = prior.condition(tau, nu)
        change = max(_rms(tau - tau_prev), _rms(nu - nu_prev))
        history.append(change)
        if not np.isfinite(change):
            break
        if change < tol:
            converged = True
            break
    if not converged and warn:
        warnings.warn(
            f"{method.upper()} did not converge in {sweep} sweeps (last RMS site change {history[-1]:.3g}, tol {tol:g}); "
            "increase max_sweeps, add damping (e.g. damping=0.5) or loosen tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    log_ml, tau_c, nu_c, log_z = site_log_marginal(state, likelihood, y)
    return SiteFit(method, tau, nu, state, log_ml, converged, sweep, history, n_clipped, n_skipped, tau_c, nu_c, log_z)


def site_log_marginal(state, likelihood, y) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """log Z_EP of eq. 4 (module docstring) at the sites of ``state``; also the cavities and log Z_i."""
    n = state.mean.shape[0]
    tau, nu = state.tau, state.nu
    tau_c, nu_c, log_z = np.empty(n), np.empty(n), np.empty(n)
    if likelihood.jit_handle() is None:
        tau_c, nu_c = 1.0 / state.var - tau, state.mean / state.var - nu
        if np.all(tau_c > 0):
            log_z = likelihood.tilted_moments(y, nu_c / tau_c, 1.0 / tau_c).log_z
    else:
        sites.cavity_log_z(state.mean, state.var, tau, nu, np.asarray(y, np.float64), likelihood.jit_handle(),
                           tau_c, nu_c, log_z)
    if np.any(~(tau_c > 0)):
        return np.nan, tau_c, nu_c, log_z
    total = tau + tau_c
    value = (
        np.sum(log_z)
        - state.half_log_det
        + 0.5 * state.nu_sigma_nu
        + 0.5 * np.sum((nu_c * (tau * nu_c / tau_c - 2.0 * nu) - nu * nu) / total)
        + 0.5 * np.sum(np.log1p(tau / tau_c))
    )
    return float(value), tau_c, nu_c, log_z
