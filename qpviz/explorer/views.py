"""The data of the Projection Explorer's views for one tilted distribution
q(f) = p(y|f) N(f | m, s^2) / Z: (a) the densities, (b) the quantile functions, (c) the summary
numbers and (d) the var_QP/var_EP map, as plain functions that tests call directly;
:func:`compute` gathers (a)-(c) into an :class:`ExplorerResult`.

``engine`` (of :func:`compute`, :func:`ratio_map`, :func:`cached_ratio_map`): ``"auto"`` projects
with ``qpviz.project`` (closed-form moments and the QP tables) and computes the quantiles, W2 and KL
with the tilted quadrature's kernels (numba: ~2 ms a view); ``"numpy"`` does everything with the
NumPy engine's quadrature (:mod:`qpviz.tilted_numpy`: log Z, mean, variance and sigma_QP by eq. 7,
the same numbers to the tables' ~1e-8), which compiles nothing: a server whose kernels are still
compiling shows the page with it at once (a first start; ~8 ms a view, ~1 s a map).
"""
from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

import qpviz
from qpviz.explorer.inputs import CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER, build_likelihood
from qpviz.gpdemo.jobs import LRUCache
from qpviz.likelihoods.base import Likelihood
from qpviz.projection import Projection, ep_variance, kl_to_gaussian, qp_variance, w2_to_gaussian
from qpviz.tilted import tilted_quantile, tilted_summary

__all__ = ["COMMON_RATIO_SCALE", "DENSITY_POINTS", "QUANTILE_POINTS", "Z_MAX", "MAP_SHAPE", "normal_pdf",
           "ExplorerResult", "densities", "quantiles", "summary", "ratio_map", "cached_ratio_map",
           "RATIO_MAP_CACHE", "compute", "ENGINES", "map_key", "stored_ratio_map", "store_ratio_map"]

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

#: How the views project (module docstring): with the numba kernels, or by NumPy quadrature alone.
ENGINES = ("auto", "numpy")


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}; got {engine!r}")


def _numpy_projections(lik: Likelihood, y, cavity_mean, cavity_var):
    """(EP projection, QP projection, tilted summary): the projections as ``qpviz.project`` gives
    them, from the NumPy engine's quadrature alone (the summary it made): moments (eq. 5) and
    sigma_QP (eq. 7) of the tilted distribution, every array shaped as the broadcast inputs; var_EP
    capped at the cavity's for a log-concave likelihood and var_QP at var_EP (Theorem 2), as
    ``qpviz.project`` caps them."""
    tilted_dist = tilted_summary(lik, y, cavity_mean, cavity_var, closed_form=False, engine="numpy")
    m, v = np.broadcast_arrays(np.asarray(cavity_mean, float), np.asarray(cavity_var, float))
    var = ep_variance(lik, tilted_dist.var, v)
    qp_var = var if lik.gaussian_tilted else np.minimum(tilted_dist.qp_std**2, var)
    return (Projection("ep", tilted_dist.mean, var, tilted_dist.log_z, m, v),
            Projection("qp", tilted_dist.mean, qp_var, tilted_dist.log_z, m, v), tilted_dist)


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
    # the projection's log Z: not computed again (with numba kernels)
    tilted = np.exp(lik.tilted_logpdf(x, y, cavity_mean, var, log_z=float(ep.log_z)))
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


def quantiles(lik: Likelihood, y, cavity_mean, cavity_std, ep: Projection, qp: Projection, points: int = QUANTILE_POINTS,
              engine: str = "auto") -> dict:
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
    # numba ~0.4-1.5 ms for the 121 points, the NumPy engine ~4-5 ms (nothing to compile)
    tilted = tilted_quantile(lik, u, y, cavity_mean, cavity_std**2, engine=engine)
    return {"u": u, "z": z, "tilted": tilted, "ep": mean + ep_std * z, "qp": mean + qp_std * z}


def summary(lik: Likelihood, y, cavity_mean, cavity_std, ep: Projection, qp: Projection, tilted_dist=None,
            engine: str = "auto") -> dict:
    """Panel (c): Z, log Z, tilted mean, var_EP, var_QP, var_QP/var_EP, W2 and KL of each Gaussian
    to the tilted distribution (Prop. 1 / KL definition) and each site update (eq. 6).
    ``tilted_dist``: the tilted distribution's :class:`qpviz.tilted.TiltedSummary`, if computed
    (else computed with ``engine``)."""
    var = cavity_std**2
    means = np.array([float(ep.mean), float(qp.mean)])
    variances = np.array([float(ep.var), float(qp.var)])
    if tilted_dist is None:  # one quadrature serves W2 and KL (numba ~0.2 ms, the NumPy engine ~1-4 ms)
        tilted_dist = tilted_summary(lik, y, cavity_mean, var, engine=engine)
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


