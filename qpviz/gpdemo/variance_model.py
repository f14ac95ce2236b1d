"""The Variance effects page's state and logic, without widgets (tests drive it directly; the page,
app/variance_effects.py, binds widgets to it and app/variance_figures.py draws it).

:class:`VarianceModel` holds the inputs (dataset, split seed, folds, whether EP's evidence is
optimised), the data other pages passed (:meth:`VarianceModel.use_data`), the last good result
and the messages. The computation is :mod:`qpviz.variance_effects`. A change of the inputs shows
the cached result of the new choice at once, else starts its fits as a long job
(:mod:`qpviz.gpdemo.jobs`: the shared thread pool; sessions asking for the same fit share it)
whose progress and outcome :meth:`VarianceModel.poll` takes. A failed or skipped fit, a cancel
and a refused input keep the last good result, and the inputs go back to that result's (the
controls and the views always agree). A link's values are checked by :meth:`VarianceModel.read_link`,
each refused one named with what its key accepts (:attr:`VarianceModel.link_notes`).

Every setter is idempotent: a value equal to the one the model has changes nothing (so a widget
showing the model's value may hand it back without a guard).
"""
from __future__ import annotations

import numpy as np
import param

from qpviz import variance_effects as ve
from qpviz.checks import quoted, refusal
from qpviz.gpdemo import jobs
from qpviz.number_rules import NumberField

__all__ = ["VarianceModel", "DATASET_CHOICES", "FOLD_CHOICES", "MAX_SEED", "SEED", "URL_KEYS"]

DATASET_CHOICES = (*ve.SYNTHETIC, *ve.REAL_DATASETS)
FOLD_CHOICES = (10, 5, 2)
MAX_SEED = 10_000
#: The split seed's typed box.
SEED = NumberField("split seed", 0, MAX_SEED, integer=True)
#: URL query keys (prefixed: the other pages share the URL) of the inputs.
URL_KEYS = ("ve_dataset", "ve_seed", "ve_folds", "ve_optimise")
#: A link's words for optimise (on / off as the page writes it).
FLAGS = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}


