"""Fast tilted moments and sigma_QP of nearly Gaussian tilted distributions (numba): a
Gauss-Hermite rule in the Laplace frame, checked by its own spectral tail, for any likelihood
with a numba log density (tempered or not).

The tilted density q(f) = p(y|f)^alpha N(f | m, v) (alpha = lk[HANDLE_ALPHA]) is written in the frame of
its Laplace approximation, f = mu + s x with mu the mode (Newton on log q) and
s^2 = v / (1 - v alpha d^2/df^2 log p(y|mu)) (the inverse curvature of log q):

    q(mu + s x) = q(mu) sqrt(2 pi) phi(x) g(x),   g(x) = exp(log q(mu + s x) - log q(mu) + x^2/2).

g is expanded in the orthonormal Hermite polynomials psi_k = He_k / sqrt(k!) of N(0, 1),
g ~ sum_{k<n} b_k psi_k, by the n-point Gauss-Hermite rule (nodes x_j, weights W_j of phi):
b_k = sum_j W_j g(x_j) psi_k(x_j) (the interpolant of g at the nodes). Then

* Z = s q(mu) sqrt(2 pi) b_0, so log Z = alpha log p(y|mu) - (mu - m)^2/(2v) + log(s/sqrt v) + log b_0;
* mean = mu + s b_1/b_0 and var = s^2 ((sqrt(2) b_2 + b_0)/b_0 - (b_1/b_0)^2) (x = psi_1,
  x^2 = sqrt(2) psi_2 + 1);
* the CDF in closed form (d/dx [phi He_{k-1}] = -phi He_k):
  F(x) = Phi(x) - phi(x) sum_{k>=1} (b_k/b_0) psi_{k-1}(x)/sqrt(k), and 1 - F(x) computed as
  Phi(-x) + the same sum (no cancellation), so sigma_QP = s int phi(Phi^-1(F(x))) dx (QP paper
  eq. 7) is one more sum over the same nodes, s sum_j W_j r(x_j) with r = phi(Phi^-1(min(F, 1 - F))) / phi.

The answer is used only where it is accurate, and the caller falls back to the adaptive
quadrature (:mod:`qpviz.tilted.moments`) otherwise (``ok`` False):

* Newton must converge in a few steps with positive precision (log q concave at the mode);
* the highest two coefficients must be negligible, |b_{n-2}| + |b_{n-1}| <= HERMITE_TAIL_TOL b_0
  (spectral decay: g is then a polynomial of low degree to within rounding, on the range of
  the nodes, and the rule integrates it exactly). The short rule (HERMITE_NODES) is tried
  first, then a middle one (MIDDLE_NODES, ~10 widths) and a long one (LONG_NODES, ~15 widths)
  where the previous one's test refuses;
* the moments alone (EP, Power EP: no CDF) need only b_0, b_1, b_2, which the n-point rule
  computes exactly for every part of g of degree <= 2n - 3 (it integrates polynomials of degree
  2n - 1 exactly). Where the coefficients decay geometrically, |b_k| ~ rho^k, the error is
  of the order of the first neglected degree, rho^(2n-2) ~ (|b_{n-1}| / b_0)^2. So the tiny
  rule (TINY_NODES = 6) is tried first for the moments, accepted when |b_4| + |b_5| <=
  MOMENT_TAIL_TOL b_0 = 1e-6 b_0 (the tail term's share of the error: ~1e-12 relative; the
  probes below allow up to ~1e-10, measured 1.3e-10 in the variance at y m = 7.5, s = 0.58). Its
  nodes reach only +-3.3 widths, so g is also evaluated at the short rule's outermost nodes, +-5.5 widths, and the tiny rule is
  used only where its polynomial sum_k b_k psi_k matches g there within PROBE_TOL = 1e-5 b_0:
  what lies beyond +-3.3 widths then shows (a probit cavity far on the flat side, whose bend lies
  6-8 widths out, misses by 1e-4-1e-2), and a mismatch below 1e-5 where the Gaussian weighs
  x^2 phi(x) / phi(0) ~ 1e-5 moves the moments by ~1e-10 at most. It takes all the narrow
  cavities of a large-N sparse sweep (8 evaluations of log p instead of 12). Where it refuses,
  the chain above follows;
* **Taylor route** (the moments alone, before the tiny rule): a log-concave likelihood with a
  ``taylor`` kernel (:mod:`qpviz._jit`; probit) gives the Taylor coefficients T_k of log p at mu
  in one call, so log g(x) = sum_k h_k x^k with h_k = alpha T_k s^k (plus the frame's linear and
  quadratic terms), g = exp(log g) = sum_n e_n x^n (n e_n = sum_k k h_k e_{n-k}, to EXP_DEGREE)
  and b_0, b_1, b_2 are its Gaussian moments sum_n e_n E[x^(n+j)]. Accepted where the truncated
  log p holds over the Gaussian: its terms averaged over N(0, 1), |h_k| E|x|^k, decay (the last
  two at most half the two before: a series still growing towards a far feature, as for a probit
  cavity far on the flat side, is refused) and the last two sum to <= TAYLOR_TOL; and where the
  power series' last three terms are <= EXP_TAIL_TOL of E[g]. It takes ~98% of the cavities of a
  sweep at N = 1e5, M = 200 (std 0.02-0.07): one kernel call instead of ten, a site update in
  ~0.45 us instead of ~0.65;
* sigma_QP passes the same test on r (its top two Hermite coefficients against its mean): r is
  not smooth where F has a plateau, e.g. between two far-apart modes of Poisson-square, where the
  moments may still be accurate; sigma_QP alone then comes from the quadrature;
* log p has no kink (``lk_kink`` NaN): likelihoods with one (Laplace, step) keep the quadrature,
  wherever the kink lies (far from it their tilted distribution is Gaussian to rounding, and a
  site precision of exactly zero would come out of rounding noise);
* none of the likelihood's start points (``lk_starts``: where other modes may lie, e.g. near
  y for Student-t) outside the nodes' range carries log q above log q(mu) - FAR_LOG_DROP
  (not asked of a log-concave likelihood, whose tilted densities have one mode).

Narrow cavities (the large-N regime of sparse Power EP / QP) give nearly Gaussian tilted
distributions, where the Taylor route or the tiny rule gives the moments (~0.45-0.65 us per
tempered probit site update, against ~25 us of quadrature) and the short rule sigma_QP; the
Sparse page's cavities (probit, std 0.2-0.6) mostly need the middle
rule, and those far on the probit's flat side the long one; wide cavities near the probit's step
(half a Gaussian) fail every test and go to the quadrature.
tests/tilted/test_tempered_fast.py measures the accuracy against the adaptive quadrature.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.polynomial import hermite_e

from qpviz._jit import (HANDLE_HAS_TAYLOR, HANDLE_UNIMODAL, TAYLOR_TERMS, lk_dlog_prob, lk_kink, lk_log_prob,
                        lk_starts, lk_taylor, stack_buffer)
from qpviz.config import NUMBA_OPTIONS
from qpviz.special import phi_of_ndtri

__all__ = ["HERMITE_NODES", "HERMITE_TAIL_TOL", "TINY_NODES", "MOMENT_TAIL_TOL", "hermite_moments", "hermite_qp_std",
           "hermite_projection", "hermite_summary", "hermite_rules"]

#: nodes of the short Gauss-Hermite rule (narrow cavities: the large-N sweeps), of the middle one
#: (tried where the short rule's tail test refuses: cavities like the Sparse page's, std ~0.2-0.6
#: for probit) and of the long one (where the middle one refuses: e.g. a probit cavity far on the
#: flat side, y m ~ 2-5 with std ~1, where Phi(y f)^alpha bends only in the far tail; the Sparse
#: page's "sine boundary" preset sent 70% of its sites to the quadrature without it, 35% with it:
#: a Power-EP fit at N = 500 took 110 ms, then 70 ms; QP 470 ms, then 240 ms).
#: tests/tilted/test_tempered_fast.py measures each against the quadrature
HERMITE_NODES = 12
MIDDLE_NODES = 32
#: nodes of the rule tried first when only the moments are wanted (module docstring), and its tail
#: tolerance (tests/tilted/test_tempered_fast.py measures the moments it accepts against the quadrature)
TINY_NODES = 6
MOMENT_TAIL_TOL = 1e-6
#: the tiny rule's polynomial must match g within PROBE_TOL b_0 at the short rule's outermost nodes
PROBE_TOL = 1e-5
#: the Taylor route (module docstring): the truncated log p's last two terms, h_k E|x|^k, below
#: TAYLOR_TOL; g's power series to EXP_DEGREE, its last three terms (weighted by Gaussian moments)
#: below EXP_TAIL_TOL of E[g]
TAYLOR_TOL = 1e-13
EXP_DEGREE = 12
EXP_TAIL_TOL = 1e-15
#: E|x|^k of N(0, 1), k = 0 ... TAYLOR_TERMS: 2^(k/2) Gamma((k + 1)/2) / sqrt(pi)
ABS_MOMENTS = np.array([2.0 ** (k / 2) * math.gamma((k + 1) / 2) / math.sqrt(math.pi) for k in range(TAYLOR_TERMS + 1)])
_TAYLOR_BUFFER = TAYLOR_TERMS + 1  # stack_buffer sizes (literal ints for numba)
_EXP_BUFFER = EXP_DEGREE + 1
LONG_NODES = 64
#: accept when |b_{n-2}| + |b_{n-1}| <= HERMITE_TAIL_TOL b_0 (module docstring)
HERMITE_TAIL_TOL = 1e-11
#: another start point beyond the nodes with log q above log q(mode) - FAR_LOG_DROP: quadrature
FAR_LOG_DROP = 60.0
_NEWTON_STEPS = 12
#: Newton stops when its step is below this many Laplace widths: the frame need not be exact (an
#: offset mode only adds to b_1, and the tail test judges the result); the step just taken
#: leaves an offset of second order, ~ (0.1)^2 widths at most
_NEWTON_STOP = 0.1


def _hermite_basis(n: int, x: np.ndarray) -> np.ndarray:
    """psi_0(x) ... psi_{n-1}(x), rows of an (n, len(x)) array: the orthonormal Hermite polynomials
    of N(0, 1), psi_{k+1} = (x psi_k - sqrt(k) psi_{k-1}) / sqrt(k + 1)."""
    psi = np.zeros((n, x.size))
    psi[0] = 1.0
    psi[1] = x
    for k in range(1, n - 1):
        psi[k + 1] = (x * psi[k] - math.sqrt(k) * psi[k - 1]) / math.sqrt(k + 1)
    return psi


def _hermite_tables(n: int) -> tuple:
    """One rule's arrays: nodes x_j; the transform TRANSFORM[k, j] = W_j psi_k(x_j) (W_j the n-point
    Gauss-Hermite weights of N(0, 1)); the CDF matrix CUMULATIVE[j, k] = psi_{k-1}(x_j)/sqrt(k)
    (k >= 1; column 0 is zero); phi(x_j), Phi(x_j), Phi(-x_j)."""
    nodes, weights = hermite_e.hermegauss(n)
    weights = weights / math.sqrt(2.0 * math.pi)
    psi = _hermite_basis(n, nodes)
    cumulative = np.zeros((n, n))
    for k in range(1, n):
        cumulative[:, k] = psi[k - 1] / math.sqrt(k)
    pdf = np.exp(-0.5 * nodes**2) / math.sqrt(2.0 * math.pi)
    cdf = np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in nodes])
    sf = np.array([0.5 * math.erfc(x / math.sqrt(2.0)) for x in nodes])
    return tuple(np.ascontiguousarray(a) for a in (nodes, psi * weights[None, :], cumulative, pdf, cdf, sf))


TINY_RULE = _hermite_tables(TINY_NODES)
SHORT_RULE = _hermite_tables(HERMITE_NODES)
MIDDLE_RULE = _hermite_tables(MIDDLE_NODES)
LONG_RULE = _hermite_tables(LONG_NODES)
_REACH = float(SHORT_RULE[0][-1])  # the short rule's outermost node, in Laplace widths
_TINY_REACH = float(TINY_RULE[0][-1])


#: the probes of the tiny rule (module docstring): x = -+_REACH and the tiny basis there
PROBES = np.array([-_REACH, _REACH])
PROBE_BASIS = np.ascontiguousarray(_hermite_basis(TINY_NODES, PROBES).T)


@njit(**NUMBA_OPTIONS)
def _laplace_frame(lk, y, m, v):
    """(ok, mode mu, Laplace width s, 1 - s^2/v) of log q = alpha log p(y|f) - (f - m)^2/(2v), by
    Newton from m; s^2 = v / (1 - v alpha d^2 log p) (exactly v where log p is linear)."""
    f = m
    sd_cavity = math.sqrt(v)
    for _ in range(_NEWTON_STEPS):
        d1, d2 = lk_dlog_prob(lk, y, f)  # alpha times the derivatives
        precision = 1.0 / v - d2
        grad = d1 - (f - m) / v
        if not (precision > 0.0) or not np.isfinite(grad):
            return False, f, 0.0, 0.0
        step = grad / precision
        if abs(step) > 4.0 * sd_cavity:
            step = math.copysign(4.0 * sd_cavity, step)
        f += step
        stiff = 1.0 - v * d2
        s = math.sqrt(v / stiff)
        if abs(step) <= _NEWTON_STOP * s:
            return True, f, s, -v * d2 / stiff
    return False, f, 0.0, 0.0


@njit(**NUMBA_OPTIONS)
def _log_q_gap(lk, y, m, v, mu, lp_mu, f):
    """log q(f) - log q(mu) with lp_mu = alpha log p(y|mu), without cancellation of the quadratics."""
    return lk_log_prob(lk, y, f) - lp_mu - 0.5 * (f - mu) * (f + mu - 2.0 * m) / v


@njit(**NUMBA_OPTIONS)
def _log_g(lk, y, mu, s, tilt, shrink, lp_mu, x):
    """log g(x) = log q(mu + s x) - log q(mu) + x^2/2, its quadratic parts combined (x^2/2 - s^2 x^2/(2v)
    = shrink x^2/2) and its linear one -s x (mu - m)/v = -tilt x."""
    return lk_log_prob(lk, y, mu + s * x) - lp_mu - tilt * x + 0.5 * shrink * x * x


@njit(**NUMBA_OPTIONS)
def _coefficients(lk, y, m, v, mu, s, shrink, lp_mu, nodes, transform, coef, tail_tol):
    """b_k = sum_j W_j g(x_j) psi_k(x_j) into ``coef`` for one rule (``transform[k, j] = W_j psi_k(x_j)``);
    True when the tail test accepts them, |b_{n-2}| + |b_{n-1}| <= tail_tol b_0 (module docstring)."""
    n = nodes.shape[0]
    g = stack_buffer(LONG_NODES)
    tilt = s * (mu - m) / v  # one division per site, not per node
    for j in range(n):
        gap = _log_g(lk, y, mu, s, tilt, shrink, lp_mu, nodes[j])
        if not (gap < 50.0):  # NaN, or g far from 1: not nearly Gaussian
            return False
        g[j] = math.exp(gap)
    for k in range(n):  # a local sum per coefficient (not n updates of each through memory)
        total = 0.0
        for j in range(n):
            total += transform[k, j] * g[j]
        coef[k] = total
    b0 = coef[0]
    return b0 > 0.0 and abs(coef[n - 1]) + abs(coef[n - 2]) <= tail_tol * b0


@njit(**NUMBA_OPTIONS)
def _probes_match(lk, y, m, v, mu, s, shrink, lp_mu, coef):
    """The tiny rule's polynomial matches g at the probes within PROBE_TOL b_0 (module docstring)."""
    n = PROBE_BASIS.shape[1]
    tilt = s * (mu - m) / v
    for p in range(PROBES.shape[0]):
        x = PROBES[p]
        gap = _log_g(lk, y, mu, s, tilt, shrink, lp_mu, x)
        if not (gap < 50.0):
            return False
        poly = 0.0
        for k in range(n):
            poly += coef[k] * PROBE_BASIS[p, k]
        if not (abs(math.exp(gap) - poly) <= PROBE_TOL * coef[0]):
            return False
    return True


