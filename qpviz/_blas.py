"""BLAS threads for small dense problems, and the in-place symmetric rank-k update.

OpenBLAS starts its worker threads for matrices of a few hundred rows. On a 2-core machine whose
other core is busy (a served dashboard, a second session, a test run) those threads spin-wait
for a core: a 200 x 200 Cholesky then took 22 ms instead of 0.2 ms (measured here). Problems
below :data:`qpviz.config.BLAS_SINGLE_THREAD_N` therefore run their linear algebra with one BLAS
thread (:func:`small_problem_threads`); large ones keep the library's default threads.

The limit is process-wide (OpenBLAS has no per-thread setting): a second thread that runs a large
product while a small problem holds the limit runs it single-threaded, which is slower but
correct.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np
from scipy.linalg import LinAlgError, blas, lapack

from qpviz import config

__all__ = ["small_problem_threads", "syrk_update_lower", "gram_update_lower", "lower_inverse"]

_CONTROLLER = None
_CONTROLLER_LOCK = threading.Lock()


def _controller():
    """threadpoolctl's view of the loaded BLAS libraries (built once, after SciPy's BLAS loaded)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        with _CONTROLLER_LOCK:
            if _CONTROLLER is None:
                from threadpoolctl import ThreadpoolController

                _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def small_problem_threads(n: int):
    """A context in which BLAS uses one thread if ``n`` < :data:`qpviz.config.BLAS_SINGLE_THREAD_N`
    (about 8 us to enter and leave), else a no-op context."""
    if n >= config.BLAS_SINGLE_THREAD_N:
        return contextlib.nullcontext()
    return _controller().limit(limits=1, user_api="blas")


def syrk_update_lower(cov: np.ndarray, factor: np.ndarray, sign: float) -> None:
    """cov[i, j] += sign * (factor^T factor)[i, j] for j <= i, in place, by one BLAS ``dsyrk``.

    ``cov`` is a C-ordered (N, N) array of which only the lower triangle is kept (its transpose
    is the Fortran-ordered upper triangle ``dsyrk`` updates); ``factor`` is a C-ordered (k, N)
    array, so ``factor.T`` is the Fortran (N, k) matrix A of C := sign A A^T + C. No copies.
    """
    if factor.shape[0] > 0:
        _dsyrk_in_place(cov, factor.T, 0, sign)


def gram_update_lower(cov: np.ndarray, columns: np.ndarray, sign: float) -> None:
    """cov[i, j] += sign * (columns columns^T)[i, j] for j <= i, in place, by one BLAS ``dsyrk``.

    ``columns`` is a C-ordered (M, k) array (k long rows, e.g. the (M, N) weights of a sparse
    prior), so ``columns.T`` is the Fortran (k, M) matrix A of C := sign A^T A + C (``trans=1``:
    measured ~10% faster at k = 1e5, M = 200 than :func:`syrk_update_lower` on the transposed
    layout); ``cov`` a C-ordered (M, M) array of which only the lower triangle is kept. No copies.
    """
    if columns.shape[1] > 0:
        _dsyrk_in_place(cov, columns.T, 1, sign)


def _dsyrk_in_place(cov: np.ndarray, fortran_a: np.ndarray, trans: int, sign: float) -> None:
    """The upper triangle of the Fortran view cov.T (= the lower one of C-ordered cov) += sign op(A)."""
    out = blas.dsyrk(sign, fortran_a, beta=1.0, c=cov.T, trans=trans, lower=0, overwrite_c=1)
    if not np.shares_memory(out, cov):  # SciPy copied (a layout it could not use in place)
        raise RuntimeError("dsyrk did not update the covariance in place; pass C-ordered float64 arrays")


def lower_inverse(T: np.ndarray) -> np.ndarray:
    """T^-1 of a lower triangular T (Fortran-ordered result, zeros above the diagonal) by halves:
    [[T11, 0], [T21, T22]]^-1 = [[T11^-1, 0], [-T22^-1 T21 T11^-1, T22^-1]], two LAPACK ``dtrtri``
    of half the size and two triangular products. OpenBLAS's ``dtrtri`` is slow at a few hundred
    rows on one thread: at M = 200, 0.20 ms for the whole against 0.14 ms by halves (measured);
    the same operations up to rounding. A LinAlgError if T is singular."""
    k = T.shape[0] // 2
    out = np.zeros(T.shape, order="F")
    for part in (slice(None, k), slice(k, None)) if k else (slice(None),):
        inverse, info = lapack.dtrtri(T[part, part], lower=1)
        if info != 0:
            raise LinAlgError(f"the triangular matrix is singular (dtrtri info {info})")
        out[part, part] = np.tril(inverse)
    if k:
        out[k:, :k] = blas.dtrmm(1.0, out[:k, :k], blas.dtrmm(-1.0, out[k:, k:], T[k:, :k], lower=1), side=1, lower=1)
    return out
