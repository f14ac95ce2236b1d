"""app/dashboard.py (served by app/main.py) without a browser: pages are built when their tab
is first opened, and the GP pages hand their data to Variance effects."""
from __future__ import annotations

import functools
import os
import sys
import types

import numpy as np
import panel as pn
import pytest

import gp_1d
import dashboard
import pages as registry
import server_memory
import variance_effects
from safe_text import shown


def tabs_of(app: pn.Column) -> pn.Tabs:
    return next(obj for obj in app.objects if isinstance(obj, pn.Tabs))


def test_only_the_open_tab_is_built_and_a_tab_is_built_once():
    app = dashboard.build()
    tabs = tabs_of(app)
    assert [len(holder.objects) for holder in tabs.objects] == [1] + [0] * (len(dashboard.PAGES) - 1)  # the first tab's page only
    assert list(app.lazy_pages.built) == [0]
    tabs.active = 1
    gp_page = app.lazy_pages.built[1]
    assert isinstance(gp_page, gp_1d.GP1DPage)
    tabs.active = 0
    tabs.active = 1
    assert app.lazy_pages.built[1] is gp_page  # built once: its state survives tab switches
    assert [len(holder.objects) for holder in tabs.objects] == [1, 1] + [0] * (len(dashboard.PAGES) - 2)
    gp_page.model.cancel_job(quiet=True)  # its default MCMC reference


def test_gp_1d_data_go_to_variance_effects_with_their_model():
    app = dashboard.build()
    tabs = tabs_of(app)
    tabs.active = 1
    gp_page = app.lazy_pages.built[1]
    assert gp_page.hand_off.button.visible
    gp_page.model.param.update(preset="coal-mining disasters")
    gp_page.hand_off.button.clicks += 1
    index = dashboard.PAGES.index(variance_effects)
    assert tabs.active == index
    ve_page = app.lazy_pages.built[index]
    try:
        assert ve_page.model.dataset == "GP 1-D: coal-mining disasters"
        sent = ve_page.model.own_data[ve_page.model.dataset]
        np.testing.assert_array_equal(sent["X"], gp_page.model.X)
        np.testing.assert_array_equal(sent["y"], gp_page.model.y)
        assert sent["likelihood"] == gp_page.model.likelihood_object()
        assert sent["kernel"].params == gp_page.model.kernel_object().params
    finally:
        ve_page.model.cancel()
        gp_page.model.cancel_job(quiet=True)


def test_a_page_alone_has_no_hand_off_button():
    page = gp_1d.GP1DPage()
    page.model.cancel_job(quiet=True)
    assert not page.hand_off.button.visible


def test_a_closed_session_leaves_no_widget_in_panels_callback_registry():
    """Panel's Callback.registry would keep each page with a JS callback alive forever (its values
    refer to their keys); forget_js_callbacks, run when the session ends, drops the app's entries."""
    from panel.links import Callback  # noqa: PLC0415

    app = dashboard.build()
    tabs = tabs_of(app)
    tabs.active = 1  # GP 1-D: EditableFloatSliders and export buttons have JS callbacks
    app.lazy_pages.built[1].model.cancel_job(quiet=True)
    mine = [obj for obj in app.select() if obj in Callback.registry]
    assert mine, "the test needs widgets with JS callbacks"
    server_memory.forget_js_callbacks(app)
    assert not any(obj in Callback.registry for obj in app.select())


def test_a_rendered_explorer_page_is_freed_when_its_session_ends():
    """HoloViews keeps plot hooks in a global options store: a hook bound to the page kept every
    closed explorer session (figures, widgets, data) alive for the life of the server."""
    import gc  # noqa: PLC0415
    import weakref  # noqa: PLC0415

    from bokeh.document import Document  # noqa: PLC0415

    app = dashboard.build()
    page = app.lazy_pages.built[0]  # the Projection Explorer opens first
    assert type(page).__name__ == "ProjectionExplorer"
    from types import SimpleNamespace  # noqa: PLC0415

    from panel.io.document import _cleanup_doc  # noqa: PLC0415 - what Panel runs when a session ends

    doc = Document()
    app.server_doc(doc)  # rendered as `panel serve` renders a session
    assert page._map_figure.document is doc, "the test needs the page rendered into the session's document"
    alive = weakref.ref(page)
    _cleanup_doc(doc)
    pn.state._destroy_session(SimpleNamespace(id="closed", _document=doc))  # Panel's session-end hook
    server_memory.forget_js_callbacks(app)
    del app, page, doc
    gc.collect()
    assert alive() is None


