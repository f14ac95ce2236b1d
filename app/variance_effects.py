"""Variance effects page: EP vs QP predictive latent variances on held-out points (QP paper Fig. 1).

A thin Panel view over :mod:`qpviz.variance_effects`: choose a dataset (the paper's real datasets
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
from bokeh.models import ColumnDataSource, HoverTool, LogTicker, Range1d
from bokeh.plotting import figure

from explorer_figures import NumbersPane, legend_below, style_figure
from figure_export import export_buttons
from layout import enlarge, formula, set_projector, view_grid
from number_field import NumberField
import link_query
import pages
import safe_text
from qpviz.checks import quoted
from qpviz import variance_effects as ve
from colours import METHOD_COLOURS as COLOURS

__all__ = ["TITLE", "COLOURS", "DATASET_CHOICES", "VarianceEffects", "explanations", "scores_html", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: One colour per method on every page (Okabe-Ito, colour-blind safe).
LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace"}
DATASET_CHOICES = (*ve.SYNTHETIC, *ve.REAL_DATASETS)
FOLD_CHOICES = (10, 5, 2)
MAX_SEED = 10_000
#: The split seed's typed box.
SEED = NumberField("split seed", 0, MAX_SEED, integer=True)
#: While a fit runs, the page looks for its result this often (ms).
POLL_MS = 250
#: Fits of all sessions share these threads (2 cores; a third fit would only queue behind them).
EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="qpviz-variance")

FORMULAS = {
    "scatter": r"$$\sigma^2_*=k(x_*,x_*)-\mathbf k_*^\top\big(K+\tilde\Sigma\big)^{-1}\mathbf k_*,"
               r"\qquad \sigma^2_{*,QP}\le\sigma^2_{*,EP}$$",
    "ratio": r"$$r_*=\sigma^2_{*,QP}\,/\,\sigma^2_{*,EP}\in(0,1]$$",
    "scores": r"$$\mathrm{TE}=\frac1m\sum_i\frac{|y_i-\hat y_i|}{2},\qquad "
              r"\mathrm{NTLL}=-\frac1m\sum_i\log q(y_i\mid x_i)$$",
}


def explanations(result: ve.VarianceResult) -> dict:
    """One sentence per view saying what the reader should see in ``result``."""
    n, above, ratio = result.n_test, result.n_above, result.ratio
    if above == 0:
        scatter = (f"All {n} held-out points lie on or below the dashed diagonal: QP never reports more latent "
                   "variance than EP, because each QP projection is at most as wide as EP's (Theorem 2), which "
                   "makes QP's sites more precise.")
    else:
        scatter = (f"{above} of {n} held-out points lie above the dashed diagonal (QP more uncertain than EP), "
                   "against the paper's Figure 1: check the fits' warnings below.")
    shrink = 100.0 * (1.0 - float(ratio.min()))
    hint = "" if result.settings.optimise else " (turn on optimisation: with the default kernel they crowd at 1)"
    histogram = (f"The ratios lie between {ratio.min():.4f} and {ratio.max():.4f} (median {np.median(ratio):.4f}): "
                 f"QP's latent variance is up to {shrink:.1f}% below EP's{hint}.")
    ep, qp = result.scores["ep"], result.scores["qp"]
    if qp["ntll"] <= ep["ntll"]:
        verdict = "the smaller variance costs nothing here"
    else:
        verdict = "here the smaller variance costs a little"
    scores = (f"Lower is better in both columns; QP's TE is {qp['test_error']:.3f} against EP's "
              f"{ep['test_error']:.3f} and its NTLL {qp['ntll']:.4f} against {ep['ntll']:.4f}: {verdict}.")
    return {"scatter": scatter, "ratio": histogram, "scores": scores}


def scores_html(result: ve.VarianceResult) -> str:
    """TE / NTLL / fit time per method, and the fitted kernels, as an HTML table."""
    rows = []
    for method in ve.METHODS:
        swatch = f'<span style="color:{COLOURS[method]}">&#9632;</span>'
        score = result.scores[method]
        if method in result.skipped:
            rows.append(f"<tr><td>{swatch} {LABELS[method]}</td><td>n/a</td><td>n/a</td><td>not fitted</td></tr>")
            continue
        rows.append(f"<tr><td>{swatch} {LABELS[method]}</td><td>{score['test_error']:.4f}</td>"
                    f"<td>{score['ntll']:.4f}</td><td>{result.seconds[method]:.2f}</td></tr>")
    head = "<tr><th>method</th><th>TE</th><th>NTLL</th><th>fit time (s)</th></tr>"
    kernel = ", ".join(f"{k} = {v:.4g}" for k, v in result.hyperparameters.items())
    vb_kernel = ", ".join(f"{k} = {v:.4g}" for k, v in result.vb_hyperparameters.items()) or "not fitted"
    note = (f"<p>{result.n_train} training and {result.n_test} held-out points, {result.n_features} feature(s). "
            f"Kernel of EP, QP and Laplace: {kernel}; VB's: {vb_kernel}.</p>")
    warned = "".join(f"<li>{safe_text.html_text(w, safe_text.MESSAGE_LIMIT)}</li>" for w in result.warnings)
    warned += "".join(f"<li>{LABELS[m]} not fitted: {safe_text.html_text(why, safe_text.MESSAGE_LIMIT)}</li>"
                      for m, why in result.skipped.items())
    return (f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>{note}"
            + (f"<p>Warnings:</p><ul>{warned}</ul>" if warned else ""))


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

        self._build_figures()
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
        """The shown fit as CSV: one row per held-out point, then TE / NTLL per method."""
        r = self.result
        if r is None:
            return "no fit yet\n"
        lines = [f"# {r.name}: fold 1 of {r.settings.n_folds} held out, seed {r.settings.seed}, "
                 f"optimise {r.settings.optimise}", "point,var_ep,var_qp,ratio"]
        lines += [f"{i},{e!r},{q!r},{q / e!r}" for i, (e, q) in enumerate(zip(r.var_ep.tolist(), r.var_qp.tolist()))]
        lines += ["", "method,test_error,ntll,seconds"]
        lines += [f"{m},{r.scores[m]['test_error']!r},{r.scores[m]['ntll']!r},{r.seconds[m]!r}" for m in ve.METHODS]
        return "\n".join(lines) + "\n"

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
            self._draw(outcome)

    # -- views -----------------------------------------------------------------------------
    def _build_figures(self) -> None:
        self.scatter_source = ColumnDataSource(data={"var_ep": [], "var_qp": [], "ratio": []})
        self.diagonal_source = ColumnDataSource(data={"x": [], "y": []})
        self.histogram_source = ColumnDataSource(data={"left": [], "right": [], "count": []})
        self.one_source = ColumnDataSource(data={"x": [1.0, 1.0], "y": [0.0, 1.0]})
        self.scatter_range = Range1d(0.1, 1.0)
        scatter = figure(x_axis_type="log", y_axis_type="log", x_range=self.scatter_range, y_range=self.scatter_range,
                         x_axis_label="EP predictive latent variance var_EP(x*)",
                         y_axis_label="QP predictive latent variance var_QP(x*)", title="Figure 1")
        scatter.line("x", "y", source=self.diagonal_source, line_dash="dashed", color="black", line_width=1.5,
                     legend_label="QP = EP")
        points = scatter.scatter("var_ep", "var_qp", source=self.scatter_source, size=9, color=COLOURS["qp"],
                                 line_color="black", alpha=0.8, legend_label="held-out point (var_EP, var_QP)")
        scatter.add_tools(HoverTool(renderers=[points], tooltips=[("var_EP", "@var_ep{0.0000e}"),
                                                                  ("var_QP", "@var_qp{0.0000e}"),
                                                                  ("ratio", "@ratio{0.0000}")]))
        histogram = figure(x_axis_label="var_QP / var_EP", y_axis_label="number of held-out points",
                           title="Histogram of the ratio")
        histogram.quad(left="left", right="right", bottom=0, top="count", source=self.histogram_source,
                       fill_color=COLOURS["qp"], line_color="white", alpha=0.85, legend_label="held-out points")
        histogram.line("x", "y", source=self.one_source, color="black", line_dash="dashed", line_width=1.5,
                       legend_label="ratio = 1 (QP = EP)")
        for axis in (*scatter.xaxis, *scatter.yaxis):
            # ticks at 1, 2, 5 x 10^k: labelled but not crowded on a narrow (1024 px) screen
            axis.ticker = LogTicker(mantissas=[1, 2, 5], desired_num_ticks=5)
        for fig in (scatter, histogram):
            fig.sizing_mode = "stretch_width"
            fig.min_width = 320
            fig.toolbar_location = "right"
            legend_below(fig)
        self.figures = {"scatter": scatter, "ratio": histogram}

    def _draw(self, result: ve.VarianceResult) -> None:
        ratio = result.ratio
        self.scatter_source.data = {"var_ep": result.var_ep, "var_qp": result.var_qp, "ratio": ratio}
        both = np.concatenate([result.var_ep, result.var_qp])
        lo, hi = float(both.min()), float(both.max())
        lo, hi = lo / 1.3, hi * 1.3  # a margin on the log scale
        self.scatter_range.update(start=lo, end=hi)
        self.diagonal_source.data = {"x": [lo, hi], "y": [lo, hi]}
        bins = int(np.clip(result.n_test // 2, 5, 30))
        low = min(float(ratio.min()), 1.0 - 1e-6)
        counts, edges = np.histogram(ratio, bins=bins, range=(low, 1.0))
        self.histogram_source.data = {"left": edges[:-1], "right": edges[1:], "count": counts}
        self.one_source.data = {"x": [1.0, 1.0], "y": [0.0, float(counts.max())]}
        self.figures["scatter"].title.text = f"Figure 1: {result.name},\n{result.n_test} held-out points"
        self.figures["ratio"].title.text = f"var_QP / var_EP on {result.name}"
        for key, sentence in explanations(result).items():
            self.sentences[key].object = sentence
        self.scores.object = scores_html(result)

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
