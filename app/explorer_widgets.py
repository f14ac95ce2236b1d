"""The Projection Explorer's inputs: prompt sliders, the likelihood parameter inputs built from the
registry (:func:`qpviz.explorer.parameter_controls`) and the page's URL state.

Every widget here only holds a value; the page (app/projection_explorer.py) forwards changes to
its ``ExplorerState``, which validates them.
"""
from __future__ import annotations

import time

import panel as pn
import param

from qpviz import explorer

__all__ = ["PROJECTOR_WIDGET_CSS", "URL_DELAY_MS", "SLIDER_QUERY", "PromptFloatSlider", "PromptIntSlider",
           "ParameterInputs", "SliderQuery", "UrlState", "parameter_widget"]

#: Projector mode: larger text inside every control (labels, inputs, options, buttons) and the numbers.
PROJECTOR_WIDGET_CSS = ":host, :host * { font-size: 20px !important; line-height: 1.3 !important; }"

#: The sliders reach the URL this long after their last move (see UrlState).
URL_DELAY_MS = 300
#: URL query keys of the sliders (SliderQuery's parameters).
SLIDER_QUERY = ("count", "y", "m", "s")


class PromptFloatSlider(pn.widgets.FloatSlider):
    """A FloatSlider whose moves reach the page's callback after 5 ms instead of Panel's 50 ms.

    Not 0: a key press sends two messages (``value``, then ``value_throttled``), and the server
    writes an OK reply to each in several awaited frames. A callback started at once runs between
    the frames of the first OK, finds the socket's write lock taken, and Panel then retries the
    reply 10 ms later; started 5 ms later, it usually finds both OKs sent, handles both changes
    in one call and sends the reply at once (measured: ~10 ms less from key press to paint).
    """

    _debounce = 5


class PromptIntSlider(pn.widgets.IntSlider):
    """An IntSlider with the same 5 ms debounce as PromptFloatSlider."""

    _debounce = 5


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

    def watch(self, callback) -> None:
        """Call ``callback(control, value)`` when a parameter widget changes."""
        for key, widget in self.widgets.items():
            widget.param.watch(lambda event, control=self.controls[key]: callback(control, event.new), "value")


class SliderQuery(param.Parameterized):
    """The slider values the URL shows (query keys count, y, m, s)."""

    count = param.Integer(default=1, doc="Count observation y (count likelihoods).")
    y = param.Number(default=0.0, doc="Real observation y (real likelihoods).")
    m = param.Number(default=0.5, doc="Cavity mean.")
    s = param.Number(default=1.5, doc="Cavity standard deviation.")


class UrlState:
    """Keeps the page's view in the URL query so that a shared link reopens it.

    Selects, toggles and parameter inputs are synced directly (keys ``lik``, each control's key
    such as ``step_eps``, ``label``, ``show``, ``projector``). The sliders (``sliders``: query key
    -> widget) reach the URL through a :class:`SliderQuery`, written URL_DELAY_MS after they stop
    moving: writing the URL at every step (pushState, then the browser echoing the new href) cost
    about 10 ms of each update and left one browser-history entry per slider step.
    """

    def __init__(self, location, synced: dict, sliders: dict):
        self._sliders = sliders
        self._pending = False
        self._writing = False
        self._last_move = 0.0
        for key, widget in synced.items():
            location.sync(widget, {"value": key})
        self.query = SliderQuery(**self._slider_values())
        self.query.param.watch(self._on_query, list(SLIDER_QUERY))  # a shared link moves the sliders
        location.sync(self.query)
        for widget in sliders.values():
            widget.param.watch(self._on_slider_moved, "value")

    def _slider_values(self) -> dict:
        return {name: widget.value for name, widget in self._sliders.items()}

    def _on_query(self, *events) -> None:
        """The URL's slider values (a shared link, read when the page opens) move the sliders."""
        if self._writing:
            return
        for event in events:
            self._sliders[event.name].value = event.new

    def _on_slider_moved(self, event=None) -> None:
        self._last_move = time.monotonic()
        if not self._pending:
            self._pending = True
            pn.state.add_periodic_callback(self._write_query, period=URL_DELAY_MS, count=1)

    def _write_query(self) -> None:
        """Copy the sliders into the URL once they have rested URL_DELAY_MS."""
        wait_ms = URL_DELAY_MS - 1000 * (time.monotonic() - self._last_move)
        if wait_ms > 10:
            pn.state.add_periodic_callback(self._write_query, period=round(wait_ms), count=1)
            return
        self._pending = False
        self._writing = True
        try:
            self.query.param.update(**self._slider_values())
        finally:
            self._writing = False
