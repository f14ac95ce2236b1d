"""app/closed_tabs.py: a message to a tab that closed mid-write is dropped with a warning."""
from __future__ import annotations

import asyncio
import logging
import threading

import closed_tabs  # app/ is on the path (pyproject: pythonpath = ["app"])
import pytest
from panel.io import document
from tornado.websocket import WebSocketClosedError


def run_in_own_loop(coroutine):
    """asyncio.run(coroutine) in a thread of its own: the browser tests leave an event loop
    running in the main thread, where asyncio.run refuses to start."""
    outcome = {}

    def target():
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def test_a_write_to_a_closed_socket_is_dropped_with_panels_warning(monkeypatch, caplog):
    calls = []

    def panel_dispatch(conn, events=None, msg=None):
        calls.append((conn, events, msg))
        if conn == "closed":
            raise WebSocketClosedError()
        return ["future"]

    monkeypatch.setattr(document, "dispatch_tornado", panel_dispatch)
    closed_tabs.enable()
    assert document.dispatch_tornado is not panel_dispatch
    assert document.dispatch_tornado("open", msg="m") == ["future"]
    with caplog.at_level(logging.WARNING, logger="panel.io.document"):
        assert document.dispatch_tornado("closed", ["event"]) == []
    assert calls == [("open", None, "m"), ("closed", ["event"], None)]
    assert "connection was closed" in caplog.text


def test_other_errors_still_raise_and_enable_wraps_once(monkeypatch):
    def panel_dispatch(conn, events=None, msg=None):
        raise ValueError("a real bug")

    monkeypatch.setattr(document, "dispatch_tornado", panel_dispatch)
    closed_tabs.enable()
    wrapped = document.dispatch_tornado
    closed_tabs.enable()
    assert document.dispatch_tornado is wrapped
    with pytest.raises(ValueError, match="a real bug"):
        wrapped("open", msg="m")


def test_a_failed_websocket_write_nobody_awaits_is_not_logged_as_unretrieved(monkeypatch, caplog):
    import gc  # noqa: PLC0415

    from tornado.websocket import WebSocketHandler  # noqa: PLC0415

    async def scenario():
        async def closed_stream():
            raise WebSocketClosedError()

        def tornado_write(self, message, binary=False):
            return asyncio.ensure_future(closed_stream())

        monkeypatch.setattr(WebSocketHandler, "write_message", tornado_write)
        closed_tabs.enable()
        assert WebSocketHandler.write_message is not tornado_write
        orphan = WebSocketHandler.write_message(object(), "frame")  # nobody awaits it
        awaited = WebSocketHandler.write_message(object(), "frame")
        with pytest.raises(WebSocketClosedError):
            await awaited  # a caller that awaits still sees the failure
        await asyncio.sleep(0)
        assert orphan.done()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        run_in_own_loop(scenario())
        gc.collect()
    assert "never retrieved" not in caplog.text


def test_a_message_from_a_closed_tab_is_dropped_and_others_are_handled(monkeypatch, caplog):
    from types import SimpleNamespace  # noqa: PLC0415

    from bokeh.server.protocol_handler import ProtocolHandler  # noqa: PLC0415
    from bokeh.server.views.ws import WSHandler  # noqa: PLC0415

    handled, closed = [], []

    async def bokeh_handle(self, message, connection):
        handled.append(message.msgtype)
        return "work"

    monkeypatch.setattr(ProtocolHandler, "handle", bokeh_handle)
    monkeypatch.setattr(WSHandler, "on_close", lambda self: closed.append(self))
    closed_tabs.enable()
    message = SimpleNamespace(msgtype="PATCH-DOC")
    live, lost = SimpleNamespace(_session="session"), SimpleNamespace(_session=None)
    with caplog.at_level(logging.WARNING, logger="panel.io.document"):
        assert run_in_own_loop(ProtocolHandler.handle(None, message, live)) == "work"
        assert run_in_own_loop(ProtocolHandler.handle(None, message, lost)) is None
    assert handled == ["PATCH-DOC"]
    assert "closed tab" in caplog.text
    WSHandler.on_close(SimpleNamespace(connection=lost))
    open_handler = SimpleNamespace(connection=live)
    WSHandler.on_close(open_handler)
    assert closed == [open_handler]
