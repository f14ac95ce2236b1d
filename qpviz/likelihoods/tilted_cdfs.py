"""Closed-form CDFs of three tilted distributions q(f) = p(y|f) N(f|m, v) / Z.

QP (QP paper 000, eq. 7) needs the CDF F of the tilted distribution; for three likelihoods it
has a closed form:

* :func:`probit_tilted_cdf`: p(y|f) = Phi(y f), Owen's T (paper 000, App. C.1, eqs. 35-49);
* :func:`step_tilted_cdf`: p(y|f) = eps + (1 - 2 eps) H(y f) (paper 002, eq. 3), a two-piece
  truncated normal;
* :func:`poisson_square_tilted_cdf`: p(y|f) = f^(2y) exp(-f^2) / y! (paper 000, App. C.2,
  eqs. 61-67), a binomial sum of incomplete gamma functions.

Every function broadcasts ``x, y, m, v`` with NumPy rules, returns float64 arrays, and gives the
CDF (``upper=False``) or the survival function 1 - F (``upper=True``). Both are computed
directly, never as 1 minus the other where that would cancel, so tails keep their relative
accuracy. The closed forms are used where they are well conditioned; where they would cancel
(tiny Z, far tails, alternating sums) a stable form of the *same* integral is used instead and
each function's docstring says which. The stable fallbacks integrate a positive, monotone,
log-space integrand with double-exponential (tanh-sinh / exp-sinh) nodes, which resolve any
length scale without tuning.
"""
from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["probit_tilted_cdf", "step_tilted_cdf", "poisson_square_tilted_cdf"]

_LOG_2PI = float(np.log(2.0 * np.pi))
_LOG_SQRT_PI_2 = 0.5 * float(np.log(0.5 * np.pi))
_EPS = np.finfo(float).eps

#: Owen's T result is kept where the terms it subtracts are at most this many times larger
#: than the result (so at most ~3 digits are lost); elsewhere the stable quadrature is used.
_OWEN_MAX_CANCELLATION = 256.0

# Double-exponential nodes. exp-sinh on [0, inf): t = exp(pi/2 sinh(tau)); tanh-sinh on [0, 1]:
# s = logistic(pi sinh(tau)). Step 1/32 and the tau ranges give ~1e-15 relative accuracy for
# smooth monotone integrands at every scale from 1e-40 to 1e10 (checked against mpmath in
# tests/test_tilted_cdfs.py).
_DE_STEP = 1.0 / 32.0
_TAU_HALF = np.arange(-5.0, 3.6 + _DE_STEP / 2, _DE_STEP)
_HALF_T = np.exp(0.5 * np.pi * np.sinh(_TAU_HALF))
_HALF_LOGW = np.log(_DE_STEP * 0.5 * np.pi * np.cosh(_TAU_HALF)) + 0.5 * np.pi * np.sinh(_TAU_HALF)
_TAU_FINITE = np.arange(-3.2, 3.2 + _DE_STEP / 2, _DE_STEP)
_FIN_ARG = np.pi * np.sinh(_TAU_FINITE)
#: distance of each node from the right end, as a fraction of the interval: 1 / (1 + e^arg)
_FIN_FROM_RIGHT = special.expit(-_FIN_ARG)
_FIN_LOGW = (
    np.log(_DE_STEP * np.pi * np.cosh(_TAU_FINITE))
    + special.log_expit(_FIN_ARG)
    + special.log_expit(-_FIN_ARG)
)


# -- input handling ------------------------------------------------------------------------
def _prepare(x, y, m, v, what: str):
    try:
        arrays = [np.asarray(a, dtype=np.float64) for a in (x, y, m, v)]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: x, y, m and v must be numeric (numbers or arrays)") from exc
    x, y, m, v = np.broadcast_arrays(*arrays)
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(m)) and np.all(np.isfinite(v))):
        raise ValueError(f"{what}: y, cavity mean m and cavity variance v must be finite")
    if np.any(np.isnan(x)):
        raise ValueError(f"{what}: x contains NaN; pass the points where the CDF is wanted")
    if np.any(v <= 0):
        raise ValueError(f"{what}: the cavity variance v must be > 0, got min {v.min():g}; use e.g. v=1.0")
    return x, y, m, v


