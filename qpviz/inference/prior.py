"""The prior interface every engine uses: a GP prior turns sites into a Gaussian posterior.

Every Gaussian engine (EP, QP, VB, Laplace) represents its approximation by *sites*: one
Gaussian factor t_i(f_i) ~ exp(-tau_i f_i^2 / 2 + nu_i f_i) per observation, in natural
parameters (precision tau_i, precision-times-mean nu_i). The approximate posterior is
(QP paper eq. 3)

    q(f) = N(f | mu, Sigma),  Sigma = (K^-1 + T)^-1,  mu = Sigma nu,  T = diag(tau).

A :class:`Prior` owns K and all linear algebra with it; engines only call the methods below,
never touch K and never build N x N arrays themselves. So a new prior (low-rank plus diagonal
for FITC / PITC / DTC / VFE / Power EP, block-diagonal, VSGP's local covariances, sites on
minibatches, sites computed in other processes) is a new implementation of this interface, not
a new engine. Implementations must be pickleable (plain arrays and kernels: no closures, no
compiled-code handles), so that site updates can run in worker processes.

:class:`qpviz.inference.dense.DensePrior` (exact, O(N^3)) is the first implementation.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Prior", "GaussianState", "SweepState", "IndefinitePosterior", "Conditions", "Sweeps", "CovarianceRoot", "Conditional",
           "Rebuild", "InducingInputs", "ConditionalVariances", "BindsLikelihood", "MissingCapability",
           "check_capabilities"]


class IndefinitePosterior(np.linalg.LinAlgError):
    """Sites with negative precisions that make K^-1 + T indefinite (no Gaussian posterior)."""


@runtime_checkable
class GaussianState(Protocol):
    """q(f) = N(mean, Sigma) of a prior conditioned on sites (tau, nu): what engines read."""

    prior: "Prior"
    tau: np.ndarray  #: site precisions, shape (N,)
    nu: np.ndarray  #: site precision-means, shape (N,)
    mean: np.ndarray  #: mu, the posterior means at the training inputs
    var: np.ndarray  #: diag(Sigma), the posterior marginal variances
    weights: np.ndarray  #: w with mu = K w (mu^T w = mu^T K^-1 mu; GPML's "alpha")
    half_log_det: float  #: 1/2 log|I + K T| (the evidence, eq. 4; VB's KL)
    nu_sigma_nu: float  #: nu^T Sigma nu (the evidence, eq. 4)

    def predict_f(self, X_new, full_cov: bool = False):
        """Latent mean and variance (or covariance) at new inputs (R&W eqs. 3.60-3.61)."""

    def grad_log_marginal(self) -> np.ndarray:
        """Explicit gradient of log Z_EP (eq. 4) in the kernel's log hyper-parameters."""

    def squared_cov_matvec(self, v: np.ndarray) -> np.ndarray:
        """(Sigma o Sigma) v, the elementwise square of Sigma times v (VB's gradient in lambda)."""


@runtime_checkable
class SweepState(Protocol):
    """What a sequential sweep carries from one sweep to the next (its own representation of q,
    possibly cheaper than a fresh :class:`GaussianState`); ``prior.condition(tau, nu)`` turns its
    sites into the exact state."""

    tau: np.ndarray
    nu: np.ndarray
    mean: np.ndarray
    var: np.ndarray


@runtime_checkable
class Sweeps(Protocol):
    """Capability: sequential site updates (EP and QP; MCMC starts from EP's posterior)."""

    def start_sweeps(self, state: GaussianState) -> SweepState:
        """A sweep state holding the same q as ``state`` (copies: sweeps update it in place)."""

    def sequential_sweep(self, sweep: SweepState, order: np.ndarray, rule, y: np.ndarray):
        """Update the sites in ``order`` one after the other, each against the posterior left by
        the previous ones (``rule``: :class:`qpviz.inference.sites.SiteRule`); ``order`` may be
        any subset (a minibatch). Changes ``sweep`` in place; returns (log_z, status) per site
        (NaN / 0 for sites not in ``order``)."""


@runtime_checkable
class CovarianceRoot(Protocol):
    """Capability: a square root of K (VB's whitening; MCMC's proposals)."""

    def cov_sqrt(self) -> np.ndarray:
        """A matrix L with K = L L^T."""


