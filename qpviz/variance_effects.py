"""Variance effects: EP vs QP predictive latent variances on held-out points (QP paper, Figure 1).

For one dataset, one split (:func:`qpviz.reproduce.protocol.split`: ``n_folds`` random folds from
``seed``, fold ``fold`` held out, features standardised on the training part) this fits on the
training part, as the paper's sec. 6 does,

* EP, with an isotropic RBF kernel (the authors' ``GPy.kern.RBF(d)``, variance and length scale
  starting at 1) whose hyper-parameters maximise EP's evidence if ``optimise`` (eq. 4);
* QP with EP's kernel (Alg. 1 line 15), so that the two differ only in the projection;
* VB on its own bound (``method="vb", optimise=True``; sec. 6) and Laplace with EP's kernel;

and returns, per held-out point x_*, the predictive latent variances var_EP(x_*) and var_QP(x_*)
of q(f_* | x_*, D) = N(mu_*, sigma_*^2) with sigma_*^2 = k_** - k_*^T (K + Sigma~)^-1 k_* (eq. 3,
each method's own site variances Sigma~), their ratio var_QP / var_EP (the paper's Figure 1 finds it <= 1 at every test point: each QP
projection's variance is at most EP's, Theorem 2, so QP's sites are more precise), and per
method TE and NTLL (:func:`qpviz.inference.metrics.evaluate`, sec. 6.1).

Fits take seconds (optimisation on the large datasets tens of seconds): :func:`variances_for` is
meant to run in a thread pool. It takes a ``cancel`` event (checked before every optimiser
evaluation and between the methods) and a ``progress`` callback, and keeps its results in an
in-process cache keyed by (data, split, settings), so flipping back to a dataset is instant.
"""
from __future__ import annotations

import hashlib
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from qpviz.gpdemo import jobs

__all__ = ["REAL_DATASETS", "SYNTHETIC", "METHODS", "Settings", "VarianceResult", "Skipped", "FitCancelled",
           "held_out_variances", "variances_for", "synthetic_data", "cached", "cache_key", "clear_cache", "result_csv", "CACHE"]

#: The classification datasets of the QP paper's Table 1 (qpviz.reproduce.datasets, "paper" form).
REAL_DATASETS = ("ionosphere", "cancer", "pima", "crabs", "sonar", "glass", "wine1", "wine2", "wine3")
#: Stand-ins for the GP 1-D / 2-D pages' current data (seeded, see :func:`synthetic_data`).
SYNTHETIC = ("synthetic 1-D", "synthetic 2-D")
#: The methods fitted, in table order.
METHODS = ("ep", "qp", "vb", "laplace")
#: Results kept in the in-process cache (each holds a few arrays of test-set size).
CACHE_SIZE = 64


class FitCancelled(Exception):
    """The caller set the cancel event while the fits ran."""


@dataclass(frozen=True)
class Settings:
    """The split and fit settings of one run (part of the cache key)."""

    seed: int = 0
    n_folds: int = 10
    fold: int = 0
    optimise: bool = True
    max_opt_iter: int = 100
    tol: float = 1e-6

    def __post_init__(self):
        if self.n_folds < 2:
            raise ValueError(f"need at least 2 folds; got n_folds = {self.n_folds}")
        if not 0 <= self.fold < self.n_folds:
            raise ValueError(f"fold must be in 0..{self.n_folds - 1}; got {self.fold}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0; got {self.seed}")


