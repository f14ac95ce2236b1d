"""Computation behind the Projection Explorer page (no Panel import: usable without a browser).

The page shows one tilted distribution q(f) = p(y|f) N(f | m, s^2) / Z (QP paper eq. 4) and its
two Gaussian projections (QP paper eqs. 5 and 7):

* EP (KL projection): N(mu_q, sigma_EP^2), the tilted mean and variance;
* QP (L2 Wasserstein projection): N(mu_q, sigma_QP^2), sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du.

:class:`ExplorerState` holds the inputs (likelihood, its parameters, y, cavity, which projections
to show), validates every change (bad input leaves the last good state and sets ``error``) and
keeps the data of every view in ``result``. The views' data come from plain functions
(:func:`densities`, :func:`quantiles`, :func:`summary`, :func:`ratio_map`) that tests call directly.

:func:`read_link` reads a shared link's query into one consistent view, replacing (and noting)
each value the page cannot show.

The likelihoods and their parameters come from the registry (``qpviz.likelihoods.REGISTRY``):
the state offers every registered likelihood, keeps the current one's declared parameters in
``likelihood_params`` and validates them with the class's own :class:`qpviz.Parameter` checks;
:func:`parameter_controls` describes the inputs a page shows for them. A likelihood registered
with ``qpviz.register_likelihood`` appears here with no other change.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import param
from scipy import special

import qpviz
from qpviz import config
from qpviz.checks import quoted, shorten
from qpviz.likelihoods import REGISTRY
from qpviz.likelihoods.base import Likelihood
from qpviz.projection import Projection, kl_to_gaussian, qp_variance, w2_to_gaussian
from qpviz.tables.families import BINARY_MEAN as TABLE_MEAN_LIMIT
from qpviz.tables.families import TABLE_STD_RANGE
from qpviz.tilted import tilted_quantile, tilted_summary

__all__ = [
    "CAVITY_MEAN_SLIDER",
    "CAVITY_STD_SLIDER",
    "ExplorerState",
    "ExplorerResult",
    "ParameterControl",
    "likelihood_names",
    "initial_params",
    "parameter_controls",
    "build_likelihood",
    "parse_number",
    "default_y",
    "densities",
    "quantiles",
    "summary",
    "ratio_map",
    "OPENING_VIEW",
    "COMMON_RATIO_SCALE",
    "LINK_SLIDER_KEYS",
    "link_keys",
    "LinkReading",
    "read_link",
    "range_label",
]

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
#: One colour range shared by every likelihood's var_QP/var_EP map (the "common colour scale"):
#: at most 1 (Theorem 2); 0.5 is reached by Poisson-square maps from a count of 10 (larger counts
#: go lower and are drawn in the colour of 0.5), every other registered likelihood's maps at the
#: page's observations stay above it (tests/test_explorer.py checks this).
COMMON_RATIO_SCALE = (0.5, 1.0)

#: Points of the density grid and of the quantile grid (kept small: every slider move redraws).
DENSITY_POINTS = 400
QUANTILE_POINTS = 121
#: The quantile grid u = Phi(z) for z evenly spaced in [-Z_MAX, Z_MAX].
Z_MAX = 3.5
#: Resolution of the var_QP/var_EP map (means x standard deviations).
MAP_SHAPE = (41, 40)


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


def _likelihood_class(name: str) -> type[Likelihood]:
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"likelihood must be one of {likelihood_names()}; got {quoted(name)}")
    return REGISTRY[name]


def initial_params(name: str) -> dict[str, float]:
    """The parameters a likelihood starts with on the page: its first preset (the page offers
    presets when it declares them) over its declared defaults."""
    cls = _likelihood_class(name)
    values = {p.name: float(p.default) for p in cls.parameters}
    if cls.presets:
        values.update({k: float(v) for k, v in cls.presets[0].items()})
    return values


def build_likelihood(name: str, **params) -> Likelihood:
    """``qpviz.likelihood(name, **params)``: the class checks its own parameters (messages from
    :meth:`qpviz.Parameter.check`); unknown names list the registered likelihoods."""
    return _likelihood_class(name)(**params)


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
    cls = _likelihood_class(name)
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


def normal_pdf(x, mean, var) -> np.ndarray:
    """N(x | mean, var)."""
    return np.exp(-0.5 * (x - mean) ** 2 / var) / np.sqrt(2.0 * np.pi * var)


def _with_kinks(x: np.ndarray, kinks) -> np.ndarray:
    """``x`` plus both one-sided neighbours of every kink inside it (a jump stays a jump)."""
    kinks = np.asarray(kinks, float)
    kinks = kinks[(kinks > x[0]) & (kinks < x[-1])]
    if not kinks.size:
        return x
    return np.sort(np.concatenate((x, np.nextafter(kinks, -np.inf), np.nextafter(kinks, np.inf))))


@dataclass(frozen=True)
class ExplorerResult:
    """Everything the page shows for one (likelihood, y, cavity): the data of each view."""

    densities: dict
    quantiles: dict
    summary: dict


def _plot_range(cavity_mean: float, cavity_std: float, mean: float, std: float) -> tuple[float, float]:
    lo = min(cavity_mean - 4.0 * cavity_std, mean - 4.5 * std)
    hi = max(cavity_mean + 4.0 * cavity_std, mean + 4.5 * std)
    return lo, hi


def densities(lik: Likelihood, y, cavity_mean, cavity_std, ep: Projection, qp: Projection, points: int = DENSITY_POINTS) -> dict:
    """Curves of panel (a) on one grid ``x`` (``points`` + 2 per kink of p(y|f)): cavity N(m, s^2), tilted q(x) (eq. 4), EP and QP
    Gaussians N(mu_q, sigma^2) (eqs. 5, 7) and the likelihood p(y|x) scaled so that its maximum
    on the grid equals the largest of the densities (``likelihood_scale`` says by how much)."""
    lo, hi = _plot_range(cavity_mean, cavity_std, float(ep.mean), float(np.sqrt(ep.var)))
    x = _with_kinks(np.linspace(lo, hi, points), lik.kinks(y))  # a jump of p(y|f) is drawn vertically
    var = cavity_std**2
    cavity = normal_pdf(x, cavity_mean, var)
    tilted = np.exp(lik.tilted_logpdf(x, y, cavity_mean, var))
    ep_pdf = normal_pdf(x, float(ep.mean), float(ep.var))
    qp_pdf = normal_pdf(x, float(qp.mean), float(qp.var))
    with np.errstate(divide="ignore", under="ignore"):
        lik_values = np.exp(lik.log_prob(y, x))
    peak = max(cavity.max(), tilted.max(), ep_pdf.max(), qp_pdf.max())
    scale = peak / lik_values.max() if lik_values.max() > 0 else 1.0
    return {
        "x": x,
        "cavity": cavity,
        "likelihood": lik_values * scale,
        "likelihood_scale": scale,
        "tilted": tilted,
        "ep": ep_pdf,
        "qp": qp_pdf,
    }


def quantiles(lik: Likelihood, y, cavity_mean, cavity_std, ep: Projection, qp: Projection, points: int = QUANTILE_POINTS) -> dict:
    """Panel (b): quantile functions on u = Phi(z), z in [-3.5, 3.5].

    ``tilted`` = F^-1(u) (``qpviz.tilted.tilted_quantile``); ``ep`` = mu + sigma_EP z;
    ``qp`` = mu + sigma_QP z. Against z = Phi^-1(u)
    (the Q-Q view) the QP line is the least-squares line through the tilted quantiles, since
    W2^2 = int_0^1 (F^-1(u) - mu - sigma Phi^-1(u))^2 du (QP paper eq. 11) is minimised by
    sigma_QP (eq. 20); the EP line has slope sigma_EP.
    """
    z = np.linspace(-Z_MAX, Z_MAX, points)
    u = special.ndtr(z)
    mean = float(ep.mean)
    ep_std = float(np.sqrt(ep.var))
    qp_std = float(np.sqrt(qp.var))
    tilted = tilted_quantile(lik, u, y, cavity_mean, cavity_std**2, engine="numpy")  # no compile; ~3 ms
    return {"u": u, "z": z, "tilted": tilted, "ep": mean + ep_std * z, "qp": mean + qp_std * z}


def summary(lik: Likelihood, y, cavity_mean, cavity_std, ep: Projection, qp: Projection) -> dict:
    """Panel (c): Z, log Z, tilted mean, var_EP, var_QP, var_QP/var_EP, W2 and KL of each Gaussian
    to the tilted distribution (Prop. 1 / KL definition) and each site update (eq. 6)."""
    var = cavity_std**2
    means = np.array([float(ep.mean), float(qp.mean)])
    variances = np.array([float(ep.var), float(qp.var)])
    # one quadrature serves W2 and KL; the NumPy engine (~1 ms for one point) needs no compilation
    tilted_dist = tilted_summary(lik, y, cavity_mean, var, engine="numpy")
    w2 = w2_to_gaussian(lik, y, cavity_mean, var, means, variances, summary=tilted_dist)
    kl = kl_to_gaussian(lik, y, cavity_mean, var, means, variances, summary=tilted_dist)
    out = {
        "Z": float(np.exp(ep.log_z)),
        "log_Z": float(ep.log_z),
        "mean": float(ep.mean),
        "var_ep": float(ep.var),
        "var_qp": float(qp.var),
        "ratio": float(qp.var / ep.var),
    }
    for i, (name, projection) in enumerate((("ep", ep), ("qp", qp))):
        site = projection.site()
        out[f"w2_{name}"] = float(w2[i])
        out[f"kl_{name}"] = float(kl[i])
        out[f"site_mean_{name}"] = float(site.mean)
        out[f"site_var_{name}"] = float(site.var)
        out[f"site_positive_{name}"] = bool(site.positive)
    return out


def ratio_map(lik: Likelihood, y, shape: tuple[int, int] = MAP_SHAPE) -> dict:
    """Panel (d): var_QP / var_EP on a grid of cavity means x cavity stds (``ratio[i_std, i_mean]``).

    var_EP from ``lik.tilted_moments`` and var_QP from ``qpviz.projection.qp_variance`` (eq. 7),
    both vectorised over the grid; the ratio is <= 1 everywhere (QP paper Theorem 2; var_QP is
    capped at var_EP, as ``qpviz.project`` does, against the tables' 1e-8 error).
    """
    means = np.linspace(CAVITY_MEAN_SLIDER[0], CAVITY_MEAN_SLIDER[1], shape[0])
    stds = np.linspace(CAVITY_STD_SLIDER[0], CAVITY_STD_SLIDER[1], shape[1])
    M, S = np.meshgrid(means, stds)
    V = S**2
    y_grid = np.full_like(M, float(y))
    var_ep = lik.tilted_moments(y_grid, M, V).var
    # as in qpviz.project: a table's 1e-8 error must not cross Theorem 2's bound where QP ~ EP
    var_qp = np.minimum(qp_variance(lik, y_grid, M, V), var_ep)
    return {"means": means, "stds": stds, "ratio": var_qp / var_ep}


def compute(lik: Likelihood, y: float, cavity_mean: float, cavity_std: float) -> ExplorerResult:
    """The data of views (a)-(c) for one tilted distribution."""
    var = cavity_std**2
    ep = qpviz.project(lik, y, cavity_mean, var, method="ep")
    qp = qpviz.project(lik, y, cavity_mean, var, method="qp")
    if not (np.isfinite(ep.var) and np.isfinite(qp.var) and ep.var > 0 and qp.var > 0):
        raise ArithmeticError(
            f"the projection failed for y={y:g}, cavity N({cavity_mean:g}, {cavity_std:g}^2) "
            f"(var_EP={float(ep.var):g}, var_QP={float(qp.var):g}); try a cavity closer to the data"
        )
    return ExplorerResult(
        densities=densities(lik, y, cavity_mean, cavity_std, ep, qp),
        quantiles=quantiles(lik, y, cavity_mean, cavity_std, ep, qp),
        summary=summary(lik, y, cavity_mean, cavity_std, ep, qp),
    )


class ExplorerState(param.Parameterized):
    """Inputs of the Projection Explorer, always valid, and the data of its views.

    Change inputs with :meth:`update` (all at once, validated): bad input leaves every input and
    ``result`` as they were and sets ``error`` to a message saying what to change. The
    likelihood list is the registry's when the state is made (:meth:`refresh_likelihoods`
    re-reads it; :meth:`update` does too when asked for a name it does not list yet).
    """

    likelihood = param.Selector(default="probit", objects=["probit"], doc="Likelihood p(y|f), a registered name.")
    likelihood_params = param.Dict(
        default={}, doc="The current likelihood's declared parameters (name -> value); see initial_params.")
    y = param.Number(default=1.0, doc="Observation: label -1/+1, a count, or a real value.")
    cavity_mean = param.Number(default=0.5, softbounds=CAVITY_MEAN_SLIDER, doc="Cavity mean m.")
    cavity_std = param.Number(default=1.5, softbounds=CAVITY_STD_SLIDER, doc="Cavity standard deviation s (> 0).")
    show_ep = param.Boolean(default=True, doc="Show the EP (KL) projection.")
    show_qp = param.Boolean(default=True, doc="Show the QP (W2) projection.")
    error = param.String(default="", doc="Why the last change was refused ('' if it was accepted).")
    result = param.Parameter(default=None, doc="ExplorerResult of the current inputs.")

    INPUTS = ("likelihood", "likelihood_params", "y", "cavity_mean", "cavity_std")

    def __init__(self, **params):
        inputs = {k: params.pop(k) for k in list(params) if k in self.INPUTS}
        super().__init__(**params)
        self.refresh_likelihoods()
        inputs.setdefault("likelihood", self.likelihood)
        self.update(**inputs)
        if self.error:
            raise ValueError(self.error)

    def refresh_likelihoods(self) -> list[str]:
        """Offer every likelihood registered now (the registry may have grown since)."""
        names = likelihood_names()
        if self.param.likelihood.objects != names:
            self.param.likelihood.objects = names
        return names

    def likelihood_object(self, **overrides) -> Likelihood:
        """The current likelihood (or the one ``likelihood`` / ``likelihood_params`` overrides give)."""
        return build_likelihood(overrides.get("likelihood", self.likelihood),
                                **overrides.get("likelihood_params", self.likelihood_params))

    def _new_params(self, name: str, given) -> dict:
        """The parameters of ``name`` after a change: ``given`` over the current ones (same
        likelihood) or over the likelihood's initial ones (a new likelihood)."""
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise TypeError(f"likelihood_params must be a dict of parameter name -> value; got {given!r}")
        base = self.likelihood_params if name == self.likelihood and self.result is not None else initial_params(name)
        return {**base, **given}

    def update(self, **changes) -> bool:
        """Apply ``changes`` to the inputs if they give a valid view; return whether they did.

        ``likelihood_params`` may name only some parameters (the others keep their values, or
        start from :func:`initial_params` when the likelihood changes). Numbers may be given as
        text (typed entry). When only the likelihood (or its parameters) changes and the current
        y is outside its support, y moves to the nearest valid observation (e.g. a real 0.3
        becomes the label +1).
        """
        unknown = set(changes) - set(self.INPUTS)
        if unknown:
            raise TypeError(f"unknown input(s) {sorted(unknown)}; the inputs are {self.INPUTS}")
        try:
            new = {k: changes.get(k, getattr(self, k)) for k in self.INPUTS}
            for name in ("y", "cavity_mean", "cavity_std"):
                new[name] = parse_number(new[name], name.replace("_", " "))
            if new["likelihood"] not in self.param.likelihood.objects:
                self.refresh_likelihoods()
            _likelihood_class(new["likelihood"])
            params = self._new_params(new["likelihood"], changes.get("likelihood_params"))
            params = {k: parse_number(v, k) if isinstance(v, str) else v for k, v in params.items()}
            lik = build_likelihood(new["likelihood"], **params)
            new["likelihood_params"] = lik.params
            if "y" not in changes:
                new["y"] = default_y(lik, new["y"])
            check_inputs(lik, new["y"], new["cavity_mean"], new["cavity_std"])
            result = compute(lik, new["y"], new["cavity_mean"], new["cavity_std"])
        except (ValueError, TypeError, ArithmeticError) as exc:
            self.error = str(exc)
            return False
        self.param.update(**new, result=result, error="")
        return True


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
