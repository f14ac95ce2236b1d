"""The qpviz dashboard: `panel serve app` serves this file at /app, one tab per page.

Adding a page: write app/<page>.py with ``page() -> (title, viewable)``, import it here and
append it to PAGES. Bokeh runs this file with app/ on sys.path, so pages import as top-level
modules.
"""
import panel as pn

import projection_explorer

PAGES = [projection_explorer]

pn.extension("katex", sizing_mode="stretch_width")


def build() -> pn.template.FastListTemplate:
    """The whole app: a template whose main area holds one tab per page."""
    tabs = pn.Tabs(*(module.page() for module in PAGES), dynamic=True, sizing_mode="stretch_width")
    return pn.template.FastListTemplate(
        title="qpviz: EP vs QP for Gaussian processes",
        main=[tabs],
        accent="#0072B2",
        header_background="#0072B2",
    )


build().servable()
