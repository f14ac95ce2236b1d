"""The GP 2-D page's figures: a probability, variance, difference or sd-ratio map of a fit on the
grid with the data points (:class:`GridFigure`), drawn from a :class:`qpviz.gpdemo.twod.GridFit`,
the explanation of each view and the table of distances to the MCMC reference.

The figures are plain Bokeh figures whose data sources are replaced in place at every change, as
on the Projection Explorer: HoloViews DynamicMaps (Image, Contours, Points overlays, Tap stream)
cost 150-350 ms of Python per plot and per update here, 1-1.7 s for the five default plots, over
the page's 1 s budget; replacing the sources' data costs a few ms per plot.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from bokeh import events
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper, Range1d
from bokeh.palettes import BrBG11, Greys256, PuOr11, Viridis256
from bokeh.plotting import figure as bokeh_figure
from bokeh.plotting.contour import ContourData, contour_data

from colours import METHOD_COLOURS
from explorer_figures import DrawnContent, centred_image, legend_below, padded, set_data, style_figure
from qpviz.gpdemo import sd_ratio, twod
from qpviz.gpdemo.twod_model import INLINE_METHODS, METHOD_LABELS

__all__ = ["METHOD_COLOURS", "EXPLANATIONS", "PROBA_PALETTE", "VAR_PALETTE", "DIFF_PALETTE", "RATIO_PALETTE",
           "RATIO_MIN_SPAN", "CONTOUR_CASING", "GridFigure", "make_figure", "draw_fit", "draw_ratios",
           "distance_table"]

#: Under the contours of a method whose colour is close to the grey map's (MCMC's mid grey lies on
#: p = 0.5), a dark outline keeps the lines visible.
CONTOUR_CASING = {"mcmc": "black"}
#: Data points: class +1 orange circles, class -1 black triangles (shape differs, not only colour).
CLASS_STYLE = {1.0: ("class +1", "circle", "#E69F00", "black"), -1.0: ("class −1", "triangle", "black", "white")}
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


class GridFigure:
    """One Bokeh figure of a map on the grid (image + colour bar), the data points by class and,
    for probabilities, the 0.1 / 0.5 / 0.9 contours in ``contour_colour``.

    :meth:`show` replaces the sources' data in place (no new figure, no legend rebuild). The map is
    coloured here (:func:`colour_mapped`, as BokehJS's LinearColorMapper would in the browser) and
    drawn as an RGBA image; its values travel beside it for the hover. BokehJS's colour mapping cost
    ~6 ms of every GP 2-D step in the browser (five 60 x 60 maps), NumPy's ~0.1 ms.
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
        self.palette_pixels = palette_pixels(palette)
        self.image = ColumnDataSource({"image": [np.zeros((2, 2), dtype=np.uint32)], "value": [np.zeros((2, 2), dtype=np.float32)],
                                       "x": [lo], "y": [blo], "dw": [hi - lo], "dh": [bhi - blo]})
        image = fig.image_rgba(image="image", x="x", y="y", dw="dw", dh="dh", source=self.image)
        fig.add_tools(HoverTool(renderers=[image], tooltips=[("x1", "$x{0.00}"), ("x2", "$y{0.00}"), (value_label, "@value{0.0000}")]))
        fig.add_layout(ColorBar(color_mapper=self.mapper, title=value_label, width=12), "right")
        self._drawn = DrawnContent()  # the arrays and colour range last drawn (see show)
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
            for renderer, _ in self.contours:
                # lines only: Bokeh's default fill, opaque grey between p = 0.1 and 0.9, covered the map there
                # and the p = 0.5 line under it (show computes no polygons: contour_data's want_fill=False)
                renderer.fill_renderer.visible = False
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
        ``clim`` = c sets the colour range to [centre - c, centre + c].

        The same arrays as last time (a fit from the pages' caches: VSGP's FITC map beside a new
        blur, GP 2-D's maps of methods kept while another is toggled) change only the title: their
        pixels and contours are neither computed nor sent again (:class:`DrawnContent`)."""
        if not self._drawn.changed("map", values, fit.x1, fit.x2, X, y, clim, centre):
            self.figure.title.text = title
            return
        place = centred_image(fit.x1, fit.x2)  # the image's pixels are centred on the grid points
        if clim is not None:
            half = rounded_up(clim)
            self.mapper.update(low=centre - half, high=centre + half)
        elif not self.fixed_clim:
            self.mapper.update(**dict(zip(("low", "high"), rounded_out(float(values.min()), float(values.max())))))
        pixels = colour_mapped(values, self.mapper.low, self.mapper.high, self.palette_pixels)
        # the hover's values in float32 (7 digits, more than its 4 decimals show): half the bytes
        shown_values = np.asarray(values, dtype=np.float32)
        shown = self.image.data
        if all(shown[key] == value for key, value in place.items()) and shown["image"][0].shape == values.shape:
            # the same grid (a slider step): only the new pixels travel (a patch), not a new source
            self.image.patch({"image": [(0, pixels)], "value": [(0, shown_values)]})
        else:
            self.image.data = {"image": [pixels], "value": [shown_values], **place}
        self.x_range.update(start=place["x"][0], end=place["x"][0] + place["dw"][0])
        self.y_range.update(start=place["y"][0], end=place["y"][0] + place["dh"][0])
        lines = {}  # per set of levels: an outline (casing) and its coloured line share them
        for renderer, levels in self.contours:
            if tuple(levels) not in lines:
                lines[tuple(levels)] = _float32_lines(contour_data(fit.x1, fit.x2, values, levels=levels, want_fill=False))
            renderer.set_data(lines[tuple(levels)])
        for label_value, source in self.points.items():
            chosen = y == label_value
            # unchanged points (a slider step) send nothing; a click patches (NaN-padded columns)
            set_data(source, padded({"x": X[chosen, 0], "y": X[chosen, 1]}))
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


#: BokehJS's default ``nan_color`` ("gray", #808080), opaque, as an RGBA pixel.
NAN_PIXEL = np.array([0x80, 0x80, 0x80, 0xFF], dtype=np.uint8).view(np.uint32)[0]


def palette_pixels(palette) -> np.ndarray:
    """The ``#rrggbb`` colours of ``palette`` as opaque RGBA pixels: uint32 whose bytes in memory are
    r, g, b, a (the layout of an RGBA image in Bokeh and in the browser's ImageData)."""
    rgba = np.full((len(palette), 4), 255, dtype=np.uint8)
    for row, colour in zip(rgba, palette):
        row[:3] = [int(colour[k:k + 2], 16) for k in (1, 3, 5)]
    return rgba.view(np.uint32).ravel()


def colour_mapped(values: np.ndarray, low: float, high: float, pixels: np.ndarray) -> np.ndarray:
    """``values`` coloured as BokehJS's LinearColorMapper (no low / high colours set) colours them:
    palette index floor(((v - low) / (high - low)) / (1 / n)) of n colours, clamped to [0, n - 1],
    v = high giving n - 1 and NaN the nan colour. A map without width (high <= low) takes the first colour."""
    values = np.asarray(values, dtype=np.float64)
    n = len(pixels)
    if not high > low:
        index = np.zeros(values.shape, dtype=np.intp)
    else:
        with np.errstate(invalid="ignore"):
            position = np.floor(((values - low) * (1.0 / (high - low))) / (1.0 / n))
        position[values == high] = n - 1
        index = np.clip(np.nan_to_num(position, nan=0.0), 0, n - 1).astype(np.intp)
    image = pixels[index]
    image[np.isnan(values)] = NAN_PIXEL
    return image


def _colour_step(width: float) -> float:
    """A fifth of the power of ten at or below ``width`` (> 0): the steps of a colour range."""
    return 10.0 ** math.floor(math.log10(width)) / 5


def rounded_out(low: float, high: float) -> tuple[float, float]:
    """[low, high] widened to whole steps of :func:`_colour_step` (at most ~40% of its width more).

    A slider step moves a map's values a little; a colour range that followed their exact minimum
    and maximum changed with every step, and each change made BokehJS lay out the map's colour bar
    again (its tick labels measured anew: ~7 ms a step over GP 2-D's five maps, in the browser).
    Rounded out, the range and its colour bar stay put until the values cross a step."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return low, high
    step = _colour_step(high - low)
    return math.floor(low / step) * step, math.ceil(high / step) * step


def rounded_up(half_width: float) -> float:
    """``half_width`` (> 0) rounded up to a whole step of :func:`_colour_step`: a centred colour
    range that stays put over small changes, as :func:`rounded_out`."""
    if not math.isfinite(half_width) or half_width <= 0:
        return half_width
    step = _colour_step(half_width)
    return math.ceil(half_width / step) * step


def _float32_lines(data: ContourData) -> ContourData:
    """``data`` with its contour lines' coordinates in float32 (as the maps' pixels: half the bytes,
    and 7 digits where a pixel is a few thousandths of the plot wide)."""
    lines = data.line_data
    if lines is None:
        return data
    single = lambda arrays: [np.asarray(a, dtype=np.float32) for a in arrays]  # noqa: E731
    return dataclasses.replace(data, line_data=dataclasses.replace(lines, xs=single(lines.xs), ys=single(lines.ys)))


def make_figure(key: str, on_tap) -> GridFigure:
    """The figure ``key`` of the page: ``proba_<method>`` (a click calls ``on_tap(x1, x2)``),
    ``var_<method>``, ``diff`` or ``ratio_<method>`` for an inline method."""
    kind, _, method = key.partition("_")
    if kind == "proba" and method in METHOD_LABELS:
        return GridFigure("p(y=+1|x)", PROBA_PALETTE, (0.0, 1.0), contour_colour=METHOD_COLOURS[method],
                          contour_label=METHOD_LABELS[method], on_tap=on_tap, casing=CONTOUR_CASING.get(method))
    if kind == "var" and method in METHOD_LABELS:
        return GridFigure("latent variance", VAR_PALETTE)
    if key == "diff":
        return GridFigure("var_QP − var_EP", DIFF_PALETTE, (-1.0, 1.0))
    if kind == "ratio" and method in INLINE_METHODS:
        return GridFigure("sd / sd_MCMC", RATIO_PALETTE, (0.5, 1.5))
    raise KeyError(f"no GP 2-D figure {key!r}")


def draw_fit(figures: dict[str, GridFigure], fit: twod.GridFit, X: np.ndarray, y: np.ndarray, methods,
             subtitle: str) -> None:
    """The probability and variance maps of the shown ``methods`` that ``fit`` holds (MCMC: once its
    job is done) and the difference map, each with the points (X, y)."""
    for method in (m for m in methods if m in fit.proba):
        label = METHOD_LABELS[method]
        # two lines: one line ran past the plot on a 1024 px screen
        figures[f"proba_{method}"].show(fit, fit.proba[method], X, y, f"{label}: p(y=+1|x),\n{subtitle}")
        figures[f"var_{method}"].show(fit, fit.var[method], X, y, f"{label}: latent var v(x),\n{subtitle}")
    diff = fit.var_difference
    figures["diff"].show(fit, diff, X, y, f"var_QP − var_EP in [{diff.min():.1e}, {diff.max():.1e}],\n{subtitle}",
                         clim=max(float(np.abs(diff).max()), 1e-12))


def draw_ratios(figures: dict[str, GridFigure], fit: twod.GridFit, X: np.ndarray, y: np.ndarray,
                comparison: sd_ratio.SdComparison, subtitle: str) -> None:
    """The maps of sd / sd_MCMC of ``comparison``'s methods, on one colour range centred at 1."""
    shown = {m: np.where(np.isfinite(r), r, 1.0) for m, r in comparison.ratios.items()}  # undefined: drawn as 1
    span = max(RATIO_MIN_SPAN, *(float(np.max(np.abs(r - 1.0))) for r in shown.values()))
    for method, ratio in shown.items():
        figures[f"ratio_{method}"].show(
            fit, ratio, X, y, f"{METHOD_LABELS[method]}: sd / sd_MCMC in [{ratio.min():.2f}, {ratio.max():.2f}],\n{subtitle}",
            clim=span, centre=1.0)


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