@dataclass
class VarianceResult:
    """What the Variance-effects views show for one dataset and split.

    ``var_ep``, ``var_qp``: predictive latent variances of the held-out points; ``ratio`` =
    var_qp / var_ep; ``scores[method]`` = {"test_error", "ntll"}; ``seconds[method]``: fit time;
    ``hyperparameters``: EP's kernel (QP's and Laplace's too); ``warnings``: every warning raised;
    ``skipped[method]``: why VB or Laplace could not be fitted to these data (its scores are NaN).
    """

    name: str
    settings: Settings
    n_train: int
    n_test: int
    n_features: int
    var_ep: np.ndarray
    var_qp: np.ndarray
    scores: dict
    seconds: dict
    hyperparameters: dict
    vb_hyperparameters: dict
    warnings: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)

    @property
    def ratio(self) -> np.ndarray:
        """var_QP / var_EP per held-out point."""
        return self.var_qp / self.var_ep

    @property
    def n_above(self) -> int:
        """Held-out points where QP reports more latent variance than EP (Figure 1 says none)."""
        return int(np.sum(self.var_qp > self.var_ep))


@dataclass(frozen=True)
class Skipped:
    """A dataset that could not be used (e.g. its file is missing); ``message`` says why."""

    name: str
    message: str


def _prior_class():
    """DensePrior subclass that checks a cancel event whenever the optimiser tries a new kernel."""
    from qpviz.inference.dense import DensePrior  # noqa: PLC0415 - keeps this module's import light

    class CancellablePrior(DensePrior):
        """DensePrior whose ``with_kernel`` (called once per optimiser evaluation) raises
        :class:`FitCancelled` once ``cancel`` is set and reports the evaluation to ``progress``."""

        def __init__(self, kernel, X, jitter=None, *, cancel=None, progress=None, stage="", count=None):
            super().__init__(kernel, X, jitter)
            self.cancel, self.progress, self.stage = cancel, progress, stage
            self.count = count if count is not None else [0]

        def with_kernel(self, kernel):
            _check(self.cancel)
            self.count[0] += 1
            if self.progress is not None:
                self.progress(f"{self.stage}: optimiser evaluation {self.count[0]}")
            return CancellablePrior(kernel, self.X, self.jitter, cancel=self.cancel, progress=self.progress,
                                    stage=self.stage, count=self.count)

    return CancellablePrior


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise FitCancelled("cancelled")


class _Dataset:
    """The two attributes protocol.split reads (name, X, y) of data a caller passes."""

    def __init__(self, name, X, y):
        self.name, self.X, self.y = name, X, y