def test_long_lived_objects_are_frozen_once_per_process(monkeypatch):
    """server_memory.freeze_long_lived moves what is alive to the permanent generation the first time
    only (app/main.py calls it for every session); later objects stay collectable."""
    import gc

    monkeypatch.setattr(server_memory, "_frozen_once", False)
    freezes, freeze = [], gc.freeze
    # (counted, not read off gc.get_freeze_count(): a thread of an earlier test that frees a frozen
    # object between the two calls lowers that count; under load it did)
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append("freeze") or freeze())
    gc.unfreeze()
    try:
        server_memory.freeze_long_lived()
        assert len(freezes) == 1 and gc.get_freeze_count() > 0
        later = [[] for _ in range(100)]  # new objects after the first call
        server_memory.freeze_long_lived()
        assert len(freezes) == 1 and later  # not frozen again: the later objects stay collectable
    finally:
        gc.unfreeze()  # the rest of the test run keeps its usual collections


def test_the_later_imports_are_frozen_once_and_a_session_frozen_with_them_is_collected_when_none_is_alive(monkeypatch):
    """server_memory.freeze_imports (after the background import) freezes what is alive once; a
    session alive then is not kept for ever: the first release with no session alive collects it."""
    import gc
    import weakref

    class SessionObject:
        pass

    monkeypatch.setattr(server_memory, "_imports_frozen", False)
    monkeypatch.setattr(server_memory, "_sessions_pinned", False)
    monkeypatch.setattr(server_memory, "_live_sessions", 1)
    gc.unfreeze()
    try:
        session = SessionObject()
        session.cycle = session  # only the cyclic collector frees it
        alive = weakref.ref(session)
        server_memory.freeze_imports()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        server_memory.freeze_imports()  # once per process (every session's preload calls it)
        assert gc.get_freeze_count() == frozen
        del session  # the session ends while another is alive: its objects stay frozen
        server_memory.release_freed_memory()
        assert alive() is not None
        monkeypatch.setattr(server_memory, "_live_sessions", 0)  # no session alive: collected, the rest frozen again
        server_memory.release_freed_memory()
        assert alive() is None and gc.get_freeze_count() > 0 and not server_memory._sessions_pinned
    finally:
        gc.unfreeze()


def test_one_projector_switch_sets_every_page_built_now_or_later():
    app = dashboard.build()
    tabs, switch = tabs_of(app), app.projector
    explorer_page = app.lazy_pages.built[0]
    assert not explorer_page.projector and switch.holder.value == "false"
    switch.toggle.value = True
    assert explorer_page.projector and switch.holder.value == "true"  # the URL's value
    assert switch.tabs.stylesheets and switch.header.styles["font-size"] == "150%"
    tabs.active = 1
    gp_page = app.lazy_pages.built[1]
    try:
        assert gp_page.projector  # built after the switch moved: takes its mode
        switch.toggle.value = False
        assert not gp_page.projector and not switch.tabs.stylesheets
        # the page out of view is restyled when it is shown again, not with the page in view
        assert explorer_page.projector
        tabs.active = 0
        assert not explorer_page.projector
        tabs.active = 1
        assert not gp_page.projector  # the mode it has: not set again
    finally:
        gp_page.model.cancel_job(quiet=True)


def test_a_links_projector_value_is_read_and_a_bad_one_named_as_text():
    app = dashboard.build()
    switch = app.projector
    switch.holder.value = "On"
    assert switch.toggle.value and app.lazy_pages.built[0].projector and not switch.note.visible
    switch.holder.value = "<b>yes</b>"
    assert not switch.toggle.value and switch.note.visible and switch.holder.value == "false"
    assert "projector='<b>yes</b>' is no switch position" in shown(switch.note.object)
    switch.toggle.value = True  # the reader has moved on: the banner goes
    assert not switch.note.visible


