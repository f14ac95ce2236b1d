"""Compile (or load from numba's cache) the kernels a page or a fit needs, ahead of its first use.

``python -m qpviz.warmup [--what explorer|fit|all] [--jobs N]`` runs the steps of
:func:`steps` (each calls qpviz functions on tiny inputs), printing one progress line per step::

    compiling numerical kernels (first run only; later runs load them from the cache) ...
      3/8 closed-form moments (0.4 s)

A finished run leaves a stamp (the sources' fingerprint and the number of cache files) in
``qpviz/__pycache__``; while it holds, later runs return at once (``--force`` runs anyway).

With ``--jobs 2`` (the default when a CPU is idle) the steps run in two processes that share
numba's on-disk cache: each compiled function, callees included, is written as it is finished,
so work done by one process is loaded, not redone, by the other (whatever both start at the same
time is compiled twice). The groups are ordered so that one process compiles the shared core
(the tilted quadrature's panels) while the other compiles what does not need it (likelihood
kernels, the integrals over panels, table lookups); then, once both are done, one process
compiles the EP and QP fits while the other compiles the MCMC reference and the sparse fits
(the fits alone took 17 s of a 43 s warm-up, with the second core idle).

``scripts/serve`` runs ``--what explorer`` beside the server before it prints the URL, and
``--what all`` (the other likelihoods, the fits) after, at a low priority, while the page is in
use (a page opened before that compiles its own with :func:`prepare`, off the server's event loop);
``scripts/_venv.sh`` runs ``--what all`` after a test install (ahead of time). A step that runs
longer than :data:`TICK_SECONDS` prints a line every as many seconds. Nothing here is imported by
``import qpviz``.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

__all__ = ["STEPS", "steps", "run", "prepare", "is_warm", "default_jobs", "main"]

#: Cavity used by the steps (any valid input compiles the same machine code).
_Y, _M, _V = 1.0, 0.5, 2.25
#: the likelihood whose kernels compile first (the explorer's and the fits' first page)
FIRST_LIKELIHOOD = "probit"


def _likelihood(name: str):
    """The explorer's starting ``name`` likelihood (its first preset or defaults) and a valid y."""
    from qpviz import explorer

    lik = explorer.build_likelihood(name, **explorer.initial_params(name))
    return lik, explorer.default_y(lik, _Y)


def _likelihood_kernels(name: str) -> Callable[[], None]:
    def step():
        lik, y = _likelihood(name)
        lik.jit_handle()  # the likelihood's five cfuncs (its moments may need the quadrature: not here)

    return step


def _panel_integrals() -> None:
    """The moment and sigma_QP passes over panels, on zero panels: these compile while the
    other process compiles the panel construction (together they are the quadrature)."""
    import numpy as np

    from qpviz.tilted import moments
    from qpviz.tilted.panels import GL_X

    lik, y = _likelihood("probit")
    lk = lik.jit_handle()
    edges, mass, values = np.empty(0), np.empty(0), np.empty((0, GL_X.size))
    n, anchor, peak = 0, 0.0, 0.0
    moments._moments_from_panels(lk, y, _M, _V, edges, edges, values, mass, n, anchor, peak)
    moments._qp_from_panels(lk, y, _M, _V, edges, edges, values, mass, n, anchor, peak, 1e-12)


def _closed_moments(name: str) -> Callable[[], None]:
    def step():
        lik, y = _likelihood(name)
        lik.tilted_moments(y, _M, _V)  # closed form (or the likelihood's own series): its batch kernel

    return step


def _tilted_core() -> None:
    from qpviz.tilted import tilted_summary

    lik, y = _likelihood("probit")
    tilted_summary(lik, y, _M, _V, want_qp=True)


def _tilted_quantiles() -> None:
    from qpviz.tilted import tilted_quantile

    lik, y = _likelihood("probit")
    tilted_quantile(lik, [0.1, 0.9], y, _M, _V)


def _table_load(name: str) -> Callable[[], None]:
    """The ``name`` table: verified and turned into its fast form (compiles the derivation)."""
    def step():
        from qpviz import tables

        tables.jit_data(_likelihood(name)[0])

    return step


