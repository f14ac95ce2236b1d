"""GP 2-D page: GP classification of 2-D points by EP, QP, VB, Laplace and an MCMC reference.

A thin Panel view over :mod:`qpviz.gpdemo.twod`: the page's parameters (preset, n, seed, kernel
and its hyper-parameters, methods) are validated by :meth:`GP2DPage.refit`, which keeps the last
good fit and sets ``message`` when an input is bad (one class only, a 0 or NaN hyper-parameter).
Every method is fitted and predicted on the grid once per (data, kernel) and cached, so showing a
method again, or going back to earlier hyper-parameters, costs no fit. The MCMC reference is a long
job (:mod:`long_jobs`, as on GP 1-D): it runs in the shared thread pool, shows its progress, can be
cancelled, is shared by sessions asking for the same reference and cached (:data:`MCMC_CACHE`);
with it, a table gives each method's distance to it (:func:`qpviz.gpdemo.twod.distances_to_mcmc`).

Views: per method the predictive probability with its 0.1 / 0.5 / 0.9 contours in the method's
colour, per method the latent variance, and var_QP - var_EP on a diverging colour map centred at
0, each with the data points (class +1 circles, class -1 triangles). Clicking a probability plot
adds a point of the chosen class there, or removes the point under the click (Bokeh Tap event).

The figures are plain Bokeh figures whose data sources are replaced in place at every change
(:class:`GridFigure`), as on the Projection Explorer: HoloViews DynamicMaps (Image, Contours,
Points overlays, Tap stream) cost 150-350 ms of Python per plot and per update here, 1-1.7 s for
the five default plots, over the page's 1 s budget; patching the sources costs a few ms per plot.
The figures and the first fit wait until the tab is first drawn, so the other pages open without
waiting for them.
"""
from __future__ import annotations

import hashlib
import io
from collections import OrderedDict

import numpy as np
import panel as pn
import param
from bokeh import events
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper, Range1d
from bokeh.palettes import BrBG11, Greys256, PuOr11, Viridis256
from bokeh.plotting import figure as bokeh_figure
from bokeh.plotting.contour import contour_data

import long_jobs
from explorer_figures import NumbersPane, legend_below, style_figure
from explorer_widgets import PromptFloatSlider, PromptIntSlider
from figure_export import export_buttons
from layout import HandOff, enlarge, explained, formula as formula_pane, set_projector, view_row
from long_jobs import JobPoller, cancel_when_session_ends
from number_field import LinkValues, NumberField, link_banner, range_checks
import pages
import safe_text
from qpviz.checks import quoted
from qpviz import kernels
from qpviz.gpdemo import oned, twod
from colours import METHOD_COLOURS

__all__ = ["TITLE", "METHOD_COLOURS", "METHOD_LABELS", "KERNELS", "RANGES", "MCMC_SETTINGS", "MCMC_CACHE",
           "GridFigure", "GP2DPage", "page"]

TITLE = pages.title(__name__)  # registered in app/pages.py

#: One colour per method on every page (Okabe-Ito, colour-blind safe).
METHOD_LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace", "mcmc": "MCMC"}
#: Methods fitted inline at every change; MCMC is a long job.
INLINE_METHODS = ("ep", "qp", "vb", "laplace")
#: The MCMC reference: chains x kept samples, each after its burn-in, thinned (21 000 elliptical
#: slice steps a chain). Measured on 2 busy cores: 3-8 s at N = 100 (half of it the grid's
#: predictive), 17 s at N = 400; its Monte Carlo error (mean |p_A - p_B| / 2 of two halves) is
#: about 0.005 in p, as small as EP's distance to it on the presets.
MCMC_SETTINGS = {"chains": 4, "n_samples": 1000, "burn_in": 1000, "thin": 20}
#: MCMC references of every session, by (data, kernel, grid, settings).
MCMC_CACHE = long_jobs.LRUCache(32)
#: How often a running MCMC job is polled for progress.
JOB_POLL_MS = 250
#: Under the contours of a method whose colour is close to the grey map's (MCMC's mid grey lies on
#: p = 0.5), a dark outline keeps the lines visible.
CONTOUR_CASING = {"mcmc": "black"}
#: Data points: class +1 orange circles, class -1 black triangles (shape differs, not only colour).
CLASS_STYLE = {1.0: ("class +1", "circle", "#E69F00", "black"), -1.0: ("class −1", "triangle", "black", "white")}
KERNELS = {"rbf": kernels.RBF, "matern32": kernels.Matern32, "matern52": kernels.Matern52}
#: Valid range of each numeric input (the sliders span it; the URL may ask for anything).
RANGES = {"n": (2, 400), "seed": (0, 10_000), "variance": (0.1, 20.0), "lengthscale": (0.1, 5.0)}
GRID_SIZE = 60
#: The seed's typed box (the other numbers are sliders).
SEED = NumberField("seed", *RANGES["seed"], integer=True)
#: Colour maps: light (p = 0) to dark grey (p = 1), so the method-coloured contours and both
#: classes' markers stay visible; viridis for variances; brown-teal, centred at 0, for differences.
PROBA_PALETTE = tuple(reversed(Greys256))[:200]
VAR_PALETTE = Viridis256
DIFF_PALETTE = BrBG11
#: sd_method / sd_MCMC maps: purple (below 1) to brown (above 1), centred at 1 (colour-blind safe).
RATIO_PALETTE = PuOr11
#: Least half-width of the ratio maps' colour range around 1 (a flat map stays pale).
RATIO_MIN_SPAN = 0.05
#: Contour levels of the probability maps: the decision boundary p = 0.5 (thick) and 0.1, 0.9 (dashed).
BOUNDARY, BANDS = [0.5], [0.1, 0.9]
#: Fitted (data, kernel, method) grids kept per page.
CACHE_ITEMS = 48
#: A click closer than this fraction of the plot width to a point removes that point.
REMOVE_RADIUS = 0.03
#: Query keys of the page's state (prefixed: every page of the app shares one URL).
URL_KEYS = {"preset": "g2_preset", "n": "g2_n", "seed": "g2_seed", "kernel": "g2_kernel", "variance": "g2_var",
            "lengthscale": "g2_ls", "methods": "g2_methods", "added": "g2_added", "removed": "g2_removed"}