def test_a_link_to_no_page_names_it_and_the_valid_pages_and_the_url_says_the_page_shown():
    """Issue 21: ?page=nope opened the first page silently and kept page=nope in the URL."""
    import panel as pn  # noqa: PLC0415

    from safe_text import shown  # noqa: PLC0415

    tabs = pn.Tabs(("GP 1-D", pn.Column()), ("GP 2-D", pn.Column()))
    url = dashboard.TabInUrl(tabs, ["GP 1-D", "GP 2-D"])
    url.holder.value = "nope<b>"
    assert url.holder.value == "gp-1-d" and tabs.active == 0 and url.banner.visible
    assert shown(url.banner.object) == "The link's page=nope<b> is not a page of this app (valid: gp-1-d, gp-2-d); showing gp-1-d."
    url.holder.value = "gp-2-d"  # a later good link or click: the banner goes
    assert tabs.active == 1 and not url.banner.visible


def test_a_page_whose_kernels_are_not_ready_says_preparing_then_is_built(monkeypatch):
    """A first start (issue 22.3): the tab shows a note while its kernels compile off the event
    loop, and the page is built once they are ready, never before."""
    from concurrent.futures import Future

    from safe_text import shown

    future = Future()
    monkeypatch.setattr(dashboard, "kernels_ready", lambda name: future)
    monkeypatch.setattr(dashboard, "_in_session", lambda: True)
    pages = dashboard.LazyPages(dashboard.PAGES)
    index = pages.titles.index("GP 1-D")
    assert pages.page(index) is None
    (note,) = pages.holders[index].objects
    assert "Preparing the GP 1-D page" in shown(note.object) and index not in pages.built
    pages._prepared(index)  # a poll before the kernels are ready builds nothing
    assert index not in pages.built and pages.page(index) is None
    future.set_result(None)
    pages._prepared(index)
    page = pages.built[index]
    assert note not in pages.holders[index].objects and len(pages.holders[index].objects) == 1
    assert pages.page(index) is page
    page.model.cancel_job() if hasattr(page.model, "cancel_job") else None


def test_the_explorer_opens_at_once_while_its_kernels_compile_then_uses_them(monkeypatch):
    """A first start (issue 22.4): the Projection Explorer (registered opens_before_kernels) is built
    at once, computing by NumPy quadrature, and its views use the kernels once they are ready; a
    page without the flag still waits behind its note (the test above)."""
    from concurrent.futures import Future

    future = Future()
    monkeypatch.setattr(dashboard, "kernels_ready", lambda name: future)
    monkeypatch.setattr(dashboard, "_in_session", lambda: True)
    pages = dashboard.LazyPages(dashboard.PAGES)
    index = pages.titles.index("Projection Explorer")
    assert registry.info("projection_explorer").opens_before_kernels
    assert [info.module for info in registry.PAGES if info.opens_before_kernels] == ["projection_explorer"]
    page = pages.page(index)
    assert pages.built[index] is page and len(pages.holders[index].objects) == 1 and index not in pages.preparing
    assert page.state.engine == "numpy" and page.state.result.summary["var_qp"] < page.state.result.summary["var_ep"]
    future.set_result(None)  # the kernels are ready: the next views use them
    assert page.state.engine == "auto"
    assert page.state.update(cavity_mean=0.3) and page.state.result.summary["mean"] != 0.3


def test_kernels_compile_in_a_low_priority_child_then_load_here(monkeypatch, caplog):
    """dashboard.compile_and_load: ``python -m qpviz.warmup`` in a child process, in the background of
    this one (low priority, ends with it), then the kernels loaded here; a failed child is logged and
    the kernels compile here."""
    import subprocess  # noqa: PLC0415

    from qpviz import warmup  # noqa: PLC0415

    runs, loaded = [], []
    returncode = {"value": 0}
    monkeypatch.setattr(subprocess, "run", lambda command, **options: runs.append(command) or
                        subprocess.CompletedProcess(command, returncode["value"], "", "numba exploded"))
    monkeypatch.setattr(warmup, "prepare", loaded.append)
    with caplog.at_level("INFO", logger="qpviz.dashboard"):
        dashboard.compile_and_load("fit")
    assert runs == [[sys.executable, "-m", "qpviz.warmup", "--what", "fit", "--jobs", "1", "--background",
                     str(os.getpid())]]
    assert loaded == ["fit"] and f"{dashboard.KERNELS_READY} fit" in caplog.text
    returncode["value"] = 1
    caplog.clear()
    with caplog.at_level("INFO", logger="qpviz.dashboard"):
        dashboard.compile_and_load("sparse")
    assert loaded == ["fit", "sparse"]
    assert "compiling the sparse kernels in a child process failed (exit 1)" in caplog.text and "numba exploded" in caplog.text


