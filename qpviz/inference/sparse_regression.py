"""Sparse GP regression in closed form: FITC, PITC, DTC, VFE and Power EP(alpha) with a Gaussian likelihood.

Pseudo-point approximations (paper 001, Turner's tutorial: "FITC", "VFE", "Power EP: a unifying
framework"; Quinonero-Candela & Rasmussen 2005; Titsias 2009; Bui, Yan & Turner 2017, JMLR 18)
summarise f at the N inputs X by M inducing values u = f(Z). With

    Q = K_fu K_uu^-1 K_uf,    D = diag(K_ff - Q) = diag(d_n),    s2 = the noise variance,

each method's log evidence (or bound) is log N(y | 0, Q + Lambda) + extra:

=========== ==================================================== ===========================================
method      Lambda (the method's "noise")                        extra
=========== ==================================================== ===========================================
``fitc``    D + s2 I                                             0             (Snelson & Ghahramani 2006)
``pitc``    blockdiag_b(K_ff - Q)_bb + s2 I over ``blocks``      0             (Quinonero-Candela & R. 2005)
``dtc``     s2 I                                                 0             (Seeger et al. 2003)
``vfe``     s2 I                                                 -tr(K_ff - Q) / (2 s2)   (Titsias 2009)
Power EP    alpha D + s2 I                                       -(1 - alpha) / (2 alpha) sum_n log(1 + alpha d_n / s2)
=========== ==================================================== ===========================================

(Power EP: Bui, Yan & Turner 2017, sec. 3 "Power EP energy" for regression; alpha = 1 is FITC,
alpha -> 0 is VFE, since log(1 + alpha d / s2) / alpha -> d / s2.) Power EP is ``method="ep"``
(or ``"qp"``: a Gaussian tilted distribution is its own W2 projection, so QP = EP here).

Predictions (all methods, and GPy's ``FITC`` / ``DTC`` / ``VarDTC`` alike):

    Sigma   = (K_uu + K_uf Lambda^-1 K_fu)^-1,
    mean_*  = K_*u Sigma K_uf Lambda^-1 y,
    var_*   = k_** - Q_** + K_*u Sigma K_u*   (full_cov: K_** - Q_** + K_*u Sigma K_u*).

The k_** - Q_** term is what DTC's predictive has and "subset of regressors" drops (it makes
the variance revert to the prior far from Z; Quinonero-Candela & Rasmussen 2005, sec. 5);
GPy 1.15's DTC predicts with exactly this variance (woodbury_inv = K_uu^-1 - Sigma), as we do.
For VFE it is the optimal q(u) = N(K_uu Sigma K_uf y / s2, K_uu Sigma K_uu) pushed through
p(f_* | u); for FITC / PITC / Power EP the same formula with their Lambda.

Numerics (all O(N M^2) time, O(N M) memory; PITC adds O(N B^2) for blocks of size B; no N x N
array, no explicit inverse): L L^T = K_uu + jitter I (:func:`.inducing.cholesky_kuu`, the one
place of the jitter), W = L^-1 K_uf (so Q = W^T W), U = Lambda^-1/2 W^T and the M x M matrix
B = I + W Lambda^-1 W^T = L_B L_B^T. Then log|Q + Lambda| = log|Lambda| + log|B| and
y^T (Q + Lambda)^-1 y = |Lambda^-1/2 y|^2 - |c|^2 with c = L_B^-1 U^T Lambda^-1/2 y.

Gradients are analytic: dL/dK_uf, dL/dK_uu and dL/d diag K_ff (PITC: dL/dK_ff per block) once
per method (:func:`_evidence`), then the kernel's vector-Jacobian products
(:meth:`qpviz.kernels.Kernel.cross_vjp`, ``diag_vjp``) give the log hyper-parameters and Z.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize

from qpviz.inference.inducing import as_inducing, check_training_data, cholesky_kuu, covariance_vjp, kmeans_inducing
from qpviz.inference.options import MethodOptions, option
from qpviz.inference.posterior import Predictions, TrainingMarginals
from qpviz.kernels import VJP_KERNELS, Kernel, as_inputs
from qpviz.likelihoods import as_likelihood

__all__ = ["fit_sparse_regression", "SparseGaussianPosterior", "sparse_log_evidence", "kmeans_blocks",
           "SPARSE_METHODS", "POWER_EP_METHODS", "SparseRegressionOptions", "PITCOptions"]

#: The closed-form methods of a Gaussian likelihood (their own names).
SPARSE_METHODS = ("fitc", "pitc", "dtc", "vfe")
#: Power EP on pseudo-points: "ep" and "qp" coincide for a Gaussian likelihood.
POWER_EP_METHODS = ("ep", "qp")
_LOG_2PI = math.log(2.0 * math.pi)


def _solve_lower(L, B, trans: bool = False, overwrite: bool = False):
    """L^-1 B (or L^-T B); ``overwrite`` reuses B's memory when B is Fortran-ordered (the (M, N)
    arrays here are: they are transposes of C-ordered (N, M) ones or LAPACK's own output)."""
    return linalg.solve_triangular(L, B, lower=True, trans=1 if trans else 0, overwrite_b=overwrite,
                                   check_finite=False)


