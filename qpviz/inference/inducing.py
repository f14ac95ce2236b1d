"""Inducing (pseudo-) inputs of the sparse priors: where they start and the covariances they see.

Every sparse method (FITC, PITC, DTC, VFE and Power EP of paper 001; VSGP of paper 002)
summarises the N latent values f at the inputs X by M inducing values u and needs three things
from the kernel:

    K_uu = cov(u, u)  (M x M),    K_uf = cov(u, f)  (M x N),    diag K_ff  (N,).

* Pseudo-points (FITC, ..., Power EP): u = f(Z) at inducing inputs Z (M, D), so K_uu = k(Z, Z)
  and K_uf = k(Z, X).
* VSGP (paper 002, eqs. 5-14 and Corollary 2): u_j is f blurred around a centre b_j by a
  Gaussian, u_j = int f(x) N(x | b_j, C_j) dx, with its own covariance C_j (spherical c_j I or
  full). For the RBF kernel, variance s2 and length scales Lambda = diag(l_1^2, ..., l_D^2),

      K~(x, b_j) = s2 sqrt(|Lambda| / |Lambda + C_j|) exp(-1/2 (x - b_j)^T (Lambda + C_j)^-1 (x - b_j))    (eq. 14)
      K^_ij      = s2 sqrt(|Lambda| / |Lambda + C_i + C_j|)
                      exp(-1/2 (b_i - b_j)^T (Lambda + C_i + C_j)^-1 (b_i - b_j))                       (Cor. 2)

  and C_j -> 0 gives back the pseudo-points at the centres.

The Cholesky factor of K_uu is taken in one place, :func:`cholesky_kuu`, with the package's
jitter (:data:`qpviz.config.JITTER`, as the dense prior). Inducing inputs start at K-means
centres of X (:func:`kmeans_inducing`; paper 002 sec. 5 initialises its basis points so).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from qpviz import config
from qpviz.kernels import RBF, Kernel, as_inputs

__all__ = ["check_training_data", "kmeans_inducing", "as_inducing", "as_inducing_cov", "InducingCovariances", "inducing_covariances",
           "cholesky_kuu", "covariance_vjp", "JitterWarning", "KMEANS_ITERATIONS"]

#: Lloyd iterations of :func:`kmeans_inducing` (it stops earlier once no centre moves).
KMEANS_ITERATIONS = 100
#: :func:`cholesky_kuu` multiplies the jitter by 10 up to this many times before giving up.
_JITTER_TRIES = 8


class JitterWarning(UserWarning):
    """K_uu needed more than the package's jitter to factorise (inducing inputs nearly coincide)."""


