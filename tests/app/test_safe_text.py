"""app/safe_text.py: user text rendered by Panel's own Markdown parser shows as exactly that text,
with no element of its own (issue 25: a shared link must never run script)."""
from __future__ import annotations

import html

import panel as pn
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import safe_text
from qpviz.checks import shorten

PAYLOADS = [
    '<img src=x onerror="window.__xss=1">',
    "<script>window.__xss=1</script>",
    "<svg onload=alert(1)>",
    "[click](javascript:alert(1))",
    "![x](x onerror=alert(1))",
    "**bold** _it_ `code` # heading",
    "$x^2$ and $$y$$",
    "&lt;img src=x&gt; &amp; &#60;b&#62;",
    "- item\n1. item\n> quote",
    "http://example.org (c) -- ... \"quotes\" 'single'",
    "a | b |\n|---|---|",
    "\\<b\\>",
    "x" * 500,
]


def render_markdown(source: str) -> tuple[str, list[str]]:
    return safe_text.rendered(source)


def shown(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_shows_the_payload_as_text(payload):
    text, tags = render_markdown(safe_text.text(payload))
    assert tags == ["p"]
    assert shown(text) == shown(shorten(payload, safe_text.LIMIT))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=60))
def test_markdown_shows_any_text_as_text(value):
    text, tags = render_markdown(safe_text.text(value))
    assert set(tags) <= {"p"}
    assert shown(text) == shown(value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_html_text_shows_any_text_as_text(value):
    escaped = safe_text.html_text(value, limit=None)
    assert not set("<>\"'") & set(escaped)  # no tag, and no way out of an attribute's quotes
    assert html.unescape(escaped) == value


def test_fill_escapes_values_not_the_template():
    source = safe_text.fill("**The link's** {key} was replaced by {value:.2f}.", key="<b>x</b>", value=1.234)
    text, tags = render_markdown(source)
    assert tags == ["p", "strong"]
    assert text.strip() == "The link's <b>x</b> was replaced by 1.23."


def test_bullets_escape_each_item():
    text, tags = render_markdown(safe_text.bullets(["<img src=x onerror=alert(1)>", "*two*"]))
    assert tags == ["ul", "li", "li"]
    assert "<img src=x onerror=alert(1)>" in text and "*two*" in text


def test_long_values_are_shortened_and_say_so():
    source = safe_text.text("<" * 1000)
    text, _ = render_markdown(source)
    assert len(text.strip()) == safe_text.LIMIT and text.strip().endswith("…")
    assert shorten("abc", 3) == "abc" and shorten("abcd", 3) == "ab…"


# -- the URL keys the browser test feeds a payload: every key a page syncs is declared ----------
class RecordingLocation:
    """Stands in for pn.state.location while a page is built: records the keys it syncs."""

    def __init__(self):
        from panel.io.location import Location  # noqa: PLC0415

        self.real = Location()
        self.keys: set[str] = set()

    def sync(self, parameterized, parameters=None, on_error=None):
        if parameters is None:
            parameters = [p for p in parameterized.param if p != "name"]
        names = parameters.values() if isinstance(parameters, dict) else parameters
        self.keys.update(names)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _pages():
    import dashboard  # noqa: PLC0415

    return [pytest.param(module, id=dashboard.tab_slug(module.TITLE)) for module in dashboard.PAGES]


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")  # (some pages' widgets)
@pytest.mark.parametrize("module", _pages())
def test_a_page_syncs_only_the_url_keys_it_declares(module, monkeypatch):
    """dashboard.url_keys() (where the browser test's cases come from) names every key the page's
    URL sync reads, so a key added to a page is covered by tests/browser/test_script_injection.py."""
    import dashboard  # noqa: PLC0415

    location = RecordingLocation()
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    module.page()
    declared = set(dashboard.url_keys(module))
    assert location.keys <= declared, f"synced but not declared in {module.__name__}: {location.keys - declared}"
    if module.TITLE != "Projection Explorer":  # (the explorer reads its keys without Panel's sync)
        assert location.keys == declared
