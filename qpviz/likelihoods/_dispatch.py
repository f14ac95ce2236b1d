"""numba dispatch from a likelihood's integer ``kind`` to its jitted scalar kernels.

Numba kernels cannot take Python objects, so the quadrature engine and the GP engines reach
a likelihood through ``(kind, p0, p1)`` (``lik.kind``, ``lik._param_pair()``). Adding a
likelihood is adding its module and one branch per function below.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from qpviz.config import NUMBA_OPTIONS
from qpviz.likelihoods import gaussian, laplace, logistic, poisson_exp, poisson_square, probit, step, student_t

__all__ = [
    "log_prob_scalar",
    "dlog_prob_scalar",
    "starts_scalar",
    "kink_scalar",
    "closed_moments_scalar",
    "closed_moments_batch",
    "tilted_moments_scalar",
]


@njit(**NUMBA_OPTIONS)
def log_prob_scalar(kind, p0, p1, y, f):
    """log p(y | f)."""
    if kind == 0:
        return gaussian.log_prob_kernel(p0, p1, y, f)
    if kind == 1:
        return probit.log_prob_kernel(p0, p1, y, f)
    if kind == 2:
        return logistic.log_prob_kernel(p0, p1, y, f)
    if kind == 3:
        return step.log_prob_kernel(p0, p1, y, f)
    if kind == 4:
        return poisson_square.log_prob_kernel(p0, p1, y, f)
    if kind == 5:
        return poisson_exp.log_prob_kernel(p0, p1, y, f)
    if kind == 6:
        return student_t.log_prob_kernel(p0, p1, y, f)
    return laplace.log_prob_kernel(p0, p1, y, f)


@njit(**NUMBA_OPTIONS)
def dlog_prob_scalar(kind, p0, p1, y, f):
    """(d/df, d^2/df^2) log p(y | f)."""
    if kind == 0:
        return gaussian.dlog_prob_kernel(p0, p1, y, f)
    if kind == 1:
        return probit.dlog_prob_kernel(p0, p1, y, f)
    if kind == 2:
        return logistic.dlog_prob_kernel(p0, p1, y, f)
    if kind == 3:
        return step.dlog_prob_kernel(p0, p1, y, f)
    if kind == 4:
        return poisson_square.dlog_prob_kernel(p0, p1, y, f)
    if kind == 5:
        return poisson_exp.dlog_prob_kernel(p0, p1, y, f)
    if kind == 6:
        return student_t.dlog_prob_kernel(p0, p1, y, f)
    return laplace.dlog_prob_kernel(p0, p1, y, f)


@njit(**NUMBA_OPTIONS)
def starts_scalar(kind, p0, p1, y, m, v):
    """Up to three points near the modes of the tilted density (NaN = unused)."""
    if kind == 0:
        return gaussian.starts_kernel(p0, p1, y, m, v)
    if kind == 1:
        return probit.starts_kernel(p0, p1, y, m, v)
    if kind == 2:
        return logistic.starts_kernel(p0, p1, y, m, v)
    if kind == 3:
        return step.starts_kernel(p0, p1, y, m, v)
    if kind == 4:
        return poisson_square.starts_kernel(p0, p1, y, m, v)
    if kind == 5:
        return poisson_exp.starts_kernel(p0, p1, y, m, v)
    if kind == 6:
        return student_t.starts_kernel(p0, p1, y, m, v)
    return laplace.starts_kernel(p0, p1, y, m, v)


@njit(**NUMBA_OPTIONS)
def kink_scalar(kind, p0, p1, y):
    """The point where log p(y | f) is not smooth, or NaN."""
    if kind == 3:
        return step.kink_kernel(p0, p1, y)
    if kind == 7:
        return laplace.kink_kernel(p0, p1, y)
    return np.nan


@njit(**NUMBA_OPTIONS)
def closed_moments_scalar(kind, p0, p1, y, m, v):
    """(available, log Z, mean, var) of the tilted distribution in closed form."""
    if kind == 0:
        return gaussian.closed_moments_kernel(p0, p1, y, m, v)
    if kind == 1:
        return probit.closed_moments_kernel(p0, p1, y, m, v)
    if kind == 3:
        return step.closed_moments_kernel(p0, p1, y, m, v)
    if kind == 4:
        return poisson_square.closed_moments_kernel(p0, p1, y, m, v)
    return False, np.nan, np.nan, np.nan


@njit(**NUMBA_OPTIONS)
def closed_moments_batch(kind, p0, p1, y, m, v):
    """closed_moments_scalar over 1-D arrays: rows log Z, mean, var."""
    out = np.empty((3, y.size))
    for i in range(y.size):
        _, out[0, i], out[1, i], out[2, i] = closed_moments_scalar(kind, p0, p1, y[i], m[i], v[i])
    return out


def __getattr__(name):
    # tilted_moments_scalar lives with the quadrature engine (it falls back to it); importing it
    # lazily here avoids an import cycle while keeping the documented name.
    if name == "tilted_moments_scalar":
        from qpviz.tilted import tilted_moments_scalar

        return tilted_moments_scalar
    raise AttributeError(name)