#: Below each view: two lines of explanation and its formula (rendered by KaTeX).
EXPLANATIONS = {
    "proba": (
        "Probability of class +1 under each method's Gaussian posterior of the latent f_*; lines at p = 0.1, 0.5 "
        "(thick), 0.9. Click to add a point of the chosen class; click a point to remove it.",
        r"$$p(y_*=+1\mid x_*)=\int\Phi(f)\,\mathcal N(f\mid m_*,v_*)\,df=\Phi\!\Big(\frac{m_*}{\sqrt{1+v_*}}\Big)$$",
    ),
    "proba_mcmc": (
        "The MCMC reference: the exact predictive averaged over S samples f⁽ˢ⁾ of the latent values at the data "
        "(elliptical slice sampling, 4 chains), each carried to x_* by the GP's conditional N(g_s, c).",
        r"$$p_{MC}(y_*=+1\mid x_*)=\frac1S\sum_{s=1}^S\Phi\Big(\frac{g_s}{\sqrt{1+c}}\Big),\quad "
        r"g_s=k_*^\top K^{-1}f^{(s)},\ c=k_{**}-k_*^\top K^{-1}k_*$$",
    ),
    "var_mcmc": (
        "The MCMC reference's latent variance: the conditional variance c plus the spread of the samples' "
        "conditional means (the law of total variance).",
        r"$$v_*^{MC}=c+\frac1S\sum_s\big(g_s-\bar g\big)^2$$",
    ),
    "var": (
        "Latent predictive variance of each method: small near the data, back to the prior variance σ_f² far "
        "from it (Rasmussen & Williams eq. 3.61, site precisions on the diagonal of Σ̃⁻¹).",
        r"$$v_*=k(x_*,x_*)-k_*^\top\big(K+\tilde\Sigma\big)^{-1}k_*$$",
    ),
    "table": (
        "Each method's distance to the MCMC reference over the grid: the mean absolute difference of the "
        "predictive probabilities and the mean 2-Wasserstein distance of the latent marginals. Differences below "
        "the reference's own Monte Carlo error (two halves of its chains) cannot be told apart.",
        r"$$\overline{|p-p_{MC}|}=\tfrac1G\sum_g|p(x_g)-p_{MC}(x_g)|,\quad "
        r"W_2^2=(m-m_{MC})^2+(\sqrt v-\sqrt{v_{MC}})^2$$",
    ),
    "sd_ratio": (
        "Each method's latent sd divided by the MCMC reference's at every grid point: above 1 (brown) the method is "
        "less certain than the reference, below 1 (purple) over-confident. The reference's own sd is known to about "
        "1/sqrt(2 ESS) (ESS: its effective sample size); ratios within twice that of 1 cannot be told from 1.",
        r"$$r(x_*)=\sqrt{v_*^{\mathrm{method}}/v_*^{MC}},\qquad \mathrm{se}(\hat s)/s\approx 1/\sqrt{2\,\mathrm{ESS}}$$",
    ),
    "diff": (
        "var_QP − var_EP at every grid point: never above 0 for the probit likelihood (QP paper Theorem 2, Fig. 1); "
        "QP's site variance is the least-squares slope ρ·σ_EP ≤ σ_EP, so the gap is largest where sites disagree.",
        r"$$\Delta(x_*)=v_*^{QP}-v_*^{EP}\le 0$$",
    ),
}


def _validated(name: str, value) -> float:
    """``value`` as a finite number inside RANGES[name], else a ValueError saying what to change."""
    lo, hi = RANGES[name]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}") from None
    if not np.isfinite(number) or not lo <= number <= hi:
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}")
    return number


