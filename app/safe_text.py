"""Text that a user or a link supplied, shown as text: never as HTML or Markdown (issue 25).

A shared link, a typed field, a CSV file (its name, header and cells) and the messages that quote
them reach the page's Markdown and HTML panes. Panel renders a Markdown pane's text with
markdown-it, raw HTML enabled, so ``<img src=x onerror=...>`` in a banner would run script in the
browser of whoever opens the link. Every page puts such text through this module:

* :func:`text` for a Markdown pane (``pn.pane.Markdown``, ``pn.pane.Alert``): HTML's special
  characters become entities and Markdown's punctuation is backslash-escaped, so the pane shows
  exactly the characters given;
* :func:`code_block` for several lines shown verbatim (an error's text);
* :func:`message` and :func:`bullets` for the library's plain-text messages, which quote values;
* :func:`html_text` for an HTML pane or a cell of an HTML table (entities only);
* :func:`fill` for a message whose words are the page's own Markdown and whose values are not:
  ``fill("The link's {key} was replaced by {value}.", key=..., value=...)`` escapes every value.

Long values are shortened (:func:`qpviz.checks.shorten`) so that a banner still names the value
without a page-long paragraph. ``tests/app/test_safe_text.py`` renders the results with Panel's own
Markdown parser and checks that the shown text equals the input for any string (hypothesis).
"""
from __future__ import annotations

import html
import re
import string
from html.parser import HTMLParser

from qpviz.checks import shorten

__all__ = ["text", "html_text", "message", "fill", "bullets", "code_block", "shown", "rendered", "LIMIT", "MESSAGE_LIMIT"]

#: Characters of a user's value shown at most (longer ones end in "…").
LIMIT = 120
#: Characters of a whole message shown at most (its quoted values are shortened already).
MESSAGE_LIMIT = 4 * LIMIT

#: ASCII punctuation that Markdown (CommonMark, GFM, markdown-it's plugins: math, footnotes,
#: smart quotes, tables) may read as markup; a backslash makes each a literal character. ``&``,
#: ``<``, ``>``, ``"`` and ``'`` become HTML entities instead (an entity is literal in Markdown).
_MARKDOWN_PUNCTUATION = re.compile(r"([!#$%()*+\-./:;=?@\[\\\]^_`{|}~])")


def html_text(value, limit: int | None = LIMIT) -> str:
    """``value`` as HTML that shows its characters (``str(value)``, shortened to ``limit``)."""
    shown = str(value) if limit is None else shorten(str(value), limit)
    return html.escape(shown, quote=True)


def text(value, limit: int | None = LIMIT) -> str:
    """``value`` as Markdown that shows its characters, whatever they are: no tag, link, emphasis,
    heading, list, math or line break of its own (a run of white space shows as one space)."""
    shown = str(value) if limit is None else shorten(str(value), limit)
    shown = " ".join(shown.split())  # HTML shows a run of white space as one space anyway
    return html.escape(_MARKDOWN_PUNCTUATION.sub(r"\\\1", shown), quote=True)


def message(value) -> str:
    """A plain-text message (the library's words quoting a user's values) as Markdown text."""
    return text(value, MESSAGE_LIMIT)


class _Escaping(string.Formatter):
    """str.format whose every substituted value goes through :func:`text`."""

    def format_field(self, value, format_spec):
        return text(format(value, format_spec))


_FORMATTER = _Escaping()


def fill(template: str, /, *args, **values) -> str:
    """``template.format(*args, **values)`` with every value escaped by :func:`text`: the
    template's words and Markdown are the page's own, the values are shown as typed."""
    return _FORMATTER.format(template, *args, **values)


def code_block(value) -> str:
    """``value`` (e.g. an error's several lines) as a fenced Markdown code block: shown verbatim, line
    breaks kept, in a fence longer than any run of backticks inside it."""
    shown = shorten(str(value), 4 * MESSAGE_LIMIT)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{shown}\n{fence}"


def bullets(items) -> str:
    """A Markdown list of ``items`` (messages), each shown as text (:func:`message`)."""
    return "\n".join(f"- {message(item)}" for item in items)


class _Rendered(HTMLParser):
    """The tags and the text of rendered HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.parts.append(data)


def rendered(source: str) -> tuple[str, list[str]]:
    """(text, tags) of Markdown ``source`` as a Markdown pane renders it: Panel's own parser with
    the pane's default renderer, plugins and options."""
    import panel as pn  # noqa: PLC0415 - only tests and checks call this

    pane = pn.pane.Markdown("")
    parser = pn.pane.Markdown._get_parser(pane.renderer, tuple(pane.plugins), **pane.renderer_options)
    result = _Rendered()
    result.feed(parser.render(source))
    return "".join(result.parts), result.tags


def shown(source: str) -> str:
    """The text a reader sees in a Markdown pane holding ``source`` (white space runs as one space)."""
    return " ".join(rendered(source)[0].split())
