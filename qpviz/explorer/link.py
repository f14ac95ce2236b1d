"""A shared link of the Projection Explorer read into one consistent view: :func:`read_link`
checks each value of the URL query on its own and replaces (and notes) each one the page cannot
show; :func:`link_keys` lists every key it reads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpviz.checks import shorten
from qpviz.explorer.inputs import (CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER, MAX_ABS_REAL_Y, MAX_COUNT, OPENING_VIEW,
                                   build_likelihood, default_y, initial_params, likelihood_names, parameter_controls,
                                   parse_number, range_label)

__all__ = ["LINK_SLIDER_KEYS", "LINK_CHOICES", "LINK_SLIDER_NAMES", "LinkReading", "link_keys", "read_link"]

#: The URL keys of the observation and cavity sliders (their hidden ones too: a link carries all).
LINK_SLIDER_KEYS = ("label", "count", "y", "m", "s")

#: The URL keys of the page's display choices and the values each accepts (the first is the default).
LINK_CHOICES = {"show": ('["EP", "QP"]', '["EP"]', '["QP"]', "[]"), "scale": ("own", "common")}


@dataclass
class LinkReading:
    """What a shared link asks the page to show, made consistent.

    ``inputs``: ExplorerState.update arguments (one likelihood, its parameters, y and cavity);
    ``sliders``: the value of each observation/cavity slider (hidden ones too); ``controls``: each
    likelihood parameter control's value (by URL key); ``choices``: show/scale;
    ``notes``: one sentence per replaced value, "key=text: why; showing X instead".
    """

    inputs: dict
    sliders: dict
    controls: dict
    choices: dict
    notes: list

#: What each slider key of a link holds, for the note that replaces a bad value.
LINK_SLIDER_NAMES = {"label": "the label y", "count": "the count y", "y": "the observation y",
                     "m": "the cavity mean m", "s": "the cavity std s"}


def _link_slider_value(key: str, text: str) -> float:
    """A slider's value from a link's text, or ValueError saying its valid range."""
    try:
        value = parse_number(text, key)
    except (TypeError, ValueError):
        value = math.nan
    lo_m, hi_m = CAVITY_MEAN_SLIDER
    lo_s, hi_s = CAVITY_STD_SLIDER
    valid = math.isfinite(value) and {
        "label": value in (-1.0, 1.0),
        "count": value == round(value) and 0 <= value <= MAX_COUNT,
        "y": abs(value) <= MAX_ABS_REAL_Y,
        "m": lo_m <= value <= hi_m,
        "s": lo_s <= value <= hi_s,
    }[key]
    if not valid:
        kind = "a whole number in" if key == "count" else "a number in" if key != "label" else ""
        raise ValueError(f"{LINK_SLIDER_NAMES[key]} must be {kind} {range_label(key)}".replace("  ", " "))
    return value


def link_keys() -> tuple[str, ...]:
    """Every URL query key :func:`read_link` reads: the likelihood, each likelihood's parameter
    controls (registered ones included), the sliders and the display choices."""
    controls = [control.key for name in likelihood_names() for control in parameter_controls(name)]
    return ("lik", *controls, *LINK_SLIDER_KEYS, *LINK_CHOICES)


def read_link(query: dict, opening: dict = OPENING_VIEW) -> LinkReading:
    """Read a shared link's query (URL key -> text, as typed) into one consistent view.

    Every value is checked on its own (likelihood name, each parameter, each slider, each display
    choice); a bad one is replaced by what the page shows without it (the likelihood's starting
    parameter, the observation closest to the opening one, the opening cavity) and noted. The
    observation the view uses is the slider of the likelihood's support (label, count or y).
    Whether the whole view computes is for the caller to check (ExplorerState.update).
    """
    notes = []

    def replaced(key, text, why, shown):
        why = str(why).rstrip(".")
        notes.append(f"{key}={shorten(text, 60)}: {why}; showing {shown} instead")

    names = likelihood_names()
    name = query.get("lik", opening["likelihood"])
    if name not in names:
        replaced("lik", name, f"not a likelihood (one of {', '.join(names)})", f"lik={opening['likelihood']}")
        name = opening["likelihood"]
    controls = {}
    params = dict(opening["likelihood_params"]) if name == opening["likelihood"] else initial_params(name)
    for other in names:
        for control in parameter_controls(other):
            if control.key not in query:
                continue
            try:
                controls[control.key] = control.parse(query[control.key])
            except (ValueError, TypeError) as exc:
                replaced(control.key, query[control.key], exc, f"{control.key}={control.default:g}"
                         if isinstance(control.default, float) else f"{control.key}={control.default}")
                continue
            if other == name:
                params.update(control.params_for(controls[control.key]))
    lik = build_likelihood(name, **params)
    y = default_y(lik, opening["y"])
    sliders = {"label": -1.0 if opening["y"] < 0 else 1.0,
               "count": float(min(max(round(opening["y"]), 0), MAX_COUNT)),
               "y": float(np.clip(opening["y"], -MAX_ABS_REAL_Y, MAX_ABS_REAL_Y)),
               "m": float(opening["cavity_mean"]), "s": float(opening["cavity_std"])}
    sliders[{"binary": "label", "count": "count", "real": "y"}[lik.support]] = y
    for key in LINK_SLIDER_KEYS:
        if key not in query:
            continue
        try:
            sliders[key] = _link_slider_value(key, query[key])
        except (ValueError, TypeError) as exc:
            replaced(key, query[key], exc, f"{key}={sliders[key]:g}")
    choices = {}
    # '["EP","QP"]', 'True' are fine, and "['EP', 'QP']": Panel's Location writes a list that way
    # when another page's synced value changes the URL
    canonical = lambda text: text.replace(" ", "").replace("'", '"').lower()  # noqa: E731
    for key, accepted in LINK_CHOICES.items():
        text = query.get(key, accepted[0])
        matches = [a for a in accepted if canonical(a) == canonical(text)]
        if not matches:
            replaced(key, text, f"{key} must be one of {', '.join(accepted)}", f"{key}={accepted[0]}")
        choices[key] = matches[0] if matches else accepted[0]
    observation = sliders[{"binary": "label", "count": "count", "real": "y"}[lik.support]]
    inputs = {"likelihood": name, "likelihood_params": params, "y": observation, "cavity_mean": sliders["m"],
              "cavity_std": sliders["s"]}
    return LinkReading(inputs=inputs, sliders=sliders, controls=controls, choices=choices, notes=notes)
