"""Power EP and QP on a sparse (pseudo-point) prior, and VSGP: :class:`SparsePrior` (fitted by
:func:`qpviz.inference.site_fit.fit_power_ep` or ``qpviz.fit(..., inducing=Z)``).

A new implementation of the prior interface (:mod:`.prior`), run by the one EP / QP engine
(:func:`qpviz.inference.ep.run_sites`, :mod:`.sweep`, :mod:`.sites`), for any likelihood.

**Model** (paper 001, pseudo-point approximations and Power EP; Bui, Yan and Turner 2017).
M inducing values u (f at pseudo-inputs Z, or VSGP's blurred values, paper 002 sec. 3:
:mod:`.inducing`) with p(u) = N(0, K_uu). Each observation gets a site on the projection
h_n = a_n^T u, a_n = K_uu^-1 k_un, the prior's mean of f_n given u:

    q(u) proportional to N(u | 0, K_uu) prod_n exp(-tau_n h_n^2 / 2 + nu_n h_n).

Whitened, K_uu = L_uu L_uu^T, u = L_uu v, W = L_uu^-1 K_uf (M x N, stored C-ordered: each BLAS
call of a sweep then sees the Fortran (N, M) matrix W^T, the layout where OpenBLAS's dsyrk and
right-side dtrsm are fastest) with columns w_n: h_n = w_n^T v,
v ~ N(0, I), and the posterior of v has precision P = I + W T W^T (T = diag tau), covariance
Sigma_v = P^-1 and mean Sigma_v W nu. The prior's conditional variance of f_n given u,
d_n = k_nn - w_n^T w_n >= 0 (FITC's diagonal correction; tiny negatives from rounding are clipped
and counted), enters the site rule: f_n = h_n + e_n, e_n ~ N(0, d_n), and each site update
projects the tilted distribution of f_n, p(y_n|f)^alpha N(f | m_c, v_c + d_n), and carries the
result to h_n through the exact Gaussian conditional (:mod:`.sites`, steps 1'-4'). alpha = 1 is
EP (FITC-EP for a Gaussian likelihood), alpha -> 0 VFE; QP replaces the moment projection of
f_n by the W2 one.

**States.** :meth:`SparsePrior.condition` costs one N x M weighted product (P by ``dsyrk``)
and one M x M Cholesky, then one triangular solve V = L_P^-1 W for all marginals
(:mod:`.sparse_columns`): Var h_n = |v_n|^2 (column n of V), E h_n = v_n^T L_P^-1 W nu. The
state's ``mean`` / ``var`` are the marginals of h_n (what the site rule reads); f_n's are
``mean`` and ``f_var = var + d_n`` (``predict_f(X)`` gives the same; plots should use those).
Sequential sweeps carry (Sigma_v, m_v) and update them by O(M^2) rank-one steps per site
(numba, :mod:`.sparse_sweeps`).
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from qpviz._blas import gram_update_lower, small_problem_threads
from qpviz.inference.inducing import (as_inducing, as_inducing_cov, cholesky_kuu, covariance_vjp,
                                      inducing_covariances, pack_inducing_cov, packed_inducing_cov_grad,
                                      unpack_inducing_cov)
from qpviz.inference.prior import IndefinitePosterior
from qpviz.inference.sites import gaussian_power, power_gaussian_moments_numpy
from qpviz.inference.sparse_columns import (SCALED_MIN, VAR_FLOOR, scale_columns, scaled_column_moments,
                                            solve_columns_in_place)
from qpviz.inference.sparse_sweeps import (sequential_sweep_reference, sparse_sweep_sites, sparse_sweep_sites_closed,
                                           sparse_sweep_sites_general)
from qpviz.kernels import Kernel, as_inputs

__all__ = ["SparsePrior", "SparseGaussian", "SparseSweep", "sparse_sweep_sites",
           "sequential_sweep_reference", "VAR_FLOOR", "check_alpha"]


class SparsePrior:
    """f ~ GP(0, k) summarised by M inducing values (module docstring): the sparse Power-EP prior.

    ``Z``: (M, D) inducing inputs (pseudo-points), or VSGP's centres with local covariances
    ``inducing_cov`` ((M,) spherical or (M, D, D) full; RBF kernel; paper 002 eq. 14, Cor. 2).
    ``jitter`` is added to K_uu (:func:`qpviz.inference.inducing.cholesky_kuu`: the package's
    jitter, grown with a :class:`JitterWarning` when K_uu is singular). Attributes: ``Z``,
    ``inducing_cov`` (validated, (M, D, D) or None), ``W`` (M, N), ``Wt`` = W^T (N, M, a view), ``cond_var`` (d_n),
    ``n_negative_cond_var`` (d_n < 0 clipped to 0), ``jitter_used``.
    """

    def __init__(self, kernel: Kernel, X, Z, inducing_cov=None, jitter: float | None = None):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a qpviz kernel such as qpviz.kernels.RBF(), got {kernel!r}")
        self.kernel = kernel
        self.X = as_inputs(X)
        self.Z = as_inducing(Z, self.X)
        self.inducing_cov = (None if inducing_cov is None
                             else as_inducing_cov(inducing_cov, self.Z.shape[0], self.Z.shape[1]))
        #: VSGP given spherical covariances ((M,): c_j I): learning keeps them spherical
        self.spherical_cov = inducing_cov is not None and np.ndim(inducing_cov) == 1
        self.jitter = jitter
        cov = inducing_covariances(kernel, self.X, self.Z, self.inducing_cov)
        self._Lu, self.jitter_used = cholesky_kuu(cov.Kuu, jitter)
        self.W = np.ascontiguousarray(linalg.solve_triangular(self._Lu, cov.Kuf, lower=True, check_finite=False))
        d = cov.kff_diag - np.einsum("ij,ij->j", self.W, self.W)
        self.n_negative_cond_var = int(np.count_nonzero(d < 0.0))
        self.most_negative_cond_var = float(min(d.min(), 0.0))
        self.cond_var = np.maximum(d, 0.0)
        self._scratch = None
        self._rows = None

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def Wt(self) -> np.ndarray:
        """W^T (N, M): row n is w_n (a Fortran-ordered view of ``W``)."""
        return self.W.T

    @property
    def m(self) -> int:
        """Number of inducing values."""
        return self.Z.shape[0]

    def __repr__(self) -> str:
        kind = "VSGP" if self.inducing_cov is not None else "pseudo-points"
        return f"SparsePrior({self.kernel!r}, N={self.n}, M={self.m}, {kind}, jitter={self.jitter_used:g})"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_scratch"] = None  # work arrays, rebuilt where needed
        state["_rows"] = None
        return state

    def rows(self) -> np.ndarray:
        """W^T as a C-ordered (N, M) copy, built on first use: the sequential sweeps read w_n site by
        site, and on the Fortran view ``Wt`` each read is strided (measured at N = 1e5, M = 200:
        23.4 against 17.6 us a site). Costs a second N x M array where sequential sweeps run."""
        if self._rows is None:
            self._rows = np.ascontiguousarray(self.W.T)
        return self._rows

    def scratch(self) -> np.ndarray:
        """An (M, N) work array of :meth:`condition`, allocated once per prior."""
        if self._scratch is None:
            self._scratch = np.empty_like(self.W)
        return self._scratch

    def with_kernel(self, kernel: Kernel) -> "SparsePrior":
        return SparsePrior(kernel, self.X, self.Z, self._given_cov(self.inducing_cov), self.jitter)

    def _given_cov(self, cov):
        """(M, D, D) covariances in the form this prior was given them ((M,) when spherical)."""
        return cov[:, 0, 0].copy() if self.spherical_cov else cov

    def inducing_params(self) -> np.ndarray:
        """What ``optimise_inducing=True`` fits, as one unconstrained vector: Z row by row, then (VSGP)
        the local covariances packed by :func:`qpviz.inference.inducing.pack_inducing_cov` (log c_j
        when they were given spherical, else each Cholesky factor with a log diagonal)."""
        if self.inducing_cov is None:
            return self.Z.ravel().copy()
        return np.concatenate([self.Z.ravel(), pack_inducing_cov(self.inducing_cov, self.spherical_cov)])

    def with_inducing_params(self, kernel: Kernel, params) -> "SparsePrior":
        """The same prior with ``kernel`` and the inducing inputs (and covariances) of the vector
        ``params`` of :meth:`inducing_params`."""
        params = np.asarray(params, float)
        M, D = self.Z.shape
        Z = params[:M * D].reshape(M, D)
        cov = None
        if self.inducing_cov is not None:
            cov = self._given_cov(unpack_inducing_cov(params[M * D:], M, D, self.spherical_cov))
        return SparsePrior(kernel, self.X, Z, cov, self.jitter)

    def cross_weights(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """(W_* = L_uu^-1 K_u*, diag k_**) at new inputs (VSGP: the blurred K~(x, b_j), eq. 14)."""
        X_new = as_inputs(X_new, "X_new")
        cov = inducing_covariances(self.kernel, X_new, self.Z, self.inducing_cov)
        return linalg.solve_triangular(self._Lu, cov.Kuf, lower=True, check_finite=False), cov.kff_diag

    def condition(self, tau, nu) -> "SparseGaussian":
        """q(u) proportional to N(u | 0, K_uu) prod_n exp(-tau_n h_n^2/2 + nu_n h_n) (module docstring)."""
        tau = np.ascontiguousarray(tau, float)
        nu = np.ascontiguousarray(nu, float)  # the kernels read them contiguously
        if tau.shape != (self.n,) or nu.shape != (self.n,):
            raise ValueError(f"site parameters must have shape ({self.n},); got {tau.shape} and {nu.shape}")
        return SparseGaussian(self, tau, nu)

    def start_sweeps(self, state: "SparseGaussian") -> "SparseSweep":
        """(Sigma_v, m_v) and the sites of ``state``, copied."""
        return SparseSweep(self, state.cov_v(), state.mean_v.copy(), state.tau.copy(), state.nu.copy())

    def sequential_sweep(self, sweep: "SparseSweep", order, rule, y):
        """Sites in ``order`` one after the other, each by an O(M^2) rank-one update of
        (Sigma_v, m_v) (:func:`sparse_sweep_sites`, numba; :func:`sequential_sweep_reference`
        for likelihoods without numba kernels). Returns (log_z, status)."""
        log_z = np.full(self.n, np.nan)
        status = np.zeros(self.n, dtype=np.int64)
        order = np.ascontiguousarray(order, dtype=np.int64)
        if rule.jit is None:
            sequential_sweep_reference(self.rows(), self.cond_var, sweep.cov, sweep.mean_v, sweep.tau, sweep.nu, y,
                                       order, rule, log_z, status)
        else:
            method, handle, damping, coef, meta = rule.jit
            kernel = sparse_sweep_sites_closed if rule.closed else sparse_sweep_sites_general
            kernel(self.rows(), self.cond_var, sweep.cov, sweep.mean_v, sweep.tau, sweep.nu, y, order, method, handle,
                   damping, coef, meta, log_z, status)
        return log_z, status

    def cov_sqrt(self) -> np.ndarray:
        raise NotImplementedError("MCMC, VB and Laplace need the dense prior (qpviz.inference.DensePrior); "
                                  "the sparse prior runs EP / QP / Power EP only")

    def conditional(self, X_new):
        raise NotImplementedError("MCMC, VB and Laplace need the dense prior (qpviz.inference.DensePrior); "
                                  "the sparse prior runs EP / QP / Power EP only")


class SparseSweep:
    """A sequential sweep's state: Sigma_v (M x M, full), m_v and the sites."""

    def __init__(self, prior: SparsePrior, cov: np.ndarray, mean_v: np.ndarray, tau: np.ndarray, nu: np.ndarray):
        self.prior, self.cov, self.mean_v, self.tau, self.nu = prior, cov, mean_v, tau, nu

    @property
    def mean(self) -> np.ndarray:
        """E h_n = w_n^T m_v."""
        return self.mean_v @ self.prior.W

    @property
    def var(self) -> np.ndarray:
        """Var h_n = w_n^T Sigma_v w_n (O(N M^2): the drift check at a refresh)."""
        W = self.prior.W
        return np.maximum(np.einsum("ij,ij->j", self.cov @ W, W), VAR_FLOOR)


