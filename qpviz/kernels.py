"""Covariance functions k(x, x') of Gaussian-process priors.

Every kernel is a small immutable object with

* ``K = kernel(X)`` or ``kernel(X, X2)``: the covariance matrix (no jitter: the prior adds
  :data:`qpviz.config.JITTER` in one place, :class:`qpviz.inference.dense.DensePrior`);
* ``kernel.diag(X)``: k(x_i, x_i) without building the matrix;
* hyper-parameters on the log scale for optimisation: ``log_params()``,
  ``with_log_params(theta)`` (a new kernel), ``param_names`` and
  ``grad_log_params(X)`` = [dK/d log theta_j] (analytic; tests check them against finite
  differences);
* ``k1 + k2`` and ``k1 * k2`` build sums and products;
* vector-Jacobian products for gradients through large cross-covariances (sparse GPs), O(N M)
  memory: ``kernel.cross_vjp(X1, X2, G)`` = (sum_ij G_ij dk(x1_i, x2_j)/d log theta,
  sum_j G_ij dk(x1_i, x2_j)/d x1_i) and ``kernel.diag_vjp(X, g)`` the same for k(x_i, x_i)
  (RBF, Matern32 and Matern52; see :data:`VJP_KERNELS`).

Kernels:

=============== ===================================================================
``RBF``         squared exponential, v exp(-r^2 / 2), ARD length scales (QP paper sec. 6)
``Matern32``    v (1 + sqrt3 r) exp(-sqrt3 r)
``Matern52``    v (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)
``Periodic``    v exp(-2 sum_d sin^2(pi (x_d - x'_d) / period) / lengthscale^2)
``Linear``      sum_d v_d x_d x'_d
=============== ===================================================================

with r^2 = sum_d (x_d - x'_d)^2 / l_d^2 (Rasmussen and Williams 2006, eqs. 4.9, 4.17, 4.31).
Inputs are arrays of shape (N, D); a 1-D array is read as N points in one dimension.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Kernel", "RBF", "Matern32", "Matern52", "Periodic", "Linear", "Sum", "Product", "as_inputs", "VJP_KERNELS"]

#: The kernels with :meth:`Kernel.cross_vjp` / :meth:`Kernel.diag_vjp` (sparse-GP gradients).
VJP_KERNELS = ("RBF", "Matern32", "Matern52")


def as_inputs(X, name: str = "X") -> np.ndarray:
    """``X`` as a float64 (N, D) array; a 1-D array is N points in one dimension."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array of inputs, shape (N, D)") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) or (N,); got an array with shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; remove or impute them first")
    return arr


def _positive(value, name: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a positive number or a 1-D array of positive numbers")
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} must be > 0 and finite; got {arr.tolist()}")
    return arr


