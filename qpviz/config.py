"""Numerical defaults of qpviz, in one place.

Every tolerance, quadrature order and folder that the library uses comes from here, so that
a user can see (and a test can change) them without hunting through modules.
"""
from __future__ import annotations

from pathlib import Path

__all__ = [
    "JITTER",
    "GL_NODES",
    "QP_REL_TOL",
    "QP_MAX_PANELS",
    "TAIL_LOG_DROP",
    "GH_NODES",
    "TABLE_DIR",
    "NUMBA_OPTIONS",
    "MAX_TABLE_COUNT",
    "BLAS_SINGLE_THREAD_N",
    "BLAS3_SWEEP_N",
    "SWEEP_REFRESH",
    "HYPER_BOUNDS",
]

#: Diagonal jitter added to kernel matrices before a Cholesky factorisation.
JITTER = 1e-8

#: Gauss-Legendre nodes per panel of the adaptive tilted-distribution quadrature.
GL_NODES = 16

#: Target relative accuracy of the adaptive quadrature behind QP (and quadrature moments).
QP_REL_TOL = 1e-12

#: Hard limit of panels per projection; reaching it is reported, never silent.
QP_MAX_PANELS = 4000

#: The tilted density is integrated where log q(f) >= log q(mode) - TAIL_LOG_DROP
#: (exp(-80) ~ 2e-35: far below double precision relative to the bulk).
TAIL_LOG_DROP = 80.0

#: Gauss-Hermite nodes for expectations under a Gaussian (VB, predictive by quadrature).
GH_NODES = 64

#: Folder of the cached QP lookup tables (located from this file, never the CWD).
TABLE_DIR = Path(__file__).resolve().parent.parent / "lookup_tables"

#: Dense problems with fewer latent values than this run their linear algebra on one BLAS thread:
#: OpenBLAS's threads spin-wait on a busy 2-core machine (a 200 x 200 Cholesky took 22 ms, not
#: 0.2 ms, measured; :mod:`qpviz._blas`).
BLAS_SINGLE_THREAD_N = 800

#: Sequential EP/QP sweeps apply their delayed covariance updates with BLAS dsyrk from this many
#: latent values on (below, inside the numba kernel; :mod:`qpviz.inference.dense_sweep`).
BLAS3_SWEEP_N = 400

#: A sequential EP/QP run re-factorises the posterior from its sites every this many sweeps (and
#: at the end), so rank-one rounding never accumulates for long (:mod:`qpviz.inference.sweep`).
SWEEP_REFRESH = 5

#: Default bounds of every hyper-parameter that ``qpviz.fit(..., optimise=True)`` fits (kernel
#: variances and length scales, likelihood scales), in natural units: exp(-9) to exp(9). A fitted
#: value on a bound is reported (``OptimiserBoundWarning``); ``fit(..., bounds=...)`` changes them.
HYPER_BOUNDS = (1.2340980408667956e-04, 8.1030839275753841e03)

#: Options for every numba kernel of the package.
NUMBA_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}

#: Largest count the Poisson tables cover; larger counts are computed directly.
MAX_TABLE_COUNT = 50
