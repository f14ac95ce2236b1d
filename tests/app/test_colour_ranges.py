"""app/gp_2d_figures.py: the maps' colours, as BokehJS would give them, and their colour ranges, rounded out to whole steps so that a slider step
leaves them (and their colour bars) in place, cover the values and stay close to them."""
from __future__ import annotations

import math

import numpy as np
from gp_2d_figures import (DIFF_PALETTE, PROBA_PALETTE, VAR_PALETTE, colour_mapped,  # app/ is on the path
                           palette_pixels, rounded_out, rounded_up)
from hypothesis import given
from hypothesis import strategies as st

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(finite, st.floats(min_value=1e-9, max_value=1e6))
def test_a_range_rounded_out_covers_the_values_and_is_at_most_40_percent_wider(low, width):
    high = low + width
    if not high > low:  # the width vanished in rounding
        return
    width = high - low
    lo, hi = rounded_out(low, high)
    slack = 1e-12 * max(abs(low), abs(high), width)
    assert lo <= low + slack and hi >= high - slack
    assert hi - lo <= 1.4 * width * (1 + 1e-9) + 2 * slack


@given(st.floats(min_value=1e-12, max_value=1e9))
def test_a_half_width_rounded_up_is_at_least_it_and_at_most_20_percent_more(half):
    assert half * (1 - 1e-12) <= rounded_up(half) <= 1.2 * half * (1 + 1e-12)


def test_small_moves_of_the_values_leave_the_range_in_place():
    """A map's minimum and maximum moving by 0.5% of the width, as in a slider step, mostly keep it."""
    rng = np.random.default_rng(0)
    kept = 0
    for _ in range(200):
        low, high = sorted(rng.uniform(-3, 3, size=2))
        move = 0.005 * (high - low) * rng.uniform(-1, 1, size=2)
        kept += rounded_out(low, high) == rounded_out(low + move[0], high + move[1])
    assert kept >= 150  # (exact bounds followed the values: 0 of 200 kept)


def test_degenerate_ranges_are_returned_as_they_are():
    assert rounded_out(1.0, 1.0) == (1.0, 1.0)
    assert rounded_out(2.0, 1.0) == (2.0, 1.0)
    assert rounded_up(0.0) == 0.0
    lo, hi = rounded_out(-math.inf, 1.0)
    assert lo == -math.inf and hi == 1.0


# -- the maps' colours, computed in the server (colour_mapped) ------------------------------------

def _bokehjs_colour(value: float, low: float, high: float, palette: list[str]) -> str:
    """One value's colour as BokehJS's LinearColorMapper (models/mappers/linear_color_mapper.ts,
    Bokeh 3.9) computes it, step by step: v = high -> last colour; index = floor(((v - low) *
    (1 / (high - low))) / (1 / n)) clamped to [-1, n]; -1 and n take the end colours; NaN grey."""
    n = len(palette)
    if math.isnan(value):
        return "#808080"
    if value == high:
        return palette[-1]
    index = math.floor(((value - low) * (1 / (high - low))) / (1 / n))
    index = min(max(index, -1), n)
    return palette[0] if index < 0 else palette[-1] if index >= n else palette[index]


def _hex(pixel) -> str:
    r, g, b, a = np.array([pixel], dtype=np.uint32).view(np.uint8)
    assert a == 255
    return f"#{r:02x}{g:02x}{b:02x}"


@given(st.lists(st.one_of(finite, st.just(math.nan)), min_size=1, max_size=40),
       st.floats(min_value=-10, max_value=10), st.floats(min_value=1e-6, max_value=20),
       st.sampled_from(["proba", "var", "diff"]))
def test_pixels_are_the_colours_bokehjs_gives_the_values(values, low, width, which):
    palette = {"proba": list(PROBA_PALETTE), "var": list(VAR_PALETTE), "diff": list(DIFF_PALETTE)}[which]
    high = low + width
    values = values + [low, high, low + width / 2]  # the ends and the middle, always
    pixels = colour_mapped(np.array(values), low, high, palette_pixels(palette))
    assert [_hex(p) for p in pixels] == [_bokehjs_colour(v, low, high, [c.lower() for c in palette]) for v in values]


def test_a_map_without_width_takes_the_first_colour():
    pixels = palette_pixels(["#102030", "#405060"])
    np.testing.assert_array_equal(colour_mapped(np.ones((2, 3)), 1.0, 1.0, pixels), np.full((2, 3), pixels[0]))
