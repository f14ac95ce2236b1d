"""Likelihoods p(y | f) of one latent value, each one small class (the contract: :mod:`.base`).

``qpviz.likelihood(name, **params)`` builds a registered one by name; ``qpviz.register_likelihood``
adds a class to the registry (the dashboard's likelihood list and widgets, the registry tests
and ``qpviz.fit(..., likelihood="name")`` all read it). Every module of this package is imported
here and registers its class with the ``@register_likelihood`` decorator, so a new built-in
likelihood is one new file.

Built-ins: ``gaussian`` (variance), ``probit``, ``logistic``, ``step`` (eps), ``cloglog``,
``poisson_square``, ``poisson_exp``, ``student_t`` (nu, scale), ``laplace`` (scale);
``registered()`` lists them with their parameters.
"""
from __future__ import annotations

import importlib
import pkgutil

from qpviz.likelihoods.base import Likelihood, Tempered
from qpviz.likelihoods.parameter import InvalidObservation, Parameter, TiltedMoments
from qpviz.likelihoods.registry import REGISTRY, as_likelihood, likelihood, register_likelihood, registered

__all__ = ["REGISTRY", "likelihood", "register_likelihood", "registered", "Likelihood", "Parameter", "Tempered",
           "TiltedMoments", "InvalidObservation", "as_likelihood"]

_NOT_LIKELIHOODS = {"base", "registry"}

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name not in _NOT_LIKELIHOODS:
        importlib.import_module(f"{__name__}.{_module.name}")


def __getattr__(name):
    # the classes by their Python names, e.g. qpviz.likelihoods.Probit
    for cls in REGISTRY.values():
        if cls.__name__ == name:
            return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