@pytest.mark.parametrize("warm", [True, False])
def test_the_background_work_waits_for_the_first_pages_kernels_then_compiles_the_rest_if_not_warm(monkeypatch, warm):
    """dashboard._preload: the first page's kernels first (on a first start the tables' derivation
    is among them), then the tables and the pages, then, unless a finished warm-up of everything is
    recorded, every other kernel in a child process."""
    from concurrent.futures import Future

    from qpviz import tables, warmup  # noqa: PLC0415

    done = []
    first = Future()
    monkeypatch.setattr(dashboard, "kernels_ready", lambda name: done.append(f"asked {name}") or first)
    monkeypatch.setattr(first, "result", lambda: done.append("waited") or None)
    monkeypatch.setattr(tables, "preload", lambda background: done.append("tables"))
    monkeypatch.setattr(server_memory, "freeze_imports", lambda: done.append("frozen"))
    monkeypatch.setattr(warmup, "is_warm", lambda what: warm if what == "all" else pytest.fail(what))
    monkeypatch.setattr(dashboard, "compile_in_child", lambda target: done.append(f"compiled {target}") or True)
    # another page's kernels compiling in a child meanwhile: the full compile waits for them (they are
    # then in numba's cache), so as not to compile them a second time alongside
    other = Future()
    monkeypatch.setattr(other, "result", lambda: done.append("waited fit") or None)
    monkeypatch.setattr(dashboard, "_PREPARED", {"explorer": first, "fit": other})
    dashboard._preload()
    assert done == ["asked projection_explorer", "waited", "tables", "frozen"] + (
        [] if warm else ["waited", "waited fit", "compiled all"])


@pytest.mark.parametrize("ready", [True, False])
def test_the_server_start_hook_computes_the_first_pages_view_and_map(monkeypatch, ready):
    """app/app_hooks.py: before the first request, the first page imported and its opening view and
    map computed, with the kernels when they are ready, else by NumPy quadrature (then compiling)."""
    from concurrent.futures import Future

    import app_hooks  # noqa: PLC0415
    import projection_explorer  # noqa: PLC0415
    from qpviz import explorer  # noqa: PLC0415

    future = Future()
    if ready:
        future.set_result(None)
    asked = []
    monkeypatch.setattr(dashboard, "kernels_ready", lambda name: asked.append(name) or future)
    from qpviz.explorer import state as explorer_state  # noqa: PLC0415

    engines, stored = [], []
    real = explorer_state.cached_ratio_map
    monkeypatch.setattr(explorer_state, "cached_ratio_map",
                        lambda *args, engine: engines.append(engine) or real(*args, engine=engine))
    monkeypatch.setattr(explorer_state, "stored_ratio_map", lambda *args: None)  # no map on disk (below: one)
    monkeypatch.setattr(explorer_state, "store_ratio_map", lambda *args: stored.append(args[:3]))
    explorer.RATIO_MAP_CACHE.clear()
    done = app_hooks.prepare_first_page()
    assert asked == ["projection_explorer"] and engines == ["auto" if ready else "numpy"]
    assert stored == ([("poisson_square", {}, 10.0)] if ready else [])  # only the kernels' map is kept on disk
    assert done.startswith("Projection Explorer: opening view and map computed")
    assert ("NumPy quadrature" in done) == (not ready)
    opening = explorer.ExplorerState(**explorer.OPENING_VIEW)
    key = (opening.likelihood, tuple(sorted(opening.likelihood_params.items())), float(opening.y))
    assert explorer.RATIO_MAP_CACHE.get_recent(key) is not None  # the first page's map is not computed again
    assert dashboard.PAGES[0].warm_server is projection_explorer.warm_server  # the hook ran the first page's


