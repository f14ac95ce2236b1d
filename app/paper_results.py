"""Paper results page: our reproduction of Table 1 and Figure 1 of the QP paper beside the paper's.

A thin Panel view over :class:`qpviz.reproduce.results_model.PaperResultsModel` (the choices, the
committed rows of ``python -m qpviz.reproduce table1`` in :data:`RESULTS_DIR`: ``table1.csv`` with
the paper's preprocessing, ``table1_clean.csv`` with the clean one, the live rerun and the link's
checks; tests drive it without a browser) and app/paper_tables.py (Table 1 ours beside the paper's
as HTML, a cell outside the paper's std highlighted). Figure 1 is drawn live from the per-fold
records ``folds.jsonl`` / ``folds_clean.jsonl`` (:mod:`paper_figure`: zoom, pan, hover). "Rerun one
dataset live" runs one dataset for 1-3 rounds in a child process (:class:`qpviz.reproduce.live.LiveRun`),
polled every :data:`POLL_MS` ms, cancellable.

The widgets forward the reader's choices to the model (app/binding.py: a value the model holds, e.g.
the page showing the model's, forwards nothing), and the link (``?prep=clean&dataset=pima&rounds=2``)
is synced with the model's parameters.
"""
from __future__ import annotations

from pathlib import Path

import panel as pn
import param

from binding import forward, holds
from explorer_figures import style_figure
from figure_export import export_buttons
import paper_figure
from layout import enlarge, explained
import link_query
import pages
import safe_text
from paper_tables import (OUTSIDE_COLOUR, OUTSIDE_MARK, TABLE_BOX_STYLES, TABLE_CSS, TABLE_EXPLANATION,  # noqa: F401
                          comparison_html, legend_html)
from colours import METHOD_COLOURS  # noqa: F401 - re-exported
from qpviz.reproduce import sep_paper
from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS
from qpviz.reproduce.live import LIVE_OPTIONS_ENV, MAX_ROUNDS, live_options_from_env  # noqa: F401 - re-exported
from qpviz.reproduce.results_model import FIGURE_DATA, RESULT_FILES, RESULTS_DIR, PaperResultsModel, read_rows, shown_path

