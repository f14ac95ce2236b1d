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

:func:`covariance_vjp` chains an objective's gradients in K_uf, K_uu and diag K_ff back to the
log hyper-parameters, the inducing inputs (centres) Z and, for VSGP, the local covariances C_j.
To learn C_j, :func:`pack_inducing_cov` maps them to unconstrained numbers (log c_j for C_j = c_j I;
the Cholesky factor with log diagonal for full C_j), :func:`unpack_inducing_cov` maps back and
:func:`packed_inducing_cov_grad` carries dL/dC to those numbers.

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

__all__ = ["check_training_data", "kmeans_inducing", "as_inducing", "as_inducing_cov", "InducingCovariances",
           "inducing_covariances", "cholesky_kuu", "covariance_vjp", "pack_inducing_cov", "unpack_inducing_cov", "packed_inducing_cov_grad",
           "JitterWarning", "KMEANS_ITERATIONS"]

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


def _lambda(kernel: RBF, D: int) -> np.ndarray:
    """The diagonal of Lambda = diag(l_1^2, ..., l_D^2) (one length scale broadcast when not ARD)."""
    return np.broadcast_to(np.asarray(kernel.lengthscale, float) ** 2, (D,))


def _blurred_rbf_row(kernel: RBF, lam: np.ndarray, centre: np.ndarray, cov: np.ndarray, B: np.ndarray,
                     CB: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row of the blurred RBF, centre b_i with covariance C_i against the rows b'_j of B with
    covariances CB[j] (None: zero, the data points). With S_j = Lambda + C_i + CB[j] and r_j = b_i - b'_j,
    returns

        k_j = s2 sqrt(|Lambda| / |S_j|) exp(-1/2 r_j^T S_j^-1 r_j)   (K,)
        a_j = S_j^-1 r_j                                             (K, D)
        S^-1                                                         (D, D) if CB is None, else (K, D, D).

    Without CB every S_j is the same matrix, so it is factorised once and nothing (K, D, D) is formed.
    """
    diff = centre[None, :] - B
    if CB is None:
        chol = linalg.cholesky(cov + np.diag(lam), lower=True)
        half = linalg.solve_triangular(chol, diff.T, lower=True).T  # L^-1 r_j, one row per j
        chol_inv = linalg.solve_triangular(chol, np.eye(lam.size), lower=True)
        log_det = 2.0 * float(np.sum(np.log(np.diag(chol))))
        a = half @ chol_inv
    else:
        chol = np.linalg.cholesky(cov[None, :, :] + np.diag(lam)[None, :, :] + CB)
        chol_inv = np.linalg.solve(chol, np.broadcast_to(np.eye(lam.size), chol.shape))
        half = np.einsum("kde,ke->kd", chol_inv, diff)
        log_det = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
        a = np.einsum("kdi,kd->ki", chol_inv, half)
    S_inv = np.swapaxes(chol_inv, -1, -2) @ chol_inv  # S^-1 = L^-T L^-1
    quad = np.einsum("kd,kd->k", half, half)  # r^T S^-1 r = |L^-1 r|^2
    k = kernel.variance * np.exp(0.5 * (float(np.sum(np.log(lam))) - log_det) - 0.5 * quad)
    return k, a, S_inv


#: (rows x K) entries of a block of :func:`_blurred_rbf` (times D^2 with K covariances, the batched
#: factors): each temporary stays below 128 KB, where NumPy's allocations are still reused rather
#: than mapped afresh. Measured at M = 20, D = 2 against a 50 x 50 grid: 0.45-0.78 ms in blocks of
#: 16384 entries against 1.6-2.0 ms in one block of 50 000.
BLURRED_BLOCK_ENTRIES = 16_384


def _blurred_rbf(kernel: RBF, A: np.ndarray, CA: np.ndarray, B: np.ndarray, CB: np.ndarray | None) -> np.ndarray:
    """s2 sqrt(|Lambda| / |Lambda + C_i + C'_j|) exp(-1/2 d^T (Lambda + C_i + C'_j)^-1 d), d = a_i - b_j,
    for rows a_i of A with covariances CA[i] against rows b_j of B with CB[j] (None: zero).

    The formula of :func:`_blurred_rbf_row` (S = L L^T, r^T S^-1 r = |L^-1 r|^2, log |S| from diag L)
    for a block of rows at once: batched D x D Cholesky factors and their inverses, then each
    component of L^-1 r as a sum of D(D+1)/2 (rows, K) products (D is small: no (rows, K, D)
    array and no batched matrix products of width D, slow in NumPy). Row by row, a VSGP page's
    K_uf, K_uu and its grid's cross-covariances took 40 calls into SciPy a row: 13 ms of a 30 ms
    blur step at M = 20, N = 500; :func:`_blurred_rbf_rows` is that loop, the tests' reference."""
    lam = _lambda(kernel, A.shape[1])
    D = A.shape[1]
    log_lam = float(np.sum(np.log(lam)))
    out = np.empty((A.shape[0], B.shape[0]))
    rows = max(1, BLURRED_BLOCK_ENTRIES // max(1, B.shape[0] * (D * D if CB is not None else 1)))
    for start in range(0, A.shape[0], rows):
        part = slice(start, start + rows)
        S = CA[part] + np.diag(lam)  # (R, D, D)
        if CB is not None:
            S = S[:, None, :, :] + CB[None, :, :, :]  # (R, K, D, D)
        else:
            S = S[:, None, :, :]  # (R, 1, D, D): one S per row
        chol = np.linalg.cholesky(S)
        chol_inv = np.linalg.inv(chol)  # lower triangular, as L^-1
        log_det = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=2, axis2=3)), axis=2)  # (R, K) or (R, 1)
        diff = [A[part, d][:, None] - B[None, :, d] for d in range(D)]  # r's components, (R, K) each
        quad = np.zeros((diff[0].shape[0], B.shape[0]))
        for d in range(D):
            half = chol_inv[..., d, 0] * diff[0]  # (L^-1 r)_d = sum_{e <= d} (L^-1)_de r_e
            for e in range(1, d + 1):
                half += chol_inv[..., d, e] * diff[e]
            quad += half * half
        out[part] = kernel.variance * np.exp(0.5 * (log_lam - log_det) - 0.5 * quad)
    return out