@njit(**NUMBA_OPTIONS)
def _taylor_expansion(lk, y, m, v, mu, s, shrink, coef):
    """The moments' coefficients b_0, b_1, b_2 of g (module docstring, "Taylor route") from the
    likelihood's Taylor coefficients at mu, into ``coef``; (ok, alpha log p(y | mu))."""
    taylor = stack_buffer(_TAYLOR_BUFFER)
    count = lk_taylor(lk, y, mu, taylor)
    if count < 5:
        return False, 0.0
    last = count - 1
    # log g(x) = sum_k h_k x^k: the likelihood's terms in f = mu + s x, plus the Gaussian frame's
    h = stack_buffer(_TAYLOR_BUFFER)
    h[0] = 0.0
    power = 1.0
    for k in range(1, count):
        power *= s
        h[k] = taylor[k] * power
    h[1] -= s * (mu - m) / v
    h[2] += 0.5 * shrink
    # the truncated log p must hold where the Gaussian weighs: its terms averaged over N(0, 1),
    # t_k = |h_k| E|x|^k, must already decay (the last two at most half the two before, pairwise
    # sums, as a coefficient may pass near zero: else the series is still growing towards a far
    # feature, e.g. the bend of a probit cavity far on its flat side) and the last two be negligible
    t_last = abs(h[last]) * ABS_MOMENTS[last] + abs(h[last - 1]) * ABS_MOMENTS[last - 1]
    t_before = abs(h[last - 2]) * ABS_MOMENTS[last - 2] + abs(h[last - 3]) * ABS_MOMENTS[last - 3]
    if not (t_last <= 0.5 * t_before and t_last <= TAYLOR_TOL):
        return False, 0.0
    # g = exp(log g) as a power series, e_0 = 1, n e_n = sum_k k h_k e_{n-k}, and its Gaussian moments
    series = stack_buffer(_EXP_BUFFER)
    series[0] = 1.0
    for n in range(1, EXP_DEGREE + 1):
        total = 0.0
        for k in range(1, min(n, last) + 1):
            total += k * h[k] * series[n - k]
        series[n] = total / n
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    tail = 0.0
    moment = 1.0  # E x^n for even n: (n - 1)!!
    for n in range(0, EXP_DEGREE + 1, 2):
        higher = moment * (n + 1)  # E x^(n+2)
        m0 += series[n] * moment
        m2 += series[n] * higher
        if n + 1 <= EXP_DEGREE:
            m1 += series[n + 1] * higher
        if n >= EXP_DEGREE - 3:
            tail += abs(series[n]) * higher + (abs(series[n + 1]) * higher if n + 1 <= EXP_DEGREE else 0.0)
        moment = higher
    if not (m0 > 0.0 and tail <= EXP_TAIL_TOL * m0):
        return False, 0.0
    coef[0] = m0
    coef[1] = m1
    coef[2] = (m2 - m0) / math.sqrt(2.0)  # E[g psi_2], psi_2 = (x^2 - 1) / sqrt(2)
    return True, taylor[0]


