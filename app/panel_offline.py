"""Keep every Panel stylesheet URL on this server (``/static/extensions/panel/...``), never on
Panel's CDN.

Panel 1.9 patches its shared stylesheet objects with the *document's* ``dist_url`` whenever it
builds or updates a model, and falls back to its CDN where a model has no document yet (a session
being built before its first HTML, or an update to a model of a re-rendered pane: Markdown's
``_update`` passes ``model.document``, which is then None). The objects are shared between
sessions, so one such patch points every tab opened later, in any session, at
cdn.holoviz.org/panel/... (loading.css, markdown.css, alerts.css): a classroom or CI machine
without internet reports these as console errors, and the styles are missing. The app is always
served by ``panel serve``, which has the files itself, so the fallback is made the server's own
folder. (The browser tests fail on any console error, which is how this was found.)
"""
from __future__ import annotations

__all__ = ["enable"]


def enable() -> None:
    """Make the server's static folder Panel's fallback for stylesheets (idempotent)."""
    import panel.reactive  # noqa: PLC0415
    import panel.theme.base  # noqa: PLC0415
    from panel.io.resources import LOCAL_DIST  # noqa: PLC0415

    for module in (panel.reactive, panel.theme.base):
        if hasattr(module, "CDN_DIST"):
            module.CDN_DIST = LOCAL_DIST
