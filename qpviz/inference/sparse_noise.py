"""The noise Lambda of a sparse GP regression method (:mod:`qpviz.inference.sparse_evidence`):
diagonal (FITC, DTC, VFE, Power EP: :class:`DiagonalNoise`) or block-diagonal (PITC:
:class:`BlockNoise`). Both offer the same operations on it (log-determinant, Lambda^-1/2 V,
Lambda^-1 V, the method's extra term and the gradients through Lambda), so the evidence and its
gradients are written once for every method.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from qpviz.kernels import Kernel

__all__ = ["solve_lower", "DiagonalNoise", "BlockNoise"]


def solve_lower(L, B, trans: bool = False, overwrite: bool = False):
    """L^-1 B (or L^-T B); ``overwrite`` reuses B's memory when B is Fortran-ordered (the (M, N)
    arrays here are: they are transposes of C-ordered (N, M) ones or LAPACK's own output)."""
    return linalg.solve_triangular(L, B, lower=True, trans=1 if trans else 0, overwrite_b=overwrite,
                                   check_finite=False)


class DiagonalNoise:
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


class BlockNoise:
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
            out[idx] = solve_lower(Lb, V[idx])
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
