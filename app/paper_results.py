"""Paper results page: our reproduction of Table 1 and Figure 1 of the QP paper beside the paper's.

Reads the committed results of ``python -m qpviz.reproduce table1`` (:data:`RESULTS_DIR`:
``table1.csv`` with the paper's preprocessing, ``table1_clean.csv`` with the clean one, and the
per-fold records ``folds.jsonl`` / ``folds_clean.jsonl``, which hold every held-out point's EP and
QP variance) and sets them beside the paper's numbers (:mod:`qpviz.reproduce.paper_table`); a
cell whose mean lies farther from the paper's than the paper's std (a classification TE: at least
1 percentage point; mining's TE is a mean absolute error of counts, no percentage) is highlighted.
Figure 1 is drawn live from the records (:mod:`paper_figure`: zoom, pan, hover). "Rerun one
dataset live" runs one dataset for 1-3 rounds in a child process (:class:`qpviz.reproduce.live.LiveRun`), polled every :data:`POLL_MS` ms, cancellable.

The table is HTML built by :func:`comparison_html` (a plain function, tested without a browser).
"""
from __future__ import annotations

import html
from pathlib import Path

import panel as pn
import param

from explorer_figures import style_figure
from figure_export import export_buttons
import paper_figure
from layout import enlarge, explained
import link_query
import pages
import safe_text
from qpviz.checks import quoted
from qpviz.reproduce import live as live_runs
from qpviz.reproduce.live import LIVE_OPTIONS_ENV, live_options_from_env  # noqa: F401 - re-exported
from qpviz.reproduce import sep_paper
from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS
from qpviz.reproduce.paper_table import COUNT_DATASETS, PAPER_NAMES, PAPER_TABLE1, compare, compare_stars, te_unit
from qpviz.reproduce.protocol import METHODS
from qpviz.reproduce.report import STAR_FRACTION, read_csv
from colours import METHOD_COLOURS

