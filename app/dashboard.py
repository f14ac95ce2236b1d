"""The qpviz dashboard: one tab per page (app/main.py serves :func:`build` at /app).

Adding a page: write app/<page>.py (``TITLE``, ``URL_KEYS``, ``page()``: see app/pages.py) and
register it in app/pages.py, the registry of the pages in tab order. Bokeh runs app/main.py with
app/ on sys.path, so pages import as top-level modules. A page module is imported when it is first
used (its tab opened, or the background import after the first page has loaded): the server answers
its first page after importing only that page's stack. This is an ordinary module (imported once
per server), not the served script: Bokeh runs the script afresh for each session and empties its
globals when the session ends, so callbacks that outlive a session (e.g. on_session_destroyed) must
live here (the server's memory tuning: app/server_memory.py).

A session builds a page only when its tab is first opened (a page's construction fits models and
may start a long job: twenty classroom sessions opening the app must not all build five pages).
A page whose numerical kernels this server has not compiled or loaded yet (``python -m
qpviz.warmup`` has not finished them: a first start) first shows a "preparing" note while they
compile in a child process (at a low priority; numba's compiler in a thread of the server held
its GIL and slowed every reply), and is built when they are ready; a page registered with
``opens_before_kernels`` (the Projection Explorer) is built at once and computes without them
meanwhile. On a first start every other kernel then compiles in a child process too, after the
first page has loaded (:func:`preload_later`): ``panel serve app`` and ``scripts/serve`` alike.
"""
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import panel as pn

import link_query
import pages as registry
# The pages' custom components (Panel JSComponents), defined before any session's document is
# made. Panel (1.9) sends a component's Bokeh data model with the documents made after its class,
# or with its first use in a session connected while the class was made; a class first made by the
# background import of the pages (preload_later) was unknown to every session opened before it:
# GP 1-D opened from such a session's tab showed "could not resolve type 'CsvUpload1'" and no plots.
import csv_upload  # noqa: F401
import step_keys  # noqa: F401
from one_layout_per_patch import OneLayoutPerPatch
from steady_styles import SteadyStyles
import safe_text
import server_memory
from long_jobs import JobPoller
from pages import tab_slug
from projector_mode import KEY as PROJECTOR_KEY, ProjectorSwitch


class LazyPage:
    """A registered page's module, imported on first use of any attribute but its title (the tab's name)."""

    def __init__(self, info: registry.PageInfo):
        self.info = info
        self.__name__, self.TITLE = info.module, info.title

    @property
    def module(self):
        module = self.info.load()
        if module.TITLE != self.TITLE:
            raise RuntimeError(f"app/{self.__name__}.py: TITLE {module.TITLE!r} differs from app/pages.py's {self.TITLE!r}")
        return module

    def __getattr__(self, name):
        if name == "module" or name.startswith("__"):  # the property itself failed: say so, never recurse
            raise AttributeError(f"{self!r} has no attribute {name!r}")
        return getattr(self.module, name)

    def __eq__(self, other):
        return other is self or getattr(other, "__name__", None) == self.__name__

    def __hash__(self):
        return hash(self.__name__)

    def __repr__(self):
        return f"LazyPage({self.__name__!r})"


#: Every page (app/pages.py), in tab order.
PAGES = [LazyPage(info) for info in registry.PAGES]
VARIANCE_EFFECTS = next(page for page in PAGES if page.__name__ == "variance_effects")  # the GP pages hand data to it

#: The dashboard's log, at INFO like the Bokeh server's own (panel serve sets only Bokeh's logger to INFO).
LOG = logging.getLogger("qpviz.dashboard")
LOG.setLevel(logging.INFO)

_PREPARED: dict[str, Future] = {}
_PREPARED_LOCK = threading.Lock()


#: The server's log line when a page's kernels, compiled on its first use, are ready (+ the target).
KERNELS_READY = "qpviz: kernels compiled in a child process and loaded:"
#: The server's log line when the deferred kernels of a warm start's first page are loaded (+ the target).
KERNELS_LOADED = "qpviz: kernels loaded from numba's cache after the first page:"
#: The server's log line when every kernel is compiled, in the background (:func:`_preload`).
ALL_COMPILED = "qpviz: every page's kernels compiled in the background"


def compile_in_child(target: str) -> bool:
    """Compile the kernels of warm-up ``target`` in a child process (``python -m qpviz.warmup``, one
    process, at a low priority and ending with the server: its sessions and the browser come
    first); its progress lines go to the server's console. Compiled in a thread of the server
    instead, numba's compiler (Python code) held the GIL: the first page's build and every reply
    waited for it. Returns whether it succeeded (a failure is logged)."""
    child = subprocess.run([sys.executable, "-m", "qpviz.warmup", "--what", target, "--jobs", "1", "--background",
                            str(os.getpid())], stderr=subprocess.PIPE, text=True)
    if child.returncode != 0:
        LOG.warning("qpviz: compiling the %s kernels in a child process failed (exit %s); the server compiles them "
                    "where it needs them:\n%s", target, child.returncode, child.stderr[-2000:])
    return child.returncode == 0