__all__ = ["TITLE", "RESULTS_DIR", "SEP_RESULTS_DIR", "RESULT_FILES", "FIGURE_FILES", "FIGURE_DATA", "METHOD_COLOURS",
           "OUTSIDE_COLOUR", "POLL_MS", "LIVE_OPTIONS_ENV", "DATASETS", "PaperResults", "comparison_html", "legend_html",
           "live_options_from_env", "load_rows", "page", "URL_KEYS"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: paper 003's committed results (``python -m qpviz.reproduce sep-table1 / sep-figure2 / sep-digits``)
SEP_RESULTS_DIR = RESULTS_DIR.parent / "sep_paper"
#: the static Figure 1 of each run (``python -m qpviz.reproduce`` writes it for papers; the page draws its own)
FIGURE_FILES = {"paper": "figure1.png", "clean": "figure1_clean.png"}
#: the live rerun's progress is read this often
POLL_MS = 500
#: a row of controls wraps onto the next line instead of widening the page
WRAPPING_ROW = {"flex-wrap": "wrap"}
#: URL query keys of the page's state (the model's parameters).
URL_KEYS = {"preprocessing": "prep", "live_dataset": "dataset", "live_rounds": "rounds"}

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


def load_rows(results_dir, preprocessing: str) -> tuple[list[dict] | None, str]:
    """(rows of the committed ``table1.csv``, '') or (None, the Markdown message saying what to do)."""
    rows, template, values = read_rows(results_dir, preprocessing)
    return rows, safe_text.fill(template, **values)


class PaperResults(pn.viewable.Viewer):
    """The page: the table (paper / clean preprocessing), Figure 1 and the live rerun."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, results_dir=None, live_options: dict | None = None, sep_results_dir=None,
                 model: PaperResultsModel | None = None, **params):
        super().__init__(**params)
        self.model = model if model is not None else PaperResultsModel(results_dir, live_options)
        self.sep_results_dir = Path(sep_results_dir) if sep_results_dir is not None else SEP_RESULTS_DIR
        self._poller = None
        self._texts: list = []

        m = self.model
        self.prep_switch = pn.widgets.RadioButtonGroup(label="preprocessing", options=list(PREPROCESSINGS),
                                                       value=m.preprocessing, width=260)
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

        self.dataset_select = pn.widgets.Select(label="dataset", options=list(DATASETS), value=m.live_dataset,
                                                css_classes=["qpviz-live-dataset"], width=200)
        self.rounds_select = pn.widgets.RadioButtonGroup(label="rounds", options={str(r): r for r in range(1, MAX_ROUNDS + 1)},
                                                         value=m.live_rounds, css_classes=["qpviz-live-rounds"],
                                                         width=180)
        self.run_button = pn.widgets.Button(label="Run", color="primary", css_classes=["qpviz-live-run"], width=120)
        self.cancel_button = pn.widgets.Button(label="Cancel", disabled=True, css_classes=["qpviz-live-cancel"], width=120)
        self.progress = pn.indicators.Progress(value=0, max=1, visible=False, sizing_mode="stretch_width",
                                               css_classes=["qpviz-live-progress"])
        self.live_status = pn.pane.Markdown(m.live_status, css_classes=["qpviz-live-status"], sizing_mode="stretch_width")
        self.live_error = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-live-error"])
        self.live_table = pn.pane.HTML("", stylesheets=[TABLE_CSS], visible=False, css_classes=["qpviz-live-table"],
                                       sizing_mode="stretch_width", styles=dict(TABLE_BOX_STYLES))
        self._wire()

        self.show_results()
        self._layout = self._build_layout()
        self._sync_url()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._on_session_destroyed)

    def _wire(self) -> None:
        """The widgets forward the reader's choices; the page shows what the model holds."""
        m = self.model
        self._choices = {"preprocessing": self.prep_switch, "live_dataset": self.dataset_select,
                         "live_rounds": self.rounds_select}
        for name, widget in self._choices.items():
            forward(widget, holds(m, name), lambda value, name=name: setattr(m, name, value))
        m.param.watch(self._show_choices, list(self._choices))
        m.param.watch(lambda event: self.show_results(), ["version"])
        m.param.watch(lambda event: self._show_link_notes(), ["link_notes"])
        self.run_button.on_click(lambda event: self.start_live())
        self.cancel_button.on_click(lambda event: self.cancel_live())

    def _show_choices(self, *events) -> None:
        for event in events:
            self._choices[event.name].value = event.new

    # -- committed results ---------------------------------------------------------------------
    def show_results(self) -> None:
        """Show the model's committed rows of the current preprocessing (or its message) and Figure 1."""
        m = self.model
        with pn.io.hold():
            self.message.object = safe_text.fill(m.message, **m.message_values)
            self.message.visible = bool(m.message)
            self.table.object = comparison_html(m.rows)
            self.legend.object = legend_html(m.rows)
            self._draw_figure()

    def _draw_figure(self) -> None:
        """Figure 1 from the model's records (:meth:`PaperResultsModel.figure_path`), or a message saying why there is none."""
        path, problem, preprocessing = self.model.figure_path(), "", self.model.preprocessing
        table = None
        if path is None:
            problem = safe_text.fill(
                "No committed Figure 1 data yet: `python -m qpviz.reproduce table1` writes `folds.jsonl` (every "
                "held-out point's EP and QP variance) in its `--out` folder; copy it to {path}.",
                path=shown_path(self.model.results_dir / FIGURE_DATA[preprocessing]))
        else:
            try:
                table, dropped = paper_figure.load_points(path)
            except (OSError, ValueError) as err:
                problem = safe_text.fill("Figure 1 cannot be drawn: {path} could not be read ({error}).",
                                         path=shown_path(path), error=f"{type(err).__name__}: {err}")
            else:
                if not len(table["var_ep"]):
                    problem = safe_text.fill("Figure 1 cannot be drawn: {path} holds no held-out point with both "
                                             "variances finite and positive.", path=shown_path(path))
        if problem:
            self.figures = {}
            self.figure.objects = []
        else:
            self.figures = paper_figure.figure1_figures(table, self.projector)
            self.figure.objects = [pn.pane.Bokeh(fig, sizing_mode="stretch_width") for fig in self.figures.values()]
            source = shown_path(path)
            if path.name != FIGURE_DATA[preprocessing]:
                source += f" (the {preprocessing} preprocessing's records are not committed)"
            self.figure_summary.object = safe_text.message(paper_figure.summary_text(table, dropped, source))
        self.figure.visible = self.figure_summary.visible = not problem
        self.figure_message.object = problem
        self.figure_message.visible = bool(problem)

    # -- live rerun ------------------------------------------------------------------------------
    def start_live(self) -> bool:
        """Run button: start the model's rerun (unless one is running) and poll it."""
        started = self.model.start_live()
        if started:
            self._poller = pn.state.add_periodic_callback(self.poll_live, period=POLL_MS)
        self._show_live(progress=started)  # a start refused leaves the last run's progress
        return started

    def poll_live(self) -> str:
        """Periodic callback: the model's progress, and on the end its rows beside the paper's (or the error)."""
        status = self.model.poll_live()
        if status != "running":
            self._stop_polling()
        self._show_live()
        return status

    def cancel_live(self) -> None:
        """Cancel button: end the child process group and stop polling."""
        self.model.cancel_live()
        self._stop_polling()
        self._show_live()

    def _show_live(self, progress: bool = True) -> None:
        m = self.model
        done, total = m.live_progress()
        rows = m.live_rows()
        with pn.io.hold():
            if progress and m.live is not None:
                self.progress.param.update(max=total, value=done, visible=True)
            running = m.live_state == "running"
            self.run_button.disabled, self.cancel_button.disabled = running, not running
            self.live_status.object = m.live_status
            self.live_error.param.update(object=safe_text.code_block(m.live_error) if m.live_error else "",
                                         visible=bool(m.live_error))
            if rows is not None:
                self.live_table.object = comparison_html(rows, datasets=[m.live.dataset])
            self.live_table.visible = rows is not None

    def _stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def _on_session_destroyed(self, session_context) -> None:
        """The browser tab went away: stop polling, end the rerun, delete its folder."""
        self._stop_polling()
        self.model.close()

    # -- link --------------------------------------------------------------------------------------
    def _sync_url(self) -> None:
        """Preprocessing, live dataset and rounds in the URL (a shared link reopens them)."""
        if pn.state.location is not None:
            link_query.sync(pn.state.location, self.model, URL_KEYS, on_error=self.apply_bad_link)

    def apply_bad_link(self, asked: dict) -> list[str]:
        """A link asked for a value the page cannot show (e.g. rounds=-3; Panel's sync then set none
        of the link's values): the model takes the good ones and names the replaced ones; the link is
        rewritten with the values shown (:meth:`PaperResultsModel.apply_link`). This link's notes."""
        return self.model.apply_link(asked, URL_KEYS)

    def _show_link_notes(self) -> None:
        said = self.model.link_message()
        self.link_note.param.update(object=safe_text.message(said) if said else "", visible=bool(said))

    # -- layout ----------------------------------------------------------------------------------
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
