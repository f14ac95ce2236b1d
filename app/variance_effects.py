"""Variance effects page: EP vs QP predictive latent variances on held-out points (QP paper Fig. 1).

A thin Panel view over :mod:`qpviz.variance_effects` (its views: app/variance_figures.py): choose a dataset (the paper's real datasets
or a seeded synthetic stand-in for the GP pages' current data), the split's seed, the number of
folds and whether EP's evidence is optimised; the page fits EP, QP, VB and Laplace on the
training part in a thread pool (never on the server's event loop), shows what is being fitted
with a busy indicator and a Cancel button, and then draws

* the Figure 1 scatter: var_QP against var_EP per held-out point, log axes, the diagonal QP = EP;
* a histogram of var_QP / var_EP;
* TE and NTLL per method;

each with one sentence saying what to see and its formula. Results are cached in-process per
(dataset, seed, settings), so flipping back is instant. A failed or skipped fit keeps the last
good views and says what to change. URL keys ``ve_dataset``, ``ve_seed``, ``ve_folds``,
``ve_optimise`` (prefixed: the other pages share the URL; projector mode is the app header's).
"""
from __future__ import annotations

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import panel as pn
import param

from explorer_figures import NumbersPane, style_figure
from figure_export import export_buttons
from layout import enlarge, formula, set_projector, view_grid
from number_field import NumberField
import link_query
import pages
import safe_text
from qpviz.checks import quoted
from qpviz import variance_effects as ve
from variance_figures import COLOURS, FORMULAS, VarianceFigures, explanations, scores_html

__all__ = ["TITLE", "COLOURS", "DATASET_CHOICES", "VarianceEffects", "explanations", "scores_html", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

DATASET_CHOICES = (*ve.SYNTHETIC, *ve.REAL_DATASETS)
FOLD_CHOICES = (10, 5, 2)
MAX_SEED = 10_000
#: The split seed's typed box.
SEED = NumberField("split seed", 0, MAX_SEED, integer=True)
#: While a fit runs, the page looks for its result this often (ms).
POLL_MS = 250
#: Fits of all sessions share these threads (2 cores; a third fit would only queue behind them).
EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="qpviz-variance")

#: URL query keys (prefixed: the other pages share the URL) of the page parameters.
URL_KEYS = ("ve_dataset", "ve_seed", "ve_folds", "ve_optimise")


class VarianceQuery(param.Parameterized):
    """The URL's view of the page (untyped: a bad link is reported, not raised)."""

    ve_dataset = param.Parameter(default=None)
    ve_seed = param.Parameter(default=None)
    ve_folds = param.Parameter(default=None)
    ve_optimise = param.Parameter(default=None)


