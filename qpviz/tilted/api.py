"""The Python face of the tilted quadrature: likelihood objects in, arrays out.

Likelihoods with numba kernels (``lik.jit_handle()``) run the kernels of this package; others
the NumPy engine of :mod:`qpviz.tilted_numpy` on their ``log_prob``. ``engine="numpy"`` asks
for the NumPy engine whatever the likelihood has (same numbers to ~1e-13; no compilation: what
the Projection Explorer uses for its one tilted distribution per view, ~1-3 ms).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from qpviz import tilted_numpy
from qpviz.checks import as_float_array, check_cavity
from qpviz.tilted.cdf import cdf_elementwise, cdf_many, quantiles
from qpviz.tilted.moments import summary_batch

__all__ = ["TiltedSummary", "QuadratureWarning", "tilted_summary", "quadrature_moments", "qp_std", "tilted_cdf",
           "tilted_quantile"]


class QuadratureWarning(UserWarning):
    """The adaptive quadrature did not reach its tolerance for some tilted distributions."""


def _report(ok: np.ndarray, y, m, v) -> None:
    """Warn, with the first failing input, where the quadrature reports ``ok`` False (its values
    there are unreliable: never silent)."""
    bad = np.flatnonzero(~np.ravel(ok))
    if bad.size:
        i = bad[0]
        warnings.warn(
            f"the adaptive quadrature of the tilted distribution did not reach its tolerance for {bad.size} of "
            f"{np.size(ok)} input(s), e.g. y={np.ravel(y)[i]:g}, cavity N({np.ravel(m)[i]:g}, {np.ravel(v)[i]:g}); "
            "its moments and sigma_QP there are unreliable (the likelihood is extremely small at the cavity: "
            "move the cavity towards the data)",
            QuadratureWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class TiltedSummary:
    """Arrays of log Z, mean, variance, entropy and sigma_QP; ``ok`` flags full convergence."""

    log_z: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    entropy: np.ndarray
    qp_std: np.ndarray
    ok: np.ndarray


def _prepare(lik, y, cavity_mean, cavity_var):
    y = lik.check_y(y)
    m, v = check_cavity(cavity_mean, cavity_var)
    y, m, v = np.broadcast_arrays(y, m, v)
    return y, m, v


def _flat(*arrays):
    return tuple(np.ascontiguousarray(np.ravel(a), dtype=np.float64) for a in arrays)


ENGINES = ("auto", "numpy")


def _handle(lik, engine: str):
    """The likelihood's numba handle, or None for the NumPy engine."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}; got {engine!r}")
    return None if engine == "numpy" else lik.jit_handle()


def tilted_summary(lik, y, cavity_mean, cavity_var, want_qp: bool = True, closed_form: bool = True,
                   engine: str = "auto") -> TiltedSummary:
    """Everything the projections need about the tilted distributions, vectorised.

    Likelihoods with numba kernels (``lik.jit_handle()``) use the kernels of this module; others
    the NumPy engine of :mod:`qpviz.tilted_numpy` on their ``log_prob``. ``closed_form=False``
    reports the quadrature's log Z, mean and variance even where the likelihood has closed forms
    (the tests compare the two).
    """
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    shape = y.shape
    lk = _handle(lik, engine)
    if lk is not None:
        out, ok = summary_batch(lk, *_flat(y, m, v), want_qp, closed_form)
        _report(ok, y, m, v)
        return TiltedSummary(*(out[j].reshape(shape) for j in range(5)), ok.reshape(shape))
    res = tilted_numpy.tilted_summary(lik.log_prob, y, m, v, kinks=lik.kinks, want_qp=want_qp)
    _report(res.ok, y, m, v)
    log_z, mean, var = res.log_z, res.mean, res.var
    if closed_form and lik.closed_form_moments:
        log_z, mean, var = lik._tilted_moments(y, m, v)
    qp = np.minimum(res.qp_std, np.sqrt(var)) if want_qp else np.full(shape, np.nan)
    return TiltedSummary(np.asarray(log_z, float), np.asarray(mean, float), np.asarray(var, float),
                         np.asarray(res.entropy, float), qp, np.asarray(res.ok, bool))


def quadrature_moments(lik, y, cavity_mean, cavity_var):
    """(log Z, mean, var) by the adaptive quadrature (the default of Likelihood.tilted_moments)."""
    s = tilted_summary(lik, y, cavity_mean, cavity_var, want_qp=False, closed_form=False)
    return s.log_z, s.mean, s.var


def qp_std(lik, y, cavity_mean, cavity_var, engine: str = "auto") -> np.ndarray:
    """sigma_QP (eq. 7) by direct adaptive quadrature, vectorised over broadcast inputs."""
    return tilted_summary(lik, y, cavity_mean, cavity_var, want_qp=True, engine=engine).qp_std


def tilted_cdf(lik, x, y, cavity_mean, cavity_var, upper: bool = False, engine: str = "auto") -> np.ndarray:
    """F(x) (or 1 - F(x) with ``upper=True``, computed directly) of the tilted distribution."""
    x = as_float_array(x, "x")
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    lk = _handle(lik, engine)
    if lk is None:
            return tilted_numpy.tilted_cdf(lik.log_prob, x, y, m, v, upper=upper, kinks=lik.kinks)
    if y.ndim == 0:
        out = cdf_many(lk, float(y), float(m), float(v), *_flat(x), upper)
        return out.reshape(x.shape)
    x, y, m, v = np.broadcast_arrays(x, y, m, v)
    out = cdf_elementwise(lk, *_flat(y, m, v, x), upper)
    return out.reshape(x.shape)


def tilted_quantile(lik, u, y, cavity_mean, cavity_var, engine: str = "auto") -> np.ndarray:
    """F^-1(u) of one tilted distribution (scalar y, cavity) at probabilities ``u`` in (0, 1)."""
    u = as_float_array(u, "u")
    y, m, v = _prepare(lik, y, cavity_mean, cavity_var)
    if y.ndim != 0:
        raise ValueError("tilted_quantile takes one tilted distribution: scalar y, cavity_mean, cavity_var")
    lk = _handle(lik, engine)
    if lk is None:
            return tilted_numpy.tilted_quantile(lik.log_prob, u, y, m, v, kinks=lik.kinks)
    out = quantiles(lk, float(y), float(m), float(v), *_flat(u))
    return out.reshape(u.shape)
