"""benchmarks/check.py's comparison logic: parsing the benchmarks' output, ratios to floors, flags.

Nothing here is timed: the texts are lines in the benchmarks' printed formats.
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "check.py"
_spec = importlib.util.spec_from_file_location("bench_check", _PATH)
check = importlib.util.module_from_spec(_spec)
sys.modules["bench_check"] = check  # dataclasses look their module up
_spec.loader.exec_module(check)

EXPLORER = """2 CPUs, load average 2.8 (latencies grow with the load)
likelihood              numbers median  numbers max  plots median plots p90  plots max  compute  (ms; 4 presses)
probit                            36.8         46.6          61.6      68.0       70.0      3.7
student_t                         49.4         51.4          70.3      82.9       87.9      4.1
(minimal page)                    59.3         60.4          75.9      76.6       76.8        -
(minimal+app settings)            26.8         36.9          40.0      50.7       53.6        -
ratio to minimal page: probit 1.54
load average at the end 2.8
"""

GP = """GP 1-D, sharp step, N=200, length-scale key                median    196 ms  p90    213 ms  max    213 ms  (goal 250 ms, n=4, load 2.50)
GP 1-D, sharp step, N=200, click adds a point              FAILED: Page.evaluate: Error: no document change
"""

SPARSE = ("Sparse (sine boundary, EP), N=500, M=20, handle drag, fits drawn median     76 ms  p90     90 ms  max     98 ms"
          "  (goal 250 ms for fits drawn, n=15, load 1.24)\n")

PROJECTION = ("probit project qp/ep time ratio 1.678 (qp 76.3 ms, ep 45.5 ms); kernels alone (moments + table)/moments "
              "1.691 (moments 43.3 ms, table 29.9 ms); 1000000 points, CPU time, median of 7 interleaved\n")

TABLES = ("probit.npz                      32.27 M    21.41 M     8.94 k    21.31 M    10.00 M   2.09    1.42e-08  0.07"
          "   0.38  [table wall    19.61 M]\n")


def test_explorer_rows_give_each_likelihood_and_the_page_floor():
    figures = {f.name: f for f in check.parse_explorer(EXPLORER)}
    assert set(figures) == {"explorer: probit", "explorer: student_t", "floor: minimal page"}
    assert figures["explorer: probit"].value == 61.6  # the plots median column
    assert figures["floor: minimal page"].value == 40.0  # the app-settings row, not the default one


def test_page_case_lines_and_failed_cases():
    gp = check.page_cases("gp")(GP)
    assert [(f.name, f.value) for f in gp] == [("gp: GP 1-D, sharp step, N=200, length-scale key", 196.0)]
    sparse = check.page_cases("sparse")(SPARSE)
    assert sparse[0].name == "sparse: Sparse (sine boundary, EP), N=500, M=20, handle drag, fits drawn"


def test_projection_and_tables_units():
    proj = {f.name: f.value for f in check.parse_projection(PROJECTION)}
    assert proj == {"projection: project qp, probit 10^6": 76.3, "projection: table kernel, probit 10^6": 29.9}
    tables = {f.name: f.value for f in check.parse_tables(TABLES)}
    assert tables["tables: probit.npz lookup"] == pytest.approx(1e9 / 32.27e6)  # ns per point
    assert tables["tables: probit.npz project qp"] == pytest.approx(100.0)


SEP_STEP = """# x86_64, 2 cpus, load (1.2, 1.5, 2.4)
       N   SEP ms   SVI ms  SEP/SVI  SEP cpu  SVI cpu cpu ratio
   20000     4.77     4.53     1.05     4.77     4.53      1.05
