"""Paper 003's experiments (Hernandez-Lobato & Hernandez-Lobato, "Scalable Gaussian process
classification via expectation propagation", AISTATS 2016): its Table 1, Figure 2 and the
distributed experiment, for ``python -m qpviz.reproduce sep-table1 | sep-figure2 | sep-digits``
(Figure 2 and the digits run: :mod:`.sep_experiments`).

Protocol of Table 1 (paper sec. 4.1), as run here:

* datasets: the five of its seven UCI problems qpviz ships (Breast = ``cancer``, Crabs,
  Ionosphere, Pima, Sonar; the ``clean`` preprocessing of :mod:`.datasets`); Australian and Heart
  are not available offline (:data:`UNAVAILABLE`) and are reported as such;
* repetition r (seed r): a random 90% / 10% train / test split; features standardised with the
  training part's mean and standard deviation;
* M = 15%, 25% and 50% of the training points; the initial inducing inputs are training points
  drawn at random (seed r), the same for the three methods; every method starts from the same
  kernel (RBF with one length scale per feature, ARD, variance 1, length scales 1);
* batch training for 250 iterations, learning the kernel and the inducing inputs: SEP
  (``qpviz.fit(method="sep", minibatch=N, epochs=250)``: 250 parallel site refinements, each
  followed by a hyper-parameter step), GFITC (``method="ep", inducing=Z, optimise=True,
  optimise_inducing=True, max_opt_iter=250``: L-BFGS-B on EP's evidence, EP to convergence in each
  evaluation) and SVI (``method="svi", minibatch=N, max_opt_iter=250``: L-BFGS-B on the bound);
* measures: NTLL and test error on the test part, and the training time in seconds.

Each (dataset, repetition, M, method) is one task whose record is cached at once in
``<out>/splits/<key>.json`` (:func:`qpviz.reproduce.runner.execute`): a rerun with the same
``--out`` computes only the missing ones. Tasks are ordered repetition by repetition, so a run
stopped early has the same number of repetitions in every cell (give or take the last one).
"""
from __future__ import annotations

import json
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np

from qpviz.reproduce import datasets as ds
from qpviz.reproduce.report import atomic_write_text, write_csv
from qpviz.reproduce.runner import remove_partial_writes, run_cached

__all__ = ["SEP_DATASETS", "PAPER_NAMES", "UNAVAILABLE", "FRACTIONS", "SEP_METHODS", "PAPER_SEP_TABLE1",
           "PAPER_SEP_TIME", "PAPER_DIGITS", "SepTask", "sep_tasks", "sep_split", "run_sep_task", "summarise_sep",
           "sep_markdown", "run_sep_table1", "read_summary", "ITERATIONS", "PREPROCESSING", "TEST_FRACTION",
           "DIGITS_COLUMNS", "digits_markdown", "read_digits", "results_markdown", "RESULT_FILES", "say", "timed_fit",
           "cache_path", "cached_fit"]

#: the datasets of paper 003's Table 1 that qpviz has, by qpviz's name, in the paper's row order
SEP_DATASETS = ("cancer", "crabs", "ionosphere", "pima", "sonar")
PAPER_NAMES = {"cancer": "Breast", "crabs": "Crabs", "ionosphere": "Ionosphere", "pima": "Pima", "sonar": "Sonar"}
#: the paper's rows qpviz cannot run, and why
UNAVAILABLE = {
    "Australian": "the Statlog (Australian credit) data are not shipped with qpviz nor with any of its "
                  "dependencies, and nothing is downloaded at run time",
    "Heart": "the Statlog (Heart) data are not shipped with qpviz nor with any of its dependencies, and "
             "nothing is downloaded at run time",
}
PREPROCESSING = "clean"
FRACTIONS = (0.15, 0.25, 0.5)
#: the paper's column order
SEP_METHODS = ("gfitc", "sep", "svi")
ITERATIONS = 250
TEST_FRACTION = 0.1

