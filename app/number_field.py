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

from qpviz.checks import refusal, shorten

__all__ = ["NumberField", "FIELDS", "TYPED_CLASS", "LinkValues", "link_banner", "number_check", "range_checks", "refusal"]

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


class LinkValues:
    """A page's link keys, checked before the page takes them (issue 21.3). ``fields`` maps each key
    to ``(owner, name)``: the parameter ``owner.name`` the key stands for (a widget's ``value`` or a
    page's parameter). The URL is synced with a stand-in holding the same values, so a link's value
    reaches :meth:`accepts`'s check first: a good one is set on the owner, a bad one is named in
    :attr:`banner` (the key, the value shortened, the accepted values and what is shown instead) and
    the link is rewritten to the value shown. The banner goes on the next change of any of the
    fields that is not a link's. ``checks``: key -> ``check(value) -> value to set`` (ValueError
    saying what the key accepts) for a key :meth:`accepts` cannot read from its owner. ``banner``:
    the page's :func:`link_banner`, placed where the page shows its messages."""

    def __init__(self, location, fields: dict, banner, checks: dict | None = None):
        import param  # noqa: PLC0415

        self.fields, self.notes, self._applying = dict(fields), {}, []
        self.checks = {key: (checks or {}).get(key) or self.accepts(*owner_name) for key, owner_name in self.fields.items()}
        self.banner = banner
        stand_in = type("Link", (param.Parameterized,), {key: param.Parameter(default=None) for key in self.fields})
        self.link = stand_in(**{key: getattr(owner, name) for key, (owner, name) in self.fields.items()})
        # after the URL sync's own watcher (precedence 0): a refused value's link is then rewritten
        # to the value shown last (run before it, the sync wrote the link's text back over it)
        self.link.param.watch(self._from_link, list(self.fields), precedence=1)
        for key, (owner, name) in self.fields.items():
            owner.param.watch(lambda event, key=key: self._from_page(key), name)
        import link_query  # noqa: PLC0415 (app/ is on the path wherever pages are)

        link_query.sync(location, self.link, {key: key for key in self.fields})

    @staticmethod
    def accepts(owner, name):
        """The check of ``owner.name``: a choice among a widget's options (every one of a list), a
        typed box's :class:`NumberField`, a finite number inside a slider's (or a number
        parameter's) bounds, a parameter's choices, a list for a list parameter."""
        import param  # noqa: PLC0415

        def refuse(words):
            raise ValueError(words)

        parameter = owner.param[name]
        options = getattr(owner, "options", None)
        if options is not None:
            options = list(options.values() if isinstance(options, dict) else options)
            if isinstance(parameter, param.List) or isinstance(getattr(owner, name), list):
                return lambda v: v if isinstance(v, list) and all(x in options for x in v) else refuse(
                    f"a list of {', '.join(map(str, options))}")
            return lambda v: v if v in options else refuse(f"one of {', '.join(map(str, options))}")
        field = FIELDS.get(getattr(owner, "name", "")) if TYPED_CLASS in getattr(owner, "css_classes", []) else None
        if field is not None:
            as_text = isinstance(getattr(owner, name), str)  # a text box (else a slider's number box)

            def typed(v):
                try:
                    number = field.parse(v)
                    return field.show(number) if as_text else number
                except ValueError:
                    raise ValueError(f"{field.name}: {field.accepted}") from None
            return typed
        if isinstance(parameter, param.ListSelector):  # (a Selector too: checked first) every item a choice
            return lambda v: v if isinstance(v, list) and all(x in parameter.objects for x in v) else refuse(
                f"a list of {', '.join(map(str, parameter.objects))}")
        if isinstance(parameter, param.Selector):
            return lambda v: v if v in parameter.objects else refuse(f"one of {', '.join(map(str, parameter.objects))}")
        if isinstance(parameter, param.List):
            return lambda v: v if isinstance(v, list) else refuse("a list, e.g. [] or [1, 2]")
        if hasattr(owner, "fixed_start"):  # an editable slider: its box may go past the slider
            return number_check(owner.fixed_start, owner.fixed_end, isinstance(parameter, param.Integer))
        if hasattr(owner, "start"):  # a slider (checked first: a NaN set on a slider ends in a RecursionError)
            return number_check(owner.start, owner.end, isinstance(parameter, param.Integer))
        if isinstance(parameter, param.Number):
            return number_check(*(parameter.bounds or (None, None)), isinstance(parameter, param.Integer))
        return lambda v: v

    def _from_link(self, *events) -> None:
        if self._applying:
            return
        order = list(self.fields)
        self._applying.append(True)
        try:
            for event in sorted(events, key=lambda e: order.index(e.name)):
                key, (owner, name) = event.name, self.fields[event.name]
                try:
                    setattr(owner, name, self.checks[key](event.new))
                    self.notes.pop(key, None)
                except ValueError as exc:
                    self.notes[key] = (f"{key}={shorten(str(event.new), 40)} ({shorten(str(exc), 200)}); "
                                       f"shown instead: {shorten(str(getattr(owner, name)), 60)}")
                    setattr(self.link, key, getattr(owner, name))  # the link gets the value shown
        finally:
            self._applying.pop()
        self._show()

    def _from_page(self, key: str) -> None:
        owner, name = self.fields[key]
        self._applying.append(True)
        try:
            # the URL follows the page: its value now, not the event's (a refused typed value is set
            # back inside an earlier watcher of the same change, so the event's value may be stale)
            setattr(self.link, key, getattr(owner, name))
        finally:
            self._applying.pop()
        if self.notes and len(self._applying) == 0:
            self.notes.clear()  # a change of the page's own: the link's refusals are old news
            self._show()

    def _show(self) -> None:
        from safe_text import bullets  # noqa: PLC0415

        text = "The link's values below were not used:\n\n" + bullets(self.notes.values()) if self.notes else ""
        self.banner.param.update(object=text, visible=bool(text))


def link_banner():
    """The pane a page's :class:`LinkValues` names its refused link values in (hidden until then)."""
    import panel as pn  # noqa: PLC0415

    # a Markdown pane styled as a warning (pn.pane.Alert asks the CDN for its stylesheets)
    return pn.pane.Markdown("", visible=False, css_classes=["qpviz-link-alert"], sizing_mode="stretch_width",
                            styles={"background": "#fff3cd", "border": "2px solid #E69F00", "border-radius": "4px",
                                    "padding": "0 12px"})


def range_checks(owner, ranges: dict, keys: dict) -> dict:
    """:class:`LinkValues` checks of a page's numbers: key -> a number inside ``ranges[name]`` (whole
    for an integer parameter of ``owner``), for each ``name`` of ``ranges`` that has a link key."""
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
