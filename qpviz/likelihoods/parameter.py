"""What a likelihood declares and returns: its :class:`Parameter` declarations (name, default,
valid range, meaning), the :class:`TiltedMoments` of its tilted distributions, and
:class:`InvalidObservation`, the error for an observation outside its support.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpviz.checks import as_float_array

__all__ = ["InvalidObservation", "TiltedMoments", "Parameter"]


class InvalidObservation(ValueError):
    """An observed y outside the support of the likelihood (a user error, with advice)."""


@dataclass(frozen=True)
class TiltedMoments:
    """log normaliser, mean and variance of the tilted distribution (arrays)."""

    log_z: np.ndarray
    mean: np.ndarray
    var: np.ndarray


@dataclass(frozen=True)
class Parameter:
    """A declared likelihood parameter: its name, default, valid range and what it means.

    ``choices`` are the values the dashboard offers by default (and the QP tables cover);
    ``fit_scale`` marks a scale that ``qpviz.fit(..., optimise_likelihood=True)`` fits on the
    log scale.
    """

    name: str
    default: float
    lower: float = -math.inf
    upper: float = math.inf
    lower_inclusive: bool = False
    upper_inclusive: bool = False
    doc: str = ""
    choices: tuple = ()
    fit_scale: bool = False

    def describe_range(self) -> str:
        left = "[" if self.lower_inclusive else "("
        right = "]" if self.upper_inclusive else ")"
        return f"{left}{self.lower:g}, {self.upper:g}{right}"

    def check(self, value) -> float:
        """``value`` as a float in the declared range, or an error that says what to use."""
        arr = as_float_array(value, self.name)
        if arr.ndim != 0:
            raise ValueError(f"{self.name} must be a single number; got {value!r}")
        x = float(arr)
        above = x >= self.lower if self.lower_inclusive else x > self.lower
        below = x <= self.upper if self.upper_inclusive else x < self.upper
        if not (math.isfinite(x) and above and below):
            raise ValueError(f"{self.name} must be a finite number in {self.describe_range()}"
                             f"{' (' + self.doc + ')' if self.doc else ''}; got {value!r}")
        return x