# --------------------------------------------------------------------------------------------
# The method's noise Lambda: diagonal (FITC, DTC, VFE, Power EP) or block-diagonal (PITC)
# --------------------------------------------------------------------------------------------

class _DiagonalNoise:
    """Lambda = diag(lam), lam_n = s2 + alpha d_n (Power EP; FITC: alpha = 1; DTC, VFE: alpha = 0)
    plus the method's extra term (VFE's trace, Power EP's log(1 + alpha d / s2))."""

    def __init__(self, method: str, alpha: float, d: np.ndarray, s2: float):
        self.method, self.alpha, self.d, self.s2 = method, alpha, d, s2
        self.weight = 0.0 if method in ("dtc", "vfe") else alpha  # dlam / dd
        self.lam = s2 + self.weight * d
        if np.any(self.lam <= 0):
            raise linalg.LinAlgError("the sparse approximation's noise diagonal is not positive")

    def logdet(self) -> float:
        return float(np.sum(np.log(self.lam)))

    def whiten(self, V: np.ndarray) -> np.ndarray:
        """Lambda^-1/2 V (V: (N,) or (N, k))."""
        root = np.sqrt(self.lam)
        return V / (root if V.ndim == 1 else root[:, None])

    def solve(self, V: np.ndarray) -> np.ndarray:
        return V / (self.lam if V.ndim == 1 else self.lam[:, None])

    def scale_columns(self, V: np.ndarray) -> np.ndarray:
        """V Lambda^-1 for an (M, N) array, in place."""
        V /= self.lam
        return V

    def extra(self) -> float:
        if self.method == "vfe":
            return -0.5 * float(np.sum(self.d)) / self.s2
        if self.method in ("fitc", "dtc") or self.alpha == 1.0:
            return 0.0
        a = self.alpha
        return -0.5 * (1.0 - a) / a * float(np.sum(np.log1p(a * self.d / self.s2)))

    def noise_gradients(self, a: np.ndarray, VL: np.ndarray):
        """From dL/dLambda (direct: 1/2 (a a^T - A^-1), diagonal entries) to the correction R with
        dL/dQ = 1/2 (a a^T - A^-1) - R (R = diag(dL/dd), as d = diag(K_ff) - diag(Q)), dL/d diag K_ff
        and dL/ds2. ``a`` = A^-1 y, ``VL`` = L_B^-1 W Lambda^-1 (diag A^-1 = 1/lam - colsum VL^2)."""
        g_lam = 0.5 * (a * a - 1.0 / self.lam + np.einsum("mn,mn->n", VL, VL))
        g_d = self.weight * g_lam
        d_s2 = float(np.sum(g_lam))
        if self.method == "vfe":
            g_d = g_d - 0.5 / self.s2
            d_s2 += 0.5 * float(np.sum(self.d)) / self.s2 ** 2
        elif self.method not in ("fitc", "dtc") and self.alpha != 1.0:
            one_minus = 1.0 - self.alpha
            g_d = g_d - 0.5 * one_minus / self.lam
            # d/ds2 of -(1-a)/(2a) log(lam / s2) = (1-a)/2 d / (lam s2), stable as a -> 0
            d_s2 += 0.5 * one_minus * float(np.sum(self.d / (self.lam * self.s2)))
        return g_d, g_d, d_s2

    @staticmethod
    def right_mul(W: np.ndarray, R: np.ndarray) -> np.ndarray:
        return W * R


