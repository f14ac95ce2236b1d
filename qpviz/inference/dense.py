"""The exact dense GP prior: :class:`DensePrior` and its posterior :class:`DenseGaussian`.

The first implementation of :class:`qpviz.inference.prior.Prior`: K = K(X, X) + jitter I held
as an N x N array, O(N^3) factorisations, LAPACK / BLAS for all linear algebra. Problems below
:data:`qpviz.config.BLAS_SINGLE_THREAD_N` run their linear algebra on one BLAS thread
(:mod:`qpviz._blas`: OpenBLAS threads spin-wait on a busy 2-core machine).
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from qpviz import config
from qpviz._blas import small_problem_threads, syrk_update_lower
from qpviz.inference.prior import IndefinitePosterior
from qpviz.kernels import Kernel, as_inputs

__all__ = ["DensePrior", "DenseGaussian", "DenseSweep"]


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
        self._chol = None

    @property
    def n(self) -> int:
        return self.X.shape[0]

    def __repr__(self) -> str:
        return f"DensePrior({self.kernel!r}, N={self.n}, jitter={self.jitter:g})"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_chol"] = None  # recomputed where needed
        return state

    def with_kernel(self, kernel: Kernel) -> "DensePrior":
        return DensePrior(kernel, self.X, self.jitter)

    def condition(self, tau, nu) -> "DenseGaussian":
        """q(f) proportional to N(f | 0, K) prod_i exp(-tau_i f_i^2 / 2 + nu_i f_i) (QP paper eq. 3)."""
        tau = np.asarray(tau, float)
        nu = np.asarray(nu, float)
        if tau.shape != (self.n,) or nu.shape != (self.n,):
            raise ValueError(f"site parameters must have shape ({self.n},); got {tau.shape} and {nu.shape}")
        return DenseGaussian(self, tau, nu)

    def start_sweeps(self, state: "DenseGaussian") -> "DenseSweep":
        """The sweep state of ``state``: Sigma's lower triangle (C order), mu and the sites, copied."""
        return DenseSweep(state.lower_cov(), state.mean.copy(), state.tau.copy(), state.nu.copy())

    def sequential_sweep(self, sweep: "DenseSweep", order, rule, y):
        """Sequential site updates with delayed, blocked (BLAS-3) covariance updates
        (:mod:`qpviz.inference.dense_sweep`); NumPy rank-one updates for likelihoods without
        numba kernels. Returns (log_z, status)."""
        from qpviz.inference import dense_sweep

        log_z = np.full(self.n, np.nan)
        status = np.zeros(self.n, dtype=np.int64)
        if rule.jit is None:
            full = np.tril(sweep.cov) + np.tril(sweep.cov, -1).T
            dense_sweep.sequential_sweep_reference(full, sweep.mean, sweep.tau, sweep.nu, y, order, rule, log_z, status)
            sweep.cov[...] = full
        else:
            dense_sweep.sequential_sweep(sweep.cov, sweep.mean, sweep.tau, sweep.nu, y, order, rule, log_z, status)
        return log_z, status

    def cov_sqrt(self) -> np.ndarray:
        """The lower Cholesky factor L of K = L L^T (computed once)."""
        if self._chol is None:
            with small_problem_threads(self.n):
                self._chol = np.ascontiguousarray(linalg.cholesky(self.K, lower=True, check_finite=False))
        return self._chol

    def cross_covariance(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """(K(X, X_new) (N, M), diag K(X_new, X_new) (M,)): what every prediction at ``X_new``
        reads. On one BLAS thread for small N (an (N, D) x (D, M) product: under load on 2 cores,
        OpenBLAS's threads made K(X, X_new) for 200 x 3600 points take 8-12 ms against 5 ms)."""
        X_new = as_inputs(X_new, "X_new")
        with small_problem_threads(self.n):
            return self.kernel(self.X, X_new), self.kernel.diag(X_new)

    def conditional(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """(P, var): f_* | f ~ N(P^T f, var) with P = K^-1 k_* and var = k_** - k_*^T K^-1 k_*."""
        Ks, kss = self.cross_covariance(X_new)
        with small_problem_threads(self.n):
            P = linalg.cho_solve((self.cov_sqrt(), True), Ks, check_finite=False)
        return P, kss - np.einsum("ij,ij->j", Ks, P)


class DenseSweep:
    """A sequential sweep's state: Sigma (lower triangle valid, C order), mu and the sites."""

    def __init__(self, cov: np.ndarray, mean: np.ndarray, tau: np.ndarray, nu: np.ndarray):
        self.cov, self.mean, self.tau, self.nu = cov, mean, tau, nu

    @property
    def var(self) -> np.ndarray:
        return np.diag(self.cov).copy()


class DenseGaussian:
    """The posterior N(mu, Sigma) of a :class:`DensePrior` given sites (tau, nu).

    All tau >= 0: GPML's stable form with B = I + T^1/2 K T^1/2 = L L^T (Rasmussen and
    Williams, Alg. 3.5): Sigma = K - V^T V with V = L^-1 T^1/2 K (marginals diag(K) - colsum(V^2)
    at once, the full Sigma only when asked for), weights = nu - T^1/2 B^-1
    T^1/2 K nu. Some tau < 0 (non-log-concave likelihoods in VB / Laplace): the general form
    Sigma = (I + K T)^-1 K, weights = (I + T K)^-1 nu by LU; the determinant of I + K T must be
    positive, else :class:`IndefinitePosterior`.
    """

    def __init__(self, prior: DensePrior, tau: np.ndarray, nu: np.ndarray):
        self.prior, self.tau, self.nu = prior, tau, nu
        with small_problem_threads(prior.n):
            self._factorise(prior.K, prior.n, tau, nu)

    def _factorise(self, K, n, tau, nu):
        self.stable = bool(np.all(tau >= 0))
        self._whitening = None  # L^-1 T^1/2, formed on first use (_whitener)
        if self.stable and not tau.any():
            # no site has a precision yet (every run's start): B = I, V = 0, Sigma = K, weights = nu,
            # exactly what the general branch below computes, without its O(N^3) Cholesky,
            # triangular solve and (later) K - V^T V
            self._L, self._sw, self._V = np.eye(n), np.zeros(n), None
            self._cov = np.array(K, order="C", copy=True)
            self.var = np.diag(K).copy()
            self.weights = np.array(nu, dtype=float, copy=True)
            self.half_log_det = 0.0
        elif self.stable:
            sw = np.sqrt(tau)
            B = sw[:, None] * K * sw[None, :]
            B[np.diag_indices_from(B)] += 1.0
            self._L = linalg.cholesky(B, lower=True, overwrite_a=True, check_finite=False)
            self._sw = sw
            self._V = linalg.solve_triangular(self._L, sw[:, None] * K, lower=True, overwrite_b=True,
                                              check_finite=False)
            self._cov = None  # K - V^T V, formed on first use (parallel EP and VB need only its diagonal)
            self.var = np.diag(K) - np.einsum("ij,ij->j", self._V, self._V)
            self.weights = nu - sw * linalg.cho_solve((self._L, True), sw * (K @ nu), check_finite=False)
            self.half_log_det = float(np.sum(np.log(np.diag(self._L))))
        else:
            A = np.eye(n) + K * tau[None, :]  # I + K T
            sign, logdet = np.linalg.slogdet(A)
            if sign <= 0:
                raise IndefinitePosterior(
                    "the site precisions make K^-1 + T indefinite (no Gaussian posterior); use damping or a "
                    "log-concave likelihood"
                )
            self._lu = linalg.lu_factor(A.T, check_finite=False)  # (I + T K) = (I + K T)^T
            cov = linalg.solve(A, K, check_finite=False)
            self._cov = 0.5 * (cov + cov.T)
            self.weights = linalg.lu_solve(self._lu, nu, check_finite=False)
            self.half_log_det = 0.5 * logdet
            self.var = np.diag(self._cov).copy()
            if np.any(self.var <= 0):
                raise IndefinitePosterior("the site precisions give a non-positive posterior variance")
        self.mean = K @ self.weights
        self.nu_sigma_nu = float(nu @ self.mean)

    @property
    def cov(self) -> np.ndarray:
        """Sigma = (K^-1 + T)^-1 (N x N, symmetric; formed once, on first use)."""
        if self._cov is None:
            lower = self.lower_cov()
            self._cov = np.tril(lower) + np.tril(lower, -1).T
        return self._cov

    def lower_cov(self) -> np.ndarray:
        """A fresh C-ordered copy of Sigma whose lower triangle is valid: K - V^T V by one ``dsyrk``
        (half the flops of the full product)."""
        if self._cov is not None:
            return np.array(self._cov, order="C", copy=True)
        out = np.array(self.prior.K, order="C", copy=True)
        with small_problem_threads(self.prior.n):
            syrk_update_lower(out, np.ascontiguousarray(self._V), -1.0)
        return out

    def squared_cov_matvec(self, v: np.ndarray) -> np.ndarray:
        """(Sigma o Sigma) v."""
        cov = self.cov
        return (cov * cov) @ v

    def _solve_w(self, rhs: np.ndarray) -> np.ndarray:
        """W rhs with W = (K + T^-1)^-1 = T^1/2 B^-1 T^1/2 (= (I + T K)^-1 T in general)."""
        if self.stable:
            sw = self._sw.reshape((-1,) + (1,) * (rhs.ndim - 1))
            return sw * linalg.cho_solve((self._L, True), sw * rhs, check_finite=False)
        t = self.tau.reshape((-1,) + (1,) * (rhs.ndim - 1))
        return linalg.lu_solve(self._lu, t * rhs, check_finite=False)

    def _whitener(self) -> np.ndarray:
        """L^-1 T^1/2 (N x N, all tau >= 0; formed once, on first use). For M >= 4 N test points (a
        page's grid), forming it (a solve with N right-hand sides) and applying it (one matrix
        product) is faster than a triangular solve with M right-hand sides: a 60 x 60 grid on one
        thread took 3.2 -> 0.7 ms at N = 60 and 11.9 -> 6.8 ms at N = 200; below M = 4 N the solve
        was as fast or faster (N = 500, M = 1000: 14.4 against 15.9 ms). B = I + T^1/2 K T^1/2 has
        every eigenvalue >= 1, so L^-1 is as well conditioned as L."""
        if self._whitening is None:
            self._whitening = linalg.solve_triangular(self._L, np.diag(self._sw), lower=True, check_finite=False)
        return self._whitening

    def predict_f(self, X_new, full_cov: bool = False):
        """Latent mean k_*^T weights and variance k_** - k_*^T (K + T^-1)^-1 k_* (R&W eqs. 3.60-3.61;
        marginal variances with all tau >= 0: k_** - |L^-1 T^1/2 k_*|^2, R&W Alg. 3.6 line 7)."""
        Ks, kss = self.prior.cross_covariance(X_new)
        if not full_cov:
            return self.predict_from_cross(Ks, kss)
        with small_problem_threads(self.prior.n):
            WKs = self._solve_w(Ks)
        return Ks.T @ self.weights, self.prior.kernel(as_inputs(X_new, "X_new")) - Ks.T @ WKs

    def predict_from_cross(self, Ks: np.ndarray, kss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict_f`'s marginals from the caller's cross-covariance ``Ks`` = K(X, X_new)
        (N, M) and prior variances ``kss`` = diag K(X_new, X_new) (M,): several posteriors on the
        same kernel and inputs (EP and QP on a page's grid) then share one K(X, X_new). ``Ks`` is
        not written to."""
        with small_problem_threads(self.prior.n):
            mean = Ks.T @ self.weights
            if self.stable:
                # k_*^T W k_* = |L^-1 T^1/2 k_*|^2 with B = L L^T: one triangular solve, half of cho_solve's two
                if Ks.shape[1] >= 4 * self.prior.n:  # a grid: see _whitener
                    V = self._whitener() @ Ks
                else:
                    V = linalg.solve_triangular(self._L, self._sw[:, None] * Ks, lower=True, overwrite_b=True,
                                                check_finite=False)
                return mean, kss - np.einsum("ij,ij->j", V, V)
            return mean, kss - np.einsum("ij,ij->j", Ks, self._solve_w(Ks))

    def grad_log_marginal(self) -> np.ndarray:
        """Explicit gradient 1/2 tr((w w^T - W) dK/d log theta_j), w = ``weights`` (R&W eq. 5.9; GPML infEP).

        At an EP fixed point the sites' implicit dependence on theta adds nothing (the evidence
        is stationary in the site parameters), so this is the gradient of eq. 4.
        """
        with small_problem_threads(self.prior.n):
            W = self._solve_w(np.eye(self.prior.n))
        F = np.outer(self.weights, self.weights) - 0.5 * (W + W.T)
        # dK/d log theta_j (the jitter does not depend on theta)
        grads = self.prior.kernel.grad_log_params(self.prior.X)
        return np.array([0.5 * np.sum(F * dK) for dK in grads])
