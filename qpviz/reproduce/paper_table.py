"""Table 1 of the QP paper (Zhang et al., NeurIPS 2020) as data, and our results compared with it.

:data:`PAPER_TABLE1` holds the printed numbers (TE x 1e-2, NTLL x 1e-3; mean and standard
deviation over the rounds: 100 rounds of 10-fold cross-validation, mining 200 random splits) and
the paper's asterisks (QP's NTLL below EP's in more than 90% of the experiments).

TE has two meanings (sec. 6.1-6.2): on the classification sets it is the fraction misclassified,
so x 1e-2 reads as a percentage; on mining (Poisson regression, :data:`COUNT_DATASETS`) it is the
mean absolute error of the predicted yearly counts, so 118.6 means 1.186 disasters per year, not a
percentage (:func:`te_unit`).
:func:`compare` sets rows of a ``table1.csv`` (as :func:`qpviz.reproduce.report.read_csv` gives
them) beside these numbers. Nothing here computes a fit.
"""
from __future__ import annotations

from dataclasses import dataclass

from qpviz.reproduce.protocol import METHODS, STAR_FRACTION

__all__ = ["PaperRow", "PAPER_TABLE1", "PAPER_NAMES", "PAPER_ROUNDS", "MEASURES", "TE_MIN_TOLERANCE",
           "PRINT_HALF_UNIT", "COUNT_DATASETS", "TE_UNITS", "paper_rows", "te_unit", "tolerance", "compare",
           "compare_stars"]

#: the measures of Table 1, as the columns of ``table1.csv`` spell them
MEASURES = ("te", "ntll")
#: a classification TE difference of up to 1 percentage point counts as agreement even where the
#: paper's std is smaller (not for :data:`COUNT_DATASETS`, whose TE is no percentage)
TE_MIN_TOLERANCE = 1.0
#: datasets with count targets (Poisson regression, sec. 6.2): TE is a mean absolute error of counts
COUNT_DATASETS = frozenset({"mining"})
#: TE's unit as Table 1 prints it (x 1e-2): short and long form, for classification and for counts
TE_UNITS = {
    "labels": ("%", "test error in % (fraction misclassified x 1e2)"),
    "counts": ("1e-2 disasters / year", "mean absolute error of the predicted yearly counts, in 1e-2 disasters "
                                        "per year (118.6 = 1.186 disasters per year)"),
}
#: NTLL's unit as Table 1 prints it (x 1e-3, natural log per test point)
NTLL_UNIT = "1e-3 nats"
#: the paper prints one decimal: a printed std of 0.0 means a std below 0.05
PRINT_HALF_UNIT = 0.05
#: rounds behind each of the paper's means (sec. 6.1: 100; sec. 6.2: 200 splits of mining)
PAPER_ROUNDS = {"mining": 200}

#: the paper's row labels of the datasets (its "Data" column)
PAPER_NAMES = {
    "ionosphere": "IonoS", "cancer": "Cancer", "pima": "Pima", "crabs": "Crabs", "sonar": "Sonar",
    "glass": "Glass", "wine1": "Wine1", "wine2": "Wine2", "wine3": "Wine3", "mining": "Mining",
}


@dataclass(frozen=True)
class PaperRow:
    """One row of Table 1: sizes, (mean, std) per method of TE and NTLL, and the asterisk."""

    m: int
    n: int
    te: dict
    ntll: dict
    qp_star: bool


def _row(m, n, te, ntll, star) -> PaperRow:
    return PaperRow(m, n, dict(zip(METHODS, te)), dict(zip(METHODS, ntll)), star)


#: Table 1 of the paper, transcribed: TE (EP, QP, VB) and NTLL (EP, QP, VB) as (mean, std).
PAPER_TABLE1 = {
    "ionosphere": _row(351, 34, ((7.9, 0.5), (7.9, 0.5), (18.9, 6.9)),
                       ((215.9, 8.4), (215.9, 8.5), (337.4, 70.8)), False),
    "cancer": _row(683, 9, ((3.2, 0.2), (3.2, 0.2), (3.1, 0.2)),
                   ((88.2, 3.1), (88.2, 3.1), (88.9, 19.1)), True),
    "pima": _row(732, 7, ((20.3, 1.0), (20.3, 1.0), (21.9, 0.4)),
                 ((424.7, 13.0), (424.0, 13.2), (450.3, 2.6)), True),
    "crabs": _row(200, 7, ((2.7, 0.5), (2.7, 0.5), (3.7, 0.7)),
                  ((64.4, 8.2), (64.3, 8.4), (164.7, 7.5)), False),
    "sonar": _row(208, 60, ((14.0, 1.1), (14.0, 1.1), (25.7, 3.9)),
                  ((306.7, 10.8), (306.2, 10.9), (693.1, 0.0)), True),
    "glass": _row(214, 10, ((1.1, 0.4), (1.0, 0.4), (2.6, 0.5)),
                  ((29.5, 5.4), (29.0, 5.5), (79.5, 6.3)), True),
    "wine1": _row(130, 13, ((1.5, 0.5), (1.5, 0.5), (1.7, 0.6)),
                  ((48.0, 3.4), (47.4, 3.4), (83.9, 5.2)), True),
    "wine2": _row(107, 13, ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
                  ((18.0, 1.2), (17.8, 1.2), (26.7, 1.9)), True),
    "wine3": _row(119, 13, ((2.0, 1.0), (2.0, 1.0), (1.2, 0.7)),
                  ((52.1, 5.6), (51.8, 5.6), (69.4, 5.0)), True),
    "mining": _row(112, 1, ((118.6, 27.0), (118.6, 27.0), (170.3, 15.9)),
                   ((1606.8, 116.3), (1606.5, 116.3), (2007.3, 119.8)), False),
}