#: paper 003, Table 1: NTLL mean and std per dataset, M fraction and method
PAPER_SEP_TABLE1 = {
    "Australian": {0.15: {"gfitc": (.68, .06), "sep": (.69, .07), "svi": (.63, .05)},
                   0.25: {"gfitc": (.68, .08), "sep": (.67, .07), "svi": (.63, .05)},
                   0.5: {"gfitc": (.67, .09), "sep": (.64, .05), "svi": (.63, .05)}},
    "Breast": {0.15: {"gfitc": (.10, .05), "sep": (.11, .05), "svi": (.10, .05)},
               0.25: {"gfitc": (.11, .06), "sep": (.11, .05), "svi": (.10, .05)},
               0.5: {"gfitc": (.11, .05), "sep": (.11, .05), "svi": (.10, .05)}},
    "Crabs": {0.15: {"gfitc": (.07, .07), "sep": (.06, .06), "svi": (.07, .06)},
              0.25: {"gfitc": (.06, .07), "sep": (.06, .06), "svi": (.07, .07)},
              0.5: {"gfitc": (.06, .07), "sep": (.06, .06), "svi": (.09, .06)}},
    "Heart": {0.15: {"gfitc": (.43, .12), "sep": (.40, .13), "svi": (.39, .11)},
              0.25: {"gfitc": (.42, .12), "sep": (.41, .12), "svi": (.40, .11)},
              0.5: {"gfitc": (.42, .13), "sep": (.41, .11), "svi": (.40, .10)}},
    "Ionosphere": {0.15: {"gfitc": (.30, .22), "sep": (.26, .19), "svi": (.26, .14)},
                   0.25: {"gfitc": (.29, .23), "sep": (.27, .20), "svi": (.27, .18)},
                   0.5: {"gfitc": (.30, .24), "sep": (.27, .19), "svi": (.26, .16)}},
    "Pima": {0.15: {"gfitc": (.54, .08), "sep": (.52, .07), "svi": (.49, .05)},
             0.25: {"gfitc": (.53, .07), "sep": (.51, .06), "svi": (.50, .05)},
             0.5: {"gfitc": (.53, .07), "sep": (.50, .05), "svi": (.49, .05)}},
    "Sonar": {0.15: {"gfitc": (.35, .13), "sep": (.33, .10), "svi": (.40, .17)},
              0.25: {"gfitc": (.35, .12), "sep": (.32, .10), "svi": (.40, .19)},
              0.5: {"gfitc": (.35, .13), "sep": (.29, .09), "svi": (.35, .16)}},
}
#: paper 003, Table 1's last row: average training time in seconds (mean, std)
PAPER_SEP_TIME = {0.15: {"gfitc": (59, 4), "sep": (17, 1), "svi": (40, 2)},
                  0.25: {"gfitc": (133, 6), "sep": (37, 2), "svi": (65, 3)},
                  0.5: {"gfitc": (494, 29), "sep": (130, 5), "svi": (195, 10)}}
#: paper 003 sec. 4.4 (MNIST odd vs even, M = 200): test error and NTLL, the same for any number of nodes
PAPER_DIGITS = {"sep": {"test_error": 0.027, "ntll": 0.0694}, "svi": {"test_error": 0.022, "ntll": 0.0655}}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class SepTask:
    """One fit of Table 1: a dataset, repetition (= seed), fraction of N as M, method, iterations."""

    dataset: str
    rep: int
    fraction: float
    method: str
    iterations: int = ITERATIONS

    @property
    def key(self) -> str:
        return f"{self.dataset}-r{self.rep}-m{round(self.fraction * 100)}-{self.method}-it{self.iterations}"

    def as_dict(self) -> dict:
        return asdict(self)


def sep_tasks(datasets, repetitions: int, fractions=FRACTIONS, methods=SEP_METHODS,
              iterations: int = ITERATIONS) -> list[SepTask]:
    """Every task, repetition by repetition (a run stopped early covers every cell equally)."""
    for name in datasets:
        if name not in SEP_DATASETS:
            raise ValueError(f"dataset {name!r} is not one of paper 003's that qpviz has: {', '.join(SEP_DATASETS)}")
    return [SepTask(d, r, f, m, iterations) for r in range(repetitions) for d in datasets for f in fractions
            for m in methods]


