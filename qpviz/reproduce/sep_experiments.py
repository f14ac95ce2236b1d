"""Paper 003's Figure 2 (inducing inputs learnt on a banana-shaped problem, M = 4 ... 128) and its
distributed experiment (training time against the number of Dask workers, sec. 4.4), for
``python -m qpviz.reproduce sep-figure2 | sep-digits``. Table 1, the paper's numbers and the text of
the committed results are :mod:`.sep_paper`; these runs use its fitting and caching.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from qpviz.reproduce.report import atomic_write_text
from qpviz.reproduce.runner import run_cached
from qpviz.reproduce.sep_paper import (DIGITS_COLUMNS, ITERATIONS, TEST_FRACTION, cache_path, cached_fit,
                                       digits_markdown, say, timed_fit)

__all__ = ["FIGURE2_SIZES", "FIGURE2_COLUMNS", "banana", "FigureTask", "figure2_csv", "draw_figure2", "run_sep_figure2",
           "digits_split", "run_sep_digits"]


FIGURE2_SIZES = (4, 8, 16, 32, 64, 128)


def banana(n: int = 400, seed: int = 0):
    """A 2-D banana-shaped two-class problem, generated (not downloaded): two interleaved noisy
    half-moons (scikit-learn's ``make_moons``, Gaussian noise 0.2), standardised; labels -1 / +1."""
    from sklearn.datasets import make_moons  # noqa: PLC0415

    X, labels = make_moons(n_samples=n, noise=0.2, random_state=seed)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.where(labels == 1, 1.0, -1.0)


@dataclass(frozen=True)
class FigureTask:
    method: str
    n_inducing: int
    iterations: int = ITERATIONS
    n_points: int = 400

    @property
    def key(self) -> str:
        return f"banana{self.n_points}-{self.method}-m{self.n_inducing}-it{self.iterations}"


def _compute_figure(task: FigureTask, *, out_dir: str) -> dict:
    """Worker: one method at one M on the banana data: the initial and learnt Z, and the latent
    mean on a grid (its zero contour is the decision boundary); cached before it is returned."""
    X, y = banana(task.n_points)
    rows = np.random.default_rng(task.n_inducing).choice(len(y), task.n_inducing, replace=False)
    post, seconds, messages = timed_fit(task.method, X, y, X[rows].copy(), task.iterations)
    grid = np.linspace(-GRID_EXTENT, GRID_EXTENT, GRID_POINTS)
    gx, gy = np.meshgrid(grid, grid)
    mean, _ = post.predict_f(np.column_stack([gx.ravel(), gy.ravel()]))
    record = {"key": task.key, "method": task.method, "n_inducing": task.n_inducing, "seconds": seconds,
              "Z0": X[rows].tolist(), "Z": np.asarray(post.diagnostics["inducing"], float).tolist(),
              "grid": grid.tolist(), "mean": mean.reshape(gx.shape).tolist(), "warnings": messages}
    atomic_write_text(cache_path(out_dir, task.key), json.dumps(record))
    return record


GRID_EXTENT = 2.8
GRID_POINTS = 71
FIGURE2_COLUMNS = ("method", "M", "index", "z1", "z2", "z1_initial", "z2_initial")


def figure2_csv(records) -> str:
    """The learnt inducing inputs, one row each (with their starting point)."""
    lines = [",".join(FIGURE2_COLUMNS)]
    for rec in records:
        for i, (z, z0) in enumerate(zip(rec["Z"], rec["Z0"])):
            lines.append(f"{rec['method']},{rec['n_inducing']},{i},{z[0]:.6g},{z[1]:.6g},{z0[0]:.6g},{z0[1]:.6g}")
    return "\n".join(lines) + "\n"


def draw_figure2(records, paths, n_points: int = 400) -> None:
    """The paper's Figure 2: one row per method, one column per M; the training points (blue /
    red), the learnt inducing inputs (black dots) and the decision boundary (black line)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    X, y = banana(n_points)
    by = {(r["method"], r["n_inducing"]): r for r in records}
    sizes = sorted({r["n_inducing"] for r in records})
    methods = [m for m in ("sep", "svi", "gfitc") if any(k[0] == m for k in by)]
    fig, axes = plt.subplots(len(methods), len(sizes), figsize=(2.2 * len(sizes), 2.3 * len(methods)),
                             squeeze=False, sharex=True, sharey=True)
    for i, method in enumerate(methods):
        for j, m in enumerate(sizes):
            ax = axes[i, j]
            ax.scatter(X[y > 0, 0], X[y > 0, 1], s=3, c="#D55E00", alpha=0.5, linewidths=0)
            ax.scatter(X[y < 0, 0], X[y < 0, 1], s=3, c="#0072B2", alpha=0.5, linewidths=0)
            rec = by.get((method, m))
            if rec is not None:
                grid = np.asarray(rec["grid"])
                mean = np.asarray(rec["mean"])
                if np.all(np.isfinite(mean)) and mean.min() < 0 < mean.max():
                    ax.contour(grid, grid, mean, levels=[0.0], colors="black", linewidths=1)
                Z = np.asarray(rec["Z"])
                ax.scatter(Z[:, 0], Z[:, 1], s=10, c="black")
            ax.set_xlim(-GRID_EXTENT, GRID_EXTENT)
            ax.set_ylim(-GRID_EXTENT, GRID_EXTENT)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(f"m = {m}", fontsize=9)
            if j == 0:
                ax.set_ylabel(method.upper(), fontsize=9)
    fig.tight_layout()
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)


def run_sep_figure2(*, sizes=FIGURE2_SIZES, methods=("sep", "svi", "gfitc"), out_dir="sep-figure2-out",
                    workers: int = 1, iterations: int = ITERATIONS, n_points: int = 400,
                    progress: bool = True) -> dict:
    """Run (or resume) Figure 2; write ``figure2.png``, ``figure2.svg`` and ``figure2_inducing.csv``."""
    out_dir = Path(out_dir)
    tasks = [FigureTask(m, k, iterations, n_points) for k in sizes for m in methods]
    records = {t.key: rec for t in tasks if (rec := cached_fit(out_dir, t.key)) is not None}
    n_cached = len(records)
    todo = [t for t in tasks if t.key not in records]
    say(f"{len(tasks)} fits: {n_cached} cached in {out_dir}, {len(todo)} to compute")
    failed = run_cached(todo, partial(_compute_figure, out_dir=str(out_dir)), records, workers, progress,
                        out_dir / "splits", len(tasks), unit="fit")
    ordered = [records[t.key] for t in tasks if t.key in records]
    paths = {}
    if ordered:
        paths = {name: out_dir / name for name in ("figure2.png", "figure2.svg", "figure2_inducing.csv")}
        draw_figure2(ordered, [paths["figure2.png"], paths["figure2.svg"]], n_points)
        atomic_write_text(paths["figure2_inducing.csv"], figure2_csv(ordered))
    return {"computed": len(todo) - len(failed), "cached": n_cached, "failed": failed, "paths": paths,
            "records": ordered}


# --------------------------------------------------------------------------------------------
# The distributed experiment (paper sec. 4.4): training time against the number of Dask workers
# --------------------------------------------------------------------------------------------

def digits_split(seed: int = 0):
    """scikit-learn's handwritten digits (1,797 8x8 images, offline), odd (+1) against even (-1); a
    seeded 90/10 split standardised on the training part (constant pixels are centred only)."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    from qpviz.reproduce.protocol import standardise  # noqa: PLC0415

    data = load_digits()
    y = np.where(data.target % 2 == 1, 1.0, -1.0)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(TEST_FRACTION * len(y)))
    test, train = order[:n_test], order[n_test:]
    X_train, X_test = standardise(data.data[train], data.data[test])
    return X_train, y[train], X_test, y[test]


