"""The registry of ``qpviz.fit``'s methods: each name, the options its engine declares and the
function that runs it.

A method is a :class:`Method`: its ``options`` class (a :class:`qpviz.inference.options.MethodOptions`
dataclass declared beside the engine: names, defaults, one-line docs) and ``run(X, y, likelihood,
kernel, method, optimise, options)``. :func:`qpviz.fit` checks a call's option names against the
declaration and calls ``run``; :data:`OPTIONS` and the options table of ``docs/inference.md``
(:func:`options_table`) are read from the same declarations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from qpviz.inference.options import COMMON, MethodOptions
from qpviz.inference.sep import SEPOptions, fit_sep
from qpviz.inference.site_fit import SITE_OPTIONS, fit_sites
from qpviz.inference.sparse_regression import PITCOptions, SparseRegressionOptions
from qpviz.inference.svi import SVIOptions, fit_svi

__all__ = ["Method", "REGISTRY", "METHODS", "OPTIONS", "options_table", "register_method", "unregister_method"]


@dataclass(frozen=True)
class Method:
    """One method of ``qpviz.fit``: its name, the options it takes and the function that runs it."""

    name: str
    options: type[MethodOptions]
    run: Callable


def _fit_sep(X, y, lik, kernel, method, optimise, options):
    """Scalable EP (:func:`qpviz.inference.sep.fit_sep`): learns (log theta, Z) itself by Adadelta."""
    unsupported = sorted(set(options) & {"prior", "max_opt_iter", "optimise_likelihood", "bounds"})
    if unsupported:
        raise TypeError(f"method='sep' does not take option(s) {unsupported}: it builds its own inducing-point "
                        "model and learns the kernel and Z by Adadelta (optimise=True)")
    return fit_sep(X, y, lik, kernel, optimise=optimise, **options)


def _fit_svi(X, y, lik, kernel, method, optimise, options):
    """SVI (:func:`qpviz.inference.svi.fit_svi`, whose defaults apply: its batch mode is the whole
    training, so ``max_opt_iter`` defaults to 1000 there): it builds its own inducing-point prior
    and keeps the likelihood's parameters fixed."""
    if options.pop("prior", None) is not None:
        raise TypeError("method='svi' builds its own inducing-point prior from inducing=Z; drop prior=...")
    if options.pop("optimise_likelihood", False):
        raise ValueError("optimise_likelihood=True is not available with method='svi'; fix the likelihood's parameters")
    return fit_svi(X, y, lik, kernel, optimise=optimise, **options)


REGISTRY: dict[str, Method] = {m.name: m for m in (
    *(Method(name, options, fit_sites) for name, options in SITE_OPTIONS.items()),
    # sparse GP regression in closed form (Gaussian likelihood; issue 12)
    Method("fitc", SparseRegressionOptions, fit_sites),
    Method("pitc", PITCOptions, fit_sites),
    Method("dtc", SparseRegressionOptions, fit_sites),
    Method("vfe", SparseRegressionOptions, fit_sites),
    # stochastic variational inference and scalable EP on inducing points (issue 13)
    Method("svi", SVIOptions, _fit_svi),
    Method("sep", SEPOptions, _fit_sep),
)}

#: the built-in methods (:data:`REGISTRY` also holds those added by :func:`register_method`)
METHODS = tuple(REGISTRY)
#: the options each method accepts besides :data:`qpviz.inference.options.COMMON`
OPTIONS = {name: m.options.own() for name, m in REGISTRY.items()}


def register_method(name: str, options: type[MethodOptions], run: Callable) -> Method:
    """Make ``qpviz.fit(..., method=name)`` call ``run(X, y, likelihood, kernel, method, optimise, options)``
    (``options``: the call's options as a dict, checked against the ``options`` class first). Adding an
    inference method is this call beside the engine: nothing else to edit (``docs/inference.md``,
    "Adding an inference method")."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a method's name must be a word such as 'my_ep' (letters, digits, _), got {name!r}")
    if name in METHODS:
        raise ValueError(f"{name!r} is a built-in method; choose another name")
    if not (isinstance(options, type) and issubclass(options, MethodOptions)):
        raise TypeError("options must be a dataclass deriving from qpviz.inference.options.MethodOptions")
    if not callable(run):
        raise TypeError(f"run must be callable, got {type(run).__name__}")
    method = REGISTRY[name] = Method(name, options, run)
    OPTIONS[name] = options.own()
    return method


def unregister_method(name: str) -> None:
    """Remove a method added by :func:`register_method` (the built-in ones stay)."""
    if name in METHODS:
        raise ValueError(f"{name!r} is a built-in method and cannot be removed")
    REGISTRY.pop(name, None)
    OPTIONS.pop(name, None)


def options_table() -> str:
    """The table of ``qpviz.fit``'s options in ``docs/inference.md`` (Markdown): one row per option, default and
    meaning, with the built-in methods that declare it so."""
    rows: dict[tuple[str, str, str], list[str]] = {}
    for name in METHODS:
        m = REGISTRY[name]
        defaults, docs = m.options.defaults(), m.options.docs()
        for opt in COMMON + m.options.own():
            rows.setdefault((opt, f"`{defaults[opt]!r}`", docs[opt]), []).append(name)
    lines = ["| option | default | methods | meaning |", "| --- | --- | --- | --- |"]
    for (opt, default, doc), methods in rows.items():
        where = "all" if len(methods) == len(METHODS) else ", ".join(methods)
        lines.append(f"| `{opt}` | {default} | {where} | {doc} |")
    return "\n".join(lines) + "\n"
