"""Fixtures shared by the whole test suite.

Browser-only fixtures (the served app, Chromium launch options) live in tests/browser/conftest.py.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

#: The variables that set the BLAS libraries' thread count, each set to 1 for the test run unless
#: already set (as benchmarks/check.py does).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """One BLAS thread in this process and in every process it starts (the xdist workers, the
    subprocesses of the tests), unless the variables are set already. The run already keeps every
    core busy with one worker each; OpenBLAS's own threads then spin-wait for a core (qpviz/_blas.py):
    test_sep, test_sparse_regression and test_fit_sparse on 2 workers took 85-287 s of wall time
    with the library's default threads and 7-8 s with one (load 6-8, issue 22.6)."""
    unset = [name for name in BLAS_THREAD_VARIABLES if name not in os.environ]
    for name in unset:
        os.environ[name] = "1"
    if "OPENBLAS_NUM_THREADS" in unset:  # the BLAS NumPy loaded before this ran
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


def pytest_configure(config):
    """One BLAS thread per test process (:func:`one_blas_thread`; before xdist starts its workers),
    and numba caches written for other sources dropped before any kernel loads (the explicit step
    of qpviz/cache.py; ``import qpviz`` itself never touches them)."""
    from qpviz.cache import drop_stale_caches

    one_blas_thread()
    drop_stale_caches()


#: Tests known to take long (seconds per case measured with 2 workers on a loaded machine, issue 22.6),
#: by the start of their node id. pytest-xdist hands tests out in collection order, so these go first:
#: the workers then share them and finish together instead of one worker ending on a long test alone.
SLOW_FIRST = {
    "tests/browser/test_hostile_inputs.py::test_every_typed_number_box": 20,  # 9-16 s a call (60 before 2026-11-27)
    "tests/browser/test_script_injection.py::test_a_link_value_is_shown_as_text": 10,
    "tests/gpdemo/test_mcmc_reference_presets.py::test_reference_agrees_with_ep_and_reports_its_diagnostics[Poisson": 25,
    # a server of its own, its background import awaited, then every tab clicked (35 s)
    "tests/browser/test_page_links.py::test_a_session_opened_before_the_background_import": 35,
    # a server of its own on an empty numba cache, kept until its kernels are compiled
    "tests/browser/test_explorer_page.py::test_a_first_start": 25,
    "tests/browser/test_script_injection.py": 20,
    "tests/browser/test_layout.py": 15,
    # the slider, a click's point added and removed (a reload between), then projector mode: one load
    "tests/browser/test_gp2d_page.py::test_slider_refits_and_redraws_a_click_adds_then_removes_a_point": 30,
    # an MCMC reference run in the server (12-14 s each in the suite, load 3-5): not left for the end
    "tests/browser/test_gp2d_page.py::test_mcmc_reference_runs_with_progress": 14,
    "tests/browser/test_gp2d_page.py::test_a_link_with_mcmc_starts_the_reference": 12,
    "tests/browser/": 8,
    # child processes and subprocesses (spawned Python, imports, numba caches): 20-60 s each on 2
    # workers at load 5-8, 4-7 s alone; started early so that none of them ends the run alone
    "tests/reproduce/test_reproduce_sep.py::test_sep_digits_same_test_error_on_one_and_two_dask_workers": 24,
    # a child process compiling the explorer's kernels into an empty numba cache: 26 s in the suite
    "tests/test_warmup.py::test_the_explorer_target_leaves_nothing_for_the_first_page_to_compile": 26,
    "tests/gpdemo/test_scalable_demo.py::test_stop_ends_a_run_and_reports_stopped": 23,
    "tests/gpdemo/test_scalable_demo.py::test_gfitc_run_in_a_child_sends_start_entries_and_done_in_order": 22,
    "tests/gpdemo/test_scalable_model.py::test_a_short_run_is_drained_until_done_with_its_curve_points": 22,
    "tests/gpdemo/test_scalable_model.py::test_stop_ends_a_run": 22,
    "tests/reproduce/test_reproduce.py::test_ctrl_c_stops_at_once_and_leaves_a_consistent_cache": 18,
    "tests/gpdemo/test_scalable_demo.py::test_a_short_stochastic_run_in_a_child_ends_done_with_entries": 17,
    "tests/inference/test_dask_cluster.py": 10,
    "tests/reproduce/test_reproduce.py::test_cli_smoke_run_on_wine1": 12,
    "tests/inference/test_svi.py::test_stochastic_training_gets_close_to_batch_and_records_its_history": 12,
    "tests/reproduce/test_datasets_packaged.py::test_features_run_without_the_benchmark_folder": 12,
}


def _expected_seconds(item) -> float:
    return max((s for start, s in SLOW_FIRST.items() if item.nodeid.startswith(start)), default=0)


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject's addopts): one worker per core and one more. A browser test waits on its
    browser and its server for part of its time, so one worker per core left the cores 11% idle over a
    whole run (vmstat, 2 cores); with three workers 2.5%, and the suite took 517 s instead of 588 s
    (2026-11-27, same machine, back to back)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 1


def pytest_collection_modifyitems(config, items):
    """Slow tests first, the slowest first (a stable sort: the rest keep their order)."""
    items.sort(key=lambda item: -_expected_seconds(item))


@pytest.fixture
def rng() -> np.random.Generator:
    """A freshly seeded generator per test (no global seeds anywhere)."""
    return np.random.default_rng(20240611)


#: The longest a test's teardown waits for the long jobs it left running to stop (a cancelled MCMC
#: job stops after its current chain).
LEFT_JOBS_WAIT = 60.0


def _cancel_left_jobs() -> None:
    """Cancel every long job (qpviz.gpdemo.jobs) still running when a test ends and wait until they
    stop. A page a test built (or a model it refitted) starts MCMC references and optimisations in
    the process's job pool; nothing stopped those the test did not wait for, so they went on in the
    pool's two threads through the next tests on the same worker: the CPU they took slowed those
    tests, and a test that waits for its own job queued behind them."""
    jobs = sys.modules.get("qpviz.gpdemo.jobs")
    if jobs is None:
        return
    left = [job for job in list(jobs.RUNNING.values()) if not job["future"].done()]
    for job in left:
        jobs.cancel(job)
    from concurrent.futures import wait  # noqa: PLC0415

    wait([job["future"] for job in left], timeout=LEFT_JOBS_WAIT)


@pytest.fixture(autouse=True)
def _stop_left_jobs():
    """:func:`_cancel_left_jobs` after each test."""
    yield
    _cancel_left_jobs()


@pytest.fixture(autouse=True)
def _clear_panel_caches():
    """Empty ``pn.cache`` after each test that imported Panel, so tests cannot leak results."""
    yield
    panel = sys.modules.get("panel")
    if panel is not None:
        panel.state.clear_caches()