def compile_and_load(target: str) -> None:
    """:func:`compile_in_child`, then the kernels loaded here from numba's cache
    (:func:`qpviz.warmup.prepare`: nothing left to compile, unless the child failed)."""
    from qpviz import warmup  # noqa: PLC0415

    start = time.perf_counter()
    compile_in_child(target)
    warmup.prepare(target)
    LOG.info("%s %s (%.1f s)", KERNELS_READY, target, time.perf_counter() - start)


#: The compiled kernels of the pages that open before their kernels (PageInfo.opens_before_kernels),
#: loaded from numba's cache by :func:`load_deferred_kernels` once a first page is shown: (target,
#: future) pairs.
_DEFERRED: list[tuple[str, Future]] = []


def kernels_ready(name: str) -> Future:
    """A future that is done when page ``name``'s kernels are compiled (or loaded) in this process:
    done at once when a finished warm-up is recorded for them, else compiled in a child process
    and loaded by a thread (:func:`compile_and_load`; once for every session that asks).

    A page that opens before its kernels (the Projection Explorer) does not wait for them even on a
    warm start: there its future is done once :func:`load_deferred_kernels` has loaded them from
    numba's cache, after the first page was shown (loading them before cost a warm start's first
    page ~0.4 s of the server's CPU, issue 22 point 4)."""
    from qpviz import warmup  # noqa: PLC0415

    info = registry.info(name)
    target = info.kernels
    with _PREPARED_LOCK:
        future = _PREPARED.get(target)
        if future is None:
            future = _PREPARED[target] = Future()
            warm = target is None or warmup.is_warm(target)
            if warm and (target is None or not info.opens_before_kernels):
                future.set_result(None)
            elif warm:
                _DEFERRED.append((target, future))
            else:
                def prepare():
                    try:
                        compile_and_load(target)
                    except Exception as exc:  # noqa: BLE001 (the page then compiles on first use)
                        future.set_exception(exc)
                    else:
                        future.set_result(None)

                threading.Thread(target=prepare, name=f"qpviz-prepare-{target}", daemon=True).start()
    return future


#: Seconds after a page has loaded before every other QP table's fast form is derived in the
#: background (deriving the Poisson families takes 1-2 s of CPU each): the first page's numbers and
#: plots get the CPU first, and no later page waits for its table.
PRELOAD_DELAY = 5.0


#: The server's log line when the background import is done (the browser tests wait for it).
PRELOADED = "qpviz: QP tables derived and every page imported in the background"


def _preload() -> None:
    """The background work after the first page: every QP table derived and every page imported
    (after the first page's kernels: on a first start they compile in a child process, and the
    tables' derivation is among them), then, on a first start, every other kernel compiled in a
    child process (:func:`compile_in_child`; the pages then load them from numba's cache), once the
    kernels other pages asked for meanwhile are compiled (not twice at once)."""
    from qpviz import tables, warmup  # noqa: PLC0415

    start = time.perf_counter()
    first = kernels_ready(PAGES[0].__name__)
    try:
        first.result()
    except Exception:  # noqa: BLE001 - logged where it failed; the tables then derive here
        pass
    tables.preload(background=False)
    for page in PAGES:  # the other pages' imports, so that opening a tab imports nothing
        page.module
    server_memory.freeze_imports()
    LOG.info("%s (%.1f s)", PRELOADED, time.perf_counter() - start)
    if not warmup.is_warm("all"):
        # a page's kernels still compiling in a child (a first session opened on GP 2-D) are then in
        # numba's cache for the child below: it compiled them a second time alongside (a first start's
        # log: "EP and QP fits" 19.3 s in one child and 5.9 s in the other)
        with _PREPARED_LOCK:
            compiling = [future for future in _PREPARED.values() if not future.done()]
        for future in compiling:
            try:
                future.result()
            except Exception:  # noqa: BLE001 - logged where it failed
                pass
        start = time.perf_counter()
        if compile_in_child("all"):
            LOG.info("%s (%.1f s)", ALL_COMPILED, time.perf_counter() - start)


_PRELOAD_STARTED = threading.Event()


def load_deferred_kernels() -> None:
    """Load the compiled kernels that :func:`kernels_ready` deferred (a warm start's first page) from
    numba's cache, and mark their futures done (a failure is logged: the page then compiles what it
    uses when it uses it)."""
    from qpviz import warmup  # noqa: PLC0415

    with _PREPARED_LOCK:
        deferred = list(_DEFERRED)
        _DEFERRED.clear()
    for target, future in deferred:
        start = time.perf_counter()
        try:
            warmup.prepare(target)
        except Exception as exc:  # noqa: BLE001 - logged; the page computes by NumPy quadrature meanwhile
            LOG.exception("qpviz: loading the %s kernels failed", target)
            future.set_exception(exc)
        else:
            LOG.info("%s %s (%.1f s)", KERNELS_LOADED, target, time.perf_counter() - start)
            future.set_result(None)


