"""The Gaussian-process prior and its linear algebra (the swappable "solver" of the engines).

Every engine (EP, QP, VB, Laplace) represents its Gaussian approximation by *sites*: one
Gaussian factor t_i(f_i) ~ exp(-tau_i f_i^2 / 2 + nu_i f_i) per observation, in natural
parameters (precision tau_i, precision-times-mean nu_i). The approximate posterior is
(QP paper eq. 3)

    q(f) = N(f | mu, Sigma),  Sigma = (K^-1 + T)^-1,  mu = Sigma nu,  T = diag(tau).

A *prior* object turns sites into that posterior. The interface the engines use is

* ``prior.n``: number of latent values; ``prior.kernel``, ``prior.X``;
* ``prior.condition(tau, nu)`` -> a conditioned state with ``.mean``, ``.var`` (marginals of
  q), ``.half_log_det`` (= 1/2 log|I + K T|), ``.nu_sigma_nu`` (= nu^T Sigma nu, both for
  the evidence, eq. 4), ``.alpha`` (= (K + T^-1)^-1 T^-1 nu, so mu = K alpha),
  ``.predict_f(X_new)`` and ``.grad_log_marginal()`` (the explicit part of d log Z_EP/d theta);
* ``prior.with_kernel(kernel)``: the same inputs under new hyper-parameters;
* ``prior.sequential_sweep(state, order, site_rule, y)``: one sequential EP sweep with
  rank-one updates in that prior's own representation (here the dense Sigma).

:class:`DensePrior` is the exact O(N^3) implementation. A sparse low-rank-plus-diagonal prior
(FITC / VFE / Power EP, paper 001) implements the same methods with its own representation;
the engines in :mod:`qpviz.inference.ep`, :mod:`.vb` and :mod:`.laplace` need nothing else.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from qpviz import config
from qpviz.kernels import Kernel, as_inputs

__all__ = ["DensePrior", "DenseGaussian", "IndefinitePosterior"]


class IndefinitePosterior(np.linalg.LinAlgError):
    """Sites with negative precisions that make K^-1 + T indefinite (no Gaussian posterior)."""


class DensePrior:
    """f ~ N(0, K(X, X) + jitter I), stored densely.

    ``jitter`` defaults to :data:`qpviz.config.JITTER` (the one place it is set).
    """

    def __init__(self, kernel: Kernel, X, jitter: float | None = None):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a qpviz kernel such as qpviz.kernels.RBF(), got {kernel!r}")
        self.kernel = kernel
        self.X = as_inputs(X)
        self.jitter = config.JITTER if jitter is None else float(jitter)
        self.K = kernel(self.X)
        self.K[np.diag_indices_from(self.K)] += self.jitter

    @property
    def n(self) -> int:
        return self.X.shape[0]

    def with_kernel(self, kernel: Kernel) -> "DensePrior":
        return DensePrior(kernel, self.X, self.jitter)

    def kernel_grads(self) -> list[np.ndarray]:
        """dK/d log theta_j (the jitter does not depend on theta)."""
        return self.kernel.grad_log_params(self.X)

    def condition(self, tau, nu) -> "DenseGaussian":
        """q(f) proportional to N(f | 0, K) prod_i exp(-tau_i f_i^2 / 2 + nu_i f_i) (QP paper eq. 3)."""
        tau = np.asarray(tau, float)
        nu = np.asarray(nu, float)
        if tau.shape != (self.n,) or nu.shape != (self.n,):
            raise ValueError(f"site parameters must have shape ({self.n},); got {tau.shape} and {nu.shape}")
        return DenseGaussian(self, tau, nu)

    def sequential_sweep(self, state: "DenseGaussian", order: np.ndarray, rule, y: np.ndarray):
        """One sequential site sweep with rank-one updates of Sigma and mu (see :mod:`.sites`).

        Returns (tau, nu, log_z, status) after the sweep; ``state`` is consumed.
        """
        from qpviz.inference import sites

        cov = np.array(state.cov, order="C", copy=True)
        mean = state.mean.copy()
        tau, nu = state.tau.copy(), state.nu.copy()
        log_z = np.full(self.n, np.nan)
        status = np.zeros(self.n, dtype=np.int64)
        if rule.jit is None:  # no numba kernels: rank-one updates in Python, sites by rule.step
            for i in np.asarray(order, np.int64):
                t_new, n_new, log_z[i], status[i] = (float(a) for a in rule.step(y[i], mean[i], cov[i, i], tau[i], nu[i]))
                dtau, dnu = t_new - tau[i], n_new - nu[i]
                tau[i], nu[i] = t_new, n_new
                if dtau != 0.0 or dnu != 0.0:
                    s = cov[:, i].copy()
                    c = dtau / (1.0 + dtau * s[i])
                    mean += (dnu - c * (mean[i] + s[i] * dnu)) * s
                    cov -= c * np.outer(s, s)
            return tau, nu, log_z, status
        sites.sequential_sweep_dense(cov, mean, tau, nu, y, np.asarray(order, np.int64), rule.method_code,
                                     rule.handle, rule.damping, rule.coef, rule.meta,
                                     log_z, status)
        return tau, nu, log_z, status


class DenseGaussian:
    """The posterior N(mu, Sigma) of a :class:`DensePrior` given sites (tau, nu).

    All tau >= 0: GPML's stable form with B = I + T^1/2 K T^1/2 = L L^T (Rasmussen and
    Williams, Alg. 3.5): Sigma = K - V^T V with V = L^-1 T^1/2 K (marginals diag(K) - colsum(V^2)
    at once, the full Sigma only when asked for), alpha = nu - T^1/2 B^-1
    T^1/2 K nu. Some tau < 0 (non-log-concave likelihoods in VB / Laplace): the general form
    Sigma = (I + K T)^-1 K, alpha = (I + T K)^-1 nu by LU; the determinant of I + K T must be
    positive, else :class:`IndefinitePosterior`.
    """

    def __init__(self, prior: DensePrior, tau: np.ndarray, nu: np.ndarray):
        self.prior, self.tau, self.nu = prior, tau, nu
        K = prior.K
        n = prior.n
        self.stable = bool(np.all(tau >= 0))
        if self.stable:
            sw = np.sqrt(tau)
            B = np.eye(n) + sw[:, None] * K * sw[None, :]
            self._L = linalg.cholesky(B, lower=True)
            self._sw = sw
            self._V = linalg.solve_triangular(self._L, sw[:, None] * K, lower=True, check_finite=False)
            self._cov = None  # K - V^T V, formed on first use (parallel EP and VB need only its diagonal)
            self.var = np.diag(K) - np.einsum("ij,ij->j", self._V, self._V)
            self.alpha = nu - sw * linalg.cho_solve((self._L, True), sw * (K @ nu))
            self.half_log_det = float(np.sum(np.log(np.diag(self._L))))
        else:
            A = np.eye(n) + K * tau[None, :]  # I + K T
            sign, logdet = np.linalg.slogdet(A)
            if sign <= 0:
                raise IndefinitePosterior(
                    "the site precisions make K^-1 + T indefinite (no Gaussian posterior); use damping or a "
                    "log-concave likelihood"
                )
            self._lu = linalg.lu_factor(A.T)  # (I + T K) = (I + K T)^T
            cov = linalg.solve(A, K)
            self._cov = 0.5 * (cov + cov.T)
            self.alpha = linalg.lu_solve(self._lu, nu)
            self.half_log_det = 0.5 * logdet
            self.var = np.diag(self._cov).copy()
            if np.any(self.var <= 0):
                raise IndefinitePosterior("the site precisions give a non-positive posterior variance")
        self.mean = K @ self.alpha
        self.nu_sigma_nu = float(nu @ self.mean)

    @property
    def cov(self) -> np.ndarray:
        """Sigma = (K^-1 + T)^-1 (N x N; formed once, on first use)."""
        if self._cov is None:
            self._cov = self.prior.K - self._V.T @ self._V
        return self._cov

    def _solve_w(self, rhs: np.ndarray) -> np.ndarray:
        """W rhs with W = (K + T^-1)^-1 = T^1/2 B^-1 T^1/2 (= (I + T K)^-1 T in general)."""
        if self.stable:
            sw = self._sw.reshape((-1,) + (1,) * (rhs.ndim - 1))
            return sw * linalg.cho_solve((self._L, True), sw * rhs)
        t = self.tau.reshape((-1,) + (1,) * (rhs.ndim - 1))
        return linalg.lu_solve(self._lu, t * rhs)

    def predict_f(self, X_new, full_cov: bool = False):
        """Latent mean k_*^T alpha and variance k_** - k_*^T (K + T^-1)^-1 k_* (R&W eqs. 3.60-3.61)."""
        kernel = self.prior.kernel
        X_new = as_inputs(X_new, "X_new")
        Ks = kernel(self.prior.X, X_new)
        mean = Ks.T @ self.alpha
        WKs = self._solve_w(Ks)
        if full_cov:
            return mean, kernel(X_new) - Ks.T @ WKs
        return mean, kernel.diag(X_new) - np.einsum("ij,ij->j", Ks, WKs)

    def grad_log_marginal(self) -> np.ndarray:
        """Explicit gradient 1/2 tr((alpha alpha^T - W) dK/d log theta_j) (R&W eq. 5.9; GPML infEP).

        At an EP fixed point the sites' implicit dependence on theta adds nothing (the evidence
        is stationary in the site parameters), so this is the gradient of eq. 4.
        """
        W = self._solve_w(np.eye(self.prior.n))
        F = np.outer(self.alpha, self.alpha) - 0.5 * (W + W.T)
        return np.array([0.5 * np.sum(F * dK) for dK in self.prior.kernel_grads()])
