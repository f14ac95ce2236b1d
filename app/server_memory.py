"""The dashboard server's memory: what a long-running server does so that it hands freed memory
back to the system and its garbage collections stay short (glibc's malloc tuning, ``gc.freeze`` of
the imports, a collection and ``malloc_trim`` after a session ends).

app/main.py calls :func:`limit_heap_growth` and :func:`freeze_long_lived` for every session
(idempotent), app/dashboard.py :func:`session_started` / :func:`session_ended` and, after its
background import of the pages, :func:`freeze_imports`.
"""
import ctypes
import gc
import threading

import panel as pn
from panel.links import Callback

import pages

__all__ = ["forget_js_callbacks", "limit_heap_growth", "freeze_long_lived", "freeze_imports", "release_freed_memory",
           "session_started", "session_ended"]


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
            pages.PAGES[0].load()  # the first page's imports (the others come later: frozen or not, they live on)
            gc.collect()
            gc.freeze()
            _frozen_once = True


#: Sessions built and not yet ended (session_started / session_ended).
_live_sessions = 0
#: freeze_imports froze while sessions were alive: their objects wait in the permanent generation
#: until release_freed_memory finds no session alive.
_sessions_pinned = False
_imports_frozen = False


def freeze_imports() -> None:
    """Once per process, after the background import of the other pages (:func:`_preload`): freeze
    again (:func:`freeze_long_lived` froze the first page's imports only). Without it a full
    collection also scanned the later pages' modules: measured in-process at load 4-5 over 80
    slider steps of the VSGP and GP 1-D pages, the full collections took 87-307 ms, 44-46 ms with
    them frozen. The sessions alive now are frozen too; :func:`release_freed_memory` collects them
    once no session is alive."""
    global _imports_frozen, _sessions_pinned
    with _FROZEN:
        if _imports_frozen:
            return
        gc.collect()
        gc.freeze()
        _imports_frozen = True
        _sessions_pinned = _live_sessions > 0


def session_started() -> None:
    """A served session has built the app (:func:`session_ended` when it ends)."""
    global _live_sessions
    with _FROZEN:
        _live_sessions += 1


def release_freed_memory() -> None:
    """Collect cycles and hand the heap's free pages back to the system (glibc's malloc_trim):
    a closed session's pages are freed, but glibc keeps freed memory in its arenas, so without
    this the server's resident memory would only ever grow. A no-op where libc is not glibc.

    The first time no session is alive after :func:`freeze_imports` froze some, the permanent
    generation is collected too (and frozen again: nothing of a session is alive then)."""
    global _sessions_pinned
    with _FROZEN:
        if _sessions_pinned and _live_sessions == 0:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            _sessions_pinned = False
        else:
            gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def session_ended(app: pn.viewable.Viewable) -> None:
    """Session ``app`` has ended: its JavaScript callbacks forgotten, its memory handed back soon."""
    global _live_sessions
    with _FROZEN:
        _live_sessions -= 1
    forget_js_callbacks(app)
    timer = threading.Timer(RELEASE_DELAY, release_freed_memory)
    timer.daemon = True
    timer.start()