def test_a_warm_start_shows_the_first_page_before_loading_its_kernels(monkeypatch, caplog):
    """Issue 22.4: on a warm start the Projection Explorer's kernels (compiled, on disk) load after the
    first page is shown: kernels_ready defers them (the hook computes the opening view by NumPy
    quadrature, its map read from disk), the first session's onload loads them in a thread and
    the pages then follow them; a page without opens_before_kernels is ready at once."""
    import app_hooks  # noqa: PLC0415
    import projection_explorer  # noqa: PLC0415

    from qpviz import explorer, warmup  # noqa: PLC0415
    from qpviz.explorer import state as explorer_state  # noqa: PLC0415

    monkeypatch.setattr(dashboard, "_PREPARED", {})
    monkeypatch.setattr(dashboard, "_DEFERRED", [])
    monkeypatch.setattr(warmup, "is_warm", lambda what: True)
    loaded = []
    monkeypatch.setattr(warmup, "prepare", loaded.append)
    assert dashboard.kernels_ready("gp_1d").done()
    first = dashboard.kernels_ready("projection_explorer")
    assert not first.done() and dashboard._DEFERRED == [("explorer", first)]
    assert dashboard.kernels_ready("projection_explorer") is first  # once for every session that asks
    opening = explorer.ExplorerState(**explorer.OPENING_VIEW)
    data = explorer.cached_ratio_map(opening.likelihood, opening.likelihood_params, opening.y)
    explorer.RATIO_MAP_CACHE.clear()
    monkeypatch.setattr(explorer_state, "stored_ratio_map", lambda *args: data)
    monkeypatch.setattr(explorer_state, "cached_ratio_map", lambda *args, **options: pytest.fail("computed the map"))
    assert app_hooks.prepare_first_page() == ("Projection Explorer: opening view and map computed by NumPy quadrature; "
                                              "its kernels load after the first page")
    monkeypatch.setattr(dashboard, "_in_session", lambda: True)
    page = dashboard.LazyPages(dashboard.PAGES).page(0)
    assert isinstance(page, projection_explorer.ProjectionExplorer) and page.state.engine == "numpy" and loaded == []
    with caplog.at_level("INFO", logger="qpviz.dashboard"):
        dashboard.load_deferred_kernels()  # what the first session's onload starts (preload_later)
    assert loaded == ["explorer"] and first.done() and page.state.engine == "auto"
    assert f"{dashboard.KERNELS_LOADED} explorer" in caplog.text and dashboard._DEFERRED == []


def test_a_page_module_that_fails_to_import_raises_its_error_not_a_recursion(monkeypatch):
    lazy = dashboard.LazyPage(registry.PageInfo("no_such_qpviz_page", "Nowhere"))
    with pytest.raises(ModuleNotFoundError):
        lazy.page  # an attribute of the page: the import's own error
    # a module without its TITLE (as a half-initialised one looks): an AttributeError, not a RecursionError
    monkeypatch.setitem(sys.modules, "half_qpviz_page", types.ModuleType("half_qpviz_page"))
    with pytest.raises(AttributeError):
        dashboard.LazyPage(registry.PageInfo("half_qpviz_page", "Half")).page


def test_the_background_preload_starts_once_per_process(monkeypatch):
    started = []

    class CountingTimer:
        def __init__(self, delay, function):
            started.append(function)
            self.daemon = False

        def start(self):
            pass

    class CountingThread(CountingTimer):
        def __init__(self, target, name, daemon):
            started.append(target)

    monkeypatch.setattr(dashboard.threading, "Timer", CountingTimer)
    monkeypatch.setattr(dashboard.threading, "Thread", CountingThread)
    monkeypatch.setattr(dashboard, "_PRELOAD_STARTED", dashboard.threading.Event())
    for _ in range(3):  # every session's onload calls it
        dashboard.preload_later()
    assert started == [dashboard.load_deferred_kernels, dashboard._preload]


def test_the_registry_names_each_page_once_and_its_module_agrees():
    """app/pages.py is where a page is named: its module's TITLE and builder's title are the
    registration's, each page has URL keys, and a second registration of a module or slug fails."""
    assert [page.__name__ for page in dashboard.PAGES] == [info.module for info in registry.PAGES]
    assert len({info.slug for info in registry.PAGES}) == len(registry.PAGES) >= 8
    for info in registry.PAGES:
        module = info.load()
        assert module.TITLE == info.title and registry.by_slug(info.slug) is info
        assert callable(module.page) and dashboard.url_keys(module)
    with pytest.raises(ValueError, match="has its module or slug"):
        registry.register("gp_1d_again", "GP 1-D")
    with pytest.raises(KeyError, match="not a registered page"):
        registry.title("no_such_page")


