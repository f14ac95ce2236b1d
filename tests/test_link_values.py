"""Every link value of every page (issue 21.3): a bad value of any key a page declares
(``dashboard.url_keys()``) is named on the page (a banner or message quoting the key), not used
silently. Generated from the declared keys: a key added to a page is covered without a test edit.

Each case builds the page with a real ``panel.io.location.Location`` holding ``?KEY=BAD`` in place
of the browser's (as tests/test_safe_text.py's RecordingLocation stands in for it) and reads the
text of every visible Markdown/Alert pane of the page."""
from __future__ import annotations

import sys
from pathlib import Path

import panel as pn
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

import dashboard  # noqa: E402
from safe_text import shown  # noqa: E402

#: A value no key takes: not a number, not an option, not JSON, not a list of points.
BAD = "bogus<b>"
#: Keys that carry free text the page takes as it is (none so far).
FREE_TEXT: set[str] = set()
#: (page, key) pairs whose bad value is still not named with the key (issue 21.3, left to do; measured
#: 2026-11: GP 1-D's selects take any link value silently, the typed boxes name the field but not the
#: key, GP 2-D / VSGP name the parameter, not the key). Strict xfail: fixing one makes its case pass
#: and the test then asks for its removal here.
NOT_NAMED_YET: set[tuple[str, str]] = {
    ("gp-1-d", "g1_preset"),
    ("gp-1-d", "g1_n"),
    ("gp-1-d", "g1_seed"),
    ("gp-1-d", "g1_lik"),
    ("gp-1-d", "g1_kernel"),
    ("gp-1-d", "g1_var"),
    ("gp-1-d", "g1_ls"),
    ("gp-1-d", "g1_methods"),
    ("gp-1-d", "g1_step"),
    ("gp-1-d", "g1_data"),
    ("gp-2-d", "g2_preset"),
    ("gp-2-d", "g2_n"),
    ("gp-2-d", "g2_seed"),
    ("gp-2-d", "g2_kernel"),
    ("gp-2-d", "g2_var"),
    ("gp-2-d", "g2_ls"),
    ("gp-2-d", "g2_methods"),
    ("gp-2-d", "g2_added"),
    ("gp-2-d", "g2_removed"),
    ("sparse", "sp_preset"),
    ("sparse", "sp_n"),
    ("sparse", "sp_seed"),
    ("sparse", "sp_kernel"),
    ("sparse", "sp_var"),
    ("sparse", "sp_ls"),
    ("sparse", "sp_noise"),
    ("sparse", "sp_m"),
    ("sparse", "sp_z"),
    ("sparse", "sp_alpha"),
    ("sparse", "sp_proj"),
    ("sparse", "sp_methods"),
    ("vsgp", "vs_preset"),
    ("vsgp", "vs_n"),
    ("vsgp", "vs_seed"),
    ("vsgp", "vs_m"),
    ("vsgp", "vs_blur"),
    ("vsgp", "vs_shape"),
    ("vsgp", "vs_method"),
    ("vsgp", "vs_var"),
    ("vsgp", "vs_ls"),
    ("vsgp", "vs_centres"),
    ("scalable", "sc_m"),
    ("scalable", "sc_mb"),
    ("scalable", "sc_methods"),
    ("scalable", "sc_epochs"),
}


def _cases():
    for module in dashboard.PAGES:
        slug = dashboard.tab_slug(module.TITLE)
        for key in dashboard.url_keys(module):
            if key in FREE_TEXT:
                continue
            marks = [pytest.mark.xfail(strict=True, reason="not named yet")] if (slug, key) in NOT_NAMED_YET else []
            yield pytest.param(module, key, id=f"{slug}:{key}", marks=marks)


def page_text(viewable) -> str:
    """What the page says: the shown text of its visible Markdown and Alert panes."""
    texts = []
    for pane in pn.panel(viewable).select(pn.pane.Markdown):
        if pane.visible and isinstance(pane.object, str) and pane.object:
            texts.append(shown(pane.object))
    return " | ".join(texts)


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
@pytest.mark.parametrize("module, key", list(_cases()))
def test_a_bad_link_value_is_named_with_its_key(module, key, monkeypatch):
    from panel.io.location import Location  # noqa: PLC0415

    location = Location(search=f"?{key}={BAD}")
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    _, page = module.page()
    if hasattr(page, "_build_views"):  # what drawing the tab does (GP 2-D, VSGP: the first fit)
        page._build_views()
    try:
        said = page_text(page)
        assert key in said and "bogus<b>" in said, f"?{key}={BAD}: the page says {said[:400]!r}"
    finally:
        for stop in ("cancel_job", "cancel_curve", "stop"):
            if callable(getattr(getattr(page, "model", page), stop, None)):
                getattr(getattr(page, "model", page), stop)()
