"""The Paper results page's state and logic, without Panel (issue 23: one shape for a page).

:class:`PaperResultsModel` holds the reader's choices (the preprocessing of the committed Table 1,
the dataset and rounds of a live rerun), reads the committed results of ``python -m qpviz.reproduce
table1`` for the current preprocessing (:meth:`PaperResultsModel.refresh`: the rows, or a message
saying what to run), finds Figure 1's per-fold records, runs one dataset live
(:class:`qpviz.reproduce.live.LiveRun`: start, poll, cancel) and checks a link's values
(:meth:`PaperResultsModel.apply_link`: a refused value is named with the accepted ones, the last
good value kept). The page (app/paper_results.py) only shows what the model holds.

Messages are Markdown templates of the page's own words with ``{name}`` fields whose values (a path,
an error's text) the page escapes when it fills them in (``safe_text.fill``).
"""
from __future__ import annotations

from pathlib import Path

import param

from qpviz.checks import quoted
from qpviz.reproduce import live as live_runs
from qpviz.reproduce.datasets import DATASETS, PREPROCESSINGS
from qpviz.reproduce.report import read_csv

__all__ = ["RESULTS_DIR", "RESULT_FILES", "FIGURE_DATA", "CHOICES", "PaperResultsModel", "missing_message",
           "read_rows", "shown_path"]

#: where the lead commits the full runs (the page reads them; tests point it elsewhere)
RESULTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "paper"
RESULT_FILES = {"paper": "table1.csv", "clean": "table1_clean.csv"}
#: the per-fold records holding Figure 1's points (the page's Figure 1 is drawn from these)
FIGURE_DATA = {"paper": "folds.jsonl", "clean": "folds_clean.jsonl"}
#: the reader's choices (the page's URL keys name these)
CHOICES = ("preprocessing", "live_dataset", "live_rounds")