def sep_split(dataset, rep: int, fraction: float):
    """(X_train, y_train, X_test, y_test, Z0) of repetition ``rep``: a seeded 90/10 split,
    standardised on the training part, and M = round(fraction * N_train) training inputs as the
    initial inducing inputs (the same for every method)."""
    from qpviz.reproduce.protocol import standardise  # noqa: PLC0415

    m = dataset.X.shape[0]
    rng = np.random.default_rng(rep)
    order = rng.permutation(m)
    n_test = max(1, int(round(TEST_FRACTION * m)))
    test, train = order[:n_test], order[n_test:]
    X_train, X_test = standardise(dataset.X[train], dataset.X[test])
    n_inducing = max(1, int(round(fraction * len(train))))
    z_rows = np.random.default_rng([rep, round(fraction * 100)]).choice(len(train), n_inducing, replace=False)
    return X_train, dataset.y[train], X_test, dataset.y[test], X_train[z_rows].copy()


def _fit(method: str, X, y, Z, iterations: int, **extra):
    """One of the three methods of the paper, batch, ``iterations`` iterations, learning the kernel
    and Z from an ARD RBF (variance 1, length scales 1) and the inducing inputs Z."""
    import qpviz  # noqa: PLC0415 - workers import the library here

    kernel = qpviz.kernels.RBF(variance=1.0, lengthscale=np.ones(X.shape[1]))
    n = X.shape[0]
    if method == "sep":
        return qpviz.fit(X, y, "probit", kernel, method="sep", optimise=True, inducing=Z, minibatch=n,
                         epochs=iterations, **extra)
    if method == "svi":
        return qpviz.fit(X, y, "probit", kernel, method="svi", optimise=True, inducing=Z, minibatch=n,
                         max_opt_iter=iterations, **extra)
    if method == "gfitc":
        return qpviz.fit(X, y, "probit", kernel, method="ep", optimise=True, inducing=Z, optimise_inducing=True,
                         max_opt_iter=iterations, **extra)
    raise ValueError(f"method must be one of {SEP_METHODS}; got {method!r}")


