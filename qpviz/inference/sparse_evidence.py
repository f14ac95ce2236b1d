"""The log evidence (or bound) of the sparse GP regression methods FITC, PITC, DTC, VFE and Power
EP(alpha) with a Gaussian likelihood, and its analytic gradients.

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

Numerics (all O(N M^2) time, O(N M) memory; PITC adds O(N B^2) for blocks of size B; no N x N
array, no explicit inverse): L L^T = K_uu + jitter I (:func:`.inducing.cholesky_kuu`, the one
place of the jitter), W = L^-1 K_uf (so Q = W^T W), U = Lambda^-1/2 W^T and the M x M matrix
B = I + W Lambda^-1 W^T = L_B L_B^T. Then log|Q + Lambda| = log|Lambda| + log|B| and
y^T (Q + Lambda)^-1 y = |Lambda^-1/2 y|^2 - |c|^2 with c = L_B^-1 U^T Lambda^-1/2 y.

Gradients are analytic: dL/dK_uf, dL/dK_uu and dL/d diag K_ff (PITC: dL/dK_ff per block) once
per method (:func:`evidence`), then the kernel's vector-Jacobian products
(:meth:`qpviz.kernels.Kernel.cross_vjp`, ``diag_vjp``) give the log hyper-parameters and Z.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg

from qpviz.inference.inducing import cholesky_kuu, covariance_vjp
from qpviz.inference.sparse_noise import BlockNoise, DiagonalNoise, solve_lower
from qpviz.kernels import as_inputs

__all__ = ["SPARSE_METHODS", "POWER_EP_METHODS", "EvidenceFit", "evidence", "kernel_gradients", "sparse_log_evidence",
           "check_method", "check_blocks"]

#: The closed-form methods of a Gaussian likelihood (their own names).
SPARSE_METHODS = ("fitc", "pitc", "dtc", "vfe")

#: Power EP on pseudo-points: "ep" and "qp" coincide for a Gaussian likelihood.
POWER_EP_METHODS = ("ep", "qp")


_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class EvidenceFit:
    """One evaluation: the log evidence / bound and what predictions and gradients need."""

    value: float
    L: np.ndarray  #: chol(K_uu + jitter I)
    LB: np.ndarray  #: chol(I + W Lambda^-1 W^T)
    h: np.ndarray  #: L_B^-T c: mean_* = (L^-1 K_u*)^T h
    jitter: float
    d: np.ndarray  #: diag(K_ff - Q)
    grads: dict = field(default_factory=dict)


def evidence(kernel, X, y, Z, s2, method, alpha, blocks, jitter, gradients: bool) -> EvidenceFit:
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
    W = solve_lower(L, kernel(X, Z).T, overwrite=True)  # K_uf as a Fortran-ordered view: solved in place
    d = kernel.diag(X) - np.einsum("mn,mn->n", W, W)
    noise = BlockNoise(kernel, X, W, blocks, s2) if method == "pitc" else DiagonalNoise(method, alpha, d, s2)
    U = noise.whiten(W.T)  # Lambda^-1/2 W^T, (N, M)
    B = U.T @ U
    B[np.diag_indices_from(B)] += 1.0
    LB = linalg.cholesky(B, lower=True, check_finite=False)
    y_white = noise.whiten(y)
    c = solve_lower(LB, U.T @ y_white)
    del U
    log_det = noise.logdet() + 2.0 * float(np.sum(np.log(np.diag(LB))))
    quad = float(y_white @ y_white - c @ c)
    value = -0.5 * (n * _LOG_2PI + log_det + quad) + noise.extra()
    h = solve_lower(LB, c, trans=True)
    out = EvidenceFit(value, L, LB, h, used_jitter, d)
    if not gradients:
        return out
    a = noise.solve(y - W.T @ h)  # (Q + Lambda)^-1 y
    VL = noise.scale_columns(solve_lower(LB, W))  # L_B^-1 W Lambda^-1, (M, N)
    R, d_kff, d_s2 = noise.noise_gradients(a, VL)
    Wa = W @ a
    WR = noise.right_mul(W, R)
    LB_inv = solve_lower(LB, np.eye(m))
    inner_uu = -0.5 * np.outer(Wa, Wa) + 0.5 * (np.eye(m) - LB_inv.T @ LB_inv) + WR @ W.T
    inner_uu = 0.5 * (inner_uu + inner_uu.T)
    del W
    # inner_uf = (W a) a^T - L_B^-T VL - 2 W R, built in VL's memory (one (M, N) array at a time)
    inner_uf = solve_lower(LB, VL, trans=True, overwrite=True)
    del VL
    WR *= 2.0
    inner_uf += WR
    del WR
    inner_uf *= -1.0
    inner_uf = linalg.blas.dger(1.0, Wa, a, a=inner_uf, overwrite_a=True)  # + (W a) a^T, in place
    d_Kuf = solve_lower(L, inner_uf, trans=True, overwrite=True)
    del inner_uf
    d_Kuu = solve_lower(L, solve_lower(L, inner_uu, trans=True).T, trans=True)
    out.grads = {"Kuf": d_Kuf, "Kuu": 0.5 * (d_Kuu + d_Kuu.T), "kff": d_kff, "s2": d_s2}
    return out


def kernel_gradients(kernel, X, Z, grads, blocks, want_Z: bool):
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
    and dL/dZ (``"Z"``). Inputs as :func:`qpviz.inference.sparse_regression.fit_sparse_regression` (``blocks`` required for PITC)."""
    X = as_inputs(X)
    Z = as_inputs(Z, "inducing")
    y = np.asarray(y, float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}); got shape {y.shape}")
    method, alpha = check_method(method, alpha)
    if method == "pitc":
        blocks = check_blocks(blocks, X.shape[0])
    fitted = evidence(kernel, X, y, Z, float(noise_variance), method, alpha, blocks, jitter, gradients)
    if not gradients:
        return fitted.value
    g_theta, g_Z = kernel_gradients(kernel, X, Z, fitted.grads, blocks, True)
    return fitted.value, {"kernel": g_theta, "log_noise": fitted.grads["s2"] * float(noise_variance), "Z": g_Z}


def check_method(method, alpha):
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


def check_blocks(blocks, n: int) -> list[np.ndarray]:
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
