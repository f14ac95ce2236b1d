"""GP classification in 2-D: data presets and every method's predictive maps on a grid.

Pure computation for the "GP 2-D" page (app/gp_2d.py), callable without a browser:

* :func:`make_preset` draws one of :data:`PRESETS` (moons, XOR, circles, two Gaussians, banana)
  with a seeded NumPy generator; labels are -1/+1 as the binary likelihoods expect;
* :func:`fit_grid` fits each method with :func:`qpviz.fit` and predicts, in one vectorised call
  per method, the latent mean and variance and p(y_* = +1 | x_*) on a square grid, plus the
  difference map var_QP - var_EP (QP paper Figure 1 / Theorem 2: for the probit likelihood QP's
  latent variances are never above EP's);
* :func:`mcmc_grid`: the MCMC reference's maps on the same grid (elliptical-slice chains, with
  progress and cancel between chains), and :func:`distances_to_mcmc`: each method's mean
  |p - p_MCMC| and mean W2 of the latent marginals to the reference's, beside the reference's
  own Monte Carlo noise; :func:`sd_comparison`: each method's latent sd over the reference's on
  the grid (:mod:`qpviz.gpdemo.sd_ratio`: where a method over-estimates the variance);
* :func:`grid_csv` writes a fit's grid numbers as CSV.
"""
from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from qpviz.gpdemo import sd_ratio
from qpviz.gpdemo.method_threads import fit_each_recording
from qpviz.gpdemo.oned import sample_chains, w2_marginals
from qpviz.inference.dense import DensePrior
from qpviz.inference.fit import METHODS, OPTIONS, fit
from qpviz.likelihoods import likelihood as make_likelihood

__all__ = ["PRESETS", "CLASSES", "DEFAULT_EXTENT", "GridFit", "PER_METHOD_FIELDS", "make_preset", "check_data", "grid_extent",
           "make_grid", "fit_grid", "mcmc_grid", "distances_to_mcmc", "sd_comparison", "grid_csv"]

#: Labels of the two classes (the binary likelihoods' y).
CLASSES = (-1.0, 1.0)
#: The grid always covers at least this square (presets lie in it; clicked points may widen it).
DEFAULT_EXTENT = (-3.0, 3.0, -3.0, 3.0)
#: Room left around the data when it reaches beyond DEFAULT_EXTENT.
EXTENT_MARGIN = 0.5


def _split(n: int) -> tuple[int, int]:
    """Points of class -1 and of class +1 for n points in all (as even as possible)."""
    return n // 2, n - n // 2


