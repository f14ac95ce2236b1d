"""app/figure_export.py without a browser: the buttons, their JavaScript's settings, and projector mode
(the browser behaviour is in tests/browser/test_figure_export.py)."""
from __future__ import annotations

import re

from panel.links import Callback

from explorer_widgets import PROJECTOR_WIDGET_CSS
from figure_export import BUTTON_MIN_WIDTH, EXPORT_JS, export_buttons
from layout import CONTROL_CSS, CONTROLS_WIDTH, enlarge


def settings(button) -> dict:
    """The constants the button's click JavaScript declares in front of EXPORT_JS."""
    (callback,) = Callback.registry[button]
    (code,) = callback.code.values()
    assert code.endswith(EXPORT_JS)
    return dict(re.findall(r'^const (\w+) = "?(.*?)"?;$', code.removesuffix(EXPORT_JS), flags=re.M))


def test_two_buttons_name_the_page_and_the_format():
    widget = export_buttons("gp-2-d")
    labels = [button.label for button in widget.buttons]
    assert labels == ["Save figures (PNG)", "Save figures (SVG)"]
    assert [settings(b) for b in widget.buttons] == [
        {"PAGE": "gp-2-d", "FORMAT": fmt, "LABEL": label, "MESSAGE_MS": "3000"}
        for fmt, label in zip(("png", "svg"), labels)
    ]
    assert widget._composite.width == CONTROLS_WIDTH  # fits a page's control column
    assert sum(b.min_width + 2 * 10 for b in widget.buttons) <= CONTROLS_WIDTH  # side by side, margins included


def test_projector_mode_enlarges_the_buttons_one_per_line_and_back():
    widget = export_buttons("projection-explorer")
    enlarge(True, [], [widget])
    assert all(b.stylesheets == [CONTROL_CSS, PROJECTOR_WIDGET_CSS] for b in widget.buttons)
    assert all(b.min_width == BUTTON_MIN_WIDTH[True] for b in widget.buttons)
    assert 2 * (BUTTON_MIN_WIDTH[True] + 2 * 10) > CONTROLS_WIDTH  # two no longer fit a line: they wrap
    enlarge(False, [], [widget])
    assert all(b.stylesheets == [CONTROL_CSS] and b.min_width == BUTTON_MIN_WIDTH[False] for b in widget.buttons)