def check_training_data(kernel, X, y, likelihood) -> tuple[np.ndarray, np.ndarray]:
    """(X (N, D), y (N,)) checked for a sparse method: a qpviz kernel, inputs as
    :func:`qpviz.kernels.as_inputs`, one observation per row that the likelihood accepts."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a qpviz kernel such as qpviz.kernels.RBF(), got {kernel!r}")
    X = as_inputs(X)
    y = likelihood.check_y(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}); got shape {y.shape}")
    return X, y


def kmeans_inducing(X, M: int, seed: int = 0) -> np.ndarray:
    """M inducing inputs: the centres of a K-means clustering of the rows of X (k-means++ start,
    Lloyd iterations; ``seed`` fixes the start). An empty cluster restarts at the point farthest
    from its centre, so all M centres are distinct when X has at least M distinct rows."""
    X = as_inputs(X)
    n = X.shape[0]
    if isinstance(M, (bool, np.bool_)) or not isinstance(M, (int, np.integer)) or M < 1:
        raise ValueError(f"the number of inducing points M must be a positive integer; got {M!r}")
    if M > n:
        raise ValueError(f"M = {M} inducing points from only {n} inputs: use M <= {n} or give Z explicitly")
    rng = np.random.default_rng(seed)
    centres = np.empty((M, X.shape[1]))
    centres[0] = X[rng.integers(n)]
    nearest = np.sum((X - centres[0]) ** 2, axis=1)
    for j in range(1, M):  # k-means++: the next centre with probability proportional to D(x)^2
        total = nearest.sum()
        pick = rng.choice(n, p=nearest / total) if total > 0 else rng.integers(n)
        centres[j] = X[pick]
        nearest = np.minimum(nearest, np.sum((X - centres[j]) ** 2, axis=1))
    for _ in range(KMEANS_ITERATIONS):
        sq = (np.sum(X * X, axis=1)[:, None] - 2.0 * X @ centres.T + np.sum(centres * centres, axis=1)[None, :])
        label = np.argmin(sq, axis=1)
        new = centres.copy()
        counts = np.bincount(label, minlength=M)
        for j in range(M):
            if counts[j]:
                new[j] = X[label == j].mean(axis=0)
            else:  # an empty cluster takes the point worst served by its centre
                worst = int(np.argmax(sq[np.arange(n), label]))
                new[j] = X[worst]
                label[worst] = j
        if np.array_equal(new, centres):
            break
        centres = new
    return centres


def as_inducing(inducing, X, seed: int = 0) -> np.ndarray:
    """The inducing inputs Z (M, D) from an array, or from an int M (K-means centres of X)."""
    X = as_inputs(X)
    if isinstance(inducing, (int, np.integer)) and not isinstance(inducing, (bool, np.bool_)):
        return kmeans_inducing(X, int(inducing), seed)
    Z = as_inputs(inducing, "inducing")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(f"inducing inputs must have the inputs' {X.shape[1]} column(s); got shape {Z.shape}")
    if Z.shape[0] < 1:
        raise ValueError("give at least one inducing input")
    return Z


def as_inducing_cov(inducing_cov, M: int, D: int) -> np.ndarray:
    """VSGP's local covariances as an (M, D, D) array: from (M,) spherical variances c_j (C_j = c_j I)
    or (M, D, D) full matrices, each symmetric positive semi-definite."""
    C = np.asarray(inducing_cov, dtype=np.float64)
    if C.shape == (M,):
        if not np.all(np.isfinite(C) & (C >= 0)):
            raise ValueError("spherical inducing covariances must be finite and >= 0")
        return C[:, None, None] * np.eye(D)[None, :, :]
    if C.shape != (M, D, D):
        raise ValueError(f"inducing_cov must have shape ({M},) (spherical) or ({M}, {D}, {D}) (full); got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError("inducing_cov contains NaN or infinite values")
    if not np.allclose(C, np.swapaxes(C, 1, 2), rtol=1e-10, atol=1e-12):
        raise ValueError("each inducing covariance C_j must be symmetric")
    if np.min(np.linalg.eigvalsh(C)) < -1e-10 * max(1.0, float(np.max(np.abs(C)))):
        raise ValueError("each inducing covariance C_j must be positive semi-definite")
    return 0.5 * (C + np.swapaxes(C, 1, 2))


@dataclass(frozen=True)
class InducingCovariances:
    """K_uu, K_uf and diag K_ff of one set of inducing variables (module docstring)."""

    Kuu: np.ndarray
    Kuf: np.ndarray
    kff_diag: np.ndarray


def _blurred_rbf(kernel: RBF, A: np.ndarray, CA: np.ndarray, B: np.ndarray, CB: np.ndarray | None) -> np.ndarray:
    """s2 sqrt(|Lambda| / |Lambda + C_i + C'_j|) exp(-1/2 d^T (Lambda + C_i + C'_j)^-1 d), d = a_i - b_j,
    for rows a_i of A with covariances CA[i] against rows b_j of B with CB[j] (None: zero)."""
    variance = kernel.variance
    lam = np.broadcast_to(np.asarray(kernel.lengthscale, float) ** 2, (A.shape[1],))
    out = np.empty((A.shape[0], B.shape[0]))
    log_det_lam = float(np.sum(np.log(lam)))
    for i in range(A.shape[0]):
        S = CA[i][None, :, :] + np.diag(lam)[None, :, :]
        if CB is not None:
            S = S + CB
        S = np.broadcast_to(S, (B.shape[0],) + S.shape[1:])
        diff = A[i][None, :] - B
        chol = np.linalg.cholesky(S)
        z = np.linalg.solve(chol, diff[..., None])[..., 0]
        log_det = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
        out[i] = variance * np.exp(0.5 * (log_det_lam - log_det) - 0.5 * np.sum(z * z, axis=1))
    return out


def inducing_covariances(kernel: Kernel, X, Z, inducing_cov=None) -> InducingCovariances:
    """K_uu, K_uf and diag K_ff for pseudo-inputs Z, or for VSGP's centres Z with local
    covariances ``inducing_cov`` ((M,) or (M, D, D); RBF kernel only: the blur has a closed form
    for it, paper 002 eq. 14)."""
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    if inducing_cov is None:
        return InducingCovariances(kernel(Z), kernel(Z, X), kernel.diag(X))
    if type(kernel) is not RBF:
        raise ValueError(f"VSGP's blurred inducing variables (inducing_cov) need the RBF kernel; got {kernel!r}. "
                         "Use qpviz.kernels.RBF or drop inducing_cov")
    C = as_inducing_cov(inducing_cov, Z.shape[0], Z.shape[1])
    Kuf = _blurred_rbf(kernel, Z, C, X, None)
    Kuu = _blurred_rbf(kernel, Z, C, Z, C)
    return InducingCovariances(0.5 * (Kuu + Kuu.T), Kuf, kernel.diag(X))


def covariance_vjp(kernel: Kernel, X, Z, inducing_cov, G_uf, G_uu, g_ff):
    """Chain an objective's gradients in the three covariances back to the parameters.

    Given dL/dK_uf (M, N), dL/dK_uu (M, M, symmetric) and dL/d diag K_ff (N,), returns
    (dL/d log theta (one per ``kernel.param_names``), dL/dZ (M, D), dL/dC (M, D, D) or None):

        dL/dp = sum(G_uf o dK_uf/dp) + sum(G_uu o dK_uu/dp) + g_ff . d diag K_ff/dp.

    Pseudo-points use the kernel's vector-Jacobian products (:meth:`Kernel.cross_vjp`): Z enters
    both arguments of K_uu = k(Z, Z) and G_uu is symmetric, so dL/dZ doubles the first-argument
    product. VSGP's blurred covariances (``inducing_cov``) also give dL/dC_j, one symmetric D x D
    matrix per centre.
    """
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    if inducing_cov is not None:
        return _blurred_rbf_vjp(kernel, X, Z, as_inducing_cov(inducing_cov, Z.shape[0], Z.shape[1]),
                                np.asarray(G_uf, float), np.asarray(G_uu, float), np.asarray(g_ff, float))
    g_theta, gZ_uf = kernel.cross_vjp(Z, X, G_uf)
    g_uu, gZ_uu = kernel.cross_vjp(Z, Z, G_uu)
    return g_theta + g_uu + kernel.diag_vjp(X, g_ff)[0], gZ_uf + 2.0 * gZ_uu, None


def _blurred_rbf_vjp(kernel, X, Z, C, G_uf, G_uu, g_ff):
    raise NotImplementedError("gradients of VSGP's blurred covariances are not available yet")


def cholesky_kuu(Kuu: np.ndarray, jitter: float | None = None) -> tuple[np.ndarray, float]:
    """(L, jitter used) with L L^T = K_uu + jitter I, L lower triangular.

    The jitter is :data:`qpviz.config.JITTER` (the dense prior's) unless given. Inducing inputs
    that (nearly) coincide make K_uu singular: then the jitter grows tenfold at a time, relative
    to the mean of diag K_uu, and a :class:`JitterWarning` says how much was needed.
    """
    base = config.JITTER if jitter is None else float(jitter)
    scale = max(float(np.mean(np.diag(Kuu))), 1e-300)
    current = base
    for attempt in range(_JITTER_TRIES + 1):
        try:
            L = linalg.cholesky(Kuu + current * np.eye(Kuu.shape[0]), lower=True, check_finite=True)
        except (linalg.LinAlgError, ValueError):
            current = max(current, base * scale) * 10.0
            continue
        if attempt:
            warnings.warn(
                f"K_uu was singular (inducing inputs nearly coincide); factorised with jitter {current:.3g} "
                f"instead of {base:.3g}. Spread the inducing inputs or use fewer of them",
                JitterWarning, stacklevel=2)
        return L, current
    raise linalg.LinAlgError(
        f"K_uu could not be factorised even with jitter {current:.3g}: the kernel matrix of the inducing inputs "
        "is not positive definite (check for NaN hyper-parameters or duplicate inducing inputs)")
