"""layout.enlarge_detached: a page's projector switch changes its controls while they are out of the
page (BokehJS lays the whole page out again for every control whose stylesheets change in place)."""
from __future__ import annotations

import panel as pn

from layout import CONTROL_CSS, enlarge_detached


def test_the_controls_change_while_out_of_their_column_and_come_back_in_order():
    slider = pn.widgets.FloatSlider(label="a", start=0, end=1)
    select = pn.widgets.Select(label="b", options=["x", "y"])
    note = pn.pane.Markdown("a note")
    column = pn.Column(slider, pn.Row(select), note)
    objects = list(column.objects)
    seen = []  # how many objects the column held when each control's stylesheets changed
    for widget in (slider, select):
        widget.param.watch(lambda event: seen.append(len(column.objects)), "stylesheets")
    text = pn.pane.Markdown("a heading")
    enlarge_detached(True, [text], column.objects, column)
    assert seen == [0, 0]  # both changed while the column was empty
    assert column.objects == objects  # the same objects, in the same order
    assert CONTROL_CSS in slider.stylesheets and CONTROL_CSS in select.stylesheets
    assert text.styles["font-size"] == note.styles["font-size"] == "150%"
    enlarge_detached(False, [text], column.objects, column)
    assert column.objects == objects and text.styles["font-size"] == "100%"


def test_a_failing_change_still_gives_the_column_its_controls_back(monkeypatch):
    import layout  # noqa: PLC0415

    column = pn.Column(pn.widgets.TextInput(label="t"))
    objects = list(column.objects)

    def broken(on, texts, controls):
        raise RuntimeError("broken")

    monkeypatch.setattr(layout, "enlarge", broken)
    try:
        enlarge_detached(True, [], column.objects, column)
    except RuntimeError:
        pass
    assert column.objects == objects
