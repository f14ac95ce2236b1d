"""Table 1 from per-fold records: the summary rows, ``table1.csv``, the Markdown table and raw files.

Aggregation follows the paper (sec. 6.1): in each round the measures are averaged over its folds;
the table gives the mean and standard deviation of these round averages. ``qp_beats_ep_frac`` is
the fraction of single experiments (folds) in which QP's NTLL is below EP's; the Markdown table
marks QP's NTLL with an asterisk where it exceeds 0.9 (the paper's "*"). Units as the paper
prints them: TE x 1e2, NTLL x 1e3. TE x 1e2 is a percentage on the classification sets (the
fraction misclassified) but not on mining: there TE is the mean absolute error of the predicted
yearly counts, so ``te_mean`` 105.3 means 1.053 disasters per year
(:func:`qpviz.reproduce.paper_table.te_unit`).
"""
from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from qpviz.reproduce.protocol import METHODS, STAR_FRACTION

__all__ = ["CSV_COLUMNS", "summarise", "write_csv", "markdown_table", "write_jsonl", "atomic_write_text",
           "hyperparameter_rows", "write_outputs", "read_jsonl", "figure1_points", "figure1_table", "figure1_summary",
           "write_figure1", "DATASET_COLOURS", "DATASET_MARKERS", "dataset_style"]

CSV_COLUMNS = ("dataset", "method", "te_mean", "te_std", "ntll_mean", "ntll_std", "rounds", "qp_beats_ep_frac")
TE_SCALE = 1e2
NTLL_SCALE = 1e3
#: Figure 1's colours and markers, one pair per dataset (Okabe-Ito, colour-blind safe; the marker
#: tells apart the datasets that share a colour). Bokeh's marker names; the PNG maps them.
DATASET_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#999999")
DATASET_MARKERS = ("circle", "square", "triangle", "diamond", "inverted_triangle")
_MATPLOTLIB_MARKERS = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D", "inverted_triangle": "v"}
#: Figure 1's columns, one row per held-out point (:func:`figure1_table`)
FIGURE1_COLUMNS = ("dataset", "round", "fold", "point", "var_ep", "var_qp", "ratio")


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``:
    an interrupted write leaves either the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the results from other users
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _group(records):
    out: dict[str, list[dict]] = {}
    for rec in records:
        out.setdefault(rec["task"]["dataset"], []).append(rec)
    return out


def summarise(records) -> list[dict]:
    """One row per (dataset, method) in the order first seen; see the module docstring."""
    rows = []
    for dataset, recs in _group(records).items():
        rounds = sorted({r["task"]["round"] for r in recs})
        wins = [r["methods"]["qp"]["ntll"] < r["methods"]["ep"]["ntll"] for r in recs]
        frac = float(np.mean(wins))
        for method in METHODS:
            te, ntll = [], []
            for rnd in rounds:
                in_round = [r["methods"][method] for r in recs if r["task"]["round"] == rnd]
                te.append(np.mean([m["test_error"] for m in in_round]))
                ntll.append(np.mean([m["ntll"] for m in in_round]))
            rows.append({
                "dataset": dataset, "method": method,
                "te_mean": float(np.mean(te)) * TE_SCALE, "te_std": float(np.std(te)) * TE_SCALE,
                "ntll_mean": float(np.mean(ntll)) * NTLL_SCALE, "ntll_std": float(np.std(ntll)) * NTLL_SCALE,
                "rounds": len(rounds), "qp_beats_ep_frac": frac,
            })
    return rows


def write_csv(rows, path, columns=CSV_COLUMNS) -> None:
    """``table1.csv`` with :data:`CSV_COLUMNS` (or ``columns``; written atomically)."""
    lines = [",".join(columns)]
    for row in rows:
        lines.append(",".join(f"{row[c]:.6g}" if isinstance(row[c], float) else str(row[c]) for c in columns))
    atomic_write_text(path, "\n".join(lines) + "\n")


