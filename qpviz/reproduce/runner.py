"""Run the Table 1 experiments: a cache of per-fold records, a process pool, progress, an estimate.

Each finished fold is written at once to ``<out>/folds/<task key>.json`` (atomically, by the
process that computed it), so an interrupted run (Ctrl-C) keeps every finished fold and a rerun
with the same ``--out`` computes only the missing ones. The summary files are rewritten from the
cache at the end of every run.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from functools import lru_cache, partial
from pathlib import Path

from qpviz.reproduce import datasets as ds
from qpviz.reproduce.protocol import Task, run_fold, tasks_for
from qpviz.reproduce.report import atomic_write_text, write_outputs

__all__ = ["SECONDS_PER_FOLD", "estimate_seconds", "cached_record", "execute", "run_cached", "run_table1"]

#: Measured seconds of one fold (round 0, fold 0 of 10, paper preprocessing, isotropic kernel,
#: max_opt_iter=1000: EP with hyper-parameter optimisation, then QP and VB with its own bound; warm
#: numba cache, one process on a 2-CPU machine, 2026-11-23). The optimiser needs 11-24 evaluations.
SECONDS_PER_FOLD = {
    "ionosphere": 3.5, "cancer": 4.7, "pima": 5.1, "crabs": 1.3, "sonar": 2.1, "glass": 1.6,
    "wine1": 0.6, "wine2": 0.6, "wine3": 0.5, "mining": 1.2,
}


def estimate_seconds(tasks, workers: int) -> float:
    """Rough wall time of ``tasks`` on ``workers`` processes (from :data:`SECONDS_PER_FOLD`, scaled
    down linearly when ``max_opt_iter`` is below the ~20 iterations the optimiser takes; an ARD
    kernel takes about 10x longer)."""
    total = sum(SECONDS_PER_FOLD.get(t.dataset, 5.0) * min(1.0, max(t.max_opt_iter, 5) / 20.0)
                * (10.0 if t.kernel == "ard" else 1.0) for t in tasks)
    return total / max(1, min(workers, len(tasks) or 1))


def cache_path(out_dir, task: Task) -> Path:
    return Path(out_dir) / "folds" / f"{task.key}.json"


def cached_record(out_dir, task: Task) -> dict | None:
    """The cached record of ``task``, or None where absent or unreadable (then it is recomputed)."""
    path = cache_path(out_dir, task)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("key") == task.key else None


@lru_cache(maxsize=None)
def _load(name, preprocessing, data_dir):
    return ds.load(name, preprocessing, data_dir)


def _compute(task: Task, *, data_dir, out_dir) -> dict:
    """Worker: run one fold and cache its record before returning it."""
    record = run_fold(task, _load(task.dataset, task.preprocessing, data_dir))
    atomic_write_text(cache_path(out_dir, task), json.dumps(record, sort_keys=True))
    return record


def _ignore_sigint() -> None:
    """Pool initializer: Ctrl-C reaches the whole process group; only the main process handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued folds and end the workers now (their unfinished folds are simply not
    cached: a fold's file appears only by an atomic rename of a complete file)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # CPython's; shutdown clears it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _failure(task: Task, err: Exception) -> str:
    return f"{task.key}: {type(err).__name__}: {err}"


def remove_partial_writes(out_dir: Path, cache: str = "folds") -> None:
    """Delete the temporary files of atomic writes a stopped process left behind in ``out_dir /
    cache`` (the finished tasks' files are complete: they appear only by rename)."""
    for stale in (Path(out_dir) / cache).glob(".*.tmp"):
        stale.unlink(missing_ok=True)


def run_cached(todo, compute, records: dict, workers: int, progress: bool, cache_dir: Path, total: int,
               unit: str = "fold") -> dict:
    """:func:`execute` for tasks that cache their records in ``cache_dir``: on Ctrl-C, removes
    partial writes, says how many are cached and re-raises; reports the failed ones (returned)."""
    n_before = len(records)
    try:
        failed = execute(todo, compute, records, workers, progress, unit=unit)
    except KeyboardInterrupt:
        remove_partial_writes(cache_dir.parent, cache_dir.name)  # a worker stopped in its atomic write
        _say(f"interrupted: {len(records) - n_before} new {unit}(s) cached in {cache_dir} ({len(records)} of "
             f"{total}); rerun the same command to compute the rest")
        raise
    if failed:
        _say(f"{len(failed)} {unit}(s) failed (not cached; a rerun retries them):\n  " + "\n  ".join(failed.values()))
    return failed


def execute(todo, compute, records: dict, workers: int, progress: bool, unit: str = "fold") -> dict:
    """Run ``compute(task)`` for every task of ``todo`` (in-process with one worker, else on a
    process pool), put each result in ``records[task.key]`` as it arrives and show a progress bar.

    A task that raises is left out and reported in the returned {key: message} (a long run goes
    on); Ctrl-C ends the workers at once and propagates (the results so far stay in ``records``).
    ``compute`` must be picklable (a module-level function or a ``functools.partial`` of one).
    """
    from tqdm import tqdm  # noqa: PLC0415

    failed: dict[str, str] = {}
    bar = tqdm(total=len(todo), unit=unit, disable=not progress or not todo, file=sys.stderr)
    try:
        if workers == 1 or len(todo) <= 1:
            for task in todo:
                try:
                    records[task.key] = compute(task)
                except Exception as err:  # noqa: BLE001 - one failed task must not end a long run
                    failed[task.key] = _failure(task, err)
                bar.update()
        elif todo:
            with ProcessPoolExecutor(max_workers=min(workers, len(todo)), initializer=_ignore_sigint) as pool:
                pending = {pool.submit(compute, t): t for t in todo}
                try:
                    while pending:
                        done, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in done:
                            task = pending.pop(future)
                            try:
                                records[task.key] = future.result()
                            except Exception as err:  # noqa: BLE001 - see above
                                failed[task.key] = _failure(task, err)
                            bar.update()
                except BaseException:
                    _stop(pool)
                    raise
    finally:
        bar.close()
    return failed


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _format_duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def run_table1(datasets, *, rounds: int = 10, n_folds: int = 10, preprocessing: str = "paper", data_dir=None,
               out_dir="table1-out", workers: int | None = None, max_opt_iter: int = 1000,
               kernel: str = "iso", progress: bool = True) -> dict:
    """Run (or resume) the experiments of ``datasets`` and write the summary files in ``out_dir``.

    A fold that raises is reported and left out (not cached: a rerun retries it); the others go on.
    Returns {"computed": n, "cached": n, "skipped": {dataset: reason}, "failed": {key: message},
    "paths": {...}, "records": [...]}.
    """
    out_dir = Path(out_dir)
    data_dir = None if data_dir is None else str(data_dir)
    workers = workers or os.cpu_count() or 1
    skipped, sizes, tasks = {}, {}, []
    for name in datasets:
        try:
            data = _load(name, preprocessing, data_dir)
        except ds.DatasetMissing as err:
            skipped[name] = str(err)
            _say(f"skipping {name}: {err}")
            continue
        sizes[name] = data.shape
        tasks += tasks_for(name, preprocessing, rounds, n_folds, max_opt_iter, kernel)
    remove_partial_writes(out_dir)
    records = {t.key: rec for t in tasks if (rec := cached_record(out_dir, t)) is not None}
    todo = [t for t in tasks if t.key not in records]
    n_cached = len(records)
    _say(f"{len(tasks)} folds: {n_cached} cached in {out_dir}, {len(todo)} to compute on {min(workers, max(len(todo), 1))} "
         f"process(es); estimated {_format_duration(estimate_seconds(todo, workers))}")
    failed = run_cached(todo, partial(_compute, data_dir=data_dir, out_dir=str(out_dir)), records, workers, progress,
                        out_dir / "folds", len(tasks), unit="fold")
    ordered = [records[t.key] for t in tasks if t.key in records]
    paths = write_outputs(ordered, out_dir, sizes) if ordered else {}
    return {"computed": len(todo) - len(failed), "cached": n_cached, "skipped": skipped, "failed": failed,
            "paths": paths, "records": ordered}