def _blurred_rbf_rows(kernel: RBF, A: np.ndarray, CA: np.ndarray, B: np.ndarray, CB: np.ndarray | None) -> np.ndarray:
    """:func:`_blurred_rbf` row by row through :func:`_blurred_rbf_row` (the reference of the tests)."""
    lam = _lambda(kernel, A.shape[1])
    return np.array([_blurred_rbf_row(kernel, lam, A[i], CA[i], B, CB)[0] for i in range(A.shape[0])])


def _require_rbf(kernel: Kernel) -> None:
    if type(kernel) is not RBF:
        raise ValueError(f"VSGP's blurred inducing variables (inducing_cov) need the RBF kernel; got {kernel!r}. "
                         "Use qpviz.kernels.RBF or drop inducing_cov")


def inducing_covariances(kernel: Kernel, X, Z, inducing_cov=None) -> InducingCovariances:
    """K_uu, K_uf and diag K_ff for pseudo-inputs Z, or for VSGP's centres Z with local
    covariances ``inducing_cov`` ((M,) or (M, D, D); RBF kernel only: the blur has a closed form
    for it, paper 002 eq. 14)."""
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    if inducing_cov is None:
        return InducingCovariances(kernel(Z), kernel(Z, X), kernel.diag(X))
    _require_rbf(kernel)
    C = as_inducing_cov(inducing_cov, Z.shape[0], Z.shape[1])
    Kuf = _blurred_rbf(kernel, Z, C, X, None)
    Kuu = _blurred_rbf(kernel, Z, C, Z, C)
    return InducingCovariances(0.5 * (Kuu + Kuu.T), Kuf, kernel.diag(X))


def covariance_vjp(kernel: Kernel, X, Z, inducing_cov, G_uf, G_uu, g_ff, K_uf=None):
    """Chain an objective's gradients in the three covariances back to the parameters.

    Given dL/dK_uf (M, N), dL/dK_uu (M, M, symmetric) and dL/d diag K_ff (N,), returns
    (dL/d log theta (one per ``kernel.param_names``), dL/dZ (M, D), dL/dC (M, D, D) or None):

        dL/dp = sum(G_uf o dK_uf/dp) + sum(G_uu o dK_uu/dp) + g_ff . d diag K_ff/dp.

    Pseudo-points use the kernel's vector-Jacobian products (:meth:`Kernel.cross_vjp`): Z enters
    both arguments of K_uu = k(Z, Z) and G_uu is symmetric, so dL/dZ doubles the first-argument
    product; ``K_uf``, the caller's K(Z, X) if it has it, lets the kernel skip recomputing it
    (:meth:`Kernel.cross_vjp`). VSGP's blurred covariances (``inducing_cov``, RBF kernel) also give dL/dC_j, one
    symmetric D x D matrix per centre with dL = sum_j tr(dL/dC_j dC_j) for symmetric changes dC_j
    (for (M,) spherical input too: the chain to c_j is tr(dL/dC_j); :func:`packed_inducing_cov_grad`
    continues it to the parameters one learns).
    """
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    if inducing_cov is not None:
        _require_rbf(kernel)
        return _blurred_rbf_vjp(kernel, X, Z, as_inducing_cov(inducing_cov, Z.shape[0], Z.shape[1]),
                                np.asarray(G_uf, float), np.asarray(G_uu, float), np.asarray(g_ff, float))
    g_theta, gZ_uf = kernel.cross_vjp(Z, X, G_uf, K=K_uf)
    g_uu, gZ_uu = kernel.cross_vjp(Z, Z, G_uu)
    return g_theta + g_uu + kernel.diag_vjp(X, g_ff)[0], gZ_uf + 2.0 * gZ_uu, None