class GridFigure:
    """One Bokeh figure of a map on the grid (image + colour bar), the data points by class and,
    for probabilities, the 0.1 / 0.5 / 0.9 contours in ``contour_colour``.

    :meth:`show` replaces the sources' data in place (no new figure, no legend rebuild).
    """

    def __init__(self, value_label: str, palette, clim=None, contour_colour=None, contour_label="", on_tap=None,
                 casing=None):
        lo, hi, blo, bhi = twod.DEFAULT_EXTENT
        self.x_range, self.y_range = Range1d(lo, hi), Range1d(blo, bhi)
        fig = bokeh_figure(x_range=self.x_range, y_range=self.y_range, x_axis_label="x1", y_axis_label="x2",
                           height=370, min_width=300, sizing_mode="stretch_width", title=value_label,
                           tools="pan,wheel_zoom,box_zoom,reset,save", toolbar_location="right",
                           output_backend="canvas")
        self.fixed_clim = clim is not None
        self.mapper = LinearColorMapper(palette=list(palette), low=clim[0] if clim else 0.0, high=clim[1] if clim else 1.0)
        self.image = ColumnDataSource({"image": [np.zeros((2, 2))], "x": [lo], "y": [blo], "dw": [hi - lo], "dh": [bhi - blo]})
        image = fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.image, color_mapper=self.mapper)
        fig.add_tools(HoverTool(renderers=[image], tooltips=[("x1", "$x{0.00}"), ("x2", "$y{0.00}"), (value_label, "@image{0.0000}")]))
        fig.add_layout(ColorBar(color_mapper=self.mapper, title=value_label, width=12), "right")
        self.contours = []
        if contour_colour is not None:
            flat = np.zeros((2, 2))
            for levels, width, dash, legend in ((BOUNDARY, 3, "solid", f"{contour_label} p = 0.5"),
                                                (BANDS, 1.5, "dashed", f"{contour_label} p = 0.1, 0.9")):
                if casing is not None:  # drawn first: an outline under the coloured line
                    outline = fig.contour([lo, hi], [blo, bhi], flat, levels=levels, line_color=casing,
                                          line_width=width + 2.5, line_dash=dash)
                    self.contours.append((outline, levels))
                renderer = fig.contour([lo, hi], [blo, bhi], flat, levels=levels, line_color=contour_colour,
                                       line_width=width, line_dash=dash)
                self.contours.append((renderer, levels))
                # a contour renderer has no legend entry of its own: an empty line in its style gives one
                fig.line([np.nan, np.nan], [np.nan, np.nan], line_color=contour_colour, line_width=width,
                         line_dash=dash, legend_label=legend)
        self.points = {}
        for label_value, (label, marker, fill, line) in CLASS_STYLE.items():
            self.points[label_value] = ColumnDataSource({"x": [], "y": []})
            fig.scatter("x", "y", source=self.points[label_value], marker=marker, size=9, fill_color=fill,
                        line_color=line, line_width=1, legend_label=label)
        legend_below(fig)  # where it hides no data point and catches no click meant for the map
        if on_tap is not None:
            fig.on_event(events.Tap, lambda event: on_tap(event.x, event.y))
        self.figure = fig

    def show(self, fit: twod.GridFit, values: np.ndarray, X: np.ndarray, y: np.ndarray, title: str, clim=None,
             centre: float = 0.0) -> None:
        """Draw ``values`` (indexed [x2, x1] on fit's grid), the points (X, y) and the title;
        ``clim`` = c sets the colour range to [centre - c, centre + c]."""
        lo, hi, blo, bhi = float(fit.x1[0]), float(fit.x1[-1]), float(fit.x2[0]), float(fit.x2[-1])
        # the image's pixels are centred on the grid points
        half1, half2 = (hi - lo) / (len(fit.x1) - 1) / 2, (bhi - blo) / (len(fit.x2) - 1) / 2
        self.image.data = {"image": [values], "x": [lo - half1], "y": [blo - half2], "dw": [hi - lo + 2 * half1],
                           "dh": [bhi - blo + 2 * half2]}
        self.x_range.update(start=lo - half1, end=hi + half1)
        self.y_range.update(start=blo - half2, end=bhi + half2)
        if clim is not None:
            self.mapper.update(low=centre - clim, high=centre + clim)
        elif not self.fixed_clim:
            self.mapper.update(low=float(values.min()), high=float(values.max()))
        for renderer, levels in self.contours:
            renderer.set_data(contour_data(fit.x1, fit.x2, values, levels=levels))
        for label_value, source in self.points.items():
            chosen = y == label_value
            source.data = {"x": X[chosen, 0], "y": X[chosen, 1]}
        self.figure.title.text = title

    def style(self, projector: bool) -> None:
        """Font sizes (larger in projector mode), the colour bar's numbers included."""
        style_figure(self.figure, projector)
        scale = 1.7 if projector else 1.0
        for item in self.figure.right:
            if isinstance(item, ColorBar):
                item.major_label_text_font_size = f"{round(11 * scale)}px"
                item.title_text_font_size = f"{round(12 * scale)}px"
                item.width = round(12 * scale)