def shown_path(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (as a reader would type it)."""
    try:
        return str(Path(path).resolve().relative_to(RESULTS_DIR.parents[2]))
    except ValueError:
        return str(path)


def missing_message(preprocessing: str, path: Path) -> str:
    """What to run when the committed results of ``preprocessing`` are absent (Markdown; the path
    is the server's own folder, not a reader's text)."""
    path = shown_path(path)
    out = "table1-out" if preprocessing == "paper" else "table1-clean"
    return (f"No committed results yet for the {preprocessing} preprocessing ({path} is missing): run "
            f"`python -m qpviz.reproduce table1 --rounds 100 --preprocessing {preprocessing} --out {out}` "
            f"and copy `{out}/table1.csv` to `{path}`. The paper's numbers are shown meanwhile.")


def read_rows(results_dir, preprocessing: str) -> tuple[list[dict] | None, str, dict]:
    """(rows of the committed ``table1.csv``, '', {}) or (None, a message template, its values)."""
    path = Path(results_dir) / RESULT_FILES[preprocessing]
    if not path.is_file():
        return None, missing_message(preprocessing, path).replace("{", "{{").replace("}", "}}"), {}
    try:
        rows = read_csv(path)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return None, "{path} could not be read ({error}); rerun `python -m qpviz.reproduce table1`.", \
            {"path": path, "error": f"{type(err).__name__}: {err}"}
    if not rows:
        return None, "{path} holds no rows; rerun `python -m qpviz.reproduce table1`.", {"path": path}
    return rows, "", {}


class PaperResultsModel(param.Parameterized):
    """The choices, the committed rows of the current preprocessing, the live rerun and the link's notes."""

    preprocessing = param.Selector(default="paper", objects=list(PREPROCESSINGS),
                                   doc="paper: the paper's preprocessing, pitfalls included; clean: without them.")
    live_dataset = param.Selector(default="wine1", objects=list(DATASETS), doc="Dataset of the live rerun.")
    live_rounds = param.Selector(default=1, objects=list(range(1, live_runs.MAX_ROUNDS + 1)),
                                 doc="Rounds of 10-fold cross-validation of the live rerun.")
    #: parameter -> the note of the link's value refused for it (until the reader's next change)
    link_notes = param.Dict(default={}, doc="The notes of the link's refused values.")
    #: bumped when the committed rows (or their message) were read again
    version = param.Integer(default=0)

    def __init__(self, results_dir=None, live_options: dict | None = None, **params):
        super().__init__(**params)
        self.results_dir = Path(results_dir) if results_dir is not None else RESULTS_DIR
        self.live_options = dict(live_options or {})  # extra LiveRun arguments (tests: n_folds, max_opt_iter)
        self.rows: list[dict] | None = None
        self.message, self.message_values = "", {}
        self.live: live_runs.LiveRun | None = None
        self.live_state = "idle"  # idle, running, done, cancelled, failed
        self.live_status = "Not run yet."
        self.live_error = ""  # the last run's (or start's) error, shown verbatim
        self.refresh()

    # -- committed results ---------------------------------------------------------------------
    @param.depends("preprocessing", watch=True)
    def refresh(self) -> None:
        """Read the committed rows of the current preprocessing (or the message saying what to run)."""
        self.rows, self.message, self.message_values = read_rows(self.results_dir, self.preprocessing)
        self.version += 1

    def figure_path(self) -> Path | None:
        """Figure 1's records of the current preprocessing; the paper preprocessing's if the clean
        one's are absent (the page names the file shown)."""
        for name in (FIGURE_DATA[self.preprocessing], FIGURE_DATA["paper"]):
            path = self.results_dir / name
            if path.is_file():
                return path
        return None

    # -- live rerun ------------------------------------------------------------------------------
    def start_live(self) -> bool:
        """Start a rerun of the chosen dataset and rounds, unless one is running (False then, or
        when it cannot start: :attr:`live_error` says why)."""
        if self.live is not None and self.live.status == "running":
            return False
        if self.live is not None:
            self.live.close()
        try:
            run = live_runs.LiveRun(self.live_dataset, self.live_rounds, preprocessing=self.preprocessing,
                                    **self.live_options)
            run.start()
        except (ValueError, RuntimeError, OSError) as err:
            self._failed(f"The rerun could not start: {err}")
            return False
        self.live, self.live_state, self.live_error = run, "running", ""
        self.live_status = self._running_text(0)
        return True

    def poll_live(self) -> str:
        """Read the run's progress; on its end its rows (:meth:`live_rows`) or its error. The state."""
        run = self.live
        if run is None:
            return self.live_state
        try:
            status = run.poll()
        except Exception as err:  # noqa: BLE001 - a polling error is the run's failure, shown
            run.error, status = f"unexpected error while polling the rerun: {err}", "failed"
            run.cancel()
        done, total = self.live_progress()
        if status == "running":
            self.live_status = self._running_text(done)
        elif status == "done":
            self.live_status = (f"Done: {run.dataset}, {run.rounds} round(s), {total} folds in "
                                f"{run.seconds:.0f} s. Ours beside the paper's (100 rounds):")
        elif status == "cancelled":
            self.live_status = f"Cancelled after {done} of {total} folds."
        else:
            self._failed(run.error or "the rerun failed")
            return "failed"
        self.live_state = status
        return status

    def cancel_live(self) -> None:
        """End the running rerun's process group (its state becomes cancelled)."""
        if self.live is not None and self.live.status == "running":
            self.live.cancel()
            self.poll_live()

    def close(self) -> None:
        """The session ended: end the rerun and delete its folder."""
        if self.live is not None:
            self.live.close()

    def live_progress(self) -> tuple[int, int]:
        """(folds done, folds in all) of the last run, done clipped to all; (0, 1) before any."""
        if self.live is None:
            return 0, 1
        done, total = self.live.progress()
        return (total if self.live_state == "done" else min(done, total)), total

    def live_rows(self) -> list[dict] | None:
        """The finished run's rows (None before one finished)."""
        return self.live.rows if self.live is not None and self.live_state == "done" else None

    def _running_text(self, done: int) -> str:
        run = self.live
        return (f"Running {run.dataset} ({run.preprocessing} preprocessing), {run.rounds} round(s): "
                f"{done} of {run.total} folds cached.")

    def _failed(self, error: str) -> None:
        self.live_state, self.live_status, self.live_error = "failed", "Failed.", error

    # -- link ------------------------------------------------------------------------------------
    def apply_link(self, asked: dict, keys: dict | None = None) -> list[str]:
        """A link's values (parameter -> value): each good one is set, each refused one named with
        the accepted values (``keys``: parameter -> the link's key, as the note names it) and the
        value kept; its parameter is triggered so the link is rewritten with the value shown.
        Returns this link's notes; :attr:`link_notes` also keeps the same link's earlier notes
        (a link read in two updates) except those of a key now good, until the reader's next change."""
        keys = keys or {}
        kept, notes = dict(self.link_notes), {}
        for name, value in asked.items():
            try:
                setattr(self, name, value)
                kept.pop(name, None)
            except (ValueError, TypeError):
                objects = self.param[name].objects
                notes[name] = (f"{keys.get(name, name)}={quoted(value)} (valid: {', '.join(map(str, objects))}) "
                               f"was replaced by {getattr(self, name)!r}")
                self.param.trigger(name)
        self.link_notes = {**kept, **notes}  # after the watchers of the values set (which clear the notes)
        return list(notes.values())

    def link_message(self) -> str:
        """The link banner's plain text ('' without a note)."""
        return "This link asked for " + "; ".join(self.link_notes.values()) + "." if self.link_notes else ""

    @param.depends(*CHOICES, watch=True)
    def _moved_on(self) -> None:
        """A choice changed (the reader's, or a later good link): the link's refusals are old news
        (:meth:`apply_link` writes its notes after its own changes)."""
        if self.link_notes:
            self.link_notes = {}
