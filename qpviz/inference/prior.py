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

__all__ = ["Prior", "GaussianState", "SweepState", "IndefinitePosterior"]


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
    alpha: np.ndarray  #: weights with mu = K alpha (mu^T alpha = mu^T K^-1 mu)
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
class Prior(Protocol):
    """f ~ N(0, K(X, X)) and its linear algebra (the swappable "solver" of every engine)."""

    kernel: object  #: a :class:`qpviz.kernels.Kernel`
    X: np.ndarray  #: training inputs, shape (N, D)

    @property
    def n(self) -> int:
        """Number of latent values (= observations)."""

    def with_kernel(self, kernel) -> "Prior":
        """The same inputs (and structure) under new hyper-parameters."""

    def condition(self, tau, nu) -> GaussianState:
        """q(f) proportional to N(f | 0, K) prod_i exp(-tau_i f_i^2 / 2 + nu_i f_i) (eq. 3).

        Raises :class:`IndefinitePosterior` when negative site precisions leave no Gaussian."""

    def start_sweeps(self, state: GaussianState) -> SweepState:
        """A sweep state holding the same q as ``state`` (copies: sweeps update it in place)."""

    def sequential_sweep(self, sweep: SweepState, order: np.ndarray, rule, y: np.ndarray):
        """Update the sites in ``order`` one after the other, each against the posterior left by
        the previous ones (``rule``: :class:`qpviz.inference.sites.SiteRule`); ``order`` may be
        any subset (a minibatch). Changes ``sweep`` in place; returns (log_z, status) per site
        (NaN / 0 for sites not in ``order``)."""

    def cov_sqrt(self) -> np.ndarray:
        """A matrix L with K = L L^T (MCMC's proposals; VB's whitening)."""

    def conditional(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """(P, var) with f_* | f ~ N(P^T f, diag var) at new inputs (sample posteriors)."""

