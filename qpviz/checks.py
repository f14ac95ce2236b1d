"""Input validation shared by the library: numeric arrays, positive scalars, Gaussian cavities.

Each check raises an error that names the argument and says what to use instead. Vectorised:
one pass over an array, no per-element Python.
"""
from __future__ import annotations

import numpy as np

__all__ = ["as_float_array", "check_positive", "check_cavity", "shorten", "quoted", "refusal"]


def as_float_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array, with an error that names the argument if it is not numeric."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric (a number or an array of numbers), got {x!r}") from exc
    return arr


def check_positive(name: str, value) -> float:
    """A strictly positive finite scalar parameter, or an error that says so."""
    arr = as_float_array(value, name)
    if arr.ndim != 0 or not np.isfinite(arr) or arr <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(arr)


def check_cavity(cavity_mean, cavity_var) -> tuple[np.ndarray, np.ndarray]:
    """Validate a Gaussian cavity: finite mean, finite strictly positive variance."""
    mean = as_float_array(cavity_mean, "cavity_mean")
    var = as_float_array(cavity_var, "cavity_var")
    if not np.isfinite(mean).all():
        raise ValueError("cavity_mean must be finite; got a NaN or infinite value")
    # one pass: NaN fails `var > 0`, inf fails `var < inf`
    if not ((var > 0) & (var < np.inf)).all():
        if not np.isfinite(var).all():
            raise ValueError("cavity_var must be finite; got a NaN or infinite value")
        raise ValueError(
            f"cavity_var must be > 0 (a Gaussian needs a positive variance); got min {var.min():g}. "
            "Use a positive variance, e.g. cavity_var=1.0."
        )
    return mean, var


def shorten(text: str, limit: int = 120) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked by a final "…" (for a user's
    value quoted in a message: the message still names it, without a page-long paragraph)."""
    text = str(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def quoted(value, limit: int = 60) -> str:
    """``repr(value)`` shortened (:func:`shorten`): how a message quotes what a user typed or a link
    gave, which may be anything, of any length."""
    return shorten(repr(value), limit)


def refusal(error, kept: str) -> str:
    """The message of a refused typed value: the field's words (``error``), then the value kept."""
    return f"{error}; kept {kept}"