def _check_labels(y, what: str):
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{what}: labels y must be -1 or +1; got {np.unique(y)[:6].tolist()}")


def _logsumexp_rows(a):
    """log sum exp over the last axis, -inf for rows of -inf (no warnings)."""
    top = np.max(a, axis=-1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.sum(np.exp(a - safe), axis=-1)) + safe[..., 0]
    return np.where(np.isfinite(top[..., 0]), out, top[..., 0])


def _log_integral_left(log_integrand, x, scale):
    """log int_{-inf}^x exp(log_integrand(f)) df by exp-sinh quadrature (f = x - scale t).

    Accurate (relative) when the integrand is smooth and non-decreasing on (-inf, x], i.e. x
    is left of the mode of a log-concave integrand; ``scale`` is the integrand's length scale.
    """
    f = x[..., None] - scale[..., None] * _HALF_T
    return _logsumexp_rows(_HALF_LOGW + log_integrand(f)) + np.log(scale)


def _log_integral_finite(log_integrand, a, b):
    """log int_a^b exp(log_integrand(f)) df by tanh-sinh quadrature (a < b), nodes dense at both ends."""
    width = b - a
    f = b[..., None] - width[..., None] * _FIN_FROM_RIGHT
    return _logsumexp_rows(_FIN_LOGW + log_integrand(f)) + np.log(width)


def _log_diff_exp(a, b):
    """log(exp(a) - exp(b)) for a >= b (-inf where equal)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def _log_mills(z):
    """log(Phi(-z) / phi(z)) (log of the Mills ratio), accurate for every real z."""
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(special.erfcx(z / np.sqrt(2.0))) + _LOG_SQRT_PI_2


def _log_norm_interval(lo, hi, width):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, with ``width`` = hi - lo computed by the caller.

    When the interval lies in one tail the difference of two small CDF values is formed as
    Phi(-lo) (1 - exp(delta)), delta = log Phi(-hi) - log Phi(-lo)
    = -width (hi + lo) / 2 + log(Mills(hi) / Mills(lo)), which keeps relative accuracy even
    for a tiny interval far in the tail.
    """
    lo, hi, width = np.broadcast_arrays(lo, hi, width)
    upper_tail = lo >= 0
    lower_tail = hi <= 0
    # one-tail cases, mirrored so that both ends are >= 0: a = closer end, b = farther end
    a = np.where(upper_tail, lo, np.where(lower_tail, -hi, 0.0))
    b = np.where(upper_tail, hi, np.where(lower_tail, -lo, 1.0))
    with np.errstate(invalid="ignore", over="ignore"):
        delta = -0.5 * width * (a + b) + _log_mills(b) - _log_mills(a)
    delta = np.where(np.isinf(b), -np.inf, delta)
    delta = np.where(width == 0, 0.0, delta)
    tail = special.log_ndtr(-a) + _log_diff_exp(0.0, np.minimum(delta, 0.0))
    with np.errstate(divide="ignore"):
        straddle = np.log1p(-(special.ndtr(np.minimum(lo, 0.0)) + special.ndtr(-np.maximum(hi, 0.0))))
    # a narrow interval (anywhere): see _log_narrow_interval
    half = 0.5 * np.where(np.isfinite(width), width, 0.0)
    c = np.where(np.isfinite(lo), lo, 0.0) + half
    narrow = np.isfinite(width) & (half * (np.abs(c) + 3.0) < 0.1)
    series = -0.5 * c * c - 0.5 * _LOG_2PI + _log_narrow_interval(c, half)
    return np.where(narrow, series, np.where(upper_tail | lower_tail, tail, straddle))


