"""SVI's parameters (:mod:`.svi`): q(u)'s mean and Cholesky factor, the kernel and Z, and their
packing into the one vector the optimisers step."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpviz.kernels import Kernel

__all__ = ["SVIParameters", "Packing"]


@dataclass(frozen=True)
class SVIParameters:
    """Everything the bound depends on: q's mean ``m`` (M,) and lower Cholesky factor ``L`` (M, M;
    positive diagonal), the kernel (its log hyper-parameters) and the inducing inputs ``Z`` (M, D)."""

    m: np.ndarray
    L: np.ndarray
    kernel: Kernel
    Z: np.ndarray


class Packing:
    """The parameters as one vector: [m, the lower triangle of L row by row with log diagonal,
    log theta, Z (only when learnt)]; ``unpack`` / ``pack`` and the gradient's packing."""

    def __init__(self, kernel: Kernel, Z: np.ndarray, learn_theta: bool, learn_Z: bool):
        self.M, self.D = Z.shape
        self.kernel0, self.Z0 = kernel, Z
        self.learn_theta, self.learn_Z = learn_theta, learn_Z
        self.rows, self.cols = np.tril_indices(self.M)
        self.diag = self.rows == self.cols
        self.n_theta = len(kernel.param_names) if learn_theta else 0
        self.n_L = self.rows.size
        self.wrt_kernel = learn_theta or learn_Z

    def pack(self, p: SVIParameters) -> np.ndarray:
        tri = p.L[self.rows, self.cols].copy()
        tri[self.diag] = np.log(tri[self.diag])
        parts = [p.m, tri]
        if self.learn_theta:
            parts.append(p.kernel.log_params())
        if self.learn_Z:
            parts.append(p.Z.ravel())
        return np.concatenate(parts)

    def unpack(self, x: np.ndarray) -> SVIParameters:
        M, n_L = self.M, self.n_L
        m = x[:M].copy()
        tri = x[M:M + n_L].copy()
        tri[self.diag] = np.exp(tri[self.diag])
        L = np.zeros((M, M))
        L[self.rows, self.cols] = tri
        start = M + n_L
        kernel = self.kernel0.with_log_params(x[start:start + self.n_theta]) if self.learn_theta else self.kernel0
        start += self.n_theta
        Z = x[start:].reshape(M, self.D).copy() if self.learn_Z else self.Z0
        return SVIParameters(m, L, kernel, Z)

    def inducing(self, x: np.ndarray) -> np.ndarray:
        """Z at the packed point x (a view of x when Z is learnt)."""
        return x[self.M + self.n_L + self.n_theta:].reshape(self.M, self.D) if self.learn_Z else self.Z0

    def pack_gradient(self, p: SVIParameters, d_m, d_L, d_theta, d_Z) -> np.ndarray:
        tri = d_L[self.rows, self.cols].copy()
        tri[self.diag] *= p.L[self.rows[self.diag], self.cols[self.diag]]  # d/d log L_ii = L_ii d/dL_ii
        parts = [d_m, tri]
        if self.learn_theta:
            parts.append(d_theta)
        if self.learn_Z:
            parts.append(d_Z.ravel())
        return np.concatenate(parts)
