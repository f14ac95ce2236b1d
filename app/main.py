"""The qpviz dashboard: `panel serve app` serves this file at /app, one tab per page.

Adding a page: write app/<page>.py with ``page() -> (title, viewable)``, import it here and
append it to PAGES. Bokeh runs this file with app/ on sys.path, so pages import as top-level
modules.
"""
import threading

import panel as pn

import gp_1d
import projection_explorer
import tcp_nodelay

from qpviz import tables

PAGES = [projection_explorer, gp_1d]

pn.extension("katex", sizing_mode="stretch_width")
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


def build() -> pn.Column:
    """The whole app: a title bar above one tab per page.

    (No pn.template: the Fast templates fetch a web font from the internet, which a classroom
    or CI machine without internet access reports as a console error.)
    """
    header = pn.pane.Markdown(
        "## qpviz: Expectation Propagation vs Quantile Propagation",
        styles={"background": "#0072B2", "color": "white", "padding": "0 12px"},
        sizing_mode="stretch_width",
    )
    tabs = pn.Tabs(*(module.page() for module in PAGES), dynamic=True, sizing_mode="stretch_width")
    if pn.state.location is not None:
        pn.state.location.sync(tabs, {"active": "tab"})  # ?tab=1 opens the second page
    return pn.Column(header, tabs, sizing_mode="stretch_width")


build().servable()
