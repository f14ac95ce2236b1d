"""The qpviz dashboard: one tab per page (app/main.py serves :func:`build` at /app).

Adding a page: write app/<page>.py with ``TITLE``, ``page() -> (title, viewable)`` and the URL
query keys it reads (``URL_KEYS``, or ``url_keys()``: see :func:`url_keys`), import it here and
append it to PAGES. Bokeh runs app/main.py with app/ on sys.path, so pages import as
top-level modules. This is an ordinary module (imported once per server), not the served script:
Bokeh runs the script afresh for each session and empties its globals when the session ends, so
callbacks that outlive a session (e.g. on_session_destroyed) must live here.

A session builds a page only when its tab is first opened (a page's construction fits models and
may start a long job: twenty classroom sessions opening the app must not all build five pages).
"""
import ctypes
import gc
import threading

import panel as pn
from panel.links import Callback

import gp_1d
import gp_2d
import safe_text
import paper_results
import projection_explorer
import scalable_page
import sparse_page
import variance_effects
import vsgp_page
from projector_mode import KEY as PROJECTOR_KEY, ProjectorSwitch

from qpviz import tables

PAGES = [projection_explorer, gp_1d, gp_2d, sparse_page, vsgp_page, scalable_page, variance_effects, paper_results]

#: Seconds after a page has loaded before every other QP table's fast form is derived in the
#: background (deriving the Poisson families takes 1-2 s of CPU each): the first page's numbers and
#: plots get the CPU first, and no later page waits for its table.
PRELOAD_DELAY = 5.0


def preload_later() -> None:
    """Derive every QP table's fast form in a background thread, PRELOAD_DELAY s from now."""
    timer = threading.Timer(PRELOAD_DELAY, tables.preload)
    timer.daemon = True
    timer.start()


#: The query key of the open tab (:class:`TabInUrl`).
PAGE_KEY = "page"


def url_keys(module=None):
    """The URL query keys page ``module`` reads: its ``url_keys()``, or its ``URL_KEYS`` (a mapping
    name -> key, or the keys). Without ``module``: {tab slug: keys} of every page, the tab's own
    key included (the browser tests feed every one of them a hostile value)."""
    if module is None:
        return {tab_slug(m.TITLE): (PAGE_KEY, PROJECTOR_KEY, *url_keys(m)) for m in PAGES}
    keys = module.url_keys() if hasattr(module, "url_keys") else module.URL_KEYS
    return tuple(keys.values()) if isinstance(keys, dict) else tuple(keys)


def tab_slug(title: str) -> str:
    """A tab's key in the URL: its title in lower case, words joined by '-' ("GP 1-D" -> "gp-1-d")."""
    return "-".join("".join(c if c.isalnum() else " " for c in title.lower()).split())


class TabInUrl:
    """Keeps the open tab in the URL (``?page=gp-1-d``), so that every page has its own link."""

    def __init__(self, tabs: pn.Tabs, titles: list[str]):
        self.tabs = tabs
        self.slugs = [tab_slug(t) for t in titles]
        self.holder = pn.widgets.TextInput(value=self.slugs[0], visible=False)
        #: Names a link's page that is not one (the valid pages, the page shown instead).
        self.banner = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-page-link"],
                                    sizing_mode="stretch_width")
        self.holder.param.watch(self._open, "value")
        tabs.param.watch(self._opened, "active")
        if pn.state.location is not None:
            pn.state.location.sync(self.holder, {"value": PAGE_KEY})

    def _open(self, event) -> None:
        if event.new in self.slugs:
            self.banner.visible = False
            self.tabs.active = self.slugs.index(event.new)
            return
        shown = self.slugs[self.tabs.active]
        self.holder.value = shown  # the URL names the page shown
        self.banner.object = safe_text.fill("The link's page={asked} is not a page of this app (valid: {valid}); "
                                            "showing {shown}.", asked=event.new, valid=", ".join(self.slugs), shown=shown)
        self.banner.visible = True

    def _opened(self, event) -> None:
        self.banner.visible = False
        self.holder.value = self.slugs[event.new]


class LazyPages:
    """One empty holder per tab; a tab's page is built into it the first time the tab is shown."""

    def __init__(self, modules, connect=None):
        """``connect(page)`` wires a newly built page to the others."""
        self.modules = list(modules)
        self.connect = connect
        self.titles = [module.TITLE for module in self.modules]
        self.holders = [pn.Column(sizing_mode="stretch_width", name=title, min_height=400)
                        for title in self.titles]
        self.built: dict[int, pn.viewable.Viewable] = {}

    def page(self, index: int) -> pn.viewable.Viewable:
        """The page of tab ``index``, built now if this session has not built it yet."""
        if index not in self.built:
            title, page = self.modules[index].page()
            self.built[index] = page
            self.holders[index].objects = [page]
            if self.connect is not None:
                self.connect(page)
        return self.built[index]


