"""A real Dask cluster (issue 24 point 5): a scheduler and two workers started as separate processes
with Dask's own command-line tools (`dask scheduler`, `dask worker tcp://...`) on 127.0.0.1, SEP and
SVI fitted through the scheduler's address equal to in-process fits, and a worker killed mid-fit
stopping the fit (between steps, or while a call runs) with WorkerLostError instead of hanging or
returning numbers without its shard.

Every process is started in its own session and killed by its process group when the test ends,
passed or failed."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import qpviz
from qpviz.inference.distributed import DaskExecutor, WorkerLostError

distributed = pytest.importorskip("dask.distributed")

DASK = Path(sys.executable).with_name("dask")  # the venv's `dask` command, beside its python
START_TIMEOUT = 60.0  # seconds for the scheduler's address and the workers to appear
FIT_TIMEOUT = 60.0  # seconds a fit through the cluster gets to return or raise


@contextlib.contextmanager
def cli_cluster(tmp_path, n_workers=2):
    """`dask scheduler` on 127.0.0.1 (port 0: the system picks a free one, written to the scheduler
    file) and n_workers `dask worker <address>` of one thread each; yields (address, {name: pid of
    the `dask worker` command}) and kills every process group at the end."""
    if not DASK.exists():
        pytest.skip(f"Dask's command-line tool is not installed next to {sys.executable}")
    # the workers unpickle qpviz's shards and this module's SlowShard
    paths = [str(Path(qpviz.__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")])))
    scheduler_file = tmp_path / "scheduler.json"
    procs = []

    def start(name, *args):
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed below, after the process
        procs.append((subprocess.Popen([str(DASK), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True), log))
        return procs[-1][0]

    try:
        scheduler = start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                          "--scheduler-file", str(scheduler_file))
        deadline = time.monotonic() + START_TIMEOUT
        address = None
        while address is None:
            assert scheduler.poll() is None, (tmp_path / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler wrote no address in time"
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                address = json.loads(scheduler_file.read_text())["address"]
            time.sleep(0.1)
        assert address.startswith("tcp://127.0.0.1:")
        workers = {f"w{i}": start(f"w{i}", "worker", address, "--name", f"w{i}", "--nthreads", "1",
                                  "--host", "127.0.0.1", "--no-dashboard").pid
                   for i in range(n_workers)}
        with distributed.Client(address) as client:
            client.wait_for_workers(n_workers, timeout=START_TIMEOUT)
        yield address, workers
    finally:
        for proc, log in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.close()


def _sep_problem():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3.0, 3.0, (400, 2))
    f = np.sin(1.5 * X[:, 0]) + 0.6 * X[:, 1]
    y = np.where(f + 0.4 * rng.standard_normal(400) > 0, 1.0, -1.0)
    return X, y, dict(method="sep", inducing=10, minibatch=80, epochs=2, optimise=True, seed=4)


def _svi_problem():
    X, y, _ = _sep_problem()
    return X[:300], y[:300], dict(method="svi", inducing=8, minibatch=60, epochs=2, optimise=True, seed=4,
                                  max_opt_iter=15)


def _fit(X, y, **options):
    return qpviz.fit(X, y, "probit", qpviz.kernels.RBF(1.0, 1.0), **options)


def _in_thread(run):
    """run() in a thread that must end within FIT_TIMEOUT; returns (result, exception)."""
    out = {}

    def target():
        try:
            out["result"] = run()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            out["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(FIT_TIMEOUT)
    assert not thread.is_alive(), f"the fit neither returned nor raised within {FIT_TIMEOUT:.0f} s"
    return out.get("result"), out.get("error")


def test_sep_and_svi_through_a_scheduler_address_equal_in_process(tmp_path):
    sep_X, sep_y, sep_options = _sep_problem()
    svi_X, svi_y, svi_options = _svi_problem()
    local_sep, local_svi = _fit(sep_X, sep_y, **sep_options), _fit(svi_X, svi_y, **svi_options)
    with cli_cluster(tmp_path) as (address, _):
        remote_sep = _fit(sep_X, sep_y, client=address, **sep_options)
        remote_svi = _fit(svi_X, svi_y, client=address, **svi_options)
        with distributed.Client(address) as client:  # the shards ran on both worker processes
            assert {w["name"] for w in client.scheduler_info()["workers"].values()} == {"w0", "w1"}
    # measured: SEP and SVI agree with the in-process fits to ~1e-14 (same seed, same steps)
    assert len(remote_sep.history) == len(local_sep.history) == 10
    assert remote_sep.log_marginal_likelihood == pytest.approx(local_sep.log_marginal_likelihood, abs=1e-8)
    np.testing.assert_allclose(remote_sep.site_precision, local_sep.site_precision, atol=1e-8)
    np.testing.assert_allclose(remote_sep.kernel.log_params(), local_sep.kernel.log_params(), atol=1e-8)
    assert len(remote_svi.history) == len(local_svi.history) > 3
    np.testing.assert_allclose([h["objective"] for h in remote_svi.history],
                               [h["objective"] for h in local_svi.history], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(remote_svi.q_mean, local_svi.q_mean, atol=1e-8)
    np.testing.assert_allclose(remote_svi.inducing, local_svi.inducing, atol=1e-8)
    # the hyper-parameters moved, so the comparison covers the learning steps too
    assert np.max(np.abs(local_sep.kernel.log_params() - qpviz.kernels.RBF(1.0, 1.0).log_params())) > 1e-3


@pytest.mark.parametrize(("problem", "victim"), [(_sep_problem, "worker and nanny"), (_svi_problem, "worker only")],
                         ids=["sep-whole-worker", "svi-worker-process"])
def test_a_worker_killed_mid_fit_stops_it_with_a_clear_error(tmp_path, problem, victim):
    """SIGKILL to one worker after the first recorded step: the whole `dask worker` process group
    (a machine lost), or only the worker process (its nanny starts a new one, without the shard).
    The fit raises WorkerLostError naming that worker's address within FIT_TIMEOUT."""
    X, y, options = problem()
    with cli_cluster(tmp_path) as (address, commands):
        with distributed.Client(address) as client:
            worker_pids = client.run(os.getpid)  # {address: pid of the worker process}
            names = {info["name"]: addr for addr, info in client.scheduler_info()["workers"].items()}
        killed = []

        def kill_one_worker(entry):
            if not killed:
                if victim == "worker and nanny":
                    os.killpg(commands["w0"], signal.SIGKILL)
                else:
                    os.kill(worker_pids[names["w0"]], signal.SIGKILL)
                killed.append(entry)

        result, error = _in_thread(lambda: _fit(X, y, client=address, callback=kill_one_worker, **options))
    assert killed, "the fit recorded no step, so no worker was killed"
    assert result is None, "the fit returned numbers although a shard's worker was killed"
    assert isinstance(error, WorkerLostError), repr(error)
    message = str(error)
    assert names["w0"] in message and "Restart the worker" in message, message
    assert "rows " in message and "of 2" in message, message


