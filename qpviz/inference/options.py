"""The options of one ``qpviz.fit`` method, declared once: names, defaults, documentation and the
check of the names a call passes.

Each engine module declares a frozen dataclass deriving from :class:`MethodOptions` (e.g.
:class:`qpviz.inference.ep.SiteOptions` for ``"ep"`` / ``"qp"``); its fields are the options,
each field's default is the option's default and its ``metadata["doc"]`` a one-line meaning. The
method registry (:mod:`.methods`) maps method names to these classes; ``qpviz.fit`` checks a call
against them and the options table of ``docs/inference.md`` is generated from them
(:func:`qpviz.inference.methods.options_table`, tested).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

__all__ = ["MethodOptions", "TrainingOptions", "option", "COMMON", "TRAINING"]

#: options every method accepts (some methods refuse a value for them with a message saying why)
COMMON = ("jitter", "prior", "max_opt_iter", "optimise_likelihood", "bounds")
#: what a training run reports as it goes (:class:`qpviz.inference.stochastic.TrainingRecord`)
TRAINING = ("validation", "callback", "stop", "progress")


def option(default, doc: str):
    """A dataclass field for one option: its default and one line saying what it does."""
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass(frozen=True)
class MethodOptions:
    """The options of one method (subclasses add theirs); the fields below every method accepts."""

    jitter: float | None = option(None, "added to the prior covariance's diagonal (None: `qpviz.config.JITTER`)")
    prior: object = option(None, "a prior object replacing the dense one (the `Prior` protocol)")
    max_opt_iter: int = option(100, "L-BFGS-B iterations of `optimise=True`")
    optimise_likelihood: bool = option(False, "also fit the likelihood's scale parameter (noise variance, scale)")
    bounds: object = option(None, "limits of the fitted hyper-parameters: (low, high) or a dict by name")

    #: the prior capabilities (protocols of :mod:`.prior`) the method needs besides
    #: :class:`~qpviz.inference.prior.Conditions`; checked once when a fit starts
    needs: ClassVar[tuple] = ()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every option the method accepts, in declaration order (common ones first)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def own(cls) -> tuple[str, ...]:
        """The method's options besides :data:`COMMON`: its own ones, then the training options."""
        names = cls.names()
        return (tuple(n for n in names if n not in COMMON and n not in TRAINING)
                + tuple(n for n in TRAINING if n in names))

    @classmethod
    def defaults(cls) -> dict:
        """Option name -> default."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def docs(cls) -> dict:
        """Option name -> its one-line documentation."""
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}

    @classmethod
    def check(cls, method: str, given) -> None:
        """A TypeError naming the options in ``given`` that ``method`` does not take, and all it does."""
        allowed = cls.own() + COMMON
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise TypeError(f"method {method!r} does not take option(s) {unknown}; it accepts {sorted(allowed)}")


@dataclasses.dataclass(frozen=True)
class TrainingOptions(MethodOptions):
    """Options of methods that report on training as they go (:data:`TRAINING`)."""

    validation: object = option(None, "(X_val, y_val): test error and NTLL recorded per step")
    callback: object = option(None, "called with each recorded history entry")
    stop: object = option(None, "a `threading.Event` or a callable: ends training at the current step")
    progress: bool = option(False, "a progress bar on stderr")
