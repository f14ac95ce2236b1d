"""The speed guard (issue 22 point 2): every latency and speed benchmark, briefly, against a baseline.

    .venv/bin/python benchmarks/check.py [--only NAME ...] [--update-baseline] [--list]

Runs each benchmark of :data:`BENCHMARKS` as a subprocess with brief options, reads the figures it
prints, and measures three *floors* in the same run:

* ``page``: the minimal Panel page served like the app (bench_explorer_latency.py's
  "(minimal+app settings)" page, measured by its own ``measure_baseline``, plots median of 12
  presses): the floor of every browser latency;
* ``matmul``: one ``A @ B`` of two 1000 x 1000 float64 matrices (NumPy, one BLAS thread);
* ``ep``: one EP projection batch, ``qpviz.project(probit, ..., method="ep")`` on 10^6 points
  (CPU time; in ns per point, the unit of the per-point figures).

The floors are measured just before and just after each benchmark, and each benchmark's figures
are divided by the mean of its two (the load of the shared machine changes within minutes). Each figure is printed with its value, its ratio to
its floor, the baseline ratio from ``benchmarks/baseline.json`` and the change; a ratio more than
25% (``--threshold``) above its baseline is flagged. A ratio to a floor measured at the same time
cancels most of the machine's speed and load; what is left is noise of ~10-20% on this shared
machine, so a flag says "look again", not "proven slower": rerun with ``--only NAME``.

Exit code: 0 no figure flagged; 1 some figure grew more than the threshold; 2 a benchmark failed
or a figure of the baseline was not printed. ``--update-baseline`` writes this run's ratios into
the baseline (only the benchmarks run, with ``--only``); do that on main's state.

It is not a unit test and does not run in CI: run it before a change to ``qpviz/`` or ``app/`` is
submitted and paste its table. What each benchmark measures: ``benchmarks/README.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# one BLAS thread for the A @ B floor, as the benchmarks it divides (set before NumPy is imported)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().parent / "baseline.json"
THRESHOLD = 0.25
#: Above this load average (2 cores) the browser figures are not comparable: the minimal page needs
#: little CPU and hardly slows down, the app's pages do (measured at load 7-10: pages 1.5-2.5x their
#: ratios at load 5, the floor unchanged)
BUSY_LOAD = 3.0
#: A @ B floor: the matrices' size and the repeats (median)
MATMUL_N = 1000
#: EP floor: points of the projection batch and the repeats (median)
EP_POINTS = 10**6
FLOOR_REPEATS = 7

NUMBER = r"(\d+(?:\.\d+)?)"
#: bench_explorer_latency.py's table rows: name, numbers median, numbers max, plots median, plots p90,
#: plots max, compute (ms); the minimal page's rows have "-" for compute
EXPLORER_ROW = re.compile(rf"^(\S.*?)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+(\S+)\s*$")
EXPLORER_FLOOR_ROW = "(minimal+app settings)"
#: bench_gp_latency.py, bench_sparse_latency.py, bench_vsgp_latency.py: "<case> median <x> ms  p90 ..."
PAGE_CASE = re.compile(rf"^(\S.*?)\s+median\s+{NUMBER} ms\s+p90")
PROJECTION = re.compile(rf"project qp/ep time ratio {NUMBER} \(qp {NUMBER} ms, ep {NUMBER} ms\).*"
                        rf"\(moments {NUMBER} ms, table {NUMBER} ms\)")
TABLES_ROW = re.compile(rf"^(\S+\.npz)\s+{NUMBER} ([Mk])\s+{NUMBER} ([Mk])\s+{NUMBER} ([Mk])\s+{NUMBER} ([Mk])\s+"
                        rf"{NUMBER} ([Mk])")
#: a table row of a size and six numbers: bench_inference.py's sweep rows; bench_sep_step.py's rows
#: (N, SEP ms, SVI ms, SEP/SVI, SEP cpu, SVI cpu, cpu ratio)
SIZE_AND_SIX_NUMBERS = re.compile(rf"^\s*(\d+)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s*$")
INFERENCE_PAGES = re.compile(rf"^median of \d+: {NUMBER} ms")
INFERENCE_QP = re.compile(rf"^EP {NUMBER} s\s+QP {NUMBER} s")
SPARSE_LARGE = re.compile(rf"^\s+(\S.*?)\s+parallel sweep\s+{NUMBER} ms")
SPARSE_SMALL = re.compile(rf"^\s+(EP|QP) alpha = ([\d.]+): sequential sweep\s+{NUMBER} ms; whole fit .*?{NUMBER} ms")


@dataclass(frozen=True)
class Figure:
    """One measured figure: its value in ``unit`` and the floor it is divided by."""

    name: str
    value: float
    unit: str
    floor: str


def _rate_ns(value: str, scale: str) -> float:
    """ns per point of a rate printed as '<value> M' or '<value> k' (per second)."""
    return 1e9 / (float(value) * (1e6 if scale == "M" else 1e3))


def parse_projection(text: str) -> list[Figure]:
    out = []
    for match in PROJECTION.finditer(text):
        qp, table = float(match.group(2)), float(match.group(5))
        out += [Figure("projection: project qp, probit 10^6", qp, "ms", "ep_ms"),
                Figure("projection: table kernel, probit 10^6", table, "ms", "ep_ms")]
    return out


def parse_tables(text: str) -> list[Figure]:
    out = []
    for line in text.splitlines():
        match = TABLES_ROW.match(line)
        if match:
            name = match.group(1)
            out += [Figure(f"tables: {name} lookup", _rate_ns(match.group(2), match.group(3)), "ns/pt", "ep_ns"),
                    Figure(f"tables: {name} project qp", _rate_ns(match.group(10), match.group(11)), "ns/pt",
                           "ep_ns")]
    return out


def parse_inference(text: str) -> list[Figure]:
    out = []
    for line in text.splitlines():
        if match := SIZE_AND_SIX_NUMBERS.match(line):
            out.append(Figure(f"inference: EP sweep N={match.group(1)}", float(match.group(3)) * 1e3, "ms", "matmul"))
        elif match := INFERENCE_PAGES.match(line):
            out.append(Figure("inference: pages' EP+QP fits N=200", float(match.group(1)), "ms", "matmul"))
        elif match := INFERENCE_QP.match(line):
            out.append(Figure("inference: QP sweep N=500", float(match.group(2)) * 1e3, "ms", "matmul"))
    return out


def parse_sparse_sweep(text: str) -> list[Figure]:
    out = []
    for line in text.splitlines():
        if match := SPARSE_LARGE.match(line):
            out.append(Figure(f"sparse sweep: {match.group(1)} parallel", float(match.group(2)), "ms", "matmul"))
        elif match := SPARSE_SMALL.match(line):
            label = f"{match.group(1)} alpha={match.group(2)}"
            out += [Figure(f"sparse sweep: N=500 {label} sequential", float(match.group(3)), "ms", "matmul"),
                    Figure(f"sparse sweep: N=500 {label} whole fit", float(match.group(4)), "ms", "matmul")]
    return out


def parse_sep_step(text: str) -> list[Figure]:
    """One SEP and one SVI step with hyper-parameter learning, second epoch (sites stored), per N."""
    out = []
    for line in text.splitlines():
        if match := SIZE_AND_SIX_NUMBERS.match(line):
            n = match.group(1)
            out += [Figure(f"sep step: SEP, N={n}, epoch 2", float(match.group(2)), "ms", "matmul"),
                    Figure(f"sep step: SVI, N={n}, epoch 2", float(match.group(3)), "ms", "matmul")]
    return out


def parse_explorer(text: str) -> list[Figure]:
    """Each likelihood's plots median and the page floor (the minimal page with the app's settings)."""
    out = []
    for line in text.splitlines():
        match = EXPLORER_ROW.match(line)
        if not match:
            continue
        name, plots = match.group(1).strip(), float(match.group(4))
        if name == EXPLORER_FLOOR_ROW:
            out.append(Figure("floor: minimal page", plots, "ms", "page_floor"))
        elif not name.startswith("("):
            out.append(Figure(f"explorer: {name}", plots, "ms", "page"))
    return out


def page_cases(prefix: str):
    """A parser of the median lines of a page latency benchmark (gp, sparse, vsgp, switch)."""
    def parse(text: str) -> list[Figure]:
        return [Figure(f"{prefix}: {m.group(1).strip()}", float(m.group(2)), "ms", "page")
                for m in map(PAGE_CASE.match, text.splitlines()) if m]
    return parse


@dataclass(frozen=True)
class Benchmark:
    name: str
    argv: tuple
    parse: object
    browser: bool = False
    env: dict = field(default_factory=dict)


#: What the guard runs, in order (the explorer first: it measures the page floor). The brief
#: options keep the whole check within ~5-10 minutes on the 2-core machine.
BENCHMARKS = (
    Benchmark("projection", ("bench_projection.py", "--ratio-only", "--repeats", "9"), parse_projection),
    Benchmark("tables", ("bench_tables.py", "--n", "1000000", "--n-direct", "50", "--only", "probit",
                         "step_eps0.1.npz", "poisson_square"), parse_tables),
    Benchmark("inference", ("bench_inference.py", "--sizes", "500", "1000", "2000", "--page-repeats", "10",
                            "--qp-repeats", "5", "--skip-mcmc"), parse_inference),
    Benchmark("sparse_sweep", ("bench_sparse_sweep.py", "--n", "50000", "--repeats", "5", "--small-repeats", "10"),
              parse_sparse_sweep),
    Benchmark("sep_step", ("bench_sep_step.py", "--sizes", "20000", "--epoch", "2", "--steps", "80", "--rounds", "2"),
              parse_sep_step),
    Benchmark("explorer", ("bench_explorer_latency.py", "--presses", "12"), parse_explorer, browser=True),
    Benchmark("gp", ("bench_gp_latency.py", "--presses", "15"), page_cases("gp"), browser=True),
    Benchmark("sparse", ("bench_sparse_latency.py", "--presses", "15"), page_cases("sparse"), browser=True),
    Benchmark("vsgp", ("bench_vsgp_latency.py", "--presses", "15"), page_cases("vsgp"), browser=True),
    Benchmark("switch", ("bench_page_switch.py", "--repeats", "3", "--switches", "6"), page_cases("switch"),
              browser=True),
)


# -- comparison (no timing: tests/test_bench_check.py) -----------------------------------------------
@dataclass(frozen=True)
class Row:
    figure: Figure
    ratio: float
    baseline: float | None

    @property
    def change(self) -> float | None:
        return None if self.baseline is None else self.ratio / self.baseline - 1.0

    def flagged(self, threshold: float = THRESHOLD) -> bool:
        return self.change is not None and self.change > threshold


def floor_key(figure: Figure) -> str:
    """Which floor divides ``figure``: 'page', 'matmul' or 'ep' (ms and ns/pt of the same batch)."""
    return {"page_floor": "page", "ep_ms": "ep", "ep_ns": "ep"}.get(figure.floor, figure.floor)


def compare(figures: list[Figure], floors: dict, baseline: dict) -> list[Row]:
    """Each figure's ratio to its floor beside its baseline ratio. ``floors``: 'page' (ms),
    'matmul' (ms), 'ep' (ms per 10^6 points = ns per point). A floor figure itself gets ratio 1."""
    rows = []
    for fig in figures:
        floor = floors.get(floor_key(fig))
        ratio = float("nan") if not floor else fig.value / floor
        rows.append(Row(fig, ratio, baseline.get(fig.name)))
    return rows


def missing(rows: list[Row], baseline: dict, ran: set) -> list[str]:
    """Baseline figures of the benchmarks that ran that this run did not print."""
    printed = {row.figure.name for row in rows}
    return sorted(name for name in baseline if benchmark_of(name) in ran and name not in printed)


def table(rows: list[Row], threshold: float = THRESHOLD) -> str:
    width = max([len("figure")] + [len(row.figure.name) for row in rows])
    lines = [f"{'figure':{width}s} {'value':>9s} {'unit':5s} {'floor':6s} {'ratio':>7s} {'baseline':>8s} {'change':>7s}"]
    for row in rows:
        fig = row.figure
        base = "-" if row.baseline is None else f"{row.baseline:8.3f}"
        change = "new" if row.change is None else f"{row.change:+7.0%}"
        flag = f"  << grew more than {threshold:.0%}" if row.flagged(threshold) else ""
        lines.append(f"{fig.name:{width}s} {fig.value:9.2f} {fig.unit:5s} {floor_key(fig):6s} {row.ratio:7.3f} "
                     f"{base:>8s} {change:>7s}{flag}")
    return "\n".join(lines)


def benchmark_of(name: str) -> str:
    """The benchmark a figure name belongs to (its prefix), 'floor' for the floors."""
    prefix = name.split(":")[0]
    return {"gp": "gp", "sparse": "sparse", "vsgp": "vsgp", "explorer": "explorer", "projection": "projection",
            "tables": "tables", "inference": "inference", "sparse sweep": "sparse_sweep"}.get(prefix, prefix)


def read_baseline(path: Path) -> dict:
    if not path.exists():
        return {}
    return json.loads(path.read_text())["ratios"]


def write_baseline(path: Path, rows: list[Row], ran: set, floors: dict, comment: str = "") -> None:
    old = json.loads(path.read_text()) if path.exists() else {"ratios": {}}
    ratios = {k: v for k, v in old["ratios"].items() if benchmark_of(k) not in ran}
    ratios.update({row.figure.name: round(row.ratio, 4) for row in rows
                   if row.ratio == row.ratio and benchmark_of(row.figure.name) != "floor"})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    # the floors of the benchmarks not run stay (their ratios were measured against them), and the
    # notes of the earlier writes they come from
    old_note = old.get("note", {})
    kept_floors = {name: f for name, f in old_note.get("floors_ms", {}).items() if name not in ran}
    earlier = old_note.get("earlier", [])
    if old_note and set(old_note.get("benchmarks", [])) - ran:
        earlier = earlier + [{k: v for k, v in old_note.items() if k not in ("floors_ms", "earlier")}]
    note = {"written": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit.strip() or "unknown",
            "load_average": round(os.getloadavg()[0], 2),
            "floors_ms": {**kept_floors, **{name: {k: round(v, 2) for k, v in f.items()} for name, f in floors.items()}},
            "benchmarks": sorted(ran), "comment": comment}
    if earlier and kept_floors:
        note["earlier"] = earlier
    path.write_text(json.dumps({"note": note, "ratios": dict(sorted(ratios.items()))}, indent=1) + "\n")


# -- measuring -----------------------------------------------------------------------------------
def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def compute_floors() -> dict:
    """'matmul' (ms, wall; one BLAS thread) and 'ep' (CPU ms of one EP batch of 10^6 probit points)."""
    import numpy as np

    import qpviz

    gen = np.random.default_rng(0)
    a, b = gen.random((MATMUL_N, MATMUL_N)), gen.random((MATMUL_N, MATMUL_N))
    m = gen.uniform(-10, 10, EP_POINTS)
    v = np.exp(gen.uniform(np.log(0.05), np.log(20.0), EP_POINTS)) ** 2
    y = np.where(gen.random(EP_POINTS) < 0.5, -1.0, 1.0)
    lik = qpviz.likelihood("probit")
    qpviz.project(lik, y, m, v, method="ep")  # compile / load
    a @ b
    matmul, ep = [], []
    for _ in range(FLOOR_REPEATS):  # interleaved
        start = time.perf_counter()
        a @ b
        matmul.append(time.perf_counter() - start)
        start = time.process_time()
        qpviz.project(lik, y, m, v, method="ep")
        ep.append(time.process_time() - start)
    return {"matmul": 1e3 * _median(matmul), "ep": 1e3 * _median(ep)}


#: The minimal page alone, with the app's server settings, by bench_explorer_latency.py's own code
#: (its BASELINE_VARIANTS and measure_baseline(playwright, presses, label, settings) -> (row, plots
#: median)); prints its row.
PAGE_FLOOR_CODE = """
import sys
sys.path.insert(0, "benchmarks")
import bench_explorer_latency as bench
from playwright.sync_api import sync_playwright
settings = dict(bench.BASELINE_VARIANTS)[{label!r}]
with sync_playwright() as playwright:
    print(bench.measure_baseline(playwright, {presses}, {label!r}, settings)[0])
