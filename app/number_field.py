"""Typed numbers of every page: one spec per field, one parser, one message wording (issue 21).

A :class:`NumberField` is a field's label and accepted range. :meth:`NumberField.parse` turns what
a user typed or a link carried into the number, or raises ValueError with a message that names the
field, the value (shortened) and the accepted range. The pages' models call it, so the rules are
tested without a browser; :meth:`NumberField.widget` makes the page's text box, whose label shows
the range. A text box (not Bokeh's number box) is used on purpose: a number box silently drops the
keystrokes it does not like ("1.5" in an integer box became 15), a text box hands every value to
:meth:`parse`, which answers every bad one with a message.

The app's one behaviour for a refused typed value: the page keeps its last good state, the box
shows the last good value again, and a message says what was typed, that it was not applied, and
what the field accepts; the next valid value clears the message.

Every field made here is registered in :data:`FIELDS` by its label: the browser tests find the
typed boxes of each page in the browser and look their rules up there, so a new field is covered
without a test edit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from qpviz.checks import shorten

__all__ = ["NumberField", "FIELDS", "TYPED_CLASS", "refuse_link", "refusal"]

#: CSS class of every typed-number box (the browser tests find the boxes by it).
TYPED_CLASS = "qpviz-typed"
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

    def widget(self, value, css_class: str, **params):
        """A text box for this field, showing ``value``, with the range in its label."""
        import panel as pn  # noqa: PLC0415 - the rules above are used without Panel

        return pn.widgets.TextInput(label=self.label, value=self.show(value),
                                    css_classes=[css_class, TYPED_CLASS], **params)

    def bind(self, owner, name: str, css_class: str, say, box=None, apply=None, **params):
        """A text box (:meth:`widget`) for the number ``owner.name`` (a parameter): a valid typed value
        clears the last refusal (``say("")``) and is set; a bad one is named by ``say(message)`` with
        the value kept, and the box shows the kept value again. A change of ``owner.name`` (a link, a
        preset) is shown in the box. ``box``: a widget of the page's own instead (a slider with a
        number box, e.g. EditableFloatSlider: it shows the number, not its text; the browser's number
        box drops letters keystroke by keystroke, a number out of range reaches :meth:`parse`).
        ``apply(name, number)`` sets a good value instead of ``setattr`` (e.g. through the page's guard)."""
        text = box is None
        if text:
            box = self.widget(getattr(owner, name), css_class, **params)
        showing = []

        def show(*_):
            showing.append(True)
            try:
                value = getattr(owner, name)
                box.value = self.show(value) if text else value
            finally:
                showing.pop()

        def typed(event):
            if showing:
                return
            try:
                number = self.parse(event.new)
            except ValueError as exc:
                say(refusal(exc, self.show(getattr(owner, name))))
                show()
                return
            say("")
            (apply or (lambda key, value: setattr(owner, key, value)))(name, number)
            show()

        box.param.watch(typed, "value")
        owner.param.watch(show, name)
        return box


def refusal(error: Exception, kept: str) -> str:
    """The message of a refused typed value: the field's words (``error``), then the value kept."""
    return f"{error}; kept {kept}"


def refuse_link(key: str, widget, say):
    """An ``on_error`` for ``pn.state.location.sync(widget, {"value": key}, on_error=...)``: a link
    value the widget cannot take (Panel then sets nothing) is named by ``say(message)`` with the
    valid values and the value kept, and the link is rewritten to the value shown."""

    def on_error(asked: dict) -> None:
        options = getattr(widget, "options", None)
        options = list(options.values() if isinstance(options, dict) else options) if options else []
        valid = f" (valid: {', '.join(map(str, options))})" if options else ""
        for value in asked.values():
            say(f"the link's {key}={shorten(str(value), 60)} was not used{valid}; kept {shorten(str(widget.value), 60)}")
        widget.param.trigger("value")  # the URL sync writes the value shown into the link

    return on_error