def preload_later() -> None:
    """Once per process, when the first page has loaded (every session's onload calls this; one
    thread per session imported the same modules concurrently and, under load, failed): load the
    deferred kernels (:func:`load_deferred_kernels`) in a thread now, and derive every QP table's
    fast form and import every page module in a background thread PRELOAD_DELAY s from now."""
    with _PREPARED_LOCK:
        if _PRELOAD_STARTED.is_set():
            return
        _PRELOAD_STARTED.set()
    threading.Thread(target=load_deferred_kernels, name="qpviz-load-kernels", daemon=True).start()
    timer = threading.Timer(PRELOAD_DELAY, _preload)
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
            link_query.sync(pn.state.location, self.holder, {"value": PAGE_KEY})

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


def _in_session() -> bool:
    """Whether a served session builds (a test's page builds at once, compiling what it uses)."""
    return pn.state.curdoc is not None and pn.state.curdoc.session_context is not None


class LazyPages:
    """One empty holder per tab; a tab's page is built into it the first time the tab is shown.

    In a server session, a page whose kernels are not ready (:func:`kernels_ready`) shows a
    "preparing" note until they are, then is built (a periodic callback of the session polls)."""

    def __init__(self, modules, connect=None):
        """``connect(page)`` wires a newly built page to the others."""
        self.modules = list(modules)
        self.connect = connect
        self.titles = [module.TITLE for module in self.modules]
        self.holders = [pn.Column(sizing_mode="stretch_width", name=title, min_height=400)
                        for title in self.titles]
        self.built: dict[int, pn.viewable.Viewable] = {}
        self.preparing: dict[int, JobPoller] = {}

    def page(self, index: int) -> pn.viewable.Viewable | None:
        """The page of tab ``index``, built now if this session has not built it yet (None while
        its kernels are being prepared)."""
        if index in self.built or index in self.preparing:
            return self.built.get(index)
        ready = kernels_ready(self.modules[index].__name__)
        if not ready.done() and _in_session():
            if registry.info(self.modules[index].__name__).opens_before_kernels:
                return self._build(index, kernels=ready)
            title = self.titles[index]
            # a Markdown pane styled as a note (pn.pane.Alert first drawn in a tab opened later asks
            # the CDN for its stylesheets: console errors offline)
            self.holders[index].objects = [pn.pane.Markdown(
                f"Preparing the {title} page: compiling its numerical kernels (first start only; "
                "later starts load them from the cache) ...", css_classes=["qpviz-preparing"],
                sizing_mode="stretch_width", styles={"background": "#cfe2ff", "border": "1px solid #0072B2",
                                                     "border-radius": "4px", "padding": "0 12px"})]
            poller = self.preparing[index] = JobPoller(lambda: self._prepared(index), lambda: index in self.preparing)
            poller.ensure()
            return None
        return self._build(index)  # ready, or outside a session (a test): the page compiles what it uses

    def _prepared(self, index: int) -> None:
        if kernels_ready(self.modules[index].__name__).done():
            self.preparing.pop(index, None)
            self._build(index)

    def _build(self, index: int, **options) -> pn.viewable.Viewable:
        """Build page ``index`` (``options``: for its ``page()``) into its tab."""
        title, page = self.modules[index].page(**options)
        self.built[index] = page
        self.holders[index].objects = [page]
        if self.connect is not None:
            self.connect(page)
        return page


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
        index = pages.titles.index(VARIANCE_EFFECTS.TITLE)
        pages.preparing.pop(index, None)  # its kernels are those of the GP page that sends: ready
        page = pages.built[index] if index in pages.built else pages._build(index)
        page.use_data(label, X, y, likelihood, kernel)
        tabs.active = index

    def show(index: int) -> None:
        """Tab ``index`` is shown: its page built now, or given the header's mode if the switch
        moved since it was last shown."""
        built = index in pages.built
        page = pages.page(index)
        if built:
            projector.shown(page)

    pages = LazyPages(PAGES, connect)
    tabs = pn.Tabs(*[(name, holder) for name, holder in zip(pages.titles, pages.holders)], dynamic=True,
                   sizing_mode="stretch_width")
    projector = ProjectorSwitch(title, tabs, lambda: pages.built.get(tabs.active))  # one mode, every page
    # SteadyStyles: Bokeh's renderers stop rewriting unchanged stylesheets on every repaint (app/steady_styles.py);
    # OneLayoutPerPatch: one layout per server message, not one per change in it (app/one_layout_per_patch.py)
    header = pn.Row(title, projector.toggle, SteadyStyles(width=0, height=0, margin=0),
                    OneLayoutPerPatch(width=0, height=0, margin=0), styles={"background": "#0072B2"},
                    sizing_mode="stretch_width")
    url = TabInUrl(tabs, pages.titles)  # a link's ?page= opens its tab
    pages.page(tabs.active)
    tabs.param.watch(lambda event: show(event.new), "active")
    app = pn.Column(header, projector.note, url.banner, tabs, url.holder, sizing_mode="stretch_width")
    app.lazy_pages = pages  # the pages built so far, for tests
    app.projector = projector
    if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
        server_memory.session_started()
        pn.state.on_session_destroyed(lambda context: server_memory.session_ended(app))
    return app