def read_csv(path) -> list[dict]:
    """The rows of a ``table1.csv`` (numbers as floats, rounds as int)."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for col in CSV_COLUMNS[2:]:
            row[col] = int(row[col]) if col == "rounds" else float(row[col])
    return rows


def markdown_table(rows, sizes: dict | None = None) -> str:
    """The paper's layout: Data, m, n, TE for EP / QP / VB, NTLL for EP / QP / VB (mean ± std;
    ``*`` after QP's NTLL where QP beats EP in more than 90% of the experiments)."""
    sizes = sizes or {}
    by = {(r["dataset"], r["method"]): r for r in rows}
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    head = ("| Data | m | n | TE EP | TE QP | TE VB | NTLL EP | NTLL QP | NTLL VB |\n"
            "|---|---|---|---|---|---|---|---|---|")
    from qpviz.reproduce.paper_table import COUNT_DATASETS, te_unit  # noqa: PLC0415 - it imports this module

    counts = [name for name in datasets if name in COUNT_DATASETS]
    units = "".join(f" TE on {name}: the {te_unit(name, long=True)}, not a percentage." for name in counts)
    lines = [f"TE (x 1e-2), NTLL (x 1e-3); mean ± std over rounds. * QP's NTLL below EP's in more than "
             f"{STAR_FRACTION:.0%} of the experiments.{units}", "", head]
    for name in datasets:
        m, n = sizes.get(name, ("", ""))
        cells = [f"{by[(name, meth)]['te_mean']:.1f} ± {by[(name, meth)]['te_std']:.1f}" for meth in METHODS]
        for meth in METHODS:
            row = by[(name, meth)]
            star = "*" if meth == "qp" and row["qp_beats_ep_frac"] > STAR_FRACTION else ""
            cells.append(f"{row['ntll_mean']:.1f} ± {row['ntll_std']:.1f}{star}")
        lines.append(f"| {name} | {m} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_jsonl(records, path) -> None:
    """One JSON object per line, sorted by dataset, round and fold (written atomically)."""
    ordered = sorted(records, key=lambda r: (r["task"]["dataset"], r["task"]["round"], r["task"]["fold"]))
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered))


def hyperparameter_rows(records) -> list[dict]:
    """Per fold: dataset, round, fold, the fitted hyper-parameters and the names on a bound."""
    rows = [{**{k: r["task"][k] for k in ("dataset", "preprocessing", "round", "fold")},
             "hyperparameters": r["hyperparameters"], "at_bound": r["at_bound"]} for r in records]
    return sorted(rows, key=lambda h: (h["dataset"], h["round"], h["fold"]))