def timed_fit(method, X_train, y_train, Z, iterations, **extra):
    """(posterior, seconds, warnings' messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        post = _fit(method, X_train, y_train, Z, iterations, **extra)
        seconds = time.perf_counter() - start
    messages = [f"{w.category.__name__}: {w.message}" for w in caught
                if w.category.__name__ != "NumbaExperimentalFeatureWarning"]
    return post, seconds, messages


def run_sep_task(task: SepTask, dataset) -> dict:
    """Fit ``task.method`` on its split of ``dataset``; a JSON-ready record (sizes, test error,
    NTLL, seconds, the learnt hyper-parameters and every warning raised)."""
    from qpviz.inference import metrics  # noqa: PLC0415

    X_train, y_train, X_test, y_test, Z = sep_split(dataset, task.rep, task.fraction)
    post, seconds, messages = timed_fit(task.method, X_train, y_train, Z, task.iterations)
    scores = metrics.evaluate(post, X_test, y_test)
    hyper = {k: np.asarray(v).tolist() for k, v in post.hyperparameters.items()}
    return {"task": task.as_dict(), "key": task.key, "n_train": int(len(y_train)), "n_test": int(len(y_test)),
            "n_inducing": int(Z.shape[0]), "n_features": int(X_train.shape[1]),
            "test_error": float(scores["test_error"]), "ntll": float(scores["ntll"]), "seconds": float(seconds),
            "hyperparameters": hyper, "warnings": messages}


def cache_path(out_dir, key: str) -> Path:
    """Where the record of task ``key`` is cached under ``out_dir``."""
    return Path(out_dir) / "splits" / f"{key}.json"


def cached_fit(out_dir, key: str) -> dict | None:
    """The cached record of task ``key``, or None (missing or unreadable)."""
    try:
        record = json.loads(cache_path(out_dir, key).read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("key") == key else None


def _compute_sep(task: SepTask, *, out_dir: str) -> dict:
    """Worker: one task of Table 1, cached before it is returned."""
    record = run_sep_task(task, ds.load(task.dataset, PREPROCESSING))
    atomic_write_text(cache_path(out_dir, task.key), json.dumps(record, sort_keys=True))
    return record


def _mean_std(values) -> tuple[float, float]:
    values = np.asarray(values, float)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def summarise_sep(records) -> list[dict]:
    """One row per (dataset, fraction, method), the paper's order, plus one "time" row per
    (fraction, method): NTLL, test error and seconds as mean and std over the repetitions (the
    time row: over the repetitions complete on every dataset, of their mean over the datasets)."""
    by = {}
    for rec in records:
        t = rec["task"]
        by.setdefault((t["dataset"], t["fraction"], t["method"]), []).append(rec)
    rows = []
    for (dataset, fraction, method), recs in by.items():
        ntll, ntll_sd = _mean_std([r["ntll"] for r in recs])
        te, te_sd = _mean_std([r["test_error"] for r in recs])
        sec, sec_sd = _mean_std([r["seconds"] for r in recs])
        rows.append({"dataset": dataset, "fraction": fraction, "method": method, "reps": len(recs),
                     "ntll_mean": ntll, "ntll_std": ntll_sd, "te_mean": te, "te_std": te_sd,
                     "seconds_mean": sec, "seconds_std": sec_sd,
                     "warnings": sum(len(r["warnings"]) for r in recs)})
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    for fraction in sorted({r["fraction"] for r in rows}):
        for method in SEP_METHODS:
            per_rep = {}
            for (dataset, f, m), recs in by.items():
                if f == fraction and m == method:
                    for r in recs:
                        per_rep.setdefault(r["task"]["rep"], {})[dataset] = r["seconds"]
            complete = [np.mean(list(v.values())) for v in per_rep.values() if len(v) == len(datasets)]
            if complete:
                sec, sec_sd = _mean_std(complete)
                rows.append({"dataset": "time", "fraction": fraction, "method": method, "reps": len(complete),
                             "ntll_mean": float("nan"), "ntll_std": float("nan"), "te_mean": float("nan"),
                             "te_std": float("nan"), "seconds_mean": sec, "seconds_std": sec_sd, "warnings": 0})
    order = {d: i for i, d in enumerate((*SEP_DATASETS, "time"))}
    rows.sort(key=lambda r: (order.get(r["dataset"], 99), r["fraction"], SEP_METHODS.index(r["method"])))
    return rows


SUMMARY_COLUMNS = ("dataset", "fraction", "method", "reps", "ntll_mean", "ntll_std", "te_mean", "te_std",
                   "seconds_mean", "seconds_std", "warnings")


def read_summary(path) -> list[dict]:
    """The rows of a ``sep_table1.csv`` (numbers as float, ``reps`` and ``warnings`` as int)."""
    text = Path(path).read_text().splitlines()
    header = text[0].split(",")
    if tuple(header) != SUMMARY_COLUMNS:
        raise ValueError(f"{path}: unexpected columns {header}")
    rows = []
    for line in text[1:]:
        values = dict(zip(header, line.split(",")))
        row = {"dataset": values["dataset"], "method": values["method"], "fraction": float(values["fraction"]),
               "reps": int(values["reps"]), "warnings": int(values["warnings"])}
        row.update({c: float(values[c]) for c in SUMMARY_COLUMNS if c.endswith(("_mean", "_std"))})
        rows.append(row)
    return rows


def _cell(mean: float, std: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def _ours(row, measure: str, digits: int = 2) -> str:
    """Our cell: mean ± std and, in brackets, over how many repetitions."""
    if row is None:
        return "-"
    return f"{_cell(row[measure + '_mean'], row[measure + '_std'], digits)} [{row['reps']}]"


def _span(reps) -> str:
    return "-" if not reps else str(reps[0]) if reps[0] == reps[-1] else f"{reps[0]}-{reps[-1]}"


def sep_markdown(rows) -> str:
    """Ours beside the paper's, one table per M (so that each fits a projector's width): NTLL per
    dataset (mean ± std over the repetitions, their number in brackets: a run stopped early may
    have fewer for some methods), the average time row and the paper's rows we cannot run; then
    our test errors."""
    by = {(r["dataset"], r["fraction"], r["method"]): r for r in rows}
    fractions = sorted({r["fraction"] for r in rows})
    datasets = [d for d in SEP_DATASETS if any(k[0] == d for k in by)]
    methods = [m.upper() for m in SEP_METHODS]
    lines = []
    for f in fractions:
        paper_time = PAPER_SEP_TIME.get(f)
        lines += [f"NTLL with M = {round(f * 100)}% of N:", "",
                  "| Problem | source | " + " | ".join(methods) + " | reps |", "|" + "---|" * (len(methods) + 3)]
        for name in datasets:
            paper = PAPER_SEP_TABLE1[PAPER_NAMES[name]]
            ours = [by.get((name, f, m)) for m in SEP_METHODS]
            lines.append(f"| {PAPER_NAMES[name]} | ours | " + " | ".join(_ours(r, "ntll") for r in ours)
                         + f" | {_span(sorted({r['reps'] for r in ours if r}))} |")
            lines.append("|  | paper | " + " | ".join(_cell(*paper[f][m]) if f in paper else "-"
                                                      for m in SEP_METHODS) + " | 20 |")
        for name in UNAVAILABLE:
            paper = PAPER_SEP_TABLE1[name]
            lines.append(f"| {name} | paper | " + " | ".join(_cell(*paper[f][m]) if f in paper else "-"
                                                            for m in SEP_METHODS) + " | 20 |")
        times = [by.get(("time", f, m)) for m in SEP_METHODS]
        lines.append("| Avg. time (s) | ours | " + " | ".join(_ours(r, "seconds", 1) for r in times)
                     + f" | {_span(sorted({r['reps'] for r in times if r}))} |")
        lines.append("|  | paper | " + " | ".join(_cell(*paper_time[m], 0) if paper_time else "-"
                                                  for m in SEP_METHODS) + " | 20 |")
        lines.append("")
    lines += ["Ours: mean ± std over the random 90/10 splits [how many]; the paper: 20 splits.", "",
              "Test error (ours, %, mean ± std):", "",
              "| Problem | M | " + " | ".join(methods) + " |", "|" + "---|" * (len(methods) + 2)]
    for name in datasets:
        for f in fractions:
            lines.append(f"| {PAPER_NAMES[name]} | {round(f * 100)}% | " + " | ".join(
                _cell(100 * r["te_mean"], 100 * r["te_std"], 1) if (r := by.get((name, f, m))) else "-"
                for m in SEP_METHODS) + " |")
    missing = ["", "Not run (not available offline): "
               + "; ".join(f"{name}: {why}" for name, why in UNAVAILABLE.items()) + "."]
    return "\n".join(lines + missing) + "\n"


def run_sep_table1(datasets=SEP_DATASETS, *, repetitions: int = 20, out_dir="sep-table1-out", workers: int = 1,
                   iterations: int = ITERATIONS, fractions=FRACTIONS, methods=SEP_METHODS,
                   progress: bool = True, report_only: bool = False) -> dict:
    """Run (or resume) Table 1 and write ``sep_table1.csv``, ``sep_table1.md`` and
    ``sep_records.jsonl`` in ``out_dir`` (``report_only``: from the cached fits only, computing
    nothing). Returns {"computed", "cached", "failed", "paths", "rows"}."""
    out_dir = Path(out_dir)
    tasks = sep_tasks(datasets, repetitions, fractions, methods, iterations)
    remove_partial_writes(out_dir, "splits")
    records = {t.key: rec for t in tasks if (rec := cached_fit(out_dir, t.key)) is not None}
    n_cached = len(records)
    todo = [] if report_only else [t for t in tasks if t.key not in records]
    for name in UNAVAILABLE:
        say(f"skipping {name}: {UNAVAILABLE[name]}")
    say(f"{len(tasks)} fits: {n_cached} cached in {out_dir}, {len(todo)} to compute on "
         f"{min(workers, max(len(todo), 1))} process(es)")
    failed = run_cached(todo, partial(_compute_sep, out_dir=str(out_dir)), records, workers, progress,
                        out_dir / "splits", len(tasks), unit="fit")
    ordered = [records[t.key] for t in tasks if t.key in records]
    paths = {}
    rows = summarise_sep(ordered) if ordered else []
    if ordered:
        paths = {"sep_table1.csv": out_dir / "sep_table1.csv", "sep_table1.md": out_dir / "sep_table1.md",
                 "sep_records.jsonl": out_dir / "sep_records.jsonl"}
        write_csv(rows, paths["sep_table1.csv"], SUMMARY_COLUMNS)
        atomic_write_text(paths["sep_table1.md"], sep_markdown(rows))
        atomic_write_text(paths["sep_records.jsonl"], "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered))
    return {"computed": len(todo) - len(failed), "cached": n_cached, "failed": failed, "paths": paths, "rows": rows}


#: the columns of ``digits.csv`` (written by :func:`qpviz.reproduce.sep_experiments.run_sep_digits`)
DIGITS_COLUMNS = ("method", "workers", "seconds", "test_error", "ntll", "n_train", "n_test", "n_inducing",
                  "iterations")


def digits_markdown(rows) -> str:
    """Time, test error and NTLL per method and worker count, the spread of the test error across
    worker counts, and the paper's numbers (MNIST, not these digits)."""
    lines = ["| method | Dask workers | training time (s) | test error (%) | NTLL |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method'].upper()} | {r['workers']} | {r['seconds']:.1f} | {100 * r['test_error']:.2f} "
                     f"| {r['ntll']:.4f} |")
    lines.append("")
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        spread_te = max(r["test_error"] for r in mine) - min(r["test_error"] for r in mine)
        spread_ntll = max(r["ntll"] for r in mine) - min(r["ntll"] for r in mine)
        paper = PAPER_DIGITS.get(method)
        lines.append(f"* {method.upper()}: test error differs by {100 * spread_te:.2g} percentage points and NTLL by "
                     f"{spread_ntll:.2g} across worker counts"
                     + (f"; the paper (MNIST, 60,000 training points): {100 * paper['test_error']:.1f}% and "
                        f"{paper['ntll']:.4f}, the same for any number of nodes." if paper else "."))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# The committed results, for the Paper results page