def _qp_variance(name: str) -> Callable[[], None]:
    """The QP-variance batch kernel on a point inside the ``name`` table (no quadrature)."""
    def step():
        from qpviz.projection import qp_variance

        lik, y = _likelihood(name)
        qp_variance(lik, y, _M, _V)

    return step


def _opening_likelihood() -> str:
    """The likelihood of the view the Projection Explorer opens on (its first page)."""
    from qpviz.explorer import OPENING_VIEW

    return OPENING_VIEW["likelihood"]


def _explorer_page() -> None:
    """The explorer's opening view, as the served page computes it, and its map, kept on disk for
    the server's start (qpviz.explorer.opening_view reads it there: a warm start loads no kernel
    before its first page is shown)."""
    from qpviz.explorer import OPENING_VIEW, ExplorerState, ratio_map
    from qpviz.explorer.views import store_ratio_map

    state = ExplorerState(**OPENING_VIEW)
    store_ratio_map(state.likelihood, state.likelihood_params, state.y, ratio_map(state.likelihood_object(), state.y))


def _small_data():
    """12 points on a line and their +-1 labels (the fits' steps)."""
    import numpy as np

    X = np.linspace(-2.0, 2.0, 12)[:, None]
    return X, np.where(np.sin(3.0 * X[:, 0]) > 0, 1.0, -1.0)


def _ep_fit() -> None:
    """EP and QP fits with sequential and parallel site updates (the scalable page's SEP runs the
    parallel kernel; QP's general one compiles for tens of seconds)."""
    import qpviz

    X, y = _small_data()
    for method in ("ep", "qp"):
        for parallel in (False, True):
            qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method=method, parallel=parallel)


def _sparse_fits() -> None:
    """What the Sparse and VSGP pages compile on their first fit: the sparse prior's kernels, the
    sequential Power-EP sweeps (closed-form and general) and the tempered Gauss-Hermite route."""
    from qpviz.inference.site_fit import fit_power_ep
    from qpviz.kernels import RBF

    X, y = _small_data()
    for method in ("ep", "qp"):
        for alpha in (1.0, 0.5):
            fit_power_ep(X, y, "probit", RBF(), method, X[::3], alpha=alpha, warn=False)


def _mcmc_reference() -> None:
    """What the GP 1-D and GP 2-D pages' MCMC reference compiles on its first run: the elliptical
    slice chains, and the tempered chains of a likelihood even in f (Poisson-square)."""
    import numpy as np

    import qpviz
    from qpviz.inference.dense import DensePrior
    from qpviz.inference.mcmc import run_chains
    from qpviz.kernels import RBF

    X, labels = _small_data()
    prior = DensePrior(RBF(), X)
    for name, y in (("probit", labels), ("poisson_square", np.arange(12.0) % 3)):
        run_chains(prior, qpviz.likelihood(name), y, chains=2, n_samples=8, burn_in=2, thin=1)


def steps(what: str) -> list[list[tuple[str, Callable[[], None]]]]:
    """Four groups of (label, step) for ``what``: groups 0 and 1 may run at the same time (see
    the module docstring); groups 2 and 3 run after both, and may run at the same time.

    ``explorer`` is what the explorer's first page needs: the moments and the QP table of the
    likelihood it opens on (:data:`qpviz.explorer.OPENING_VIEW`) and, in its last step (the opening
    view), the tilted quadrature's kernels of its quantiles, W2 and KL (until they are ready the page
    computes by NumPy quadrature); ``fit`` what probit EP and QP fits need; ``sparse`` adds the
    sparse (Power EP / QP) fits (the Sparse and VSGP pages); ``all`` adds the tilted quadrature,
    every other likelihood the page offers, the fits, the sparse fits and the MCMC reference.
    """
    from qpviz.explorer import likelihood_names

    # the explorer opens on its own likelihood (OPENING_VIEW, Poisson-square); the fits start with probit
    firsts = {"explorer": [_opening_likelihood()], "fit": [FIRST_LIKELIHOOD], "sparse": [FIRST_LIKELIHOOD]}.get(
        what, [FIRST_LIKELIHOOD, _opening_likelihood()])
    core = [step for name in firsts for step in ((f"QP table (fast form): {name}", _table_load(name)),
                                                 (f"QP variance (table lookups): {name}", _qp_variance(name)))]
    others = [(f"closed-form moments: {name}", _closed_moments(name)) for name in firsts]
    last = [("explorer page", _explorer_page)] if what in ("explorer", "all") else []
    if what == "all":
        core += [("tilted quadrature: panels", _tilted_core), ("tilted quantiles", _tilted_quantiles)]
        kernels = {name: (f"likelihood kernels: {name}", _likelihood_kernels(name)) for name in likelihood_names()}
        others += [kernels.pop(FIRST_LIKELIHOOD), ("tilted quadrature: integrals over panels", _panel_integrals)]
        rest = list(kernels.values())
        core += rest[::2]
        others += rest[1::2]
    beside = []  # beside the EP and QP fits (which compile for longest): what shares fewest kernels with them
    if what in ("fit", "sparse", "all"):
        last += [("EP and QP fits", _ep_fit)]
    if what == "all":
        beside += [("MCMC reference", _mcmc_reference)]
    if what in ("sparse", "all"):
        beside += [("sparse Power EP and QP fits", _sparse_fits)]
    return [core, others, last, beside]


