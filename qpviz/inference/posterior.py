"""The GP posterior object every engine returns, and its predictions.

:class:`GPPosterior` wraps a Gaussian approximation q(f) = N(mu, Sigma) given by sites
(EP, QP, VB and Laplace all produce one; see :mod:`.prior`); :class:`SamplePosterior` wraps
MCMC samples of the latent values. Both offer

* ``mean``, ``var`` (latent marginals at the training inputs), ``predict_f(X_new)``;
* ``predict_proba(X_new)``: p(y = +1 | x_*) = int p(+1|f) N(f|m_*, v_*) df for binary
  likelihoods (probit in closed form Phi(m / sqrt(1 + v)), QP paper sec. 6.1; others by the
  likelihood's quadrature);
* ``predictive_log_density(X_new, y_new)``: log q(y_*|x_*) = log int p(y_*|f) q(f_*) df; for
  the Poisson-square likelihood the paper's negative binomial (App. H) unless ``exact=True``;
* ``predict_counts(X_new, counts)``: the negative-binomial count distribution of App. H.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


__all__ = ["Predictions", "TrainingMarginals", "GPPosterior", "SamplePosterior"]


class TrainingMarginals:
    """``mean`` and ``var`` of f at the training inputs, computed from ``predict_f`` on first use,
    in chunks of rows (no (M, N) array at large N): the sparse posteriors' training marginals.
    A class using it sets ``self._train = None`` and has ``_training_inputs()`` (default ``self.X``)."""

    _TRAINING_CHUNK = 8192

    def _training_inputs(self):
        return self.X

    def _training_marginals(self):
        if self._train is None:
            X = self._training_inputs()
            parts = [self.predict_f(X[start:start + self._TRAINING_CHUNK])
                     for start in range(0, X.shape[0], self._TRAINING_CHUNK)]
            self._train = tuple(np.concatenate([part[j] for part in parts]) for j in (0, 1))
        return self._train

    @property
    def mean(self) -> np.ndarray:
        """E f_n at the training inputs (computed on first use)."""
        return self._training_marginals()[0]

    @property
    def var(self) -> np.ndarray:
        """Var f_n at the training inputs (computed on first use)."""
        return self._training_marginals()[1]


class Predictions:
    """Predictions shared by both posterior classes (they need ``predict_f`` and ``likelihood``)."""

    @property
    def hyperparameters(self) -> dict[str, float]:
        """The kernel's hyper-parameters and the likelihood's parameters as numbers, by name
        (``"variance"``, ``"lengthscale"`` / ``"lengthscale[d]"``, ``"likelihood.<name>"``)."""
        out = dict(self.kernel.params)
        out.update({f"likelihood.{name}": float(value) for name, value in self.likelihood.params.items()})
        return out

    def predict_proba(self, X_new) -> np.ndarray:
        """p(y_* = +1 | x_*) = int p(+1 | f) N(f | m_*, v_*) df (binary likelihoods only)."""
        if self.likelihood.support != "binary":
            raise ValueError(f"predict_proba needs a binary likelihood (labels -1/+1); this one is {self.likelihood.name!r}")
        mean, var = self.predict_f(X_new)
        return self.likelihood.predictive(1.0, mean, var)  # probit: Phi(m / sqrt(1 + v)) in closed form

    def predictive_log_density(self, X_new, y_new, exact: bool = False) -> np.ndarray:
        """log q(y_* | x_*) per test point (QP paper sec. 6.1-6.2).

        Poisson-square: the negative binomial of App. H (eq. 122) unless ``exact=True`` (then the
        Gaussian-Poisson integral by quadrature). Everything else: the likelihood's predictive.
        """
        mean, var = self.predict_f(X_new)
        y_new = self.likelihood.check_y(y_new)
        if y_new.shape != mean.shape:
            raise ValueError(f"y_new must have one entry per row of X_new ({mean.shape[0]}); got shape {y_new.shape}")
        if exact:
            return self.likelihood.predictive_log_density(y_new, mean, var)
        return self.likelihood.evaluation_log_density(y_new, mean, var)

    def predict_counts(self, X_new, counts) -> np.ndarray:
        """p(y_* = count | x_*) for every test point and count, shape (M, C): the likelihood's
        ``count_distribution`` (App. H's negative binomial for Poisson-square), else the exact
        predictive int p(count | f) N(f | m_*, v_*) df (count likelihoods only)."""
        if self.likelihood.support != "count":
            raise ValueError(f"predict_counts needs a count likelihood; this one is {self.likelihood.name!r}")
        mean, var = self.predict_f(X_new)
        counts = np.asarray(counts, float)
        own = getattr(self.likelihood, "count_distribution", None)
        if own is not None:
            return own(mean, var, counts)
        return self.likelihood.predictive(counts[None, :], mean[:, None], var[:, None])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, likelihood={self.likelihood!r}, kernel={self.kernel!r}, "
                f"N={self.X.shape[0]}, converged={self.converged}, n_sweeps={self.n_sweeps}, "
                f"log_marginal_likelihood={self.log_marginal_likelihood:.6g})")

    def predict_count_mode(self, X_new) -> np.ndarray:
        """The likelihood's point prediction of the count (Poisson-square: the mode of the App. H
        negative binomial, floor(c_* (k_* - 1)) if k_* > 1 else 0)."""
        if self.likelihood.support != "count":
            raise ValueError(f"predict_count_mode needs a count likelihood; this one is {self.likelihood.name!r}")
        return self.likelihood.point_prediction(*self.predict_f(X_new))


@dataclass(repr=False)
class GPPosterior(Predictions):
    """A Gaussian approximate posterior q(f) = N(mean, cov) at the training inputs, from sites.

    ``site_precision``/``site_nu`` are the natural site parameters (tau_i, nu_i); ``site_var`` =
    1/tau_i (inf where tau_i = 0) and ``site_mean`` = nu_i/tau_i (NaN where tau_i = 0) are the
    sigma~_i^2 and mu~_i of eq. 3. ``history`` holds the convergence measure per sweep/iteration.
    """

    method: str
    likelihood: object
    X: np.ndarray
    y: np.ndarray
    state: object
    log_marginal_likelihood: float
    converged: bool
    n_sweeps: int
    history: list = field(default_factory=list)
    diagnostics: dict = field(default_factory=dict)

    @property
    def kernel(self):
        return self.state.prior.kernel

    @property
    def prior(self):
        return self.state.prior

    @property
    def mean(self) -> np.ndarray:
        return self.state.mean

    @property
    def var(self) -> np.ndarray:
        return self.state.var

    @property
    def cov(self) -> np.ndarray:
        return self.state.cov

    @property
    def site_precision(self) -> np.ndarray:
        return self.state.tau

    @property
    def site_nu(self) -> np.ndarray:
        return self.state.nu

    @property
    def site_var(self) -> np.ndarray:
        tau = self.state.tau
        with np.errstate(divide="ignore"):
            return np.where(tau != 0, 1.0 / np.where(tau != 0, tau, 1.0), np.inf)

    @property
    def site_mean(self) -> np.ndarray:
        tau = self.state.tau
        return np.where(tau != 0, self.state.nu / np.where(tau != 0, tau, 1.0), np.nan)

    def predict_f(self, X_new, full_cov: bool = False):
        """Latent mean and variance at ``X_new`` (R&W eqs. 3.60-3.61 with the sites; App. I eq. 123)."""
        return self.state.predict_f(X_new, full_cov=full_cov)


class SamplePosterior(Predictions):
    """Latent posterior represented by samples f^(s) at the training inputs (MCMC reference).

    Predictions: f_* | f ~ N(A f, k_** - A k_*), A = k_*^T K^-1, so
    E[f_*] = A mean(f^(s)) and Var[f_*] = k_** - diag(A k_*) + Var_s[A f^(s)].
    ``site_mean``/``site_var`` are None (there are no sites); ``log_marginal_likelihood`` is NaN.
    """

    def __init__(self, prior, likelihood, y, samples: np.ndarray, diagnostics: dict):
        self.method = "mcmc"
        self.prior = prior
        self.likelihood = likelihood
        self.X = prior.X
        self.y = y
        self.samples = samples
        self.diagnostics = diagnostics
        self.log_marginal_likelihood = float("nan")
        self.converged = True
        self.n_sweeps = samples.shape[0]
        self.history: list = []
        self.site_mean = None
        self.site_var = None
        self.mean = samples.mean(axis=0)
        self.var = samples.var(axis=0)

    @property
    def kernel(self):
        return self.prior.kernel

    def predict_f(self, X_new, full_cov: bool = False):
        if full_cov:
            raise ValueError("SamplePosterior.predict_f gives marginal variances only; call it with full_cov=False")
        P, cond_var = self.prior.conditional(X_new)  # f_* | f ~ N(P^T f, cond_var)
        projected = self.samples @ P  # (S, M)
        return projected.mean(axis=0), cond_var + projected.var(axis=0)
