"""Every link value of every page (issue 21.3): a bad value of any key a page declares
(``dashboard.url_keys()``) is named on the page (a banner or message quoting the key), not used
silently. Generated from the declared keys: a key added to a page is covered without a test edit.

Each case builds the page with a real ``panel.io.location.Location`` holding ``?KEY=BAD`` in place
of the browser's (as tests/app/test_safe_text.py's RecordingLocation stands in for it) and reads the
text of every visible Markdown/Alert pane of the page.

Sampled by default (issue 22.6): BAD on every key of every page; the values that start like JSON
(NOT_JSON) on the first and the last key of each page (a choice and a list, points or number key:
two kinds of check). A NOT_JSON value takes one path of its own, link_query.sync's branch for the
values Panel's parsing drops, the same for every key of a page; from there it meets the key's own
check as a text, as BAD does. Measured with a line tracer over app/ and qpviz/ (2026-11-27): the
sampled cases of each page ran every line that its full grid ran. ``QPVIZ_FULL_SWEEPS=1`` runs every
value on every key."""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlencode

import panel as pn
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))

import dashboard  # noqa: E402
import link_query  # noqa: E402
from safe_text import shown  # noqa: E402
from sweeps import FULL_SWEEPS  # noqa: E402

#: A value no key takes: not a number, not an option, not JSON, not a list of points.
BAD = "bogus<b>"
#: Values that start like JSON and are not: Panel's query parsing drops them (it logs "Parameter will
#: be ignored"), so a page that read its link through Panel alone said nothing about them.
NOT_JSON = ("[x", "{x")
#: Keys that carry free text the page takes as it is (none so far).
FREE_TEXT: set[str] = set()
#: (page, key) pairs whose bad value is not named with the key yet (strict xfail: fixing one makes its
#: case pass and the test then asks for its removal here). None since the pages' URL sync goes
#: through number_field.LinkValues.
NOT_NAMED_YET: set[tuple[str, str]] = set()


def _cases(values=(BAD,)):
    """(page module, key, value) of every case that runs: BAD on every key; each other value on the
    first and the last key of each page (every key with QPVIZ_FULL_SWEEPS=1; module docstring)."""
    for module in dashboard.PAGES:
        slug = dashboard.tab_slug(module.TITLE)
        keys = [key for key in dashboard.url_keys(module) if key not in FREE_TEXT]
        for key in keys:
            marks = [pytest.mark.xfail(strict=True, reason="not named yet")] if (slug, key) in NOT_NAMED_YET else []
            for value in values:
                if value == BAD or FULL_SWEEPS or key in (keys[0], keys[-1]):
                    yield pytest.param(module, key, value, id=f"{slug}:{key}" + ("" if value == BAD else f"={value}"),
                                       marks=marks)


def page_text(viewable) -> str:
    """What the page says: the shown text of its visible Markdown and Alert panes."""
    texts = []
    for pane in pn.panel(viewable).select(pn.pane.Markdown):
        if pane.visible and isinstance(pane.object, str) and pane.object:
            texts.append(shown(pane.object))
    return " | ".join(texts)


def stop_jobs(page) -> None:
    """Stop whatever background job building ``page`` started."""
    owner = getattr(page, "model", page)
    for stop in ("cancel_job", "cancel_curve", "stop"):
        if callable(getattr(owner, stop, None)):
            getattr(owner, stop)()


def page_module(slug: str):
    """The page module of tab ``slug``."""
    return next(m for m in dashboard.PAGES if dashboard.tab_slug(m.TITLE) == slug)


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
@pytest.mark.parametrize("module, key, value", list(_cases((BAD, *NOT_JSON))))
def test_a_bad_link_value_is_named_with_its_key(module, key, value, monkeypatch):
    """Also a value starting with "[" or "{" that is no JSON (NOT_JSON): it reaches the page's check
    and is refused by name, and the link is rewritten to the value shown."""
    from panel.io.location import Location  # noqa: PLC0415

    location = Location(search=f"?{urlencode({key: value})}")
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    _, page = module.page()
    if hasattr(page, "_build_views"):  # what drawing the tab does (GP 2-D, VSGP: the first fit)
        page._build_views()
    try:
        said = page_text(page)
        assert key in said and value in said, f"?{key}={value}: the page says {said[:400]!r}"
        assert link_query.typed(location.search).get(key) != value, f"the link kept {key}={value}: {location.search}"
    finally:
        stop_jobs(page)


#: One choice key per page whose link values go through number_field.LinkValues: the banner of a
#: refused link value goes at the page's next own change (here: another choice of that key).
CLEARED_BY_A_CHANGE = {"gp-1-d": "g1_lik", "gp-2-d": "g2_kernel", "sparse": "sp_kernel", "vsgp": "vs_method",
                       "scalable": "sc_data"}


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
@pytest.mark.parametrize("slug", sorted(CLEARED_BY_A_CHANGE))
def test_the_link_banner_goes_at_the_next_valid_change(slug, monkeypatch):
    from panel.io.location import Location  # noqa: PLC0415

    module = page_module(slug)
    key = CLEARED_BY_A_CHANGE[slug]
    location = Location(search=f"?{key}={BAD}")
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    _, page = module.page()
    owner, name = page.links.fields[key]
    assert page.links.banner.visible and key in shown(page.links.banner.object)
    options = getattr(owner, "options", None) or owner.param[name].objects
    options = list(options.values() if isinstance(options, dict) else options)
    try:
        setattr(owner, name, next(option for option in options if option != getattr(owner, name)))
        assert not page.links.banner.visible, shown(page.links.banner.object)
        assert location.query_params[key] == getattr(owner, name)  # the link follows the page
    finally:
        stop_jobs(page)


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
def test_a_good_list_value_is_taken_whole(monkeypatch):
    """A link's list of choices (GP 2-D's methods with MCMC) is taken, not dropped as 'no choice'."""
    from panel.io.location import Location  # noqa: PLC0415

    import gp_2d  # noqa: PLC0415

    location = Location(search='?g2_methods=["ep","qp","mcmc"]')
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    _, page = gp_2d.page()
    try:
        assert page.model.methods == ["ep", "qp", "mcmc"] and "g2_methods" not in page_text(page)
    finally:
        page.model.cancel_job(quiet=True)


@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
@pytest.mark.parametrize("slug", ["gp-1-d", "sparse", "scalable"])  # (GP 2-D, VSGP: the link holds the page's number)
def test_a_refused_typed_value_never_reaches_the_link(slug, monkeypatch):
    """Typing a value a box refuses keeps the link at the value shown (the refusal's reset happens
    inside the typed change, so a link that followed the change's own value kept the refused text)."""
    from panel.io.location import Location  # noqa: PLC0415

    from number_field import TYPED_CLASS  # noqa: PLC0415

    module = page_module(slug)
    location = Location(search="")
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    _, page = module.page()
    boxes = {key: owner for key, (owner, name) in page.links.fields.items()
             if name == "value" and TYPED_CLASS in getattr(owner, "css_classes", []) and isinstance(owner.value, str)}
    assert boxes
    try:
        for key, box in boxes.items():
            shown_before = box.value
            box.value = "bogus"
            assert box.value == shown_before
            assert str(location.query_params.get(key, shown_before)) == shown_before, (key, location.query_params)
    finally:
        stop_jobs(page)