#: The targets (a page's kernels, a fit's, or all; for the command line, documentation and tests).
STEPS = ("explorer", "fit", "sparse", "all")


def prepare(what: str) -> None:
    """Compile (or load from the cache) in this process, one step after the other, what ``what``
    (a target of :data:`STEPS`) needs; nothing is printed, and the finished run is stamped (a later
    server loads them at once). The dashboard runs ``python -m qpviz.warmup`` in a child process for
    a page opened before a warm-up finished its kernels, then this, which loads them."""
    for group in steps(what):
        run(group, lambda label, seconds: None)
    _write_stamp(what)


#: The line a ``--jobs 2`` worker prints when its first group is done (then it waits for a line on stdin).
GROUP_DONE = "-- group done --"

#: Seconds between two "still compiling" lines of a long step (the console is never silent longer).
TICK_SECONDS = 10.0


def run(group: list[tuple[str, Callable[[], None]]], report: Callable[[str, float], None],
        tick: Callable[[str, float], None] | None = None) -> None:
    """Run the steps of one group, calling ``report(label, seconds)`` after each and, while a step
    runs, ``tick(label, seconds so far)`` every :data:`TICK_SECONDS` (numba's compiler is Python
    code that lets other threads run between its bytecodes, so the ticks come on time)."""
    import warnings

    for label, step in group:
        start = time.perf_counter()
        done = threading.Event()

        def ticks(label=label, start=start, done=done):
            while not done.wait(TICK_SECONDS):
                tick(label, time.perf_counter() - start)

        ticker = threading.Thread(target=ticks, daemon=True) if tick is not None else None
        if ticker is not None:
            ticker.start()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a table warning is the page's business, not ours
                step()
        finally:
            done.set()
        report(label, time.perf_counter() - start)


def _stamp(what: str):
    from qpviz.cache import warmup_stamp

    return warmup_stamp(what)


def _state() -> str:
    """The sources and the number of cache files now (a stamp of a finished warm-up)."""
    from qpviz.cache import cache_files, source_fingerprint

    return f"{source_fingerprint()} {len(cache_files())}"


