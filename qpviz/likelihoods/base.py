"""The likelihood contract shared by every likelihood of qpviz.

A likelihood p(y | f) of one latent value f knows

* ``log_prob(y, f)`` and its first two f-derivatives ``dlog_prob(y, f)``;
* for a Gaussian cavity N(f | cavity_mean, cavity_var), the *tilted* distribution
  q(f) = p(y | f) N(f | cavity_mean, cavity_var) / Z:
  ``tilted_moments`` (log Z, mean, variance; QP paper eqs. 5, 26-34),
  ``tilted_logpdf``, ``tilted_cdf`` and ``tilted_sf`` (QP paper eq. 7 needs F);
* ``predictive(y, mean, var)`` = integral p(y | f) N(f | mean, var) df (= Z).

Defaults use the adaptive tilted quadrature of :mod:`qpviz.tilted` (accurate to ~1e-12
relative); subclasses override them with closed forms where the papers give them.
All methods broadcast ``y``, ``cavity_mean`` and ``cavity_var`` with NumPy rules and return
float64 arrays (0-d arrays for scalar input).

The quadrature kernels run in numba and reach each likelihood through a small integer
``kind`` and a parameter pair ``(p0, p1)``; :mod:`qpviz.likelihoods._dispatch` maps ``kind``
to the likelihood's jitted scalar functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = ["Likelihood", "TiltedMoments", "InvalidObservation"]


class InvalidObservation(ValueError):
    """An observed y outside the support of the likelihood (a user error, with advice)."""


@dataclass(frozen=True)
class TiltedMoments:
    """log normaliser, mean and variance of the tilted distribution (arrays)."""

    log_z: np.ndarray
    mean: np.ndarray
    var: np.ndarray


def as_float_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array, with an error that names the argument if it is not numeric."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric (a number or an array of numbers), got {x!r}") from exc
    return arr


def check_positive(name: str, value) -> float:
    """A strictly positive finite scalar parameter, or an error that says so."""
    arr = as_float_array(value, name)
    if arr.ndim != 0 or not np.isfinite(arr) or arr <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(arr)


def check_cavity(cavity_mean, cavity_var) -> tuple[np.ndarray, np.ndarray]:
    """Validate a Gaussian cavity: finite mean, finite strictly positive variance."""
    mean = as_float_array(cavity_mean, "cavity_mean")
    var = as_float_array(cavity_var, "cavity_var")
    if not np.all(np.isfinite(mean)):
        raise ValueError("cavity_mean must be finite; got a NaN or infinite value")
    if not np.all(np.isfinite(var)):
        raise ValueError("cavity_var must be finite; got a NaN or infinite value")
    if np.any(var <= 0):
        raise ValueError(
            f"cavity_var must be > 0 (a Gaussian needs a positive variance); got min {var.min():g}. "
            "Use a positive variance, e.g. cavity_var=1.0."
        )
    return mean, var


class Likelihood:
    """Base class of a one-dimensional likelihood p(y | f).

    Subclasses set ``name``, ``kind``, ``support`` and implement ``_log_prob_numpy``,
    ``_dlog_prob_numpy`` (pure NumPy references) and may override the ``_tilted_*`` methods
    with closed forms.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[int] = -1
    #: "binary" (y in {-1, +1}), "count" (y in {0, 1, 2, ...}) or "real".
    support: ClassVar[str] = "real"
    #: Whether log p(y | f) is concave in f (then EP site precisions stay positive).
    log_concave: ClassVar[bool] = True

    # -- parameters --------------------------------------------------------------------
    @property
    def params(self) -> dict[str, float]:
        """The likelihood's parameters by name."""
        return {}

    def _param_pair(self) -> tuple[float, float]:
        """The parameters packed for numba kernels (p0, p1)."""
        return (0.0, 0.0)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"qpviz.likelihood({self.name!r}{', ' if args else ''}{args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.params == other.params

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    # -- observations ------------------------------------------------------------------
    def check_y(self, y) -> np.ndarray:
        """``y`` as a float array, or :class:`InvalidObservation` saying what is allowed."""
        arr = as_float_array(y, "y")
        if not np.all(np.isfinite(arr)):
            raise InvalidObservation(f"y must be finite for the {self.name} likelihood")
        if self.support == "binary" and not np.all((arr == 1.0) | (arr == -1.0)):
            raise InvalidObservation(
                f"the {self.name} likelihood takes labels y in {{-1, +1}}; got {_show(arr)}"
            )
        if self.support == "count" and not np.all((arr >= 0) & (arr == np.round(arr))):
            raise InvalidObservation(
                f"the {self.name} likelihood takes counts y in {{0, 1, 2, ...}}; got {_show(arr)}"
            )
        return arr

    # -- log density -------------------------------------------------------------------
    def log_prob(self, y, f) -> np.ndarray:
        """log p(y | f), broadcast over ``y`` and ``f``."""
        y = self.check_y(y)
        return self._log_prob_numpy(y, as_float_array(f, "f"))

    def dlog_prob(self, y, f) -> tuple[np.ndarray, np.ndarray]:
        """(d/df, d^2/df^2) of log p(y | f), broadcast over ``y`` and ``f``."""
        y = self.check_y(y)
        return self._dlog_prob_numpy(y, as_float_array(f, "f"))

    def _log_prob_numpy(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # every concrete likelihood defines it

    def _dlog_prob_numpy(self, y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # every concrete likelihood defines it

    def kinks(self, y) -> np.ndarray:
        """Points f where log p(y | f) is not smooth (break points for quadrature)."""
        return np.empty(0)

    # -- tilted distribution -----------------------------------------------------------
    def tilted_moments(self, y, cavity_mean, cavity_var) -> TiltedMoments:
        """log Z, mean and variance of q(f) = p(y|f) N(f|cavity_mean, cavity_var) / Z.

        Z = int p(y|f) N(f|m, v) df; mean = m + v dlogZ/dm; var = v + v^2 d2logZ/dm2
        (QP paper App. C, eqs. 29 and 34).
        """
        y = self.check_y(y)
        m, v = check_cavity(cavity_mean, cavity_var)
        y, m, v = np.broadcast_arrays(y, m, v)
        log_z, mean, var = self._tilted_moments(y, m, v)
        return TiltedMoments(np.asarray(log_z, float), np.asarray(mean, float), np.asarray(var, float))

    def _tilted_moments(self, y, m, v):
        from qpviz import tilted

        return tilted.quadrature_moments(self, y, m, v)

    def tilted_logpdf(self, x, y, cavity_mean, cavity_var) -> np.ndarray:
        """log q(x) of the tilted distribution."""
        y = self.check_y(y)
        m, v = check_cavity(cavity_mean, cavity_var)
        x = as_float_array(x, "x")
        log_z = self.tilted_moments(y, m, v).log_z
        log_cavity = -0.5 * (x - m) ** 2 / v - 0.5 * np.log(2 * np.pi * v)
        with np.errstate(divide="ignore"):
            return self._log_prob_numpy(y, x) + log_cavity - log_z

    def tilted_cdf(self, x, y, cavity_mean, cavity_var) -> np.ndarray:
        """F(x) = int_{-inf}^x q(f) df of the tilted distribution."""
        return self._tilted_cdf(x, self.check_y(y), cavity_mean, cavity_var, upper=False)

    def tilted_sf(self, x, y, cavity_mean, cavity_var) -> np.ndarray:
        """1 - F(x), computed directly (accurate where F is near 1)."""
        return self._tilted_cdf(x, self.check_y(y), cavity_mean, cavity_var, upper=True)

    def _tilted_cdf(self, x, y, cavity_mean, cavity_var, upper: bool) -> np.ndarray:
        """CDF (or survival function with ``upper``) by the adaptive quadrature; subclasses with
        a closed form override this one method."""
        from qpviz import tilted

        return tilted.tilted_cdf(self, x, y, cavity_mean, cavity_var, upper=upper)

    # -- predictions -------------------------------------------------------------------
    def predictive(self, y, mean, var) -> np.ndarray:
        """p(y) = int p(y | f) N(f | mean, var) df under a Gaussian latent (equals Z)."""
        return np.exp(self.tilted_moments(y, mean, var).log_z)

    def predictive_log_density(self, y, mean, var) -> np.ndarray:
        """log p(y) under a Gaussian latent N(mean, var) (log of :meth:`predictive`)."""
        return self.tilted_moments(y, mean, var).log_z


def _vectorised_closed_moments(lik: "Likelihood", y, m, v):
    """The likelihood's jitted closed-form moments, elementwise over broadcast arrays."""
    from qpviz.likelihoods._dispatch import closed_moments_batch

    p0, p1 = lik._param_pair()
    out = closed_moments_batch(lik.kind, p0, p1, *(np.ravel(a).astype(float) for a in (y, m, v)))
    return tuple(out[j].reshape(np.shape(y)) for j in range(3))


def _show(arr: np.ndarray) -> str:
    flat = np.ravel(arr)
    return repr(flat[0].item() if flat.size == 1 else flat[:6].tolist())