SEP_SVI_STEP_RATIO 1.054
"""


def test_sep_step_rows_give_a_sep_and_an_svi_step_per_size():
    figures = check.parse_sep_step(SEP_STEP)
    assert [(f.name, f.value, f.floor) for f in figures] == [("sep step: SEP, N=20000, epoch 2", 4.77, "matmul"),
                                                             ("sep step: SVI, N=20000, epoch 2", 4.53, "matmul")]


def test_ratio_to_floor_and_flag_above_threshold():
    figures = check.parse_explorer(EXPLORER) + check.parse_projection(PROJECTION)
    floors = {"page": 40.0, "ep": 50.0, "matmul": 10.0}
    baseline = {"explorer: probit": 1.54, "explorer: student_t": 1.40, "projection: project qp, probit 10^6": 1.5,
                "projection: table kernel, probit 10^6": 0.7}
    rows = {r.figure.name: r for r in check.compare(figures, floors, baseline)}
    assert rows["explorer: probit"].ratio == pytest.approx(61.6 / 40.0)
    assert not rows["explorer: probit"].flagged()  # 1.54 vs 1.54
    assert rows["explorer: student_t"].change == pytest.approx(70.3 / 40.0 / 1.40 - 1)  # +25.5%
    assert rows["explorer: student_t"].flagged()
    assert not rows["explorer: student_t"].flagged(threshold=0.3)
    assert rows["projection: project qp, probit 10^6"].ratio == pytest.approx(76.3 / 50.0)
    assert not rows["projection: project qp, probit 10^6"].flagged()  # +1.7%
    assert rows["projection: table kernel, probit 10^6"].change < 0  # faster: never flagged
    assert not rows["projection: table kernel, probit 10^6"].flagged()
    assert rows["floor: minimal page"].change is None  # no baseline: "new", not flagged
    text = check.table(list(rows.values()))
    flagged_lines = [line for line in text.splitlines() if "<<" in line]
    assert len(flagged_lines) == 1 and flagged_lines[0].startswith("explorer: student_t")


def test_missing_floor_gives_nan_and_missing_figures_are_reported():
    rows = check.compare(check.parse_projection(PROJECTION), {}, {})
    assert all(math.isnan(r.ratio) for r in rows)
    baseline = {"gp: GP 2-D, moons, N=200, 60x60 grid, length-scale key": 1.1, "vsgp: other": 2.0}
    rows = check.compare(check.page_cases("gp")(GP), {"page": 40.0}, baseline)
    assert check.missing(rows, baseline, {"gp"}) == ["gp: GP 2-D, moons, N=200, 60x60 grid, length-scale key"]


def test_update_baseline_keeps_benchmarks_not_run(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"ratios": {"vsgp: blur": 2.0, "gp: old case": 3.0}}))
    rows = check.compare(check.page_cases("gp")(GP), {"page": 50.0}, {})
    check.write_baseline(path, rows, {"gp"}, {"gp": {"page": 50.0}})
    ratios = check.read_baseline(path)
    assert ratios == {"vsgp: blur": 2.0, "gp: GP 1-D, sharp step, N=200, length-scale key": pytest.approx(196 / 50)}


def test_a_partial_update_keeps_the_other_benchmarks_floors_and_note(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"note": {"commit": "abc", "comment": "all of them", "benchmarks": ["gp", "vsgp"],
                                         "floors_ms": {"gp": {"page": 40.0}, "vsgp": {"page": 41.0}}},
                                "ratios": {"vsgp: blur": 2.0, "gp: old case": 3.0}}))
    rows = check.compare(check.page_cases("gp")(GP), {"page": 50.0}, {})
    check.write_baseline(path, rows, {"gp"}, {"gp": {"page": 50.0}}, comment="gp again")
    note = json.loads(path.read_text())["note"]
    assert note["floors_ms"] == {"gp": {"page": 50.0}, "vsgp": {"page": 41.0}}
    assert note["benchmarks"] == ["gp"] and note["comment"] == "gp again"
    assert note["earlier"] == [{"commit": "abc", "comment": "all of them", "benchmarks": ["gp", "vsgp"]}]
    # a full run again: no floors of earlier writes left, no earlier notes
    check.write_baseline(path, rows, {"gp", "vsgp"}, {"gp": {"page": 50.0}, "vsgp": {"page": 50.0}})
    note = json.loads(path.read_text())["note"]
    assert set(note["floors_ms"]) == {"gp", "vsgp"} and "earlier" not in note