@njit(**NUMBA_OPTIONS)
def _expansion(lk, y, m, v, coef, moments_only):
    """Hermite coefficients b_k of g in the Laplace frame into ``coef`` (module docstring), by the
    tiny rule with the moments' tail test when ``moments_only``, else (or where it refuses) by
    the short rule, else the middle one, else the long one (each where the previous one's tail
    test refuses), after the Taylor route where it applies; returns (ok, mu, s, alpha log p(y|mu),
    the rule used: -2 Taylor, -1 tiny, 0, 1 or 2)."""
    kink = lk_kink(lk, y)
    if kink == kink:  # a kink (not NaN): the quadrature splits its panels there
        return False, m, 0.0, 0.0, 0
    ok, mu, s, shrink = _laplace_frame(lk, y, m, v)
    if not ok:
        return False, mu, s, 0.0, 0
    if moments_only and lk[HANDLE_UNIMODAL] != 0.0 and lk[HANDLE_HAS_TAYLOR] != 0.0:  # one mode, and a Taylor kernel
        taylor_ok, lp_mu = _taylor_expansion(lk, y, m, v, mu, s, shrink, coef)
        if taylor_ok:
            return True, mu, s, lp_mu, -2
    lp_mu = lk_log_prob(lk, y, mu)
    if not np.isfinite(lp_mu):
        return False, mu, s, 0.0, 0
    tiny_sees_all = True  # no other mode beyond the tiny rule's nodes either
    if lk[HANDLE_UNIMODAL] == 0.0:  # not log-concave (a log-concave tilted density has one mode: none to look for)
        s0, s1, s2 = lk_starts(lk, y, m, v)
        for start in (s0, s1, s2):
            if (start == start and abs(start - mu) > _TINY_REACH * s
                    and _log_q_gap(lk, y, m, v, mu, lp_mu, start) > -FAR_LOG_DROP):
                if abs(start - mu) > _REACH * s:
                    return False, mu, s, 0.0, 0
                tiny_sees_all = False
    if (moments_only and tiny_sees_all
            and _coefficients(lk, y, m, v, mu, s, shrink, lp_mu, TINY_RULE[0], TINY_RULE[1], coef, MOMENT_TAIL_TOL)
            and _probes_match(lk, y, m, v, mu, s, shrink, lp_mu, coef)):
        return True, mu, s, lp_mu, -1
    if _coefficients(lk, y, m, v, mu, s, shrink, lp_mu, SHORT_RULE[0], SHORT_RULE[1], coef, HERMITE_TAIL_TOL):
        return True, mu, s, lp_mu, 0
    if _coefficients(lk, y, m, v, mu, s, shrink, lp_mu, MIDDLE_RULE[0], MIDDLE_RULE[1], coef, HERMITE_TAIL_TOL):
        return True, mu, s, lp_mu, 1
    ok = _coefficients(lk, y, m, v, mu, s, shrink, lp_mu, LONG_RULE[0], LONG_RULE[1], coef, HERMITE_TAIL_TOL)
    return ok, mu, s, lp_mu, 2


