"""Send the server's websocket frames at once: TCP_NODELAY on every websocket Bokeh opens.

Bokeh writes each protocol message as several websocket frames (header, metadata, content, then
a header and a payload per binary buffer), and Tornado leaves Nagle's algorithm on. Nagle holds
a small frame until the browser has acknowledged the previous one, and the browser delays that
acknowledgement by up to 40 ms (delayed ACK). Measured on a minimal Panel page (one slider, one
line plot): every second key press waited ~36 ms for the tail of the server's reply, 72-75 ms
median from key press to painted plot; with TCP_NODELAY, 45-60 ms. Tornado's documentation
recommends calling ``set_nodelay(True)`` in ``open()`` for exactly this traffic; Bokeh's WSHandler
does not, so :func:`enable` wraps its ``open``.

Without Nagle, though, every frame leaves as its own TCP packet, one ``send`` each that wakes the
browser's network thread: a GP 1-D refit is one message of 47 frames (six patched sources, two
frames per array), and on the two shared cores writing them took 10-95 ms (median ~14 ms) of the
key press's latency. So Panel's writer (``panel.io.document.dispatch_tornado``, every document
change sent to a browser) runs with the socket corked (Linux ``TCP_CORK``): the frames queue in the
kernel and leave in as few full packets as possible when the writer returns and uncorks (~3 ms
for the same message). The socket is always uncorked afterwards (frames Tornado could not write
at once are sent uncorked when the socket is writable again). Since app/inline_arrays.py, a
message is three frames whatever its arrays; corking still sends them as one packet.
"""
from __future__ import annotations

import functools
import socket

from bokeh.server.views.ws import WSHandler
from panel.io import document

__all__ = ["enable", "corked"]


def enable() -> None:
    """Make every websocket that the Bokeh server opens from now on use TCP_NODELAY.

    Idempotent; app/main.py calls it for every session, before that session's websocket opens.
    """
    if getattr(WSHandler.open, "_qpviz_nodelay", False):
        return
    bokeh_open = WSHandler.open

    @functools.wraps(bokeh_open)
    def open_without_nagle(self, *args, **kwargs):
        self.set_nodelay(True)
        return bokeh_open(self, *args, **kwargs)

    open_without_nagle._qpviz_nodelay = True
    WSHandler.open = open_without_nagle
    _cork_panel_writes()


def _socket_of(conn):
    """The TCP socket under a Bokeh ServerConnection's websocket, or None (closed, or not TCP)."""
    stream = getattr(getattr(getattr(conn, "_socket", None), "ws_connection", None), "stream", None)
    return getattr(stream, "socket", None)


class corked:
    """Context manager: ``sock`` corked (TCP_CORK) inside, uncorked on leaving; does nothing for
    None or where the platform has no TCP_CORK."""

    def __init__(self, sock):
        self.sock = sock if hasattr(socket, "TCP_CORK") else None

    def _set(self, value: int) -> None:
        if self.sock is not None:
            try:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, value)
            except OSError:  # closed meanwhile: nothing left to send
                pass

    def __enter__(self):
        self._set(1)
        return self

    def __exit__(self, *exc_info) -> None:
        self._set(0)


def _cork_panel_writes() -> None:
    """Wrap Panel's websocket writer once: each message's frames written with the socket corked."""
    if getattr(document.dispatch_tornado, "_qpviz_corked", False):
        return
    panel_dispatch = document.dispatch_tornado

    @functools.wraps(panel_dispatch)
    def dispatch_corked(conn, events=None, msg=None):
        with corked(_socket_of(conn)):
            return panel_dispatch(conn, events, msg)

    dispatch_corked._qpviz_corked = True
    document.dispatch_tornado = dispatch_corked
