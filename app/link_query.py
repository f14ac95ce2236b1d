"""A link's query as typed, for every page's URL keys (issue 21.3: no silent input).

Panel's own query parsing (``panel.util.parse_query``, behind ``Location.query_params`` and
``Location.sync``) reads a value that starts with ``[`` or ``{`` as JSON and, when it is not JSON,
drops it with a log line: ``?g1_n=[abc`` reached no page, so nothing said it was not used. And the
first ``sync`` of a session rewrites ``location.search`` from that parsing, so such a value is gone
from the search before the later pages are built. Every page reads its link through this module
instead:

* :func:`opened` is the query of the address the session opened, key -> text as typed (the
  request's arguments in a served session; the location's search outside one, e.g. a test);
* :func:`sync` is ``location.sync`` plus the values Panel's parsing drops, each handed to the page
  as its text, so the page's own check refuses it by name like any other bad value.

A page writes its own changes into the URL through :class:`WriteWhenRested`: once they have rested
:data:`URL_DELAY_MS`, not at every slider step.
"""
from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode

__all__ = ["URL_DELAY_MS", "WriteWhenRested", "typed", "opened", "unread", "sync"]

#: A page's changes reach the URL this long after the last one (:class:`WriteWhenRested`).
URL_DELAY_MS = 300


class WriteWhenRested:
    """Calls ``write()`` once the changes it is told of (:meth:`changed`) have rested
    :data:`URL_DELAY_MS`; outside a served session (a test, a notebook) at once.

    Writing the URL at every slider step cost the browser 5-10 ms of each update before it painted
    it (Panel's Location view, ``history.pushState``, the new address sent back to the server) and
    left one browser-history entry per step: the Back button then walked through every step."""

    def __init__(self, write):
        self._write = write
        self._pending = False
        self._last_change = 0.0

    def changed(self) -> None:
        import panel as pn  # noqa: PLC0415

        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._write()
            return
        self._last_change = time.monotonic()
        if not self._pending:
            self._pending = True
            pn.state.add_periodic_callback(self._later, period=URL_DELAY_MS, count=1)

    def _later(self) -> None:
        import panel as pn  # noqa: PLC0415

        wait_ms = URL_DELAY_MS - 1000 * (time.monotonic() - self._last_change)
        if wait_ms > 10:  # changed again meanwhile: wait for the rest
            pn.state.add_periodic_callback(self._later, period=round(wait_ms), count=1)
            return
        self._pending = False
        self._write()


def typed(search: str) -> dict[str, str]:
    """A URL search (``?a=1&b=x``) as key -> text, decoded but not interpreted (the last of a
    repeated key, empty values kept)."""
    return dict(parse_qsl(search.lstrip("?"), keep_blank_values=True))


def opened(location) -> dict[str, str]:
    """The query of the address this session opened, key -> text as typed; {} without a location."""
    import panel as pn  # noqa: PLC0415

    arguments = pn.state.session_args  # the request that started the session (Panel's syncs rewrite the search)
    if arguments:
        return {key: values[-1].decode("utf-8", "replace") for key, values in arguments.items() if values}
    return typed(location.search) if location is not None and location.search else {}


def unread(query: dict[str, str], keys) -> dict[str, str]:
    """The values of ``keys`` in ``query`` that Panel's query parsing drops (a value starting with
    ``[`` or ``{`` that is not JSON): key -> text."""
    from panel.util import parse_query  # noqa: PLC0415

    asked = {key: text for key, text in query.items() if key in set(keys)}
    parsed = parse_query("?" + urlencode(asked)) if asked else {}
    return {key: text for key, text in asked.items() if key not in parsed}


def sync(location, parameterized, mapping: dict[str, str], on_error=None) -> None:
    """``location.sync(parameterized, mapping, on_error)`` (``mapping``: parameter -> URL key), then
    the link's values that Panel's parsing dropped are set as their text in one update, reaching the
    page's watchers (which refuse them by name and write the value shown back into the link); an
    update that raises goes to ``on_error(values)`` as Panel's sync does, or is raised without one."""
    query = opened(location)  # before the sync rewrites the search
    location.sync(parameterized, mapping, on_error=on_error)
    names = {key: name for name, key in mapping.items()}
    dropped = {names[key]: text for key, text in unread(query, names).items()}
    if not dropped:
        return
    try:
        parameterized.param.update(**dropped)
    except Exception:
        if on_error is None:
            raise
        on_error(dropped)