def figure1_points(records) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{dataset: (EP variances, QP variances)} of every test point of every fold (Figure 1's data;
    records without ``test_latent_var`` are left out)."""
    out: dict[str, tuple[list, list]] = {}
    for rec in records:
        var = rec.get("test_latent_var")
        if var is None:
            continue
        ep, qp = out.setdefault(rec["task"]["dataset"], ([], []))
        ep.extend(var["ep"])
        qp.extend(var["qp"])
    return {name: (np.asarray(ep, float), np.asarray(qp, float)) for name, (ep, qp) in out.items()}


def dataset_style(index: int) -> tuple[str, str]:
    """(colour, Bokeh marker) of the ``index``-th dataset of Figure 1."""
    return DATASET_COLOURS[index % len(DATASET_COLOURS)], DATASET_MARKERS[index % len(DATASET_MARKERS)]


def read_jsonl(path) -> list[dict]:
    """The records of a ``folds.jsonl``; ValueError naming the line of a record that is not JSON."""
    records = []
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"line {number} is not JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"line {number} is not a record (a JSON object)")
            records.append(record)
    return records


def figure1_table(records, order=()) -> tuple[dict, dict]:
    """Figure 1's points as columns (:data:`FIGURE1_COLUMNS`, one row per held-out point of every
    fold, datasets in ``order`` first, then as first seen) and {dataset: points left out}.

    A point is left out when either variance is not finite and positive (the log axes cannot show
    it); a record without ``test_latent_var`` or with EP and QP lists of different lengths is left
    out whole (its points count as left out)."""
    rows: dict[str, list] = {}
    dropped: dict[str, int] = {}
    for rec in records:
        task, var = rec.get("task") or {}, rec.get("test_latent_var")
        name = str(task.get("dataset", "?"))
        try:
            ep, qp = (np.asarray(var[m], float).ravel() for m in ("ep", "qp"))
        except (TypeError, KeyError, ValueError):
            dropped[name] = dropped.get(name, 0) + int(rec.get("n_test") or 0)
            continue
        if ep.shape != qp.shape:
            dropped[name] = dropped.get(name, 0) + max(ep.size, qp.size)
            continue
        ok = np.isfinite(ep) & np.isfinite(qp) & (ep > 0) & (qp > 0)
        dropped[name] = dropped.get(name, 0) + int((~ok).sum())
        rows.setdefault(name, []).append((task.get("round", -1), task.get("fold", -1), np.flatnonzero(ok), ep[ok], qp[ok]))
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(rows, key=lambda n: (rank.get(n, len(rank)), list(rows).index(n)))
    columns: dict[str, list] = {c: [] for c in FIGURE1_COLUMNS}
    for name in names:
        for rnd, fold, point, ep, qp in rows[name]:
            columns["dataset"] += [name] * len(ep)
            columns["round"] += [int(rnd)] * len(ep)
            columns["fold"] += [int(fold)] * len(ep)
            columns["point"] += point.tolist()
            columns["var_ep"] += ep.tolist()
            columns["var_qp"] += qp.tolist()
    table = {c: np.asarray(v, dtype=object if c == "dataset" else (int if c in ("round", "fold", "point") else float))
             for c, v in columns.items() if c != "ratio"}
    table["ratio"] = table["var_qp"] / table["var_ep"] if len(table["var_ep"]) else np.zeros(0)
    return table, {name: n for name, n in dropped.items() if n}


def figure1_summary(table, rtol: float = 1e-9) -> dict[str, dict]:
    """Per dataset of a :func:`figure1_table`: ``points``, ``above`` (QP's variance above EP's by more
    than ``rtol``, against Theorem 2's bound), ``max_ratio`` and ``median_ratio`` of var_QP / var_EP."""
    out = {}
    for name in dict.fromkeys(table["dataset"].tolist()):
        ratio = table["ratio"][table["dataset"] == name]
        out[name] = {"points": int(ratio.size), "above": int((ratio > 1 + rtol).sum()),
                     "max_ratio": float(ratio.max()), "median_ratio": float(np.median(ratio))}
    return out


def write_figure1(records, path) -> Path | None:
    """Figure 1 of the paper as PNG, two panels: (a) QP's against EP's predictive latent variance
    on the test points (log axes, the diagonal dashed: QP = EP), as the paper draws it; (b) their
    ratio var_QP / var_EP against var_EP, where the size of the effect (a few per cent) is visible.
    One colour and marker per dataset (Okabe-Ito, colour-blind safe). None when no record carries
    the variances."""
    points = figure1_points(records)
    if not points:
        return None
    import matplotlib  # noqa: PLC0415 - only the report needs it

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415

    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(11.0, 5.0), dpi=130)
    low, high = np.inf, 0.0
    for i, (name, (ep, qp)) in enumerate(points.items()):
        ok = (ep > 0) & (qp > 0) & np.isfinite(ep) & np.isfinite(qp)
        colour, marker = dataset_style(i)
        style = dict(s=7, alpha=0.55, color=colour, marker=_MATPLOTLIB_MARKERS[marker], label=name, linewidths=0)
        ax.scatter(ep[ok], qp[ok], **style)
        ax_ratio.scatter(ep[ok], qp[ok] / ep[ok], **style)
        if ok.any():
            low, high = min(low, ep[ok].min(), qp[ok].min()), max(high, ep[ok].max(), qp[ok].max())
    if np.isfinite(low):
        ax.plot([low, high], [low, high], "k--", lw=1, label="QP = EP")
        ax_ratio.axhline(1.0, color="k", ls="--", lw=1, label="QP = EP")
    for axis in (ax, ax_ratio):
        axis.set_xscale("log")
        axis.set_xlabel("EP predictive latent variance")
    ax.set_yscale("log")
    ax.set_ylabel("QP predictive latent variance")
    ax.set_title("(a) Figure 1: QP vs EP, every test point")
    ax_ratio.set_ylabel("var_QP / var_EP")
    ax_ratio.set_title("(b) the ratio var_QP / var_EP per test point")
    ax.legend(fontsize=7, markerscale=2, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def write_outputs(records, out_dir, sizes: dict | None = None) -> dict:
    """``table1.csv``, ``table1.md``, ``folds.jsonl``, ``hyperparameters.jsonl`` and (when the
    records carry the test variances) ``figure1.png`` in ``out_dir``."""
    out_dir = Path(out_dir)
    rows = summarise(records)
    paths = {name: out_dir / name for name in ("table1.csv", "table1.md", "folds.jsonl", "hyperparameters.jsonl")}
    write_csv(rows, paths["table1.csv"])
    atomic_write_text(paths["table1.md"], markdown_table(rows, sizes))
    write_jsonl(records, paths["folds.jsonl"])
    atomic_write_text(paths["hyperparameters.jsonl"],
                      "".join(json.dumps(h, sort_keys=True) + "\n" for h in hyperparameter_rows(records)))
    figure = write_figure1(records, out_dir / "figure1.png")
    if figure is not None:
        paths["figure1.png"] = figure
    return paths