@functools.cache
def dashboard_start_in_a_new_process() -> tuple[str, str, str]:
    """One new Python process in app/ (as a server starts) imports the dashboard and the registry,
    then every page: (the registered page modules imported by then, the custom component classes
    made by then, those first made by the pages' imports), each as printed. Both tests below read
    it (one process start instead of two, when they run in the same worker)."""
    import subprocess  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    app = Path(registry.__file__).parent
    code = ("import sys, dashboard, pages\n"
            "print(sorted(p.module for p in pages.PAGES if p.module in sys.modules))\n"
            "from panel.reactive import ReactiveCustomBase\n"
            "def made():\n"
            "    found, todo = set(), [ReactiveCustomBase]\n"
            "    while todo:\n"
            "        cls = todo.pop()\n"
            "        for sub in cls.__subclasses__():\n"
            "            todo.append(sub)\n"
            "            if not sub.__module__.startswith(('panel.', 'bokeh.')):\n"
            "                found.add(f'{sub.__module__}.{sub.__qualname__}')\n"
            "    return found\n"
            "before = made()\n"
            "for info in pages.PAGES: info.load()\n"
            "print(sorted(before)); print(sorted(made() - before))")
    done = subprocess.run([sys.executable, "-c", code], cwd=app, capture_output=True, text=True, check=True)
    imported, before, later = done.stdout.strip().splitlines()
    return imported, before, later


def test_starting_the_dashboard_imports_no_page_module():
    """The registry is light: a server's start imports a page only when it is used."""
    imported, _, _ = dashboard_start_in_a_new_process()
    assert imported == "[]"


def test_every_custom_component_class_exists_before_any_page_is_imported():
    """Panel sends a custom component's data model only with the documents made after its class (or
    with its first use in a session connected while the class was made): a class first made by the
    background import of the pages was unknown to the sessions opened before it ("could not resolve
    type 'CsvUpload1'", GP 1-D's tab empty). So importing the dashboard, as app/main.py does before
    the first document, makes them all, and importing every page afterwards makes none."""
    _, before, later = dashboard_start_in_a_new_process()
    assert "csv_upload.CsvUpload" in before and "step_keys.StepKeys" in before
    assert later == "[]", f"custom components first made by a page's import (import them in app/dashboard.py): {later}"


def test_no_page_module_imports_another_page():
    """Pages share helper modules (layout, figures, number fields), never each other: a page's
    imports, at module level or inside a function, name no other registered page."""
    import ast  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    app = Path(registry.__file__).parent
    names = {info.module for info in registry.PAGES}
    for info in registry.PAGES:
        tree = ast.parse((app / f"{info.module}.py").read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        assert not imported & (names - {info.module}), f"app/{info.module}.py imports {imported & names}"


def test_a_projector_switch_is_one_message_with_one_recount_of_the_sessions_models(monkeypatch):
    """A switch, and a page built when its tab opens, restyle in one update. Each stylesheet the
    switch gives a control made Bokeh recount every model of the session (~20 recounts of ~40 ms for
    one page); frozen (projector_mode.one_update), one at the end."""
    from bokeh.document import Document
    from bokeh.document.models import DocumentModelManager

    doc = Document()
    monkeypatch.setattr(pn.state, "curdoc", doc)
    app = dashboard.build()
    doc.add_root(app.get_root(doc))
    recounts = []
    recompute = DocumentModelManager.recompute
    monkeypatch.setattr(DocumentModelManager, "recompute", lambda self: (recounts.append(1), recompute(self))[1])
    app.projector.toggle.value = True
    explorer_page = app.lazy_pages.built[0]
    assert explorer_page.projector and len(recounts) == 1
    # the new stylesheets are the document's models (counted at the end, not lost)
    from explorer_widgets import PROJECTOR_WIDGET_CSS

    enlarged = [part for part in app.select(pn.widgets.Widget) if PROJECTOR_WIDGET_CSS in part.stylesheets]
    assert enlarged
    known = {id(model) for model in doc.models}
    sheets = [sheet for part in enlarged for model, _ in part._models.values() for sheet in model.stylesheets
              if not isinstance(sheet, str)]
    assert sheets and all(id(sheet) in known for sheet in sheets)
    # a page built when its tab opens takes the mode in one update too (GP 1-D: 29 recounts before)
    recounts.clear()
    tabs_of(app).active = 1
    gp_page = app.lazy_pages.built[1]
    try:
        assert gp_page.projector and len(recounts) <= MOST_RECOUNTS_OPENING_A_TAB, len(recounts)
    finally:
        gp_page.model.cancel_job(quiet=True)


#: Recounts of the session's models when a tab's page is built (measured: 3-4 for every page; GP 1-D 29
#: and Sparse 23 when each stylesheet of the new page's controls made one).
MOST_RECOUNTS_OPENING_A_TAB = 6