class Kernel:
    """Base class: input checks, sums/products and the log-parameter plumbing."""

    #: Names of the hyper-parameters in the order of :meth:`log_params` (one per entry).
    @property
    def param_names(self) -> tuple[str, ...]:
        raise NotImplementedError

    def log_params(self) -> np.ndarray:
        """Hyper-parameters on the log scale (all kernel hyper-parameters are positive)."""
        raise NotImplementedError

    def with_log_params(self, theta) -> "Kernel":
        """A new kernel of the same kind with the hyper-parameters exp(theta)."""
        raise NotImplementedError

    @property
    def params(self) -> dict[str, float]:
        """The hyper-parameters as numbers, by :attr:`param_names` (e.g. ``{"variance": 2.0,
        "lengthscale": 0.7}``; ARD: ``"lengthscale[0]"``, ...; sums and products: ``"k1.variance"``)."""
        return {name: float(value) for name, value in zip(self.param_names, np.exp(self.log_params()))}

    def __call__(self, X, X2=None) -> np.ndarray:
        X = as_inputs(X)
        X2 = X if X2 is None else as_inputs(X2, "X2")
        self._check_dim(X)
        if X2.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} input dimensions but X2 has {X2.shape[1]}")
        return self._K(X, X2)

    def diag(self, X) -> np.ndarray:
        """k(x_i, x_i) for every row of X."""
        X = as_inputs(X)
        self._check_dim(X)
        return self._diag(X)

    def grad_log_params(self, X) -> list[np.ndarray]:
        """dK(X, X)/d log theta_j for every hyper-parameter, in the order of :meth:`log_params`."""
        X = as_inputs(X)
        self._check_dim(X)
        return self._grads(X)

    def cross_vjp(self, X1, X2, G, K=None) -> tuple[np.ndarray, np.ndarray]:
        """Vector-Jacobian product of K(X1, X2) with G (shape (N1, N2)): returns
        (sum_ij G_ij dk(x1_i, x2_j) / d log theta  (one entry per :attr:`param_names`),
         sum_j G_ij dk(x1_i, x2_j) / d x1_i          (shape (N1, D))),
        without building dK/d theta or an (N1, N2, D) array (O(N1 N2) memory).

        ``K``: the caller's K(X1, X2) of this kernel, if it has it: a kernel whose derivatives are
        functions of its values (RBF: dk/dr^2 = -k/2) then skips the distances and the exponentials
        (about half the product's time at 200 x 200, measured); the others ignore it."""
        X1 = as_inputs(X1, "X1")
        X2 = as_inputs(X2, "X2")
        self._check_dim(X1)
        self._check_dim(X2)
        G = np.asarray(G, dtype=np.float64)
        if G.shape != (X1.shape[0], X2.shape[0]):
            raise ValueError(f"G must have shape ({X1.shape[0]}, {X2.shape[0]}) (one entry per pair); got {G.shape}")
        if K is not None and np.shape(K) != G.shape:
            raise ValueError(f"K must be K(X1, X2), shape {G.shape}; got {np.shape(K)}")
        return self._cross_vjp(X1, X2, G, K)

    def diag_vjp(self, X, g) -> tuple[np.ndarray, np.ndarray]:
        """(sum_i g_i dk(x_i, x_i) / d log theta, g_i dk(x_i, x_i) / d x_i) for the diagonal."""
        X = as_inputs(X)
        self._check_dim(X)
        g = np.asarray(g, dtype=np.float64)
        if g.shape != (X.shape[0],):
            raise ValueError(f"g must have shape ({X.shape[0]},) (one entry per row of X); got {g.shape}")
        return self._diag_vjp(X, g)

    def _no_vjp(self):
        return NotImplementedError(
            f"{type(self).__name__} has no vector-Jacobian products (cross_vjp / diag_vjp), which sparse-GP "
            f"gradients need; the kernels that have them are {', '.join(VJP_KERNELS)}")

    def _cross_vjp(self, X1, X2, G, K=None):
        raise self._no_vjp()

    def _diag_vjp(self, X, g):
        raise self._no_vjp()

    def _check_dim(self, X: np.ndarray) -> None:
        pass

    def _K(self, X, X2):
        raise NotImplementedError

    def _diag(self, X):
        return np.diag(self._K(X, X)).copy()

    def _grads(self, X):
        raise NotImplementedError

    def __add__(self, other: "Kernel") -> "Sum":
        return Sum(self, other)

    def __mul__(self, other: "Kernel") -> "Product":
        return Product(self, other)


