"""A refused link value is rewritten in the browser's address bar (issue 21.3): after
``?page=gp-1-d&g1_n=bogus`` the address holds the value the page shows, not ``bogus``.

Generated over the pages that read their link through ``number_field.LinkValues`` (one typed-number
key of each: the first of its ``URL_KEYS`` with a ``TYPED`` or ``RANGES`` entry), and Variance
effects' seed. The value shown is read from the page's banner ("shown instead: ..."), so the test
needs no page's defaults."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

APP = Path(__file__).resolve().parents[2] / "app"
sys.path.insert(0, str(APP))

import dashboard  # noqa: E402
from test_hostile_inputs import message, wait_for_message  # noqa: E402

TIMEOUT_MS = 120_000
BAD = "bogus"
#: The banner's words for the value a refused link value was replaced by.
SHOWN = re.compile(r"shown instead: (\S+)")


def link_value_cases():
    """(slug, key, banner class) of one typed-number key of each LinkValues page, and ve_seed."""
    for page in dashboard.PAGES:
        if "LinkValues(" not in (APP / f"{page.__name__}.py").read_text():
            continue
        numbers = {**getattr(page, "TYPED", {}), **getattr(page, "RANGES", {})}
        key = next(key for name, key in page.URL_KEYS.items() if name in numbers)
        yield pytest.param(dashboard.tab_slug(page.TITLE), key, "qpviz-link-alert", id=f"{page.__name__}:{key}")
    yield pytest.param(dashboard.tab_slug(dashboard.VARIANCE_EFFECTS.TITLE), "ve_seed", "qpviz-ve-link",
                       id="variance_effects:ve_seed")


def url_value(url: str, key: str) -> str | None:
    values = parse_qs(urlsplit(url).query, keep_blank_values=True).get(key)
    return values[-1] if values else None


@pytest.mark.parametrize("slug, key, banner", list(link_value_cases()))
def test_a_refused_link_value_is_replaced_in_the_address_bar(page: Page, app_url: str, slug: str, key: str,
                                                            banner: str):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}?page={slug}&{key}={BAD}")
    wait_for_message(page, banner, f"{key}=", TIMEOUT_MS)
    text = message(page, banner)
    assert BAD in text, text
    found = SHOWN.search(text.split(f"{key}=", 1)[1])
    assert found, text
    shown = found.group(1).rstrip(".;,")
    try:
        page.wait_for_url(lambda url: url_value(url, key) == shown, timeout=30_000)
    except Exception:  # noqa: BLE001 - say what the address holds
        pytest.fail(f"?{key}={BAD}: the page shows {shown!r}, the address holds {url_value(page.url, key)!r} ({page.url})")
    assert url_value(page.url, "page") == slug