def is_warm(what: str) -> bool:
    """Whether a warm-up of ``what`` (or of everything) finished for these sources, and no cache
    file has gone since (then a run would only load kernels: it is skipped)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    fingerprint, count = _state().split()
    for name in {what, "all"}:
        try:
            stamped_fingerprint, stamped_count = _stamp(name).read_text().split()
        except (OSError, ValueError):
            continue
        if stamped_fingerprint == fingerprint and int(count) >= int(stamped_count):
            return True
    return False


def _write_stamp(what: str) -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    try:
        _stamp(what).write_text(_state())
    except OSError:  # a read-only installation: the next run checks again
        pass


def default_jobs() -> int:
    """2 when at least one CPU is idle (by the 1-minute load average), else 1: a second process
    on a busy machine only duplicates the compilation of shared callees (measured: 17 s instead
    of 13 s with one core free of other work, 8 s instead of 13 s with two)."""
    cpus = os.cpu_count() or 1
    return 2 if cpus >= 2 and cpus - os.getloadavg()[0] >= 1.0 else 1


#: Seconds between two checks that the process a background warm-up works for is still there.
PARENT_CHECK_SECONDS = 1.0


def _run_in_background_of(parent: int) -> None:
    """A low priority for this process (the server that started it comes first), and a thread that
    ends it when ``parent`` is no longer its parent (the server stopped: a stopped server's warm-up
    went on compiling for tens of seconds). A stamp is written only by a finished run."""
    os.nice(10)

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="qpviz-warmup-parent", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qpviz.warmup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--what", choices=STEPS, default="all", help="which kernels: a page's, a fit's, or all")
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help="processes, 1 or 2 (default: 2 when a CPU is idle by the load average)")
    parser.add_argument("--force", action="store_true", help="run even if a finished warm-up is recorded")
    parser.add_argument("--group", type=int, default=None, help=argparse.SUPPRESS)  # a worker of --jobs 2
    parser.add_argument("--background", type=int, default=None, metavar="PID",
                        help="run at a low priority, and stop when process PID (the one that started this) ends")
    args = parser.parse_args(argv)
    if args.background is not None:
        _run_in_background_of(args.background)
    if args.group is None and not args.force and is_warm(args.what):
        print("numerical kernels: compiled earlier, loaded from numba's cache on first use")
        return 0
    if args.group is not None:  # a worker: one line per finished step (a tick: no time), read by the parent
        def worker_report(label, seconds):
            print(f"{label}\t{seconds:.1f}", flush=True)

        def worker_tick(label, seconds):
            print(f"{label}\t", flush=True)

        groups = steps(args.what)
        run(groups[args.group], worker_report, worker_tick)
        if args.group == 1:  # then group 3, once the parent says group 0 is done too (a line on stdin)
            print(GROUP_DONE, flush=True)
            if sys.stdin.readline():
                run(groups[3], worker_report, worker_tick)
        return 0
    print("compiling numerical kernels (first run only; later runs load them from the cache) ...", flush=True)
    start = time.perf_counter()
    worker = None
    if args.jobs >= 2:  # started first: it imports numba and qpviz while this process does the same
        worker = subprocess.Popen([sys.executable, "-m", "qpviz.warmup", "--what", args.what, "--group", "1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # stopped (scripts/serve's Ctrl-C sends SIGTERM): stop the worker too
        signal.signal(signal.SIGTERM, lambda signum, frame: (worker.terminate(), sys.exit(128 + signum)))
    groups = steps(args.what)
    total = sum(len(g) for g in groups)
    done = 0
    lock = threading.Lock()

    def report(label: str, seconds: float) -> None:
        nonlocal done
        with lock:
            done += 1
            print(f"  {done}/{total} {label} ({seconds:.1f} s)", flush=True)

    def tick(label: str, seconds: float) -> None:
        with lock:
            print(f"    ... {label}: still compiling ({time.perf_counter() - start:.0f} s in all)", flush=True)

    if worker is not None:
        others_done = threading.Event()

        def relay():
            try:
                for line in worker.stdout:
                    if line.rstrip("\n") == GROUP_DONE:
                        others_done.set()
                        continue
                    label, seconds = line.rstrip("\n").split("\t")
                    if seconds:
                        report(label, float(seconds))
                    else:
                        tick(label, 0.0)
            finally:
                others_done.set()  # the worker ended (or failed) before its group 1 was done

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        try:
            run(groups[0], report, tick)
            others_done.wait()  # groups 2 and 3 use what groups 0 and 1 compile
            try:
                worker.stdin.write("go\n")
                worker.stdin.flush()
            except OSError:  # the worker is gone: its wait() below says so
                pass
            run(groups[2], report, tick)
        finally:
            try:
                worker.stdin.close()  # without "go" (this process failed), the worker ends after group 1
            except OSError:
                pass
            reader.join()
            worker_failed = worker.wait() != 0
        if worker_failed:
            print("warm-up worker failed; its steps run here", file=sys.stderr)
            run(groups[1] + groups[3], report, tick)
    else:
        run(groups[1], report, tick)  # the cheap kernels first: the progress moves at once
        run(groups[0], report, tick)
        run(groups[2] + groups[3], report, tick)
    _write_stamp(args.what)
    print(f"numerical kernels ready ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