class SlowShard:
    """A shard whose call takes a while, so that its worker can be killed while it runs."""

    def __init__(self, X, y, master_pid):
        self.rows = len(X)

    def work(self, seconds):
        time.sleep(seconds)
        return os.getpid()


def test_a_worker_killed_during_a_call_raises_when_the_call_fails(tmp_path):
    """The kill lands while both shards are inside a 3 s call: the call raises WorkerLostError for
    the killed worker's shard (the other shard's result is not returned as if it were the sum)."""
    with cli_cluster(tmp_path) as (address, commands):
        executor = DaskExecutor(address, np.zeros((10, 1)), np.zeros(10), SlowShard)
        try:
            pids = executor.call("work", [(0.0,), (0.0,)])
            assert len(set(pids)) == 2 and os.getpid() not in pids  # two worker processes, not this one
            victim = executor.workers.index(
                next(a for a, info in executor.client.scheduler_info()["workers"].items() if info["name"] == "w0"))
            timer = threading.Timer(0.5, os.killpg, (commands["w0"], signal.SIGKILL))
            timer.start()
            result, error = _in_thread(lambda: executor.call("work", [(3.0,), (3.0,)]))
            timer.join()
        finally:
            executor.close()
    assert result is None and isinstance(error, WorkerLostError), repr(error)
    assert f"shard {victim + 1} of 2" in str(error) and executor.workers[victim] in str(error), str(error)