class _Stationary(Kernel):
    """A kernel of the scaled distance r (variance v, length scales l_d, scalar or ARD)."""

    name = "stationary"
    #: c with dk/dr^2 = c k, for a kernel whose slope is a multiple of its value (None: not so)
    _slope_of_values = None

    def __init__(self, variance: float = 1.0, lengthscale=1.0):
        self.variance = float(_positive(variance, "variance")[0])
        ls = _positive(lengthscale, "lengthscale")
        self.lengthscale = ls if ls.size > 1 else float(ls[0])

    @property
    def ard(self) -> bool:
        return np.ndim(self.lengthscale) == 1

    @property
    def param_names(self):
        if self.ard:
            return ("variance",) + tuple(f"lengthscale[{d}]" for d in range(len(self.lengthscale)))
        return ("variance", "lengthscale")

    def log_params(self):
        return np.log(np.concatenate([[self.variance], np.atleast_1d(self.lengthscale)]))

    def with_log_params(self, theta):
        theta = np.asarray(theta, float)
        if theta.shape != (len(self.param_names),):
            raise ValueError(f"{type(self).__name__} takes {len(self.param_names)} log-parameters, got {theta.shape}")
        ls = np.exp(theta[1:])
        return type(self)(variance=np.exp(theta[0]), lengthscale=ls if self.ard else ls[0])

    def _check_dim(self, X):
        if self.ard and X.shape[1] != len(self.lengthscale):
            raise ValueError(
                f"{type(self).__name__} has {len(self.lengthscale)} ARD length scales but the inputs have "
                f"{X.shape[1]} dimensions; pass one length scale per input column"
            )

    def _scaled_sq_diffs(self, X, X2) -> np.ndarray:
        """(x_d - x'_d)^2 / l_d^2, shape (N, M, D)."""
        ls = np.broadcast_to(np.atleast_1d(self.lengthscale), (X.shape[1],))
        diff = (X[:, None, :] - X2[None, :, :]) / ls
        return diff * diff

    def _scaled_pair(self, X, X2) -> tuple[np.ndarray, np.ndarray]:
        """The inputs divided by the length scales, both shifted by the mean of X2 (r is shift
        invariant; centring keeps |a|^2 small, which bounds the rounding of the expansion below)."""
        ls = np.broadcast_to(np.atleast_1d(self.lengthscale), (X.shape[1],))
        shift = X2.mean(axis=0)
        return (X - shift) / ls, (X2 - shift) / ls

    def _sq_dist(self, X, X2) -> np.ndarray:
        """r^2 = |a|^2 - 2 a.b + |b|^2 on length-scaled inputs, clipped at 0: O(N M) memory, no
        (N, M, D) tensor. K(X, X) (X2 is X) is made exactly symmetric with a zero diagonal."""
        A, B = self._scaled_pair(X, X2)
        r2 = A @ B.T  # in place from here on: one (N, M) array
        r2 *= -2.0
        r2 += np.einsum("id,id->i", A, A)[:, None]
        r2 += np.einsum("jd,jd->j", B, B)[None, :]
        np.maximum(r2, 0.0, out=r2)
        if X2 is X:
            r2 = 0.5 * (r2 + r2.T)
            np.fill_diagonal(r2, 0.0)
        return r2

    def _K(self, X, X2):
        K = self._shape(self._sq_dist(X, X2), inplace=True)
        K *= self.variance
        return K

    def _cross_vjp(self, X1, X2, G, K=None):
        # k = v s(r^2), r^2 = sum_d (a_d - b_d)^2 with a = x1 / l, b = x2 / l:
        #   dk/d log v = k;  dk/d log l_d = -2 v s'(r^2) (a_d - b_d)^2;  dk/d x1_d = 2 v s'(r^2) (a_d - b_d) / l_d
        if K is not None and self._slope_of_values is not None:  # dk/dr^2 from the caller's k
            K = np.asarray(K, dtype=np.float64)
            d_log_variance = float(np.einsum("ij,ij->", G, K))
            weighted = np.multiply(K, G)  # becomes H_ij = G_ij dk_ij / d r^2_ij
            weighted *= self._slope_of_values
        else:
            r2 = self._sq_dist(X1, X2)
            d_log_variance = self.variance * float(np.einsum("ij,ij->", G, self._shape(r2)))
            weighted = self._dshape_dr2(r2, inplace=True)  # becomes H_ij = G_ij dk_ij / d r^2_ij
            weighted *= G
            weighted *= self.variance
        A, B = self._scaled_pair(X1, X2)
        rows, cols = weighted.sum(axis=1), weighted.sum(axis=0)
        HB = weighted @ B
        # sum_ij H_ij (a_id - b_jd)^2 expanded, so that no (N1, N2, D) array is formed
        sq_sums = rows @ (A * A) - 2.0 * np.einsum("id,id->d", A, HB) + cols @ (B * B)
        d_log_ls = -2.0 * sq_sums
        ls = np.broadcast_to(np.atleast_1d(self.lengthscale), (X1.shape[1],))
        grad_X1 = 2.0 * (A * rows[:, None] - HB) / ls
        d_ls = d_log_ls if self.ard else np.array([d_log_ls.sum()])
        return np.concatenate([[d_log_variance], d_ls]), grad_X1

    def _diag_vjp(self, X, g):
        # k(x, x) = v: only the variance matters
        grad = np.zeros(len(self.param_names))
        grad[0] = self.variance * float(np.sum(g))
        return grad, np.zeros_like(X)

    def _diag(self, X):
        return np.full(X.shape[0], self.variance)

    def _grads(self, X):
        sq = self._scaled_sq_diffs(X, X)
        r2 = sq.sum(-1)
        K = self.variance * self._shape(r2)
        # d r^2 / d log l_d = -2 (x_d - x'_d)^2 / l_d^2;  dK/d log l_d = -2 k'(r^2) sq_d
        dk_dr2 = self.variance * self._dshape_dr2(r2)
        if self.ard:
            return [K] + [-2.0 * dk_dr2 * sq[:, :, d] for d in range(sq.shape[2])]
        return [K, -2.0 * dk_dr2 * r2]

    def _shape(self, r2, inplace=False):
        """k / v as a function of r^2 (``inplace``: overwrite r2 with it)."""
        raise NotImplementedError

    def _dshape_dr2(self, r2, inplace=False):
        """d(k / v) / d r^2 (``inplace``: overwrite r2 with it)."""
        raise NotImplementedError

    def __repr__(self):
        return f"qpviz.kernels.{type(self).__name__}(variance={self.variance!r}, lengthscale={self.lengthscale!r})"