@njit(**NUMBA_OPTIONS)
def _moments_of(coef, m, v, mu, s, lp_mu):
    """(log Z, mean, var) from the coefficients (module docstring)."""
    b0 = coef[0]
    shift = coef[1] / b0
    spread = math.sqrt(2.0) * coef[2] / b0  # E[x^2] - 1 in the Laplace frame
    log_z = lp_mu - 0.5 * (mu - m) ** 2 / v + math.log(s * b0 / math.sqrt(v))
    return log_z, mu + s * shift, s * s * (1.0 + (spread - shift * shift))


@njit(**NUMBA_OPTIONS)
def _qp_std_rule(coef, s, transform, cumulative, pdf, cdf, sf):
    """sigma_QP = s int phi(Phi^-1(F(x))) dx = s E_phi[r], r = phi(Phi^-1(F)) / phi, with F from the
    coefficients (module docstring) on one rule's nodes. NaN where the truncated series gives a
    CDF outside [0, 1] beyond rounding, or where r fails the tail test (its top two Hermite
    coefficients; r is not smooth where F has a plateau, e.g. between two far-apart modes)."""
    n = pdf.shape[0]
    b0 = coef[0]
    total = 0.0
    top = 0.0
    below_top = 0.0
    for j in range(n):
        acc = 0.0
        for k in range(1, n):
            acc += cumulative[j, k] * coef[k]
        corr = pdf[j] * acc / b0
        tail = min(cdf[j] - corr, sf[j] + corr)  # min(F, 1 - F), each without cancellation
        if tail < 0.0:
            if tail < -1e-13:
                return np.nan
            tail = 0.0
        ratio = phi_of_ndtri(tail) / pdf[j]
        total += transform[0, j] * ratio
        top += transform[n - 1, j] * ratio
        below_top += transform[n - 2, j] * ratio
    if not (abs(top) + abs(below_top) <= HERMITE_TAIL_TOL * total):
        return np.nan
    return s * total