class GP2DPage(pn.viewable.Viewer):
    """The page: controls on the left; probability maps, variance maps and the difference map."""

    preset = param.Selector(objects=list(twod.PRESETS), default="moons", doc="Data preset.")
    n = param.Integer(default=100, doc="Number of preset points.")
    seed = param.Integer(default=0, doc="Random seed of the preset.")
    kernel = param.Selector(objects=list(KERNELS), default="rbf", doc="Kernel family.")
    variance = param.Number(default=4.0, doc="Kernel variance σ_f².")
    lengthscale = param.Number(default=0.8, doc="Kernel length-scale ℓ.")
    methods = param.ListSelector(default=["ep", "qp"], objects=list(METHOD_LABELS), doc="Methods to show.")
    added = param.List(default=[], doc="Clicked points [x1, x2, label] (in the URL: a link reopens them).")
    removed = param.List(default=[], doc="Indices of the preset's points a click removed.")
    click_class = param.Selector(objects=["+1", "-1"], default="+1", doc="Class of a clicked point.")
    projector = param.Boolean(default=False, doc="Large fonts for a projector.")
    message = param.String(default="", doc="What to change when an input is bad ('' if none).")
    job_status = param.String(default="", doc="The MCMC reference's progress, or how it ended.")
    job_running = param.Boolean(default=False, doc="An MCMC reference is being computed for this page.")

    def __init__(self, **params):
        super().__init__(**params)
        self.X, self.y, self._origin = self.data()
        self.param.watch(self._on_data_inputs, ["preset", "n", "seed", "added", "removed"])
        self.fit: twod.GridFit | None = None  # the last good fit
        self.fit_description = ""  # preset, N and hyper-parameters of self.fit
        self._link_note = ""  # what a bad link asked for and what replaced it
        self._drawing_tab = False  # True while the tab's figures are first built
        self._texts: list = []  # explanation panes (larger in projector mode)
        self._cache: OrderedDict = OrderedDict()
        self._stale = True  # inputs changed since self.fit was computed
        self.views: pn.Column | None = None  # built when the tab is first drawn
        self._job = None  # the MCMC reference job this page waits for (long_jobs)
        self.poller = JobPoller(self._poll_job, lambda: self.job_running, period_ms=JOB_POLL_MS)
        self._layout = self._build_layout()
        self.url = self._sync_url()
        # a closed browser tab stops its job (unless another session shares it)
        cancel_when_session_ends(lambda: self.cancel_job(quiet=True))

    # -- computation -----------------------------------------------------------------------
    def kernel_object(self) -> kernels.Kernel:
        """The kernel the inputs describe (ValueError naming the bad input)."""
        return KERNELS[self.kernel](variance=_validated("variance", self.variance),
                                    lengthscale=_validated("lengthscale", self.lengthscale))

    def _method_grid(self, kernel, method: str, extent) -> twod.GridFit:
        key = (self.X.tobytes(), self.y.tobytes(), repr(kernel), method, extent)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        result = twod.fit_grid(self.X, self.y, kernel, methods=(method,), grid_size=GRID_SIZE, extent=extent)
        self._cache[key] = result
        if len(self._cache) > CACHE_ITEMS:
            self._cache.popitem(last=False)
        return result

    def refit(self) -> bool:
        """Fit every shown method (and EP and QP for the difference map) to the current data.

        On bad input keep the last good fit, set ``message`` and return False.
        """
        try:
            kernel = self.kernel_object()
            twod.check_data(self.X, self.y)
            if not self.methods:
                raise ValueError("choose at least one method to show")
            extent = twod.grid_extent(self.X)
            wanted = [m for m in INLINE_METHODS if m in self.methods or m in ("ep", "qp")]
            parts = [self._method_grid(kernel, m, extent) for m in wanted]
        except Exception as exc:  # shown on the page; never raised into the browser
            self.message = f"{exc}. The plots keep the last good fit."
            return False
        reference = self._mcmc_reference(kernel, extent)
        combined = twod.GridFit(x1=parts[0].x1, x2=parts[0].x2, X=self.X, y=self.y, likelihood="probit", kernel=kernel)
        for part in [*parts, *([reference] if reference is not None else [])]:
            for field in ("proba", "mean", "var", "log_evidence", "converged", "seconds"):
                getattr(combined, field).update(getattr(part, field))
            combined.notes += part.notes
        combined.mcmc_noise = dict(reference.mcmc_noise) if reference is not None else {}
        combined.mcmc_diagnostics = dict(reference.mcmc_diagnostics) if reference is not None else {}
        combined.var_difference = combined.var["qp"] - combined.var["ep"]
        self.fit = combined
        self.fit_description = self._subtitle()  # the titles describe the fit shown, not a rejected input
        self.message = "; ".join(filter(None, [self._link_note, *combined.notes]))
        return True

    # -- the MCMC reference (a long job) ------------------------------------------------------
    def _mcmc_key(self, kernel, extent) -> tuple:
        digest = hashlib.sha1(self.X.tobytes() + b"|" + self.y.tobytes()).hexdigest()
        return "mcmc-2d", digest, repr(kernel), extent, GRID_SIZE, tuple(sorted(MCMC_SETTINGS.items()))

    def _mcmc_reference(self, kernel, extent) -> twod.GridFit | None:
        """The cached reference of the current data and kernel; without one, its job is started
        (or kept running) when MCMC is shown, and stopped when it is not."""
        if "mcmc" not in self.methods:
            self.cancel_job(quiet=True)  # nobody waits for the reference any more
            return None
        key = self._mcmc_key(kernel, extent)
        reference = MCMC_CACHE.get_recent(key)
        if reference is None and (self._job is None or self._job["key"] != key):
            self._start_mcmc(key, kernel, extent)
        return reference

    def _start_mcmc(self, key, kernel, extent) -> None:
        self.cancel_job(quiet=True)  # one job per page: the reference of older settings is not wanted
        X, y = self.X.copy(), self.y.copy()

        def start(job):
            def progress(done, total):
                job["progress"] = (done, total)

            return long_jobs.EXECUTOR.submit(twod.mcmc_grid, X, y, kernel, GRID_SIZE, extent=extent,
                                             on_progress=progress, cancel=job["cancel"], **MCMC_SETTINGS)

        self._job = long_jobs.start_or_join("MCMC reference", key, start, progress=(0, MCMC_SETTINGS["chains"]))
        self.param.update(job_running=True, job_status="MCMC reference: started")
        self.poller.ensure()

    def cancel_job(self, quiet: bool = False) -> None:
        """Stop waiting for the MCMC reference (its job stops after the current chain unless
        another session waits for it too)."""
        job, self._job = self._job, None
        if job is None:
            return
        long_jobs.release(job)
        self.param.update(job_running=False, job_status="" if quiet else "MCMC reference cancelled")

    def poll(self) -> None:
        """Called periodically while the job runs (and by tests): show its progress; a finished
        reference goes into MCMC_CACHE and the page refits (instant: every fit is cached)."""
        job = self._job
        if job is None:
            return
        state, result = long_jobs.outcome(job, cancelled=oned.Cancelled)
        if state == "running":
            self.job_status = long_jobs.chain_status(job)
            return
        self._job = None
        self.job_running = False
        if state == "cancelled":
            self.job_status = "MCMC reference cancelled"
        elif state == "failed":
            self.job_status = ""
            self.message = f"the MCMC reference failed: {result}"
        else:
            MCMC_CACHE.put(job["key"], result)
            self.job_status = (f"MCMC reference done in {long_jobs.elapsed(job):.1f} s "
                               f"({result.mcmc_noise['samples']} samples): {result.mcmc_diagnostics.get('status', '')}")
            self._changed()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the MCMC job has finished and was taken (tests)."""
        long_jobs.wait_until(lambda: self._job is None, self.poll, timeout)

    def _poll_job(self) -> None:
        with pn.io.hold():
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - a page callback must not raise
                self.message = f"unexpected error: {exc}"

    def _replace_bad_inputs(self) -> str:
        """Before the first fit: numeric inputs out of range (a bad link) go back to their
        defaults, so that the page opens consistent (a NaN never reaches a slider); returns the
        message saying what was replaced ('' if nothing)."""
        replaced = []
        for name in RANGES:
            try:
                _validated(name, getattr(self, name))
            except ValueError:
                default = self.param[name].default
                replaced.append(f"{name} = {quoted(getattr(self, name))} (valid: {RANGES[name][0]:g} to {RANGES[name][1]:g}) "
                                f"was replaced by {default!r}")
                setattr(self, name, default)
        location = pn.state.location
        query = dict(location.query_params) if location is not None else {}
        for name in RANGES:  # a value the URL sync itself refused (e.g. n = -3.0 is no integer)
            asked, shown = query.get(URL_KEYS.get(name)), getattr(self, name)
            if asked is not None and not any(text.startswith(f"{name} = ") for text in replaced):
                try:
                    kept = float(asked) == float(shown)
                except (TypeError, ValueError):
                    kept = False
                if not kept:
                    lo, hi = RANGES[name]
                    replaced.append(f"{name} = {quoted(asked)} (valid: {lo:g} to {hi:g}) was replaced by {shown!r}")
                    self.param.trigger(name)  # the URL sync writes the value shown into the link
        if not self.methods:
            replaced.append("no method was chosen: EP and QP are shown")
            self.methods = list(self.param.methods.default)
        return "The link asked for " + "; ".join(replaced) + "." if replaced else ""

    def ensure_fit(self) -> twod.GridFit | None:
        """The current fit, computed now if the inputs changed since the last one."""
        if self._stale:
            self._stale = False
            self.refit()
        return self.fit

    def _changed(self) -> None:
        """Inputs changed: refit now and redraw (once the tab has been drawn)."""
        self._stale = True
        if self.views is not None:
            self._link_note = ""  # the reader has moved on from the link
        if self.views is not None:
            self.ensure_fit()
            self.draw()

    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """X, y and each row's origin (its index in the preset, or -(k + 1) for clicked point k):
        the preset without the ``removed`` points, then the ``added`` ones. ValueError if an
        input is bad."""
        n = int(_validated("n", self.n))
        seed = int(_validated("seed", self.seed))
        X, y = twod.make_preset(self.preset, n, seed)
        try:
            removed = {int(i) for i in self.removed if int(i) == i and 0 <= i < n}
            added = np.asarray(self.added, dtype=float).reshape(-1, 3)
        except (TypeError, ValueError):
            raise ValueError("the clicked points must be [x1, x2, label] triples and the removed points preset "
                             "indices") from None
        if not (np.isfinite(added).all() and np.isin(added[:, 2], twod.CLASSES).all()):
            raise ValueError("a clicked point needs finite coordinates and the label -1 or +1")
        keep = np.array([i not in removed for i in range(n)], dtype=bool)
        origin = np.concatenate([np.flatnonzero(keep), -1 - np.arange(len(added))])
        return np.vstack([X[keep], added[:, :2]]), np.concatenate([y[keep], added[:, 2]]), origin

    def _on_data_inputs(self, *events) -> None:
        """A new preset, n or seed starts afresh (no clicked or removed points), unless the same
        change brings its own (a link)."""
        names = {event.name for event in events}
        if not names & {"added", "removed"} and (self.added or self.removed):
            self.param.update(added=[], removed=[])  # calls this again, with the edits
            return
        try:
            self.X, self.y, self._origin = self.data()
        except Exception as exc:
            self.message = f"{exc}. The plots keep the last good data and fit."
            return
        self._changed()

    @param.depends("kernel", "variance", "lengthscale", "methods", watch=True)
    def _new_model(self) -> None:
        self._changed()

    def toggle_point(self, x1: float, x2: float) -> None:
        """A click at (x1, x2): remove the point under it, or add one of class ``click_class``
        (kept in ``added`` / ``removed``, so that the URL holds them)."""
        if x1 is None or x2 is None or not np.isfinite([x1, x2]).all():
            return
        lo, hi, _, _ = twod.grid_extent(self.X)
        distance = np.hypot(self.X[:, 0] - x1, self.X[:, 1] - x2)
        if len(distance) and distance.min() < REMOVE_RADIUS * (hi - lo):
            origin = int(self._origin[distance.argmin()])
            if origin >= 0:
                self.removed = [*self.removed, origin]
            else:
                self.added = [point for k, point in enumerate(self.added) if k != -1 - origin]
        else:
            self.added = [*self.added, [round(float(x1), 3), round(float(x2), 3), float(self.click_class)]]

    def _on_tap(self, x=None, y=None) -> None:
        try:
            self.toggle_point(x, y)
        except Exception as exc:  # never into the browser console
            self.message = f"that click could not be used: {exc}"

    def csv_text(self) -> str:
        """The grid numbers of the last good fit (qpviz.gpdemo.twod.grid_csv)."""
        fit = self.ensure_fit()
        return twod.grid_csv(fit) if fit is not None else "no fit yet\n"

    # -- views -----------------------------------------------------------------------------
    def _subtitle(self) -> str:
        return f"{self.preset} N={len(self.y)}, {self.kernel} σ_f²={self.variance:g} ℓ={self.lengthscale:g}"

    def draw(self) -> None:
        """Push the last good fit and the current points into the shown figures (data sources
        patched in place: no figure is rebuilt)."""
        fit = self.fit
        if fit is None or self.views is None:
            return
        subtitle = self.fit_description
        with pn.io.hold():
            for method in (m for m in self.methods if m in fit.proba):  # MCMC: once its job is done
                label = METHOD_LABELS[method]
                proba, var = self.figures[f"proba_{method}"], self.figures[f"var_{method}"]
                # two lines: one line ran past the plot on a 1024 px screen
                proba.show(fit, fit.proba[method], self.X, self.y, f"{label}: p(y=+1|x),\n{subtitle}")
                var.show(fit, fit.var[method], self.X, self.y, f"{label}: latent var v(x),\n{subtitle}")
            diff = fit.var_difference
            self.figures["diff"].show(
                fit, diff, self.X, self.y,
                f"var_QP − var_EP in [{diff.min():.1e}, {diff.max():.1e}],\n{subtitle}",
                clim=max(float(np.abs(diff).max()), 1e-12),
            )
            self.table.object = distance_table(fit, self.methods)
            self._draw_sd_ratios(fit, subtitle)
            self._show_methods()

    def _draw_sd_ratios(self, fit: twod.GridFit, subtitle: str) -> None:
        """The maps of sd / sd_MCMC of the shown methods and the sentence reading them; without the
        reference, what to do to see them."""
        comparison = twod.sd_comparison(fit, [m for m in INLINE_METHODS if m in self.methods])
        for method, pane in self.ratio_panes.items():
            pane.visible = comparison is not None and method in comparison.ratios
        if comparison is None:
            if "mcmc" not in self.methods:
                note = "Turn MCMC on (Show) to compare each method's latent sd with the reference's."
            elif "mcmc" not in fit.var:
                note = "The MCMC reference is being computed: the sd ratio maps appear when it is done."
            else:
                note = "Show EP, QP, VB or Laplace beside MCMC to compare their latent sd with the reference's."
            self.sd_text.object = safe_text.message(note)
            return
        shown = {m: np.where(np.isfinite(r), r, 1.0) for m, r in comparison.ratios.items()}  # undefined: drawn as 1
        span = max(RATIO_MIN_SPAN, *(float(np.max(np.abs(r - 1.0))) for r in shown.values()))
        for method, ratio in shown.items():
            self.figures[f"ratio_{method}"].show(
                fit, ratio, self.X, self.y,
                f"{METHOD_LABELS[method]}: sd / sd_MCMC in [{ratio.min():.2f}, {ratio.max():.2f}],\n{subtitle}",
                clim=span, centre=1.0)
        self.sd_text.object = safe_text.text(comparison.sentence, None)  # the page's own words and numbers: not shortened

    def _style_figures(self) -> None:
        for grid_figure in self.figures.values():
            grid_figure.style(self.projector)

    def _explained(self, figure: GridFigure, key: str, css: str) -> pn.Column:
        view = pn.pane.Bokeh(figure.figure, sizing_mode="stretch_width")
        return explained(view, EXPLANATIONS[key], self._texts, css)

    def _build_views(self) -> pn.Column:
        """The figures, built (and the first fit run) when the tab is first drawn."""
        if self.views is None:
            # a link's values have arrived by now (pn.state.location syncs after the page loads)
            self._link_note = self._replace_bad_inputs()
            self.figures = {}
            rows = {}
            for method, label in METHOD_LABELS.items():
                colour = METHOD_COLOURS[method]
                self.figures[f"proba_{method}"] = GridFigure("p(y=+1|x)", PROBA_PALETTE, (0.0, 1.0), contour_colour=colour,
                                                             contour_label=label, on_tap=self._on_tap,
                                                             casing=CONTOUR_CASING.get(method))
                self.figures[f"var_{method}"] = GridFigure("latent variance", VAR_PALETTE)
                pair = [self._explained(self.figures[f"{kind}_{method}"],
                                        f"{kind}_{method}" if f"{kind}_{method}" in EXPLANATIONS else kind,
                                        f"qpviz-gp2d-{kind}-{method}") for kind in ("proba", "var")]
                # side by side where two fit, else one above the other
                rows[method] = view_row(*pair, projector=self.projector)
            self.figures["diff"] = GridFigure("var_QP − var_EP", DIFF_PALETTE, (-1.0, 1.0))
            self.ratio_panes = {}
            for method in INLINE_METHODS:
                self.figures[f"ratio_{method}"] = GridFigure("sd / sd_MCMC", RATIO_PALETTE, (0.5, 1.5))
                # in a Column: a Bokeh pane made visible again takes back its figure's visible=False
                self.ratio_panes[method] = pn.Column(pn.pane.Bokeh(self.figures[f"ratio_{method}"].figure,
                                                                   sizing_mode="stretch_width"),
                                                     sizing_mode="stretch_width",
                                                     css_classes=[f"qpviz-gp2d-ratio-{method}"])
            # two maps a row: a Row's smallest width is the sum of its maps' (four made the page 1500 px wide)
            panes = list(self.ratio_panes.values())
            self.ratio_rows = [view_row(*panes[i:i + 2], projector=self.projector) for i in range(0, len(panes), 2)]
            self.ratio_row = pn.Column(*self.ratio_rows, sizing_mode="stretch_width")
            self.sd_text = pn.pane.Markdown("", css_classes=["qpviz-gp2d-sd-text"], sizing_mode="stretch_width",
                                            margin=(0, 10))
            ratios = explained(pn.Column(pn.pane.Markdown("#### Latent sd against the MCMC reference", margin=(0, 10)),
                                         self.sd_text, self.ratio_row, sizing_mode="stretch_width"),
                               EXPLANATIONS["sd_ratio"], self._texts, "qpviz-gp2d-sd-ratio")
            self._texts.append(self.sd_text)
            self.method_rows = rows
            self.views = pn.Column(sizing_mode="stretch_width")
            sentence, formula = EXPLANATIONS["table"]
            table_text = pn.pane.Markdown(sentence, sizing_mode="stretch_width", margin=(0, 10))
            table_formula = formula_pane(formula, margin=(0, 10))
            self._texts += [self.table, table_text, table_formula]
            table = pn.Column(self.table, table_text, table_formula, sizing_mode="stretch_width")
            self.views.objects = [table, *rows.values(), self._explained(self.figures["diff"], "diff", "qpviz-gp2d-diff"),
                                  ratios]
            self._show_methods()
            self._style_figures()
            self._apply_projector_mode()
            self._drawing_tab = True
            try:
                self.ensure_fit()
                self.draw()
            finally:
                self._drawing_tab = False
        return self.views

    @param.depends("methods", watch=True)
    def _show_methods(self) -> None:
        """A method's row is shown when it is chosen and fitted (MCMC: when its reference is in)."""
        if self.views is not None:
            for method, row in self.method_rows.items():
                row.visible = method in self.methods and (self.fit is None or method in self.fit.proba)

    @param.depends("job_status", "job_running", watch=True)
    def _show_job(self) -> None:
        self.status.object = safe_text.message(self.job_status)
        self.progress.visible = self.progress.active = self.job_running
        self.cancel_button.disabled = not self.job_running

    @param.depends("message", watch=True)
    def _show_message(self) -> None:
        doc = pn.state.curdoc
        if self._drawing_tab and doc is not None and doc.session_context is not None:
            # while the tab is first drawn, a change to the alert made Panel give it the theme
            # stylesheets' CDN addresses (console errors offline): show it on the next tick instead
            doc.add_next_tick_callback(self._show_message)
            return
        self.alert.object = safe_text.message(self.message)
        self.alert.visible = bool(self.message)

    def _arrange_pairs(self) -> None:
        """A method's two views side by side where both fit at their smallest width (wider in
        projector mode, for the large fonts), else one above the other."""
        for row in [*self.method_rows.values(), *self.ratio_rows]:
            set_projector(row, self.projector)

    @param.depends("projector", watch=True)
    def _apply_projector_mode(self) -> None:
        enlarge(self.projector, self._texts, self._controls.objects)
        if self.views is not None:
            self._style_figures()
            self._arrange_pairs()

    def _build_controls(self) -> pn.Column:
        w = pn.widgets
        (n_lo, n_hi), (v_lo, v_hi), (l_lo, l_hi) = RANGES["n"], RANGES["variance"], RANGES["lengthscale"]
        self.widgets = {
            "preset": w.Select.from_param(self.param.preset, name="data preset", css_classes=["qpviz-gp2d-preset"]),
            "n": PromptIntSlider.from_param(self.param.n, name=f"points n  [{n_lo}, {n_hi}]", start=n_lo, end=n_hi,
                                        css_classes=["qpviz-gp2d-n"]),
            # a text box: a number box clamped a typed -3 and dropped letters silently; SEED names a bad seed
            "seed": SEED.bind(self, "seed", "qpviz-gp2d-seed", lambda text: setattr(self, "message", text)),
            "kernel": w.Select.from_param(self.param.kernel, name="kernel"),
            "variance": PromptFloatSlider.from_param(self.param.variance, name=f"kernel variance σ_f²  [{v_lo:g}, {v_hi:g}]",
                                                 start=v_lo, end=v_hi, step=0.1, css_classes=["qpviz-gp2d-variance"]),
            "lengthscale": PromptFloatSlider.from_param(self.param.lengthscale, name=f"length-scale ℓ  [{l_lo:g}, {l_hi:g}]",
                                                    start=l_lo, end=l_hi, step=0.05, css_classes=["qpviz-gp2d-lengthscale"]),
            "methods": w.CheckButtonGroup.from_param(self.param.methods, name="methods",
                                                     options={label: m for m, label in METHOD_LABELS.items()}),
            "click_class": w.RadioButtonGroup.from_param(self.param.click_class, name="a click adds class",
                                                         options={"class +1 (●)": "+1", "class −1 (▲)": "-1"}),
        }
        self.cancel_button = w.Button(label="cancel MCMC", color="warning", disabled=True,
                                      css_classes=["qpviz-gp2d-cancel"])
        self.cancel_button.on_click(lambda event: self.cancel_job())
        self.progress = w.Progress(active=False, value=-1, visible=False, sizing_mode="stretch_width")
        self.status = pn.pane.Markdown("", css_classes=["qpviz-gp2d-status"], sizing_mode="stretch_width")
        self.download = w.FileDownload(callback=lambda: io.StringIO(self.csv_text()), filename="gp2d_grid.csv",
                                       label="Download the grid numbers (CSV)", css_classes=["qpviz-gp2d-csv"])
        preset_notes = "\n".join(f"- **{name}**: {note}" for name, (_, _, note) in twod.PRESETS.items())
        return pn.Column(
            pn.pane.Markdown("### Data"), self.widgets["preset"], self.widgets["n"], self.widgets["seed"],
            pn.pane.Markdown("A click on a probability plot adds:"), self.widgets["click_class"],
            pn.pane.Markdown("### Kernel (probit likelihood)"), self.widgets["kernel"], self.widgets["variance"],
            self.widgets["lengthscale"],
            pn.pane.Markdown("### Show"), self.widgets["methods"],
            pn.pane.Markdown("MCMC is a reference computed in the background (seconds)."), self.progress,
            self.status, self.cancel_button, self.download,
            export_buttons("gp-2-d"), self.hand_off.button,
            pn.pane.Markdown(preset_notes, sizing_mode="stretch_width"),
            width=300,
        )

    def _build_layout(self) -> pn.Row:
        # a Markdown pane styled as an alert: pn.pane.Alert, when first drawn inside a tab opened
        # later, asks the CDN for its stylesheets (console errors offline)
        self.alert = pn.pane.Markdown("", visible=False, css_classes=["qpviz-gp2d-error"], sizing_mode="stretch_width",
                                      styles={"background": "#fbe3d6", "border": "2px solid #D55E00",
                                              "border-radius": "4px", "padding": "0 12px"})
        self.link_alert = link_banner()
        self.hand_off = HandOff(
            lambda: (f"GP 2-D: {self.preset}" + (" (edited)" if self.added or self.removed else ""), self.X, self.y,
                     "probit", self.kernel_object()),
            lambda text: setattr(self, "message", text))
        self.table = NumbersPane("", css_classes=["qpviz-gp2d-table"], sizing_mode="stretch_width", margin=(0, 10))
        self._controls = self._build_controls()
        # lazy: the figures and the first fit wait until the tab is first shown (pn.Tabs(dynamic=True))
        views = pn.param.ParamFunction(lambda: self._build_views(), lazy=True, sizing_mode="stretch_width")
        return pn.Row(self._controls, pn.Column(self.link_alert, self.alert, views, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def _sync_url(self):
        """Keep the page's state in the URL (e.g. ?g2_preset=xor&g2_ls=0.5) so that a link reopens it."""
        location = pn.state.location
        if location is None:
            return None
        self.links = LinkValues(location, {key: (self, name) for name, key in URL_KEYS.items()},
                                self.link_alert, checks=range_checks(self, RANGES, URL_KEYS))
        return location

    def __panel__(self):
        return self._layout


def _number(value: float, digits: int = 4) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def distance_table(fit: twod.GridFit, methods) -> str:
    """HTML table, one row per shown method: mean |p − p_MCMC| and mean W2 to the MCMC reference
    over the grid (– without the reference), log evidence, converged, fit + grid time; below it
    the reference's Monte Carlo error, or how to get the reference."""
    distances = twod.distances_to_mcmc(fit)
    header = ["method", "mean |p − p_MCMC|", "mean W2 to MCMC (latent)", "log evidence", "converged", "time (ms)"]
    rows = []
    for method in (m for m in METHOD_LABELS if m in methods and m in fit.proba):
        p_distance, w2 = distances.get(method, (None, None))
        rows.append([f'<span style="color:{METHOD_COLOURS[method]}">■</span> {METHOD_LABELS[method]}',
                     _number(p_distance), _number(w2), _number(fit.log_evidence[method], 3),
                     _converged_cell(fit, method),
                     f"{1000 * sum(fit.seconds[method]):.0f}"])
    cells = lambda tag, row: "".join(f"<{tag}>{cell}</{tag}>" for cell in row)  # noqa: E731
    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    if fit.mcmc_noise:
        noise = fit.mcmc_noise
        caption = (f"MCMC reference: {noise['samples']} samples; its own Monte Carlo error ≈ {noise['proba']:.4f} in p "
                   f"and {noise['w2']:.4f} in W2 (two halves of its chains).")
    elif "mcmc" in methods:
        caption = "The MCMC reference is being computed (progress on the left); the distances follow."
    else:
        caption = "Choose MCMC to compare every method with a sampling reference."
    return f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table><p>{caption}</p>"


def _converged_cell(fit: twod.GridFit, method: str) -> str:
    """"yes" / "no"; for MCMC its R-hat, ESS and time (qpviz.inference.mcmc.convergence_status)."""
    text = fit.mcmc_diagnostics.get("status", "yes") if method == "mcmc" else "yes"
    return text if fit.converged[method] else f"<strong>{'no' if method != 'mcmc' else text}</strong>"


def page() -> tuple[str, pn.viewable.Viewable]:
    """(tab title, page) for app/dashboard.py."""
    return TITLE, GP2DPage()
