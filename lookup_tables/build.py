"""Build the QP lookup tables: ``python -m lookup_tables.build [--jobs 2] [--only NAME ...] [--check]``.

Fits every family of :func:`qpviz.tables.families.all_families` (one task per table, i.e. per
count for the Poisson likelihoods) on ``--jobs`` worker processes with a progress bar, then
writes one verified ``.npz`` per family into ``--out`` (default: ``qpviz.config.TABLE_DIR``,
this folder). ``--check`` only reports, per shipped file, whether the library will accept it
and whether the quadrature engine changed since it was built. ``--validate N`` compares each
shipped table with direct computation on N random cavities per family (plus the domain's
corners) and prints the max relative error of sigma_QP and a coarse map of it.
Deterministic: the same parameters give the same arrays and checksum.
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from qpviz import config  # noqa: E402
from qpviz.tables import store  # noqa: E402
from qpviz.tables.families import TableFamily, all_families  # noqa: E402
from qpviz.tables.packing import fit_table, pack  # noqa: E402

__all__ = ["build_family", "build_all", "main"]


def _fit_task(task: tuple[TableFamily, int]):
    family, k = task
    start = time.process_time()  # CPU seconds of this worker: meaningful on a shared machine
    tree = fit_table(family, k)
    return family, k, tree, time.process_time() - start


def _write(family: TableFamily, trees: list, seconds: float, out: Path) -> dict:
    coef, meta = pack(family, trees)
    stats = {
        "patches": int(sum(getattr(t, "n_leaves", None) or t.coef.shape[0] for t in trees)),
        "uncovered_patches": int(sum(t.n_failed for t in trees)),
        "max_check_error": float(max(t.max_check_error for t in trees)),
        "direct_evaluations": int(sum(t.n_evaluations for t in trees)),
        "fit_cpu_seconds": round(seconds, 1),
        "doubles": int(coef.size + meta.size),
    }
    return store.save(out / family.file_name, family, coef, meta, stats)


def build_family(family: TableFamily, out: Path) -> dict:
    """Fit and write one family in this process (tests use it); returns the file header."""
    trees, seconds = [], 0.0
    for k in range(family.n_tables):
        _, _, tree, sec = _fit_task((family, k))
        trees.append(tree)
        seconds += sec
    return _write(family, trees, seconds, Path(out))


def build_all(families: list[TableFamily], out: Path, jobs: int = 2, progress: bool = True) -> list[dict]:
    """Fit all tables of ``families`` on ``jobs`` processes and write one file per family."""
    from tqdm import tqdm

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # the costly Poisson families first, so that the two workers finish together
    tasks = [(fam, k) for fam in sorted(families, key=lambda f: -f.n_tables) for k in range(fam.n_tables)]
    results: dict[TableFamily, dict[int, tuple]] = {fam: {} for fam in families}
    headers = []
    bar = tqdm(total=len(tasks), desc="QP tables", unit="table", disable=not progress)
    if jobs > 1:
        fit_table(families[0], 0)  # compile (or load from cache) the numba kernels before forking
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs) as pool:
            for fam, k, tree, sec in pool.imap_unordered(_fit_task, tasks):
                results[fam][k] = (tree, sec)
                bar.update()
                if len(results[fam]) == fam.n_tables:
                    headers.append(_finish(fam, results[fam], out, bar))
    else:
        for task in tasks:
            fam, k, tree, sec = _fit_task(task)
            results[fam][k] = (tree, sec)
            bar.update()
            if len(results[fam]) == fam.n_tables:
                headers.append(_finish(fam, results[fam], out, bar))
    bar.close()
    return headers


def _finish(fam: TableFamily, done: dict, out: Path, bar) -> dict:
    trees = [done[k][0] for k in range(fam.n_tables)]
    header = _write(fam, trees, sum(d[1] for d in done.values()), out)
    st = header["stats"]
    bar.write(f"{fam.file_name}: {st['patches']} patches, {st['doubles'] * 8 / 1024:.0f} kB, "
              f"max check error {st['max_check_error']:.1e}, uncovered {st['uncovered_patches']}")
    return header


def check(out: Path) -> int:
    """Report whether each shipped file loads; returns the number of unusable files."""
    bad = 0
    engine = store.source_hash(store.ENGINE_SOURCES)
    for fam in all_families():
        path = Path(out) / fam.file_name
        try:
            store.load(path, fam)
            header = store.read_header(path)
            note = "" if header.get("engine_hash") == engine else " (engine sources changed since the build)"
            print(f"ok       {fam.file_name}{note}")
        except store.TableError as exc:
            bad += 1
            print(f"UNUSABLE {exc}")
    return bad


def validate(n: int, seed: int = 1, bins: int = 4) -> float:
    """Max relative sigma_QP error of the shipped tables on random points; prints error maps."""
    import math

    import qpviz.tables as tables
    from qpviz import tilted
    from qpviz.tables.families import TABLE_STD_RANGE

    rng = np.random.default_rng(seed)
    worst = 0.0
    for fam in all_families():
        lik = fam.make_likelihood()
        t_lo, t_hi = fam.mean_domain
        if tables.jit_data(lik)[1].size == 0:
            print(f"{fam.file_name}: no usable table")
            worst = math.inf
            continue
        log_s = np.concatenate([rng.uniform(math.log(TABLE_STD_RANGE[0]), math.log(TABLE_STD_RANGE[1]), n),
                                np.log([TABLE_STD_RANGE[0], TABLE_STD_RANGE[0], TABLE_STD_RANGE[1], TABLE_STD_RANGE[1]])])
        t = np.concatenate([rng.uniform(t_lo, t_hi, n), [t_lo, t_hi] * 2])
        if fam.n_tables > 1:
            y = rng.integers(0, fam.n_tables, n + 4).astype(float)
            m = np.where(rng.random(n + 4) < 0.5, -t, t) if t_lo == 0 else t
        elif t_lo == 0:  # real likelihoods: random y, m = y +- t
            y = rng.uniform(-5, 5, n + 4)
            m = y + np.where(rng.random(n + 4) < 0.5, -t, t)
        else:  # binary: random labels, folded mean t = y m
            y = rng.choice([-1.0, 1.0], n + 4)
            m = y * t
        v = np.exp(2 * log_s)
        err = np.abs(np.sqrt(tables.qp_variance(lik, y, m, v)) / tilted.qp_std(lik, y, m, v) - 1.0)
        worst = max(worst, float(err.max()))
        ti = np.minimum(((t - t_lo) / (t_hi - t_lo) * bins).astype(int), bins - 1)
        si = np.minimum(((log_s - math.log(TABLE_STD_RANGE[0])) / math.log(TABLE_STD_RANGE[1] / TABLE_STD_RANGE[0]) * bins).astype(int), bins - 1)
        grid = np.zeros((bins, bins))
        np.maximum.at(grid, (si, ti), err)
        print(f"{fam.file_name}: {n + 4} points, max relative error of sigma_QP {err.max():.2e}")
        edges = np.linspace(t_lo, t_hi, bins + 1)
        print("    folded mean t:  " + " ".join(f"[{a:+.0f},{b:+.0f}]".rjust(9) for a, b in zip(edges[:-1], edges[1:])))
        s_edges = np.exp(np.linspace(math.log(TABLE_STD_RANGE[0]), math.log(TABLE_STD_RANGE[1]), bins + 1))
        for i in range(bins - 1, -1, -1):
            print(f"    std {s_edges[i]:5.2f}-{s_edges[i + 1]:5.2f}: " + " ".join(f"{e:9.1e}" for e in grid[i]))
    return worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lookup_tables.build", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", type=Path, default=Path(config.TABLE_DIR), help="output folder")
    parser.add_argument("--only", nargs="*", default=None, help="file names or likelihood names to build")
    parser.add_argument("--check", action="store_true", help="only verify the existing files")
    parser.add_argument("--validate", type=int, default=0, metavar="N",
                        help="compare the shipped tables with direct computation on N random points per family")
    args = parser.parse_args(argv)
    if args.check:
        return 1 if check(args.out) else 0
    if args.validate:
        worst = validate(args.validate)
        print(f"worst max relative error of sigma_QP over all families: {worst:.2e}")
        return 0 if worst <= 1e-7 else 1
    families = all_families()
    if args.only:
        families = [f for f in families if f.likelihood in args.only or f.file_name in args.only]
        if not families:
            parser.error(f"--only matched no family; names: {sorted({f.file_name for f in all_families()})}")
    start = time.perf_counter()
    headers = build_all(families, args.out, jobs=max(1, args.jobs))
    total = sum(h["stats"]["doubles"] for h in headers) * 8 / 1e6
    print(f"built {len(headers)} files ({total:.2f} MB of arrays) in {time.perf_counter() - start:.0f} s "
          f"with {args.jobs} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