@njit(**NUMBA_OPTIONS)
def _qp_std_of(coef, s, rule_used):
    """:func:`_qp_std_rule` on the rule the coefficients came from (0 short, 1 middle, 2 long)."""
    if rule_used == 0:
        return _qp_std_rule(coef, s, SHORT_RULE[1], SHORT_RULE[2], SHORT_RULE[3], SHORT_RULE[4], SHORT_RULE[5])
    if rule_used == 1:
        return _qp_std_rule(coef, s, MIDDLE_RULE[1], MIDDLE_RULE[2], MIDDLE_RULE[3], MIDDLE_RULE[4], MIDDLE_RULE[5])
    return _qp_std_rule(coef, s, LONG_RULE[1], LONG_RULE[2], LONG_RULE[3], LONG_RULE[4], LONG_RULE[5])


@njit(**NUMBA_OPTIONS)
def hermite_moments(lk, y, m, v):
    """(ok, log Z, mean, var) of p(y|f)^alpha N(f | m, v) by the checked Gauss-Hermite rule;
    ``ok`` False: not accurate here, use the quadrature."""
    # bool(...), not a bare literal: one compiled hermite_projection serves every caller
    ok, log_z, mean, var, _ = hermite_projection(lk, y, m, v, bool(False))
    return ok, log_z, mean, var


