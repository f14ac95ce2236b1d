"""app/tcp_nodelay.py: every websocket the Bokeh server opens gets TCP_NODELAY, once."""
from __future__ import annotations

import tcp_nodelay  # app/ is on the path (pyproject: pythonpath = ["app"])
from bokeh.server.views.ws import WSHandler


class FakeHandler:
    def __init__(self):
        self.calls = []

    def set_nodelay(self, value):
        self.calls.append(("set_nodelay", value))


def test_open_sets_nodelay_then_runs_bokehs_open(monkeypatch):
    def bokeh_open(self):
        self.calls.append(("open",))
        return "opened"

    monkeypatch.setattr(WSHandler, "open", bokeh_open)
    tcp_nodelay.enable()
    handler = FakeHandler()
    assert WSHandler.open(handler) == "opened"
    assert handler.calls == [("set_nodelay", True), ("open",)]


def test_enable_twice_wraps_once(monkeypatch):
    monkeypatch.setattr(WSHandler, "open", lambda self: None)
    tcp_nodelay.enable()
    wrapped = WSHandler.open
    tcp_nodelay.enable()
    assert WSHandler.open is wrapped
    handler = FakeHandler()
    WSHandler.open(handler)
    assert handler.calls == [("set_nodelay", True)]


class FakeSocket:
    def __init__(self, calls):
        self.calls = calls

    def setsockopt(self, level, option, value):
        self.calls.append(("cork", value))


class FakeConnection:
    """A Bokeh ServerConnection's path to its TCP socket: conn._socket.ws_connection.stream.socket."""

    def __init__(self, calls):
        stream = type("Stream", (), {"socket": FakeSocket(calls)})()
        ws_connection = type("WSConnection", (), {"stream": stream})()
        self._socket = type("Handler", (), {"ws_connection": ws_connection})()


def test_panels_writer_sends_each_message_corked_and_always_uncorks(monkeypatch):
    from panel.io import document

    calls = []

    def panel_dispatch(conn, events=None, msg=None):
        calls.append(("write", events))
        if events == "fails":
            raise RuntimeError("socket closed")
        return ["future"]

    monkeypatch.setattr(document, "dispatch_tornado", panel_dispatch)
    monkeypatch.setattr(WSHandler, "open", lambda self: None)
    tcp_nodelay.enable()
    tcp_nodelay.enable()  # wraps once
    conn = FakeConnection(calls)
    assert document.dispatch_tornado(conn, "patch") == ["future"]
    assert calls == [("cork", 1), ("write", "patch"), ("cork", 0)]
    calls.clear()
    try:
        document.dispatch_tornado(conn, "fails")
    except RuntimeError:
        pass
    assert calls == [("cork", 1), ("write", "fails"), ("cork", 0)]
    # a connection without a socket (closed) is written as before
    calls.clear()
    assert document.dispatch_tornado(object(), "patch") == ["future"]
    assert calls == [("write", "patch")]
