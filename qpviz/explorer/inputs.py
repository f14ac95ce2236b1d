"""The Projection Explorer's inputs: the likelihoods and their parameter controls, the ranges of
the observation and cavity, and the checks that keep every view the page shows valid.

The likelihoods and their parameters come from the registry (``qpviz.likelihoods.REGISTRY``):
:func:`likelihood_names` lists every registered likelihood, :func:`initial_params` gives the
parameters one starts with and :func:`parameter_controls` describes the inputs a page shows for
them (checked by the class's own :class:`qpviz.Parameter` checks). A likelihood registered with
``qpviz.register_likelihood`` appears here with no other change.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qpviz import config
from qpviz.checks import quoted
from qpviz.likelihoods import REGISTRY
from qpviz.likelihoods.base import Likelihood
from qpviz.tables.families import TABLE_STD_RANGE

__all__ = ["CAVITY_MEAN_SLIDER", "CAVITY_STD_SLIDER", "MAX_ABS_REAL_Y", "MAX_COUNT", "OPENING_VIEW", "parse_number",
           "likelihood_names", "likelihood_class", "initial_params", "build_likelihood", "ParameterControl",
           "parameter_controls", "default_y", "range_label", "check_observation", "check_cavity", "check_inputs"]

#: Cavity means and standard deviations the page accepts: its sliders' ranges and the extent of the
#: var_QP/var_EP map. A subset of the QP tables' domain (qpviz.tables.families: every std in
#: TABLE_STD_RANGE = (0.05, 20), |m| <= TABLE_MEAN_LIMIT = 10 for labels and counts, |m - y| <= 20
#: for real y), so the tables' fast path serves every cavity of the page for labels, counts and
#: real |y| <= 12 (larger typed y are computed directly).
CAVITY_MEAN_SLIDER = (-8.0, 8.0)
CAVITY_STD_SLIDER = (TABLE_STD_RANGE[0], 8.0)

#: Largest |y| accepted for real observations and largest count for Poisson observations.
MAX_ABS_REAL_Y = 50.0
MAX_COUNT = 1000

#: The view the page opens on: a Poisson count with the squared-rate link, whose tilted
#: distribution is skewed and two-humped (modes near f = +-sqrt(y)), so that sigma_QP / sigma_EP
#: is about 0.75 and the EP and QP curves visibly differ (chosen by computing sigma_QP / sigma_EP
#: over presets of step, probit, Poisson-square and Student-t likelihoods; a step with eps = 0 and
#: a far-out cavity reaches only about 0.91).
OPENING_VIEW = {"likelihood": "poisson_square", "likelihood_params": {}, "y": 10.0, "cavity_mean": 1.0,
                "cavity_std": 1.5}


def parse_number(value, name: str) -> float:
    """``value`` (a number or typed text) as a finite float, or a message saying what to type."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)  # also parses text such as " -1.25 "
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number such as 1.5; got {quoted(value)}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite; got {quoted(value)}")
    return number


def likelihood_names() -> list[str]:
    """The registered likelihoods, in menu order (read now: later registrations are included)."""
    return list(REGISTRY)


def likelihood_class(name: str) -> type[Likelihood]:
    """The registered class of likelihood ``name``, or ValueError listing the registered names."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"likelihood must be one of {likelihood_names()}; got {quoted(name)}")
    return REGISTRY[name]


def initial_params(name: str) -> dict[str, float]:
    """The parameters a likelihood starts with on the page: its first preset (the page offers
    presets when it declares them) over its declared defaults."""
    cls = likelihood_class(name)
    values = {p.name: float(p.default) for p in cls.parameters}
    if cls.presets:
        values.update({k: float(v) for k, v in cls.presets[0].items()})
    return values


def build_likelihood(name: str, **params) -> Likelihood:
    """``qpviz.likelihood(name, **params)``: the class checks its own parameters (messages from
    :meth:`qpviz.Parameter.check`); unknown names list the registered likelihoods."""
    return likelihood_class(name)(**params)


@dataclass(frozen=True)
class ParameterControl:
    """One input of a likelihood's parameters on the page (described here, drawn by the app).

    ``kind`` is "select" (``options``: label -> value of one parameter, the parameter's
    ``choices``), "preset" (``options``: label -> label of one of the class's ``presets``, which
    set several parameters at once) or "number" (a typed number; the label shows its range).
    ``key`` names the control in the page's URL: ``<likelihood>_<parameter>``, or the
    likelihood's name for its presets.
    """

    likelihood: str
    key: str
    label: str
    kind: str
    default: object
    options: dict = field(default_factory=dict)
    parameters: tuple[str, ...] = ()
    presets: dict = field(default_factory=dict)

    def params_for(self, value) -> dict:
        """The likelihood parameters this control sets when it shows ``value``."""
        if self.kind == "preset":
            if value not in self.presets:
                raise ValueError(f"{self.label} must be one of {list(self.presets)}; got {quoted(value)}")
            return dict(self.presets[value])
        return {self.parameters[0]: value}

    def parse(self, text):
        """The value this control shows for a link's text ``text`` (ValueError saying why not)."""
        if self.kind == "preset":
            if text not in self.presets:
                raise ValueError(f"{self.label} must be one of {list(self.presets)}; got {quoted(text)}")
            return text
        value = parse_number(text, self.parameters[0])
        if self.kind == "select" and value not in self.options.values():
            raise ValueError(f"{self.parameters[0]} must be one of {', '.join(self.options)}; got {quoted(text)}")
        build_likelihood(self.likelihood, **{**initial_params(self.likelihood), **self.params_for(value)})
        return value

    def value_for(self, params: dict):
        """The value this control shows for the likelihood parameters ``params`` (None if it cannot)."""
        if self.kind == "preset":
            wanted = {k: float(params[k]) for k in self.parameters if k in params}
            return next((label for label, values in self.presets.items() if values == wanted), None)
        value = params.get(self.parameters[0])
        if self.kind == "select" and value not in self.options.values():
            return None
        return value


