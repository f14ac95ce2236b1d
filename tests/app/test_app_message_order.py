"""app/message_order.py: Panel's messages join a callback's pending Bokeh messages when one would
overtake the other, and take Panel's own paths otherwise (the browser case:
tests/browser/test_message_order.py)."""
from __future__ import annotations

from types import SimpleNamespace

import message_order  # app/ is on the path (pyproject: pythonpath = ["app"])
from panel.io import document


class Socket:
    def __init__(self, sent):
        self.sent = sent

    def send_message(self, message):
        self.sent.append(message)
        return f"write {message}"


class Connection:
    def __init__(self, name, sent):
        self._socket = Socket(sent)
        self.protocol = SimpleNamespace(create=lambda kind, events: f"{name}: {events}")


class Doc:
    """A document whose session's callback has ``pending`` writes (None: no callback holds it)."""

    def __init__(self, pending):
        self.session_context = SimpleNamespace(session=SimpleNamespace(_pending_writes=pending))


def panels_writers(monkeypatch, calls):
    monkeypatch.setattr(document, "write_events", lambda doc, conns, events: calls.append(("now", events)))
    monkeypatch.setattr(document, "schedule_write_events", lambda doc, conns, events: calls.append(("later", events)))
    monkeypatch.setattr(document, "_WRITE_MSGS", {})
    monkeypatch.setattr(document, "_WRITE_BLOCK", {})


def test_a_postponed_message_waits_in_the_callbacks_queue_after_panels_older_ones(monkeypatch):
    calls, sent = [], []
    panels_writers(monkeypatch, calls)
    message_order.enable()
    pending = ["bokeh message made earlier"]
    doc, conn = Doc(pending), Connection("c", sent)
    document._WRITE_MSGS[doc] = {conn: ["older postponed"]}
    document._WRITE_BLOCK[doc] = True
    document.schedule_write_events(doc, [conn], ["event"])
    assert calls == []  # not Panel's polling task
    assert pending == ["bokeh message made earlier", "write older postponed", "write c: ['event']"]
    assert doc not in document._WRITE_MSGS and doc not in document._WRITE_BLOCK


def test_an_immediate_write_waits_only_behind_pending_bokeh_messages(monkeypatch):
    calls, sent = [], []
    panels_writers(monkeypatch, calls)
    message_order.enable()
    conn = Connection("c", sent)
    document.write_events(Doc([]), [conn], ["first"])  # nothing waits: at once, as Panel does
    pending = ["bokeh message"]
    document.write_events(Doc(pending), [conn], ["second"])
    assert calls == [("now", ["first"])]
    assert pending == ["bokeh message", "write c: ['second']"]


def test_outside_a_callback_panels_own_paths_and_enable_wraps_once(monkeypatch):
    calls = []
    panels_writers(monkeypatch, calls)
    message_order.enable()
    wrapped = document.write_events, document.schedule_write_events
    message_order.enable()
    assert (document.write_events, document.schedule_write_events) == wrapped
    no_session = Doc(None)
    no_session.session_context = None
    document.write_events(no_session, [], ["a"])
    document.schedule_write_events(Doc(None), [], ["b"])
    assert calls == [("now", ["a"]), ("later", ["b"])]