class RBF(_Stationary):
    """Squared exponential k = v exp(-r^2 / 2) (R&W eq. 4.9; ARD as in the QP paper, sec. 6)."""

    _slope_of_values = -0.5  # dk/dr^2 = -k/2

    def _shape(self, r2, inplace=False):
        out = np.multiply(r2, -0.5, out=r2 if inplace else None)
        return np.exp(out, out=out)

    def _dshape_dr2(self, r2, inplace=False):
        out = self._shape(r2, inplace)
        out *= -0.5
        return out


def _scaled_root(r2, factor: float, inplace: bool) -> np.ndarray:
    """sqrt(factor r^2), in r2's memory if ``inplace``."""
    s = np.multiply(r2, factor, out=r2 if inplace else None)
    return np.sqrt(s, out=s)


def _exp_minus(s: np.ndarray) -> np.ndarray:
    e = np.negative(s)
    return np.exp(e, out=e)


class Matern32(_Stationary):
    """Matern nu = 3/2: k = v (1 + sqrt(3) r) exp(-sqrt(3) r) (R&W eq. 4.17)."""

    def _shape(self, r2, inplace=False):
        s = _scaled_root(r2, 3.0, inplace)
        e = _exp_minus(s)
        s += 1.0
        s *= e
        return s

    def _dshape_dr2(self, r2, inplace=False):
        # d/dr [(1 + sqrt3 r) e^{-sqrt3 r}] = -3 r e^{-sqrt3 r};  d/dr^2 = that / (2 r)
        s = _scaled_root(r2, 3.0, inplace)
        np.negative(s, out=s)
        np.exp(s, out=s)
        s *= -1.5
        return s


class Matern52(_Stationary):
    """Matern nu = 5/2: k = v (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r) (R&W eq. 4.17)."""

    def _shape(self, r2, inplace=False):
        s = _scaled_root(r2, 5.0, inplace)
        out = s * s
        out /= 3.0
        out += s
        out += 1.0
        out *= _exp_minus(s)
        return out

    def _dshape_dr2(self, r2, inplace=False):
        # d/dr = -(5/3) r (1 + sqrt5 r) e^{-sqrt5 r};  d/dr^2 = that / (2 r)
        s = _scaled_root(r2, 5.0, inplace)
        e = _exp_minus(s)
        s += 1.0
        s *= e
        s *= -5.0 / 6.0
        return s