@runtime_checkable
class Conditional(Protocol):
    """Capability: f at new inputs given f at the training inputs (sample posteriors' predictions)."""

    def conditional(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """(P, var) with f_* | f ~ N(P^T f, diag var) at new inputs."""


@runtime_checkable
class Rebuild(Protocol):
    """Capability: the same prior under new kernel hyper-parameters (``optimise=True``)."""

    def with_kernel(self, kernel) -> "Prior":
        """The same inputs (and structure) under new hyper-parameters."""


@runtime_checkable
class InducingInputs(Protocol):
    """Capability: learnable inducing inputs (``optimise_inducing=True``; :mod:`.sparse_prior`)."""

    Z: np.ndarray  #: the inducing inputs, (M, D)
    inducing_cov: object  #: VSGP's local covariances, or None

    def inducing_params(self) -> np.ndarray:
        """The learnt parameters as one vector (Z, and VSGP's covariances)."""

    def with_inducing_params(self, kernel, params) -> "Prior":
        """The same data under ``kernel`` with the inducing parameters ``params``."""


@runtime_checkable
class ConditionalVariances(Protocol):
    """Optional: sites sit on h_i = f_i - e_i, e_i ~ N(0, d_i) (a sparse prior), with d = ``cond_var``;
    without it the sites sit on f itself."""

    cond_var: np.ndarray


@runtime_checkable
class BindsLikelihood(Protocol):
    """Optional, of a posterior state: its evidence gradient needs the tilted distributions, so the
    engine hands it the likelihood and the data once it has converged (a sparse state)."""

    def bind(self, likelihood, y) -> None:
        """Keep ``likelihood`` and ``y`` for the gradients."""


@runtime_checkable
class Conditions(Protocol):
    """What every method needs of a prior: f ~ N(0, K(X, X)) conditioned on sites."""

    kernel: object  #: a :class:`qpviz.kernels.Kernel`
    X: np.ndarray  #: training inputs, shape (N, D)

    @property
    def n(self) -> int:
        """Number of latent values (= observations)."""

    def condition(self, tau, nu) -> GaussianState:
        """q(f) proportional to N(f | 0, K) prod_i exp(-tau_i f_i^2 / 2 + nu_i f_i) (eq. 3).

        Raises :class:`IndefinitePosterior` when negative site precisions leave no Gaussian."""


@runtime_checkable
class Prior(Conditions, Sweeps, CovarianceRoot, Conditional, Rebuild, Protocol):
    """f ~ N(0, K(X, X)) and its linear algebra (the swappable "solver" of every engine): the
    conditioning every method needs (:class:`Conditions`) and the capabilities :class:`Sweeps`,
    :class:`CovarianceRoot`, :class:`Conditional` and :class:`Rebuild`, as the dense prior has
    them. A prior may offer fewer: each method declares the capabilities it needs (``needs`` of its
    options, :mod:`.options`), checked once when a fit starts (:func:`check_capabilities`)."""


class MissingCapability(TypeError):
    """A prior lacks a capability the requested fit needs."""


def check_capabilities(prior, method: str, needs, reason: str = "") -> None:
    """A :class:`MissingCapability` naming the first capability in ``needs`` (protocol classes) that
    ``prior`` lacks, its missing members and ``method`` (``reason``: what asks for it, e.g.
    "optimise=True")."""
    for capability in needs:
        if not isinstance(prior, capability):
            missing = ", ".join(sorted(m for m in _members(capability) if not hasattr(prior, m)))
            asks = f"method={method!r}" + (f" with {reason}" if reason else "")
            raise MissingCapability(f"{asks} needs a prior with the capability {capability.__name__}; the "
                                    f"{type(prior).__name__} prior lacks it (missing: {missing})")


def _members(protocol) -> set[str]:
    """The attributes and methods a protocol class declares (its own and its bases')."""
    out: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, object) or not getattr(cls, "_is_protocol", False):
            continue
        out |= {name for name in vars(cls) if not name.startswith("_")}
        out |= set(getattr(cls, "__annotations__", {}))
    return out
