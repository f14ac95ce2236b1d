"""Typed numbers of every page, their widget side: the text box of a field and its binding (issue 21).

A field's rules (:class:`qpviz.number_rules.NumberField`: its label and accepted range, the parser
and its message) live in :mod:`qpviz.number_rules`, without Panel, so the pages' models use them;
:class:`NumberField` here is the same field with :meth:`NumberField.widget` (the page's text box,
whose label shows the range) and :meth:`NumberField.bind`; :func:`typed_box` makes the box of a
model's field. A text box (not Bokeh's number box) is used on purpose: a number box silently drops
the keystrokes it does not like ("1.5" in an integer box became 15), a text box hands every value
to the field's ``parse``, which answers every bad one with a message.

The app's one behaviour for a refused typed value: the page keeps its last good state, the box
shows the last good value again, and a message says what was typed, that it was not applied, and
what the field accepts; the next valid value clears the message.

Every field is registered in :data:`FIELDS` by its label (:mod:`qpviz.number_rules`, re-exported
here): the browser tests find the typed boxes of each page in the browser and look their rules up
there, so a new field is covered without a test edit.
"""
from __future__ import annotations

import binding
from qpviz import number_rules
from qpviz.checks import refusal, shorten
from qpviz.number_rules import FIELDS, number_check, range_checks

__all__ = ["NumberField", "FIELDS", "TYPED_CLASS", "LinkValues", "link_banner", "number_check", "range_checks", "refusal",
           "typed_box"]

#: CSS class of every typed-number box (the browser tests find the boxes by it).
TYPED_CLASS = "qpviz-typed"


def typed_box(field: number_rules.NumberField, value, css_class: str, **params):
    """A text box for ``field``, showing ``value``, with the range in its label."""
    import panel as pn  # noqa: PLC0415 - imported where a page is drawn

    return pn.widgets.TextInput(label=field.label, value=field.show(value),
                                css_classes=[css_class, TYPED_CLASS], **params)


class NumberField(number_rules.NumberField):
    """A typed number's rules (:class:`qpviz.number_rules.NumberField`) with its text box and binding."""

    def widget(self, value, css_class: str, **params):
        """A text box for this field, showing ``value``, with the range in its label (:func:`typed_box`)."""
        return typed_box(self, value, css_class, **params)

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
        shown = self.show if text else None

        def show(*_):
            value = getattr(owner, name)
            box.value = shown(value) if text else value

        def typed(value):
            try:
                number = self.parse(value)
            except ValueError as exc:
                say(refusal(exc, self.show(getattr(owner, name))))
                show()
                return
            say("")
            (apply or (lambda key, value: setattr(owner, key, value)))(name, number)
            show()

        # the box writing the number in use (show) forwards nothing: the owner holds it (app/binding.py)
        binding.forward(box, binding.holds(owner, name, shown), typed)
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
    the page's :func:`link_banner`, placed where the page shows its messages.

    The page's own changes reach the URL once they have rested (link_query.WriteWhenRested: not at
    every slider step, whose update the browser then painted 5-10 ms later); a link's value that is
    refused, or that the page shows otherwise, is written back at once."""

    def __init__(self, location, fields: dict, banner, checks: dict | None = None):
        import param  # noqa: PLC0415

        import link_query  # noqa: PLC0415 (app/ is on the path wherever pages are)

        self.fields, self.notes, self._applying = dict(fields), {}, []
        self._unwritten: set[str] = set()  # keys whose page value the link does not hold yet
        self._rested = link_query.WriteWhenRested(self._write_link)
        self.checks = {key: (checks or {}).get(key) or self.accepts(*owner_name) for key, owner_name in self.fields.items()}
        self.banner = banner
        stand_in = type("Link", (param.Parameterized,), {key: param.Parameter(default=None) for key in self.fields})
        self.link = stand_in(**{key: getattr(owner, name) for key, (owner, name) in self.fields.items()})
        # after the URL sync's own watcher (precedence 0): a refused value's link is then rewritten
        # to the value shown last (run before it, the sync wrote the link's text back over it)
        self.link.param.watch(self._from_link, list(self.fields), precedence=1)
        for key, (owner, name) in self.fields.items():
            owner.param.watch(lambda event, key=key: self._from_page(key), name)
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
        self._unwritten.add(key)
        if self._applying:  # a link's value being applied: the link shows what the page took, at once
            self._write_link()
            return
        self._rested.changed()
        if self.notes:
            self.notes.clear()  # a change of the page's own: the link's refusals are old news
            self._show()

    def _write_link(self) -> None:
        """The URL follows the page: each unwritten key's value now, not its event's (a refused typed
        value is set back inside an earlier watcher of the same change, so the event's may be stale)."""
        keys, self._unwritten = self._unwritten, set()
        self._applying.append(True)
        try:
            self.link.param.update(**{key: getattr(*self.fields[key]) for key in keys})
        finally:
            self._applying.pop()

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
