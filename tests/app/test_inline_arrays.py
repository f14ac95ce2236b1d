"""app/inline_arrays.py: a PATCH-DOC message carries its arrays inside its JSON (no binary buffers),
and a document that applies it gets the same models, bit for bit, as from Bokeh's own message."""
from __future__ import annotations

import base64
import gzip
import json

import inline_arrays  # app/ is on the path (pyproject: pythonpath = ["app"])
import numpy as np
import pytest
from bokeh.document import Document
from bokeh.models import ColumnDataSource, Range1d
from bokeh.protocol import Protocol
from bokeh.protocol.messages.patch_doc import patch_doc


def _document():
    """A document (two sources, a range) and its JSON before any change (the browser's copy)."""
    document = Document()
    for model in (ColumnDataSource({"x": np.arange(5.0), "n": np.arange(5)}, name="columns"),
                  ColumnDataSource({"image": [np.zeros((3, 4))]}, name="image"), Range1d(0, 1, name="span")):
        document.add_root(model)
    return document, document.to_json()


def _change(document) -> list:
    """The events of a new ``data`` (float and int columns), a patched image and a moved range."""
    events = []
    document.on_change(events.append)
    rng = np.random.default_rng(0)
    document.select_one({"name": "columns"}).data = {"x": rng.normal(size=1000), "n": rng.integers(0, 9, size=1000)}
    document.select_one({"name": "image"}).patch({"image": [(0, rng.normal(size=(3, 4)))]})
    document.select_one({"name": "span"}).update(start=-2.5, end=7.0)
    return events


def _applied(before, message):
    """The browser's copy (``before``) with ``message`` applied: its columns, image and range."""
    copy = Document.from_json(before)
    message.apply_to_document(copy)
    columns = copy.select_one({"name": "columns"}).data
    span = copy.select_one({"name": "span"})
    return (np.asarray(columns["x"]), np.asarray(columns["n"]), np.asarray(copy.select_one({"name": "image"}).data["image"][0]),
            np.array([span.start, span.end]))


def _reps(node, kind: str) -> list[dict]:
    """Every {"type": kind, ...} representation ("bytes", "ndarray") in a message's content."""
    if isinstance(node, dict):
        return ([node] if node.get("type") == kind else []) + [r for v in node.values() for r in _reps(v, kind)]
    if isinstance(node, list):
        return [r for v in node for r in _reps(v, kind)]
    return []


@pytest.fixture
def inline(monkeypatch):
    """inline_arrays enabled for the test only (Bokeh's patch_doc.create back afterwards)."""
    monkeypatch.setattr(patch_doc, "create", patch_doc.create)
    inline_arrays.enable()


def test_bokehs_message_has_buffers_and_the_inline_one_the_same_arrays_inside(monkeypatch):
    document, bokeh_before = _document()
    bokeh_message = Protocol().create("PATCH-DOC", _change(document))
    assert len(bokeh_message.buffers) == 3  # the two new columns and the patched image

    monkeypatch.setattr(patch_doc, "create", patch_doc.create)
    inline_arrays.enable()
    document, before = _document()
    message = Protocol().create("PATCH-DOC", _change(document))
    assert message.buffers == []
    reps = _reps(json.loads(message.content_json), "bytes")
    assert len(reps) == 3 and all(isinstance(rep["data"], str) for rep in reps)  # base64 text, no buffer ids
    arrays = _reps(json.loads(message.content_json), "ndarray")
    assert sorted(a["dtype"] for a in arrays) == ["float64", "float64", "int32"]  # (Bokeh sends int64 as int32)
    for array in arrays:  # gzip, as BokehJS reads inline bytes: floats stored, integers compressed
        packed = base64.b64decode(array["array"]["data"])
        raw = gzip.decompress(packed)
        assert packed[:2] == b"\x1f\x8b"
        if array["dtype"] == "int32":  # 1000 values in 0..8
            assert len(packed) < len(raw) / 3
        else:
            assert len(packed) >= len(raw)

    for got, want in zip(_applied(before, message), _applied(bokeh_before, bokeh_message)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    x, n, image, span = _applied(before, message)
    assert x.shape == (1000,) and n.shape == (1000,) and image.shape == (3, 4)
    np.testing.assert_array_equal(span, [-2.5, 7.0])


def test_enable_twice_wraps_once_and_refuses_what_bokeh_refuses(inline):
    wrapped = patch_doc.create
    inline_arrays.enable()
    assert patch_doc.create == wrapped
    with pytest.raises(ValueError, match="at least one event"):
        Protocol().create("PATCH-DOC", [])
    first, _ = _document()
    second, _ = _document()
    with pytest.raises(ValueError, match="more than one document"):
        Protocol().create("PATCH-DOC", _change(first) + _change(second))


def test_a_model_first_sent_by_a_message_is_synced_once(inline):
    """A model new to the browser goes in full in the first message that names it, by reference after."""
    document, _ = _document()
    document.models.flush_synced()  # the browser has the document
    new_source = ColumnDataSource({"x": np.arange(3.0)})
    events = []
    document.on_change(events.append)
    document.add_root(new_source)
    first = json.loads(Protocol().create("PATCH-DOC", events).content_json)
    assert new_source.id in json.dumps(first) and '"attributes"' in json.dumps(first)
    events.clear()
    new_source.data = {"x": np.arange(4.0)}
    second = json.loads(Protocol().create("PATCH-DOC", events).content_json)
    assert second["events"][0]["model"] == {"id": new_source.id}
