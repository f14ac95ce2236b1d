"""Projection Explorer page: one tilted distribution and its EP (KL) and QP (W2) Gaussians.

A thin Panel view over :mod:`qpviz.explorer`: the widgets call ``ExplorerState.update`` (which
validates and computes), views (a)-(c) are Bokeh figures whose data sources are patched in
place from the state's ``result``, so a slider move only streams new arrays to the browser
(a HoloViews DynamicMap per plot cost ~100 ms of Python per update here, too slow for the
100 ms budget). The var_QP/var_EP map (d) is a Bokeh image too (explorer_figures.RatioMap),
recomputed (and cached by ``explorer.cached_ratio_map``) only when the likelihood, its parameters
or y change; moving the cavity only moves its marker. Clicking the map moves the cavity.

Where the time of a slider move goes, and what keeps it within 100 ms (key press to painted
plots, benchmarks/bench_explorer_latency.py): see explorer_figures.show_columns (patches, not
new data: no legend rebuild), explorer_figures.ExplorerFigures (ranges set here, shared quantile
source), explorer_widgets.PromptFloatSlider (5 ms debounce), explorer_widgets.UrlState (URL
written once the sliders rest), explorer_figures.RatioMap (marker on the overlay layer; canvas,
not WebGL) and app/tcp_nodelay.py (no Nagle waits).

A link is read whole (:meth:`ProjectionExplorer.apply_link`, :func:`qpviz.explorer.read_link`): a
bad value is replaced and the banner says by what, and every view shows the same likelihood and
values; the page opens on explorer.OPENING_VIEW, where EP and QP visibly differ. The views wrap
into as many columns as the screen holds (app/layout.py).

The likelihood menu and the parameter inputs come from the likelihood registry through
``qpviz.explorer`` (explorer_widgets.ParameterInputs): a newly registered likelihood appears
with its inputs, and this module never asks for a likelihood by name. This module assembles the
page; the figures and the numbers are in app/explorer_figures.py, the inputs and the URL state
in app/explorer_widgets.py.
"""
from __future__ import annotations

import json
from concurrent.futures import Future

import numpy as np
import panel as pn
import param

from binding import forward, holds
from explorer_figures import ExplorerFigures, MapView, NumbersPane, RatioMap, map_view, numbers_html, style_figure
from explorer_widgets import PROJECTOR_WIDGET_CSS, ParameterInputs, PromptFloatSlider, PromptIntSlider, UrlState
from figure_export import export_buttons
from layout import CONTROLS_WIDTH, enlarge, explained, set_projector, view_grid
from link_query import opened as opened_query
from number_field import NumberField
import pages
import safe_text
from qpviz import explorer
from qpviz.explorer import ExplorerState