class _BlockNoise:
    """PITC's Lambda = blockdiag_b(K_bb - Q_bb + s2 I), factorised block by block."""

    def __init__(self, kernel: Kernel, X: np.ndarray, W: np.ndarray, blocks, s2: float):
        self.blocks, self.s2 = blocks, s2
        self.chol = []
        for idx in blocks:
            Wb = W[:, idx]
            Lam = kernel(X[idx]) - Wb.T @ Wb
            Lam[np.diag_indices_from(Lam)] += s2
            self.chol.append(linalg.cholesky(Lam, lower=True, check_finite=False))

    def logdet(self) -> float:
        return float(sum(2.0 * np.sum(np.log(np.diag(Lb))) for Lb in self.chol))

    def whiten(self, V: np.ndarray) -> np.ndarray:
        out = np.empty_like(V)
        for idx, Lb in zip(self.blocks, self.chol):
            out[idx] = _solve_lower(Lb, V[idx])
        return out

    def solve(self, V: np.ndarray) -> np.ndarray:
        out = np.empty_like(V)
        for idx, Lb in zip(self.blocks, self.chol):
            out[idx] = linalg.cho_solve((Lb, True), V[idx], check_finite=False)
        return out

    def scale_columns(self, V: np.ndarray) -> np.ndarray:
        """V Lambda^-1 for an (M, N) array, in place (block by block)."""
        for idx, Lb in zip(self.blocks, self.chol):
            V[:, idx] = linalg.cho_solve((Lb, True), V[:, idx].T, check_finite=False).T
        return V

    @staticmethod
    def extra() -> float:
        return 0.0

    def noise_gradients(self, a: np.ndarray, VL: np.ndarray):
        """dL/dLambda_b = 1/2 (a_b a_b^T - [A^-1]_bb), [A^-1]_bb = Lambda_b^-1 - VL_b^T VL_b; since
        Lambda_b = K_bb - Q_bb + s2 I, it is also dL/dK_bb, the correction R_b and sums to dL/ds2."""
        grads = []
        d_s2 = 0.0
        for idx, Lb in zip(self.blocks, self.chol):
            Lam_inv = linalg.cho_solve((Lb, True), np.eye(len(idx)), check_finite=False)
            VLb = VL[:, idx]
            G = 0.5 * (np.outer(a[idx], a[idx]) - Lam_inv + VLb.T @ VLb)
            grads.append(G)
            d_s2 += float(np.trace(G))
        return grads, grads, d_s2

    def right_mul(self, W: np.ndarray, R) -> np.ndarray:
        out = np.empty_like(W)
        for idx, G in zip(self.blocks, R):
            out[:, idx] = W[:, idx] @ G
        return out


# --------------------------------------------------------------------------------------------
# Evidence, its gradients, and the factors predictions need
# --------------------------------------------------------------------------------------------

@dataclass
class _Fit:
    """One evaluation: the log evidence / bound and what predictions and gradients need."""

    value: float
    L: np.ndarray  #: chol(K_uu + jitter I)
    LB: np.ndarray  #: chol(I + W Lambda^-1 W^T)
    h: np.ndarray  #: L_B^-T c: mean_* = (L^-1 K_u*)^T h
    jitter: float
    d: np.ndarray  #: diag(K_ff - Q)
    grads: dict = field(default_factory=dict)