def _join(head: str, doc: str) -> str:
    return f"{head}: {doc}" if doc else head


def _preset_label(preset: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in preset.items())


def parameter_controls(name: str) -> list[ParameterControl]:
    """The inputs the page shows for the parameters of likelihood ``name`` (from its class).

    A class with ``presets`` gets one select over them (e.g. student_t's (nu, scale) pairs);
    otherwise each declared :class:`qpviz.Parameter` gets a select over its ``choices`` (plus
    its default) or, without choices, a number input whose label shows the valid range.
    """
    cls = likelihood_class(name)
    start = initial_params(name)
    names = tuple(p.name for p in cls.parameters)
    if cls.presets:
        presets = {_preset_label(p): {k: float(v) for k, v in p.items()} for p in cls.presets}
        return [ParameterControl(name, key=name, label=f"{', '.join(names)} (presets)", kind="preset",
                                 default=next(iter(presets)), options={k: k for k in presets}, parameters=names,
                                 presets=presets)]
    controls = []
    for p in cls.parameters:
        key = f"{name}_{p.name}"
        if p.choices:
            values = sorted({float(v) for v in (*p.choices, start[p.name])})
            controls.append(ParameterControl(name, key=key, label=_join(p.name, p.doc), kind="select",
                                             default=start[p.name], options={f"{v:g}": v for v in values},
                                             parameters=(p.name,)))
        else:
            controls.append(ParameterControl(name, key=key, label=_join(f"{p.name} in {p.describe_range()}", p.doc),
                                             kind="number", default=start[p.name], parameters=(p.name,)))
    return controls


def default_y(lik: Likelihood, y: float) -> float:
    """The observation closest to ``y`` that ``lik`` accepts (used when the likelihood changes)."""
    if lik.support == "binary":
        return -1.0 if y < 0 else 1.0
    if lik.support == "count":
        return float(min(max(round(y), 0), config.MAX_TABLE_COUNT))
    return float(np.clip(y, -MAX_ABS_REAL_Y, MAX_ABS_REAL_Y))


def range_label(name: str) -> str:
    """The valid range of one page input, as its label shows it ("m in [-8, 8]")."""
    ranges = {
        "m": f"[{CAVITY_MEAN_SLIDER[0]:g}, {CAVITY_MEAN_SLIDER[1]:g}]",
        "s": f"[{CAVITY_STD_SLIDER[0]:g}, {CAVITY_STD_SLIDER[1]:g}]",
        "y": f"[-{MAX_ABS_REAL_Y:g}, {MAX_ABS_REAL_Y:g}]",
        "count": f"[0, {MAX_COUNT}]",
        "label": "-1 or +1",
    }
    return ranges[name]


def check_observation(lik: Likelihood, y: float) -> None:
    """Raise ValueError with advice if the page cannot show observation ``y`` of ``lik``."""
    lik.check_y(y)
    if lik.support == "count" and y > MAX_COUNT:
        raise ValueError(f"the count y must be at most {MAX_COUNT}; got {y:g}")
    if lik.support == "real" and abs(y) > MAX_ABS_REAL_Y:
        raise ValueError(f"y must be in {range_label('y')}; got {y:g}")


def check_cavity(cavity_mean: float, cavity_std: float) -> None:
    """Raise ValueError with advice if the cavity N(m, s^2) is outside what the page shows."""
    if not CAVITY_MEAN_SLIDER[0] <= cavity_mean <= CAVITY_MEAN_SLIDER[1]:
        raise ValueError(f"the cavity mean must be in {range_label('m')}; got {cavity_mean:g}")
    if cavity_std <= 0:
        raise ValueError(f"the cavity std must be > 0 (a Gaussian needs a positive spread); got {cavity_std:g}")
    if not CAVITY_STD_SLIDER[0] <= cavity_std <= CAVITY_STD_SLIDER[1]:
        raise ValueError(f"the cavity std must be in {range_label('s')}; got {cavity_std:g}")


def check_inputs(lik: Likelihood, y: float, cavity_mean: float, cavity_std: float) -> None:
    """Raise ValueError with advice if (y, cavity) is outside what the page can show."""
    check_observation(lik, y)
    check_cavity(cavity_mean, cavity_std)
