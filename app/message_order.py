"""Every message to a browser leaves in the order the server made it.

Panel (1.9) and Bokeh (3.9) write a session's changes to its websocket by two paths:

- Bokeh's: a change made directly to a Bokeh model (a figure's title, a source's data) during a
  callback that holds the document becomes a message at once; it is written when the callback
  ends, after waiting its turn for the socket's write lock.
- Panel's (``panel.io.document.unlocked``): a change to a Panel object (a Column's objects, a
  pane) is written at once, or, when the write lock is busy (a reply to the browser being
  written), made into a message that a task writes later. That task only polls the lock; it never
  waits in its queue.

So a message Panel made first could leave after one Bokeh made later. When the earlier one
defines models the later one names (a page's figures, then their titles' font sizes), the browser
meets names it does not know: BokehJS throws "reference p1234 isn't known" (one page error per
figure) and drops the later change, leaving a figure stale. Two full test runs failed with such
errors, one per figure of the page just opened by its tab (15 on GP 2-D, 2 on Variance effects):
opening a tab puts the page on it (Panel's path), then sets its figures' title font sizes for the
projector mode (Bokeh's path). tests/browser/test_message_order.py builds the case on purpose.

:func:`enable` makes Panel's message join the queue of the callback's own Bokeh messages when
either would overtake the other: when Panel would have postponed it, and when the callback has
Bokeh messages still to write. The callback's messages are then written in the order they were
made, each in its turn for the write lock. Everywhere else (no callback holding the document)
Panel's own paths are unchanged.
"""
from __future__ import annotations

import functools

from panel.io import document

__all__ = ["enable"]


def _pending_writes(doc) -> list | None:
    """The Bokeh messages that the callback now holding ``doc`` will write when it ends (None when
    no callback holds it)."""
    context = getattr(doc, "session_context", None)
    session = getattr(context, "session", None)
    return getattr(session, "_pending_writes", None)


def _queue(doc, pending: list, connections, events) -> None:
    """Panel's postponed messages of ``doc`` (older), then one message of ``events``, appended to
    the callback's pending writes."""
    postponed = document._WRITE_MSGS.pop(doc, {})
    document._WRITE_BLOCK.pop(doc, None)
    for connection, messages in postponed.items():
        pending.extend(connection._socket.send_message(message) for message in messages)
    for connection in connections:
        pending.append(connection._socket.send_message(connection.protocol.create("PATCH-DOC", events)))


def enable() -> None:
    """Wrap Panel's two writers once (idempotent; app/main.py calls it for every session)."""
    if getattr(document.write_events, "_qpviz_in_order", False):
        return
    write_now, write_later = document.write_events, document.schedule_write_events

    @functools.wraps(write_now)
    def write_events(doc, connections, events):
        pending = _pending_writes(doc)
        if pending:  # Bokeh messages made earlier in this callback are still to go
            _queue(doc, pending, connections, events)
        else:
            write_now(doc, connections, events)

    @functools.wraps(write_later)
    def schedule_write_events(doc, connections, events):
        pending = _pending_writes(doc)
        if pending is not None:  # written, in turn, when the callback ends
            _queue(doc, pending, connections, events)
        else:
            write_later(doc, connections, events)

    write_events._qpviz_in_order = schedule_write_events._qpviz_in_order = True
    document.write_events, document.schedule_write_events = write_events, schedule_write_events
