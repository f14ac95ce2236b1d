"""app/gp_2d_figures.py: the maps' colour ranges, rounded out to whole steps so that a slider step
leaves them (and their colour bars) in place, cover the values and stay close to them."""
from __future__ import annotations

import math

import numpy as np
from gp_2d_figures import rounded_out, rounded_up  # app/ is on the path (pyproject: pythonpath = ["app"])
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
