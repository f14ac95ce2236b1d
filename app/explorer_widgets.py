"""The Projection Explorer's inputs: prompt sliders, the likelihood parameter inputs built from the
registry (:func:`qpviz.explorer.parameter_controls`) and the page's URL state.

Every widget here only holds a value; the page (app/projection_explorer.py) forwards changes to
its ``ExplorerState``, which validates them.
"""
from __future__ import annotations

from urllib.parse import urlencode

import panel as pn

from binding import forward
from link_query import URL_DELAY_MS, WriteWhenRested, typed
from qpviz import explorer

__all__ = ["PROJECTOR_WIDGET_CSS", "URL_DELAY_MS", "PromptEditableFloatSlider", "PromptFloatSlider", "PromptIntSlider",
           "ParameterInputs", "UrlState", "parameter_widget"]

#: Projector mode: larger text inside every control (labels, inputs, options, buttons) and the numbers.
PROJECTOR_WIDGET_CSS = ":host, :host * { font-size: 20px !important; line-height: 1.3 !important; }"


class _Prompt:
    """What the prompt sliders share: moves reach the page's callback after 5 ms instead of Panel's
    50 ms, and a move's whole answer leaves as one message.

    Not 0 ms: a key press sends two messages (``value``, then ``value_throttled``), and the server
    writes an OK reply to each in several awaited frames. A callback started at once runs between
    the frames of the first OK, finds the socket's write lock taken, and Panel then retries the
    reply 10 ms later; started 5 ms later, it usually finds both OKs sent, handles both changes
    in one call and sends the reply at once (measured: ~10 ms less from key press to paint).

    One message: the events are processed inside ``pn.io.hold``. Without it, an editable slider's
    number box echoed the new value in a message of its own, serialised and written before the
    page's callback even started (GP 1-D: three messages per key press, the echo, the refit and
    the URL; with one, 41-49 ms from key press to the last change against 59-102 ms, load ~2).
    """

    _debounce = 5

    def _process_events(self, events):
        with pn.io.hold():
            super()._process_events(events)


class PromptFloatSlider(_Prompt, pn.widgets.FloatSlider):
    """A FloatSlider with a 5 ms debounce whose moves are answered in one message (:class:`_Prompt`)."""


class PromptIntSlider(_Prompt, pn.widgets.IntSlider):
    """An IntSlider with a 5 ms debounce whose moves are answered in one message (:class:`_Prompt`)."""


class PromptEditableFloatSlider(pn.widgets.EditableFloatSlider):
    """An EditableFloatSlider whose slider is a PromptFloatSlider (Panel's 50 ms debounce was most
    of the time from a GP 1-D key press to its fit on screen beyond the fit itself)."""

    _slider_widget = PromptFloatSlider


def parameter_widget(control: explorer.ParameterControl) -> pn.widgets.Widget:
    """The widget of one :class:`qpviz.explorer.ParameterControl` (a select, or a number input)."""
    css = [f"qpviz-param-{control.key}"]
    if control.kind == "number":
        return pn.widgets.FloatInput(label=control.label, value=control.default, css_classes=css)
    return pn.widgets.Select(label=control.label, options=dict(control.options), value=control.default, css_classes=css)


class ParameterInputs:
    """The parameter widgets of every likelihood the state offers; only the current one's show.

    ``widgets`` maps each control's key (``step_eps``, ``student_t``, ...) to its widget. The
    widgets of the other likelihoods keep their values, so switching back restores them.
    """

    def __init__(self, names):
        self.controls = {c.key: c for name in names for c in explorer.parameter_controls(name)}
        self.widgets = {key: parameter_widget(c) for key, c in self.controls.items()}

    def params_of(self, name: str) -> dict:
        """The parameters the widgets of likelihood ``name`` show."""
        params = {}
        for key, control in self.controls.items():
            value = self.widgets[key].value
            if control.likelihood == name and value is not None:
                params.update(control.params_for(value))
        return params

    def show(self, name: str, params: dict) -> None:
        """Show the widgets of likelihood ``name`` with the values ``params`` (hide the others)."""
        for key, control in self.controls.items():
            widget = self.widgets[key]
            widget.visible = control.likelihood == name
            if widget.visible:
                value = control.value_for(params)
                if value is not None:
                    widget.value = value

    def forward(self, held, apply) -> None:
        """Call ``apply(control, value)`` when a parameter widget changes to a value the state does not
        hold (``held(control, value)`` false; app/binding.py)."""
        for key, widget in self.widgets.items():
            control = self.controls[key]
            forward(widget, lambda value, c=control: held(c, value), lambda value, c=control: apply(c, value))


class UrlState:
    """Keeps the page's view in the URL query so that a shared link reopens it, and reads a link.

    The page's keys (``keys``) are written from ``values()`` (key -> text) whenever one of the
    ``immediate`` widgets changes, and URL_DELAY_MS after the ``sliders`` stop moving
    (link_query.WriteWhenRested). Other keys in the query (other pages') are kept.

    A query the page did not write (the browser reports the address it opened, a shared link)
    goes to ``read(query)`` as typed (key -> text), which makes the page consistent with it; the
    page's own values are then written back. (Panel's ``location.sync`` set each widget from its
    key alone, so a bad value left a page mixing two likelihoods.)
    """

    def __init__(self, location, keys, values, read, immediate=(), sliders=()):
        self.location = location
        self._keys = set(keys)
        self._values = values
        self._read = read
        self._rested = WriteWhenRested(self.write)
        self._written = None
        location.param.watch(self._on_search, "search")
        for widget in immediate:
            widget.param.watch(self.write, "value")
        for widget in sliders:
            widget.param.watch(lambda event: self._rested.changed(), "value")
        self.write()

    def query(self) -> dict:
        """The URL's query, key -> text."""
        return typed(self.location.search)

    def write(self, *events) -> None:
        """Write the page's values into the URL (keeping other keys)."""
        others = {k: v for k, v in self.query().items() if k not in self._keys}
        query = {**others, **self._values()}
        search = f"?{urlencode(query)}" if query else ""
        if search != self.location.search:
            self._written = search
            self.location.search = search

    def _on_search(self, event) -> None:
        if event.new == self._written:
            return
        query = self.query()
        # only a query asking for another view is read (another page writing its keys is not)
        if {k: v for k, v in query.items() if k in self._keys} != self._values():
            self._read(query)
        self.write()
