"""A browser tab closed while the server writes to it is a dropped message, not a server error.

Panel (1.9) writes each Bokeh message to a session's websocket as three or more frames
(``panel.io.document.dispatch_tornado``). It checks once that the socket is open, then writes;
when the tab closes between two frames, Tornado's ``write_message`` raises
``WebSocketClosedError`` from the second frame on, outside Panel's own handling (which logs
"Failed sending message as connection was closed" for frames whose writes fail later), and the
write task dies with "Task exception was never retrieved" and two tracebacks in the server log.
Measured with benchmarks/bench_load.py: 9 to 20 such tracebacks per run of 20 sessions, all in
the second in which the sessions closed. :func:`enable` treats that case as Panel treats the
other: the message is dropped with the same warning. The frames already written by then return
futures that nobody awaits any more; their failure would be logged as "Task exception was never
retrieved" when they are collected, so every websocket write marks its own failure as seen (a
caller that awaits the future still gets the exception).

The other direction has the same race in Bokeh (3.9): when a tab closes, its connection drops
its session at once (``client_lost``), but messages the tab sent just before (layout sizes, range
changes, URL updates) may still wait for the document; each then fails on ``assert
self._session is not None`` and is logged as "error handling message" with a traceback, and
``on_close`` can meet the detached session too ("Uncaught exception GET /app/ws"). Measured: 769
such tracebacks when 20 busy tabs closed within one second. Those messages are dropped with a
warning.
"""
from __future__ import annotations

import functools
import logging

from bokeh.server.protocol_handler import ProtocolHandler
from bokeh.server.views.ws import WSHandler
from panel.io import document
from tornado.websocket import WebSocketClosedError, WebSocketHandler

__all__ = ["enable"]

logger = logging.getLogger("panel.io.document")


def _mark_seen(future) -> None:
    if not future.cancelled():
        future.exception()  # marks a failed write as retrieved; awaiting callers still get it


def _session_detached(connection) -> bool:
    return connection is not None and getattr(connection, "_session", True) is None


def _guard_bokeh_receiver() -> None:
    if getattr(ProtocolHandler.handle, "_qpviz_closed_tabs", False):
        return
    bokeh_handle, bokeh_on_close = ProtocolHandler.handle, WSHandler.on_close

    @functools.wraps(bokeh_handle)
    async def handle_unless_closed(self, message, connection):
        if _session_detached(connection):
            logger.warning("Dropped a %s message from a closed tab", message.msgtype)
            return None
        return await bokeh_handle(self, message, connection)

    @functools.wraps(bokeh_on_close)
    def on_close_once(self):
        if _session_detached(self.connection):
            return  # the session was already let go
        bokeh_on_close(self)

    handle_unless_closed._qpviz_closed_tabs = True
    ProtocolHandler.handle = handle_unless_closed
    WSHandler.on_close = on_close_once


def enable() -> None:
    """Wrap Panel's websocket writer, Tornado's ``write_message`` and Bokeh's message handler once
    (idempotent; app/main.py calls it for every session)."""
    _guard_bokeh_receiver()
    if not getattr(WebSocketHandler.write_message, "_qpviz_closed_tabs", False):
        tornado_write = WebSocketHandler.write_message

        @functools.wraps(tornado_write)
        def write_marking_failures(self, message, binary=False):
            future = tornado_write(self, message, binary)
            future.add_done_callback(_mark_seen)
            return future

        write_marking_failures._qpviz_closed_tabs = True
        WebSocketHandler.write_message = write_marking_failures
    if getattr(document.dispatch_tornado, "_qpviz_closed_tabs", False):
        return
    panel_dispatch = document.dispatch_tornado

    @functools.wraps(panel_dispatch)
    def dispatch_unless_closed(conn, events=None, msg=None):
        try:
            return panel_dispatch(conn, events, msg)
        except WebSocketClosedError:
            logger.warning("Failed sending message as connection was closed")
            return []

    dispatch_unless_closed._qpviz_closed_tabs = True
    document.dispatch_tornado = dispatch_unless_closed