class SparseGaussian:
    """q(u) of a :class:`SparsePrior` given sites (tau, nu) (module docstring, "States").

    ``mean``, ``var``: marginals of h_n; ``f_var`` = var + d_n, f_n's; ``half_log_det`` =
    1/2 log|I + W T W^T| = 1/2 log|I + Q T| and ``nu_sigma_nu`` = nu^T Cov(h) nu (the Power-EP
    energy's Phi(q) - Phi(p), :mod:`.ep`); ``weights`` = nu - T mean, with mean = Q weights.
    """

    def __init__(self, prior: SparsePrior, tau: np.ndarray, nu: np.ndarray):
        self.prior, self.tau, self.nu = prior, tau, nu
        W = prior.W
        scratch = prior.scratch()  # (M, N), reused: no fresh pages to fault in per sweep at large N
        with small_problem_threads(prior.n):
            precision = np.eye(prior.m)
            sqrt_tau = np.sqrt(tau) if np.all(tau >= 0) else None
            if sqrt_tau is not None:
                weighted_nu = scale_columns(W, sqrt_tau, nu, scratch)  # scratch = W diag(sqrt tau); W nu
                gram_update_lower(precision, scratch, 1.0)
            else:  # negative site precisions (VB / Laplace style sites): one general product
                np.multiply(W, tau[None, :], out=scratch)
                precision += scratch @ W.T
                weighted_nu = W @ nu
            try:
                self._Lp = linalg.cholesky(precision, lower=True, overwrite_a=True, check_finite=False)
            except linalg.LinAlgError:
                raise IndefinitePosterior("the site precisions make I + W T W^T indefinite (no Gaussian posterior); "
                                          "use damping or a log-concave likelihood") from None
            c = linalg.solve_triangular(self._Lp, weighted_nu, lower=True, check_finite=False)
            self.mean_v = linalg.solve_triangular(self._Lp, c, lower=True, trans="T", check_finite=False)
            unscaled = (np.arange(prior.n) if sqrt_tau is None
                        else np.flatnonzero(sqrt_tau < SCALED_MIN))  # columns whose scaling would lose v_n
            if unscaled.size > prior.n // 2:
                np.copyto(scratch, W)
                solve_columns_in_place(self._Lp, scratch)  # columns v_n = L_P^-1 w_n
                self.var = np.maximum(np.einsum("ij,ij->j", scratch, scratch), VAR_FLOOR)
                self.mean = c @ scratch
            else:
                # scratch still holds the columns sqrt(tau_n) w_n that formed P: solving on them in place
                # gives sqrt(tau_n) v_n, so Var h_n = |.|^2 / tau_n, E h_n = (c . ) / sqrt(tau_n), and
                # the M x N copy of W and one pass over it are saved (a sweep at N = 1e5 is memory-bound
                # outside its two BLAS-3 calls); the few columns with tau_n ~ 0 are solved unscaled
                solve_columns_in_place(self._Lp, scratch)
                self.var, self.mean = scaled_column_moments(scratch, c, sqrt_tau)
                if unscaled.size:
                    V = linalg.solve_triangular(self._Lp, W[:, unscaled], lower=True, check_finite=False)
                    self.var[unscaled] = np.maximum(np.einsum("ij,ij->j", V, V), VAR_FLOOR)
                    self.mean[unscaled] = c @ V
        self.weights = nu - tau * self.mean
        self.half_log_det = float(np.sum(np.log(np.diag(self._Lp))))
        self.nu_sigma_nu = float(nu @ self.mean)

    @property
    def f_var(self) -> np.ndarray:
        """Var f_n = Var h_n + d_n (the latent marginal at the training inputs, as ``predict_f(X)``)."""
        return self.var + self.prior.cond_var

    def cov_v(self) -> np.ndarray:
        """Sigma_v = P^-1 (M x M, symmetric, C order)."""
        Linv = linalg.solve_triangular(self._Lp, np.eye(self.prior.m), lower=True, check_finite=False)
        return np.ascontiguousarray(Linv.T @ Linv)

    @property
    def cov(self) -> np.ndarray:
        """Cov(h) = V^T V, V = L_P^-1 W (N x N: small problems only)."""
        V = linalg.solve_triangular(self._Lp, self.prior.W, lower=True, check_finite=False)
        return V.T @ V

    def predict_f(self, X_new, full_cov: bool = False):
        """f_* = a_*^T u + e_*: mean w_*^T m_v, variance k_** - w_*^T w_* + w_*^T Sigma_v w_*
        (paper 001's FITC / Power-EP predictive; VSGP: w_* from the blurred K~(x_*, b_j), paper 002 eq. 14)."""
        Ws, kss = self.prior.cross_weights(X_new)
        mean = Ws.T @ self.mean_v
        Vs = linalg.solve_triangular(self._Lp, Ws, lower=True, check_finite=False)
        if full_cov:
            return mean, self.prior.kernel(as_inputs(X_new, "X_new")) - Ws.T @ Ws + Vs.T @ Vs
        return mean, kss - np.einsum("ij,ij->j", Ws, Ws) + np.einsum("ij,ij->j", Vs, Vs)

    def squared_cov_matvec(self, v):
        raise NotImplementedError("VB needs the dense prior (qpviz.inference.DensePrior)")

    def bind(self, likelihood, y) -> None:
        """Remember the (tempered) likelihood and the data the sites were fitted to: the energy's
        gradient needs their tilted distributions (:meth:`grad_log_marginal`; set by
        :func:`qpviz.inference.ep.run_sites`)."""
        self.likelihood, self.y = likelihood, np.asarray(y, float)

    def grad_log_marginal(self) -> np.ndarray:
        """Explicit gradient of the Power-EP energy (:mod:`.ep`) in the kernel's log hyper-parameters
        at a fixed point of the sites (:meth:`covariance_gradients`, chained through the kernel's
        vector-Jacobian products; central differences of the kernel matrices, step 1e-6, for a kernel
        without them)."""
        G_uf, G_uu, g_ff = self.covariance_gradients()
        prior = self.prior
        try:
            return covariance_vjp(prior.kernel, prior.X, prior.Z, prior.inducing_cov, G_uf, G_uu, g_ff)[0]
        except NotImplementedError:
            return np.array([np.sum(G_uf * dKuf) + np.sum(G_uu * dKuu) + g_ff @ dkff
                             for dKuu, dKuf, dkff in _covariance_differences(prior)])

    def grad_inducing(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(dF/dZ (M, D), dF/dC (M, D, D) for VSGP's local covariances, else None): the same
        energy's gradient in the inducing inputs, at a fixed point of the sites."""
        prior = self.prior
        _, grad_Z, grad_C = covariance_vjp(prior.kernel, prior.X, prior.Z, prior.inducing_cov,
                                           *self.covariance_gradients())
        return grad_Z, grad_C

    def grad_inducing_params(self) -> np.ndarray:
        """:meth:`grad_inducing` as one vector, in the order of :meth:`SparsePrior.inducing_params`."""
        return self.grad_kernel_and_inducing_params()[1]

    def grad_kernel_and_inducing_params(self) -> tuple[np.ndarray, np.ndarray]:
        """(:meth:`grad_log_marginal`, :meth:`grad_inducing_params`) from one pass of
        :meth:`covariance_gradients` and one chain through the kernel (what learning both needs)."""
        prior = self.prior
        grad_theta, grad_Z, grad_C = covariance_vjp(prior.kernel, prior.X, prior.Z, prior.inducing_cov,
                                                    *self.covariance_gradients())
        if grad_C is None:
            return grad_theta, grad_Z.ravel()
        packed = prior.inducing_params()[grad_Z.size:]
        return grad_theta, np.concatenate([grad_Z.ravel(), packed_inducing_cov_grad(packed, grad_C,
                                                                                    prior.spherical_cov)])

    def covariance_gradients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dF/dK_uf (M, N), dF/dK_uu (M, M), dF/d diag K_ff (N,)) of the Power-EP energy F at a fixed
        point of the sites (where F is stationary in them: the tilted and q's moments of h_n agree,
        so the site terms' dependence through q's marginals vanishes).

        F depends on the covariances through Q = K_fu K_uu^-1 K_uf and d = diag K_ff - diag Q:

            dF = tr(G dQ) + sum_n s_n dk_nn,   G = 1/2 (a a^T - R) - diag(s),
            R = (Q + T^-1)^-1 = T - T Cov(h) T,  a = ``weights``,
            s_n = (1/alpha) d log Z~_n / d d_n = 1/(2 alpha) [((mu_f - m_c)/V)^2 + (s_f^2 - V)/V^2]

        (the tilted f-moments mu_f, s_f^2 of cavity N(m_c, V = v_c + d_n); the dense prior's R&W eq.
        5.9 is the first term). With A = K_uu^-1 K_uf and B = A G (M x N, formed without N x N
        arrays), tr(G dQ) = 2 sum(B o dK_uf) - sum((B A^T) o dK_uu): dF/dK_uf = 2 B,
        dF/dK_uu = -A G A^T, dF/d diag K_ff = s.
        """
        likelihood = getattr(self, "likelihood", None)
        if likelihood is None:
            raise ValueError("the gradient needs the likelihood: run the sites with qpviz.inference.ep.run_sites "
                             "(or call state.bind(likelihood, y) first)")
        prior = self.prior
        alpha = likelihood.alpha
        tau, nu = self.tau, self.nu
        tau_c = 1.0 / self.var - alpha * tau
        nu_c = self.mean / self.var - alpha * nu
        m_c = nu_c / tau_c
        V = 1.0 / tau_c + prior.cond_var
        if gaussian_power(likelihood):  # closed form: alpha -> 0 divides its O(alpha) terms by alpha
            _, mean_f, var_f = power_gaussian_moments_numpy(likelihood, self.y, m_c, V)
        else:
            tilted = likelihood.tilted_moments(self.y, m_c, V)
            mean_f, var_f = tilted.mean, tilted.var
        s = ((mean_f - m_c) ** 2 / V ** 2 + (var_f - V) / V ** 2) / (2.0 * alpha)
        A = linalg.solve_triangular(prior._Lu, prior.W, lower=True, trans="T", check_finite=False)  # (M, N)
        Vmat = linalg.solve_triangular(self._Lp, prior.W, lower=True, check_finite=False)  # Cov(h) = V^T V
        a = self.weights
        A_tau = A * tau[None, :]
        B = (0.5 * np.outer(A @ a, a) - 0.5 * A_tau + 0.5 * ((A_tau @ Vmat.T) @ Vmat) * tau[None, :]
             - A * s[None, :])
        BA = B @ A.T
        return 2.0 * B, -0.5 * (BA + BA.T), s


def _covariance_differences(prior: SparsePrior, step: float = 1e-6):
    """(dK_uu, dK_uf, d diag K_ff) / d log theta_j for each kernel hyper-parameter, by central differences."""
    theta = prior.kernel.log_params()
    for j in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        plus = inducing_covariances(prior.kernel.with_log_params(up), prior.X, prior.Z, prior.inducing_cov)
        minus = inducing_covariances(prior.kernel.with_log_params(down), prior.X, prior.Z, prior.inducing_cov)
        yield ((plus.Kuu - minus.Kuu) / (2 * step), (plus.Kuf - minus.Kuf) / (2 * step),
               (plus.kff_diag - minus.kff_diag) / (2 * step))


# -- Power EP's power ----------------------------------------------------------------------------------
def check_alpha(alpha) -> float:
    if isinstance(alpha, (bool, np.bool_)):
        raise ValueError(f"alpha must be a number in (0, 1] (1 = EP / FITC, -> 0 = VFE); got {alpha!r}")
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"alpha must be a number in (0, 1] (1 = EP / FITC, -> 0 = VFE); got {alpha!r}") from None
    if not (0.0 < a <= 1.0):
        raise ValueError(f"alpha must be in (0, 1] (1 = EP / FITC, -> 0 = VFE); got {alpha!r}")
    return a