def _labelled(neg: np.ndarray, pos: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stack the two classes' points, labels -1 / +1, in a seeded random order."""
    X = np.vstack([neg, pos])
    y = np.concatenate([np.full(len(neg), -1.0), np.full(len(pos), 1.0)])
    order = rng.permutation(len(y))
    return X[order], y[order]


def _moons(n, rng, noise):
    """Two interleaving half circles: (cos t, sin t) and (1 - cos t, 1/2 - sin t), t in [0, pi],
    centred and scaled by 1.6 to fill the plot."""
    n_neg, n_pos = _split(n)
    t_pos, t_neg = rng.uniform(0.0, np.pi, n_pos), rng.uniform(0.0, np.pi, n_neg)
    pos = np.column_stack([np.cos(t_pos), np.sin(t_pos)])
    neg = np.column_stack([1.0 - np.cos(t_neg), 0.5 - np.sin(t_neg)])
    scale = lambda pts: 1.6 * (pts - [0.5, 0.25]) + rng.normal(0.0, noise, pts.shape)  # noqa: E731
    return _labelled(scale(neg), scale(pos), rng)


def _xor(n, rng, noise):
    """Uniform points in [-2.5, 2.5]^2, class +1 where x1 x2 > 0 (the label of the noisy point's
    quadrant before noise moves it)."""
    X = rng.uniform(-2.5, 2.5, (n, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    return X + rng.normal(0.0, noise, X.shape), y


def _circles(n, rng, noise):
    """Class +1 on a circle of radius 1, class -1 on a circle of radius 2.4 around it."""
    n_neg, n_pos = _split(n)
    ring = lambda count, radius: radius * np.column_stack(  # noqa: E731
        [np.cos(a := rng.uniform(0.0, 2 * np.pi, count)), np.sin(a)]) + rng.normal(0.0, noise, (count, 2))
    return _labelled(ring(n_neg, 2.4), ring(n_pos, 1.0), rng)


def _gaussians(n, rng, noise):
    """Two isotropic Gaussians, means (-1, -1) and (1, 1), standard deviation 0.6 + noise."""
    n_neg, n_pos = _split(n)
    std = 0.6 + noise
    return _labelled(rng.normal([-1.0, -1.0], std, (n_neg, 2)), rng.normal([1.0, 1.0], std, (n_pos, 2)), rng)


def _banana(n, rng, noise):
    """Two nested parabolic bands x2 = 0.4 x1^2 + c (c = -2.1 for class +1, -0.6 for class -1),
    x1 ~ N(0, 1.1^2): a curved boundary between them."""
    n_neg, n_pos = _split(n)

    def band(count, offset):
        x1 = np.clip(rng.normal(0.0, 1.1, count), -2.6, 2.6)
        return np.column_stack([x1, 0.4 * x1**2 + offset]) + rng.normal(0.0, noise, (count, 2))

    return _labelled(band(n_neg, -0.6), band(n_pos, -2.1), rng)


#: Preset name -> (generator(n, rng, noise), default noise, one line saying what it shows).
PRESETS = {
    "moons": (_moons, 0.15, "two interleaved half circles: a curved boundary the kernel must bend around"),
    "xor": (_xor, 0.0, "XOR quadrants: no single line separates the classes; probabilities near 1/2 at the axes"),
    "circles": (_circles, 0.15, "one class inside a ring of the other: a closed boundary"),
    "gaussians": (_gaussians, 0.2, "two overlapping blobs: the boundary region is uncertain, p near 1/2"),
    "banana": (_banana, 0.2, "nested parabolic bands: a thin curved gap between the classes"),
}


def make_preset(name: str, n: int = 100, seed: int = 0, noise: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Inputs X (n, 2) and labels y in {-1, +1} of preset ``name``, drawn with ``seed``.

    ``noise`` is the standard deviation of the Gaussian jitter added to the points (each preset
    has its own default).
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2 (one point per class at least); got {n!r}")
    generator, default_noise, _ = PRESETS[name]
    noise = default_noise if noise is None else float(noise)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be >= 0 and finite; got {noise!r}")
    return generator(int(n), np.random.default_rng(seed), noise)


def check_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """X as a finite (N, 2) float array and y as -1/+1 labels with both classes present."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X must have shape (N, 2); got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}); got shape {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("every input must be a finite number")
    if not np.all(np.isin(y, CLASSES)):
        raise ValueError("labels must be -1 or +1")
    missing = [f"{c:+g}" for c in CLASSES if not np.any(y == c)]
    if missing:
        raise ValueError(f"only one class is present: add a point of class {missing[0]} "
                         "(a classifier needs both classes)")
    return X, y


def grid_extent(X) -> tuple[float, float, float, float]:
    """(x1 min, x1 max, x2 min, x2 max): DEFAULT_EXTENT, widened to keep every point inside
    with EXTENT_MARGIN to spare."""
    X = np.asarray(X, dtype=float).reshape(-1, 2)
    lo = np.minimum([DEFAULT_EXTENT[0], DEFAULT_EXTENT[2]], X.min(axis=0, initial=np.inf) - EXTENT_MARGIN)
    hi = np.maximum([DEFAULT_EXTENT[1], DEFAULT_EXTENT[3]], X.max(axis=0, initial=-np.inf) + EXTENT_MARGIN)
    return float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])


@dataclass
class GridFit:
    """Every method's maps on the grid ``x1`` x ``x2``; arrays are indexed [x2 index, x1 index]
    (rows follow x2, as an image is drawn).

    ``proba[m]`` = p(y_* = +1 | x_*), ``mean[m]`` / ``var[m]`` the latent mean and variance;
    ``var_difference`` = var_QP - var_EP (None unless both were fitted); ``seconds[m]`` the time
    of the fit and of the grid prediction; ``notes`` the warnings the fits raised;
    ``mcmc_noise`` the MCMC reference's own Monte Carlo error (:func:`mcmc_grid`), {} without it;
    ``sites[m]`` = (tau, nu) of a method whose posterior has sites, None for the others: the next
    EP / QP fit of edited data or other hyper-parameters starts from them (:func:`fit_grid`'s ``inits``).
    """

    x1: np.ndarray
    x2: np.ndarray
    X: np.ndarray
    y: np.ndarray
    likelihood: str
    kernel: object
    proba: dict = field(default_factory=dict)
    mean: dict = field(default_factory=dict)
    var: dict = field(default_factory=dict)
    log_evidence: dict = field(default_factory=dict)
    converged: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    sites: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    var_difference: np.ndarray | None = None
    mcmc_noise: dict = field(default_factory=dict)
    #: the MCMC reference's diagnostics: "rhat", "ess", "seconds", "note", "status" (text for the table)
    mcmc_diagnostics: dict = field(default_factory=dict)

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.proba)


#: GridFit's fields that hold one entry per method.
PER_METHOD_FIELDS = ("proba", "mean", "var", "log_evidence", "converged", "seconds", "sites")


def make_grid(X, grid_size: int = 60, extent=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x1, x2, points): ``grid_size`` values along each axis of ``extent`` (default
    :func:`grid_extent` of X) and the grid's points (grid_size^2, 2), row-major: x2 rows, x1 columns."""
    if int(grid_size) != grid_size or grid_size < 2:
        raise ValueError(f"grid_size must be an integer >= 2; got {grid_size!r}")
    x1_lo, x1_hi, x2_lo, x2_hi = grid_extent(X) if extent is None else extent
    x1, x2 = np.linspace(x1_lo, x1_hi, int(grid_size)), np.linspace(x2_lo, x2_hi, int(grid_size))
    return x1, x2, np.column_stack([np.tile(x1, len(x2)), np.repeat(x2, len(x1))])


def fit_grid(X, y, kernel, methods=("ep", "qp"), grid_size: int = 60, likelihood="probit", extent=None,
             inits=None, **options) -> GridFit:
    """Fit each of ``methods`` to (X, y) with ``likelihood`` and ``kernel`` (no hyper-parameter
    optimisation) and predict on a ``grid_size`` x ``grid_size`` grid over ``extent``
    (default :func:`grid_extent`).

    Per method: q(f_*) = N(m_*, v_*) from one vectorised ``predict_f`` call (R&W eqs. 3.60-3.61)
    and p(y_* = +1 | x_*) = int p(+1 | f) q(f_*) df (probit: Phi(m_* / sqrt(1 + v_*))).
    ``options`` go to every method that accepts them (:data:`qpviz.fit.OPTIONS`); ``inits``
    (method -> (tau, nu)) are starting sites, e.g. the last fit's (:func:`qpviz.gpdemo.warm_start.carried_sites`),
    for the methods that take ``init`` (EP, QP; VB and Laplace start as usual).
    Warnings the fits raise (e.g. no convergence) are collected in ``notes`` instead of being raised.
    """
    X, y = check_data(X, y)
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {METHODS}")
    if not methods:
        raise ValueError("choose at least one method to fit")
    x1, x2, grid = make_grid(X, grid_size, extent)
    shape = (len(x2), len(x1))
    name = likelihood if isinstance(likelihood, str) else likelihood.name
    result = GridFit(x1=x1, x2=x2, X=X, y=y, likelihood=name, kernel=kernel)

    cross = []  # K(X, grid) and diag K(grid), computed once for every method that can share them
    cross_lock = threading.Lock()

    def fit_one(method):
        accepted = {k: v for k, v in options.items() if k in OPTIONS[method]}
        if (inits or {}).get(method) is not None and "init" in OPTIONS[method]:
            accepted["init"] = inits[method]
        start = time.perf_counter()
        posterior = fit(X, y, likelihood, kernel, method=method, **accepted)
        fitted = time.perf_counter()
        state = getattr(posterior, "state", None)
        if hasattr(state, "predict_from_cross") and state.prior.kernel is kernel:
            with cross_lock:  # the first method to get here computes it (the methods may run at once)
                if not cross:
                    cross.extend(state.prior.cross_covariance(grid))
            mean, var = state.predict_from_cross(*cross)
        else:
            mean, var = posterior.predict_f(grid)
        return posterior, mean, var, (fitted - start, time.perf_counter() - fitted)

    # the methods at once on two cores for larger N (qpviz.gpdemo.method_threads), each one's warnings kept
    for method, ((posterior, mean, var, seconds), caught) in fit_each_recording(fit_one, methods, len(y)).items():
        result.mean[method] = mean.reshape(shape)
        result.var[method] = var.reshape(shape)
        result.proba[method] = np.clip(posterior.likelihood.predictive(1.0, mean, var), 0.0, 1.0).reshape(shape)
        result.log_evidence[method] = float(posterior.log_marginal_likelihood)
        result.converged[method] = bool(posterior.converged)
        result.seconds[method] = seconds
        tau, nu = getattr(posterior, "site_precision", None), getattr(posterior, "site_nu", None)
        result.sites[method] = None if tau is None or nu is None else (np.array(tau, float), np.array(nu, float))
        result.notes += [f"{method.upper()}: {w.message}" for w in caught]
    if "ep" in methods and "qp" in methods:
        result.var_difference = result.var["qp"] - result.var["ep"]
    return result


#: Samples projected onto the grid at once (bounds the memory: chunk x grid points floats).
PROJECTION_CHUNK = 250


def _projected_sums(P: np.ndarray, cond_var: np.ndarray, likelihood, samples: np.ndarray) -> np.ndarray:
    """Sums over ``samples`` f^(s) (S, N) of g_s = E[f_* | f^(s)] = P^T f^(s), of g_s^2 and of
    p(y_* = +1 | f^(s)) = int p(+1 | f_*) N(f_* | g_s, c) df_* at each grid point, where
    f_* | f ~ N(P^T f, c) (P = K^-1 k_*, c = k_** - diag(k_*^T K^-1 k_*): R&W eq. 2.19)."""
    totals = np.zeros((3, P.shape[1]))
    for start in range(0, samples.shape[0], PROJECTION_CHUNK):
        projected = samples[start:start + PROJECTION_CHUNK] @ P
        totals[0] += projected.sum(axis=0)
        totals[1] += np.square(projected).sum(axis=0)
        totals[2] += likelihood.predictive(1.0, projected, cond_var).sum(axis=0)
    return totals


def mcmc_grid(X, y, kernel, grid_size: int = 60, likelihood="probit", extent=None, chains: int = 4,
              n_samples: int = 1000, burn_in: int = 1000, thin: int = 20, on_progress=None, cancel=None,
              time_budget: float | None = None) -> GridFit:
    """The MCMC reference's maps on the grid of :func:`fit_grid` (method ``"mcmc"``).

    ``chains`` elliptical-slice chains of f | y at the data (:func:`qpviz.gpdemo.oned.sample_chains`:
    progress and cancel between chains), pooled. At each grid point, with g_s = E[f_* | f^(s)]
    and c = Var[f_* | f] (:func:`_projected_sums`): mean = avg_s g_s, var = c + var_s g_s, and
    p(y_* = +1 | x_*) = avg_s int p(+1 | f) N(f | g_s, c) df, the sample average of the exact
    predictive (not a Gaussian's). ``mcmc_noise`` estimates the reference's Monte Carlo error from
    the two halves A, B of its chains: "proba" = mean |p_A - p_B| / 2 and "w2" = mean W2(A, B) / 2
    over the grid (for independent halves, |p_A - p_B| / 2 has the expected size of the pooled
    average's error). ``converged["mcmc"]`` and ``mcmc_diagnostics`` report split R-hat and bulk
    ESS over the latents at the data (:func:`qpviz.inference.mcmc.run_chains`; sampling stops
    after ``time_budget`` seconds and says so).
    """
    X, y = check_data(X, y)
    lik = make_likelihood(likelihood) if isinstance(likelihood, str) else likelihood
    x1, x2, grid = make_grid(X, grid_size, extent)
    shape = (len(x2), len(x1))
    prior = DensePrior(kernel, X)
    start = time.perf_counter()
    run = sample_chains(prior, lik, lik.check_y(y), chains, n_samples, burn_in, thin, on_progress, cancel, time_budget)
    fitted = time.perf_counter()
    samples = list(run.samples)  # the chains finished within the time budget (>= 1)
    split = max(len(samples) // 2, 1)
    halves = [np.concatenate(samples[:split]), np.concatenate(samples[split:] or samples)]
    P, cond_var = prior.conditional(grid)
    sums = [_projected_sums(P, cond_var, lik, half) for half in halves]

    def moments(totals, count):
        mean = totals[0] / count
        return mean, cond_var + np.maximum(totals[1] / count - mean**2, 0.0), totals[2] / count

    (mean_a, var_a, p_a), (mean_b, var_b, p_b) = (moments(t, len(h)) for t, h in zip(sums, halves))
    mean, var, proba = moments(sums[0] + sums[1], len(halves[0]) + len(halves[1]))
    result = GridFit(x1=x1, x2=x2, X=X, y=y, likelihood=lik.name, kernel=kernel)
    result.mean["mcmc"], result.var["mcmc"] = mean.reshape(shape), var.reshape(shape)
    result.proba["mcmc"] = np.clip(proba, 0.0, 1.0).reshape(shape)
    result.log_evidence["mcmc"] = float("nan")  # sampling gives no evidence
    result.converged["mcmc"] = run.converged
    result.seconds["mcmc"] = (fitted - start, time.perf_counter() - fitted)
    result.sites["mcmc"] = None
    result.mcmc_diagnostics = {"rhat": run.rhat, "ess": run.ess, "seconds": run.seconds, "note": run.note,
                               "status": run.status()}
    result.mcmc_noise = {"proba": float(np.mean(np.abs(p_a - p_b))) / 2,
                         "w2": float(np.mean(w2_marginals(mean_a, var_a, mean_b, var_b))) / 2,
                         "samples": sum(len(chain) for chain in samples)}
    return result


def distances_to_mcmc(result: GridFit) -> dict[str, tuple[float, float]]:
    """method -> (mean over the grid of |p - p_MCMC|, mean over the grid of W2 between the latent
    marginals N(m, v) and the reference's N(m_MCMC, v_MCMC)), W2^2 = (m_1 - m_2)^2 + (s_1 - s_2)^2;
    {} without the reference."""
    if "mcmc" not in result.proba:
        return {}
    reference = (result.proba["mcmc"], result.mean["mcmc"], result.var["mcmc"])
    return {m: (float(np.mean(np.abs(result.proba[m] - reference[0]))),
                float(np.mean(w2_marginals(result.mean[m], result.var[m], reference[1], reference[2]))))
            for m in result.methods if m != "mcmc"}


def sd_comparison(result: GridFit, methods=None) -> sd_ratio.SdComparison | None:
    """sd_method / sd_MCMC on the grid for each of ``methods`` (default: every fitted one but
    MCMC), summarised over the data's bounding box, with the reference's ESS and convergence
    (:func:`qpviz.gpdemo.sd_ratio.compare`; ``ratios[m]`` indexed [x2, x1] as the maps); None
    without the reference or another method."""
    if "mcmc" not in result.var:
        return None
    chosen = [m for m in (result.methods if methods is None else methods) if m != "mcmc" and m in result.var]
    if not chosen:
        return None
    points = np.column_stack([np.tile(result.x1, len(result.x2)), np.repeat(result.x2, len(result.x1))])  # as make_grid
    diagnostics = result.mcmc_diagnostics
    return sd_ratio.compare({m: result.var[m] for m in chosen}, result.var["mcmc"], points, result.X,
                            diagnostics.get("ess", float("nan")), result.converged.get("mcmc", True),
                            diagnostics.get("status", ""))


def grid_csv(result: GridFit) -> str:
    """The grid numbers as CSV: x1, x2, then p_<m>, mean_<m>, var_<m> per method and
    var_qp_minus_var_ep when both were fitted; one row per grid point."""
    x1, x2 = np.meshgrid(result.x1, result.x2)
    columns = {"x1": x1, "x2": x2}
    for m in result.methods:
        columns.update({f"p_{m}": result.proba[m], f"mean_{m}": result.mean[m], f"var_{m}": result.var[m]})
    if result.var_difference is not None:
        columns["var_qp_minus_var_ep"] = result.var_difference
    table = np.column_stack([np.ravel(c) for c in columns.values()])
    out = io.StringIO()
    np.savetxt(out, table, delimiter=",", header=",".join(columns), comments="", fmt="%.10g")
    return out.getvalue()