@njit(**NUMBA_OPTIONS)
def hermite_qp_std(lk, y, m, v):
    """(ok, sigma_QP) of the tilted distribution by the checked Gauss-Hermite rule (QP paper eq. 7)."""
    ok, _, _, _, sigma = hermite_projection(lk, y, m, v, bool(True))
    return ok and sigma == sigma, sigma


@njit(**NUMBA_OPTIONS)
def hermite_projection(lk, y, m, v, want_qp):
    """(ok, log Z, mean, var, sigma_QP) from one expansion: ``ok`` for the moments; sigma_QP (not
    clipped to the EP std) NaN unless ``want_qp`` and its own tail test accepts it."""
    coef = stack_buffer(LONG_NODES)
    ok, mu, s, lp_mu, rule_used = _expansion(lk, y, m, v, coef, not want_qp)
    if not ok:
        return False, np.nan, np.nan, np.nan, np.nan
    log_z, mean, var = _moments_of(coef, m, v, mu, s, lp_mu)
    sigma = _qp_std_of(coef, s, rule_used) if want_qp else np.nan
    return var > 0.0, log_z, mean, var, sigma


@njit(**NUMBA_OPTIONS)
def hermite_summary_scalar(lk, y, m, v):
    """(ok, log Z, mean, var, sigma_QP): ``ok`` when both the moments and sigma_QP were accepted."""
    ok, log_z, mean, var, sigma = hermite_projection(lk, y, m, v, bool(True))
    return ok and sigma == sigma, log_z, mean, var, sigma


