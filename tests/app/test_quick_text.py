"""app/quick_text.py: a new object of a QuickHTML / QuickMarkdown pane sends only its text, and the
Bokeh model ends, after any sequence of changes, exactly as Panel's own pane's model does."""
from __future__ import annotations

import panel as pn
import pytest
from bokeh.document import Document
from quick_text import QuickHTML, QuickMarkdown  # app/ is on the path (pyproject: pythonpath = ["app"])

#: Changes of every kind a page makes: objects with markup, maths and characters to escape,
#: classes (a Markdown re-render parameter), styles (projector mode), stylesheets, visibility.
CHANGES = [
    {"object": "**b** and <i>c</i>"},
    {"css_classes": ["y"]},
    {"object": "c", "css_classes": ["z", "w"]},
    {"styles": {"font-size": "150%"}},
    {"stylesheets": [":host { color: red; }"]},
    {"object": "<b>&amp;</b> $x^2$ | a | b |\n|---|---|\n| 1 | 2 |"},
    {"visible": False},
    {"object": "d", "visible": True},
    {"object": ""},
    {"object": None},
]


def _model_props(pane, root) -> dict:
    """The pane's Bokeh model properties, stylesheets by their text or URL (new objects each time)."""
    model = pane._models[root.ref["id"]][0]
    props = model.properties_with_values(include_defaults=True)
    props["stylesheets"] = [str(getattr(s, "css", None) or getattr(s, "url", None) or s) for s in props["stylesheets"]]
    props.pop("id", None)
    return props


@pytest.mark.parametrize("quick, stock", [(QuickHTML, pn.pane.HTML), (QuickMarkdown, pn.pane.Markdown)])
def test_the_model_matches_panels_own_pane_after_every_change(quick, stock):
    document = Document()
    panes = [cls("a", css_classes=["x"], sizing_mode="stretch_width") for cls in (quick, stock)]
    roots = [pn.Column(pane).get_root(document) for pane in panes]
    for change in CHANGES:
        for pane in panes:
            pane.param.update(**change)
        got, want = (_model_props(pane, root) for pane, root in zip(panes, roots))
        assert got == want, change
    assert _model_props(panes[0], roots[0])["visible"] is True


@pytest.mark.parametrize("quick", [QuickHTML, QuickMarkdown])
def test_a_new_object_does_not_recompute_the_other_properties(quick, monkeypatch):
    """The speed-up itself: after the first update, a new object skips Panel's whole-model
    recomputation (design stylesheets, sizing...), until the pane's stylesheets change."""
    pane = quick("a")
    root = pn.Column(pane).get_root(Document())
    calls = []
    original = pane._get_properties
    monkeypatch.setattr(pane, "_get_properties", lambda doc: calls.append(1) or original(doc))
    pane.object = "first"
    assert len(calls) == 1  # the first update is Panel's own (it records the stylesheets sent)
    for text in ("second", "third", "**fourth**"):
        pane.object = text
    assert len(calls) == 1
    assert "fourth" in pane._models[root.ref["id"]][0].text
    pane.stylesheets = [":host { color: blue; }"]
    pane.object = "fifth"
    assert len(calls) == 2  # new stylesheets go with the next object, by Panel's own path
    assert any("blue" in str(getattr(s, "css", s)) for s in pane._models[root.ref["id"]][0].stylesheets)