def _blurred_rbf_vjp(kernel: Kernel, X: np.ndarray, Z: np.ndarray, C: np.ndarray, G_uf: np.ndarray,
                     G_uu: np.ndarray, g_ff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`covariance_vjp` for VSGP's blurred RBF covariances (paper 002 eq. 14 and Cor. 2).

    Every entry k = s2 sqrt(|Lambda| / |S|) exp(-1/2 r^T S^-1 r) of K_uf (S = Lambda + C_j,
    r = b_j - x_n) and K_uu (S = Lambda + C_i + C_j, r = b_i - b_j) has, with a = S^-1 r,

        d log k / d log s2 = 1,   d log k / dr = -a,   d log k / dS = 1/2 (a a^T - S^-1),
        d log k / d log l_d = 1 + 2 l_d^2 (d log k / dS)_dd   (1 from sqrt|Lambda|; dS/d log l_d = 2 l_d^2 e_d e_d^T),

    and enters the objective with the weight w = G k. dL/dC_j collects dL/dS of every entry that
    C_j is in: its row of K_uf, and row and column j of K_uu (the diagonal S = Lambda + 2 C_j twice).
    One row of K_uf at a time: O(N M D^2) time, O(N D + M D^2) memory besides the inputs.
    """
    M, D = Z.shape
    N = X.shape[0]
    for name, value, shape in (("G_uf", G_uf, (M, N)), ("G_uu", G_uu, (M, M)), ("g_ff", g_ff, (N,))):
        if value.shape != shape:
            raise ValueError(f"{name} must have shape {shape} (dL/d{name[2:]}); got {value.shape}")
    lam = _lambda(kernel, D)
    # sum(G o K_uu) with K_uu symmetric only sees G's symmetric part
    G_uu = 0.5 * (G_uu + G_uu.T)
    weight_total = 0.0  # sum of w over all entries: d/d log s2, and the sqrt|Lambda| part of each length scale
    dS_diag_total = np.zeros(D)  # sum over all entries of diag(dL/dS)
    dZ = np.zeros((M, D))
    dC = np.zeros((M, D, D))
    for j in range(M):  # row j of K_uf: one S = Lambda + C_j for every data point
        k, a, S_inv = _blurred_rbf_row(kernel, lam, Z[j], C[j], X, None)
        w = G_uf[j] * k
        dZ[j] -= w @ a
        dS = 0.5 * (a.T @ (w[:, None] * a) - w.sum() * S_inv)
        dC[j] += dS
        dS_diag_total += np.diag(dS)
        weight_total += w.sum()
    for i in range(M):  # row i of K_uu: entry (i, j) moves b_i, b_j (r = b_i - b_j) and C_i, C_j
        k, a, S_inv = _blurred_rbf_row(kernel, lam, Z[i], C[i], Z, C)
        w = G_uu[i] * k
        wa = w[:, None] * a
        dZ[i] -= wa.sum(axis=0)
        dZ += wa
        dS = 0.5 * (np.einsum("kd,ke->kde", wa, a) - w[:, None, None] * S_inv)
        dC[i] += dS.sum(axis=0)
        dC += dS
        dS_diag_total += np.einsum("kdd->d", dS)
        weight_total += w.sum()
    d_log_ls = weight_total + 2.0 * lam * dS_diag_total
    d_ls = d_log_ls if kernel.ard else np.array([d_log_ls.sum()])
    d_log_variance = weight_total + kernel.variance * float(np.sum(g_ff))  # diag K_ff = s2
    return np.concatenate([[d_log_variance], d_ls]), dZ, 0.5 * (dC + np.swapaxes(dC, 1, 2))


def _tril_positions(D: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows and columns of the D(D+1)/2 lower-triangular entries (row by row), and which are diagonal."""
    rows, cols = np.tril_indices(D)
    return rows, cols, rows == cols


def pack_inducing_cov(inducing_cov, spherical: bool) -> np.ndarray:
    """VSGP's local covariances as an unconstrained vector for learning them.

    ``spherical``: C_j = c_j I, packed as log c_j (M,); ``inducing_cov`` is (M,) or (M, D, D) multiples
    of I, each c_j > 0. Full: C_j = L_j L_j^T (Cholesky factor, lower, positive diagonal), packed as
    the lower triangle of each L_j row by row with the log of its diagonal, M D (D + 1) / 2 numbers
    centre after centre; each C_j positive definite. :func:`unpack_inducing_cov` inverts it.
    """
    C = np.asarray(inducing_cov, dtype=np.float64)
    if spherical:
        if C.ndim == 3:
            c = C[:, 0, 0].copy()
            if C.shape[1] != C.shape[2] or not np.allclose(C, c[:, None, None] * np.eye(C.shape[1]), rtol=1e-10,
                                                           atol=1e-12):
                raise ValueError("spherical packing needs each C_j = c_j I; use spherical=False for full covariances")
        elif C.ndim == 1:
            c = C
        else:
            raise ValueError(f"spherical inducing covariances must be (M,) or (M, D, D); got shape {C.shape}")
        if not np.all(np.isfinite(c) & (c > 0)):
            raise ValueError("packing spherical inducing covariances takes log c_j: each c_j must be > 0 and finite")
        return np.log(c)
    if C.ndim != 3 or C.shape[1] != C.shape[2]:
        raise ValueError(f"full inducing covariances must be (M, D, D); got shape {C.shape}")
    try:
        L = np.linalg.cholesky(0.5 * (C + np.swapaxes(C, 1, 2)))
    except np.linalg.LinAlgError:
        raise ValueError("packing full inducing covariances takes their Cholesky factors: each C_j must be "
                         "positive definite (add a small multiple of I)") from None
    rows, cols, diagonal = _tril_positions(C.shape[1])
    packed = L[:, rows, cols]
    packed[:, diagonal] = np.log(packed[:, diagonal])
    return packed.ravel()


def _unpack_cholesky(packed: np.ndarray, M: int, D: int) -> np.ndarray:
    """The Cholesky factors L_j (M, D, D) of a full packing (see :func:`pack_inducing_cov`)."""
    rows, cols, diagonal = _tril_positions(D)
    packed = np.asarray(packed, dtype=np.float64)
    if packed.shape != (M * rows.size,):
        raise ValueError(f"full packing of {M} covariances in {D} dimensions has {M * rows.size} numbers; "
                         f"got shape {packed.shape}")
    entries = packed.reshape(M, rows.size).copy()
    entries[:, diagonal] = np.exp(entries[:, diagonal])
    L = np.zeros((M, D, D))
    L[:, rows, cols] = entries
    return L


def unpack_inducing_cov(packed, M: int, D: int, spherical: bool) -> np.ndarray:
    """The local covariances C (M, D, D) of a vector from :func:`pack_inducing_cov`:
    C_j = exp(p_j) I (spherical) or C_j = L_j L_j^T."""
    if spherical:
        packed = np.asarray(packed, dtype=np.float64)
        if packed.shape != (M,):
            raise ValueError(f"spherical packing has one log variance per centre, shape ({M},); got {packed.shape}")
        return np.exp(packed)[:, None, None] * np.eye(D)[None, :, :]
    L = _unpack_cholesky(packed, M, D)
    return L @ np.swapaxes(L, 1, 2)


def packed_inducing_cov_grad(packed, dC, spherical: bool) -> np.ndarray:
    """Chain dL/dC (M, D, D, as :func:`covariance_vjp` returns) to the packed vector of
    :func:`pack_inducing_cov`:

        spherical:  dL/d log c_j = c_j tr(dL/dC_j)
        full:       dL/dL_j = 2 sym(dL/dC_j) L_j (lower triangle), times L_j,dd on the log diagonal.
    """
    dC = np.asarray(dC, dtype=np.float64)
    if dC.ndim != 3 or dC.shape[1] != dC.shape[2]:
        raise ValueError(f"dC must be (M, D, D); got shape {dC.shape}")
    M, D = dC.shape[0], dC.shape[1]
    dC = 0.5 * (dC + np.swapaxes(dC, 1, 2))  # dL = tr(dC^T dC_perturbation) for a symmetric perturbation
    if spherical:
        c = np.diagonal(unpack_inducing_cov(packed, M, 1, True), axis1=1, axis2=2)[:, 0]  # checks the shape
        return c * np.trace(dC, axis1=1, axis2=2)
    L = _unpack_cholesky(packed, M, D)
    rows, cols, diagonal = _tril_positions(D)
    grad = (2.0 * dC @ L)[:, rows, cols]
    grad[:, diagonal] *= L[:, rows[diagonal], cols[diagonal]]
    return grad.ravel()


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
