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
  core on 127.0.0.1, closed with the executor). The shards work at the same time.

A shard class takes (X_shard, y_shard, *args, master_pid) and calls :func:`prepare_worker` first.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

__all__ = ["LocalExecutor", "DaskExecutor", "shard_bounds", "split", "prepare_worker"]


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
            workers = sorted(client.scheduler_info()["workers"])
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
        pending = [None if args is None else getattr(shard, method)(*args)
                   for shard, args in zip(self.shards, args_per_shard)]
        return [None if p is None else p.result() for p in pending]

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
