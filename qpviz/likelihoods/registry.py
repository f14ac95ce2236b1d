"""The registry of likelihood classes: ``register_likelihood`` and ``likelihood(name, **params)``."""
from __future__ import annotations

from qpviz.likelihoods.base import Likelihood

__all__ = ["REGISTRY", "register_likelihood", "likelihood", "registered"]

#: name -> class, ordered by the classes' ``menu_rank`` then name (the dashboard lists them so).
REGISTRY: dict[str, type[Likelihood]] = {}


def register_likelihood(cls: type[Likelihood], *, replace: bool = False) -> type[Likelihood]:
    """Add a :class:`Likelihood` subclass to the registry under ``cls.name`` (usable as a decorator).

    A name already taken by another class raises, unless ``replace=True``.
    """
    if not (isinstance(cls, type) and issubclass(cls, Likelihood)):
        raise TypeError(f"register_likelihood takes a subclass of qpviz.Likelihood, got {cls!r}")
    if "log_prob" not in {k for klass in cls.__mro__[:-1] if klass is not Likelihood for k in vars(klass)}:
        raise TypeError(f"{cls.__name__} must define log_prob(self, y, f) to be a likelihood")
    taken = REGISTRY.get(cls.name)
    if taken is not None and taken is not cls and not replace:
        raise ValueError(f"a likelihood named {cls.name!r} is registered already ({taken.__qualname__}); "
                         "choose another name or pass replace=True")
    REGISTRY[cls.name] = cls
    ordered = sorted(REGISTRY.items(), key=lambda item: (item[1].menu_rank, item[0]))
    REGISTRY.clear()
    REGISTRY.update(ordered)
    return cls


def registered() -> dict[str, type[Likelihood]]:
    """A copy of the registry (name -> class)."""
    return dict(REGISTRY)


def likelihood(name: str, **params) -> Likelihood:
    """Build a registered likelihood by name, e.g. ``likelihood("step", eps=0.1)``.

    Unknown names or parameters raise an error that lists what is accepted.
    """
    try:
        cls = REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown likelihood {name!r}; choose one of {sorted(REGISTRY)} "
                         "(or register your own with qpviz.register_likelihood)") from None
    return cls(**params)


def as_likelihood(lik) -> Likelihood:
    """``lik`` itself when it is a likelihood object, else the registered likelihood of that name
    (what ``qpviz.fit`` and the trainers accept as ``likelihood``)."""
    if isinstance(lik, Likelihood):
        return lik
    if isinstance(lik, str):
        return likelihood(lik)
    raise TypeError(f"likelihood must be a name such as 'probit' or a qpviz.likelihood(...) object, got {lik!r}")
