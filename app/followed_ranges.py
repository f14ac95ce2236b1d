"""Axis ranges computed in the server from a figure's data (Range1d), instead of by the browser
(DataRange1d).

With DataRange1d, every update of a figure's data made BokehJS paint the figure, re-range it,
paint it again, and send the new start and end back to the server (a message the server then
answers). On GP 1-D a length-scale key press sent three such range messages after the new data;
the last one settled ~40 ms after the data had arrived (issue 22). :class:`FollowedRanges` sends
the new ranges in the same message as the data.
"""
from __future__ import annotations

import functools

import numpy as np
from bokeh.models import GlyphRenderer, Range1d

__all__ = ["FollowedRanges", "data_extent"]

#: The glyph properties holding x and y coordinates (those a DataRange1d would cover).
X_FIELDS = ("x", "x0", "x1", "x2", "left", "right")
Y_FIELDS = ("y", "y0", "y1", "y2", "top", "bottom")


@functools.cache
def _glyph_fields(glyph_type, names) -> tuple:
    """The coordinate properties among ``names`` that glyphs of ``glyph_type`` have."""
    return tuple(name for name in names if name in glyph_type.properties())


def _field_values(renderer: GlyphRenderer, names) -> list[np.ndarray]:
    """The finite values of the source columns that ``renderer``'s glyph draws at ``names``
    (a glyph property given as a constant, e.g. a Span-like fixed value, is not data)."""
    data = renderer.data_source.data
    values = []
    for name in _glyph_fields(type(renderer.glyph), names):
        spec = getattr(renderer.glyph, name)
        field = spec.get("field") if isinstance(spec, dict) else spec if isinstance(spec, str) else None
        if field in data and len(data[field]):
            column = np.asarray(data[field], dtype=float).ravel()
            values.append(column[np.isfinite(column)])
    return values


def data_extent(values: list[np.ndarray], pad: float = 0.05, log: bool = False) -> tuple[float, float] | None:
    """[min, max] of ``values`` widened by ``pad`` of its width on each side, as DataRange1d's
    default padding shows it; on a log axis over positive values only, padded in log10 space.
    A single value gets a width of max(|value|, 1) (a log axis: one decade). None without values.
    """
    values = np.concatenate(values) if values else np.zeros(0)
    if log:
        values = values[values > 0]
    if not values.size:
        return None
    lo, hi = float(values.min()), float(values.max())
    if log:
        lo, hi = np.log10(lo), np.log10(hi)
    width = hi - lo if hi > lo else (1.0 if log else max(abs(hi), 1.0))
    lo, hi = lo - pad * width, hi + pad * width
    return (float(10.0 ** lo), float(10.0 ** hi)) if log else (lo, hi)


class FollowedRanges:
    """The x and y ranges of ``fig``, set by :meth:`follow` to its glyphs' data extent.

    The figure's own ranges are replaced by two Range1d. As with DataRange1d, an axis the user has
    zoomed or panned is kept: the browser sent its new range here, so the range differs from the
    extent last set, and from then on :meth:`follow` only moves its ``reset_start`` / ``reset_end``
    (where the reset tool goes back to); after a reset the range equals the extent again and
    follows the data. Every glyph renderer counts, hidden or not (a method hidden by a click on
    the legend keeps the axes still). A figure without any data keeps its ranges.
    """

    def __init__(self, fig, log_y: bool = False, pad: float = 0.05):
        self.fig, self.log_y, self.pad = fig, log_y, pad
        self.x = Range1d(0.0, 1.0)
        self.y = Range1d(0.1, 1.0) if log_y else Range1d(0.0, 1.0)
        fig.x_range, fig.y_range = self.x, self.y
        self._shown: dict[str, tuple[float, float]] = {}  # per axis ("x", "y"): the (start, end) last set from the data

    def extent(self) -> tuple[float, float, float, float] | None:
        """(x start, x end, y start, y end) of the padded data extent, None without data."""
        renderers = [r for r in self.fig.renderers if isinstance(r, GlyphRenderer)]
        x = data_extent([v for r in renderers for v in _field_values(r, X_FIELDS)], self.pad)
        y = data_extent([v for r in renderers for v in _field_values(r, Y_FIELDS)], self.pad, self.log_y)
        return None if x is None or y is None else (*x, *y)

    def follow(self) -> None:
        """Range the figure over its data (sends nothing where the extent did not change)."""
        extent = self.extent()
        if extent is None:
            return
        for axis, axis_range, span in (("x", self.x, extent[:2]), ("y", self.y, extent[2:])):
            shown = self._shown.get(axis)
            if span == shown:
                continue
            following = shown is None or (axis_range.start, axis_range.end) == shown
            self._shown[axis] = span
            if following:
                axis_range.update(start=span[0], end=span[1], reset_start=span[0], reset_end=span[1])
            else:  # zoomed or panned by the user: only where the reset tool goes back to
                axis_range.update(reset_start=span[0], reset_end=span[1])
