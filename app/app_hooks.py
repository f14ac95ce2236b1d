"""The dashboard server's start (Bokeh's lifecycle hooks of a directory app: ``panel serve app``
runs :func:`on_server_loaded` once, on the server's event loop, as soon as it listens; a request
that comes meanwhile is answered after it).

Before the first request is answered, the work on the first page that every start does once is
done here: its modules imported, its kernels compiling if they are not yet (a first start:
:func:`dashboard.kernels_ready`, in a child process) and the page's own ``warm_server(kernels)``
run if it has one (the Projection Explorer computes its opening view and map: the map is kept for
every session, and the computation loads its kernels from numba's cache, or runs by NumPy
quadrature while they compile). The first browser's request then only builds its page, and
``scripts/serve``, which prints the URL once the server answers, needs no request of its own that
builds a page (a whole page built and thrown away made a second start 0.8 s longer).
"""
import logging
import sys
import time
from pathlib import Path

#: Bokeh runs this file with app/ on sys.path, but calls the hook after restoring the path.
APP_DIR = str(Path(__file__).resolve().parent)
LOG = logging.getLogger("qpviz.dashboard")


def prepare_first_page() -> str:
    """Import the first page, start compiling its kernels if they are not, and run its
    ``warm_server``; returns what was done, for the log."""
    if APP_DIR not in sys.path:
        sys.path.append(APP_DIR)
    import dashboard  # noqa: PLC0415 - the pages and their kernels

    first = dashboard.PAGES[0]
    kernels = dashboard.kernels_ready(first.__name__)
    warm = getattr(first.module, "warm_server", None)
    return f"{first.TITLE}: " + (warm(kernels) if warm is not None else "imported")


def on_server_loaded(server_context) -> None:
    """Bokeh's hook: :func:`prepare_first_page`, logged; a failure is logged and left to the page
    (it then does the same work itself, and shows the same error to the user)."""
    start = time.perf_counter()
    try:
        done = prepare_first_page()
    except Exception:  # noqa: BLE001 - the server must start whatever this hits
        LOG.exception("qpviz: preparing the first page at the server's start failed")
        return
    LOG.info("qpviz: %s (%.1f s)", done, time.perf_counter() - start)
