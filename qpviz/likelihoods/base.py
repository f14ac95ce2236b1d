"""The likelihood contract: one class per likelihood p(y | f) of one latent value f.

A new likelihood is one small subclass of :class:`Likelihood`. The only method it must define
is ``log_prob(self, y, f)`` (vectorised NumPy with broadcasting); it may declare its
parameters, its support and its kinks::

    class Cauchy(qpviz.Likelihood):
        name = "my_cauchy"
        support = "real"
        parameters = (qpviz.Parameter("scale", default=1.0, lower=0.0, doc="half width"),)

        def log_prob(self, y, f):
            return -np.log(np.pi * self.scale * (1 + ((y - f) / self.scale) ** 2))

Everything else has a correct default computed from ``log_prob`` by quadrature (accurate to
~1e-10 relative; numerical derivatives where derivatives are needed):

* ``dlog_prob(y, f)``: (d/df, d^2/df^2) log p, central differences;
* the tilted distribution q(f) = p(y|f) N(f|m, v) / Z of a Gaussian cavity (QP paper eq. 4):
  ``tilted_moments`` (log Z, mean, var; eq. 5), ``tilted_logpdf``, ``tilted_cdf``, ``tilted_sf``,
  ``tilted_quantile`` and ``qp_std`` (sigma_QP, eq. 7);
* predictions under a Gaussian latent: ``predictive``, ``predictive_log_density``,
  ``evaluation_log_density`` (what the paper's test metrics use), ``point_prediction``,
  ``predictive_band`` (what the GP 1-D page draws) from ``observation_moments`` (E[y | f] and
  Var[y | f], by quadrature over y);
* VB's expectations ``variational_expectations`` (Gauss-Hermite);
* the starting sites of EP/QP/VB ``initial_sites`` (flat);
* ``tempered(alpha)``: p(y | f)^alpha (Power EP), with the moments of its tilted distribution.

Built-in likelihoods override these with closed forms and give numba kernels
(``jit = JitKernels(...)``, :mod:`qpviz._jit`), which the quadrature engine, the GP engines and
the QP tables' fallback call directly. A class without ``jit`` runs the same algorithms through
its NumPy ``log_prob`` (:mod:`qpviz.tilted_numpy`), slower but equally accurate.

All methods broadcast ``y``, ``cavity_mean`` and ``cavity_var`` with NumPy rules and return
float64 arrays (0-d arrays for scalar input). Engines never ask a likelihood's name: they ask
the class what it can do.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from qpviz import config, tilted
from qpviz._jit import JitKernels, make_handle
from qpviz.checks import as_float_array, check_cavity, check_positive
from qpviz.likelihoods.parameter import InvalidObservation, Parameter, TiltedMoments
from qpviz.likelihoods.quadrature import BAND_GH_NODES, BAND_RANGE_POINTS, count_moments, gauss_hermite, real_moments

__all__ = ["Likelihood", "Parameter", "TiltedMoments", "InvalidObservation", "Tempered", "as_float_array",
           "check_cavity", "check_positive", "BAND_GH_NODES", "BAND_RANGE_POINTS"]


class Likelihood:
    """Base class of a one-dimensional likelihood p(y | f) (module docstring).

    Class attributes a subclass may set: ``name`` (registry key; default the class name in
    lower case), ``support`` ("binary": y in {-1, +1}; "count": y in {0, 1, 2, ...}; "real"),
    ``parameters`` (:class:`Parameter` declarations; the default ``__init__`` takes them as
    keyword arguments and checks their ranges), ``log_concave`` (True promises that log p is
    concave in f, so EP site precisions stay non-negative), ``even_in_f``, ``jit`` (numba kernels),
    ``presets`` (parameter sets the dashboard offers) and ``qp_table`` (how the QP lookup
    tables cover this likelihood, :mod:`qpviz.tables.families`: ``fold``, the folded-mean domain
    ``t_lo``/``t_hi``, and where its feature sits, ``center``/``width`` or
    ``center_width(params, k)`` for table k).
    """

    name: ClassVar[str] = ""
    support: ClassVar[str] = "real"
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    log_concave: ClassVar[bool] = False
    #: p(y | f) = p(y | -f) for every y (the posterior has two mirror-image branches)
    even_in_f: ClassVar[bool] = False
    #: every tilted distribution is Gaussian, so QP = EP exactly (Theorem 2's equality case)
    gaussian_tilted: ClassVar[bool] = False
    #: p(y | f) = N(y | f, self.variance): GP regression has closed forms (the sparse regression
    #: methods DTC / PITC / FITC / VFE, the Sparse page's labels) that read ``variance``
    is_conjugate: ClassVar[bool] = False
    jit: ClassVar[JitKernels | None] = None
    presets: ClassVar[tuple[dict, ...]] = ()
    #: position in the dashboard's menus and the registry (ties by name)
    menu_rank: ClassVar[float] = 100.0
    qp_table: ClassVar[dict | None] = None

    #: the class overrides ``_tilted_moments`` with a closed form (set for every subclass)
    closed_form_moments: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.closed_form_moments = cls._tilted_moments is not Likelihood._tilted_moments
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__.lower()
        if cls.support not in ("binary", "count", "real"):
            raise TypeError(f"{cls.__name__}.support must be 'binary', 'count' or 'real'; got {cls.support!r}")

    def __init__(self, **params):
        declared = {p.name: p for p in self.parameters}
        unknown = sorted(set(params) - set(declared))
        if unknown:
            accepted = ", ".join(f"{p.name} in {p.describe_range()}" for p in self.parameters) or "none"
            raise TypeError(f"the {self.name} likelihood has no parameter(s) {unknown}; it accepts: {accepted}")
        for p in self.parameters:
            setattr(self, p.name, p.check(params.get(p.name, p.default)))

    # -- parameters --------------------------------------------------------------------
    @property
    def params(self) -> dict[str, float]:
        """The likelihood's parameters by name."""
        return {p.name: getattr(self, p.name) for p in self.parameters}

    def param_array(self) -> np.ndarray:
        """The parameters in declaration order (what the jitted kernels read)."""
        return np.array([getattr(self, p.name) for p in self.parameters], dtype=np.float64)

    def with_params(self, **changes) -> "Likelihood":
        """A copy with some parameters changed."""
        return type(self)(**{**self.params, **changes})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"qpviz.likelihood({self.name!r}{', ' if args else ''}{args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.params == other.params

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, self.name, tuple(sorted(self.params.items()))))

    def __getstate__(self):
        # the numba handle holds this process's kernel addresses (meaningless elsewhere): rebuilt on first use
        state = dict(self.__dict__)
        state.pop("_jit_handle", None)
        return state

    # -- numba -------------------------------------------------------------------------
    @property
    def alpha(self) -> float:
        """The power of p(y | f) (1 unless :meth:`tempered`)."""
        return 1.0

    def jit_handle(self):
        """The tuple generic numba code takes (:mod:`qpviz._jit`), or None without ``jit`` kernels."""
        if self.jit is None:
            return None
        handle = self.__dict__.get("_jit_handle")
        if handle is None:
            handle = make_handle(self.jit, self.param_array(), self.alpha, unimodal=bool(self.log_concave))
            self.__dict__["_jit_handle"] = handle
        return handle

    # -- observations ------------------------------------------------------------------
    def check_y(self, y) -> np.ndarray:
        """``y`` as a float array, or :class:`InvalidObservation` saying what is allowed."""
        arr = as_float_array(y, "y")
        if self.support == "binary":
            if not ((arr == 1.0) | (arr == -1.0)).all():
                raise InvalidObservation(f"the {self.name} likelihood takes labels y in {{-1, +1}}; got {_show(arr)}")
        elif self.support == "count":
            if not ((arr >= 0) & (arr == np.floor(arr)) & (arr < np.inf)).all():
                raise InvalidObservation(
                    f"the {self.name} likelihood takes counts y in {{0, 1, 2, ...}}; got {_show(arr)}")
        elif not np.isfinite(arr).all():
            raise InvalidObservation(f"y must be finite for the {self.name} likelihood")
        return arr

    # -- log density -------------------------------------------------------------------
    def log_prob(self, y, f) -> np.ndarray:
        """log p(y | f), broadcast over ``y`` and ``f`` (the one method a subclass must define)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define log_prob(self, y, f): the vectorised log density log p(y | f)")

    def dlog_prob(self, y, f) -> tuple[np.ndarray, np.ndarray]:
        """(d/df, d^2/df^2) of log p(y | f); default: central differences of ``log_prob``.

        Step h = 1e-4 (1 + |f|): truncation error O(h^2), rounding O(eps |log p| / h^2), so
        about 1e-8 relative for log densities of moderate size.
        """
        y = as_float_array(y, "y")
        f = as_float_array(f, "f")
        h = 1e-4 * (1.0 + np.abs(f))
        up, mid, down = self.log_prob(y, f + h), self.log_prob(y, f), self.log_prob(y, f - h)
        with np.errstate(invalid="ignore"):
            return (up - down) / (2.0 * h), (up - 2.0 * mid + down) / (h * h)

    def kinks(self, y) -> np.ndarray:
        """Points f where log p(y | f) is not smooth (break points for quadrature)."""
        return np.empty(0)

    # -- tilted distribution -----------------------------------------------------------
    def tilted_moments(self, y, cavity_mean, cavity_var) -> TiltedMoments:
        """log Z, mean and variance of q(f) = p(y|f) N(f|cavity_mean, cavity_var) / Z.

        Z = int p(y|f) N(f|m, v) df; mean = m + v dlogZ/dm; var = v + v^2 d2logZ/dm2
        (QP paper eq. 5; App. C eqs. 29 and 34).
        """
        y = self.check_y(y)
        m, v = check_cavity(cavity_mean, cavity_var)
        y, m, v = np.broadcast_arrays(y, m, v)
        log_z, mean, var = self._tilted_moments(y, m, v)
        return TiltedMoments(np.asarray(log_z, float), np.asarray(mean, float), np.asarray(var, float))

    def _tilted_moments(self, y, m, v):
        """(log Z, mean, var) of validated, broadcast arrays; subclasses with closed forms override."""
        return tilted.quadrature_moments(self, y, m, v)

    @staticmethod
    def _batch_moments(batch, y, m, v, *leading):
        """(log Z, mean, var) of broadcast arrays from a likelihood's own jitted batch kernel
        ``batch(*leading, y, m, v)`` over flat arrays (rows log Z, mean, var)."""
        out = batch(*leading, *(np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in (y, m, v)))
        return tuple(out[j].reshape(np.shape(y)) for j in range(3))

    def tilted_logpdf(self, x, y, cavity_mean, cavity_var, log_z=None) -> np.ndarray:
        """log q(x) of the tilted distribution (eq. 4); ``log_z``: its log Z if already known (else
        computed with :meth:`tilted_moments`)."""
        y = self.check_y(y)
        m, v = check_cavity(cavity_mean, cavity_var)
        x = as_float_array(x, "x")
        if log_z is None:
            log_z = self.tilted_moments(y, m, v).log_z
        log_cavity = -0.5 * (x - m) ** 2 / v - 0.5 * np.log(2 * np.pi * v)
        with np.errstate(divide="ignore"):
            return self.log_prob(y, x) + log_cavity - log_z  # a tempered log_prob includes alpha

    def tilted_cdf(self, x, y, cavity_mean, cavity_var) -> np.ndarray:
        """F(x) = int_{-inf}^x q(f) df of the tilted distribution."""
        return self._tilted_cdf(x, self.check_y(y), cavity_mean, cavity_var, upper=False)

    def tilted_sf(self, x, y, cavity_mean, cavity_var) -> np.ndarray:
        """1 - F(x), computed directly (accurate where F is near 1)."""
        return self._tilted_cdf(x, self.check_y(y), cavity_mean, cavity_var, upper=True)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper: bool) -> np.ndarray:
        """CDF (or survival function with ``upper``) by the adaptive quadrature; subclasses with
        a closed form override this one method."""
        return tilted.tilted_cdf(self, x, y, cavity_mean, cavity_var, upper=upper)

    def tilted_quantile(self, u, y, cavity_mean, cavity_var) -> np.ndarray:
        """F^-1(u) of one tilted distribution (scalar y and cavity) at probabilities ``u``."""
        return tilted.tilted_quantile(self, u, y, cavity_mean, cavity_var)

    def qp_std(self, y, cavity_mean, cavity_var) -> np.ndarray:
        """sigma_QP = int phi(Phi^-1(F(f))) df of the tilted distribution (QP paper eq. 7), directly."""
        return tilted.qp_std(self, y, cavity_mean, cavity_var)

    def tempered(self, alpha: float) -> "Likelihood":
        """p(y | f)^alpha, 0 < alpha <= 1 (Power EP's tilted distributions; paper 001)."""
        return self if float(alpha) == 1.0 else Tempered(self, alpha)

    # -- predictions -------------------------------------------------------------------
    def predictive(self, y, mean, var) -> np.ndarray:
        """p(y) = int p(y | f) N(f | mean, var) df under a Gaussian latent (equals Z)."""
        return np.exp(self.tilted_moments(y, mean, var).log_z)

    def predictive_log_density(self, y, mean, var) -> np.ndarray:
        """log p(y) under a Gaussian latent N(mean, var) (log of :meth:`predictive`)."""
        return self.tilted_moments(y, mean, var).log_z

    def evaluation_log_density(self, y, mean, var) -> np.ndarray:
        """The log predictive density the QP paper's test metrics use (sec. 6); default: exact."""
        return self.predictive_log_density(y, mean, var)

    def point_prediction(self, mean, var) -> np.ndarray:
        """A point prediction of y under N(mean, var) for test errors: the more probable label
        (binary), the predictive mean (real, counts: E[y] by quadrature over f)."""
        mean = as_float_array(mean, "mean")
        var = as_float_array(var, "var")
        if self.support == "binary":
            return np.where(self.predictive(1.0, mean, var) >= 0.5, 1.0, -1.0)
        if self.support == "real":
            return mean
        return self._expected_count(mean, var)

    def noise_variance(self) -> float | None:
        """Var[y | f] of a real likelihood y = f + noise (a location family: E[y | f] = f), inf where
        it diverges; None (the default) where p(y | f) is not one, so :meth:`observation_moments`
        integrates over y."""
        return None

    def observation_moments(self, f) -> tuple[np.ndarray, np.ndarray]:
        """(E[y | f], Var[y | f]) of one observation given the latent ``f`` (any shape).

        Binary: E = p(+1|f) - p(-1|f), Var = 1 - E^2. Counts: sums over y = 0, 1, 2, ... until the
        mass left is below 1e-12. Real: (f, :meth:`noise_variance`) where declared, else adaptive
        quadrature over u = y - f (Var = inf where the second moment diverges). The sums and
        integrals are divided by the total mass, so ``log_prob`` may be unnormalised in y.
        """
        f = as_float_array(f, "f")
        if self.support == "binary":
            p_plus = np.exp(self.log_prob(1.0, f))
            p_minus = np.exp(self.log_prob(-1.0, f))
            mean = (p_plus - p_minus) / (p_plus + p_minus)
            return mean, 1.0 - mean * mean
        if self.support == "count":
            return count_moments(self, f)
        noise = self.noise_variance()
        if noise is not None:
            return f.copy(), np.full(f.shape, float(noise))
        return real_moments(self, f)

    def predictive_band(self, mean, var) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(centre, lower, upper) of the observation y under a Gaussian latent N(mean, var).

        Binary: centre = lower = upper = p(y = +1) (no band). Counts: centre E[y] = E_f E[y | f],
        band = the range of the rate E[y | f] over f in mean +- 2 sd. Real: centre E[y], band
        E[y] +- 2 sd[y] with Var[y] = E_f Var[y | f] + Var_f E[y | f] (the latent band mean +- 2 sd
        where Var[y] is infinite). Expectations over f by Gauss-Hermite
        (:data:`BAND_GH_NODES` nodes) of :meth:`observation_moments`; likelihoods with closed forms
        override this (a real one declaring :meth:`noise_variance` gets one here).
        """
        mean = as_float_array(mean, "mean")
        var = as_float_array(var, "var")
        sd = np.sqrt(var)
        if self.support == "binary":
            prob = self.predictive(1.0, mean, var)
            return prob, prob, prob
        noise = self.noise_variance() if self.support == "real" else None
        if noise is not None:
            total_sd = np.sqrt(var + noise)
            total_sd = np.where(np.isfinite(total_sd), total_sd, sd)
            return mean, mean - 2 * total_sd, mean + 2 * total_sd
        x, w = gauss_hermite(BAND_GH_NODES)
        cond_mean, cond_var = self.observation_moments(mean[..., None] + np.sqrt(2.0 * var)[..., None] * x)
        centre = cond_mean @ w
        if self.support == "count":
            f = mean[..., None] + 2.0 * sd[..., None] * np.linspace(-1.0, 1.0, BAND_RANGE_POINTS)
            rate = self.observation_moments(f)[0]
            return centre, rate.min(axis=-1), rate.max(axis=-1)
        with np.errstate(invalid="ignore"):
            total_sd = np.sqrt(cond_var @ w + (cond_mean - centre[..., None]) ** 2 @ w)
        total_sd = np.where(np.isfinite(total_sd), total_sd, sd)
        return centre, centre - 2 * total_sd, centre + 2 * total_sd

    def _expected_count(self, mean, var, max_count: int = 200) -> np.ndarray:
        counts = np.arange(max_count + 1.0)
        probs = self.predictive(counts[None, :], np.ravel(mean)[:, None], np.ravel(var)[:, None])
        return (probs @ counts / probs.sum(axis=1)).reshape(np.shape(mean))

    # -- other engines -------------------------------------------------------------------
    def variational_expectations(self, y, mean, var) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(E, dE/dmean, 2 dE/dvar) with E = E_{N(f|mean,var)}[log p(y|f)] per observation (VB).

        Default: Gauss-Hermite with :data:`qpviz.config.GH_NODES` nodes; for smooth log p,
        dE/dm = E[d1] and 2 dE/dv = E[d2] (Price / Bonnet). Kinked likelihoods override.
        """
        y = np.asarray(y, float)
        mean = np.asarray(mean, float)
        var = np.asarray(var, float)
        x, w = gauss_hermite(config.GH_NODES)
        f = mean[..., None] + np.sqrt(2.0 * var)[..., None] * x
        yy = np.broadcast_to(y[..., None], f.shape)
        d1, d2 = self.dlog_prob(yy, f)
        return self.log_prob(yy, f) @ w, d1 @ w, d2 @ w

    def initial_sites(self, y) -> tuple[np.ndarray, np.ndarray]:
        """Starting site parameters (tau, nu) for EP / QP / VB: flat (0, 0)."""
        n = np.shape(y)[0]
        return np.zeros(n), np.zeros(n)


class Tempered(Likelihood):
    """p(y | f)^alpha of a base likelihood, 0 < alpha <= 1 (Power EP; paper 001 sec. 3).

    Not normalised in y; its tilted distribution p(y|f)^alpha N(f|m, v) / Z_alpha has log Z,
    moments, CDF and sigma_QP by the same quadrature (closed forms are for alpha = 1 only).
    """

    name = "tempered"

    def __init__(self, base: Likelihood, alpha: float):
        if isinstance(base, Tempered):
            alpha, base = base.alpha * float(alpha), base.base
        a = float(alpha)
        if not (0.0 < a <= 1.0):
            raise ValueError(f"alpha must be in (0, 1] (1 = the likelihood itself, -> 0 = VFE); got {alpha!r}")
        self.base = base
        self._alpha = a
        self.support = base.support
        self.jit = base.jit
        self.log_concave = base.log_concave
        self.even_in_f = base.even_in_f

    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def params(self):
        return dict(self.base.params)

    def param_array(self):
        return self.base.param_array()

    def __repr__(self):
        return f"{self.base!r}.tempered({self._alpha!r})"

    def __eq__(self, other):
        return isinstance(other, Tempered) and self.base == other.base and self._alpha == other._alpha

    def __hash__(self):
        return hash(("tempered", hash(self.base), self._alpha))

    def check_y(self, y):
        return self.base.check_y(y)

    def kinks(self, y):
        return self.base.kinks(y)

    def log_prob(self, y, f):
        """alpha log p(y | f) of the base likelihood."""
        return self._alpha * self.base.log_prob(y, f)

    def dlog_prob(self, y, f):
        d1, d2 = self.base.dlog_prob(y, f)
        return self._alpha * d1, self._alpha * d2

    def initial_sites(self, y):
        return self.base.initial_sites(y)


def _show(arr: np.ndarray) -> str:
    flat = np.ravel(arr)
    return repr(flat[0].item() if flat.size == 1 else flat[:6].tolist())
