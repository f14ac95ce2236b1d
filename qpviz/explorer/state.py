"""The Projection Explorer's state: :class:`ExplorerState` holds the inputs (likelihood, its
parameters, y, cavity, which projections to show), validates every change (bad input leaves the
last good state and sets ``error``) and keeps the data of every view in ``result``
(:func:`qpviz.explorer.views.compute`).
"""
from __future__ import annotations

import weakref

import param

from qpviz.explorer.inputs import (CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER, OPENING_VIEW, build_likelihood, check_inputs,
                                   default_y, initial_params, likelihood_class, likelihood_names, parse_number)
from qpviz.explorer.views import (ENGINES, RATIO_MAP_CACHE, cached_ratio_map, compute, map_key, store_ratio_map,
                                  stored_ratio_map)
from qpviz.likelihoods.base import Likelihood

__all__ = ["ExplorerState", "engine_for", "opening_view"]


def engine_for(kernels) -> str:
    """The views' engine while ``kernels`` (a future, done when a server's compiled kernels are
    ready; None: they are) is not done: "numpy", else "auto"."""
    return "auto" if kernels is None or kernels.done() else "numpy"


def opening_view(engine: str = "auto") -> "ExplorerState":
    """The opening view (:data:`OPENING_VIEW`) computed with ``engine``, and its map, which is kept
    for every session (:data:`qpviz.explorer.RATIO_MAP_CACHE`): what a server does once before its
    first session (with the kernels this loads them from numba's cache and reads the QP table).

    The map is read from disk when a run with the kernels stored it for these sources
    (:func:`qpviz.explorer.views.stored_ratio_map`; the warm-up's explorer target stores it): with
    ``engine`` "numpy" the opening view then loads no kernel and takes ~10 ms instead of ~1 s."""
    state = ExplorerState(**OPENING_VIEW, engine=engine)
    name, params, y = state.likelihood, state.likelihood_params, state.y
    key = map_key(name, params, y)
    if RATIO_MAP_CACHE.get_recent(key) is None:
        stored = stored_ratio_map(name, params, y)
        if stored is not None:
            RATIO_MAP_CACHE.put(key, stored)
        else:
            data = cached_ratio_map(name, params, y, engine=engine)
            if engine == "auto":  # (the NumPy engine's map agrees to ~1e-8, but only the kernels' is kept)
                store_ratio_map(name, params, y, data)
    return state


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
    engine = param.Selector(default="auto", objects=list(ENGINES), doc=(
        "How the views project: 'auto' (numba kernels, QP tables) or 'numpy' (quadrature alone, nothing to "
        "compile: a page shown while its kernels compile); see qpviz.explorer.views."))
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

    def follow(self, kernels) -> None:
        """Compute with the kernels (``engine`` "auto") once ``kernels`` (see :func:`engine_for`) is
        done; the views shown until then by NumPy quadrature agree with them to the tables' ~1e-8.
        The future keeps a weak reference (it lives as long as the server)."""
        if kernels is None or kernels.done():
            return
        state_ref = weakref.ref(self)

        def ready(_):
            state = state_ref()
            if state is not None:
                state.engine = "auto"

        kernels.add_done_callback(ready)

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
            likelihood_class(new["likelihood"])
            params = self._new_params(new["likelihood"], changes.get("likelihood_params"))
            params = {k: parse_number(v, k) if isinstance(v, str) else v for k, v in params.items()}
            lik = build_likelihood(new["likelihood"], **params)
            new["likelihood_params"] = lik.params
            if "y" not in changes:
                new["y"] = default_y(lik, new["y"])
            check_inputs(lik, new["y"], new["cavity_mean"], new["cavity_std"])
            result = compute(lik, new["y"], new["cavity_mean"], new["cavity_std"], engine=self.engine)
        except (ValueError, TypeError, ArithmeticError) as exc:
            self.error = str(exc)
            return False
        self.param.update(**new, result=result, error="")
        return True

