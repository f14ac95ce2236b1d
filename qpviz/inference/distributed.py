"""Data shards and where they run: in this process or on a Dask cluster (issue 13; paper 003 sec. 3,
"Distributed training", and its Figure 1, right).

A trainer (SEP, :mod:`.sep`; SVI, :mod:`.svi`) splits the N points into contiguous shards
(:func:`shard_bounds`), one object per shard holding its points (and whatever per-point state the
trainer keeps, e.g. SEP's sites). The master keeps q(u) and the hyper-parameters and asks every
shard for its part of a step with ``executor.call(method, args_per_shard)``; the parts are sums
over points, so the master adds them up. A global minibatch is cut into each shard's local indices
by :func:`split`, so the same seed gives the same steps wherever the shards run.

* :class:`LocalExecutor`: the shards are plain objects in this process (the default).
* :class:`DaskExecutor`: one shard per Dask worker, an actor made on the worker from data scattered
  to it once (``client``: a ``dask.distributed.Client``, a scheduler address such as
  ``"tcp://host:8786"``, or ``"local"``: a ``LocalCluster`` of one single-threaded worker process per
  core on 127.0.0.1, closed with the executor). The shards work at the same time. A shard holds
  state only its worker has (SEP's sites), so a worker lost mid-run cannot be replaced: the step
  raises :class:`WorkerLostError` naming the shard, its rows and the worker. Measured with
  ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1: a killed worker (with or without its
  nanny) raised as soon as its running call failed (at once, or when the call in flight ended); a
  frozen one (SIGSTOP) only once the scheduler dropped it, after its ``worker-ttl`` (default
  5 minutes) and 30 s of trying to restart it through the nanny.

A shard class takes (X_shard, y_shard, *args, master_pid) and calls :func:`prepare_worker` first.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

__all__ = ["LocalExecutor", "DaskExecutor", "WorkerLostError", "shard_bounds", "split", "prepare_worker"]


def _keep_freed_memory() -> None:
    """Let glibc's malloc reuse freed work arrays instead of returning them to the system.

    Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, which also freezes the mmap
    threshold at 128 kB: every (M, chunk) array of a step was then a fresh mmap whose pages fault
    in, and two workers faulting at once ran slower than one doing all the work (measured: 300,000
    points, 0.81x). Linux / glibc only; elsewhere nothing changes."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD: its largest value on 64-bit glibc
    libc.mallopt(-1, 1024 * 1024 * 1024)  # M_TRIM_THRESHOLD


def prepare_worker(master_pid: int | None):
    """In a worker process (not the master's, ``master_pid``): one BLAS thread, so that 1 vs 2
    workers measures the distribution, and malloc keeping freed memory. Returns the thread limit
    to keep alive (None in the master's process)."""
    if master_pid is None or os.getpid() == master_pid:
        return None
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - worker processes only

    limits = threadpool_limits(limits=1)
    _keep_freed_memory()
    return limits


class LocalExecutor:
    """Shards in this process (the default). ``call(method, args_per_shard)`` runs ``method`` on
    every shard whose args are not None (a shard without points in the minibatch sits out) and
    returns the results in shard order (None for those that sat out)."""

    def __init__(self, shards):
        self.shards = shards

    def call(self, method: str, args_per_shard):
        return [None if args is None else getattr(shard, method)(*args)
                for shard, args in zip(self.shards, args_per_shard)]

    def close(self):
        pass


class WorkerLostError(RuntimeError):
    """A Dask worker holding a shard died or was dropped by the scheduler during a fit."""


class DaskExecutor:
    """One ``shard_class(X_shard, y_shard, *shard_args, master_pid)`` per Dask worker, as an actor
    holding its data (module docstring); ``bounds`` are the shards' row ranges."""

    def __init__(self, client, X, y, shard_class, *shard_args):
        from dask.distributed import Client, LocalCluster  # noqa: PLC0415 - only with client=...

        self._owned = []
        if isinstance(client, str):
            if client == "local":
                cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0")
                self._owned.append(cluster)
                client = Client(cluster)
            else:
                client = Client(client)
            self._owned.insert(0, client)
        self.shards = []
        try:
            if not isinstance(client, Client):
                raise TypeError(f"client must be a dask.distributed.Client, a scheduler address or 'local'; "
                                f"got {client!r}")
            self.client = client
            self.workers = workers = sorted(client.scheduler_info()["workers"])
            if not workers:
                raise ValueError("the Dask cluster has no workers")
            self.bounds = shard_bounds(X.shape[0], len(workers))
            # each shard's data go to its worker once (scatter), where the actor holding them is made
            self._futures = [client.submit(shard_class, client.scatter(X[lo:hi], workers=[w]),
                                           client.scatter(y[lo:hi], workers=[w]), *shard_args, os.getpid(),
                                           actor=True, workers=[w], pure=False)
                             for (lo, hi), w in zip(self.bounds, workers)]
            self.shards = [f.result() for f in self._futures]
        except BaseException:
            self.close()  # a cluster or client made here does not outlive a failed start
            raise

    @property
    def dashboard_link(self) -> str:
        return self.client.dashboard_link

    def call(self, method: str, args_per_shard):
        """As :meth:`LocalExecutor.call`; the shards work at the same time."""
        pending = []
        for i, (shard, args) in enumerate(zip(self.shards, args_per_shard)):
            if args is not None and self._futures[i].status not in ("finished", "pending"):
                raise self._lost(i, method, None)  # the scheduler already knows its worker is gone
            pending.append(None if args is None else getattr(shard, method)(*args))
        return [None if p is None else self._result(i, method, p) for i, p in enumerate(pending)]

    def _result(self, i: int, method: str, pending):
        """Shard i's result; its worker lost raises WorkerLostError (module docstring)."""
        try:
            return pending.result()
        except OSError as error:  # Dask's "Unable to contact Actor's worker", CommClosedError
            raise self._lost(i, method, error) from error

    def _lost(self, i: int, method: str, error) -> WorkerLostError:
        lo, hi = self.bounds[i]
        cause = "" if error is None else f" ({type(error).__name__}: {error})"
        return WorkerLostError(
            f"Dask worker {self.workers[i]} holding shard {i + 1} of {len(self.shards)} (rows {lo}:{hi}) was lost "
            f"during {method!r}{cause}; that shard's state is gone, so the fit stops here. Restart the worker "
            f"(or fit with the remaining ones: each fit puts one shard on every worker it finds) and run the fit "
            f"again.")

    def close(self):
        """Release the shards (their actors and data on the workers) and close what this executor
        started (a client it opened, a LocalCluster)."""
        self.shards = []
        for future in getattr(self, "_futures", []):
            future.release()
        self._futures = []
        for owned in self._owned:
            owned.close()
        self._owned = []


def shard_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """[lo, hi) row ranges of k contiguous shards of n points (sizes differ by at most one)."""
    edges = np.linspace(0, n, min(k, n) + 1).round().astype(int)
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]


def split(batch, bounds) -> list[np.ndarray]:
    """Local indices of the global ``batch`` per shard (in the batch's order)."""
    batch = np.asarray(batch)
    return [batch[(batch >= lo) & (batch < hi)] - lo for lo, hi in bounds]