class Periodic(Kernel):
    """Periodic k = v exp(-2 sum_d sin^2(pi (x_d - x'_d) / period) / lengthscale^2) (R&W eq. 4.31)."""

    def __init__(self, variance: float = 1.0, lengthscale: float = 1.0, period: float = 1.0):
        self.variance = float(_positive(variance, "variance")[0])
        self.lengthscale = float(_positive(lengthscale, "lengthscale")[0])
        self.period = float(_positive(period, "period")[0])

    param_names = ("variance", "lengthscale", "period")

    def log_params(self):
        return np.log([self.variance, self.lengthscale, self.period])

    def with_log_params(self, theta):
        v, ls, p = np.exp(np.asarray(theta, float))
        return Periodic(v, ls, p)

    def _angles(self, X, X2):
        return np.pi * (X[:, None, :] - X2[None, :, :]) / self.period

    def _K(self, X, X2):
        s = np.sin(self._angles(X, X2))
        return self.variance * np.exp(-2.0 * (s * s).sum(-1) / self.lengthscale**2)

    def _diag(self, X):
        return np.full(X.shape[0], self.variance)

    def _grads(self, X):
        a = self._angles(X, X)
        s2 = (np.sin(a) ** 2).sum(-1)
        K = self.variance * np.exp(-2.0 * s2 / self.lengthscale**2)
        d_ls = K * 4.0 * s2 / self.lengthscale**2
        # d sin^2(a)/d log p = -a sin(2a)
        d_p = K * (2.0 / self.lengthscale**2) * (a * np.sin(2.0 * a)).sum(-1)
        return [K, d_ls, d_p]

    def __repr__(self):
        return f"qpviz.kernels.Periodic(variance={self.variance!r}, lengthscale={self.lengthscale!r}, period={self.period!r})"


class Linear(Kernel):
    """Linear k = sum_d v_d x_d x'_d (one variance, or one per dimension)."""

    def __init__(self, variance=1.0):
        v = _positive(variance, "variance")
        self.variance = v if v.size > 1 else float(v[0])

    @property
    def param_names(self):
        if np.ndim(self.variance) == 1:
            return tuple(f"variance[{d}]" for d in range(len(self.variance)))
        return ("variance",)

    def log_params(self):
        return np.log(np.atleast_1d(self.variance)).astype(float)

    def with_log_params(self, theta):
        v = np.exp(np.asarray(theta, float))
        return Linear(v if np.ndim(self.variance) == 1 else v[0])

    def _check_dim(self, X):
        if np.ndim(self.variance) == 1 and X.shape[1] != len(self.variance):
            raise ValueError(f"Linear has {len(self.variance)} variances but the inputs have {X.shape[1]} dimensions")

    def _K(self, X, X2):
        v = np.broadcast_to(np.atleast_1d(self.variance), (X.shape[1],))
        return (X * v) @ X2.T

    def _grads(self, X):
        if np.ndim(self.variance) == 1:
            return [self.variance[d] * np.outer(X[:, d], X[:, d]) for d in range(X.shape[1])]
        return [self._K(X, X)]

    def __repr__(self):
        return f"qpviz.kernels.Linear(variance={self.variance!r})"


class _Combination(Kernel):
    def __init__(self, first: Kernel, second: Kernel):
        for k in (first, second):
            if not isinstance(k, Kernel):
                raise TypeError(f"can only combine qpviz kernels, got {k!r}")
        self.first, self.second = first, second
        self._n_first = len(first.param_names)

    @property
    def param_names(self):
        return tuple(f"k1.{n}" for n in self.first.param_names) + tuple(f"k2.{n}" for n in self.second.param_names)

    def log_params(self):
        return np.concatenate([self.first.log_params(), self.second.log_params()])

    def with_log_params(self, theta):
        theta = np.asarray(theta, float)
        return type(self)(self.first.with_log_params(theta[: self._n_first]), self.second.with_log_params(theta[self._n_first :]))

    def _check_dim(self, X):
        self.first._check_dim(X)
        self.second._check_dim(X)


class Sum(_Combination):
    """k1 + k2."""

    def _K(self, X, X2):
        return self.first._K(X, X2) + self.second._K(X, X2)

    def _diag(self, X):
        return self.first._diag(X) + self.second._diag(X)

    def _grads(self, X):
        return self.first._grads(X) + self.second._grads(X)

    def __repr__(self):
        return f"({self.first!r} + {self.second!r})"


class Product(_Combination):
    """k1 * k2 (elementwise product of the covariance matrices)."""

    def _K(self, X, X2):
        return self.first._K(X, X2) * self.second._K(X, X2)

    def _diag(self, X):
        return self.first._diag(X) * self.second._diag(X)

    def _grads(self, X):
        K1, K2 = self.first._K(X, X), self.second._K(X, X)
        return [g * K2 for g in self.first._grads(X)] + [K1 * g for g in self.second._grads(X)]

    def __repr__(self):
        return f"({self.first!r} * {self.second!r})"
