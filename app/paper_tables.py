"""Table 1 of the QP paper, ours beside the paper's, as HTML (the Paper results page's tables).

:func:`comparison_html` sets our ``mean ± std`` of every dataset and method beside the paper's and
highlights a cell whose mean lies farther from the paper's than the paper's std
(:func:`qpviz.reproduce.paper_table.compare`: a classification TE at least 1 percentage point;
Mining's TE is a mean absolute error of counts); :func:`legend_html` says what the highlight means.
Plain functions of the rows (tested without a browser); every text in them is the page's own or a
number (dataset names come from :data:`qpviz.reproduce.paper_table.PAPER_NAMES`, escaped).
"""
from __future__ import annotations

import html

from colours import METHOD_COLOURS
from qpviz.reproduce.paper_table import COUNT_DATASETS, PAPER_NAMES, PAPER_TABLE1, compare, compare_stars, te_unit
from qpviz.reproduce.protocol import METHODS
from qpviz.reproduce.report import STAR_FRACTION

__all__ = ["OUTSIDE_COLOUR", "OUTSIDE_MARK", "TABLE_CSS", "TABLE_BOX_STYLES", "TABLE_EXPLANATION", "comparison_html",
           "legend_html"]

#: background of a cell outside the paper's std: a light tint of Okabe-Ito orange (#E69F00), with
#: a dagger after the number so the mark does not rely on colour alone
OUTSIDE_COLOUR = "#F5D9A3"
OUTSIDE_MARK = "†"
#: a table box scrolls sideways instead of widening the page
TABLE_BOX_STYLES = {"overflow-x": "auto", "max-width": "100%"}
TABLE_CSS = """
table.qpviz-t1 { border-collapse: collapse; }
table.qpviz-t1 th, table.qpviz-t1 td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
table.qpviz-t1 th { background: #f2f2f2; }
table.qpviz-t1 td.qpviz-name, table.qpviz-t1 th.qpviz-name { text-align: left; }
table.qpviz-t1 tr.qpviz-first td { border-top: 2px solid #888; }
"""

TABLE_EXPLANATION = (
    "TE: test error in % on the classification sets; on Mining (Poisson regression) TE is the mean absolute error "
    "of the predicted yearly counts in 1e-2 disasters per year (105.3 = 1.053 disasters per year), not a "
    "percentage. NTLL: negative test log-likelihood x 1e3. Mean ± std over rounds of 10-fold cross-validation "
    "(mining: random halves). Lower is better.",
    r"$$\mathrm{TE}=\frac1m\sum_{i=1}^m\frac{|y_i-\hat y_i|}{2}\ \text{(labels)},\quad "
    r"\frac1m\sum_{i=1}^m|y_i-\hat y_i|\ \text{(counts)},\qquad "
    r"\mathrm{NTLL}=-\frac1m\sum_{i=1}^m\log q(y_i\mid x_i)$$",
)


def _cell(mean: float, std: float) -> str:
    return f"{mean:.1f} ± {std:.1f}"


def _compared_cell(record: dict | None) -> str:
    """Our ``mean ± std``, highlighted (background, dagger, tooltip) when outside the tolerance."""
    if record is None:
        return "<td>—</td>"
    text = _cell(record["ours_mean"], record["ours_std"])
    tip = f"ours − paper = {record['difference']:+.2f}; tolerance ± {record['tolerance']:.2f} (unit: {record['unit']})"
    if record["within"]:
        return f'<td class="qpviz-within" title="{tip}">{text}</td>'
    return (f'<td class="qpviz-outside" style="background:{OUTSIDE_COLOUR}; font-weight:bold" title="{tip}">'
            f"{text} {OUTSIDE_MARK}</td>")


def _star_cell(star: dict | None, paper_star: bool) -> str:
    paper = "*" if paper_star else "no *"
    if star is None:
        return f"<td>— / {paper}</td>"
    ours = f"{star['qp_beats_ep_frac']:.0%}{' *' if star['ours_star'] else ''}"
    return f"<td>{ours} / {paper}</td>"


def comparison_html(rows, datasets=None) -> str:
    """Table 1, ours beside the paper's: per dataset and method TE and NTLL (mean ± std), our cell
    highlighted where it lies outside the paper's tolerance (:func:`paper_table.compare`), and on
    QP's row how often QP's NTLL beat EP's (ours) against the paper's asterisk.

    ``rows``: ``table1.csv`` rows (or None: the paper's numbers only); ``datasets``: which to show
    (default: the paper's ten).
    """
    rows = rows or []
    records = {(r["dataset"], r["method"], r["measure"]): r for r in compare(rows)}
    stars = {s["dataset"]: s for s in compare_stars(rows)}
    head = ('<tr><th class="qpviz-name">Data</th><th class="qpviz-name">Method</th><th>TE ours</th><th>TE paper</th>'
            "<th>NTLL ours</th>"
            f"<th>NTLL paper</th><th>QP's NTLL &lt; EP's (ours / paper: * = &gt; {STAR_FRACTION:.0%})</th></tr>")
    body = []
    for name in datasets or PAPER_TABLE1:
        paper = PAPER_TABLE1[name]
        for i, method in enumerate(METHODS):
            first = ' class="qpviz-first"' if i == 0 else ""
            label = f"{html.escape(PAPER_NAMES[name])} ({paper.m} x {paper.n})" if i == 0 else ""
            if i == 0 and name in COUNT_DATASETS:  # its TE is no percentage: say so on the row
                label += (f'<br><small class="qpviz-te-unit" title="{html.escape(te_unit(name, long=True))}">'
                          f"TE in {html.escape(te_unit(name))}<br>(mean absolute error, not %)</small>")
            swatch = f'<span style="color:{METHOD_COLOURS[method]}">■</span> {method.upper()}'
            star = _star_cell(stars.get(name), paper.qp_star) if method == "qp" else "<td></td>"
            body.append(f'<tr{first}><td class="qpviz-name">{label}</td><td class="qpviz-name">{swatch}</td>'
                        f"{_compared_cell(records.get((name, method, 'te')))}<td>{_cell(*paper.te[method])}</td>"
                        f"{_compared_cell(records.get((name, method, 'ntll')))}<td>{_cell(*paper.ntll[method])}</td>"
                        f"{star}</tr>")
    return f'<table class="qpviz-t1"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def legend_html(rows=None) -> str:
    """What the highlight means, and how many of our cells it marks."""
    records = compare(rows or [])
    outside = sum(not r["within"] for r in records)
    count = f" Here: {outside} of {len(records)} of our cells." if records else ""
    return (f'<span style="background:{OUTSIDE_COLOUR}; font-weight:bold; padding:0 6px">ours {OUTSIDE_MARK}</span> '
            "our mean differs from the paper's by more than the paper's std (for a classification TE: or 1 "
            "percentage point, whichever is larger; Mining's TE is in counts, so only its std counts); hover a cell "
            f"for the difference and its unit.{count}")
