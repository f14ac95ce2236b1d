"""A browser tab closed while the server writes to it is a dropped message, not a server error.

Panel (1.9) writes each Bokeh message to a session's websocket as three or more frames
(``panel.io.document.dispatch_tornado``). It checks once that the socket is open, then writes;
when the tab closes between two frames, Tornado's ``write_message`` raises
``WebSocketClosedError`` from the second frame on, outside Panel's own handling (which logs
"Failed sending message as connection was closed" for frames whose writes fail later), and the
write task dies with "Task exception was never retrieved" and two tracebacks in the server log.
Measured with benchmarks/bench_load.py: 9 to 20 such tracebacks per run of 20 sessions, all in
the second in which the sessions closed. :func:`enable` treats that case as Panel treats the
other: the message is dropped with the same warning.
"""
from __future__ import annotations

import functools
import logging

from panel.io import document
from tornado.websocket import WebSocketClosedError

__all__ = ["enable"]

logger = logging.getLogger("panel.io.document")


def enable() -> None:
    """Wrap Panel's websocket writer once (idempotent; app/main.py calls it for every session)."""
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
