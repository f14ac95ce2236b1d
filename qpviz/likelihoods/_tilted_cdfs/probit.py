"""The probit tilted CDF: Owen's T closed form (QP paper 000, App. C.1), quadrature where it cancels."""
from __future__ import annotations

import numpy as np
from scipy import special

from qpviz.likelihoods._tilted_cdfs.inputs import check_labels, prepare
from qpviz.likelihoods._tilted_cdfs.logspace import LOG_2PI
from qpviz.likelihoods._tilted_cdfs.quadrature import log_integral_left

__all__ = ["probit_tilted_cdf"]

_EPS = np.finfo(float).eps

#: Owen's T result is kept where the terms it subtracts are at most this many times larger
#: than the result (so at most ~3 digits are lost); elsewhere the stable quadrature is used.
_OWEN_MAX_CANCELLATION = 256.0


def probit_tilted_cdf(x, y, m, v, upper: bool = False) -> np.ndarray:
    """CDF (or survival, ``upper=True``) of q(f) = Phi(y f) N(f|m, v) / Z, Z = Phi(k).

    Owen's T closed form (QP paper 000, App. C.1, eqs. 37-46, in Owen's 1956 notation):
    with h = (x - m)/sqrt(v), k = y m / sqrt(1 + v) (eq. 35; the paper writes
    z = m/(y sqrt(1+v)), the same for y = +-1) and correlation r = -y sqrt(v/(1 + v)),

        Z F(x) = Phi2(h, k; r)
               = Phi(h)/2 + Phi(k)/2 - T(h, (k - r h)/(h c)) - T(k, (h - r k)/(k c)) - eta,

    c = sqrt(1 - r^2) = 1/sqrt(1 + v), eta = 0 if h k > 0 or (h k = 0 and h + k >= 0) else 1/2
    (eqs. 40-43; for y = +1, r = -rho and this is eq. 40). On the lines h = 0 or k = 0 the limits
    T(0, +-inf) = +-1/4 give eqs. 47-48, and h = k = 0 gives F = 1/2 - y arctan(sqrt v)/pi
    (eq. 49). The survival uses the symmetry 1 - F(x; y, m) = F(-x; -y, -m).

    Owen's form subtracts O(1) terms, so it loses relative accuracy where F is far below
    them: tiny Z (y m << 0 with small v) and far tails. There (more than ~3 digits would be
    lost) F is computed from the same integral int_{-inf}^x Phi(y f) N(f|m, v) df / Z by
    exp-sinh quadrature of the log-concave integrand in log space (right of the mode, as
    1 - survival, which is then >= 1/e: a log-concave density has F(mode) in [1/e, 1 - 1/e]).
    """
    what = "probit_tilted_cdf"
    x, y, m, v = prepare(x, y, m, v, what)
    check_labels(y, what)
    if upper:
        x, y, m = -x, -y, -m
    return _probit_lower(x, y, m, v)


def _probit_lower(x, y, m, v):
    s = np.sqrt(v)
    root = np.sqrt(1.0 + v)
    k = y * m / root
    log_z = special.log_ndtr(k)
    with np.errstate(invalid="ignore", over="ignore"):
        h = (x - m) / s
    phi2, size = _owen_orthant(h, k, -y * s / root, 1.0 / root)
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = phi2 / np.exp(log_z)
        well_conditioned = (phi2 > 0) & (size <= _OWEN_MAX_CANCELLATION * phi2) & np.isfinite(cdf)
    cdf = np.where(np.isneginf(x), 0.0, np.where(np.isposinf(x), 1.0, cdf))
    redo = ~well_conditioned & np.isfinite(x)
    if np.any(redo):
        cdf = np.array(cdf, copy=True)
        cdf[redo] = _probit_lower_quadrature(x[redo], y[redo], m[redo], v[redo], log_z[redo])
    return np.clip(cdf, 0.0, 1.0)


