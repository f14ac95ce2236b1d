"""The dashboard's pages: one registration per page, in tab order (the one place a page is named).

A page is a module ``app/<module>.py`` with ``TITLE`` (read from here: ``TITLE =
pages.title(__name__)``), the URL query keys it reads (``URL_KEYS``: a mapping name -> key, or the
keys; or a function ``url_keys()``) and ``page() -> (title, viewable)``, its builder. Adding a page
is one file and one ``register(...)`` line below: the dashboard's tabs (app/dashboard.py), its
URL (``?page=<slug>``), the background import and the browser tests' page lists (layout, figure
export, hostile input, script injection, link values) come from this registry.

This module imports nothing heavy: the dashboard reads the titles here at a server's start and
imports a page module only when the page is first used.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageInfo", "PAGES", "register", "title", "info", "by_slug", "tab_slug"]

#: Bokeh puts app/ on sys.path only while it runs app/main.py (and restores the path after): a
#: page imported later puts it back.
APP_DIR = str(Path(__file__).resolve().parent)


def tab_slug(title: str) -> str:
    """A tab's key in the URL: its title in lower case, words joined by '-' ("GP 1-D" -> "gp-1-d")."""
    return "-".join("".join(c if c.isalnum() else " " for c in title.lower()).split())


@dataclass(frozen=True)
class PageInfo:
    """One page of the dashboard, as the dashboard and the tests see it before importing it."""

    #: the page's module in app/ (imported on first use)
    module: str
    #: the tab's title (its slug, :func:`tab_slug`, is the page's ``?page=`` value)
    title: str
    #: the qpviz.warmup target its first build compiles (None: it compiles nothing in the server)
    kernels: str | None = None
    #: query keys (``key=value&...``) that open the page without starting a long job (the GP 1-D
    #: page's default methods include an MCMC reference): what a test adds to the page's link
    quiet_query: str = ""
    #: True: while its kernels compile (a first start), the page is built at once, given the future
    #: of its kernels (``page(kernels=future)``), and computes without them until they are ready;
    #: False: the tab shows a "preparing" note until they are (app/dashboard.py)
    opens_before_kernels: bool = False

    @property
    def slug(self) -> str:
        return tab_slug(self.title)

    def load(self):
        """The page's module, imported now if it is not yet."""
        if APP_DIR not in sys.path:
            sys.path.append(APP_DIR)
        # import_module, not sys.modules: while another thread (the background preload, a second
        # session) is importing the page, sys.modules holds it half-initialised; import_module waits
        # for that import to finish
        return importlib.import_module(self.module)


#: Every page, in tab order.
PAGES: list[PageInfo] = []


def register(module: str, title: str, *, kernels: str | None = None, quiet_query: str = "",
             opens_before_kernels: bool = False) -> PageInfo:
    """Add a page after those registered so far (its tab goes to the right of theirs)."""
    entry = PageInfo(module, title, kernels, quiet_query=quiet_query, opens_before_kernels=opens_before_kernels)
    for other in PAGES:
        if entry.module == other.module or entry.slug == other.slug:
            raise ValueError(f"page {module!r} ({title!r}): {other.module!r} ({other.title!r}) has its module or slug")
    PAGES.append(entry)
    return entry


def info(module: str) -> PageInfo:
    """The registration of the page in app/<module>.py."""
    for entry in PAGES:
        if entry.module == module:
            return entry
    raise KeyError(f"app/{module}.py is not a registered page (app/pages.py): {[p.module for p in PAGES]}")


def title(module: str) -> str:
    """The tab title of the page in app/<module>.py (a page module's ``TITLE = title(__name__)``)."""
    return info(module).title


def by_slug(slug: str) -> PageInfo:
    """The page whose tab has URL key ``slug``."""
    for entry in PAGES:
        if entry.slug == slug:
            return entry
    raise KeyError(f"no page has the slug {slug!r}: {[p.slug for p in PAGES]}")


# the first page: shown at once on a first start, by NumPy quadrature until its kernels are compiled
register("projection_explorer", "Projection Explorer", kernels="explorer", opens_before_kernels=True)
register("gp_1d", "GP 1-D", kernels="fit", quiet_query="g1_methods=%5B%22ep%22%2C%22qp%22%5D")
register("gp_2d", "GP 2-D", kernels="fit")
register("sparse_page", "Sparse", kernels="sparse")
register("vsgp_page", "VSGP", kernels="sparse")
register("scalable_page", "Scalable")  # trains in child processes
register("variance_effects", "Variance effects", kernels="fit")
register("paper_results", "Paper results")  # reads files