def _cluster_client(n_workers: int, scheduler: str | None):
    """(client, closer): a Client of ``scheduler``'s cluster, or of a new LocalCluster of
    ``n_workers`` single-threaded worker processes on 127.0.0.1."""
    from dask.distributed import Client, LocalCluster  # noqa: PLC0415

    if scheduler:
        client = Client(scheduler)
        return client, client.close
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)

    def close():
        client.close()
        cluster.close()
    return client, close


def run_sep_digits(*, workers=(1, 2), methods=("sep", "svi"), n_inducing: int = 200,
                   iterations: int = ITERATIONS, scheduler: str | None = None, out_dir="sep-digits-out",
                   seed: int = 0) -> dict:
    """Train each method on the digits with 1, 2, ... Dask workers (a LocalCluster each, or the
    cluster at ``scheduler``, whose worker count is what it is; a one-iteration fit first, untimed,
    so that the time excludes the workers' imports and compilation); write ``digits.csv`` and
    ``digits.md``: training time, test error and NTLL per method and worker count."""
    from qpviz.inference import metrics  # noqa: PLC0415

    out_dir = Path(out_dir)
    X_train, y_train, X_test, y_test = digits_split(seed)
    Z = X_train[np.random.default_rng(seed).choice(len(y_train), n_inducing, replace=False)]
    rows = []
    counts = [None] if scheduler else list(workers)
    for count in counts:
        client, close = _cluster_client(count or 1, scheduler)
        try:
            n_workers = len(client.scheduler_info()["workers"])
            for method in methods:
                say(f"digits: {method.upper()} on {n_workers} Dask worker(s), M = {n_inducing}, "
                     f"{iterations} iterations")
                # untimed: the workers import qpviz and compile its kernels once
                timed_fit(method, X_train, y_train, Z.copy(), 1, client=client)
                post, seconds, _ = timed_fit(method, X_train, y_train, Z.copy(), iterations, client=client)
                scores = metrics.evaluate(post, X_test, y_test)
                rows.append({"method": method, "workers": n_workers, "seconds": seconds,
                             "test_error": float(scores["test_error"]), "ntll": float(scores["ntll"]),
                             "n_train": len(y_train), "n_test": len(y_test), "n_inducing": n_inducing,
                             "iterations": iterations})
        finally:
            close()
    lines = [",".join(DIGITS_COLUMNS)] + [",".join(f"{r[c]:.10g}" if isinstance(r[c], float) else str(r[c])
                                                   for c in DIGITS_COLUMNS) for r in rows]
    paths = {"digits.csv": out_dir / "digits.csv", "digits.md": out_dir / "digits.md"}
    atomic_write_text(paths["digits.csv"], "\n".join(lines) + "\n")
    atomic_write_text(paths["digits.md"], digits_markdown(rows))
    return {"rows": rows, "paths": paths}
