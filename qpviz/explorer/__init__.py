"""Computation behind the Projection Explorer page (no Panel import: usable without a browser).

The page shows one tilted distribution q(f) = p(y|f) N(f | m, s^2) / Z (QP paper eq. 4) and its
two Gaussian projections (QP paper eqs. 5 and 7):

* EP (KL projection): N(mu_q, sigma_EP^2), the tilted mean and variance;
* QP (L2 Wasserstein projection): N(mu_q, sigma_QP^2), sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du.

:class:`ExplorerState` (:mod:`.state`) holds the inputs (likelihood, its parameters, y, cavity,
which projections to show), validates every change (bad input leaves the last good state and sets
``error``) and keeps the data of every view in ``result``. The views' data come from plain
functions (:func:`densities`, :func:`quantiles`, :func:`summary`, :func:`ratio_map`; :mod:`.views`)
that tests call directly; :func:`cached_ratio_map` keeps the maps viewed last.

:func:`read_link` (:mod:`.link`) reads a shared link's query into one consistent view, replacing
(and noting) each value the page cannot show.

The likelihoods and their parameters come from the registry (``qpviz.likelihoods.REGISTRY``):
the state offers every registered likelihood, keeps the current one's declared parameters in
``likelihood_params`` and validates them with the class's own :class:`qpviz.Parameter` checks;
:func:`parameter_controls` (:mod:`.inputs`) describes the inputs a page shows for them. A
likelihood registered with ``qpviz.register_likelihood`` appears here with no other change.
"""
from qpviz.explorer.inputs import (CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER, MAX_ABS_REAL_Y, MAX_COUNT, OPENING_VIEW,
                                   ParameterControl, build_likelihood, check_cavity, check_inputs, check_observation,
                                   default_y, initial_params, likelihood_names, parameter_controls, parse_number,
                                   range_label)
from qpviz.explorer.link import LINK_CHOICES, LINK_SLIDER_KEYS, LINK_SLIDER_NAMES, LinkReading, link_keys, read_link
from qpviz.explorer.state import ExplorerState, engine_for, opening_view
from qpviz.explorer.views import (COMMON_RATIO_SCALE, DENSITY_POINTS, MAP_SHAPE, QUANTILE_POINTS, RATIO_MAP_CACHE, Z_MAX,
                                  ExplorerResult, cached_ratio_map, compute, densities, normal_pdf, quantiles, ratio_map,
                                  summary)

__all__ = [
    "CAVITY_MEAN_SLIDER",
    "CAVITY_STD_SLIDER",
    "ExplorerState",
    "engine_for",
    "opening_view",
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
    "cached_ratio_map",
    "RATIO_MAP_CACHE",
    "OPENING_VIEW",
    "COMMON_RATIO_SCALE",
    "LINK_SLIDER_KEYS",
    "link_keys",
    "LinkReading",
    "read_link",
    "range_label",
    # also read by the app and the tests as ``explorer.<name>``
    "MAX_ABS_REAL_Y",
    "MAX_COUNT",
    "DENSITY_POINTS",
    "QUANTILE_POINTS",
    "Z_MAX",
    "MAP_SHAPE",
    "LINK_CHOICES",
    "LINK_SLIDER_NAMES",
    "compute",
    "normal_pdf",
    "check_observation",
    "check_cavity",
    "check_inputs",
]