class VarianceEffects(pn.viewable.Viewer):
    """The page: controls on the left, the three views with their sentences and formulas."""

    dataset = param.Selector(objects=list(DATASET_CHOICES), default="synthetic 2-D", doc="Data to split and fit.")
    seed = param.Integer(default=0, bounds=(0, MAX_SEED), doc="Seed of the random folds.")
    folds = param.Selector(objects=list(FOLD_CHOICES), default=10, doc="Folds; the first is held out.")
    optimise = param.Boolean(default=True, doc="Optimise EP's evidence (and VB's bound) over the kernel.")
    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, **params):
        super().__init__(**params)
        self.result: ve.VarianceResult | None = None
        self._own_data: dict = {}  # label -> {"X", "y", "likelihood"} that other pages passed (use_data)
        self.future = None
        self._cancel = None
        self._job = None
        self._progress_text = ""
        self._started = 0.0
        self._poller = None
        self._writing_url = False
        self._link_notes: dict[str, str] = {}  # URL key -> the link banner's refusal of its value
        self._not_reader = 0  # > 0 while the page's values change by a link or the page itself

        self.dataset_select = pn.widgets.Select.from_param(self.param.dataset, label="dataset",
                                                           css_classes=["qpviz-ve-dataset"])
        # not from_param, no start/end: the browser would silently keep an out-of-range number in the box
        # without sending it; here every typed number reaches the page, which names and replaces a bad one
        self.seed_input = SEED.widget(self.seed, "qpviz-ve-seed")
        self.seed_input.param.watch(self._on_seed_typed, "value")
        self.param.watch(lambda event: setattr(self.seed_input, "value", SEED.show(event.new)), "seed")
        self.folds_select = pn.widgets.Select.from_param(self.param.folds, label="folds (the first is held out)",
                                                         css_classes=["qpviz-ve-folds"])
        self.optimise_box = pn.widgets.Checkbox.from_param(self.param.optimise,
                                                           label="optimise hyper-parameters (slow: seconds)")
        self.cancel_button = pn.widgets.Button(label="Cancel fit", color="warning", disabled=True,
                                               css_classes=["qpviz-ve-cancel"])
        self.cancel_button.on_click(self.cancel)
        self.download = pn.widgets.FileDownload(callback=self._csv_file, filename="variance_effects.csv",
                                                label="Download the numbers (CSV)", css_classes=["qpviz-ve-csv"])
        self.spinner = pn.indicators.LoadingSpinner(value=False, size=28, visible=False)
        self.status = pn.pane.Markdown("", css_classes=["qpviz-ve-status"], sizing_mode="stretch_width")
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.link_alert = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-ve-link"])

        self.views = VarianceFigures()
        self.figures = self.views.figures
        self.sentences = {key: pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10),
                                                css_classes=[f"qpviz-ve-sentence-{key}"]) for key in FORMULAS}
        self.formulas = {key: formula(text, margin=(0, 10))
                         for key, text in FORMULAS.items()}
        self.scores = NumbersPane("<p>No fit yet.</p>", css_classes=["qpviz-ve-scores"], sizing_mode="stretch_width")
        self._layout = self._build_layout()
        self.url = self._sync_url()
        self.param.watch(self._request, ["dataset", "seed", "folds", "optimise"])
        self.param.watch(self._moved_on, ["dataset", "seed", "folds", "optimise"])
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._on_session_closed)  # a closed tab stops its fit
        self._apply_projector_mode()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            # the first fit starts once the browser holds the page: a fit that ended (or came from the
            # cache) before that was drawn into figures whose changes never reached the browser (under
            # load at a server start, 4 of 8 fresh sessions showed empty plots titled "Figure 1")
            pn.state.onload(self._request)
        else:
            self._request()

    # -- fitting ---------------------------------------------------------------------------
    def settings(self) -> ve.Settings:
        return ve.Settings(seed=int(self.seed), n_folds=int(self.folds), optimise=bool(self.optimise))

    def _request(self, *events) -> None:
        """Show the cached result of the current choice at once, else start its fit in a thread."""
        self._write_url()
        settings = self.settings()
        self.cancel()  # a newer choice supersedes a running fit
        data = self._own_data.get(self.dataset, {})
        done = ve.cached(self.dataset, settings, **data)
        if done is not None:
            self._show_outcome(done)
            return
        self._cancel = threading.Event()
        self._progress_text = "starting"
        self._started = time.monotonic()
        self._job = (self.dataset, settings)
        self.future = EXECUTOR.submit(ve.variances_for, self.dataset, settings, cancel=self._cancel,
                                      progress=self._on_progress, **data)
        self._set_busy(True)
        self._show_status()
        if pn.state.curdoc is not None and self._poller is None:
            self._poller = pn.state.add_periodic_callback(self._poll, period=POLL_MS)

    def _on_progress(self, text: str) -> None:
        """Called from the worker thread: only remembered; the poll shows it on the page."""
        self._progress_text = text

    def use_data(self, label: str, X, y, likelihood="probit", kernel=None, select: bool = True) -> None:
        """Offer (X, y) as dataset ``label`` (e.g. the GP 1-D page's current data; a later call with
        the same label replaces it) and show it if ``select``. ``likelihood`` (a name or object) and
        ``kernel`` (the optimisation's start; default RBF(1, 1)) are the sending page's. The fit is
        cached by the arrays' content and the models."""
        self._own_data[label] = {"X": np.asarray(X, float), "y": np.asarray(y, float), "likelihood": likelihood,
                                 "kernel": kernel}
        if label not in self.param.dataset.objects:
            self.param.dataset.objects = [label, *self.param.dataset.objects]
            self.dataset_select.options = list(self.param.dataset.objects)
        if select and self.dataset != label:
            self.dataset = label
        elif select:
            self._request()

    def csv_text(self) -> str:
        """The shown fit as CSV (:func:`qpviz.variance_effects.result_csv`)."""
        return ve.result_csv(self.result)

    def _csv_file(self):
        return io.StringIO(self.csv_text())

    def _on_seed_typed(self, event) -> None:
        """A typed seed (:data:`SEED`): a bad one is named with the range, the box shows the seed in use."""
        try:
            value = SEED.parse(event.new)
        except ValueError as exc:
            self.seed_input.value = SEED.show(self.seed)  # (first: this box's echo clears the message)
            self.alert.object = safe_text.message(f"{exc}; kept {self.seed}")
            self.alert.visible = True
            return
        self.alert.visible = False
        self.seed = value

    def _on_session_closed(self, session_context) -> None:
        self.cancel()

    def cancel(self, event=None) -> None:
        """Stop the running fit (at its next optimiser evaluation); the last good views stay."""
        if self._cancel is not None and self.future is not None and not self.future.done():
            self._cancel.set()
            if event is not None:  # the button: say so at once
                self.status.object = "Cancelling the fit; the views keep the last good fit."
        self._cancel = None

    def _set_busy(self, busy: bool) -> None:
        self.spinner.value = self.spinner.visible = busy
        self.cancel_button.disabled = not busy

    def _show_status(self) -> None:
        name, settings = self._job
        elapsed = time.monotonic() - self._started
        self.status.object = safe_text.fill("Fitting **{name}** (seed {seed}): {progress} ({elapsed:.1f} s)", name=name,
                                            seed=settings.seed, progress=self._progress_text, elapsed=elapsed)

    def wait(self, timeout: float | None = None) -> None:
        """Block until the running fit ends and show its outcome (for tests and scripts)."""
        if self.future is not None:
            try:
                self.future.result(timeout)
            except Exception:  # noqa: BLE001 - _poll reports it on the page
                pass
        self._poll()

    def _poll(self) -> None:
        """Periodic callback (server thread): show progress, or the outcome once the fit ended."""
        future = self.future
        if future is None:
            self._stop_polling()
            return
        if not future.done():
            self._show_status()
            return
        self.future = None
        self._stop_polling()
        self._set_busy(False)
        name, settings = self._job
        try:
            outcome = future.result()
        except ve.FitCancelled:
            self._back_to_last_good()
            self.status.object = safe_text.message(f"Fit of {name} cancelled; the page shows the last good fit"
                                                   + (f" ({self.result.name}) again." if self.result is not None else "."))
            return
        except Exception as exc:  # noqa: BLE001 - a bad fit never reaches the browser console
            self._fail(f"The fit of {name} failed: {exc}. Try another seed or dataset, or turn optimisation off.")
            return
        if (name, settings) == (self.dataset, self.settings()):
            self._show_outcome(outcome)

    def _stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def _back_to_last_good(self) -> None:
        """Make the controls show the settings of the views' fit again (cached: nothing is refitted),
        so that controls and views always agree."""
        r = self.result
        if r is not None and r.name in self.param.dataset.objects:
            self._not_reader += 1
            try:
                self.param.update(dataset=r.name, seed=r.settings.seed, folds=r.settings.n_folds,
                                  optimise=r.settings.optimise)
            finally:
                self._not_reader -= 1

    def _fail(self, message: str) -> None:
        self._back_to_last_good()
        self.alert.object = safe_text.message(message)
        self.alert.visible = True
        self.status.object = "The views show the last good fit." if self.result is not None else ""

    def _show_outcome(self, outcome) -> None:
        if isinstance(outcome, ve.Skipped):
            self._fail(outcome.message)
            return
        self.alert.visible = False
        self.result = outcome
        s = outcome.settings
        self.status.object = safe_text.fill("**{name}**: fold 1 of {folds} held out (seed {seed}), hyper-parameters "
                                            "{how}; fits took {seconds:.1f} s (cached now).", name=outcome.name,
                                            folds=s.n_folds, seed=s.seed, how="optimised" if s.optimise else "fixed at 1",
                                            seconds=sum(outcome.seconds.values()))
        with pn.io.hold():
            self.views.draw(outcome)
            for key, sentence in explanations(outcome).items():
                self.sentences[key].object = sentence
            self.scores.object = scores_html(outcome)

    # -- views -----------------------------------------------------------------------------
    def _explained(self, view, key: str) -> pn.Column:
        return pn.Column(view, self.sentences[key], self.formulas[key], sizing_mode="stretch_width")

    def _build_layout(self) -> pn.Row:
        self._about = pn.pane.Markdown(
            "EP, QP, VB and Laplace are fitted on the training folds (features standardised on them, isotropic "
            "RBF kernel as the paper's code); QP and Laplace use EP's kernel, VB its own bound.",
            sizing_mode="stretch_width")
        self._scores_heading = pn.pane.Markdown("#### Test error and NTLL per method")
        self._controls = pn.Column(
            pn.pane.Markdown("### Data and split"),
            self.dataset_select, self.seed_input, self.folds_select, self.optimise_box,
            pn.Row(self.cancel_button, self.spinner),
            self.download,
            export_buttons("variance-effects"),
            self._about,
            width=300,
        )
        # as many columns as fit: one on a 1024 px screen, where two left each plot too narrow
        self._views = views = view_grid(
            self._explained(pn.pane.Bokeh(self.figures["scatter"], sizing_mode="stretch_width"), "scatter"),
            self._explained(pn.pane.Bokeh(self.figures["ratio"], sizing_mode="stretch_width"), "ratio"),
            self._explained(pn.Column(self._scores_heading, self.scores,
                                      sizing_mode="stretch_width"), "scores"),
            projector=self.projector,
        )
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, self.status, views, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        texts = (*self.sentences.values(), *self.formulas.values(), self.scores, self.status, self._about,
                 self._scores_heading)
        widgets = [w for w in self._controls.objects if isinstance(w, pn.widgets.Widget)] + [self.cancel_button]
        enlarge(self.projector, texts, widgets)
        set_projector(self._views, self.projector)  # wider columns for the large fonts
        for fig in self.figures.values():
            style_figure(fig, self.projector)

    # -- URL -------------------------------------------------------------------------------
    def _sync_url(self) -> VarianceQuery | None:
        """Keep dataset, seed, folds and optimise in the URL; a bad value in a
        link is replaced by the page's value and reported."""
        location = pn.state.location
        if location is None:
            return None
        self.query = VarianceQuery()
        self.query.param.watch(self._on_query, list(URL_KEYS), precedence=1)  # after the URL sync writes the link
        link_query.sync(location, self.query, {key: key for key in URL_KEYS})
        return self.query

    def _write_url(self) -> None:
        if getattr(self, "query", None) is None:
            return
        self._writing_url = True
        try:
            self.query.param.update(ve_dataset=self.dataset, ve_seed=int(self.seed), ve_folds=int(self.folds),
                                    ve_optimise="on" if self.optimise else "off")
        finally:
            self._writing_url = False

    def _on_query(self, *events) -> None:
        """A link's values (read when the page opens) set the page; each bad one is named in the link
        banner with its field's accepted values and the value shown instead. A good value of a key
        takes back that key's refusal; a link that is all good and shows another view hides the
        banner, and so does the reader's own next change (:meth:`_moved_on`)."""
        if self._writing_url:
            return
        changes, bad = {}, {}
        for event in events:
            parsed = self.parse_query_value(event.name, event.new)
            if parsed is None:
                bad[event.name] = event.new
            else:
                changes[event.name] = parsed
        before = self._link_view()
        self._not_reader += 1
        try:
            self.param.update(**{key.removeprefix("ve_"): value for key, value in changes.items()})
        finally:
            self._not_reader -= 1
        for key in changes:
            self._link_notes.pop(key, None)
        shown = self._link_view()
        for key, value in bad.items():
            self._link_notes[key] = f"{key}={quoted(value)} ({self.link_accepts(key)}); shown instead: {shown[key]}"
        if not bad and shown != before:
            self._link_notes.clear()  # a good link asking for another view
        self._show_link_notes()
        if bad:
            # the link shows what the page shows; written once this browser event is handled
            # (Panel does not echo a change back to the browser inside the event that sent it)
            if pn.state.curdoc is not None:
                pn.state.add_periodic_callback(self._write_url, period=50, count=1)
            else:
                self._write_url()

    def _link_view(self) -> dict:
        """The page's values as its URL keys show them."""
        return {"ve_dataset": self.dataset, "ve_seed": int(self.seed), "ve_folds": int(self.folds),
                "ve_optimise": "on" if self.optimise else "off"}

    def _show_link_notes(self) -> None:
        text = ("The link's values below were not used:\n\n" + safe_text.bullets(self._link_notes.values())
                if self._link_notes else "")
        self.link_alert.param.update(object=text, visible=bool(text))

    def _moved_on(self, *events) -> None:
        """A change of the page's values that no link made (the reader's): the link's refusals are old news."""
        if not self._not_reader and self._link_notes:
            self._link_notes.clear()
            self._show_link_notes()

    @staticmethod
    def link_accepts(key: str) -> str:
        """The field of URL ``key`` and the values it accepts, as a refusal says them."""
        return {"ve_dataset": f"dataset: one of {', '.join(DATASET_CHOICES)}",
                "ve_seed": f"{SEED.name}: {SEED.accepted}",
                "ve_folds": f"folds: one of {', '.join(map(str, FOLD_CHOICES))}",
                "ve_optimise": "optimise hyper-parameters: on or off (true/false, 1/0)"}[key]

    @staticmethod
    def parse_query_value(key: str, value):
        """The page value of URL ``key`` = ``value``, or None if it is not valid."""
        text = str(value).strip()
        if key == "ve_dataset":
            return text if text in DATASET_CHOICES else None
        if key in ("ve_seed", "ve_folds"):
            try:
                number = int(text)
            except ValueError:
                return None
            valid = 0 <= number <= MAX_SEED if key == "ve_seed" else number in FOLD_CHOICES
            return number if valid else None
        flags = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}
        return flags.get(text.lower())

    def __panel__(self):
        return self._layout


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, VarianceEffects()
