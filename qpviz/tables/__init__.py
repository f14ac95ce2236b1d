"""Cached QP lookup tables: sigma_QP^2 in ~70 ns instead of ~100 us of quadrature.

QP (QP paper eq. 7) needs sigma_QP = int phi(Phi^-1(F(f))) df of the tilted distribution for
every site update. The paper (App. J) tabulates it on a 20001 x 2001 grid per label (640 MB,
linear interpolation, EP's variance outside the grid). qpviz instead stores, per likelihood
family, a piecewise Chebyshev approximation of h = log(sigma_QP / s) on mapped cavity
coordinates (1-D in z = y m / s for the scale-free step), accurate to ~1e-8 relative in
sigma_QP, a few tens of kB per table, and computes directly (exactly) wherever a table does not
cover the query. On loading, each table is re-approximated by low-degree patches found by index
arithmetic (:mod:`qpviz.tables.fast`), which is what lookups read. Details and measured errors:
``lookup_tables/README.md``.

Public functions:

* :func:`qp_variance` ``(likelihood, y, cavity_mean, cavity_var)`` -> sigma_QP^2, vectorised
  (what ``qpviz.project(..., method="qp")`` calls);
* :func:`jit_data` ``(likelihood)`` -> ``(coef, meta)`` float arrays for numba code (empty
  when no table covers the likelihood), used with
* :func:`qp_var_scalar` ``(coef, meta, lk, y, m, v)`` (numba): sigma_QP^2 from the
  table, or by :func:`qpviz.tilted.qp_std_scalar` where the table does not cover (y, m, v).

Tables load lazily from :data:`qpviz.config.TABLE_DIR` and are verified (format, generating
parameters, checksum). A missing, corrupt or stale file gives one :class:`TableWarning` and
direct computation for that likelihood: the answer is never wrong, only slower.

Modules, one idea each: :mod:`~qpviz.tables.families` (what a table covers and how cavities
fold onto it), :mod:`~qpviz.tables.chebyshev` (fitting the stored patch trees),
:mod:`~qpviz.tables.layout` (the named fields of the packed ``meta`` arrays),
:mod:`~qpviz.tables.packing` (fit, pack for a file, derive the in-memory form),
:mod:`~qpviz.tables.store` (the files), :mod:`~qpviz.tables.fast` (the fast patches),
:mod:`~qpviz.tables.derived` (the fast forms cached on disk for later processes),
:mod:`~qpviz.tables.lookup` (the numba lookup kernels), :mod:`~qpviz.tables.loading` (cache,
locks, preload, :class:`TableWarning`) and :mod:`~qpviz.tables.batch` (sigma_QP^2 for one point
or many, with the direct fallback).

numba caches of kernels that compile in functions from other files are dropped by
``python -m qpviz.cache check`` whenever a package source changed (:mod:`qpviz.cache`).
"""
from __future__ import annotations

from qpviz.tables.batch import qp_var_scalar, qp_variance, qp_variance_checked
from qpviz.tables.families import all_families
from qpviz.tables.loading import TableWarning, clear_cache, jit_data, loaded_families, preload, runtime_stats, table_dir

__all__ = ["TableWarning", "jit_data", "qp_var_scalar", "qp_variance", "table_dir", "loaded_families", "clear_cache",
           "all_families", "runtime_stats", "qp_variance_checked", "preload"]