"""
PAGE_FLOOR_PRESSES = 12


def _environment(browser: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if browser:
        env.setdefault("CHROMIUM_PATH", "/usr/bin/chromium")
    return env


def page_floor() -> float | None:
    """The minimal page's plots median (ms) now, or None if it could not be measured."""
    code = PAGE_FLOOR_CODE.format(label=EXPLORER_FLOOR_ROW, presses=PAGE_FLOOR_PRESSES)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_environment(True), capture_output=True,
                          text=True)
    found = [f.value for f in parse_explorer(proc.stdout) if f.floor == "page_floor"]
    if not found:
        print(f"  page floor FAILED (exit {proc.returncode}): {proc.stderr[-800:]}")
        return None
    return found[0]


def run_benchmark(bench: Benchmark) -> tuple[list[Figure], str]:
    """(figures, error text or '') of one benchmark run as a subprocess of this interpreter."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench.argv[0]), *bench.argv[1:]], cwd=ROOT,
                          env=_environment(bench.browser), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    figures = bench.parse(proc.stdout)
    print(f"  {bench.name}: {len(figures)} figures in {seconds:.0f} s (exit {proc.returncode})", flush=True)
    if proc.returncode != 0 or not figures:
        return figures, f"{bench.name} exited {proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
    return figures, ""


def around(before: dict, after: dict) -> dict:
    """The floors of a benchmark: the mean of those measured just before and just after it."""
    return {k: 0.5 * (before[k] + after[k]) for k in before if before[k] and after.get(k)}


def main(argv=None) -> int:
    names = [b.name for b in BENCHMARKS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=names, help="run only these benchmarks")
    parser.add_argument("--update-baseline", action="store_true", help="write this run's ratios to the baseline")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="flag ratios above baseline by more")
    parser.add_argument("--comment", default="", help="a note stored with --update-baseline (e.g. the state run)")
    parser.add_argument("--list", action="store_true", help="print the benchmarks and their commands, run nothing")
    args = parser.parse_args(argv)
    if args.list:
        for bench in BENCHMARKS:
            print(f"{bench.name:14s} benchmarks/{' '.join(bench.argv)}")
        return 0
    ran = set(args.only or names)
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load_start:.1f} at the start", flush=True)
    baseline = read_baseline(args.baseline)
    # each benchmark's figures are divided by floors measured just before and just after it (the
    # load of a shared machine changes within minutes); browser ones by the minimal page, the others
    # by A @ B and the EP batch
    floors = compute_floors()
    page = None
    rows, errors, used = [], [], []
    for bench in BENCHMARKS:
        if bench.name not in ran:
            continue
        if bench.browser and page is None:
            page = page_floor()
        found, error = run_benchmark(bench)
        if error:
            errors.append(error)
        if bench.browser:
            after = page_floor()
            now = around({"page": page}, {"page": after})
            page = after
        else:
            after = compute_floors()
            now = around(floors, after)
            floors = after
        described = ", ".join(f"{k} {v:.1f} ms" for k, v in now.items())
        print(f"    floors (mean of before and after): {described or 'NOT MEASURED'}", flush=True)
        if not now:
            errors.append(f"{bench.name}: its floor could not be measured")
        used.append((bench.name, now))
        rows += compare(found, now, baseline)
    print(table(rows, args.threshold))
    absent = missing(rows, baseline, ran)
    for name in absent:
        print(f"MISSING: {name} (in the baseline, not printed by this run)")
    for error in errors:
        print(f"FAILED: {error}")
    flagged = [row.figure.name for row in rows if row.flagged(args.threshold)]
    if max(load_start, os.getloadavg()[0]) > BUSY_LOAD:
        print(f"WARNING: load average above {BUSY_LOAD:g} during the run: the page ratios grow with the load "
              "(the minimal page barely does); rerun the flagged ones (--only NAME) on a quieter machine")
    print(f"{len(rows)} figures, {len(flagged)} flagged (> {args.threshold:.0%} above baseline), "
          f"{len(absent)} missing, {len(errors)} failed; load average {os.getloadavg()[0]:.1f} at the end; "
          f"{time.perf_counter() - started:.0f} s")
    if args.update_baseline:
        if errors:
            print("baseline NOT written: a benchmark failed")
            return 2
        write_baseline(args.baseline, rows, ran, dict(used), args.comment)
        print(f"baseline written: {args.baseline}")
    return 2 if errors or absent else 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