__all__ = ["TITLE", "PROJECTOR_WIDGET_CSS", "TYPED", "WHY_QP_IS_NARROWER", "ProjectionExplorer", "page",
           "url_keys"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: The typed boxes beside the sliders (app/number_field.py: a bad value is named with the range, the
#: box shows the value kept). Their ranges are the explorer's own (qpviz.explorer), which its state
#: checks again; the count box is shown for count likelihoods, the y box for real ones.
TYPED = {
    "cavity_mean": NumberField("cavity mean m", *explorer.CAVITY_MEAN_SLIDER),
    "cavity_std": NumberField("cavity std s", *explorer.CAVITY_STD_SLIDER),
    "count": NumberField("count y", 0, explorer.MAX_COUNT, integer=True),
    "real": NumberField("observation y", -explorer.MAX_ABS_REAL_Y, explorer.MAX_ABS_REAL_Y),
}

#: Plain words beside the views: why QP's Gaussian is never wider than EP's, and where it is narrowest.
WHY_QP_IS_NARROWER = (
    "**Why QP's variance is smaller.** Plot the tilted distribution's quantiles against the standard normal's "
    "(view b'). QP's standard deviation is the least-squares slope of that cloud of points, and a least-squares "
    "slope equals *correlation x spread*: sigma_QP = corr(tilted quantile, normal quantile) x sigma_EP, where "
    "sigma_EP is the tilted distribution's own standard deviation (EP's). A correlation is at most 1, so "
    "sigma_QP <= sigma_EP, with equality only for a Gaussian tilted distribution. The points bend away from a line, "
    "and QP shrinks most, where the tilted distribution is most skewed, cut off or two-humped: a hard step "
    "(eps = 0) with the cavity far on its wrong side, or a Poisson count with a squared rate (this opening view)."
)

#: Beside each view: two lines of explanation and its formula (rendered by KaTeX).
EXPLANATIONS = {
    "densities": (
        "The tilted distribution is cavity times likelihood, renormalised; EP matches its mean and variance, "
        "QP keeps the mean and minimises the 2-Wasserstein distance (QP paper eqs. 4, 5, 7).",
        r"$$\begin{gathered}\tilde q(f)=\frac{p(y\mid f)\,\mathcal N(f\mid m,s^2)}{Z}\\"
        r"\sigma_{QP}=\int_0^1 F^{-1}(u)\,\Phi^{-1}(u)\,du\le\sigma_{EP}\end{gathered}$$"
    ),
    "quantiles": (
        "Quantile functions over u; W2 between two 1-D distributions is the L2 distance between their "
        "quantile functions (QP paper Prop. 1, eq. 11).",
        r"$$\begin{gathered}W_2^2(\tilde q,\mathcal N(\mu,\sigma^2))=\\"
        r"\int_0^1\big(F^{-1}(u)-\mu-\sigma\,\Phi^{-1}(u)\big)^2du\end{gathered}$$"
    ),
    "qq": (
        "Tilted quantiles against normal quantiles: QP is the least-squares line (slope sigma_QP = correlation "
        "x sigma_EP), EP the line with slope sigma_EP, both through the tilted mean (eqs. 17, 20).",
        r"$$\begin{gathered}\sigma_{QP}=\arg\min_\sigma\int_0^1\big(F^{-1}(u)-\mu-\sigma z_u\big)^2du\\"
        r"=\operatorname{corr}(F^{-1}(u),z_u)\,\sigma_{EP},\quad z_u=\Phi^{-1}(u)\end{gathered}$$"
    ),
    "numbers": (
        "Sites follow from dividing the projection by the cavity (eq. 6); a non-positive site precision "
        "is flagged.",
        r"$$\begin{gathered}\tilde\sigma^{-2}=\sigma^{-2}-s^{-2}\\"
        r"\tilde\mu=\tilde\sigma^{2}\big(\mu/\sigma^{2}-m/s^{2}\big)\end{gathered}$$"
    ),
    "map": (
        "var_QP / var_EP over cavities for this likelihood and y (<= 1 by Theorem 2); the circled cross marks the "
        "current cavity. Click the map to move the cavity there; the common colour scale "
        f"[{explorer.COMMON_RATIO_SCALE[0]:g}, {explorer.COMMON_RATIO_SCALE[1]:g}] compares likelihoods (lower "
        "ratios take its lowest colour).",
        r"$$r(m,s)=\sigma^2_{QP}(m,s)\,/\,\sigma^2_{EP}(m,s)\le 1$$"
    ),
}



class ProjectionExplorer(pn.viewable.Viewer):
    """The page: controls on the left, four views with their formulas on the right."""

    projector = param.Boolean(default=False, doc="Large fonts for a projector.")

    def __init__(self, kernels: Future | None = None, **params):
        """``kernels``: done when this server's explorer kernels are ready (None: they are); until
        then the views compute by NumPy quadrature (``engine="numpy"``, qpviz.explorer.views), so
        that a first start shows the page at once."""
        super().__init__(**params)
        self.state = ExplorerState(**explorer.OPENING_VIEW, engine=explorer.engine_for(kernels))
        self.state.follow(kernels)
        s = self.state
        self.likelihood = pn.widgets.Select(
            label="likelihood", options=list(s.param.likelihood.objects), value=s.likelihood, css_classes=["qpviz-likelihood"]
        )
        self.parameter_inputs = ParameterInputs(s.param.likelihood.objects)
        self.parameter_widgets = self.parameter_inputs.widgets
        self.y_label = pn.widgets.RadioButtonGroup(label="label y", options={"-1": -1.0, "+1": 1.0}, value=1.0)
        self.y_count = PromptIntSlider(
            label=f"count y in {explorer.range_label('count')}", start=0, end=explorer.MAX_COUNT,
            value=1, css_classes=["qpviz-count"],
        )
        self.y_real = PromptFloatSlider(
            label=f"observation y in {explorer.range_label('y')}", start=-explorer.MAX_ABS_REAL_Y,
            end=explorer.MAX_ABS_REAL_Y, step=0.05, value=0.0, css_classes=["qpviz-y"],
        )
        self.y_count_text = self._typed("count", "y", "qpviz-count-text")
        self.y_real_text = self._typed("real", "y", "qpviz-y-text")
        self.mean_slider = PromptFloatSlider(
            label=f"cavity mean m in {explorer.range_label('m')}", start=explorer.CAVITY_MEAN_SLIDER[0],
            end=explorer.CAVITY_MEAN_SLIDER[1], step=0.05, value=s.cavity_mean, css_classes=["qpviz-mean"],
        )
        self.std_slider = PromptFloatSlider(
            label=f"cavity std s in {explorer.range_label('s')}", start=explorer.CAVITY_STD_SLIDER[0],
            end=explorer.CAVITY_STD_SLIDER[1], step=0.05, value=s.cavity_std, css_classes=["qpviz-std"],
        )
        self.mean_text = self._typed("cavity_mean", "cavity_mean", "qpviz-mean-text")
        self.std_text = self._typed("cavity_std", "cavity_std", "qpviz-std-text")
        self.show = pn.widgets.CheckButtonGroup(label="projections", options=["EP", "QP"], value=["EP", "QP"])
        low, high = explorer.COMMON_RATIO_SCALE
        self.map_scale = pn.widgets.RadioButtonGroup(
            label="colour scale of map (d)",
            options={"own scale": "own", f"common [{low:g}, {high:g}]": "common"}, value="own",
            css_classes=["qpviz-map-scale"],
        )
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["qpviz-error"])
        self.link_note = pn.pane.Alert("", alert_type="warning", visible=False, css_classes=["qpviz-link-note"])
        self.numbers = NumbersPane("", css_classes=["qpviz-numbers"], sizing_mode="stretch_width")

        # a widget's value reaches the state unless the state holds it (app/binding.py): the page
        # showing the state in its widgets forwards nothing
        forward(self.likelihood, holds(s, "likelihood"), self._on_likelihood)
        self.parameter_inputs.forward(self._holds_parameter, self._on_parameter)
        for support, widget in (("binary", self.y_label), ("count", self.y_count), ("real", self.y_real)):
            forward(widget, holds(s, "y"), lambda value, support=support: self._on_y(support, value))
        forward(self.mean_slider, holds(s, "cavity_mean"), lambda value: self._apply(cavity_mean=value))
        forward(self.std_slider, holds(s, "cavity_std"), lambda value: self._apply(cavity_std=value))
        self.show.param.watch(self._on_show, "value")
        for choice in (self.show, self.map_scale):
            choice.param.watch(self._chosen, "value")
        self.state.param.watch(self._show_error, "error")
        self.state.param.watch(self._refresh_views, ["result", "show_ep", "show_qp"])

        self._refresh_widgets()
        self._layout = self._build_layout()
        location = pn.state.location
        self.apply_link(link_query(location))
        self.url = self._sync_url(location)

    # -- links -----------------------------------------------------------------------------
    def apply_link(self, query: dict) -> list[str]:
        """Show what a shared link's query (key -> text as typed) asks for, as one consistent view.

        explorer.read_link checks every value and replaces the bad ones; the banner then lists
        each replacement ("count=-3: ...; showing count=10 instead"). Returns those notes.

        A link read without notes hides the banner only if it changed the view: Panel's URL sync
        rewrites the page's values in its own text (a list as "['EP', 'QP']") when another key of the
        URL changes (e.g. a link's bad ``page=`` corrected), which reads the view shown again; the
        banner about the link that opened it stays. The page's own changes hide it (:meth:`_moved_on`).
        """
        reading = explorer.read_link(query)
        notes = list(reading.notes)
        before = self.link_values()
        with pn.io.hold():
            # the state takes the link's view at once (one computation); the widgets then show it
            # (values the state holds: nothing forwarded) and the link's values the state does not
            # hold: the hidden likelihoods' inputs and observations, the display choices
            if not self.state.update(**reading.inputs):
                notes.append(f"the link's view cannot be computed ({self.state.error}); showing the opening view instead")
                self.state.update(**explorer.OPENING_VIEW)
            self._show_link_rest(reading)
            self._refresh_widgets()
            if notes:
                self.link_note.object = ("This link asked for values the page cannot show; it replaced them:\n\n"
                                         + safe_text.bullets(notes))
                self.link_note.visible = True
            elif self.link_values() != before:  # a good link asking for another view
                self._moved_on()
        return notes

    def _show_link_rest(self, reading: explorer.LinkReading) -> None:
        """The link's values that the state does not hold: the inputs of the other likelihoods, the
        observations of the other supports and the display choices (the state's own are shown by
        _refresh_widgets; forwarded to the state, they would compute again)."""
        s = self.state
        for key, value in reading.controls.items():
            if self.parameter_inputs.controls[key].likelihood != s.likelihood:
                self.parameter_widgets[key].value = value
        observations = {"binary": (self.y_label, reading.sliders["label"]),
                        "count": (self.y_count, int(reading.sliders["count"])), "real": (self.y_real, reading.sliders["y"])}
        for support, (widget, value) in observations.items():
            if support != s.likelihood_object().support:
                widget.value = value
        self.show.value = json.loads(reading.choices["show"])
        self.map_scale.value = reading.choices["scale"]

    def _moved_on(self) -> None:
        """The view is no longer the one a link's banner speaks of: hide the banner."""
        self.link_note.param.update(object="", visible=False)

    def link_values(self) -> dict:
        """The page's view as URL query values (key -> text), what explorer.read_link reads back."""
        number = lambda value: format(float(value), ".10g")  # noqa: E731
        values = {"lik": self.state.likelihood}
        for key, widget in self.parameter_widgets.items():
            if widget.value is not None:
                values[key] = widget.value if isinstance(widget.value, str) else number(widget.value)
        values.update(label=number(self.y_label.value), count=str(int(self.y_count.value)), y=number(self.y_real.value),
                      m=number(self.mean_slider.value), s=number(self.std_slider.value), show=json.dumps(self.show.value),
                      scale=self.map_scale.value)
        return values

    # -- input -----------------------------------------------------------------------------
    def _apply(self, **changes) -> bool:
        """Forward a change of the reader's to the state; the widgets then show the state."""
        with pn.io.hold():  # one message to the browser for all the changes below
            try:
                ok = self.state.update(**changes)
            except Exception as exc:  # never let a callback error reach the browser console
                self.state.error = f"unexpected error: {exc}"
                ok = False
            if ok:
                self._moved_on()
            self._refresh_widgets()  # sliders and selects show the last good (or adjusted) input
        return ok

    def _typed(self, field: str, name: str, css_class: str) -> pn.widgets.TextInput:
        """A typed box (Enter applies) for the state's ``name``: it shows the value in use; a value
        outside TYPED[field]'s range is refused in the page's alert, and the state is left as it was."""
        return TYPED[field].bind(self.state, name, css_class, say=lambda text: setattr(self.state, "error", text),
                                 apply=lambda key, number: self._apply(**{key: number}))

    def _on_likelihood(self, name: str) -> None:
        """A new likelihood, with the parameters its (hidden until now) inputs hold."""
        remembered = self.parameter_inputs.params_of(name)
        if not self._apply(likelihood=name, likelihood_params=remembered) and remembered:
            self._apply(likelihood=name)  # e.g. a shared link gave it a bad value: start afresh

    def _holds_parameter(self, control, value) -> bool:
        """Whether the state holds a parameter input's value (the input of its likelihood shows it)."""
        s = self.state
        return control.likelihood == s.likelihood and control.value_for(s.likelihood_params) == value

    def _on_parameter(self, control, value) -> None:
        """A parameter input changed: it reaches the state if its likelihood is the current one
        (the inputs of the other likelihoods are hidden; a shared link may set them)."""
        if control.likelihood == self.state.likelihood and value is not None:
            self._apply(likelihood_params=control.params_for(value))

    def _on_y(self, support: str, value) -> None:
        if self.state.likelihood_object().support == support:
            self._apply(y=value)

    def _chosen(self, event=None) -> None:
        """A display choice: the view is no longer the link's (apply_link shows a link's banner after
        setting its choices)."""
        self._moved_on()

    def _on_show(self, event=None) -> None:
        self.state.param.update(show_ep="EP" in self.show.value, show_qp="QP" in self.show.value)

    def _refresh_widgets(self) -> None:
        """Make every widget show the state (after a change that the state accepted or adjusted)."""
        s = self.state
        support = s.likelihood_object().support  # (values the state holds: nothing forwarded back)
        self.likelihood.value = s.likelihood
        self.parameter_inputs.show(s.likelihood, s.likelihood_params)
        self.y_label.visible = support == "binary"
        self.y_count.visible = support == "count"
        self.y_real.visible = support == "real"
        self.y_count_text.visible = support == "count"
        self.y_real_text.visible = support == "real"
        if support == "binary":
            self.y_label.value = s.y
        elif support == "count":
            self.y_count.value = int(s.y)
        elif support == "real":
            self.y_real.value = float(s.y)
        self.mean_slider.value = s.cavity_mean
        self.std_slider.value = s.cavity_std

    def _show_error(self, event=None) -> None:
        self.alert.object = safe_text.message(self.state.error)
        self.alert.visible = bool(self.state.error)

    def _on_tap(self, x=None, y=None) -> None:
        """A click on the map: move the cavity to the clicked (mean, std), clipped to the map."""
        if x is None or y is None:
            return
        lo, hi = explorer.CAVITY_STD_SLIDER
        self._apply(cavity_mean=round(float(np.clip(x, *explorer.CAVITY_MEAN_SLIDER)), 2), cavity_std=round(float(np.clip(y, lo, hi)), 2))

    def _sync_url(self, location) -> UrlState | None:
        """Keep the view in the URL and read a link the browser reports (explorer_widgets.UrlState;
        e.g. ?lik=step&step_eps=0.2&m=0.55)."""
        if location is None:
            return None
        sliders = (self.y_count, self.y_real, self.mean_slider, self.std_slider)
        immediate = (self.likelihood, *self.parameter_widgets.values(), self.y_label, self.show,
                     self.map_scale)
        return UrlState(location, keys=url_keys(), values=self.link_values, read=self.apply_link,
                        immediate=immediate, sliders=sliders)

    # -- views -----------------------------------------------------------------------------
    def _refresh_views(self, *events) -> None:
        """Push the state's current result into the numbers and the figures (views a, b, b', c)."""
        s = self.state
        with pn.io.hold():
            self.numbers.object = numbers_html(s.result.summary, s.show_ep, s.show_qp)
            self.views.show(s)

    def _style_figures(self, *events) -> None:
        """Font sizes of every figure (larger in projector mode)."""
        self.views.style(self.projector)
        style_figure(self._map_figure, self.projector)

    def map_view(self, likelihood, likelihood_params, y, scale="own") -> MapView:
        """View (d): the var_QP/var_EP map for a likelihood and y (not the cavity), in its own colour
        range or (``scale`` "common") in explorer.COMMON_RATIO_SCALE for every likelihood; a map
        that cannot be computed is shown "not available" and its error in the page's alert."""
        try:
            data = explorer.cached_ratio_map(likelihood, likelihood_params, y, engine=self.state.engine)
        except Exception as exc:  # shown on the page, never raised into the browser
            self.state.error = f"the var_QP/var_EP map could not be computed: {exc}"
            data = None
        return map_view(data, likelihood, y, scale)

    def _refresh_map(self, *events) -> None:
        s = self.state
        with pn.io.hold():
            self.map.show(self.map_view(s.likelihood, s.likelihood_params, s.y, self.map_scale.value))

    def _build_map(self) -> pn.pane.Bokeh:
        self.map = RatioMap(self.marker, self._on_tap)
        self._map_figure = self.map.figure
        self.state.param.watch(self._refresh_map, ["likelihood", "likelihood_params", "y"])
        self.map_scale.param.watch(self._refresh_map, "value")
        self._refresh_map()
        self.map.figure.css_classes = ["qpviz-map"]  # (Panel's Bokeh pane does not pass its own to the figure)
        return pn.pane.Bokeh(self.map.figure, sizing_mode="stretch_width")

    def _explained(self, view, key: str) -> pn.Column:
        return explained(view, EXPLANATIONS[key], self._texts)

    def _build_views(self) -> pn.FlexBox:
        self.why = pn.pane.Markdown(WHY_QP_IS_NARROWER, sizing_mode="stretch_width", css_classes=["qpviz-why"])
        self._texts = [self.numbers, self.why, self.link_note, self.alert]  # projector mode enlarges these
        self.views = ExplorerFigures(self.state.cavity_mean, self.state.cavity_std)
        self.sources, self.figures, self.renderers, self.marker = (
            self.views.sources, self.views.figures, self.views.renderers, self.views.marker)
        map_pane = self._build_map()
        numbers = pn.Column(self.numbers, sizing_mode="stretch_width")
        self._grid = view_grid(
            self._explained(pn.pane.Bokeh(self.figures["densities"], sizing_mode="stretch_width"), "densities"),
            self._explained(numbers, "numbers"),
            self._explained(pn.pane.Bokeh(self.figures["quantiles"], sizing_mode="stretch_width"), "quantiles"),
            self._explained(pn.pane.Bokeh(self.figures["qq"], sizing_mode="stretch_width"), "qq"),
            self._explained(map_pane, "map"),
        )
        return self._grid

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, (*self._controls.objects, *self.parameter_widgets.values(), self.numbers))
        set_projector(self._grid, self.projector)
        self._style_figures()

    def _build_controls(self) -> pn.Column:
        return pn.Column(
            pn.pane.Markdown("### Likelihood and observation"),
            self.likelihood,
            pn.Column(*self.parameter_widgets.values(), margin=0),
            self.y_label,
            self.y_count,
            self.y_real,
            self.y_count_text,
            self.y_real_text,
            pn.pane.Markdown("### Cavity N(m, s²)"),
            self.mean_slider,
            self.mean_text,
            self.std_slider,
            self.std_text,
            pn.pane.Markdown("### Show"),
            self.show,
            self.map_scale,
            export_buttons("projection-explorer"),
            width=CONTROLS_WIDTH,
        )

    def _build_layout(self) -> pn.Row:
        self._controls = self._build_controls()
        views = self._build_views()
        self._refresh_views()
        self._style_figures()
        return pn.Row(self._controls, pn.Column(self.link_note, self.alert, self.why, views, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout


def link_query(location) -> dict:
    """The query of the page's URL as typed (key -> text; the last of a repeated key), {} without one."""
    return opened_query(location)


def url_keys() -> tuple[str, ...]:
    """The URL query keys of the page (every likelihood's parameters: registered ones too)."""
    return explorer.link_keys()


def warm_server(kernels: Future) -> str:
    """Once per server, before its first session (app/app_hooks.py): the opening view and its map
    computed as the page will compute them (explorer.opening_view; the map read from disk where a
    warm-up stored it); what was done, for the log."""
    from qpviz import warmup  # noqa: PLC0415

    engine = explorer.engine_for(kernels)
    explorer.opening_view(engine)
    if engine == "auto":
        return "opening view and map computed"
    if warmup.is_warm(pages.info(__name__).kernels):  # dashboard.kernels_ready deferred their loading
        return "opening view and map computed by NumPy quadrature; its kernels load after the first page"
    return "opening view and map computed by NumPy quadrature; its kernels are compiling"


def page(kernels: Future | None = None) -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py (``kernels``: see :class:`ProjectionExplorer`)."""
    return TITLE, ProjectionExplorer(kernels=kernels)