def _evidence(kernel, X, y, Z, s2, method, alpha, blocks, jitter, gradients: bool) -> _Fit:
    """The method's log evidence (module table) and, with ``gradients``, dL/dK_uf, dL/dK_uu,
    dL/d(diag K_ff or PITC's K_bb blocks) and dL/ds2.

    With A = Q + Lambda, a = A^-1 y and the effective dL/dQ = 1/2 (a a^T - A^-1) - R (R: the
    part of dL/dLambda that flows through d = diag(K_ff - Q), or PITC's blocks), Woodbury gives
    in whitened form (W = L^-1 K_uf, V = L_B^-1 W):

        dL/dK_uf = L^-T [ (W a) a^T - L_B^-T V Lambda^-1 - 2 W R ],
        dL/dK_uu = L^-T [ -1/2 (W a)(W a)^T + 1/2 (I - B^-1) + W R W^T ] L^-1,

    using K_uf A^-1 = K_uu Sigma K_uf Lambda^-1 and K_uf Lambda^-1 K_fu = Sigma^-1 - K_uu.
    At most three (M, N) arrays live at once (W, then V Lambda^-1 and W R; measured 486 MB at
    N = 10^5, M = 200, D = 8, where one is 160 MB).
    """
    n, m = X.shape[0], Z.shape[0]
    L, used_jitter = cholesky_kuu(kernel(Z), jitter)
    W = _solve_lower(L, kernel(X, Z).T, overwrite=True)  # K_uf as a Fortran-ordered view: solved in place
    d = kernel.diag(X) - np.einsum("mn,mn->n", W, W)
    noise = _BlockNoise(kernel, X, W, blocks, s2) if method == "pitc" else _DiagonalNoise(method, alpha, d, s2)
    U = noise.whiten(W.T)  # Lambda^-1/2 W^T, (N, M)
    B = U.T @ U
    B[np.diag_indices_from(B)] += 1.0
    LB = linalg.cholesky(B, lower=True, check_finite=False)
    y_white = noise.whiten(y)
    c = _solve_lower(LB, U.T @ y_white)
    del U
    log_det = noise.logdet() + 2.0 * float(np.sum(np.log(np.diag(LB))))
    quad = float(y_white @ y_white - c @ c)
    value = -0.5 * (n * _LOG_2PI + log_det + quad) + noise.extra()
    h = _solve_lower(LB, c, trans=True)
    out = _Fit(value, L, LB, h, used_jitter, d)
    if not gradients:
        return out
    a = noise.solve(y - W.T @ h)  # (Q + Lambda)^-1 y
    VL = noise.scale_columns(_solve_lower(LB, W))  # L_B^-1 W Lambda^-1, (M, N)
    R, d_kff, d_s2 = noise.noise_gradients(a, VL)
    Wa = W @ a
    WR = noise.right_mul(W, R)
    LB_inv = _solve_lower(LB, np.eye(m))
    inner_uu = -0.5 * np.outer(Wa, Wa) + 0.5 * (np.eye(m) - LB_inv.T @ LB_inv) + WR @ W.T
    inner_uu = 0.5 * (inner_uu + inner_uu.T)
    del W
    # inner_uf = (W a) a^T - L_B^-T VL - 2 W R, built in VL's memory (one (M, N) array at a time)
    inner_uf = _solve_lower(LB, VL, trans=True, overwrite=True)
    del VL
    WR *= 2.0
    inner_uf += WR
    del WR
    inner_uf *= -1.0
    inner_uf = linalg.blas.dger(1.0, Wa, a, a=inner_uf, overwrite_a=True)  # + (W a) a^T, in place
    d_Kuf = _solve_lower(L, inner_uf, trans=True, overwrite=True)
    del inner_uf
    d_Kuu = _solve_lower(L, _solve_lower(L, inner_uu, trans=True).T, trans=True)
    out.grads = {"Kuf": d_Kuf, "Kuu": 0.5 * (d_Kuu + d_Kuu.T), "kff": d_kff, "s2": d_s2}
    return out


def _chain_kernel(kernel, X, Z, grads, blocks, want_Z: bool):
    """dL/d log theta (and dL/dZ) from the covariance gradients through the kernel's VJPs."""
    if isinstance(grads["kff"], list):  # PITC: dL/dK_bb per block
        g_theta, gZ, _ = covariance_vjp(kernel, X, Z, None, grads["Kuf"], grads["Kuu"], np.zeros(X.shape[0]))
        for idx, G in zip(blocks, grads["kff"]):
            g_theta = g_theta + kernel.cross_vjp(X[idx], X[idx], G)[0]
    else:
        g_theta, gZ, _ = covariance_vjp(kernel, X, Z, None, grads["Kuf"], grads["Kuu"], grads["kff"])
    return g_theta, gZ if want_Z else None


