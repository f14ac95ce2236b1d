"""Sparse GP regression in closed form: FITC, PITC, DTC, VFE and Power EP(alpha) with a Gaussian likelihood.

:func:`fit_sparse_regression` fits one of them (and, asked to, learns the hyper-parameters and
the inducing inputs by L-BFGS-B with the analytic gradients of the method's log evidence,
:mod:`qpviz.inference.sparse_evidence`, whose docstring has the methods' table and numerics) and
returns a :class:`SparseGaussianPosterior`.

Predictions (all methods, and GPy's ``FITC`` / ``DTC`` / ``VarDTC`` alike):

    Sigma   = (K_uu + K_uf Lambda^-1 K_fu)^-1,
    mean_*  = K_*u Sigma K_uf Lambda^-1 y,
    var_*   = k_** - Q_** + K_*u Sigma K_u*   (full_cov: K_** - Q_** + K_*u Sigma K_u*).

The k_** - Q_** term is what DTC's predictive has and "subset of regressors" drops (it makes
the variance revert to the prior far from Z; Quinonero-Candela & Rasmussen 2005, sec. 5);
GPy 1.15's DTC predicts with exactly this variance (woodbury_inv = K_uu^-1 - Sigma), as we do.
For VFE it is the optimal q(u) = N(K_uu Sigma K_uf y / s2, K_uu Sigma K_uu) pushed through
p(f_* | u); for FITC / PITC / Power EP the same formula with their Lambda.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize

from qpviz.inference.inducing import as_inducing, check_training_data, kmeans_inducing
from qpviz.inference.options import MethodOptions, option
from qpviz.inference.posterior import Predictions, TrainingMarginals
from qpviz.inference.sparse_evidence import (POWER_EP_METHODS, SPARSE_METHODS, EvidenceFit, check_blocks, check_method,
                                             evidence, kernel_gradients, sparse_log_evidence)
from qpviz.inference.sparse_noise import solve_lower
from qpviz.kernels import VJP_KERNELS, as_inputs
from qpviz.likelihoods import as_likelihood

__all__ = ["fit_sparse_regression", "SparseGaussianPosterior", "sparse_log_evidence", "kmeans_blocks",
           "SPARSE_METHODS", "POWER_EP_METHODS", "SparseRegressionOptions", "PITCOptions"]


# --------------------------------------------------------------------------------------------
# The posterior
# --------------------------------------------------------------------------------------------

class SparseGaussianPosterior(TrainingMarginals, Predictions):
    """The sparse approximate posterior of a Gaussian-likelihood regression (module docstring).

    Same surface as :class:`qpviz.inference.posterior.GPPosterior`: ``method``,
    ``predict_f(X_new, full_cov=False)``, ``predictive_log_density`` (log N(y_* | m_*, v_* + s2)),
    ``log_marginal_likelihood`` (the method's evidence, or VFE's bound), ``converged`` (True:
    closed form), ``hyperparameters``, ``diagnostics`` (``jitter``, ``optimisation`` report),
    ``mean`` / ``var`` at the training inputs; plus ``inducing`` (Z), ``blocks`` (PITC), ``alpha``
    (Power EP) and ``predict_y`` (latent mean, variance + s2).
    """

    def __init__(self, method, likelihood, kernel, X, y, Z, fitted: EvidenceFit, *, alpha, blocks, diagnostics):
        self.method = method
        self.likelihood = likelihood
        self.kernel = kernel
        self.X, self.y = X, y
        self.inducing = Z
        self.blocks = blocks
        self.alpha = alpha
        self.log_marginal_likelihood = float(fitted.value)
        self.converged = True
        self.n_sweeps = 0
        self.history: list = []
        self.diagnostics = diagnostics
        self._L, self._LB, self._h = fitted.L, fitted.LB, fitted.h
        self._train = None

    def predict_f(self, X_new, full_cov: bool = False):
        """mean_* = K_*u Sigma K_uf Lambda^-1 y = W_*^T h, var_* = k_** - |W_*|^2 + |L_B^-1 W_*|^2
        (W_* = L^-1 K_u*); ``full_cov``: K_** - W_*^T W_* + (L_B^-1 W_*)^T (L_B^-1 W_*)."""
        X_new = as_inputs(X_new, "X_new")
        if X_new.shape[1] != self.X.shape[1]:
            raise ValueError(f"X_new must have the inputs' {self.X.shape[1]} column(s); got shape {X_new.shape}")
        W_star = solve_lower(self._L, self.kernel(self.inducing, X_new))
        V_star = solve_lower(self._LB, W_star)
        mean = W_star.T @ self._h
        if full_cov:
            return mean, self.kernel(X_new) - W_star.T @ W_star + V_star.T @ V_star
        var = self.kernel.diag(X_new) - np.einsum("mn,mn->n", W_star, W_star) + np.einsum("mn,mn->n", V_star, V_star)
        return mean, var

    def predict_y(self, X_new):
        """Mean and variance of a new noisy observation: (m_*, v_* + s2)."""
        mean, var = self.predict_f(X_new)
        return mean, var + self.likelihood.variance

    @property
    def site_mean(self):
        return None

    site_var = site_mean


# --------------------------------------------------------------------------------------------
# PITC's default blocks, the likelihood, the options
# --------------------------------------------------------------------------------------------


def kmeans_blocks(X, size: int, seed: int = 0) -> list[np.ndarray]:
    """PITC's default partition: K-means clusters of X with ceil(N / size) centres (blocks of
    about ``size`` points; sizes vary with the data's clustering). Empty clusters are dropped."""
    X = as_inputs(X)
    n = X.shape[0]
    n_blocks = max(1, math.ceil(n / max(1, int(size))))
    centres = kmeans_inducing(X, n_blocks, seed)
    label = np.empty(n, dtype=np.intp)
    step = max(1, 2**22 // max(1, n_blocks))  # rows per chunk: keeps the distance matrix small
    for start in range(0, n, step):
        chunk = X[start:start + step]
        sq = np.sum(centres * centres, axis=1)[None, :] - 2.0 * chunk @ centres.T
        label[start:start + step] = np.argmin(sq, axis=1)
    return [idx for idx in (np.flatnonzero(label == j) for j in range(n_blocks)) if idx.size]


def _gaussian_likelihood(likelihood, method):
    lik = as_likelihood(likelihood)
    if not lik.is_conjugate:
        raise ValueError(
            f"method={method!r} is the closed form for the Gaussian likelihood; for the {lik.name!r} likelihood "
            "use qpviz.fit(..., method='ep' or 'qp', inducing=Z) (Power EP sweeps on pseudo-points)")
    return lik


@dataclass(frozen=True)
class SparseRegressionOptions(MethodOptions):
    """The options of ``qpviz.fit(..., method="fitc" | "dtc" | "vfe")`` (:func:`fit_sparse_regression`;
    Gaussian likelihood)."""

    inducing: object = option(None, "inducing inputs Z, (M, D), or an int M (K-means centres); required")
    optimise_inducing: bool = option(False, "also learn Z (analytic gradients)")
    seed: int = option(0, "random seed of K-means inducing inputs and blocks")


@dataclass(frozen=True)
class PITCOptions(SparseRegressionOptions):
    """The options of ``qpviz.fit(..., method="pitc")``: those of FITC and the blocks."""

    blocks: object = option(None, "a partition of the rows (None: K-means blocks of about M points)")


# --------------------------------------------------------------------------------------------
# Entry point and hyper-parameter learning
# --------------------------------------------------------------------------------------------

def fit_sparse_regression(X, y, likelihood, kernel, method, inducing, *, blocks=None, alpha=1.0, optimise=False,
                          optimise_inducing=False, optimise_likelihood=True, bounds=None, max_opt_iter=100, seed=0,
                          jitter=None) -> SparseGaussianPosterior:
    """Sparse GP regression with a Gaussian likelihood in closed form (module docstring).

    ``method``: ``"fitc"``, ``"pitc"``, ``"dtc"``, ``"vfe"``, or ``"ep"`` / ``"qp"`` (Power EP
    with power ``alpha`` in (0, 1]; the others take no alpha). ``inducing``: Z as an (M, D) array,
    or an int M (K-means centres of X, ``seed``); M <= N. ``blocks``: PITC's partition, a list of
    index arrays using each row of X exactly once; default :func:`kmeans_blocks` with blocks of
    about M points. ``jitter`` overrides :data:`qpviz.config.JITTER` for K_uu.

    ``optimise=True`` maximises the method's log evidence / bound over the kernel's log
    hyper-parameters and, with ``optimise_likelihood=True`` (the default: in regression the noise
    is learnt with the kernel), the log noise variance, by L-BFGS-B with analytic gradients;
    ``optimise_inducing=True`` also moves Z (with or without ``optimise``). ``bounds`` as
    :func:`qpviz.inference.fit.fit` (natural units, ``"likelihood.variance"`` for the noise;
    Z is unbounded); a fitted value on a bound raises
    :class:`qpviz.inference.hyper.OptimiserBoundWarning`. The report is
    ``diagnostics["optimisation"]``.
    """
    method, alpha = check_method(method, alpha)
    lik = _gaussian_likelihood(likelihood, method)
    X, y = check_training_data(kernel, X, y, lik)
    n = X.shape[0]
    Z = as_inducing(inducing, X, seed)
    if Z.shape[0] > n:
        raise ValueError(f"{Z.shape[0]} inducing inputs for only {n} data points: use M <= N")
    if method == "pitc":
        blocks = kmeans_blocks(X, Z.shape[0], seed) if blocks is None else check_blocks(blocks, n)
    elif blocks is not None:
        raise ValueError(f"blocks are PITC's partition; method={method!r} takes none (use method='pitc')")
    if bounds is not None and not optimise:
        raise TypeError("bounds limit the hyper-parameters that optimise=True fits; pass optimise=True or drop bounds")
    diagnostics: dict = {}
    if optimise or optimise_inducing:
        if type(kernel).__name__ not in VJP_KERNELS:
            raise NotImplementedError(f"learning with analytic gradients needs one of the kernels "
                                      f"{', '.join(VJP_KERNELS)}; got {kernel!r}")
        kernel, lik, Z, report = _optimise(X, y, lik, kernel, Z, method, alpha, blocks, jitter, optimise,
                                           optimise and optimise_likelihood, optimise_inducing, bounds, max_opt_iter)
        diagnostics["optimisation"] = report
    fitted = evidence(kernel, X, y, Z, lik.variance, method, alpha, blocks, jitter, gradients=False)
    diagnostics.update(jitter=fitted.jitter, n_inducing=Z.shape[0], alpha=_power(method, alpha),
                       min_diag_correction=float(np.min(fitted.d)))
    if method == "pitc":
        diagnostics["block_sizes"] = [int(b.size) for b in blocks]
    return SparseGaussianPosterior(method, lik, kernel, X, y, Z, fitted, alpha=_power(method, alpha), blocks=blocks,
                                   diagnostics=diagnostics)


def _power(method: str, alpha: float) -> float | None:
    """Power EP's alpha of a method (FITC is alpha = 1; DTC, VFE and PITC have none)."""
    return alpha if method in POWER_EP_METHODS + ("fitc",) else None


def _optimise(X, y, lik, kernel0, Z0, method, alpha, blocks, jitter, fit_kernel, fit_noise, fit_Z, bounds, max_iter):
    """L-BFGS-B on [log theta (fit_kernel), log s2 (fit_noise), Z (fit_Z)] maximising the evidence."""
    from qpviz.inference.hyper import ON_BOUND, OptimiserBoundWarning, failed_trial, resolve_bounds  # noqa: PLC0415

    n_k = len(kernel0.param_names) if fit_kernel else 0
    names = (kernel0.param_names if fit_kernel else ()) + (("likelihood.variance",) if fit_noise else ())
    log_bounds = resolve_bounds(names, bounds) if names else []
    shape_Z = Z0.shape
    start = []
    if fit_kernel:
        start.append(kernel0.log_params())
    if fit_noise:
        start.append([math.log(lik.variance)])
    n_hyper = len(names)
    if n_hyper:
        start[:] = [np.clip(np.concatenate(start), [b[0] for b in log_bounds], [b[1] for b in log_bounds])]
    if fit_Z:
        start.append(Z0.ravel())
    params0 = np.concatenate(start)
    all_bounds = log_bounds + ([(None, None)] * Z0.size if fit_Z else [])
    cache = {"evals": 0, "failed": 0, "best": None}

    def unpack(params):
        kernel = kernel0.with_log_params(params[:n_k]) if fit_kernel else kernel0
        s2 = math.exp(params[n_k]) if fit_noise else lik.variance
        Z = params[n_hyper:].reshape(shape_Z) if fit_Z else Z0
        return kernel, s2, Z

    def loss(params):
        cache["evals"] += 1
        kernel, s2, Z = unpack(params)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a JitterWarning per trial step would flood; reported below
                fitted = evidence(kernel, X, y, Z, s2, method, alpha, blocks, jitter, gradients=True)
            value = fitted.value
            if not np.isfinite(value):
                raise linalg.LinAlgError("non-finite evidence")
        except (linalg.LinAlgError, ValueError):
            cache["failed"] += 1
            return failed_trial(params, cache["best"])
        g_theta, g_Z = kernel_gradients(kernel, X, Z, fitted.grads, blocks, fit_Z)
        grad = []
        if fit_kernel:
            grad.append(g_theta)
        if fit_noise:
            grad.append([fitted.grads["s2"] * s2])
        if fit_Z:
            grad.append(g_Z.ravel())
        if cache["best"] is None or -value < cache["best"][1]:
            cache["best"] = (np.array(params, dtype=float), -float(value))
        return -value, -np.concatenate(grad)

    out = optimize.minimize(loss, params0, jac=True, method="L-BFGS-B", bounds=all_bounds,
                            options={"maxiter": int(max_iter)})
    kernel, s2, Z = unpack(out.x)
    at_bound = [name for name, value, (low, high) in zip(names, out.x, log_bounds)
                if value - low < ON_BOUND or high - value < ON_BOUND]
    if at_bound:
        values = ", ".join(f"{name} = {math.exp(value):.4g}" for name, value in zip(names, out.x) if name in at_bound)
        warnings.warn(f"hyper-parameter(s) stopped on a bound of the optimiser: {values}. The {method} evidence still "
                      "rises beyond it; widen the bounds with bounds={name: (low, high)} or fix the value by starting "
                      "there with a narrow bound", OptimiserBoundWarning, stacklevel=3)
    report = {
        "param_names": names,
        "values": {name: float(math.exp(value)) for name, value in zip(names, out.x)},
        "bounds": {name: (float(math.exp(low)), float(math.exp(high))) for name, (low, high) in zip(names, log_bounds)},
        "at_bound": at_bound,
        "optimise_inducing": bool(fit_Z),
        "objective": method,
        "log_evidence": -float(out.fun),
        "evaluations": cache["evals"],
        "failed_evaluations": cache["failed"],
        "iterations": int(out.nit),
        "success": bool(out.success),
        "message": str(out.message),
    }
    return kernel, lik.with_params(variance=s2), np.array(Z, dtype=float), report
