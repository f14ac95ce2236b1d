"""The kernel warm-up (qpviz.warmup): what each target compiles, and its record of a finished run."""
from __future__ import annotations

import pytest

import empty_numba_cache
from qpviz import warmup
from qpviz.explorer import OPENING_VIEW, likelihood_names


@pytest.mark.parametrize("what", warmup.STEPS)
def test_every_step_is_run_once_and_the_last_groups_use_the_others(what):
    groups = warmup.steps(what)
    labels = [label for group in groups for label, _ in group]
    assert len(groups) == 4 and len(labels) == len(set(labels))
    tables = {label.split(": ")[1] for label, _ in groups[0] if label.startswith("QP table (fast form): ")}
    # the explorer's first page opens on its own likelihood; the fits start with probit
    opening = OPENING_VIEW["likelihood"]
    assert tables == {"explorer": {opening}, "fit": {"probit"}, "sparse": {"probit"}, "all": {opening, "probit"}}[what]
    # the tilted quadrature's own steps only for "all": the explorer's opening view (its last step)
    # compiles what it uses of it, and EP with closed-form moments compiles without it
    assert ("tilted quadrature: panels" in [label for label, _ in groups[0]]) == (what == "all")
    last = [label for label, _ in groups[2] + groups[3]]
    assert ("explorer page" in last) == (what in ("explorer", "all"))
    assert ("EP and QP fits" in last) == (what != "explorer")
    assert ("sparse Power EP and QP fits" in last) == (what in ("sparse", "all"))


def test_all_compiles_every_likelihood_the_page_offers_and_explorer_none():
    def likelihoods(what):
        return {label.split(": ")[1] for group in warmup.steps(what) for label, _ in group
                if label.startswith("likelihood kernels")}

    assert likelihoods("all") == set(likelihood_names())
    assert likelihoods("explorer") == set()  # its page needs no likelihood cfunc


def test_a_finished_run_is_recorded_until_the_sources_or_the_caches_change(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(warmup, "_stamp", lambda what: tmp_path / f"warmup-{what}.txt")
    state = {"value": "abc 10"}
    monkeypatch.setattr(warmup, "_state", lambda: state["value"])
    assert not warmup.is_warm("explorer")
    warmup._write_stamp("explorer")
    assert warmup.is_warm("explorer") and not warmup.is_warm("fit")
    state["value"] = "abc 9"  # a cache file was deleted
    assert not warmup.is_warm("explorer")
    state["value"] = "def 10"  # a source changed
    assert not warmup.is_warm("explorer")
    state["value"] = "abc 10"
    warmup._write_stamp("all")
    assert warmup.is_warm("fit")  # everything covers every target


def test_the_explorer_target_leaves_nothing_for_the_first_page_to_compile(tmp_path):
    """After ``--what explorer`` (a first start's server runs it in a child process), building the
    Projection Explorer page as a session does compiles nothing more: it warmed the probit path
    while the page opened on Poisson-square, which then compiled 14 kernels in the server (~4 s of
    the first page's wait on this machine, after the URL was printed)."""
    code = (
        "from qpviz import warmup\n"
        "for group in warmup.steps('explorer'):\n"
        "    for label, step in group:\n"
        "        step()\n"
        "before = cache_files()\n"
        "import panel as pn\nimport projection_explorer\n"
        "title, page = projection_explorer.page()\n"
        "pn.panel(page).get_root()\n"
        "print(len(before)); print([f for f in cache_files() if f not in before])\n"
    )
    count, compiled_later = empty_numba_cache.run(code, tmp_path / "numba")[-2:]
    assert int(count) > 0
    assert compiled_later == "[]", f"the first page compiled what the warm-up did not: {compiled_later}"


def test_a_background_warm_up_runs_at_a_low_priority_and_ends_with_the_process_that_started_it():
    """``--background PID`` (the dashboard's child warm-up): niceness 10, and the run stops within
    about PARENT_CHECK_SECONDS once PID is gone (a stopped server's warm-up went on compiling)."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415

    worker = ("import os, sys, time\nfrom qpviz import warmup\nwarmup._run_in_background_of(os.getppid())\n"
              "print(os.getpid(), os.nice(0), flush=True)\ntime.sleep(120)\n")
    # the middle process starts the worker, passes its line on, and ends when told (stdin closed)
    middle = ("import subprocess, sys\n"
              f"child = subprocess.Popen([sys.executable, '-c', {worker!r}], stdout=subprocess.PIPE, text=True)\n"
              "print(child.stdout.readline().strip(), flush=True)\nsys.stdin.read()\n")
    parent = subprocess.Popen([sys.executable, "-c", middle], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid, niceness = (int(v) for v in parent.stdout.readline().split())
    assert niceness == os.nice(0) + 10
    time.sleep(2 * warmup.PARENT_CHECK_SECONDS)
    os.kill(pid, 0)  # still running while its parent is
    parent.stdin.close()
    parent.wait(30)
    parent.stdout.close()
    deadline = time.monotonic() + 10 * warmup.PARENT_CHECK_SECONDS
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the background warm-up outlived the process that started it"
        time.sleep(0.1)


def test_two_processes_run_every_step_once_then_stamp_the_run():
    """``--jobs 2``: the worker runs group 1, waits for this process's group 0, then runs group 3
    beside group 2 here; every step is reported once, numbered in order, and the run ends."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    done = subprocess.run([sys.executable, "-m", "qpviz.warmup", "--what", "sparse", "--jobs", "2", "--force"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines() if line.startswith("  ") and "/" in line.split()[0]]
    labels = [label for group in warmup.steps("sparse") for label, _ in group]
    assert [line.split(" ", 1)[0] for line in lines] == [f"{i}/{len(labels)}" for i in range(1, len(labels) + 1)]
    assert sorted(line.split(" ", 1)[1].rsplit(" (", 1)[0] for line in lines) == sorted(labels)
    assert warmup.GROUP_DONE not in done.stdout and "failed" not in done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("numerical kernels ready")
