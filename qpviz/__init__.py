"""qpviz: Expectation Propagation and Quantile Propagation for Gaussian-process models, made visible.

Public API (stable; documented in the README):

* ``qpviz.likelihood(name, **params)`` -> a likelihood object (:mod:`qpviz.likelihoods`);
  ``qpviz.Likelihood`` (base class: a subclass defining only ``log_prob`` works everywhere),
  ``qpviz.Parameter`` (declared parameters) and ``qpviz.register_likelihood`` (adds one by name)
* ``qpviz.project(likelihood, y, cavity_mean, cavity_var, method="ep"|"qp")`` -> a
  :class:`~qpviz.projection.Projection` with ``.mean`` and ``.var`` (:mod:`qpviz.projection`)
* ``qpviz.fit(X, y, likelihood, kernel, method="ep"|"qp"|"vb"|"laplace"|"mcmc")`` -> a GP
  posterior with ``predict_f`` (:mod:`qpviz.inference`)
* ``qpviz.kernels`` -> covariance functions, e.g. ``qpviz.kernels.RBF(variance=2.0, lengthscale=0.7)``
"""
from __future__ import annotations

from qpviz._numba_cache import drop_stale_caches

drop_stale_caches()  # before any jitted module loads: numba does not track cross-file callees

from qpviz import kernels  # noqa: E402
from qpviz.inference import fit  # noqa: E402
from qpviz.likelihoods import Likelihood, Parameter, likelihood, register_likelihood  # noqa: E402
from qpviz.projection import project  # noqa: E402

__all__ = ["likelihood", "Likelihood", "Parameter", "register_likelihood", "project", "fit", "kernels",
           "__version__"]
__version__ = "0.1.0"