def forget_js_callbacks(app: pn.viewable.Viewable) -> None:
    """Drop the entries of ``app``'s widgets from Panel's ``Callback.registry``.

    Panel keeps every object with a JavaScript callback or link (``js_on_click``, ``jslink``, and the
    EditableFloatSlider's own links) in ``Callback.registry``, a WeakKeyDictionary whose values, the
    callbacks, refer back to their object: the entries never die, and each keeps its whole page
    (widgets, models, fits) alive after its session has closed (Panel 1.9; measured with
    benchmarks/bench_session_memory.py). Called when the session is destroyed.
    """
    for obj in app.select():
        Callback.registry.pop(obj, None)


#: Seconds after a session ends before the freed memory is handed back (Bokeh drops the session's
#: document only after its session-destroyed callbacks have run).
RELEASE_DELAY = 5.0

#: glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8
#: Arrays above this size get their own mmap, handed back to the system when freed
MMAP_THRESHOLD_BYTES = 256 * 1024


def limit_heap_growth() -> None:
    """Make a long-running server hand freed memory back (glibc only; a no-op elsewhere).

    By default glibc raises its mmap threshold each time a large block is freed (up to 32 MiB),
    after which fit-sized arrays (GP 2-D grids, covariance matrices) come from the heap and leave
    holes that malloc_trim cannot return; and each worker thread gets its own arena (up to 8 per
    core) that keeps its high-water mark. A fixed threshold and two arenas keep the server's
    memory near its working set (measured: benchmarks/bench_load.py --rounds)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_ARENA_MAX, 2)
    except (OSError, AttributeError):
        pass


_FROZEN = threading.Lock()
_frozen_once = False


def freeze_long_lived() -> None:
    """Once per server process, before the first session's page is built: collect, then move every
    object alive (the imported modules: Panel, Bokeh, NumPy, numba and its compiled kernels, qpviz)
    to the collector's permanent generation (``gc.freeze``). A full collection then scans only what
    sessions made since: measured on the VSGP page, a 188 ms collection in the middle of a slider
    step (one press in 15 took 280 ms instead of 100). These objects live as long as the server
    anyway; a session's own objects stay collectable (its end collects them,
    :func:`release_freed_memory`)."""
    global _frozen_once
    with _FROZEN:
        if not _frozen_once:
            gc.collect()
            gc.freeze()
            _frozen_once = True


def release_freed_memory() -> None:
    """Collect cycles and hand the heap's free pages back to the system (glibc's malloc_trim):
    a closed session's pages are freed, but glibc keeps freed memory in its arenas, so without
    this the server's resident memory would only ever grow. A no-op where libc is not glibc."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _session_ended(app: pn.viewable.Viewable) -> None:
    forget_js_callbacks(app)
    timer = threading.Timer(RELEASE_DELAY, release_freed_memory)
    timer.daemon = True
    timer.start()


def build() -> pn.Column:
    """The whole app: a title bar (with the projector switch) above one tab per page; the open tab
    and the projector mode are in the URL (?page=...&projector=true).

    (No pn.template: the Fast templates fetch a web font from the internet, which a classroom
    or CI machine without internet access reports as a console error.)
    """
    title = pn.pane.Markdown("## qpviz: Expectation Propagation vs Quantile Propagation", styles={"color": "white"},
                            sizing_mode="stretch_width", margin=(0, 12))

    def connect(page) -> None:
        """The GP pages' "study these data in Variance effects" buttons send there and open it; the
        page takes the header's projector mode."""
        if hasattr(page, "hand_off"):
            page.hand_off.connect(study_in_variance_effects)
        projector.apply(page)

    def study_in_variance_effects(label, X, y, likelihood, kernel) -> None:
        index = pages.titles.index(variance_effects.TITLE)
        pages.page(index).use_data(label, X, y, likelihood, kernel)
        tabs.active = index

    pages = LazyPages(PAGES, connect)
    tabs = pn.Tabs(*[(name, holder) for name, holder in zip(pages.titles, pages.holders)], dynamic=True,
                   sizing_mode="stretch_width")
    projector = ProjectorSwitch(title, tabs, lambda: list(pages.built.values()))  # one mode, every page
    header = pn.Row(title, projector.toggle, styles={"background": "#0072B2"}, sizing_mode="stretch_width")
    url = TabInUrl(tabs, pages.titles)  # a link's ?page= opens its tab
    pages.page(tabs.active)
    tabs.param.watch(lambda event: pages.page(event.new), "active")
    app = pn.Column(header, projector.note, url.banner, tabs, url.holder, sizing_mode="stretch_width")
    app.lazy_pages = pages  # the pages built so far, for tests
    app.projector = projector
    if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
        pn.state.on_session_destroyed(lambda context: _session_ended(app))
    return app