def sparse_log_evidence(X, y, kernel, Z, noise_variance, method, *, alpha=1.0, blocks=None, jitter=None,
                        gradients=False):
    """The method's log evidence / bound at fixed hyper-parameters (module table), and with
    ``gradients=True`` also a dict of dL/d log theta (``"kernel"``), dL/d log s2 (``"log_noise"``)
    and dL/dZ (``"Z"``). Inputs as :func:`fit_sparse_regression` (``blocks`` required for PITC)."""
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    y = np.asarray(y, float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}); got shape {y.shape}")
    method, alpha = _check_method(method, alpha)
    if method == "pitc":
        blocks = _check_blocks(blocks, X.shape[0])
    fitted = _evidence(kernel, X, y, Z, float(noise_variance), method, alpha, blocks, jitter, gradients)
    if not gradients:
        return fitted.value
    g_theta, g_Z = _chain_kernel(kernel, X, Z, fitted.grads, blocks, True)
    return fitted.value, {"kernel": g_theta, "log_noise": fitted.grads["s2"] * float(noise_variance), "Z": g_Z}


# --------------------------------------------------------------------------------------------
# The posterior
# --------------------------------------------------------------------------------------------

class SparseGaussianPosterior(TrainingMarginals, Predictions):
    """The sparse approximate posterior of a Gaussian-likelihood regression (module docstring).

    Same surface as :class:`qpviz.inference.posterior.GPPosterior`: ``method``,
    ``predict_f(X_new, full_cov=False)``, ``predictive_log_density`` (log N(y_* | m_*, v_* + s2)),
    ``log_marginal_likelihood`` (the method's evidence, or VFE's bound), ``converged`` (True:
    closed form), ``hyperparameters``, ``diagnostics`` (``jitter``, ``optimisation`` report),
    ``mean`` / ``var`` at the training inputs; plus ``inducing`` (Z), ``blocks`` (PITC), ``alpha``
    (Power EP) and ``predict_y`` (latent mean, variance + s2).
    """

    def __init__(self, method, likelihood, kernel, X, y, Z, fitted: _Fit, *, alpha, blocks, diagnostics):
        self.method = method
        self.likelihood = likelihood
        self.kernel = kernel
        self.X, self.y = X, y
        self.inducing = Z
        self.blocks = blocks
        self.alpha = alpha
        self.log_marginal_likelihood = float(fitted.value)
        self.converged = True
        self.n_sweeps = 0
        self.history: list = []
        self.diagnostics = diagnostics
        self._L, self._LB, self._h = fitted.L, fitted.LB, fitted.h
        self._train = None

    def predict_f(self, X_new, full_cov: bool = False):
        """mean_* = K_*u Sigma K_uf Lambda^-1 y = W_*^T h, var_* = k_** - |W_*|^2 + |L_B^-1 W_*|^2
        (W_* = L^-1 K_u*); ``full_cov``: K_** - W_*^T W_* + (L_B^-1 W_*)^T (L_B^-1 W_*)."""
        X_new = as_inputs(X_new, "X_new")
        if X_new.shape[1] != self.X.shape[1]:
            raise ValueError(f"X_new must have the inputs' {self.X.shape[1]} column(s); got shape {X_new.shape}")
        W_star = _solve_lower(self._L, self.kernel(self.inducing, X_new))
        V_star = _solve_lower(self._LB, W_star)
        mean = W_star.T @ self._h
        if full_cov:
            return mean, self.kernel(X_new) - W_star.T @ W_star + V_star.T @ V_star
        var = self.kernel.diag(X_new) - np.einsum("mn,mn->n", W_star, W_star) + np.einsum("mn,mn->n", V_star, V_star)
        return mean, var

    def predict_y(self, X_new):
        """Mean and variance of a new noisy observation: (m_*, v_* + s2)."""
        mean, var = self.predict_f(X_new)
        return mean, var + self.likelihood.variance

    @property
    def site_mean(self):
        return None

    site_var = site_mean