def _flat_inputs(y, m, v):
    """y, m, v broadcast together, as contiguous 1-D float64 arrays (the batch kernels' inputs)."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64).ravel() for a in np.broadcast_arrays(y, m, v))


@njit(**NUMBA_OPTIONS)
def _summary_batch(lk, y, m, v, out, ok, want_qp):
    for i in range(y.shape[0]):
        if want_qp:
            ok[i], out[0, i], out[1, i], out[2, i], out[3, i] = hermite_summary_scalar(lk, y[i], m[i], v[i])
        else:
            ok[i], out[0, i], out[1, i], out[2, i] = hermite_moments(lk, y[i], m[i], v[i])


def hermite_summary(likelihood, y, m, v, qp: bool = True):
    """(ok, log Z, mean, var, sigma_QP) arrays by the Gauss-Hermite route (NaN where not ok), for
    tests and benchmarks: broadcast y, m, v of a likelihood with numba kernels. ``qp=False``: the
    moments alone (:func:`hermite_moments`: the tiny rule first), ``ok`` for them, sigma_QP NaN."""
    y, m, v = _flat_inputs(y, m, v)
    out = np.full((4, y.size), np.nan)
    ok = np.zeros(y.size, dtype=np.bool_)
    _summary_batch(likelihood.jit_handle(), y, m, v, out, ok, bool(qp))
    return ok, out[0], out[1], out[2], out[3]


#: :func:`hermite_rules` labels: the rule index (-2 Taylor, -1 tiny, 0 short, 1 middle, 2 long) or refused
REFUSED = 3


@njit(**NUMBA_OPTIONS)
def _rules_batch(lk, y, m, v, moments_only, out):
    coef = stack_buffer(LONG_NODES)
    for i in range(y.shape[0]):
        ok, _, _, _, rule_used = _expansion(lk, y[i], m[i], v[i], coef, moments_only)
        out[i] = rule_used if ok else REFUSED


def hermite_rules(likelihood, y, m, v, qp: bool = True) -> np.ndarray:
    """Which rule the expansion took at each broadcast (y, m, v): -2 the Taylor route, -1 tiny,
    0 short, 1 middle, 2 long, :data:`REFUSED` (the quadrature); ``qp=False``: the moments alone
    (benchmarks, tests)."""
    y, m, v = _flat_inputs(y, m, v)
    out = np.empty(y.size, dtype=np.int64)
    _rules_batch(likelihood.jit_handle(), y, m, v, not qp, out)
    return out