def _owen_orthant(h, k, r, c):
    """Phi2(h, k; r) by Owen's T, and the size of the largest subtracted term (cancellation)."""
    h0 = h == 0
    k0 = k == 0
    hs = np.where(h0, 1.0, h)
    ks = np.where(k0, 1.0, k)
    with np.errstate(over="ignore", invalid="ignore"):
        a_h = (k - r * h) / (hs * c)
        a_k = (h - r * k) / (ks * c)
    # T(h, a_h) as h -> 0 (eqs. 47-48): a_h -> sign(k) inf (h -> 0+ convention, matched by eta)
    t_h = np.where(h0, np.where(k0, 0.0, 0.25 * np.sign(k)), special.owens_t(h, np.where(h0, 0.0, a_h)))
    t_k = np.where(k0, np.where(h0, 0.0, 0.25 * np.sign(h)), special.owens_t(k, np.where(k0, 0.0, a_k)))
    hk = h * k
    eta = np.where((hk > 0) | ((hk == 0) & (h + k >= 0)), 0.0, 0.5)
    phi2 = 0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - t_h - t_k - eta
    # h = k = 0: orthant probability 1/4 + arcsin(r)/(2 pi) = 1/4 + arctan(r/c)/(2 pi) (eq. 49),
    # written without cancellation for r < 0
    t = r / c
    with np.errstate(divide="ignore"):
        orthant = np.where(t >= 0, 0.25 + np.arctan(t) / (2.0 * np.pi), np.arctan(-1.0 / t) / (2.0 * np.pi))
    phi2 = np.where(h0 & k0, orthant, phi2)
    size = np.maximum.reduce([0.5 * special.ndtr(h), 0.5 * special.ndtr(k), np.abs(t_h), np.abs(t_k), eta])
    return phi2, size


def _probit_log_density(y, m, v, log_z):
    """log q(f) of the probit tilted distribution, as a function of f (broadcast over nodes)."""
    y, m, v, log_z = (a[..., None] for a in (y, m, v, log_z))
    const = -0.5 * np.log(v) - 0.5 * LOG_2PI - log_z

    def log_q(f):
        return special.log_ndtr(y * f) - 0.5 * (f - m) ** 2 / v + const

    return log_q


def _probit_mode(y, m, v):
    """Mode of Phi(y f) N(f|m, v): root of y M(y f) = (f - m)/v, M = phi/Phi (bisection+Newton)."""
    lo = m.copy()
    hi = m + y * v * np.exp(-0.5 * m**2 - 0.5 * LOG_2PI - special.log_ndtr(y * m))
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    f = 0.5 * (lo + hi)
    for _ in range(200):
        z = y * f
        mills = np.exp(-0.5 * z**2 - 0.5 * LOG_2PI - special.log_ndtr(z))
        grad = y * mills - (f - m) / v
        curv = -mills * (z + mills) - 1.0 / v
        lo = np.where(grad > 0, f, lo)
        hi = np.where(grad > 0, hi, f)
        step = f - grad / curv
        f_new = np.where((step > lo) & (step < hi), step, 0.5 * (lo + hi))
        if np.all(np.abs(f_new - f) <= 4 * _EPS * np.maximum(np.abs(f), 1.0)):
            return f_new, -curv
        f = f_new
    return f, -curv


def _probit_lower_quadrature(x, y, m, v, log_z):
    """F(x) = int_{-inf}^x q(f) df by exp-sinh quadrature on the monotone side of the mode."""
    mode, curvature = _probit_mode(y, m, v)
    scale = 1.0 / np.sqrt(curvature)
    left = x <= mode
    # integrate towards -inf from x (left of the mode) or towards +inf (right of the mode)
    log_q = _probit_log_density(np.where(left, y, -y), np.where(left, m, -m), v, log_z)
    log_mass = log_integral_left(log_q, np.where(left, x, -x), scale)
    mass = np.exp(log_mass)
    return np.where(left, mass, 1.0 - mass)
