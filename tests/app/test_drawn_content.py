"""app/explorer_figures.DrawnContent: a view is drawn again when its content is another object, or
another plain value; the same objects and equal plain values skip the redraw."""
from __future__ import annotations

import numpy as np
from explorer_figures import DrawnContent  # app/ is on the path (pyproject: pythonpath = ["app"])


def test_same_objects_and_equal_values_skip_and_anything_else_redraws():
    drawn = DrawnContent()
    values, grid = np.arange(4.0), np.arange(2.0)
    assert drawn.changed("map", values, grid, 0.5, None, True)
    assert not drawn.changed("map", values, grid, float("0.5"), None, True)  # an equal float, another object
    assert drawn.changed("map", values.copy(), grid, 0.5, None, True)  # equal values in a new array: a new fit
    assert drawn.changed("map", values, grid, 0.6, None, True)
    assert drawn.changed("map", values, grid, 0.6, None, False)
    assert drawn.changed("map", values, grid, 0.6, None)  # less content
    assert drawn.changed("other", values, grid, 0.6, None)  # each key on its own
    assert not drawn.changed("map", values, grid, 0.6, None)


def test_the_content_drawn_is_held_so_its_id_is_not_taken_by_a_new_array():
    drawn = DrawnContent()
    drawn.changed("map", np.zeros(3))
    # were the first array freed, a new one could get its id; held, every new array is another object
    assert all(drawn.changed("map", np.zeros(3)) for _ in range(50))
