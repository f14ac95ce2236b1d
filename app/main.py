"""The qpviz dashboard: `panel serve app` serves this file at /app, one tab per page.

Adding a page: write app/<page>.py with ``page() -> (title, viewable)``, import it here and
append it to PAGES. Bokeh runs this file with app/ on sys.path, so pages import as top-level
modules.
"""
import threading

import panel as pn

import gp_1d
import gp_2d
import panel_offline
import paper_results
import projection_explorer
import tcp_nodelay
import variance_effects

from qpviz import tables

PAGES = [projection_explorer, gp_1d, gp_2d, variance_effects, paper_results]

pn.extension("katex", sizing_mode="stretch_width")
panel_offline.enable()  # Panel's stylesheets always from this server, never its CDN
tcp_nodelay.enable()  # the server's replies reach the browser without Nagle's 40 ms waits
#: Seconds after a page has loaded before every other QP table's fast form is derived in the
#: background (deriving the Poisson families takes 1-2 s of CPU each): the first page's numbers and
#: plots get the CPU first, and no later page waits for its table.
PRELOAD_DELAY = 5.0


def _preload_later() -> None:
    timer = threading.Timer(PRELOAD_DELAY, tables.preload)
    timer.daemon = True
    timer.start()


pn.state.onload(_preload_later)


def tab_slug(title: str) -> str:
    """A tab's key in the URL: its title in lower case, words joined by '-' ("GP 1-D" -> "gp-1-d")."""
    return "-".join("".join(c if c.isalnum() else " " for c in title.lower()).split())


class TabInUrl:
    """Keeps the open tab in the URL (``?page=gp-1-d``), so that every page has its own link."""

    def __init__(self, tabs: pn.Tabs, titles: list[str]):
        self.tabs = tabs
        self.slugs = [tab_slug(t) for t in titles]
        self.holder = pn.widgets.TextInput(value=self.slugs[0], visible=False)
        self.holder.param.watch(self._open, "value")
        tabs.param.watch(self._opened, "active")
        if pn.state.location is not None:
            pn.state.location.sync(self.holder, {"value": "page"})

    def _open(self, event) -> None:
        if event.new in self.slugs:
            self.tabs.active = self.slugs.index(event.new)

    def _opened(self, event) -> None:
        self.holder.value = self.slugs[event.new]


def build() -> pn.Column:
    """The whole app: a title bar above one tab per page; the open tab is in the URL (?page=...).

    (No pn.template: the Fast templates fetch a web font from the internet, which a classroom
    or CI machine without internet access reports as a console error.)
    """
    header = pn.pane.Markdown(
        "## qpviz: Expectation Propagation vs Quantile Propagation",
        styles={"background": "#0072B2", "color": "white", "padding": "0 12px"},
        sizing_mode="stretch_width",
    )
    pages = [module.page() for module in PAGES]
    tabs = pn.Tabs(*pages, dynamic=True, sizing_mode="stretch_width")
    url = TabInUrl(tabs, [title for title, _ in pages])
    return pn.Column(header, tabs, url.holder, sizing_mode="stretch_width")


build().servable()
