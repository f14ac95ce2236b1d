"""The shared typed-number rules (qpviz/number_rules.py, their text boxes app/number_field.py): every bad value is
named with the range."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))

from number_field import FIELDS, NumberField  # noqa: E402
from safe_text import shown  # noqa: E402

POINTS = NumberField("points", 5, 1000, integer=True)
SCALE = NumberField("scale", 0, 100, low_open=True)


@pytest.mark.parametrize("field, text, value", [(POINTS, "5", 5), (POINTS, " 1000 ", 1000), (POINTS, "60.0", 60),
                                                (POINTS, 7, 7), (SCALE, "1e-3", 1e-3), (SCALE, "100", 100.0)])
def test_good_values_are_taken(field, text, value):
    assert field.parse(text) == value and type(field.parse(text)) is type(value)


@pytest.mark.parametrize("field, text", [(POINTS, "abc"), (POINTS, "1.5"), (POINTS, "4"), (POINTS, "100000"),
                                         (POINTS, "nan"), (POINTS, "inf"), (POINTS, ""), (POINTS, True), (POINTS, None),
                                         (SCALE, "0"), (SCALE, "-1"), (SCALE, "1e308"), (SCALE, "-inf")])
def test_bad_values_are_refused_naming_the_field_the_value_and_the_range(field, text):
    with pytest.raises(ValueError) as refused:
        field.parse(text)
    assert str(refused.value).startswith(f"{field.name}: ") and str(refused.value).endswith(f"type {field.accepted}")
    assert (repr(text) if isinstance(text, str) else str(text)) in str(refused.value)


def test_the_label_names_the_range_and_registers_the_field():
    assert POINTS.label == "points (a whole number from 5 to 1000)"
    assert SCALE.label == "scale (a number > 0 and <= 100)"
    assert FIELDS[POINTS.label] is POINTS
    box = POINTS.widget(60, "my-box")
    assert box.value == "60" and box.label == POINTS.label and "qpviz-typed" in box.css_classes



def test_a_rule_made_without_panel_is_registered_and_gets_the_same_text_box():
    from number_field import typed_box  # noqa: PLC0415

    from qpviz import number_rules  # noqa: PLC0415

    rule = number_rules.NumberField("rule only", 1, 3, integer=True)  # as a page's model makes it
    assert FIELDS is number_rules.FIELDS and FIELDS[rule.label] is rule and not hasattr(rule, "widget")
    assert isinstance(POINTS, number_rules.NumberField) and POINTS.parse("7") == 7
    box = typed_box(rule, 2, "my-box")
    assert box.value == "2" and box.label == "rule only (a whole number from 1 to 3)" and "qpviz-typed" in box.css_classes

def test_link_values_takes_good_values_names_bad_ones_rewrites_the_link_and_clears_on_a_page_change():
    import panel as pn  # noqa: PLC0415
    from panel.io.location import Location  # noqa: PLC0415

    from number_field import LinkValues, link_banner  # noqa: PLC0415

    select = pn.widgets.Select(options=["probit", "step"], value="step")
    box = POINTS.widget(60, "my-box")
    slider = pn.widgets.EditableFloatSlider(start=0.1, end=5, fixed_start=0.1, fixed_end=5, value=1.0)
    location = Location(search="?lik=bogus<b>&n=7.5&ls=nan&x=2")
    links = LinkValues(location, {"lik": (select, "value"), "n": (box, "value"), "ls": (slider, "value")}, link_banner())
    said = shown(links.banner.object)
    assert links.banner.visible
    assert "lik=bogus<b> (one of probit, step); shown instead: step" in said
    assert f"n=7.5 ({POINTS.name}: {POINTS.accepted}); shown instead: 60" in said
    assert "ls=nan (a finite number from 0.1 to 5); shown instead: 1.0" in said  # checked before the slider
    assert (select.value, box.value, slider.value) == ("step", "60", 1.0)
    assert location.query_params == {"lik": "step", "n": 60, "ls": 1.0, "x": 2}  # the link shows the values used
    location.search = "?lik=probit&n=30&ls=1.0"  # good values are taken, their keys' refusals go
    assert (select.value, box.value, slider.value) == ("probit", "30", 1.0)
    assert links.banner.visible and "lik" not in shown(links.banner.object) and "ls=nan" in shown(links.banner.object)
    select.value = "step"  # the page's own change: the banner goes
    assert not links.banner.visible and location.query_params["lik"] == "step"


def test_a_bound_box_sets_good_values_names_bad_ones_and_shows_the_value_kept():
    import param  # noqa: PLC0415

    class Owner(param.Parameterized):
        points = param.Integer(default=60)

    owner, said = Owner(), []
    box = POINTS.bind(owner, "points", "my-box", said.append)
    assert box.value == "60" and box.label == POINTS.label
    for bad in ("abc", "1.5", "100000", "nan", "", "4"):
        box.value = bad
        assert said[-1] == f"points: {bad!r} was not applied; type a whole number from 5 to 1000; kept 60"
        assert owner.points == 60 and box.value == "60"  # the last good value, shown again
    box.value = " 70.0 "
    assert said[-1] == "" and owner.points == 70 and box.value == "70"  # taken, the refusal cleared
    owner.points = 80  # a link or a preset: shown
    assert box.value == "80" and said[-1] == ""