__all__ = ["TITLE", "RESULTS_DIR", "SEP_RESULTS_DIR", "RESULT_FILES", "FIGURE_FILES", "FIGURE_DATA", "METHOD_COLOURS", "OUTSIDE_COLOUR", "POLL_MS",
           "LIVE_OPTIONS_ENV", "PaperResults", "comparison_html", "legend_html", "live_options_from_env", "load_rows",
           "missing_message", "page", "URL_KEYS"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: where the lead commits the full runs (the page reads them; tests point it elsewhere)
RESULTS_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "paper"
RESULT_FILES = {"paper": "table1.csv", "clean": "table1_clean.csv"}
#: paper 003's committed results (``python -m qpviz.reproduce sep-table1 / sep-figure2 / sep-digits``)
SEP_RESULTS_DIR = RESULTS_DIR.parent / "sep_paper"
#: the static Figure 1 of each run (``python -m qpviz.reproduce`` writes it for papers; the page draws its own)
FIGURE_FILES = {"paper": "figure1.png", "clean": "figure1_clean.png"}
#: the per-fold records holding Figure 1's points (the page's Figure 1 is drawn from these)
FIGURE_DATA = {"paper": "folds.jsonl", "clean": "folds_clean.jsonl"}

#: one colour per method on every page (Okabe-Ito, colour-blind safe)
#: background of a cell outside the paper's std: a light tint of Okabe-Ito orange (#E69F00), with
#: a dagger after the number so the mark does not rely on colour alone
OUTSIDE_COLOUR = "#F5D9A3"
OUTSIDE_MARK = "†"
#: the live rerun's progress is read this often
POLL_MS = 500

#: a row of controls wraps onto the next line instead of widening the page
WRAPPING_ROW = {"flex-wrap": "wrap"}
#: a table box scrolls sideways instead of widening the page
TABLE_BOX_STYLES = {"overflow-x": "auto", "max-width": "100%"}
TABLE_CSS = """
table.qpviz-t1 { border-collapse: collapse; }
table.qpviz-t1 th, table.qpviz-t1 td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
table.qpviz-t1 th { background: #f2f2f2; }
table.qpviz-t1 td.qpviz-name, table.qpviz-t1 th.qpviz-name { text-align: left; }
table.qpviz-t1 tr.qpviz-first td { border-top: 2px solid #888; }
"""

SEP_HEADING = ("### Paper 003 (scalable EP, Hernandez-Lobato & Hernandez-Lobato 2016): ours beside the paper's\n"
               "Table 1: negative test log-likelihood (mean ± std over random 90/10 splits; *reps*: how many) of "
               "GFITC, SEP and SVI with M = 15/25/50% of N, and the average training time. "
               "benchmarks/results/sep_paper/README.md explains each difference. Below it, Figure 2: the "
               "inducing inputs each method learns on a banana-shaped problem (rows SEP, SVI, GFITC).")

FIGURE_EXPLANATION = (
    "Each dot is one test point of one fold: (a) QP's predictive latent variance against EP's (log axes, one colour "
    "and marker per dataset; the paper's Figure 1), (b) their ratio. By Theorem 2 QP's variance is at most EP's, so "
    "the dots lie on or below the dashed line where the two are equal. Zoom with the wheel or a box, hover a dot "
    "for its values, click a dataset in the legend to hide it.",
    r"$$\sigma^2_{QP}(x_*)\le\sigma^2_{EP}(x_*)\quad\text{for every test input }x_*$$",
)
TABLE_EXPLANATION = (
    "TE: test error in % on the classification sets; on Mining (Poisson regression) TE is the mean absolute error "
    "of the predicted yearly counts in 1e-2 disasters per year (105.3 = 1.053 disasters per year), not a "
    "percentage. NTLL: negative test log-likelihood x 1e3. Mean ± std over rounds of 10-fold cross-validation "
    "(mining: random halves). Lower is better.",
    r"$$\mathrm{TE}=\frac1m\sum_{i=1}^m\frac{|y_i-\hat y_i|}{2}\ \text{(labels)},\quad "
    r"\frac1m\sum_{i=1}^m|y_i-\hat y_i|\ \text{(counts)},\qquad "
    r"\mathrm{NTLL}=-\frac1m\sum_{i=1}^m\log q(y_i\mid x_i)$$",
)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (as a reader would type it)."""
    try:
        return str(Path(path).resolve().relative_to(RESULTS_DIR.parents[2]))
    except ValueError:
        return str(path)


def missing_message(preprocessing: str, path: Path) -> str:
    """What to run when the committed results of ``preprocessing`` are absent."""
    path = _shown(path)
    out = "table1-out" if preprocessing == "paper" else "table1-clean"
    return (f"No committed results yet for the {preprocessing} preprocessing ({path} is missing): run "
            f"`python -m qpviz.reproduce table1 --rounds 100 --preprocessing {preprocessing} --out {out}` "
            f"and copy `{out}/table1.csv` to `{path}`. The paper's numbers are shown meanwhile.")


def load_rows(results_dir, preprocessing: str) -> tuple[list[dict] | None, str]:
    """(rows of the committed ``table1.csv``, '') or (None, a message saying what to do)."""
    path = Path(results_dir) / RESULT_FILES[preprocessing]
    if not path.is_file():
        return None, missing_message(preprocessing, path)
    try:
        rows = read_csv(path)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return None, safe_text.fill("{path} could not be read ({error}); rerun `python -m qpviz.reproduce table1`.",
                                    path=path, error=f"{type(err).__name__}: {err}")
    if not rows:
        return None, safe_text.fill("{path} holds no rows; rerun `python -m qpviz.reproduce table1`.", path=path)
    return rows, ""


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


#: URL query keys of the page's state.
URL_KEYS = {"preprocessing": "prep", "live_dataset": "dataset", "live_rounds": "rounds"}


class PaperResults(pn.viewable.Viewer):
    """The page: the table (paper / clean preprocessing), Figure 1 and the live rerun."""

    preprocessing = param.Selector(default="paper", objects=list(PREPROCESSINGS),
                                   doc="paper: the paper's preprocessing, pitfalls included; clean: without them.")
    projector = param.Boolean(default=False, doc="Large fonts for a projector.")
    live_dataset = param.Selector(default="wine1", objects=list(DATASETS), doc="Dataset of the live rerun.")
    live_rounds = param.Selector(default=1, objects=list(range(1, live_runs.MAX_ROUNDS + 1)),
                                 doc="Rounds of 10-fold cross-validation of the live rerun.")

    def __init__(self, results_dir=None, live_options: dict | None = None, sep_results_dir=None, **params):
        super().__init__(**params)
        self.results_dir = Path(results_dir) if results_dir is not None else RESULTS_DIR
        self.sep_results_dir = Path(sep_results_dir) if sep_results_dir is not None else SEP_RESULTS_DIR
        self.live_options = dict(live_options or {})  # extra LiveRun arguments (tests: n_folds, max_opt_iter)
        self.live: live_runs.LiveRun | None = None
        self._poller = None
        self._texts: list = []
        self._link_notes: dict[str, str] = {}  # parameter -> the link banner's note of its refused value
        self._reading_link = 0  # > 0 while apply_bad_link sets the link's values

        self.prep_switch = pn.widgets.RadioButtonGroup.from_param(self.param.preprocessing, label="preprocessing", width=260)
        self.message = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-paper-message"])
        self.link_note = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-paper-link"])
        # a table wider than the window (projector mode, 1024 px) scrolls inside its own box
        self.table = pn.pane.HTML("", stylesheets=[TABLE_CSS], css_classes=["qpviz-paper-table"],
                                  sizing_mode="stretch_width", styles=dict(TABLE_BOX_STYLES))
        self.legend = pn.pane.HTML("", css_classes=["qpviz-paper-legend"], sizing_mode="stretch_width")
        self.figures: dict = {}  # Figure 1's Bokeh figures ({} while there are no points)
        self.figure = pn.Row(sizing_mode="stretch_width", visible=False, css_classes=["qpviz-figure1"])
        self.figure_summary = pn.pane.Markdown("", visible=False, sizing_mode="stretch_width",
                                               css_classes=["qpviz-figure-summary"])
        self.figure_message = pn.pane.Markdown("", visible=False, css_classes=["qpviz-figure-message"])

        self.dataset_select = pn.widgets.Select.from_param(self.param.live_dataset, label="dataset",
                                                           css_classes=["qpviz-live-dataset"], width=200)
        self.rounds_select = pn.widgets.RadioButtonGroup.from_param(self.param.live_rounds, label="rounds",
                                                                    css_classes=["qpviz-live-rounds"], width=180)
        self.run_button = pn.widgets.Button(label="Run", color="primary", css_classes=["qpviz-live-run"], width=120)
        self.cancel_button = pn.widgets.Button(label="Cancel", disabled=True, css_classes=["qpviz-live-cancel"], width=120)
        self.progress = pn.indicators.Progress(value=0, max=1, visible=False, sizing_mode="stretch_width",
                                               css_classes=["qpviz-live-progress"])
        self.live_status = pn.pane.Markdown("Not run yet.", css_classes=["qpviz-live-status"], sizing_mode="stretch_width")
        self.live_error = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-live-error"])
        self.live_table = pn.pane.HTML("", stylesheets=[TABLE_CSS], visible=False, css_classes=["qpviz-live-table"],
                                       sizing_mode="stretch_width", styles=dict(TABLE_BOX_STYLES))
        self.run_button.on_click(lambda event: self.start_live())
        self.cancel_button.on_click(lambda event: self.cancel_live())

        self.refresh_results()
        self._layout = self._build_layout()
        self._sync_url()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._on_session_destroyed)

    # -- committed results ---------------------------------------------------------------------
    @param.depends("preprocessing", watch=True)
    def refresh_results(self) -> None:
        """Show the committed rows of the current preprocessing (or the message) and its Figure 1."""
        rows, message = load_rows(self.results_dir, self.preprocessing)
        with pn.io.hold():
            self.message.object = message  # the page's own Markdown (load_rows escapes what it quotes)
            self.message.visible = bool(message)
            self.table.object = comparison_html(rows)
            self.legend.object = legend_html(rows)
            self._draw_figure()

    def figure_path(self) -> Path | None:
        """Figure 1's records of the current preprocessing; the paper preprocessing's if the clean
        one's are absent (the summary under the figure names the file shown)."""
        for name in (FIGURE_DATA[self.preprocessing], FIGURE_DATA["paper"]):
            path = self.results_dir / name
            if path.is_file():
                return path
        return None

    def _draw_figure(self) -> None:
        """Figure 1 from :meth:`figure_path`'s records, or a message saying why there is none."""
        path, problem = self.figure_path(), ""
        table = None
        if path is None:
            problem = safe_text.fill(
                "No committed Figure 1 data yet: `python -m qpviz.reproduce table1` writes `folds.jsonl` (every "
                "held-out point's EP and QP variance) in its `--out` folder; copy it to {path}.",
                path=_shown(self.results_dir / FIGURE_DATA[self.preprocessing]))
        else:
            try:
                table, dropped = paper_figure.load_points(path)
            except (OSError, ValueError) as err:
                problem = safe_text.fill("Figure 1 cannot be drawn: {path} could not be read ({error}).",
                                         path=_shown(path), error=f"{type(err).__name__}: {err}")
            else:
                if not len(table["var_ep"]):
                    problem = safe_text.fill("Figure 1 cannot be drawn: {path} holds no held-out point with both "
                                             "variances finite and positive.", path=_shown(path))
        if problem:
            self.figures = {}
            self.figure.objects = []
        else:
            self.figures = paper_figure.figure1_figures(table, self.projector)
            self.figure.objects = [pn.pane.Bokeh(fig, sizing_mode="stretch_width") for fig in self.figures.values()]
            source = _shown(path)
            if path.name != FIGURE_DATA[self.preprocessing]:
                source += f" (the {self.preprocessing} preprocessing's records are not committed)"
            self.figure_summary.object = safe_text.message(paper_figure.summary_text(table, dropped, source))
        self.figure.visible = self.figure_summary.visible = not problem
        self.figure_message.object = problem
        self.figure_message.visible = bool(problem)

    # -- live rerun ------------------------------------------------------------------------------
    def start_live(self) -> bool:
        """Start a rerun of the selected dataset and rounds (unless one is running); poll it."""
        if self.live is not None and self.live.status == "running":
            return False
        if self.live is not None:
            self.live.close()
        try:
            run = live_runs.LiveRun(self.live_dataset, self.live_rounds, preprocessing=self.preprocessing,
                                    **self.live_options)
            run.start()
        except (ValueError, RuntimeError, OSError) as err:
            self._show_live_error(f"The rerun could not start: {err}")
            return False
        self.live = run
        with pn.io.hold():
            self.live_error.visible = False
            self.live_table.visible = False
            self.progress.max, self.progress.value, self.progress.visible = run.total, 0, True
            self.run_button.disabled, self.cancel_button.disabled = True, False
            self.live_status.object = (f"Running {run.dataset} ({run.preprocessing} preprocessing), {run.rounds} "
                                       f"round(s): 0 of {run.total} folds cached.")
        self._poller = pn.state.add_periodic_callback(self.poll_live, period=POLL_MS)
        return True

    def poll_live(self) -> str:
        """Periodic callback: progress, and on the end the rows beside the paper's (or the error)."""
        run = self.live
        if run is None:
            self._stop_polling()
            return "idle"
        try:
            status = run.poll()
        except Exception as err:  # noqa: BLE001 - a callback error must not reach the browser
            run.error, status = f"unexpected error while polling the rerun: {err}", "failed"
            run.cancel()
        done, total = run.progress()
        with pn.io.hold():
            self.progress.value = min(done, total)
            if status == "running":
                self.live_status.object = (f"Running {run.dataset} ({run.preprocessing} preprocessing), "
                                           f"{run.rounds} round(s): {done} of {total} folds cached.")
                return status
            self._stop_polling()
            self.run_button.disabled, self.cancel_button.disabled = False, True
            if status == "done":
                self.progress.value = total
                self.live_status.object = (f"Done: {run.dataset}, {run.rounds} round(s), {total} folds in "
                                           f"{run.seconds:.0f} s. Ours beside the paper's (100 rounds):")
                self.live_table.object = comparison_html(run.rows, datasets=[run.dataset])
                self.live_table.visible = True
            elif status == "cancelled":
                self.live_status.object = f"Cancelled after {done} of {total} folds."
            else:
                self._show_live_error(run.error or "the rerun failed")
        return status

    def cancel_live(self) -> None:
        """Cancel button: end the child process group and stop polling."""
        if self.live is not None and self.live.status == "running":
            self.live.cancel()
            self.poll_live()

    def _show_live_error(self, text: str) -> None:
        self.live_status.object = "Failed."
        self.live_error.object = safe_text.code_block(text)
        self.live_error.visible = True

    def _stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def _on_session_destroyed(self, session_context) -> None:
        """The browser tab went away: stop polling, end the rerun, delete its folder."""
        self._stop_polling()
        if self.live is not None:
            self.live.close()

    # -- layout ----------------------------------------------------------------------------------
    def _sync_url(self) -> None:
        """Preprocessing, live dataset and rounds in the URL (a shared link reopens them)."""
        if pn.state.location is not None:
            link_query.sync(pn.state.location, self, URL_KEYS, on_error=self.apply_bad_link)

    def apply_bad_link(self, asked: dict) -> list[str]:
        """A link asked for a value the page cannot show (e.g. rounds=-3; Panel's sync then set none
        of the link's values): take the good ones, and say which were replaced by what; the link is
        rewritten with the values shown. Returns this link's notes; the banner also keeps the notes
        of the same link's earlier update (link_query.sync hands the values Panel's parsing drops
        over apart) until the reader's next change (:meth:`_moved_on`) or a good value of their key."""
        notes = {}
        self._reading_link += 1
        try:
            for name, value in asked.items():
                try:
                    setattr(self, name, value)
                    self._link_notes.pop(name, None)
                except (ValueError, TypeError):
                    objects = self.param[name].objects if hasattr(self.param[name], "objects") else ["true", "false"]
                    notes[name] = (f"{URL_KEYS[name]}={quoted(value)} (valid: {', '.join(map(str, objects))}) was "
                                   f"replaced by {getattr(self, name)!r}")
                    self.param.trigger(name)  # the URL sync writes the value shown into the link
        finally:
            self._reading_link -= 1
        self._link_notes.update(notes)
        self._show_link_notes()
        return list(notes.values())

    def _show_link_notes(self) -> None:
        notes = self._link_notes.values()
        self.link_note.param.update(object=safe_text.message("This link asked for " + "; ".join(notes) + ".")
                                    if notes else "", visible=bool(notes))

    @param.depends(*URL_KEYS, watch=True)
    def _moved_on(self) -> None:
        """A good value set outside :meth:`apply_bad_link` (the reader's choice, or a later good link):
        the link's refusals are old news."""
        if not self._reading_link and self._link_notes:
            self._link_notes.clear()
            self._show_link_notes()

    def _explained(self, view, explanation) -> pn.Column:
        return explained(view, explanation, self._texts)

    def _build_layout(self) -> pn.Column:
        self._texts += [self.table, self.legend, self.live_table, self.live_status, self.message, self.figure_message,
                        self.figure_summary, self.link_note]
        controls = pn.Row(pn.pane.Markdown("Preprocessing (paper: as the paper did; clean: without its pitfalls):"),
                          self.prep_switch, export_buttons("paper-results"),
                          sizing_mode="stretch_width", styles=dict(WRAPPING_ROW))
        self._texts.append(controls[0])
        table = self._explained(pn.Column(self.message, self.legend, self.table, sizing_mode="stretch_width"),
                                TABLE_EXPLANATION)
        figure = self._explained(pn.Column(self.figure, self.figure_summary, self.figure_message,
                                           sizing_mode="stretch_width"),
                                 FIGURE_EXPLANATION)
        self._live_controls = pn.Row(self.dataset_select, pn.pane.Markdown("rounds:", width=90), self.rounds_select,
                                     self.run_button, self.cancel_button, styles=dict(WRAPPING_ROW))
        live = pn.Column(
            pn.pane.Markdown("### Rerun one dataset live\nEP (with its evidence maximised), QP and VB on every fold of "
                             "1-3 rounds of 10-fold cross-validation, in a background process on this server."),
            self._live_controls, self.progress, self.live_status, self.live_error, self.live_table,
            sizing_mode="stretch_width",
        )
        self._texts.append(live[0])
        headings = [pn.pane.Markdown("### Table 1 of the QP paper: ours beside the paper's"),
                    pn.pane.Markdown("### Figure 1: predictive latent variances, QP against EP")]
        self._texts += headings
        return pn.Column(self.link_note, headings[0], controls, table, headings[1], figure, live,
                         *self._sep_section(), sizing_mode="stretch_width")

    def _sep_section(self) -> list:
        """Paper 003's Table 1, Figure 2 and digits run, as committed (:func:`sep_paper.results_markdown`:
        its own words and formatted numbers only)."""
        self.sep_table = pn.pane.Markdown(sep_paper.results_markdown(self.sep_results_dir),
                                          css_classes=["qpviz-sep-table"], sizing_mode="stretch_width",
                                          styles=dict(TABLE_BOX_STYLES))
        heading = pn.pane.Markdown(SEP_HEADING)
        self._texts += [heading, self.sep_table]
        figure = self.sep_results_dir / sep_paper.RESULT_FILES["figure2"]
        shown = [pn.pane.PNG(str(figure), sizing_mode="scale_width", max_width=1100)] if figure.is_file() else []
        return [heading, self.sep_table, *shown]

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        widgets = (self.prep_switch, *self._live_controls.objects)
        enlarge(self.projector, self._texts, widgets)
        for fig in self.figures.values():
            style_figure(fig, self.projector)

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, PaperResults(live_options=live_options_from_env())