def _log_narrow_interval(c, half):
    """log[(Phi(c + half) - Phi(c - half)) / phi(c)] = log(2 half sum_k He_2k(c) half^2k / (2k+1)!).

    The Hermite generating function exp(-c t - t^2/2) = sum_n He_n(-c) t^n / n! integrated over
    [-half, half]; five terms are exact to rounding where half (|c| + 3) < 0.1, where a
    difference of two CDF values would cancel.
    """
    c2, h2 = c * c, half * half
    hermite = (
        1.0
        + (c2 - 1.0) * h2 / 6.0
        + ((c2 - 6.0) * c2 + 3.0) * h2**2 / 120.0
        + (((c2 - 15.0) * c2 + 45.0) * c2 - 15.0) * h2**3 / 5040.0
        + ((((c2 - 28.0) * c2 + 210.0) * c2 - 420.0) * c2 + 105.0) * h2**4 / 362880.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):  # (callers use only the narrow entries)
        return np.log(2.0 * half) + np.log(hermite)


def _log_interval_over_tail(a, d):
    """log[(Phi(a + d) - Phi(a)) / Phi(-a)] for a >= 0, d >= 0, without forming either tail.

    With Mills(t) = Phi(-t)/phi(t): = log(1 - exp(Delta)), Delta = log Phi(-a-d) - log Phi(-a)
    = -d (2a + d)/2 + log Mills(a + d) - log Mills(a); for a narrow interval the Hermite series
    around the midpoint c = a + d/2 instead: phi(c)/Phi(-a) = exp(-(d/2)(2a + d/2)/2)/Mills(a).
    """
    half = 0.5 * d
    c = a + half
    narrow = half * (c + 3.0) < 0.1
    with np.errstate(invalid="ignore", over="ignore"):
        delta = -0.5 * d * (2.0 * a + d) + _log_mills(a + d) - _log_mills(a)
    delta = np.where(np.isinf(d), -np.inf, delta)
    wide = _log_diff_exp(0.0, np.minimum(delta, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):  # (d = inf only reaches the wide branch)
        series = -0.5 * half * (2.0 * a + half) - _log_mills(a) + _log_narrow_interval(c, half)
    return np.where(narrow, series, wide)


# -- probit --------------------------------------------------------------------------------
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
    x, y, m, v = _prepare(x, y, m, v, what)
    _check_labels(y, what)
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
    const = -0.5 * np.log(v) - 0.5 * _LOG_2PI - log_z

    def log_q(f):
        return special.log_ndtr(y * f) - 0.5 * (f - m) ** 2 / v + const

    return log_q


def _probit_mode(y, m, v):
    """Mode of Phi(y f) N(f|m, v): root of y M(y f) = (f - m)/v, M = phi/Phi (bisection+Newton)."""
    lo = m.copy()
    hi = m + y * v * np.exp(-0.5 * m**2 - 0.5 * _LOG_2PI - special.log_ndtr(y * m))
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    f = 0.5 * (lo + hi)
    for _ in range(200):
        z = y * f
        mills = np.exp(-0.5 * z**2 - 0.5 * _LOG_2PI - special.log_ndtr(z))
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
    log_mass = _log_integral_left(log_q, np.where(left, x, -x), scale)
    mass = np.exp(log_mass)
    return np.where(left, mass, 1.0 - mass)


# -- step ----------------------------------------------------------------------------------
def step_tilted_cdf(x, y, m, v, eps, upper: bool = False) -> np.ndarray:
    """CDF (or survival) of q(f) = [eps + (1 - 2 eps) H(y f)] N(f|m, v) / Z (paper 002, eq. 3).

    A two-piece truncated normal. For y = +1, with s = sqrt(v), a = -m/s (the step at f = 0),
    h = (x - m)/s:

        Z = eps Phi(a) + (1 - eps) Phi(-a),
        Z F(x) = eps Phi(h)                                   (x <= 0),
        Z F(x) = eps Phi(a) + (1 - eps) [Phi(h) - Phi(a)]     (x > 0),
        Z (1 - F(x)) = (1 - eps) Phi(-h)                      (x >= 0),
        Z (1 - F(x)) = (1 - eps) Phi(-a) + eps [Phi(a) - Phi(h)]   (x < 0).

    y = -1 follows from f -> -f: F(x; -1, m) = 1 - F(-x; +1, -m). All sums are of positive
    terms, formed in log space and, where a >= 0, relative to Phi(-a) (Z can be as small as
    Phi(-200) when eps = 0): Phi(-h)/Phi(-a) and (Phi(h) - Phi(a))/Phi(-a) come from Mills
    ratios and a Hermite series (``_log_interval_over_tail``), never from differences of logs.
    """
    what = "step_tilted_cdf"
    x, y, m, v = _prepare(x, y, m, v, what)
    _check_labels(y, what)
    eps_arr = np.broadcast_to(np.asarray(eps, dtype=np.float64), x.shape)
    if not np.all((eps_arr >= 0) & (eps_arr < 0.5)):
        raise ValueError(f"{what}: the label-noise probability eps must be in [0, 0.5); got {eps!r}")
    flip = y < 0
    # y = -1: F(x; -1, m) = SF(-x; +1, -m) and SF(x; -1, m) = F(-x; +1, -m)
    xs = np.where(flip, -x, x)
    ms = np.where(flip, -m, m)
    want_upper = flip != bool(upper)
    s = np.sqrt(v)
    with np.errstate(divide="ignore"):
        log_eps = np.log(eps_arr)
    log_keep = np.log1p(-eps_arr)
    a = -ms / s
    with np.errstate(invalid="ignore", over="ignore"):
        h = (xs - ms) / s
    xa = np.where(np.isfinite(xs), xs, 0.0)
    d = xa / s  # = h - a, formed without cancellation
    # where (1 - eps) Phi(-a) dominates Z and a >= 0, every term is scaled by Phi(-a) (Z can be as
    # small as Phi(-200) when eps = 0): tails at h and a are then compared through their Mills
    # ratios, never through their logs
    a_pos = (a >= 0) & (log_keep + special.log_ndtr(-a) >= log_eps + special.log_ndtr(a))
    ref = np.where(a_pos, special.log_ndtr(-a), 0.0)
    tail_a = np.where(a_pos, 0.0, special.log_ndtr(-a))  # log Phi(-a) - ref
    head_a = special.log_ndtr(a) - ref  # log Phi(a) - ref
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = -0.5 * d * (h + a) + _log_mills(h) - _log_mills(a)  # log Phi(-h)/Phi(-a), h, a >= 0
    tail_h = np.where(a_pos & (h >= 0), np.where(np.isposinf(h), -np.inf, ratio), special.log_ndtr(-h) - ref)
    log_z = np.logaddexp(log_eps + head_a, log_keep + tail_a)
    # lower: x <= 0 -> eps Phi(h); x > 0 -> eps Phi(a) + (1-eps) (Phi(h) - Phi(a))
    low_left = log_eps + special.log_ndtr(h) - ref
    d_pos = np.maximum(np.where(np.isfinite(xs), d, np.inf), 0.0)
    interval = np.where(
        a_pos,
        _log_interval_over_tail(np.maximum(a, 0.0), d_pos),
        _log_norm_interval(a, np.maximum(h, a), d_pos),
    )
    low_right = np.logaddexp(log_eps + head_a, log_keep + interval)
    log_lower = np.where(xs <= 0, low_left, low_right)
    # upper: x >= 0 -> (1-eps) Phi(-h); x < 0 -> (1-eps) Phi(-a) + eps (Phi(a) - Phi(h))
    up_right = log_keep + tail_h
    up_left = np.logaddexp(
        log_keep + tail_a,
        log_eps + _log_norm_interval(np.minimum(h, a), a, np.maximum(-d, 0.0)) - ref,
    )
    log_upper = np.where(xs >= 0, up_right, up_left)
    with np.errstate(invalid="ignore"):
        out = np.exp(np.where(want_upper, log_upper, log_lower) - log_z)
    out = np.where(np.isneginf(x), float(upper), np.where(np.isposinf(x), 1.0 - float(upper), out))
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


# -- Poisson with square link ----------------------------------------------------------------
def poisson_square_tilted_cdf(x, y, m, v, upper: bool = False) -> np.ndarray:
    """CDF (or survival) of q(f) = f^(2y) exp(-f^2) N(f|m, v) / (y! Z), counts y = 0, 1, 2, ...

    Completing the square (QP paper 000, App. C.2, eqs. 52, 55, 62, 67):
    q(f) is proportional to f^(2y) N(f | beta, tau^2), beta = m/(1 + 2v), tau^2 = v/(1 + 2v)
    = alpha/2. The paper expands (f - beta + beta)^(2y) binomially about beta (eq. 64) and
    integrates each power against the Gaussian with incomplete gamma functions (eqs. 65-66).
    That sum alternates in sign when beta < 0 (or x < beta) and cancels catastrophically for
    large y, so here every piece is written as a sum of *positive* terms:

    * normaliser: int f^(2y) N(f|mu, tau^2) df = sum_j C(2y, 2j) mu^(2y-2j) tau^(2j) (2j-1)!!;
    * upper pieces U(c, mu) = int_c^inf f^(2y) N(f|mu, tau^2) df, c >= 0:
      mu >= 0: eq. 64 about mu, sum_k C(2y,k) mu^(2y-k) tau^k M_k, with
      M_k = int_{(c-mu)/tau}^inf t^k phi(t) dt > 0 (the incomplete gamma terms of eq. 66,
      Gamma((k+1)/2, t0^2/2) 2^((k-1)/2)/sqrt(2 pi), evaluated by their positive recurrence);
      mu < 0: expanded about c instead, sum_k C(2y,k) c^(2y-k) tau^k I_k(delta), with
      I_k = int_0^inf u^k phi(u + delta) du > 0, delta = (c - mu)/tau (recurrence / continued
      fraction, see ``_log_shifted_moments``);
    * F(x) for x <= 0 is U(-x, -beta) (f -> -f, the likelihood is even in f); SF(x) = F(-x)
      at -m. For x > 0, F = 1 - SF unless that would cancel (F < 1/4): then
      F = [U(0, -beta) + int_0^x f^(2y) N(f|beta, tau^2) df] / normaliser, the last
      integral by tanh-sinh quadrature of its positive integrand in log space.

    All sums are formed in log space (log-sum-exp), so y up to several hundred is fine.
    """
    what = "poisson_square_tilted_cdf"
    x, y, m, v = _prepare(x, y, m, v, what)
    if not np.all((y >= 0) & (y == np.round(y))):
        raise ValueError(f"{what}: counts y must be integers >= 0; got {np.unique(y)[:6].tolist()}")
    if upper:
        x, m = -x, -m  # SF(x; m) = F(-x; -m): q(f; m) = q(-f; -m)
    return _poisson_square_lower(x, y, m, v)


def _poisson_square_lower(x, y, m, v):
    beta = m / (1.0 + 2.0 * v)
    tau = np.sqrt(v / (1.0 + 2.0 * v))
    n = (2.0 * y).astype(np.int64)
    log_norm = _log_even_power_mean(n, beta, tau)
    xa = np.where(np.isfinite(x), x, 0.0)
    # x <= 0: F = U(-x, -beta) / norm
    log_left = _log_upper_power_integral(n, np.maximum(-xa, 0.0), -beta, tau)
    cdf = np.exp(np.minimum(log_left - log_norm, 0.0))
    right = xa > 0
    if np.any(right):
        sf = np.exp(
            np.minimum(_log_upper_power_integral(n[right], xa[right], beta[right], tau[right]) - log_norm[right], 0.0)
        )
        cdf_right = 1.0 - sf
        small = cdf_right < 0.25
        if np.any(small):
            idx = np.flatnonzero(right)[small]
            neg = _log_upper_power_integral(n[idx], np.zeros(idx.size), -beta[idx], tau[idx])
            inner = _log_integral_finite(
                _power_gauss_log_density(n[idx], beta[idx], tau[idx]), np.zeros(idx.size), xa[idx]
            )
            cdf_right[small] = np.exp(np.logaddexp(neg, inner) - log_norm[idx])
        cdf = np.array(cdf, copy=True)
        cdf[right] = cdf_right
    cdf = np.where(np.isneginf(x), 0.0, np.where(np.isposinf(x), 1.0, cdf))
    return np.clip(cdf, 0.0, 1.0)


def _power_gauss_log_density(n, mu, tau):
    """f -> log(f^n N(f|mu, tau^2)) (f > 0 nodes), broadcast over trailing node axis."""
    n, mu, tau = (np.asarray(a, float)[..., None] for a in (n, mu, tau))

    def log_g(f):
        with np.errstate(divide="ignore", invalid="ignore"):
            log_f = np.where(n > 0, n * np.log(f), 0.0)
        return log_f - 0.5 * ((f - mu) / tau) ** 2 - np.log(tau) - 0.5 * _LOG_2PI

    return log_g


def _log_binom(n, k):
    return special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)