# --------------------------------------------------------------------------------------------

#: the files of ``benchmarks/results/sep_paper/`` the page reads
RESULT_FILES = {"table1": "sep_table1.csv", "figure2": "figure2.png", "digits": "digits.csv"}


def read_digits(path) -> list[dict]:
    """The rows of a ``digits.csv`` (a method other than SEP / SVI is refused)."""
    lines = Path(path).read_text().splitlines()
    if not lines or tuple(lines[0].split(",")) != DIGITS_COLUMNS:
        raise ValueError(f"{path}: expected the columns {','.join(DIGITS_COLUMNS)}")
    rows = []
    for line in lines[1:]:
        row = dict(zip(DIGITS_COLUMNS, line.split(",")))
        if row["method"] not in ("sep", "svi"):
            raise ValueError(f"{path}: unknown method in row {line[:40]!r}")
        rows.append({c: (row[c] if c == "method" else float(row[c]) if c in ("seconds", "test_error", "ntll")
                         else int(row[c])) for c in DIGITS_COLUMNS})
    return rows


def results_markdown(results_dir) -> str:
    """Markdown of the committed Table 1 (ours beside the paper's) and the digits run, or, for a
    file that is missing or unreadable, the command that makes it. Every word is this module's and
    every number is formatted here: nothing of a file's text is passed through."""
    results_dir = Path(results_dir)
    parts = []
    try:
        rows = read_summary(results_dir / RESULT_FILES["table1"])
        if not rows:
            raise ValueError("no rows")
        parts.append(sep_markdown(rows))
    except (OSError, ValueError, KeyError, IndexError):
        parts.append(f"No readable committed Table 1 yet ({RESULT_FILES['table1']} in "
                     "benchmarks/results/sep_paper): run `python -m qpviz.reproduce sep-table1 --out sep-table1-out` "
                     "and copy its sep_table1.csv and sep_table1.md there.")
    try:
        digits = read_digits(results_dir / RESULT_FILES["digits"])
        parts.append("Distributed training (paper 003 sec. 4.4) on scikit-learn's digits, odd vs even:\n\n"
                     + digits_markdown(digits))
    except (OSError, ValueError, KeyError, IndexError):
        parts.append("No readable digits run yet: run `python -m qpviz.reproduce sep-digits --out sep-digits-out` "
                     "and copy its digits.csv to benchmarks/results/sep_paper.")
    return "\n\n".join(parts)
