"""Shared page layout: views that wrap into as many columns as the screen holds, and formulas that
never spill over their neighbours.

Tested at 1024 x 768, 1280 x 720 and 1920 x 1080, normal and projector mode
(tests/browser/test_layout.py). A page puts its views (plot + explanation + formula columns) in
:func:`view_grid` (or :func:`view_row`) and calls :func:`set_projector` when its projector toggle changes.
"""
from __future__ import annotations

import panel as pn

__all__ = ["HandOff", "enlarge", "CONTROL_CSS", "CONTROLS_WIDTH", "VIEW_MIN_WIDTH", "FORMULA_STYLES", "view_grid", "view_row", "set_projector", "formula"]

#: Width of a page's control column (px).
CONTROLS_WIDTH = 300
#: Smallest width of one view column (px), normal and projector mode: a row holds as many views
#: as fit (two beside 300 px of controls from about 1260 px normally, from about 1850 px in
#: projector mode, where fonts are 1.7 times larger), and a lone view fills the row.
VIEW_MIN_WIDTH = {False: 450, True: 720}
#: A formula wider than its column scrolls inside it instead of running over the next column (a
#: last resort: the formulas are typeset in lines that fit a column at 1024 px, normal and
#: projector mode, and tests/browser/test_layout.py fails on any that scrolls).
FORMULA_STYLES = {"overflow-x": "auto", "overflow-y": "hidden", "max-width": "100%"}
#: Every control's own stylesheet, normal and projector mode (a widget draws in its own shadow DOM,
#: which the page's styles do not reach): labels, slider titles and button labels wrap between
#: words (never inside one) instead of running out of the control column or being cut, and rows of
#: check boxes and of grouped buttons wrap onto a second line.
CONTROL_CSS = """
:host label, :host .bk-slider-title, :host .bk-btn {
  white-space: normal; overflow-wrap: normal; word-break: normal; hyphens: none; }
:host .bk-btn { height: auto; min-height: 31px; }
:host .bk-input-group.bk-inline, :host .bk-btn-group { flex-wrap: wrap; row-gap: 2px; }
"""


def _item_styles(projector: bool) -> dict:
    basis = VIEW_MIN_WIDTH[projector]
    # min-width 0: a flex item may shrink below its content's width (else a wide plot widens the page)
    return {"flex": f"1 1 {basis}px", "min-width": "0", "max-width": "100%"}


def view_grid(*views, projector: bool = False) -> pn.FlexBox:
    """The views in a wrapping row: as many columns as fit, each at least VIEW_MIN_WIDTH wide."""
    for view in views:
        view.styles = {**view.styles, **_item_styles(projector)}
    return pn.FlexBox(*views, flex_wrap="wrap", align_content="flex-start", sizing_mode="stretch_width")


def view_row(*views, projector: bool = False) -> pn.Row:
    """As :func:`view_grid`, in a wrapping pn.Row. Inside a pn.FlexBox Bokeh 3.9.2 left GP 2-D's
    figures (image, contours, colour bar; built when the tab is first drawn) unlaid out, a 0 x 0
    plot area at every screen size (measured; the cause was not found); in a Row it lays them out."""
    for view in views:
        view.styles = {**view.styles, **_item_styles(projector)}
    return pn.Row(*views, styles={"flex-wrap": "wrap"}, sizing_mode="stretch_width")


def set_projector(grid: pn.FlexBox, projector: bool) -> None:
    """Re-flow ``grid``'s views for projector mode (wider columns for larger fonts) or normal mode."""
    for view in grid.objects:
        view.styles = {**view.styles, **_item_styles(projector)}


def formula(text: str, **params) -> pn.pane.LaTeX:
    """A LaTeX pane that scrolls within its column when it is wider than the column."""
    return pn.pane.LaTeX(text, styles=dict(FORMULA_STYLES), sizing_mode="stretch_width", **params)


def explained(view, explanation: tuple[str, str], texts: list, css: str | None = None) -> pn.Column:
    """``view`` above its explanation: a sentence or two and the formula (``explanation`` =
    (sentence, LaTeX)); both are appended to ``texts``, the page's texts that projector mode
    enlarges."""
    sentence, latex = explanation
    text = pn.pane.Markdown(sentence, sizing_mode="stretch_width", margin=(0, 10))
    shown = formula(latex, margin=(0, 10))
    texts += [text, shown]
    return pn.Column(view, text, shown, sizing_mode="stretch_width", css_classes=[css] if css else [])


def enlarge(on: bool, texts, controls) -> None:
    """Projector mode on or off: ``texts`` at 150% (their other styles, e.g. a formula's scrolling,
    kept); in ``controls`` (widgets and layouts of them, searched through nested layouts and
    composite widgets such as EditableFloatSlider) every widget's own stylesheets at CONTROL_CSS,
    plus PROJECTOR_WIDGET_CSS when on, and every text pane (headings, notes) at 150% too."""
    from explorer_widgets import PROJECTOR_WIDGET_CSS  # noqa: PLC0415 - explorer_widgets imports panel widgets

    size = {"font-size": "150%" if on else "100%"}
    for text in texts:
        text.styles = {**text.styles, **size}
    ours = (CONTROL_CSS, PROJECTOR_WIDGET_CSS)
    sheets = [CONTROL_CSS, PROJECTOR_WIDGET_CSS] if on else [CONTROL_CSS]
    for part in (part for control in controls for part in control.select()):
        if isinstance(part, pn.widgets.Widget):
            part.stylesheets = [s for s in part.stylesheets if s not in ours] + sheets
        elif isinstance(part, pn.pane.PaneBase):
            part.styles = {**part.styles, **size}


class HandOff:
    """"Study these data in Variance effects": a button that sends the page's current data and
    model to that page. Hidden until the app connects a receiver (:meth:`connect`), so a page
    shown alone (a test, a notebook) has no dead button."""

    def __init__(self, current_data, on_error):
        """``current_data() -> (label, X, y, likelihood, kernel)``; ``on_error(text)`` shows a refusal."""
        self.current_data, self.on_error = current_data, on_error
        self.receiver = None
        self.button = pn.widgets.Button(label="study these data in Variance effects", visible=False,
                                        css_classes=["qpviz-to-variance"])
        self.button.on_click(self._send)

    def connect(self, receiver) -> None:
        """``receiver(label, X, y, likelihood, kernel)`` takes the data (and opens its page)."""
        self.receiver = receiver
        self.button.visible = True

    def _send(self, event=None) -> None:
        if self.receiver is None:
            return
        try:
            self.receiver(*self.current_data())
        except (ValueError, TypeError) as exc:
            self.on_error(f"not sent to Variance effects: {exc}")
