"""The qpviz dashboard: `panel serve app` serves this file at /app, one tab per page.

Adding a page: write app/<page>.py with ``page() -> (title, viewable)``, import it here and
append it to PAGES. Bokeh runs this file with app/ on sys.path, so pages import as top-level
modules.
"""
import panel as pn

import projection_explorer
import tcp_nodelay

from qpviz import tables

PAGES = [projection_explorer]

pn.extension("katex", sizing_mode="stretch_width")
tcp_nodelay.enable()  # the server's replies reach the browser without Nagle's 40 ms waits
# Every QP table's fast form, in the background, once this page is shown (not while the first
# page is built: the CPU is the first page's), so that no later page waits for one.
pn.state.onload(tables.preload)


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
    return pn.Column(header, tabs, sizing_mode="stretch_width")


build().servable()