# --------------------------------------------------------------------------------------------
# Input checks, blocks
# --------------------------------------------------------------------------------------------

def _check_method(method, alpha):
    if method not in SPARSE_METHODS + POWER_EP_METHODS:
        raise ValueError(f"sparse regression method must be one of {SPARSE_METHODS + POWER_EP_METHODS} "
                         f"(ep / qp: Power EP with alpha); got {method!r}")
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"alpha must be a number in (0, 1]; got {alpha!r}") from None
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"Power EP's alpha must be in (0, 1] (1: FITC, -> 0: VFE); got {alpha!r}")
    if method in SPARSE_METHODS and alpha != 1.0:
        raise ValueError(f"alpha is Power EP's power: use method='ep' with alpha={alpha:g} "
                         f"(method={method!r} has no alpha)")
    if method == "fitc":
        alpha = 1.0
    return method, alpha


def _check_blocks(blocks, n: int) -> list[np.ndarray]:
    """PITC's partition: a list of integer index arrays using every index 0..N-1 exactly once."""
    if blocks is None:
        raise ValueError("PITC needs blocks (a list of index arrays)")
    try:
        out = [np.asarray(b) for b in blocks]
    except TypeError:
        raise TypeError("blocks must be a list of integer index arrays, one per block") from None
    if not out or any(b.ndim != 1 or b.size == 0 or not np.issubdtype(b.dtype, np.integer) for b in out):
        raise ValueError("blocks must be a non-empty list of non-empty 1-D integer index arrays")
    flat = np.concatenate(out)
    if flat.min() < 0 or flat.max() >= n:
        raise ValueError(f"block indices must lie in 0..{n - 1} (one per row of X); got {flat.min()}..{flat.max()}")
    counts = np.bincount(flat, minlength=n)
    if np.any(counts != 1):
        missing, repeated = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
        raise ValueError(f"blocks must use each of the {n} indices exactly once: {missing.size} missing "
                         f"(e.g. {missing[:5].tolist()}), {repeated.size} repeated (e.g. {repeated[:5].tolist()})")
    return [b.astype(np.intp) for b in out]