def paper_rows() -> list[dict]:
    """The paper's table in the layout of ``table1.csv`` rows (plus ``star``: the asterisk,
    set on QP's row only; the paper gives no fraction, so ``qp_beats_ep_frac`` is absent)."""
    rows = []
    for dataset, row in PAPER_TABLE1.items():
        for method in METHODS:
            rows.append({"dataset": dataset, "method": method,
                         "te_mean": row.te[method][0], "te_std": row.te[method][1],
                         "ntll_mean": row.ntll[method][0], "ntll_std": row.ntll[method][1],
                         "rounds": PAPER_ROUNDS.get(dataset, 100), "star": method == "qp" and row.qp_star})
    return rows


def te_unit(dataset: str, long: bool = False) -> str:
    """TE's unit on ``dataset`` as Table 1 prints it (:data:`TE_UNITS`; short form unless ``long``)."""
    return TE_UNITS["counts" if dataset in COUNT_DATASETS else "labels"][int(long)]


def tolerance(measure: str, paper_std: float, dataset: str | None = None) -> float:
    """How far our mean may lie from the paper's and still agree: the paper's std (at least half
    a printed unit), and for a classification TE at least :data:`TE_MIN_TOLERANCE` percentage
    points. A TE of a :data:`COUNT_DATASETS` set is no percentage: only the std rule applies."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}; got {measure!r}")
    percent = measure == "te" and dataset not in COUNT_DATASETS
    floor = TE_MIN_TOLERANCE if percent else PRINT_HALF_UNIT
    return max(float(paper_std), floor)


def compare(rows) -> list[dict]:
    """Our rows beside the paper's, one tidy record per (dataset, method, measure).

    Each record: ``dataset``, ``method``, ``measure`` ("te" | "ntll"), ``ours_mean``,
    ``ours_std``, ``paper_mean``, ``paper_std``, ``difference`` = ours_mean - paper_mean,
    ``tolerance`` (:func:`tolerance`), ``within`` = |difference| <= tolerance and ``unit`` (TE:
    :func:`te_unit`; NTLL: "1e-3 nats"). Datasets or
    methods the paper does not have are left out; the order is that of ``rows``.
    """
    out = []
    for row in rows:
        paper = PAPER_TABLE1.get(row["dataset"])
        if paper is None or row["method"] not in METHODS:
            continue
        for measure in MEASURES:
            paper_mean, paper_std = getattr(paper, measure)[row["method"]]
            difference = float(row[f"{measure}_mean"]) - paper_mean
            tol = tolerance(measure, paper_std, row["dataset"])
            out.append({"dataset": row["dataset"], "method": row["method"], "measure": measure,
                        "ours_mean": float(row[f"{measure}_mean"]), "ours_std": float(row[f"{measure}_std"]),
                        "paper_mean": paper_mean, "paper_std": paper_std, "difference": difference,
                        "tolerance": tol, "within": abs(difference) <= tol,
                        "unit": te_unit(row["dataset"]) if measure == "te" else NTLL_UNIT})
    return out


def compare_stars(rows, threshold: float = STAR_FRACTION) -> list[dict]:
    """Per dataset of ``rows`` that the paper has: our fraction of folds where QP's NTLL is below
    EP's, our asterisk (fraction > ``threshold``), the paper's, and whether they agree."""
    out = []
    seen = set()
    for row in rows:
        name = row["dataset"]
        if name in seen or name not in PAPER_TABLE1 or row.get("qp_beats_ep_frac") is None:
            continue
        seen.add(name)
        frac = float(row["qp_beats_ep_frac"])
        ours, paper = frac > threshold, PAPER_TABLE1[name].qp_star
        out.append({"dataset": name, "qp_beats_ep_frac": frac, "ours_star": ours, "paper_star": paper,
                    "agree": ours == paper})
    return out
