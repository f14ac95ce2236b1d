"""Expectation Propagation and Quantile Propagation: one loop, two projections (QP paper Alg. 1).

:func:`run_sites` checks its options, builds the site rule (EP: eq. 5; QP: eq. 7;
:mod:`.sites`), runs the sweep loop shared by every prior (:mod:`.sweep`: sequential or
parallel, damping, convergence) and evaluates the evidence. A run that does not converge
within ``max_sweeps`` returns ``converged=False`` with its per-sweep history and issues a
:class:`ConvergenceWarning`.

The approximate log evidence (QP paper eq. 4, with the proper site normalisers Z~_i, written as
in GPML's infEP):

    log Z_EP = sum_i log Z_i - 1/2 log|B| + 1/2 nu^T Sigma nu
               + 1/2 sum_i [ nu_ci (tau_i nu_ci / tau_ci - 2 nu_i) - nu_i^2 ] / (tau_i + tau_ci)
               + 1/2 sum_i log(1 + tau_i / tau_ci),

with the cavities (tau_ci, nu_ci) of the final posterior and Z_i = int p(y_i|f) N(f|cavity) df.
For QP the same expression is evaluated at the QP sites (its "own" evidence; the paper fits
hyper-parameters on EP's, Alg. 1 line 15).

**Power EP** (a tempered likelihood, power alpha; sites on h_i = f_i - e_i with e_i ~ N(0, d_i),
``prior.cond_var``; :mod:`.sites`): the Power-EP energy (Bui, Yan and Turner 2017, eq. 7; paper
001's Power EP slides),

    log Z = Phi(q) - Phi(p) + (1/alpha) sum_i [ log Z~_i + Phi(cav_i) - Phi(q) ],

with Phi the log normaliser of a Gaussian over the prior's variables (f, or the inducing
values u), Z~_i = int p(y_i|f)^alpha N(f | m_ci, v_ci + d_i) df and cav_i = q / t_i^alpha. The
cavity differs from q in the one direction of h_i only, so Phi(cav_i) - Phi(q) is the 1-D
difference 1/2 log(v_ci / v_i) + m_ci^2 / (2 v_ci) - m_i^2 / (2 v_i) of h_i's marginals, and
Phi(q) - Phi(p) = -1/2 log|I + K T| + 1/2 nu^T Sigma nu (the prior's ``half_log_det`` and
``nu_sigma_nu``; for a sparse prior K is Q = K_fu K_uu^-1 K_uf). In natural parameters,

    log Z = (1/alpha) sum_i log Z~_i - 1/2 log|I + K T| + 1/2 nu^T Sigma nu
            + 1/2 sum_i [ nu_ci (tau_i nu_ci / tau_ci - 2 nu_i) - alpha nu_i^2 ] / (alpha tau_i + tau_ci)
            + 1/(2 alpha) sum_i log(1 + alpha tau_i / tau_ci),

which is eq. 4 above at alpha = 1 and d = 0 (evaluated operation for operation as before). For a
Gaussian likelihood it equals log N(y | 0, Q + alpha D + s2 I) - (1 - alpha)/(2 alpha)
sum_i log(1 + alpha d_i / s2) (paper 001; FITC at alpha = 1, VFE's bound as alpha -> 0).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from qpviz.inference import sites
from qpviz.inference.options import TrainingOptions, option
from qpviz.inference.prior import BindsLikelihood, ConditionalVariances, Sweeps
from qpviz.inference.sweep import run_sweeps

__all__ = ["SiteOptions", "SiteFit", "ConvergenceWarning", "run_sites", "site_log_marginal", "default_sites"]


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
    drift: float = 0.0


@dataclass(frozen=True)
class SiteOptions(TrainingOptions):
    """The options of ``qpviz.fit(..., method="ep" | "qp")`` (:func:`run_sites`; the sparse prior of
    :mod:`.sparse_prior` with ``inducing``; the training options with ``optimise=True``)."""

    tol: float = option(1e-6, "RMS change of the site parameters at convergence")
    damping: float | None = option(None, "site step in (0, 1] (None: 1, or 0.5 with `parallel=True`)")
    order: str = option("fixed", "sequential update order, 'fixed' or 'random' (with `seed`)")
    parallel: bool = option(False, "update all sites at once instead of one after the other")
    max_sweeps: int = option(200, "sweeps before a run stops unconverged (a `ConvergenceWarning`)")
    seed: int = option(0, "random seed (sweep order; K-means inducing inputs)")
    use_table: bool = option(True, "QP reads sigma_QP from the lookup tables where they cover the cavity")
    init: object = option(None, "(tau, nu) sites to start from (None: the default sites)")
    warn: bool = option(True, "warn when a run does not converge")
    refresh: int | None = option(None, "sweeps between fresh factorisations (None: `qpviz.config.SWEEP_REFRESH`)")
    inducing: object = option(None, "inducing inputs Z, (M, D), or an int M (K-means centres): a sparse prior")
    alpha: float | None = option(None, "Power EP's power in (0, 1] with `inducing` (None: 1, EP)")
    inducing_cov: object = option(None, "VSGP's local covariances, (M,) or (M, D, D), with `inducing`")
    optimise_inducing: bool = option(False, "also learn the inducing inputs (and VSGP's covariances)")

    needs: ClassVar[tuple] = (Sweeps,)


def run_sites(prior, likelihood, y, method: str = "ep", *, tol: float = 1e-6, damping: float | None = None,
              order: str = "fixed", parallel: bool = False, max_sweeps: int = 200, seed: int = 0,
              init=None, use_table: bool = True, warn: bool = True, refresh: int | None = None) -> SiteFit:
    """Run EP (``method="ep"``) or QP (``"qp"``) to convergence on ``prior`` and ``likelihood``.

    ``init`` = (tau, nu) warm-starts the sites (all tau >= 0; default :func:`default_sites`);
    ``refresh``: sweeps between fresh factorisations of a sequential run (default
    :data:`qpviz.config.SWEEP_REFRESH`). The returned :class:`SiteFit` carries the per-sweep
    change history, counts of clipped / skipped site updates and the sweep drift.
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
    rule = sites.SiteRule.build(method, likelihood, damping, use_table=use_table, cond_var=prior_cond_var(prior))
    if init is None:
        tau, nu = default_sites(likelihood, y)
    else:
        tau, nu = (np.array(a, dtype=np.float64) for a in init)
        if tau.shape != (n,) or nu.shape != (n,) or np.any(tau < 0):
            raise ValueError(f"init must be (tau, nu) with shape ({n},) each and tau >= 0")
    run = run_sweeps(prior, rule, y, tau, nu, parallel=parallel, order=order, tol=tol, max_sweeps=max_sweeps,
                     seed=seed, refresh=refresh)
    if not run.converged and warn:
        warnings.warn(
            f"{method.upper()} did not converge in {run.n_sweeps} sweeps (last RMS site change {run.history[-1]:.3g}, "
            f"tol {tol:g}); increase max_sweeps, add damping (e.g. damping=0.5) or loosen tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    state = run.state
    if isinstance(state, BindsLikelihood):  # its evidence gradient needs the tilted distributions (sparse)
        state.bind(likelihood, y)
    log_ml, tau_c, nu_c, log_z = site_log_marginal(state, likelihood, y)
    return SiteFit(method, state.tau, state.nu, state, log_ml, run.converged, run.n_sweeps, run.history,
                   run.n_clipped, run.n_skipped, tau_c, nu_c, log_z, run.drift)


def prior_cond_var(prior):
    """d_i of a prior whose sites sit on h_i = f_i - e_i (``prior.cond_var``, a sparse prior), or
    None (sites on f itself: the dense prior)."""
    return prior.cond_var if isinstance(prior, ConditionalVariances) else None


def site_log_marginal(state, likelihood, y) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """log Z_EP of eq. 4, or the Power-EP energy for a tempered likelihood / a sparse prior (module
    docstring), at the sites of ``state``; also the cavities and log Z~_i."""
    n = state.mean.shape[0]
    tau, nu = state.tau, state.nu
    alpha = likelihood.alpha
    cond_var = prior_cond_var(state.prior)
    tau_c, nu_c, log_z = np.empty(n), np.empty(n), np.empty(n)
    if likelihood.jit_handle() is None:
        tau_c, nu_c = 1.0 / state.var - alpha * tau, state.mean / state.var - alpha * nu
        if np.all(tau_c > 0):
            v_f = 1.0 / tau_c if cond_var is None else 1.0 / tau_c + cond_var
            if sites.gaussian_power(likelihood):
                log_z = sites.power_gaussian_moments_numpy(likelihood, y, nu_c / tau_c, v_f)[0]
            else:
                log_z = likelihood.tilted_moments(y, nu_c / tau_c, v_f).log_z
    else:
        kernel = sites.cavity_log_z_closed if sites.closed_form_moments(likelihood) else sites.cavity_log_z_general
        kernel(state.mean, state.var, tau, nu, np.asarray(y, np.float64),
               sites.NO_COND_VAR if cond_var is None else cond_var, likelihood.jit_handle(), tau_c, nu_c, log_z)
    if np.any(~(tau_c > 0)):
        return np.nan, tau_c, nu_c, log_z
    total = alpha * tau + tau_c  # alpha = 1: eq. 4 operation for operation (1.0 * x == x / 1.0 == x)
    value = (
        np.sum(log_z) / alpha
        - state.half_log_det
        + 0.5 * state.nu_sigma_nu
        + 0.5 * np.sum((nu_c * (tau * nu_c / tau_c - 2.0 * nu) - alpha * nu * nu) / total)
        + 0.5 / alpha * np.sum(np.log1p(alpha * tau / tau_c))
    )
    return float(value), tau_c, nu_c, log_z
