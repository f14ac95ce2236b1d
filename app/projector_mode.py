"""One projector mode for the whole app: a switch in the header, kept in the URL (?projector=true).

A lecturer turns it on once; every page enlarges what a back row must read: the header and the
tabs here, each page its headings, texts, buttons, inputs, plot titles, axis labels, legends and
line widths (the page's ``projector`` parameter: ``layout.enlarge`` and the figures' ``style``
methods). The switch restyles the page in view; another page built earlier takes the mode when its
tab is shown (:meth:`ProjectorSwitch.shown`): with seven pages built, restyling them all at once
kept the server busy 1.4 s (the page in view alone, before :func:`one_update`: 0.7-1.1 s).
A link's ``projector`` value that is no switch position is replaced by "off" and a banner names it
(shown as text: ``safe_text``).
"""
from __future__ import annotations

import contextlib

import panel as pn
import param

import link_query
import safe_text
from qpviz.checks import quoted

__all__ = ["KEY", "ProjectorSwitch", "parse"]

#: The URL query key of the mode (one for every page).
KEY = "projector"
#: What a link may say for on and off.
_VALUES = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False}

#: The header's and the tabs' look in projector mode (the tabs draw in their own shadow DOM).
TABS_CSS = {False: [], True: [":host .bk-tab { font-size: 150%; padding: 8px 14px; }"]}
HEADER_SIZE = {False: "100%", True: "150%"}


def parse(text) -> bool | None:
    """The mode a link's ``projector`` value asks for; None if it is no switch position."""
    return _VALUES.get(str(text).strip().lower())


@contextlib.contextmanager
def one_update():
    """A restyle sent as one message, with one recount of the document's models at its end.

    Each new stylesheet model made Bokeh walk all of the session's models again (``Document.models``
    recomputes on every change of references): ~20 walks of ~40 ms for a GP page; frozen, one.
    The browser lays the message out once (app/one_layout_per_patch.py)."""
    doc = pn.state.curdoc
    with pn.io.hold(), (doc.models.freeze() if doc is not None else contextlib.nullcontext()):
        yield


class LinkValue(param.Parameterized):
    """The URL's ``projector`` value as the link gave it (untyped: Panel's sync reads "true" as JSON,
    and a bad value must reach :meth:`ProjectorSwitch._read_link` to be named, not be dropped)."""

    value = param.Parameter(default="false")


class ProjectorSwitch:
    """The header's switch; ``apply(page)`` gives a page the current mode (the dashboard calls it
    for each page when it is built), :meth:`shown` for a built page when its tab is shown again;
    the switch itself restyles the page in view."""

    def __init__(self, header: pn.viewable.Viewable, tabs: pn.Tabs, in_view):
        """``in_view()``: the page in view (None while its tab shows no built page)."""
        self.header, self.tabs, self.in_view = header, tabs, in_view
        self.toggle = pn.widgets.Toggle(label="Projector mode", value=False, width=170, align="center",
                                        css_classes=["qpviz-projector"], margin=(5, 12))
        self.note = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-projector-link"],
                                  sizing_mode="stretch_width")
        # the URL holds the text as a link gave it: read here, so a bad value is named, not dropped
        self.holder = LinkValue()
        self._reading = False
        self.holder.param.watch(self._read_link, "value")
        self.toggle.param.watch(self._switched, "value")
        if pn.state.location is not None:
            link_query.sync(pn.state.location, self.holder, {"value": KEY})

    def apply(self, page) -> None:
        """Give ``page`` the current mode; a page just built in normal mode is styled too (its
        controls' wrapping stylesheet, ``layout.CONTROL_CSS``, comes with the mode)."""
        if not hasattr(page, "projector"):
            return
        with one_update():  # (a page just built: 29 recounts of the session's models, 1.4 s, on GP 1-D)
            if page.projector == self.toggle.value:
                page.param.trigger("projector")
            else:
                page.projector = self.toggle.value

    def shown(self, page) -> None:
        """A page built earlier is in view again: it takes the mode if the switch moved meanwhile."""
        if hasattr(page, "projector") and page.projector != self.toggle.value:
            self.apply(page)

    def _read_link(self, event) -> None:
        asked = parse(event.new)
        if asked is None:
            self.note.object = safe_text.fill("This link's {key}={value} is no switch position (true or false): "
                                              "projector mode is off.", key=KEY, value=quoted(event.new))
        on = bool(asked)
        self._reading = True
        try:
            self.toggle.value = on
        finally:
            self._reading = False
        self.note.visible = asked is None
        self.holder.value = "true" if on else "false"  # the link shows what the page shows

    def _switched(self, event) -> None:
        on = bool(event.new)
        if not self._reading:
            self.note.visible = False  # the reader has moved on from the link
        self.holder.value = "true" if on else "false"
        with one_update():
            self.header.styles = {**self.header.styles, "font-size": HEADER_SIZE[on]}
            self.tabs.stylesheets = TABS_CSS[on]
            page = self.in_view()
            if page is not None:  # the others when shown
                self.apply(page)