def held_out_variances(X, y, likelihood="probit", kernel=None, settings: Settings = Settings(), *,
                       name: str = "current data", cancel: threading.Event | None = None,
                       progress=None) -> VarianceResult:
    """Split (X, y), fit EP, QP, VB and Laplace on the training part, evaluate on the held-out part.

    ``kernel`` defaults to the paper's isotropic RBF(variance=1, lengthscale=1) (the start of the
    optimisation when ``settings.optimise``). ``cancel``: a threading.Event; once set the run stops
    at the next optimiser evaluation or method (raises :class:`FitCancelled`). ``progress(text)``
    is called with what is being fitted. Not cached (see :func:`variances_for`).

    EP and QP must fit (their errors are raised). VB or Laplace may not apply to the data's
    likelihood (VB needs a finite log-likelihood, Laplace a twice-differentiable one): such a
    method is reported in ``result.skipped`` with the reason, and its scores are NaN.
    """
    import qpviz  # noqa: PLC0415 - heavy (numba); imported when a fit is asked for
    from qpviz.inference import metrics  # noqa: PLC0415
    from qpviz.reproduce.protocol import Task, split  # noqa: PLC0415

    X = np.asarray(X, float)
    if X.ndim == 1:
        X = X[:, None]
    y = np.asarray(y, float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be m x n and y have m entries; got X {X.shape} and y {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite (no NaN or inf)")
    if X.shape[0] < 2 * settings.n_folds:
        raise ValueError(f"{X.shape[0]} rows are too few for {settings.n_folds} folds; need at least {2 * settings.n_folds}")
    task = Task(name, "paper", settings.seed, settings.fold, settings.n_folds, settings.max_opt_iter)
    X_train, y_train, X_test, y_test = split(_Dataset(name, X, y), task)
    lik = qpviz.likelihood(likelihood) if isinstance(likelihood, str) else likelihood
    if lik.support == "binary" and len(np.unique(y_train)) < 2:
        raise ValueError("the training part holds one class only; choose another seed or more data")
    kernel = kernel if kernel is not None else qpviz.kernels.RBF(variance=1.0, lengthscale=1.0)
    prior_class = _prior_class()
    report = progress or (lambda text: None)
    common = {"max_opt_iter": settings.max_opt_iter, "tol": settings.tol}
    posts, seconds, skipped = {}, {}, {}

    def timed(method, stage, fit_kernel, optimise):
        _check(cancel)
        report(stage)
        prior = prior_class(fit_kernel, X_train, cancel=cancel, progress=report, stage=stage)
        start = time.perf_counter()
        try:
            posts[method] = qpviz.fit(X_train, y_train, lik, fit_kernel, method=method, optimise=optimise,
                                      prior=prior, **common)
        except ValueError as exc:
            if method in ("ep", "qp"):
                raise
            skipped[method] = str(exc)  # e.g. Laplace on a kinked likelihood: say so, keep EP and QP
        seconds[method] = time.perf_counter() - start

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimise = settings.optimise
        timed("ep", "EP" + (" (optimising its evidence)" if optimise else ""), kernel, optimise)
        fitted = posts["ep"].kernel
        timed("qp", "QP with EP's kernel", fitted, False)
        timed("vb", "VB" + (" (optimising its own bound)" if optimise else ""), kernel, optimise)
        common.pop("tol")  # Laplace's Newton iterations keep their own tolerance
        timed("laplace", "Laplace with EP's kernel", fitted, False)
        scores = {m: metrics.evaluate(posts[m], X_test, y_test) if m in posts
                  else {"test_error": float("nan"), "ntll": float("nan")} for m in METHODS}
        var_ep = posts["ep"].predict_f(X_test)[1]
        var_qp = posts["qp"].predict_f(X_test)[1]
    return VarianceResult(
        name=name, settings=settings, n_train=len(y_train), n_test=len(y_test), n_features=X.shape[1],
        var_ep=np.asarray(var_ep, float), var_qp=np.asarray(var_qp, float), scores=scores, seconds=seconds,
        hyperparameters=dict(posts["ep"].hyperparameters),
        vb_hyperparameters=dict(posts["vb"].hyperparameters) if "vb" in posts else {},
        warnings=[f"{w.category.__name__}: {w.message}" for w in caught
                  if w.category.__name__ != "NumbaExperimentalFeatureWarning"],
        skipped=skipped,
    )


def synthetic_data(name: str, m: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stand-ins for the GP pages' current data (labels -1/+1).

    ``"synthetic 1-D"``: x ~ U(-3, 3), y = sign(sin 2x), each label flipped with probability 0.1;
    ``"synthetic 2-D"``: two interleaved half-moons with N(0, 0.2^2) noise.
    """
    rng = np.random.default_rng(seed)
    if name == "synthetic 1-D":
        x = rng.uniform(-3.0, 3.0, m)
        y = np.where(np.sin(2.0 * x) >= 0, 1.0, -1.0)
        y[rng.random(m) < 0.1] *= -1.0
        return x[:, None], y
    if name == "synthetic 2-D":
        t = rng.uniform(0.0, np.pi, m)
        upper = np.arange(m) % 2 == 0
        X = np.where(upper[:, None], np.c_[np.cos(t), np.sin(t)], np.c_[1.0 - np.cos(t), 0.5 - np.sin(t)])
        return X + rng.normal(0.0, 0.2, X.shape), np.where(upper, 1.0, -1.0)
    raise ValueError(f"unknown synthetic data {name!r}; choose from {SYNTHETIC}")


#: Results of :func:`variances_for` by :func:`cache_key` (thread safe: the job pool's threads store them).
CACHE = jobs.LRUCache(CACHE_SIZE)


def _params_key(obj) -> tuple:
    """A likelihood or kernel object as its class and parameter values (equal models, equal keys)."""
    return type(obj).__name__, tuple(sorted(obj.params.items()))


def _data_key(X, y, likelihood, kernel) -> tuple:
    digest = hashlib.sha1(np.ascontiguousarray(X, float).tobytes())
    digest.update(np.ascontiguousarray(y, float).tobytes())
    return (digest.hexdigest(), likelihood if isinstance(likelihood, str) else _params_key(likelihood),
            None if kernel is None else _params_key(kernel))


def cache_key(name, settings, X=None, y=None, likelihood="probit", kernel=None, data_dir=None) -> tuple:
    """The key of :func:`variances_for`'s result with these arguments (the arrays by their content,
    the likelihood and kernel by their parameters): equal keys, equal fits."""
    return (name, settings, None if X is None else _data_key(X, y, likelihood, kernel),
            None if data_dir is None else str(data_dir))


def cached(name: str, settings: Settings, X=None, y=None, likelihood="probit", kernel=None, data_dir=None):
    """The cached result of :func:`variances_for` with these arguments, or None (no fit)."""
    return CACHE.get_recent(cache_key(name, settings, X, y, likelihood, kernel, data_dir))


def clear_cache() -> None:
    CACHE.clear()


def variances_for(name: str, settings: Settings = Settings(), X=None, y=None, likelihood="probit", kernel=None, *,
                  cancel: threading.Event | None = None, progress=None, data_dir=None):
    """:func:`held_out_variances` of dataset ``name``, cached in-process; thread-pool safe.

    ``name``: one of :data:`REAL_DATASETS` (loaded with ``qpviz.reproduce.datasets.load(name,
    "paper")``), one of :data:`SYNTHETIC`, or any label for the caller's own (X, y). A real dataset
    whose file is missing gives a :class:`Skipped` with the message (never an exception).
    Raises :class:`FitCancelled` if ``cancel`` is set during the fits (nothing is cached then).
    ``likelihood`` and ``kernel`` (the start of the optimisation) may be objects (the GP pages').
    """
    key = cache_key(name, settings, X, y, likelihood, kernel, data_dir)
    done = CACHE.get_recent(key)
    if done is not None:
        return done
    if X is None and name in REAL_DATASETS:
        from qpviz.reproduce import datasets  # noqa: PLC0415

        try:
            data = datasets.load(name, "paper", data_dir=data_dir)
        except datasets.DatasetMissing as exc:
            return Skipped(name, f"{name} skipped: {exc}. Or choose another dataset.")
        X, y, likelihood = data.X, data.y, data.likelihood
    elif X is None and name in SYNTHETIC:
        X, y = synthetic_data(name)
    elif X is None:
        raise ValueError(f"unknown dataset {name!r}: pass its X and y, or choose from {REAL_DATASETS + SYNTHETIC}")
    result = held_out_variances(X, y, likelihood, kernel, settings=settings, name=name, cancel=cancel,
                                progress=progress)
    CACHE.put(key, result)
    return result


def result_csv(result: VarianceResult | None) -> str:
    """``result`` as CSV: one row per held-out point (var_EP, var_QP, their ratio), then TE / NTLL /
    fit seconds per method ("no fit yet" without a result)."""
    r = result
    if r is None:
        return "no fit yet\n"
    lines = [f"# {r.name}: fold 1 of {r.settings.n_folds} held out, seed {r.settings.seed}, "
             f"optimise {r.settings.optimise}", "point,var_ep,var_qp,ratio"]
    lines += [f"{i},{e!r},{q!r},{q / e!r}" for i, (e, q) in enumerate(zip(r.var_ep.tolist(), r.var_qp.tolist()))]
    lines += ["", "method,test_error,ntll,seconds"]
    lines += [f"{m},{r.scores[m]['test_error']!r},{r.scores[m]['ntll']!r},{r.seconds[m]!r}" for m in METHODS]
    return "\n".join(lines) + "\n"
