"""Widget -> model forwarding of the pages, with no flag to set while a page shows its model (issue 23).

A page writes its model's values into its widgets whenever the model changed (a change it
accepted, adjusted or refused, a preset, a link, a finished job). A widget's change reaches the
model only if the model does not hold that value already (``held(value)`` false), so writing the
model's own values into the widgets forwards nothing: no second fit, and no refusal message
cleared by the page's own echo of the value kept. A widget holds the model's value when it
shows what the page writes into it for that value (:func:`holds`; a typed box: the number's text).
"""
from __future__ import annotations

__all__ = ["forward", "holds"]


def forward(widget, held, apply, name: str = "value") -> None:
    """Call ``apply(value)`` when ``widget.<name>`` changes to a ``value`` the model does not hold
    (``held(value)`` false)."""

    def changed(event):
        if not held(event.new):
            apply(event.new)

    widget.param.watch(changed, name)


def holds(model, name: str, shown=None):
    """``held`` of a widget showing ``model.<name>`` (as ``shown(value)``, what the page writes
    into it: e.g. a typed number's text, a count clipped to its slider's range)."""
    return lambda value: value == (getattr(model, name) if shown is None else shown(getattr(model, name)))