def _xlogy_power(power, base):
    """power * log(base) with 0 * log(0) = 0 (base >= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(power == 0, 0.0, power * np.log(base))


def _log_even_power_mean(n, mu, tau):
    """log E[f^n], f ~ N(mu, tau^2), n even: log sum_j C(n,2j) |mu|^(n-2j) tau^(2j) (2j-1)!!."""
    kmax = int(n.max()) if n.size else 0
    j2 = np.arange(0, kmax + 1, 2, dtype=float)  # 2j
    n_, mu_, tau_ = (np.asarray(a, float)[..., None] for a in (n, mu, tau))
    # log (2j-1)!! = log((2j)!) - j log 2 - log(j!)
    log_dfact = special.gammaln(j2 + 1.0) - 0.5 * j2 * np.log(2.0) - special.gammaln(0.5 * j2 + 1.0)
    terms = _log_binom(n_, np.minimum(j2, n_)) + _xlogy_power(n_ - j2, np.abs(mu_)) + j2 * np.log(tau_) + log_dfact
    terms = np.where(j2 <= n_, terms, -np.inf)
    return _logsumexp_rows(terms)


def _log_upper_power_integral(n, c, mu, tau):
    """log U(c, mu) = log int_c^inf f^n N(f|mu, tau^2) df for c >= 0, as a sum of positive terms."""
    n, c, mu, tau = np.broadcast_arrays(np.asarray(n), np.asarray(c, float), np.asarray(mu, float), np.asarray(tau, float))
    out = np.empty(n.shape)
    about_mu = mu >= 0
    if np.any(about_mu):
        i = about_mu
        out[i] = _log_upper_about_mean(n[i], c[i], mu[i], tau[i])
    if np.any(~about_mu):
        i = ~about_mu
        out[i] = _log_upper_about_start(n[i], c[i], mu[i], tau[i])
    return out


def _log_upper_about_mean(n, c, mu, tau):
    """mu >= 0: sum_k C(n,k) mu^(n-k) tau^k M_k(t0), t0 = (c - mu)/tau, all terms >= 0."""
    kmax = int(n.max()) if n.size else 0
    return _log_binomial_sum(n, mu, tau, _log_gauss_tail_moments((c - mu) / tau, kmax))


def _log_binomial_sum(n, base, tau, log_moments):
    """log sum_(k <= n) C(n, k) base^(n-k) tau^k exp(log_moments[..., k]) (base >= 0)."""
    k = np.arange(log_moments.shape[-1], dtype=float)
    n_, base_, tau_ = (a[..., None] for a in (n.astype(float), base, tau))
    terms = _log_binom(n_, np.minimum(k, n_)) + _xlogy_power(n_ - k, base_) + k * np.log(tau_) + log_moments
    return _logsumexp_rows(np.where(k <= n_, terms, -np.inf))


def _log_gauss_tail_moments(t0, kmax):
    """log M_k(t0) = log int_{t0}^inf t^k phi(t) dt for k = 0..kmax (every M_k > 0).

    For a = |t0|: S_k(a) = int_a^inf t^k phi(t) dt / phi(a) obeys S_0 = Mills(a), S_1 = 1,
    S_k = a^(k-1) + (k-1) S_(k-2) (positive terms, stable). For t0 >= 0, M_k = phi(a) S_k;
    for t0 < 0, M_k = phi(a) S_k (odd k) or (k-1)!! - phi(a) S_k (even k; phi(a) S_k <= (k-1)!!/2).
    """
    a = np.abs(t0)
    log_phi = -0.5 * a**2 - 0.5 * _LOG_2PI
    with np.errstate(divide="ignore"):
        log_a = np.log(a)
    log_s = np.empty(a.shape + (kmax + 1,))
    log_s[..., 0] = _log_mills(a)
    if kmax >= 1:
        log_s[..., 1] = 0.0
    for k in range(2, kmax + 1):
        log_s[..., k] = np.logaddexp((k - 1) * log_a, np.log(k - 1.0) + log_s[..., k - 2])
    log_tail = log_phi[..., None] + log_s
    k = np.arange(kmax + 1, dtype=float)
    log_dfact = special.gammaln(k + 1.0) - 0.5 * k * np.log(2.0) - special.gammaln(0.5 * k + 1.0)
    even = (k % 2) == 0
    whole = _log_diff_exp(log_dfact, np.minimum(log_tail, log_dfact))
    return np.where((t0[..., None] < 0) & even, whole, log_tail)


def _log_upper_about_start(n, c, mu, tau):
    """mu < 0 <= c: sum_k C(n,k) c^(n-k) tau^k I_k(delta), delta = (c - mu)/tau > 0."""
    kmax = int(n.max()) if n.size else 0
    delta = (c - mu) / tau
    log_i = _log_shifted_moments(delta, kmax) + (-0.5 * delta**2 - 0.5 * _LOG_2PI)[..., None]
    return _log_binomial_sum(n, c, tau, log_i)


def _log_shifted_moments(delta, kmax):
    """log R_k(delta) = log int_0^inf u^k exp(-u^2/2 - delta u) du, k = 0..kmax, delta >= 0.

    R_0 = Mills(delta), R_1 = 1 - delta R_0, R_(k+1) = k R_(k-1) - delta R_k. R_k is the
    minimal solution of this recurrence, smaller than the other by ~exp(-2 delta sqrt(k)), so
    the forward recurrence is used only where 2 delta sqrt(kmax) <= 4 (at most ~2 digits lost);
    elsewhere the ratios rho_k = R_k/R_(k-1) = k/(delta + rho_(k+1)) come from the backward
    continued fraction (Miller's algorithm), started at N = max((sqrt(kmax) + 19/delta)^2, kmax + 60)
    so that the dominant solution has died out (by exp(-38) for large k, by (k/delta^2)^60 for
    large delta), and R_k = R_0 prod rho_j (all positive).
    """
    out = np.empty(delta.shape + (kmax + 1,))
    log_r0 = _log_mills(delta)
    out[..., 0] = log_r0
    if kmax == 0:
        return out
    small = 2.0 * delta * np.sqrt(kmax) <= 4.0
    if np.any(small):
        # scaled by c_k = R_k(0) = 2^((k-1)/2) Gamma((k+1)/2) (c_(k+1) = k c_(k-1)) against overflow:
        # Rs_(k+1) = Rs_(k-1) - delta (c_k / c_(k+1)) Rs_k, Rs_k = R_k / c_k in (0, 1]
        k_all = np.arange(kmax + 2, dtype=float)
        log_c = 0.5 * (k_all - 1.0) * np.log(2.0) + special.gammaln(0.5 * (k_all + 1.0))
        ratio = np.exp(log_c[:-1] - log_c[1:])
        d = delta[small]
        s_prev = np.exp(log_r0[small] - log_c[0])
        s_cur = (1.0 - d * np.exp(log_r0[small])) / np.exp(log_c[1])
        vals = [s_prev, s_cur]
        for k in range(1, kmax):
            s_next = s_prev - d * ratio[k] * s_cur
            vals.append(s_next)
            s_prev, s_cur = s_cur, s_next
        out[small] = np.log(np.stack(vals, axis=-1)) + log_c[: kmax + 1]
    big = ~small
    if np.any(big):
        d = delta[big]
        # large k: dominance exp(-2 delta sqrt(k)); large delta: a factor ~k/delta^2 per step
        start = np.maximum(np.ceil((np.sqrt(kmax) + 19.0 / d) ** 2), kmax + 60).astype(np.int64)
        rho = np.zeros(d.shape)
        log_rho = np.empty(d.shape + (kmax + 1,))
        for k in range(int(start.max()), 0, -1):
            rho = np.where(k <= start, k / (d + rho), 0.0)
            if k <= kmax:
                log_rho[..., k] = np.log(rho)
        log_rho[..., 0] = log_r0[big]
        out[big] = np.cumsum(log_rho, axis=-1)
    return out