class VarianceModel(param.Parameterized):
    """Inputs, the running fit, the last good result and the messages of the Variance effects page."""

    dataset = param.Selector(objects=list(DATASET_CHOICES), default="synthetic 2-D", doc="Data to split and fit.")
    seed = param.Integer(default=0, bounds=(0, MAX_SEED), doc="Seed of the random folds.")
    folds = param.Selector(objects=list(FOLD_CHOICES), default=10, doc="Folds; the first is held out.")
    optimise = param.Boolean(default=True, doc="Optimise EP's evidence (and VB's bound) over the kernel.")

    message = param.String(default="", doc="A failed or skipped fit, a refused seed (plain text; '' if none).")
    status = param.Parameter(default=("", {}), doc="(Markdown template, values): what is fitted or shown; "
                                                   "the page escapes the values (safe_text.fill).")
    busy = param.Boolean(default=False, doc="A fit of this model runs in the job pool.")
    link_notes = param.Dict(default={}, doc="URL key -> the refusal of its value in a link.")
    version = param.Integer(default=0, doc="Bumped when another result is shown (the page redraws).")

    def __init__(self, **params):
        super().__init__(**params)
        self.result: ve.VarianceResult | None = None  # the last good result
        self.own_data: dict = {}  # label -> {"X", "y", "likelihood", "kernel"} that other pages passed
        self.started = False  # the page holds its views: a change of the inputs fits at once
        self._job = None  # the fits' job this model waits for (qpviz.gpdemo.jobs)
        self._asked = None  # (dataset, settings) of that job
        self._own_changes = 0  # > 0 while the model changes its inputs itself (a link, the last good fit)
        self.param.watch(self._inputs_changed, ["dataset", "seed", "folds", "optimise"])

    # -- inputs ------------------------------------------------------------------------------
    def settings(self) -> ve.Settings:
        return ve.Settings(seed=int(self.seed), n_folds=int(self.folds), optimise=bool(self.optimise))

    def type_seed(self, text) -> bool:
        """A typed seed (:data:`SEED`): taken if valid (the message goes), else refused with a message
        naming the field, its range and the seed kept. The seed in use as the box shows it is no news."""
        if text == SEED.show(self.seed):
            return True
        try:
            value = SEED.parse(text)
        except ValueError as exc:
            self.message = refusal(exc, SEED.show(self.seed))
            return False
        self.message = ""
        self.seed = value
        return True

    def use_data(self, label: str, X, y, likelihood="probit", kernel=None, select: bool = True) -> None:
        """Offer (X, y) as dataset ``label`` (e.g. the GP 1-D page's current data; a later call with
        the same label replaces it) and show it if ``select``. ``likelihood`` (a name or object) and
        ``kernel`` (the optimisation's start; default RBF(1, 1)) are the sending page's. The fit is
        cached by the arrays' content and the models."""
        self.own_data[label] = {"X": np.asarray(X, float), "y": np.asarray(y, float), "likelihood": likelihood,
                                "kernel": kernel}
        if label not in self.param.dataset.objects:
            self.param.dataset.objects = [label, *self.param.dataset.objects]
        if select and self.dataset != label:
            self.dataset = label
        elif select and self.started:
            self.request()  # the same label again: its new data

    def _inputs_changed(self, *events) -> None:
        if not self._own_changes and self.link_notes:
            self.link_notes = {}  # the reader's own change: the link's refusals are old news
        if self.started:
            self.request()

    # -- the fits (a long job) -----------------------------------------------------------------
    def start(self) -> None:
        """The page holds its views: fit the current choice, and every later one at once."""
        self.started = True
        self.request()

    def request(self) -> None:
        """Show the cached result of the current choice at once, else start its fits in the job pool."""
        settings, name = self.settings(), self.dataset
        self.cancel()  # a newer choice supersedes a running fit
        data = self.own_data.get(name, {})
        done = ve.cached(name, settings, **data)
        if done is not None:
            self._show_outcome(done)
            return

        def start(job):
            def progress(text: str) -> None:  # (the worker's thread: only remembered; poll shows it)
                job["progress"] = text

            return jobs.EXECUTOR.submit(ve.variances_for, name, settings, cancel=job["cancel"], progress=progress,
                                        **data)

        key = ("variance effects", ve.cache_key(name, settings, **data))
        self._job = jobs.start_or_join("Variance effects fit", key, start, progress="starting")
        self._asked = (name, settings)
        self.busy = True
        self._show_progress()

    def _show_progress(self) -> None:
        name, settings = self._asked
        self.status = ("Fitting **{name}** (seed {seed}): {progress} ({elapsed:.1f} s)",
                       {"name": name, "seed": settings.seed, "progress": self._job["progress"],
                        "elapsed": jobs.elapsed(self._job)})

    def cancel(self, say: bool = False) -> None:
        """Stop waiting for the running fit (it stops at its next optimiser evaluation unless another
        session waits for it too). ``say`` (the Cancel button): the inputs go back to the last good
        result's and the status says so."""
        job, self._job = self._job, None
        if job is None:
            return
        jobs.release(job)
        self.busy = False
        if say:
            self._cancelled(self._asked[0])

    def _cancelled(self, name: str) -> None:
        self._back_to_last_good()
        shown = self.result.name if self.result is not None else None
        self.status = ("Fit of {name} cancelled; the page shows the last good fit ({shown}) again." if shown else
                       "Fit of {name} cancelled; the page shows the last good fit.", {"name": name, "shown": shown})

    def poll(self) -> None:
        """Called periodically while the fit runs (and by tests): its progress, or its outcome."""
        job = self._job
        if job is None:
            return
        state, outcome = jobs.outcome(job, cancelled=ve.FitCancelled)
        if state == "running":
            self._show_progress()
            return
        self._job = None
        self.busy = False
        name = self._asked[0]
        if state == "cancelled":
            self._cancelled(name)
        elif state == "failed":
            self._fail(f"The fit of {name} failed: {outcome}. Try another seed or dataset, or turn optimisation off.")
        else:
            self._show_outcome(outcome)

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the running fit ends and its outcome is taken (tests, scripts)."""
        jobs.wait_until(lambda: self._job is None, self.poll, timeout)

    def _back_to_last_good(self) -> None:
        """The inputs of the shown result again (cached: nothing is refitted), so that the controls
        and the views always agree."""
        r = self.result
        if r is not None and r.name in self.param.dataset.objects:
            self._own_changes += 1
            try:
                self.param.update(dataset=r.name, seed=r.settings.seed, folds=r.settings.n_folds,
                                  optimise=r.settings.optimise)
            finally:
                self._own_changes -= 1

    def _fail(self, message: str) -> None:
        self._back_to_last_good()
        self.message = message
        self.status = ("The views show the last good fit." if self.result is not None else "", {})

    def _show_outcome(self, outcome) -> None:
        if isinstance(outcome, ve.Skipped):
            self._fail(outcome.message)
            return
        s = outcome.settings
        self.message = ""
        self.status = ("**{name}**: fold 1 of {folds} held out (seed {seed}), hyper-parameters {how}; fits took "
                       "{seconds:.1f} s (cached now).",
                       {"name": outcome.name, "folds": s.n_folds, "seed": s.seed,
                        "how": "optimised" if s.optimise else "fixed at 1", "seconds": sum(outcome.seconds.values())})
        if outcome is not self.result:
            self.result = outcome
            self.version += 1

    def csv_text(self) -> str:
        """The shown fit as CSV (:func:`qpviz.variance_effects.result_csv`)."""
        return ve.result_csv(self.result)

    # -- a link's values -------------------------------------------------------------------------
    def link_view(self) -> dict:
        """The inputs as the URL keys show them."""
        return {"ve_dataset": self.dataset, "ve_seed": int(self.seed), "ve_folds": int(self.folds),
                "ve_optimise": "on" if self.optimise else "off"}

    def read_link(self, values: dict) -> bool:
        """A link's values (URL key -> value) set the inputs; each bad one is named in
        :attr:`link_notes` with its field's accepted values and the value shown instead (False is
        returned: the link should be rewritten to :meth:`link_view`). A value equal to the one shown
        is no news. A good value of a key takes back that key's refusal; a link that is all good and
        shows another view takes back every refusal, and so does the reader's own next change."""
        view = self.link_view()
        changes, bad = {}, {}
        for key, value in values.items():
            parsed = self.parse_link_value(key, value)
            if parsed is None:
                bad[key] = value
            elif parsed != getattr(self, key.removeprefix("ve_")):
                changes[key] = parsed
        self._own_changes += 1
        try:
            self.param.update(**{key.removeprefix("ve_"): value for key, value in changes.items()})
        finally:
            self._own_changes -= 1
        notes = {key: note for key, note in self.link_notes.items() if key not in changes}
        shown = self.link_view()
        for key, value in bad.items():
            notes[key] = f"{key}={quoted(value)} ({self.link_accepts(key)}); shown instead: {shown[key]}"
        if not bad and shown != view:
            notes = {}  # a good link asking for another view
        self.link_notes = notes
        return not bad

    @staticmethod
    def link_accepts(key: str) -> str:
        """The field of URL ``key`` and the values it accepts, as a refusal says them."""
        return {"ve_dataset": f"dataset: one of {', '.join(DATASET_CHOICES)}",
                "ve_seed": f"{SEED.name}: {SEED.accepted}",
                "ve_folds": f"folds: one of {', '.join(map(str, FOLD_CHOICES))}",
                "ve_optimise": "optimise hyper-parameters: on or off (true/false, 1/0)"}[key]

    @staticmethod
    def parse_link_value(key: str, value):
        """The input of URL ``key`` = ``value`` (the dataset, the seed or folds as a number, optimise
        as a bool), or None if it is not valid."""
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
        return FLAGS.get(text.lower())