def ratio_map(lik: Likelihood, y, shape: tuple[int, int] = MAP_SHAPE, engine: str = "auto") -> dict:
    """Panel (d): var_QP / var_EP on a grid of cavity means x cavity stds (``ratio[i_std, i_mean]``).

    var_EP from ``lik.tilted_moments`` and var_QP from ``qpviz.projection.qp_variance`` (eq. 7),
    both vectorised over the grid; the ratio is <= 1 everywhere (QP paper Theorem 2; var_QP is
    capped at var_EP, as ``qpviz.project`` does, against the tables' 1e-8 error); ``engine="numpy"``:
    both by the NumPy engine's quadrature (module docstring).
    """
    _check_engine(engine)
    means = np.linspace(CAVITY_MEAN_SLIDER[0], CAVITY_MEAN_SLIDER[1], shape[0])
    stds = np.linspace(CAVITY_STD_SLIDER[0], CAVITY_STD_SLIDER[1], shape[1])
    M, S = np.meshgrid(means, stds)
    V = S**2
    y_grid = np.full_like(M, float(y))
    if engine == "numpy":
        ep, qp, _ = _numpy_projections(lik, y_grid, M, V)
        return {"means": means, "stds": stds, "ratio": qp.var / ep.var}
    var_ep = lik.tilted_moments(y_grid, M, V).var
    # as in qpviz.project: a table's 1e-8 error must not cross Theorem 2's bound where QP ~ EP
    var_qp = np.minimum(qp_variance(lik, y_grid, M, V), var_ep)
    return {"means": means, "stds": stds, "ratio": var_qp / var_ep}


#: The maps of the likelihoods and observations viewed last, shared by every session (a map does
#: not depend on the cavity: moving the cavity never recomputes it).
RATIO_MAP_CACHE = LRUCache(64)


def map_key(name: str, params: dict, y) -> tuple:
    """The key of likelihood ``name``'s map with ``params`` at ``y`` in :data:`RATIO_MAP_CACHE`."""
    return (name, tuple(sorted(params.items())), float(y))


def cached_ratio_map(name: str, params: dict, y, engine: str = "auto") -> dict:
    """:func:`ratio_map` of likelihood ``name`` with ``params`` at ``y``, from :data:`RATIO_MAP_CACHE`
    when it was computed before, by either engine (they agree to the tables' error; the arrays are
    shared: read them, do not write them)."""
    key = map_key(name, params, y)
    data = RATIO_MAP_CACHE.get_recent(key)
    if data is None:
        data = ratio_map(build_likelihood(name, **params), y, engine=engine)
        RATIO_MAP_CACHE.put(key, data)
    return data


def _stored_map_path(name: str, params: dict, y) -> Path:
    """Where :func:`store_ratio_map` keeps a map: beside the QP tables' derived forms
    (:func:`qpviz.cache.table_cache_dir`), named by a digest of the package's sources, the map's
    likelihood, parameters and y, and its grid (a file of other sources is never read)."""
    from qpviz import cache  # noqa: PLC0415

    key = repr((cache.source_fingerprint(), *map_key(name, params, y), MAP_SHAPE,
                CAVITY_MEAN_SLIDER, CAVITY_STD_SLIDER))
    return cache.table_cache_dir() / f"{name}.{hashlib.sha256(key.encode()).hexdigest()[:24]}{cache.RATIO_MAP_SUFFIX}"


def stored_ratio_map(name: str, params: dict, y) -> dict | None:
    """The map :func:`store_ratio_map` kept for these sources, or None (none, unreadable, or not a
    map of :data:`MAP_SHAPE`). A server's start reads the opening view's map here: a warm start
    then shows it without loading a kernel (issue 22 point 4)."""
    try:
        with np.load(_stored_map_path(name, params, y)) as data:
            stored = {key: np.array(data[key], dtype=np.float64) for key in ("means", "stds", "ratio")}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None
    shape_ok = stored["ratio"].shape == (MAP_SHAPE[1], MAP_SHAPE[0]) == (stored["stds"].size, stored["means"].size)
    return stored if shape_ok and np.isfinite(stored["ratio"]).all() else None


def store_ratio_map(name: str, params: dict, y, data: dict) -> bool:
    """Keep ``data`` (:func:`ratio_map` of likelihood ``name`` with ``params`` at ``y``) on disk for
    :func:`stored_ratio_map`, atomically; returns whether it was written (a read-only
    installation keeps nothing)."""
    from qpviz import cache  # noqa: PLC0415

    try:
        cache.save_npz(_stored_map_path(name, params, y), **{key: np.asarray(data[key]) for key in ("means", "stds", "ratio")})
    except OSError:
        return False
    return True


def compute(lik: Likelihood, y: float, cavity_mean: float, cavity_std: float, engine: str = "auto") -> ExplorerResult:
    """The data of views (a)-(c) for one tilted distribution (``engine``: module docstring)."""
    _check_engine(engine)
    var = cavity_std**2
    tilted_dist = None
    if engine == "numpy":
        ep, qp, tilted_dist = _numpy_projections(lik, y, cavity_mean, var)
    else:
        ep = qpviz.project(lik, y, cavity_mean, var, method="ep")
        qp = qpviz.project(lik, y, cavity_mean, var, method="qp")
    if not (np.isfinite(ep.var) and np.isfinite(qp.var) and ep.var > 0 and qp.var > 0):
        raise ArithmeticError(
            f"the projection failed for y={y:g}, cavity N({cavity_mean:g}, {cavity_std:g}^2) "
            f"(var_EP={float(ep.var):g}, var_QP={float(qp.var):g}); try a cavity closer to the data"
        )
    return ExplorerResult(
        densities=densities(lik, y, cavity_mean, cavity_std, ep, qp),
        quantiles=quantiles(lik, y, cavity_mean, cavity_std, ep, qp, engine=engine),
        summary=summary(lik, y, cavity_mean, cavity_std, ep, qp, tilted_dist, engine=engine),
    )
