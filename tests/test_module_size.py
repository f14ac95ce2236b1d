"""Modules by idea (issue 23, point 6): no module of the library ``qpviz/`` or of the dashboard
``app/`` is over 500 lines.

A module that grows past the limit is split into modules named for their ideas (about 400
lines each, each with a docstring), not cut in half. A page splits the way the pages do: its
state and computation into ``qpviz/`` (e.g. ``qpviz/gpdemo/twod_model.py``), its figures into
``app/<page>_figures.py``, the page binding widgets (docs/development.md, "Adding a page").
"""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("qpviz", "app")
MAX_LINES = 500


def _line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def _sizes(package: str) -> dict[str, int]:
    root = REPO / package
    return {path.relative_to(REPO).as_posix(): _line_count(path) for path in sorted(root.rglob("*.py"))}


def test_the_line_count_counts_every_line(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("a = 1\n\n# three lines\n", encoding="utf-8")  # as wc -l counts
    assert _line_count(sample) == 3
    sample.write_text("a = 1\nb = 2", encoding="utf-8")  # no final newline: wc -l says 1, a reader sees 2
    assert _line_count(sample) == 2


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_500_lines(package):
    sizes = _sizes(package)
    assert len(sizes) >= 20 and (f"{package}/__init__.py" in sizes or f"{package}/dashboard.py" in sizes), sizes
    too_long = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    report = "\n".join(f"  {name}: {lines} lines" for name, lines in sorted(too_long.items(), key=lambda kv: -kv[1]))
    assert not too_long, (f"{len(too_long)} module(s) of {package}/ over {MAX_LINES} lines; split each into modules "
                          f"named for their ideas:\n{report}")