def kmeans_blocks(X, size: int, seed: int = 0) -> list[np.ndarray]:
    """PITC's default partition: K-means clusters of X with ceil(N / size) centres (blocks of
    about ``size`` points; sizes vary with the data's clustering). Empty clusters are dropped."""
    X = as_inputs(X)
    n = X.shape[0]
    n_blocks = max(1, math.ceil(n / max(1, int(size))))
    centres = kmeans_inducing(X, n_blocks, seed)
    label = np.empty(n, dtype=np.intp)
    step = max(1, 2**22 // max(1, n_blocks))  # rows per chunk: keeps the distance matrix small
    for start in range(0, n, step):
        chunk = X[start:start + step]
        sq = np.sum(centres * centres, axis=1)[None, :] - 2.0 * chunk @ centres.T
        label[start:start + step] = np.argmin(sq, axis=1)
    return [idx for idx in (np.flatnonzero(label == j) for j in range(n_blocks)) if idx.size]


def _gaussian_likelihood(likelihood, method):
    lik = as_likelihood(likelihood)
    if not lik.is_conjugate:
        raise ValueError(
            f"method={method!r} is the closed form for the Gaussian likelihood; for the {lik.name!r} likelihood "
            "use qpviz.fit(..., method='ep' or 'qp', inducing=Z) (Power EP sweeps on pseudo-points)")
    return lik


@dataclass(frozen=True)
class SparseRegressionOptions(MethodOptions):
    """The options of ``qpviz.fit(..., method="fitc" | "dtc" | "vfe")`` (:func:`fit_sparse_regression`;
    Gaussian likelihood)."""

    inducing: object = option(None, "inducing inputs Z, (M, D), or an int M (K-means centres); required")
    optimise_inducing: bool = option(False, "also learn Z (analytic gradients)")
    seed: int = option(0, "random seed of K-means inducing inputs and blocks")


@dataclass(frozen=True)
class PITCOptions(SparseRegressionOptions):
    """The options of ``qpviz.fit(..., method="pitc")``: those of FITC and the blocks."""

    blocks: object = option(None, "a partition of the rows (None: K-means blocks of about M points)")


# --------------------------------------------------------------------------------------------
# Entry point and hyper-parameter learning
# --------------------------------------------------------------------------------------------

def fit_sparse_regression(X, y, likelihood, kernel, method, inducing, *, blocks=None, alpha=1.0, optimise=False,
                          optimise_inducing=False, optimise_likelihood=True, bounds=None, max_opt_iter=100, seed=0,
                          jitter=None) -> SparseGaussianPosterior:
    """Sparse GP regression with a Gaussian likelihood in closed form (module docstring).

    ``method``: ``"fitc"``, ``"pitc"``, ``"dtc"``, ``"vfe"``, or ``"ep"`` / ``"qp"`` (Power EP
    with power ``alpha`` in (0, 1]; the others take no alpha). ``inducing``: Z as an (M, D) array,
    or an int M (K-means centres of X, ``seed``); M <= N. ``blocks``: PITC's partition, a list of
    index arrays using each row of X exactly once; default :func:`kmeans_blocks` with blocks of
    about M points. ``jitter`` overrides :data:`qpviz.config.JITTER` for K_uu.

    ``optimise=True`` maximises the method's log evidence / bound over the kernel's log
    hyper-parameters and, with ``optimise_likelihood=True`` (the default: in regression the noise
    is learnt with the kernel), the log noise variance, by L-BFGS-B with analytic gradients;
    ``optimise_inducing=True`` also moves Z (with or without ``optimise``). ``bounds`` as
    :func:`qpviz.inference.fit.fit` (natural units, ``"likelihood.variance"`` for the noise;
    Z is unbounded); a fitted value on a bound raises
    :class:`qpviz.inference.hyper.OptimiserBoundWarning`. The report is
    ``diagnostics["optimisation"]``.
    """
    method, alpha = _check_method(method, alpha)
    lik = _gaussian_likelihood(likelihood, method)
    X, y = check_training_data(kernel, X, y, lik)
    n = X.shape[0]
    Z = as_inducing(inducing, X, seed)
    if Z.shape[0] > n:
        raise ValueError(f"{Z.shape[0]} inducing inputs for only {n} data points: use M <= N")
    if method == "pitc":
        blocks = kmeans_blocks(X, Z.shape[0], seed) if blocks is None else _check_blocks(blocks, n)
    elif blocks is not None:
        raise ValueError(f"blocks are PITC's partition; method={method!r} takes none (use method='pitc')")
    if bounds is not None and not optimise:
        raise TypeError("bounds limit the hyper-parameters that optimise=True fits; pass optimise=True or drop bounds")
    diagnostics: dict = {}
    if optimise or optimise_inducing:
        if type(kernel).__name__ not in VJP_KERNELS:
            raise NotImplementedError(f"learning with analytic gradients needs one of the kernels "
                                      f"{', '.join(VJP_KERNELS)}; got {kernel!r}")
        kernel, lik, Z, report = _optimise(X, y, lik, kernel, Z, method, alpha, blocks, jitter, optimise,
                                           optimise and optimise_likelihood, optimise_inducing, bounds, max_opt_iter)
        diagnostics["optimisation"] = report
    fitted = _evidence(kernel, X, y, Z, lik.variance, method, alpha, blocks, jitter, gradients=False)
    diagnostics.update(jitter=fitted.jitter, n_inducing=Z.shape[0], alpha=_power(method, alpha),
                       min_diag_correction=float(np.min(fitted.d)))
    if method == "pitc":
        diagnostics["block_sizes"] = [int(b.size) for b in blocks]
    return SparseGaussianPosterior(method, lik, kernel, X, y, Z, fitted, alpha=_power(method, alpha), blocks=blocks,
                                   diagnostics=diagnostics)


def _power(method: str, alpha: float) -> float | None:
    """Power EP's alpha of a method (FITC is alpha = 1; DTC, VFE and PITC have none)."""
    return alpha if method in POWER_EP_METHODS + ("fitc",) else None


def _optimise(X, y, lik, kernel0, Z0, method, alpha, blocks, jitter, fit_kernel, fit_noise, fit_Z, bounds, max_iter):
    """L-BFGS-B on [log theta (fit_kernel), log s2 (fit_noise), Z (fit_Z)] maximising the evidence."""
    from qpviz.inference.hyper import ON_BOUND, OptimiserBoundWarning, failed_trial, resolve_bounds  # noqa: PLC0415

    n_k = len(kernel0.param_names) if fit_kernel else 0
    names = (kernel0.param_names if fit_kernel else ()) + (("likelihood.variance",) if fit_noise else ())
    log_bounds = resolve_bounds(names, bounds) if names else []
    shape_Z = Z0.shape
    start = []
    if fit_kernel:
        start.append(kernel0.log_params())
    if fit_noise:
        start.append([math.log(lik.variance)])
    n_hyper = len(names)
    if n_hyper:
        start[:] = [np.clip(np.concatenate(start), [b[0] for b in log_bounds], [b[1] for b in log_bounds])]
    if fit_Z:
        start.append(Z0.ravel())
    params0 = np.concatenate(start)
    all_bounds = log_bounds + ([(None, None)] * Z0.size if fit_Z else [])
    cache = {"evals": 0, "failed": 0, "best": None}

    def unpack(params):
        kernel = kernel0.with_log_params(params[:n_k]) if fit_kernel else kernel0
        s2 = math.exp(params[n_k]) if fit_noise else lik.variance
        Z = params[n_hyper:].reshape(shape_Z) if fit_Z else Z0
        return kernel, s2, Z

    def loss(params):
        cache["evals"] += 1
        kernel, s2, Z = unpack(params)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a JitterWarning per trial step would flood; reported below
                fitted = _evidence(kernel, X, y, Z, s2, method, alpha, blocks, jitter, gradients=True)
            value = fitted.value
            if not np.isfinite(value):
                raise linalg.LinAlgError("non-finite evidence")
        except (linalg.LinAlgError, ValueError):
            cache["failed"] += 1
            return failed_trial(params, cache["best"])
        g_theta, g_Z = _chain_kernel(kernel, X, Z, fitted.grads, blocks, fit_Z)
        grad = []
        if fit_kernel:
            grad.append(g_theta)
        if fit_noise:
            grad.append([fitted.grads["s2"] * s2])
        if fit_Z:
            grad.append(g_Z.ravel())
        if cache["best"] is None or -value < cache["best"][1]:
            cache["best"] = (np.array(params, dtype=float), -float(value))
        return -value, -np.concatenate(grad)

    out = optimize.minimize(loss, params0, jac=True, method="L-BFGS-B", bounds=all_bounds,
                            options={"maxiter": int(max_iter)})
    kernel, s2, Z = unpack(out.x)
    at_bound = [name for name, value, (low, high) in zip(names, out.x, log_bounds)
                if value - low < ON_BOUND or high - value < ON_BOUND]
    if at_bound:
        values = ", ".join(f"{name} = {math.exp(value):.4g}" for name, value in zip(names, out.x) if name in at_bound)
        warnings.warn(f"hyper-parameter(s) stopped on a bound of the optimiser: {values}. The {method} evidence still "
                      "rises beyond it; widen the bounds with bounds={name: (low, high)} or fix the value by starting "
                      "there with a narrow bound", OptimiserBoundWarning, stacklevel=3)
    report = {
        "param_names": names,
        "values": {name: float(math.exp(value)) for name, value in zip(names, out.x)},
        "bounds": {name: (float(math.exp(low)), float(math.exp(high))) for name, (low, high) in zip(names, log_bounds)},
        "at_bound": at_bound,
        "optimise_inducing": bool(fit_Z),
        "objective": method,
        "log_evidence": -float(out.fun),
        "evaluations": cache["evals"],
        "failed_evaluations": cache["failed"],
        "iterations": int(out.nit),
        "success": bool(out.success),
        "message": str(out.message),
    }
    return kernel, lik.with_params(variance=s2), np.array(Z, dtype=float), report
