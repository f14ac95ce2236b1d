"""qpviz: Expectation Propagation and Quantile Propagation for Gaussian-process models, made visible.

Public API (stable; the README's tour, the details in ``docs/``):

* ``qpviz.likelihood(name, **params)`` -> a likelihood object (:mod:`qpviz.likelihoods`);
  ``qpviz.Likelihood`` (base class: a subclass defining only ``log_prob`` works everywhere),
  ``qpviz.Parameter`` (declared parameters) and ``qpviz.register_likelihood`` (adds one by name)
* ``qpviz.project(likelihood, y, cavity_mean, cavity_var, method="ep"|"qp")`` -> a
  :class:`~qpviz.projection.Projection` with ``.mean`` and ``.var`` (:mod:`qpviz.projection`)
* ``qpviz.fit(X, y, likelihood, kernel, method="ep"|"qp"|"vb"|"laplace"|"mcmc")`` -> a GP
  posterior with ``predict_f`` (:mod:`qpviz.inference`); ``qpviz.register_method`` adds a method by name
* ``qpviz.kernels`` -> covariance functions, e.g. ``qpviz.kernels.RBF(variance=2.0, lengthscale=0.7)``

``import qpviz`` only defines these names: each is imported on first use (module
``__getattr__``), so importing the package costs milliseconds and touches no file. numba
caches are checked for staleness by an explicit step, ``python -m qpviz.cache check``
(:mod:`qpviz.cache`; the scripts run it), never on import.
"""
from __future__ import annotations

import importlib
import importlib.util

__all__ = ["likelihood", "Likelihood", "Parameter", "register_likelihood", "project", "fit",
           "register_method", "kernels", "__version__"]
__version__ = "0.1.0"

#: public name -> (module, attribute in it; None for the module itself)
_LAZY = {
    "kernels": ("qpviz.kernels", None),
    "fit": ("qpviz.inference", "fit"),
    "likelihood": ("qpviz.likelihoods", "likelihood"),
    "Likelihood": ("qpviz.likelihoods", "Likelihood"),
    "Parameter": ("qpviz.likelihoods", "Parameter"),
    "register_likelihood": ("qpviz.likelihoods", "register_likelihood"),
    "project": ("qpviz.projection", "project"),
    "register_method": ("qpviz.inference.methods", "register_method"),
}


def __getattr__(name: str):
    """Import a public name (or a submodule, e.g. ``qpviz.config``) on first use; then it is a
    plain module attribute."""
    module_name, attribute = _LAZY.get(name, (f"qpviz.{name}", None))
    if name.startswith("_") or importlib.util.find_spec(module_name) is None:
        raise AttributeError(f"module 'qpviz' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
