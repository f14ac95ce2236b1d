"""Modules by idea (issue 23.6): no module of the dashboard (app/) is over MAX_LINES lines. A page
that grows past it splits the way the pages do: its state and computation into qpviz/ (e.g.
qpviz/gpdemo/twod_model.py), its figures into app/<page>_figures.py, the page binding widgets.
(The library's modules, qpviz/: tests/test_module_size.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
MAX_LINES = 500
MODULES = sorted(APP.rglob("*.py"))


def test_the_app_has_modules_to_measure():
    assert len(MODULES) >= 20 and (APP / "dashboard.py") in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(APP)))
def test_no_app_module_is_over_500_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"app/{path.relative_to(APP)} has {lines} lines (at most {MAX_LINES}): split it by idea"
