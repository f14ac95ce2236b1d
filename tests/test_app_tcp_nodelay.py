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
