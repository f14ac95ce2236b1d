"""Typed numbers of every page, without a widget: one rule per field, one parser, one message
wording (issue 21).

A :class:`NumberField` is a field's label and accepted range. :meth:`NumberField.parse` turns what
a user typed or a link carried into the number, or raises ValueError with a message that names the
field, the value (shortened) and the accepted range. The pages' models (e.g.
:mod:`qpviz.gpdemo.oned_model`) call it, so the rules are tested without a browser; the page's
text box for a field, and its binding to a model, are app/number_field.py's.

Every field made here is registered in :data:`FIELDS` by its label: the browser tests find the
typed boxes of each page in the browser and look their rules up there, so a new field is covered
without a test edit. :func:`number_check` and :func:`range_checks` are the checks of a link's
numbers that have no typed box (a slider's, a parameter's bounds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from qpviz.checks import shorten

__all__ = ["NumberField", "FIELDS", "number_check", "range_checks"]

#: label -> field, of every field made so far (module constants register at import).
FIELDS: dict[str, "NumberField"] = {}


@dataclass(frozen=True)
class NumberField:
    """A typed number: ``name`` (as the message says it), accepted range [low, high] (``low`` itself
    refused if ``low_open``), whole numbers only if ``integer``."""

    name: str
    low: float
    high: float
    integer: bool = False
    low_open: bool = False

    def __post_init__(self):
        FIELDS[self.label] = self

    @property
    def accepted(self) -> str:
        """The accepted values in words: "a whole number from 5 to 1000", "a number > 0 and <= 200"."""
        if self.integer:
            return f"a whole number from {self.low:g} to {self.high:g}"
        if self.low_open:
            return f"a number > {self.low:g} and <= {self.high:g}"
        return f"a number from {self.low:g} to {self.high:g}"

    @property
    def label(self) -> str:
        return f"{self.name} ({self.accepted})"

    def parse(self, value) -> float | int:
        """``value`` (typed text, a link's text or a number) as the field's number; ValueError naming
        the field, the value and the accepted range for anything else."""
        refused = ValueError(f"{self.name}: {shorten(repr(value) if isinstance(value, str) else value, 40)} "
                             f"was not applied; type {self.accepted}")
        if isinstance(value, bool):
            raise refused
        try:
            number = float(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            raise refused from None
        if not math.isfinite(number) or number < self.low or number > self.high:
            raise refused
        if self.low_open and number == self.low:
            raise refused
        if self.integer:
            if number != int(number):
                raise refused
            return int(number)
        return number

    def show(self, value) -> str:
        """The text the box shows for a good ``value``."""
        return f"{int(value)}" if self.integer else f"{float(value):g}"


def range_checks(owner, ranges: dict, keys: dict) -> dict:
    """Link checks of a page's numbers: key -> a number inside ``ranges[name]`` (whole for an
    integer parameter of ``owner``), for each ``name`` of ``ranges`` that has a link key."""
    import param  # noqa: PLC0415

    return {keys[name]: number_check(low, high, isinstance(owner.param[name], param.Integer))
            for name, (low, high) in ranges.items() if name in keys}


def number_check(low, high, integer):
    """``check(value)``: a finite number inside [low, high] (None: open), whole if ``integer``."""
    def check(value):
        words = ("a whole number" if integer else "a finite number") + (
            f" from {low:g} to {high:g}" if low is not None and high is not None else "")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(words) from None
        if (isinstance(value, bool) or not math.isfinite(number) or (low is not None and number < low)
                or (high is not None and number > high) or (integer and number != int(number))):
            raise ValueError(words)
        return int(number) if integer else number
    return check
