"""Scalable variational GP classification (SVI; Hensman, Matthews & Ghahramani 2015), the
comparator of paper 003 (its eqs. 5-8; issue 13).

With M inducing values u = f(Z) and q(u) = N(m, S), S = L L^T (L lower triangular, its diagonal
stored on the log scale), the evidence has the lower bound (paper 003 eq. 8)

    log p(y) >= sum_n E_{q(f_n)}[log p(y_n | f_n)] - KL(q(u) || p(u)),

    q(f_n) = N(mu_n, s2_n),  mu_n = k_n^T K_uu^-1 m,
                             s2_n = k_nn - k_n^T K_uu^-1 k_n + k_n^T K_uu^-1 S K_uu^-1 k_n,

and predictions use the same marginal at a new input (paper 003 eq. 5). ``whiten=True`` (the
default) parameterises u = L_uu v with L_uu L_uu^T = K_uu and q(v) = N(m, S), p(v) = N(0, I):
then mu_n = a_n^T m, s2_n = k_nn - |a_n|^2 + |L^T a_n|^2 with a_n = L_uu^-1 k_n, and the KL no
longer depends on the kernel, which conditions the optimisation much better.

The data term is a sum over points, so it is computed by a pure function of one shard
(:func:`shard_terms`: the shard's X, y and the broadcast parameters -> the value and its
gradients in m, L, log theta and Z) that a distributed engine can map over data shards and sum;
minibatches scale the sum by N / |batch| (an unbiased estimate). Gradients are analytic: the
chain from the covariances to log theta and Z is :func:`qpviz.inference.inducing.covariance_vjp`,
and the whitened bound passes through the Cholesky factor of K_uu (:func:`cholesky_vjp`).

Training (:func:`fit_svi`): minibatch >= N is batch mode, L-BFGS-B on all parameters (the bound
rises at every iteration); smaller minibatches are stochastic, Adadelta (rho 0.9, eps 1e-5,
paper 003 sec. 4.5) on all parameters, one step per minibatch.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize

from qpviz._blas import small_problem_threads
from qpviz.inference import metrics
from qpviz.inference.distributed import DaskExecutor, prepare_worker, split
from qpviz.inference.hyper import resolve_bounds
from qpviz.inference.inducing import cholesky_kuu, covariance_vjp
from qpviz.inference.options import TrainingOptions, option
from qpviz.inference.posterior import Predictions, TrainingMarginals
from qpviz.inference.svi_params import Packing as _Packing
from qpviz.inference.svi_params import SVIParameters
from qpviz.inference.stochastic import (Adadelta, TrainingRecord, check_positive_int, inducing_problem, minibatches,
                                       steps_per_epoch)
from qpviz.kernels import Kernel, as_inputs

__all__ = ["SVIParameters", "ShardTerms", "shard_terms", "kl_terms", "svi_bound", "cholesky_vjp", "SVIPosterior",
           "fit_svi", "SVI_OPTIONS", "SVIOptions"]

#: rows per shard when the batch bound is summed in-process (memory O(shard_size M))
SHARD_SIZE = 10_000


@dataclass(frozen=True)
class SVIOptions(TrainingOptions):
    """The options of ``qpviz.fit(..., method="svi")`` (:func:`fit_svi`; ``prior`` and
    ``optimise_likelihood`` are refused: SVI builds its own prior and keeps the likelihood fixed)."""

    max_opt_iter: int = option(1000, "L-BFGS-B iterations in batch mode (`minibatch >= N`)")
    inducing: object = option(200, "inducing inputs Z, (M, D), or an int M (K-means centres)")
    minibatch: int = option(200, "points per step (`>= N`: batch L-BFGS-B)")
    epochs: int = option(5, "passes over the data with minibatches")
    seed: int = option(0, "random seed (minibatches; K-means inducing inputs)")
    whiten: bool = option(True, "q(u) in the whitened parametrisation")
    client: object = option(None, "a Dask `Client`, a scheduler address ('tcp://host:8786') or 'local': "
                                  "the data term per worker")
    optimise_inducing: bool | None = option(None, "learn Z too (None: with `optimise`)")
    record_every: int | None = option(None, "steps between history entries (None: about 20 per epoch)")
    shard_size: int = option(SHARD_SIZE, "rows per in-process shard of the batch bound")


#: the options ``qpviz.fit(..., method="svi")`` accepts besides the common ones (:class:`SVIOptions`)
SVI_OPTIONS = SVIOptions.own()


# --------------------------------------------------------------------------------------------
# The bound: one shard's data term, the KL, and their sum
# --------------------------------------------------------------------------------------------

def cholesky_vjp(Luu: np.ndarray, L_bar: np.ndarray) -> np.ndarray:
    """dF/dK (symmetric) from dF/dL for L = chol(K) (Murray 2016, "Differentiation of the Cholesky
    decomposition"): with C = Phi(L^T tril(L_bar)), Phi = lower triangle with halved diagonal,

        dF/dK = L^-T (C + C^T) / 2 L^-1,

    because L^-1 dL = Phi(L^-1 dK L^-T) for every symmetric dK."""
    C = np.tril(Luu.T @ np.tril(L_bar))
    C[np.diag_indices_from(C)] *= 0.5
    sym = 0.5 * (C + C.T)
    right = linalg.solve_triangular(Luu, sym, lower=True, trans="T")          # L^-T sym
    return linalg.solve_triangular(Luu, right.T, lower=True, trans="T").T     # (L^-T (L^-T sym)^T)^T = L^-T sym L^-1


@dataclass
class ShardTerms:
    """One shard's scaled data term sum_n E_q[log p(y_n | f_n)] and its gradients in the broadcast
    parameters (``d_theta`` by log hyper-parameter, ``d_Z`` (M, D)); shards add up."""

    value: float
    d_m: np.ndarray
    d_L: np.ndarray
    d_theta: np.ndarray
    d_Z: np.ndarray

    def __add__(self, other: "ShardTerms") -> "ShardTerms":
        if self.d_m is None:  # values only (gradients=False)
            return ShardTerms(self.value + other.value, None, None, None, None)
        return ShardTerms(self.value + other.value, self.d_m + other.d_m, self.d_L + other.d_L,
                          self.d_theta + other.d_theta, self.d_Z + other.d_Z)


class SVIShard:
    """The points of one data shard (:mod:`.distributed`): in this process or a Dask actor on a
    worker; :meth:`terms` is its part of the data term."""

    def __init__(self, X, y, master_pid: int | None = None):
        self._limits = prepare_worker(master_pid)
        self.X = as_inputs(X)
        self.y = np.ascontiguousarray(y, dtype=np.float64)

    def terms(self, idx, params: SVIParameters, Luu, likelihood, whiten: bool, scale: float, gradients: bool,
              wrt_kernel: bool, chunk: int) -> ShardTerms:
        """:func:`shard_terms` summed over the points ``idx`` (local indices; None: all), in chunks."""
        rows = _shards(self.X.shape[0], chunk) if idx is None else [idx[i:i + chunk] for i in range(0, idx.size, chunk)]
        total = None
        for part in rows:
            terms = shard_terms(self.X[part], self.y[part], params, Luu, likelihood, whiten, scale, gradients,
                                wrt_kernel)
            total = terms if total is None else total + terms
        return total


def _marginals(X, params: SVIParameters, Luu, whiten: bool):
    """(mu, s2, projection, K_uf) of q(f) at the rows of X: projection = L_uu^-1 K_uf (whitened)
    or K_uu^-1 K_uf."""
    Kuf = params.kernel(params.Z, X)
    kff = params.kernel.diag(X)
    if whiten:
        A = linalg.solve_triangular(Luu, Kuf, lower=True)
        LtA = params.L.T @ A
        var = kff - np.einsum("mn,mn->n", A, A) + np.einsum("mn,mn->n", LtA, LtA)
    else:
        A = linalg.cho_solve((Luu, True), Kuf)
        LtA = params.L.T @ A
        var = kff - np.einsum("mn,mn->n", Kuf, A) + np.einsum("mn,mn->n", LtA, LtA)
    return A.T @ params.m, np.maximum(var, 1e-12), A, LtA, Kuf


def shard_terms(X, y, params: SVIParameters, Luu: np.ndarray, likelihood, whiten: bool, scale: float = 1.0,
                gradients: bool = True, wrt_kernel: bool = True) -> ShardTerms:
    """The data term of one shard (X, y), scaled by ``scale`` (N / |batch| for a minibatch), and
    its gradients (module docstring). Pure: depends only on its arguments, so that it can be
    mapped over data shards held by workers.

    With g_mu = dE/dmu, g_s = dE/ds2 per point and P = A diag(g_s) A^T (A = L_uu^-1 K_uf whitened,
    K_uu^-1 K_uf otherwise): dD/dm = A g_mu, dD/dL = 2 P L; dD/dA = m g_mu^T + 2 (S A - B) diag(g_s)
    with B = A (whitened) or K_uf, then chained to K_uf and K_uu (whitened: through the Cholesky
    factor, L_uu^-1 dL_uu; unwhitened: dK_uu = -sym(P + K_uu^-1 dD/dA A^T)) and on to log theta
    and Z by :func:`covariance_vjp` (skipped with ``wrt_kernel=False``: zeros, for a fixed kernel
    and Z, which then need no kernel vector-Jacobian products).
    """
    mu, var, A, LtA, Kuf = _marginals(X, params, Luu, whiten)
    value, g_mu, two_g_var = likelihood.variational_expectations(y, mu, var)
    value = scale * float(np.sum(value))
    if not gradients:
        return ShardTerms(value, None, None, None, None)
    g_mu = scale * g_mu
    g_var = 0.5 * scale * two_g_var
    A_g = A * g_var
    P = A_g @ A.T
    d_m = A @ g_mu
    d_L = np.tril(2.0 * P @ params.L)
    if not wrt_kernel:
        return ShardTerms(value, d_m, d_L, np.zeros(len(params.kernel.param_names)), np.zeros_like(params.Z))
    G_A = np.outer(params.m, g_mu) + 2.0 * (params.L @ (LtA * g_var) - (A_g if whiten else Kuf * g_var))
    if whiten:
        G_uf = linalg.solve_triangular(Luu, G_A, lower=True, trans="T")
        G_uu = cholesky_vjp(Luu, -(G_uf @ A.T))
    else:
        G_uf = linalg.cho_solve((Luu, True), G_A)
        W = P + G_uf @ A.T
        G_uu = -0.5 * (W + W.T)
    d_theta, d_Z, _ = covariance_vjp(params.kernel, X, params.Z, None, G_uf, G_uu, g_var, K_uf=Kuf)
    return ShardTerms(value, d_m, d_L, np.asarray(d_theta, float), d_Z)


def kl_terms(params: SVIParameters, Luu: np.ndarray, whiten: bool):
    """(KL(q || p), dKL/dm, dKL/dL, dKL/dK_uu or None).

    Whitened: KL = 1/2 (|L|_F^2 + |m|^2 - M) - sum log L_ii (no kernel dependence).
    Otherwise KL = 1/2 (tr(K^-1 S) + m^T K^-1 m - M + log|K|) - sum log L_ii and
    dKL/dK = 1/2 (K^-1 - K^-1 (S + m m^T) K^-1)."""
    m, L = params.m, params.L
    M = m.size
    log_diag = np.log(np.diag(L))
    if whiten:
        kl = 0.5 * (np.sum(L * L) + m @ m - M) - np.sum(log_diag)
        return kl, m.copy(), np.tril(L) - np.diag(1.0 / np.diag(L)), None
    Li_L = linalg.solve_triangular(Luu, L, lower=True)
    white = linalg.solve_triangular(Luu, m, lower=True)
    kl = 0.5 * (np.sum(Li_L * Li_L) + white @ white - M) + np.sum(np.log(np.diag(Luu))) - np.sum(log_diag)
    Kinv = linalg.cho_solve((Luu, True), np.eye(M))
    Kinv_m = Kinv @ m
    Kinv_L = Kinv @ L
    d_L = np.tril(Kinv_L) - np.diag(1.0 / np.diag(L))
    d_K = 0.5 * (Kinv - Kinv_L @ Kinv_L.T - np.outer(Kinv_m, Kinv_m))
    return kl, Kinv_m, d_L, 0.5 * (d_K + d_K.T)


def _shards(n: int, size: int):
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def svi_bound(X, y, params: SVIParameters, likelihood, whiten: bool = True, *, jitter=None, scale: float = 1.0,
              shard_size: int = SHARD_SIZE, gradients: bool = True, wrt_kernel: bool = True, executor=None,
              rows=None):
    """(bound, ShardTerms of the whole bound or None): scale x data term - KL (paper 003 eq. 8),
    the data term summed over in-process shards of ``shard_size`` rows, or over the shards of an
    ``executor`` (:mod:`.distributed`; ``rows``: the global indices of a minibatch, None for all,
    and X, y are not used); ``wrt_kernel=False`` leaves the gradients in log theta and Z at zero
    (:func:`shard_terms`)."""
    Luu, _ = cholesky_kuu(params.kernel(params.Z), jitter)
    if executor is None:
        X = as_inputs(X)
        parts = [shard_terms(X[r], y[r], params, Luu, likelihood, whiten, scale, gradients, wrt_kernel)
                 for r in _shards(X.shape[0], shard_size)]
    else:
        local = [None] * len(executor.bounds) if rows is None else split(rows, executor.bounds)
        args = [None if idx is not None and idx.size == 0 else
                (idx, params, Luu, likelihood, whiten, scale, gradients, wrt_kernel, shard_size) for idx in local]
        parts = [part for part in executor.call("terms", args) if part is not None]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    kl, kl_m, kl_L, kl_K = kl_terms(params, Luu, whiten)
    bound = total.value - kl
    if not gradients:
        return bound, None
    d_theta, d_Z = total.d_theta, total.d_Z
    if kl_K is not None and wrt_kernel:  # the unwhitened KL depends on K_uu = k(Z, Z)
        M = params.Z.shape[0]  # (the inputs' slot gets the inducing inputs and zero weights)
        k_theta, k_Z, _ = covariance_vjp(params.kernel, params.Z, params.Z, None, np.zeros((M, M)), -kl_K,
                                         np.zeros(M))
        d_theta, d_Z = d_theta + k_theta, d_Z + k_Z
    return bound, ShardTerms(bound, total.d_m - kl_m, total.d_L - kl_L, d_theta, d_Z)


# --------------------------------------------------------------------------------------------
# The posterior
# --------------------------------------------------------------------------------------------

class SVIPosterior(TrainingMarginals, Predictions):
    """q(f_*) = N(mu_*, s2_*) of paper 003 eq. 5 from a fitted q(u) (module docstring); the
    surface of :class:`qpviz.inference.posterior.GPPosterior` (``predict_f``, ``predict_proba``,
    ``predictive_log_density``, ``log_marginal_likelihood`` = the final bound, ``converged``,
    ``history``, ``diagnostics``, ``hyperparameters``) plus ``inducing`` (Z), ``q_mean``,
    ``q_sqrt`` (L), ``whiten`` and ``stopped``."""

    def __init__(self, likelihood, X, y, params: SVIParameters, whiten: bool, *, bound: float, converged: bool,
                 n_steps: int, history: list, diagnostics: dict, stopped: bool, jitter=None):
        self.method = "svi"
        self.likelihood = likelihood
        self.X, self.y = X, y
        self.kernel = params.kernel
        self.inducing = params.Z
        self.q_mean, self.q_sqrt = params.m, params.L
        self.whiten = whiten
        self.log_marginal_likelihood = float(bound)
        self.converged = bool(converged)
        self.n_sweeps = int(n_steps)
        self.history = history
        self.diagnostics = diagnostics
        self.stopped = bool(stopped)
        self.site_mean = self.site_var = None
        self._params = params
        self._train = None
        self._Luu, _ = cholesky_kuu(params.kernel(params.Z), jitter)

    def predict_f(self, X_new, full_cov: bool = False):
        """(mu_*, s2_*) of paper 003 eq. 5 (module docstring), computed in chunks of rows."""
        if full_cov:
            raise ValueError("SVIPosterior.predict_f gives marginal variances only; call it with full_cov=False")
        X_new = as_inputs(X_new, "X_new")
        if X_new.shape[1] != self.inducing.shape[1]:
            raise ValueError(f"X_new must have the inputs' {self.inducing.shape[1]} column(s); got shape {X_new.shape}")
        mean, var = np.empty(X_new.shape[0]), np.empty(X_new.shape[0])
        for rows in _shards(X_new.shape[0], SHARD_SIZE):
            mean[rows], var[rows], *_ = _marginals(X_new[rows], self._params, self._Luu, self.whiten)
        return mean, var


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------

def _initial_parameters(kernel, Z, whiten: bool, jitter) -> SVIParameters:
    """q(u) = the prior: m = 0 and S = I (whitened) or S = K_uu."""
    M = Z.shape[0]
    L = np.eye(M) if whiten else cholesky_kuu(kernel(Z), jitter)[0]
    return SVIParameters(np.zeros(M), L, kernel, Z)


def fit_svi(X, y, likelihood, kernel: Kernel, *, optimise: bool = True, inducing=200, minibatch: int = 200,
            epochs: int = 5, seed: int = 0, validation=None, whiten: bool = True, progress: bool = False, stop=None,
            callback=None, client=None, optimise_inducing=None, record_every=None, shard_size: int = SHARD_SIZE,
            jitter=None, bounds=None, max_opt_iter: int = 1000) -> SVIPosterior:
    """Fit SVI (module docstring); ``qpviz.fit(X, y, lik, kernel, method="svi", ...)`` calls this.

    ``inducing``: Z (M, D) or an int M (K-means centres of X, ``seed``). ``optimise=True`` learns the
    kernel's log hyper-parameters (within ``bounds``, :func:`qpviz.inference.hyper.resolve_bounds`)
    and, unless ``optimise_inducing=False``, Z; q(u) is always learnt. ``minibatch >= N``: batch
    L-BFGS-B, at most ``max_opt_iter`` iterations (``epochs`` is ignored); otherwise ``epochs``
    passes of Adadelta steps on shuffled minibatches (``seed``), after which the bound itself is
    computed once over all the data (``log_marginal_likelihood``; the last minibatch estimate is
    ``diagnostics["last_estimate"]``). ``validation=(X_val, y_val)`` adds
    the test error and NTLL to the ``history`` entries (every ``record_every`` steps; default about
    20 per epoch, every iteration in batch mode); ``stop`` (a ``threading.Event`` or a callable)
    ends training after the current step and the posterior is the last state; ``callback(entry)``
    sees each history entry, with the current inducing inputs as ``entry["inducing"]`` (a live
    view; the history does not keep them); ``progress`` shows a bar. ``client``: a Dask
    ``Client``, a scheduler address or ``"local"``: the data term is summed by one shard per worker
    (:mod:`.distributed`; the same seed gives the same fit as in-process, up to rounding).
    """
    learn_Z = optimise if optimise_inducing is None else bool(optimise_inducing)
    likelihood, X, y, Z = inducing_problem(X, y, likelihood, kernel, inducing, seed, optimise or learn_Z)
    n = X.shape[0]
    minibatch = check_positive_int(minibatch, "minibatch")
    epochs = check_positive_int(epochs, "epochs")
    shard_size = check_positive_int(shard_size, "shard_size")
    if bounds is not None and not optimise:
        raise TypeError("bounds limit the hyper-parameters that optimise=True fits; pass optimise=True or drop bounds")
    packing = _Packing(kernel, Z, optimise, learn_Z)
    params = _initial_parameters(kernel, Z, whiten, jitter)
    x0 = packing.pack(params)
    theta_bounds = resolve_bounds(kernel.param_names, bounds) if optimise else []
    box = [(None, None)] * (params.m.size + packing.n_L) + theta_bounds + [(None, None)] * (Z.size if learn_Z else 0)

    def evaluate(x):
        """The validation scores of the packed parameters x (called only for recorded steps)."""
        def scores(X_val, y_val):
            post = SVIPosterior(likelihood, X, y, packing.unpack(x), whiten, bound=np.nan, converged=False, n_steps=0,
                                history=[], diagnostics={}, stopped=False, jitter=jitter)
            return metrics.evaluate(post, X_val, y_val)
        return scores

    batch = minibatch >= n
    if batch:
        total_steps = int(max_opt_iter)
        every = 1 if record_every is None else check_positive_int(record_every, "record_every")
    else:
        per_epoch = steps_per_epoch(n, minibatch)
        total_steps = epochs * per_epoch
        every = (max(1, per_epoch // 20) if record_every is None
                 else check_positive_int(record_every, "record_every"))
    diagnostics: dict = {}
    # the data's shards on a Dask cluster (client=...), else summed here in shards of shard_size rows
    executor = None if client is None else DaskExecutor(client, X, y, SVIShard)
    record = None
    # every product has an inner or outer dimension M (M x |batch|, M x M): for M below
    # BLAS_SINGLE_THREAD_N, OpenBLAS threads mostly spin-wait on a busy machine (qpviz._blas; a
    # 2,000-point batch evaluation with M = 50 took 100 ms with threads, measured)
    with small_problem_threads(Z.shape[0]):
        try:
            if executor is not None:
                diagnostics["dashboard_link"] = executor.dashboard_link
            record = TrainingRecord(total_steps, label="svi", validation=validation, every=every, stop=stop,
                                    callback=callback, progress=progress)
            if batch:
                x, bound, converged, steps, message = _train_batch(X, y, likelihood, whiten, jitter, shard_size,
                                                                   packing, x0, box, max_opt_iter, record, evaluate,
                                                                   executor)
            else:
                x, bound, converged, steps, message = _train_stochastic(X, y, likelihood, whiten, jitter, packing, x0,
                                                                        theta_bounds, minibatch, epochs, seed, record,
                                                                        evaluate, executor)
            final = packing.unpack(x)
            if not batch:  # the minibatch estimates are noisy: report the bound itself (in shards)
                diagnostics["last_estimate"] = bound
                bound = svi_bound(X, y, final, likelihood, whiten, jitter=jitter, shard_size=shard_size,
                                  gradients=False, executor=executor)[0]
        finally:
            if record is not None:
                record.close()
            if executor is not None:
                executor.close()
    diagnostics.update({"inducing": final.Z, "hyperparameters": final.kernel.params, "mode": "batch" if batch else
                   "stochastic", "message": message, "n_inducing": final.Z.shape[0], "minibatch": min(minibatch, n),
                   "whiten": whiten})
    return SVIPosterior(likelihood, X, y, final, whiten, bound=bound, converged=converged, n_steps=steps,
                        history=record.history, diagnostics=diagnostics, stopped=record.stopped, jitter=jitter)


#: restarts of L-BFGS-B from its best point after it refused an overflowed trial point
MAX_RESTARTS = 5


class _Stopped(Exception):
    """Raised inside L-BFGS-B's callback to end a batch run on a stop request."""


def _train_batch(X, y, likelihood, whiten, jitter, shard_size, packing, x0, box, max_iter, record, evaluate,
                 executor=None):
    """L-BFGS-B on -bound over all packed parameters; one history entry per iteration."""
    def loss(x):
        params = packing.unpack(x)
        first = state["evaluations"] == 0
        state["evaluations"] += 1
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                bound, grads = svi_bound(X, y, params, likelihood, whiten, jitter=jitter, shard_size=shard_size,
                                         wrt_kernel=packing.wrt_kernel, executor=executor)
                gradient = -packing.pack_gradient(params, grads.d_m, grads.d_L, grads.d_theta, grads.d_Z)
        except (ValueError, np.linalg.LinAlgError):
            if first:  # the starting point itself: a problem with the input, not a step too far
                raise
            bound, gradient = np.nan, None
        if not first and (not np.isfinite(bound) or not np.all(np.isfinite(gradient))):
            # a line-search trial where q(u) or the kernel overflowed (e.g. Sonar, 60 length scales): an
            # infinite loss makes L-BFGS-B shorten the step instead of the fit failing on NaNs
            state["rejected"] += 1
            return np.inf, np.zeros_like(x)
        if -bound < state["best"][0]:
            state["best"] = (-bound, x.copy())
        return -bound, gradient

    state = {"steps": 0, "x": x0.copy(), "bound": np.nan, "evaluations": 0, "rejected": 0, "best": (np.inf, x0)}

    def after_iteration(intermediate_result):  # scipy passes the OptimizeResult to a parameter of this name
        x = intermediate_result.x.copy()  # scipy may reuse its array; the live view keeps this one
        state["steps"] += 1
        state["x"] = x
        state["bound"] = -float(intermediate_result.fun)
        if not record.step(state["steps"], 1, state["bound"], evaluate(x), live={"inducing": packing.inducing(x)}):
            raise _Stopped

    settings = {"maxfun": 2 * int(max_iter) + 20, "ftol": 1e-12, "gtol": 1e-8}
    start, iterations = x0, 0
    try:
        for restart in range(MAX_RESTARTS + 1):
            refused = state["rejected"]
            out = optimize.minimize(loss, start, jac=True, method="L-BFGS-B", bounds=box, callback=after_iteration,
                                    options={"maxiter": int(max_iter) - iterations, **settings})
            iterations += int(out.nit)
            if not np.isfinite(out.fun):  # it ended on a refused point: the best point it evaluated instead
                out.fun, out.x = state["best"]
            if state["rejected"] == refused or iterations >= max_iter:
                break
            # L-BFGS-B gives up after refusing a point: go on from the best point with a fresh memory
            start = state["best"][1]
    except _Stopped:
        return state["x"], state["bound"], False, state["steps"], "stopped on request"
    finally:
        if state["rejected"]:
            warnings.warn(f"SVI: {state['rejected']} of L-BFGS-B's {state['evaluations']} trial points overflowed "
                          "(non-finite bound or gradient) and were refused: it took shorter steps and went on from "
                          "its best point; if the fit is poor, standardise the inputs or bound the hyper-parameters "
                          "(bounds=...)", RuntimeWarning, stacklevel=4)
    if not state["steps"] or state["steps"] != iterations:
        record.step(max(state["steps"], 1), 1, -float(out.fun), evaluate(out.x), last=True,
                    live={"inducing": packing.inducing(out.x)})
    return out.x, -float(out.fun), bool(out.success), iterations, str(out.message)


def _train_stochastic(X, y, likelihood, whiten, jitter, packing, x0, theta_bounds, minibatch, epochs, seed, record,
                      evaluate, executor=None):
    """Adadelta ascent on the minibatch estimate (N/|B|) sum_{n in B} E_q[log p] - KL."""
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    adadelta = Adadelta(x0.size, rho=0.9, eps=1e-5)
    x = x0.copy()
    theta_slice = slice(packing.M + packing.n_L, packing.M + packing.n_L + packing.n_theta)
    low = np.array([b[0] for b in theta_bounds])
    high = np.array([b[1] for b in theta_bounds])
    step, total = 0, epochs * steps_per_epoch(n, minibatch)
    estimate = np.nan
    for epoch in range(1, epochs + 1):
        for rows in minibatches(n, minibatch, rng):
            params = packing.unpack(x)
            if executor is None:
                estimate, grads = svi_bound(X[rows], y[rows], params, likelihood, whiten, jitter=jitter,
                                            scale=n / rows.size, shard_size=max(rows.size, 1),
                                            wrt_kernel=packing.wrt_kernel)
            else:
                estimate, grads = svi_bound(X, y, params, likelihood, whiten, jitter=jitter, scale=n / rows.size,
                                            shard_size=max(rows.size, 1), wrt_kernel=packing.wrt_kernel,
                                            executor=executor, rows=rows)
            x = x + adadelta.step(packing.pack_gradient(params, grads.d_m, grads.d_L, grads.d_theta, grads.d_Z))
            if packing.n_theta:  # the optimiser's hyper-parameter bounds, as in batch mode
                x[theta_slice] = np.clip(x[theta_slice], low, high)
            step += 1
            if not record.step(step, epoch, estimate, evaluate(x), last=step == total,
                               live={"inducing": packing.inducing(x)}):
                return x, estimate, False, step, "stopped on request"
    return x, estimate, True, step, f"{epochs} epoch(s) of {minibatch}-point minibatches"
