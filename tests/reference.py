"""Independent high-precision reference for tilted distributions (mpmath, 40 digits).

The computation never uses qpviz: the likelihoods are re-written from their formulas, and the
integrals use this module's own adaptive Gauss-Legendre quadrature in mpmath. (qpviz is imported
only for its config, i.e. the parameter sets the app offers.)

For a likelihood (name, params), an observation y and a Gaussian cavity N(m, v), the tilted
distribution is q(f) = p(y|f) N(f|m, v) / Z. :func:`tilted_reference` returns log Z, the mean,
the variance and sigma_QP by both forms of QP paper eq. 7:

* CDF form: sigma_QP = int phi(Phi^-1(F(f))) df,
* quantile form: sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du, evaluated with the substitution
  u = F(f), i.e. int f Phi^-1(F(f)) q(f) df (the two forms agree only if F, q and Phi^-1 are
  all right, so their agreement is a check of the reference itself); and, for a handful of
  cases (slow), directly in quantile space with F^-1 by root finding (:class:`QuantileForm`).

Method: the support (where log q >= max - 110, i.e. all but ~1e-48 of the mass) is located on a
grid around the cavity and the likelihood's own features; it is cut into panels at the kinks
(f = 0 for step, f = y for laplace), the cavity mean and the mode, and panels are bisected until
a 24-node Gauss-Legendre rule agrees with the sum over its two halves to 1e-30 of Z. F at the
quadrature nodes comes from the exact integral of each panel's interpolating polynomial
(a spectral integration matrix), so no nested quadrature is needed. :func:`tilted_cdf_reference`
integrates tails separately (substitution f = x -+ t/|d log q/df|), so tail values keep their
relative accuracy down to 1e-300 and below.

Values are cached in two layers. The committed files tests/data/reference_values.json and
reference_cdfs.json are read-only inputs: tests never write into the repository. A value they
lack is computed and stored in a cache directory (:func:`cache_dir`: ``$QPVIZ_TEST_CACHE``, else
``$XDG_CACHE_HOME/qpviz-tests``, else ``~/.cache/qpviz-tests``), which later runs read too.
``python tests/reference.py [moments|cdf|quantile]`` fills that cache for the accuracy, CDF or
quantile test points; add ``--commit`` to write the committed files instead (a deliberate
maintainer step, then commit them).
"""
from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path

import mpmath as mp
import numpy as np

DPS = 40
#: the committed (read-only) caches: file names under tests/data and under :func:`cache_dir`
DATA_DIR = Path(__file__).resolve().parent / "data"
CACHE_FILE = "reference_values.json"
CDF_CACHE_FILE = "reference_cdfs.json"
GL_NODES = 24
#: mass below exp(-LOG_DROP) of the peak density is outside the support (~1e-48 of Z)
LOG_DROP = 110

# -- the shared accuracy domain (used by test_accuracy.py and the cache builder) --------------
#: Domain of the issue's accuracy requirement: cavity means in [-10, 10], stds in [0.05, 20].
MEAN_RANGE = (-10.0, 10.0)
STD_RANGE = (0.05, 20.0)  # = qpviz.tables.families.TABLE_STD_RANGE (tests/tables/test_tables_layout.py)
CORNER_MEANS = (-10.0, 0.0, 10.0)
CORNER_STDS = (0.05, 1.0, 20.0)
COUNTS = (0, 1, 5, 50)
REAL_YS = (-3.0, 0.0, 2.5)
LABELS = (-1.0, 1.0)


def likelihood_settings():
    """(name, params) for every likelihood and every parameter set the app offers: each class's
    declared ``presets`` / ``Parameter.choices`` (the sets the QP tables cover), for the
    likelihoods this mpmath reference implements."""
    from qpviz.likelihoods import REGISTRY
    from qpviz.tables.families import table_parameter_sets

    names = ("probit", "logistic", "poisson_square", "poisson_exp", "gaussian", "step", "student_t", "laplace")
    return [(name, {k: float(v) for k, v in params.items()}) for name in names
            for params in table_parameter_sets(REGISTRY[name])]


def observations(name):
    """The observations the accuracy tests use for a likelihood."""
    if name in ("probit", "logistic", "step"):
        return LABELS
    if name in ("poisson_square", "poisson_exp"):
        return tuple(float(c) for c in COUNTS)
    return REAL_YS


def cavity_points(n_random=4, seed=1234):
    """Corner/edge grid (m in CORNER_MEANS) x (std in CORNER_STDS) plus seeded interior points.

    Interior stds are drawn log-uniformly. Returns a list of (m, v).
    """
    pts = [(m, s * s) for m in CORNER_MEANS for s in CORNER_STDS]
    rng = np.random.default_rng(seed)
    for _ in range(n_random):
        m = float(np.round(rng.uniform(*MEAN_RANGE), 6))
        s = float(np.round(np.exp(rng.uniform(np.log(STD_RANGE[0]), np.log(STD_RANGE[1]))), 6))
        pts.append((m, s * s))
    return pts


# -- likelihoods in mpmath -------------------------------------------------------------------
def log_likelihood(name, params, y, f):
    """log p(y | f) in mpmath (may be -inf)."""
    y = mp.mpf(y)
    if name == "gaussian":
        var = mp.mpf(params["variance"])
        return -mp.log(2 * mp.pi * var) / 2 - (y - f) ** 2 / (2 * var)
    if name == "probit":
        return mp.log(mp.ncdf(y * f))
    if name == "logistic":
        z = y * f
        return -mp.log1p(mp.exp(-z)) if z > -50 else z - mp.log1p(mp.exp(z))
    if name == "step":
        eps = mp.mpf(params["eps"])
        inside = y * f > 0 or (y * f == 0)
        val = eps + (1 - 2 * eps) * (1 if inside else 0)
        return mp.log(val) if val > 0 else mp.ninf
    if name == "poisson_square":
        if f == 0:
            return mp.mpf(0) if y == 0 else mp.ninf
        return y * mp.log(f * f) - f * f - mp.loggamma(y + 1)
    if name == "poisson_exp":
        return y * f - mp.exp(f) - mp.loggamma(y + 1)
    if name == "student_t":
        nu = mp.mpf(params["nu"])
        sc = mp.mpf(params["scale"])
        r = (y - f) / sc
        return (
            mp.loggamma((nu + 1) / 2)
            - mp.loggamma(nu / 2)
            - mp.log(nu * mp.pi) / 2
            - mp.log(sc)
            - (nu + 1) / 2 * mp.log1p(r * r / nu)
        )
    if name == "laplace":
        sc = mp.mpf(params["scale"])
        return -mp.log(2 * sc) - abs(y - f) / sc
    raise ValueError(f"reference: unknown likelihood {name!r}")


def kinks(name, params, y):
    """Points where log p(y|f) is not smooth (quadrature breakpoints)."""
    if name == "step":
        return [0.0]
    if name == "laplace":
        return [float(y)]
    if name == "poisson_square" and y > 0:
        return [0.0]
    return []


def anchors(name, params, y):
    """Places where the likelihood has its features (search grid centres)."""
    if name in ("probit", "logistic", "step"):
        return [0.0]
    if name == "poisson_square":
        r = math.sqrt(y)
        return [-r, 0.0, r]
    if name == "poisson_exp":
        return [math.log(max(y, 0.5))]
    return [float(y)]


# -- Gauss-Legendre machinery ------------------------------------------------------------------
@lru_cache(maxsize=None)
def _gauss_legendre(n):
    """Nodes, weights on [-1, 1] and the spectral integration matrix S (S_ij = int_-1^t_i L_j)."""
    with mp.workdps(DPS + 10):
        start, _ = np.polynomial.legendre.leggauss(n)
        nodes, weights = [], []
        for t0 in start:
            t = mp.findroot(lambda t: mp.legendre(n, t), mp.mpf(float(t0)))
            dp = n * (t * mp.legendre(n, t) - mp.legendre(n - 1, t)) / (t * t - 1)
            nodes.append(t)
            weights.append(2 / ((1 - t * t) * dp * dp))
        p_nodes = [[mp.legendre(k, t) for k in range(n + 1)] for t in nodes]
        smat = []
        for i in range(n):
            row = []
            for j in range(n):
                acc = (nodes[i] + 1) / 2
                for k in range(1, n):
                    acc += p_nodes[j][k] * (p_nodes[i][k + 1] - p_nodes[i][k - 1]) / 2
                row.append(weights[j] * acc)
            smat.append(row)
    return nodes, weights, smat


def _antiderivative_row(t):
    """[int_-1^t L_j(s) ds for each Gauss-Legendre node j] at any t in [-1, 1] (L_j: Lagrange basis)."""
    nodes, weights, _ = _gauss_legendre(GL_NODES)
    p_nodes = _legendre_at_nodes(GL_NODES)
    p_t = [mp.mpf(1), t]
    for k in range(1, GL_NODES):  # Bonnet's recurrence
        p_t.append(((2 * k + 1) * t * p_t[k] - k * p_t[k - 1]) / (k + 1))
    row = []
    for j in range(GL_NODES):
        acc = (t + 1) / 2
        for k in range(1, GL_NODES):
            acc += p_nodes[j][k] * (p_t[k + 1] - p_t[k - 1]) / 2
        row.append(weights[j] * acc)
    return row


@lru_cache(maxsize=None)
def _legendre_at_nodes(n):
    nodes, _, _ = _gauss_legendre(n)
    return [[mp.legendre(k, t) for k in range(n + 1)] for t in nodes]


def _panel(func, a, b):
    nodes, weights, _ = _gauss_legendre(GL_NODES)
    half = (b - a) / 2
    mid = (a + b) / 2
    xs = [mid + half * t for t in nodes]
    vals = [func(x) for x in xs]
    return half * mp.fsum(w * q for w, q in zip(weights, vals)), xs, vals


def _adaptive_panels(func, breaks, tol, depth=0):
    """Split [breaks] until each 24-node panel agrees with its halves to ``tol`` (absolute)."""
    out = []
    for a, b in zip(breaks[:-1], breaks[1:]):
        stack = [(a, b, 0)]
        while stack:
            lo, hi, d = stack.pop()
            whole, xs, vals = _panel(func, lo, hi)
            mid = (lo + hi) / 2
            left = _panel(func, lo, mid)
            right = _panel(func, mid, hi)
            if abs(whole - left[0] - right[0]) <= tol or d > 40:
                out.append((lo, mid, left[1], left[2]))
                out.append((mid, hi, right[1], right[2]))
            else:
                stack.append((mid, hi, d + 1))
                stack.append((lo, mid, d + 1))
    out.sort(key=lambda p: p[0])
    return out


def _integrate(func, breaks, rel=mp.mpf(10) ** (-32)):
    """int func over the panels between ``breaks``, adaptively (two passes: scale, then tolerance)."""
    rough = mp.fsum(_panel(func, a, b)[0] for a, b in zip(breaks[:-1], breaks[1:]))
    panels = _adaptive_panels(func, breaks, abs(rough) * rel + mp.mpf(10) ** (-300000))
    nodes, weights, _ = _gauss_legendre(GL_NODES)
    return mp.fsum((hi - lo) / 2 * mp.fsum(w * q for w, q in zip(weights, vals)) for lo, hi, xs, vals in panels)


def _ndtri(u):
    """Phi^-1(u) for 0 < u < 1 in mpmath (Newton on log Phi, started from a float guess)."""
    from scipy.special import ndtri

    if u <= 0:
        return mp.ninf
    if u >= 1:
        return mp.inf
    if u > 0.5:
        return -_ndtri(1 - u)
    uf = float(u)
    if uf > 1e-300:
        z = mp.mpf(float(ndtri(uf)))
    else:
        z = -mp.sqrt(-2 * mp.log(u))
    log_u = mp.log(u)
    for _ in range(100):
        lc = mp.log(mp.ncdf(z))
        step = (lc - log_u) * mp.ncdf(z) / mp.npdf(z)
        z -= step
        if abs(step) < mp.mpf(10) ** (-(DPS - 2)) * (1 + abs(z)):
            break
    return z


# -- the tilted distribution ---------------------------------------------------------------------
class TiltedReference:
    """High-precision tilted distribution for (name, params, y, m, v)."""

    def __init__(self, name, params, y, m, v):
        self.name, self.params = name, dict(params)
        self.y, self.m, self.v = float(y), float(m), float(v)
        self._tails = {}
        with mp.workdps(DPS):
            self._build()

    def log_q_unnormalised(self, f):
        f = mp.mpf(f)
        m, v = mp.mpf(self.m), mp.mpf(self.v)
        ll = log_likelihood(self.name, self.params, self.y, f)
        return ll - (f - m) ** 2 / (2 * v) - mp.log(2 * mp.pi * v) / 2

    def _build(self):
        s = math.sqrt(self.v)
        grid = set(np.linspace(self.m - 60 * s, self.m + 60 * s, 1201).tolist())
        for a in anchors(self.name, self.params, self.y):
            grid.update(np.linspace(a - 30, a + 30, 1201).tolist())
            grid.update((a + np.linspace(-60, 60, 241) * s).tolist())
        grid = sorted(grid)
        logs = [self.log_q_unnormalised(g) for g in grid]
        top = max(logs)
        ipeak = logs.index(top)
        keep = [i for i, lq in enumerate(logs) if lq >= top - LOG_DROP]
        lo_i = max(keep[0] - 1, 0)
        hi_i = min(keep[-1] + 1, len(grid) - 1)
        self.lower, self.upper = mp.mpf(grid[lo_i]), mp.mpf(grid[hi_i])
        self.grid, self.grid_logs = grid, logs
        self.log_peak = top
        brk = {grid[lo_i], grid[hi_i], grid[ipeak], self.m}
        brk.update(k for k in kinks(self.name, self.params, self.y))
        brk = sorted(mp.mpf(b) for b in brk if grid[lo_i] <= b <= grid[hi_i])
        self.breaks = brk
        self._density = lambda f: mp.exp(self.log_q_unnormalised(f) - top)
        rough = mp.fsum(_panel(self._density, a, b)[0] for a, b in zip(brk[:-1], brk[1:]))
        self.panels = _adaptive_panels(self._density, brk, rough * mp.mpf(10) ** (-30))
        _, weights, smat = _gauss_legendre(GL_NODES)
        z_scaled = mp.mpf(0)
        cum = []  # (x, w, q, F_unnormalised)
        self.panel_mass = []
        for lo, hi, xs, vals in self.panels:
            half = (hi - lo) / 2
            for i in range(GL_NODES):
                inside = half * mp.fsum(smat[i][j] * vals[j] for j in range(GL_NODES))
                cum.append((xs[i], half * weights[i], vals[i], z_scaled + inside))
            self.panel_mass.append(half * mp.fsum(w * q for w, q in zip(weights, vals)))
            z_scaled += self.panel_mass[-1]
        self.z_scaled = z_scaled
        self.log_z = mp.log(z_scaled) + top
        mean = mp.fsum(w * q * x for x, w, q, _ in cum) / z_scaled
        var = mp.fsum(w * q * (x - mean) ** 2 for x, w, q, _ in cum) / z_scaled
        self.mean, self.var = mean, var
        # sigma_QP by both forms of eq. 7; panels that start (end) where the density jumps from 0
        # (step with eps = 0) have F ~ c (x - a) there, and phi(Phi^-1(F)) ~ F sqrt(2 log 1/F) is not
        # polynomial; panels beside a kink have a singularity just beyond it (_truncated_panels):
        # those panels are re-integrated on sub-panels graded geometrically towards those ends
        graded = self._truncated_panels()
        qp_cdf = mp.mpf(0)
        qp_u = mp.mpf(0)
        for k, (x, w, q, fu) in enumerate(cum):
            if k // GL_NODES in graded:
                continue
            dc, du = self._qp_terms(x, w, q, fu / z_scaled)
            qp_cdf += dc
            qp_u += du
        for i, ends in graded.items():
            dc, du = self._graded_qp(i, ends)
            qp_cdf += dc
            qp_u += du
        self.sigma_qp_cdf_form = qp_cdf
        self.sigma_qp_quantile_form = qp_u

    def _qp_terms(self, x, w, q, u):
        """Contributions of one node to int phi(Phi^-1(F)) df and int (f - mean) Phi^-1(F) q df."""
        if not 0 < u < 1:  # beyond 40 digits from 0 or 1: q here is < 1e-40 of its peak
            return mp.mpf(0), mp.mpf(0)
        zq = _ndtri(u)
        return w * mp.npdf(zq), w * q / self.z_scaled * (x - self.mean) * zq

    def _truncated_panels(self):
        """{panel index: set of ends ("left"/"right") to grade towards}: ends where the density
        jumps from 0 (step with eps = 0), and the likelihood's kinks. At a kink F has a corner,
        and the analytic continuation of F from one side reaches 0 or 1 just beyond it (e.g. step
        eps = 0.05: F = 0.95 at the kink, continued to 1 at 0.07), a log singularity of Phi^-1(F)
        that spoils the convergence of one Gauss-Legendre rule over the whole panel."""
        out = {}
        masses = self.panel_mass
        kink_set = {mp.mpf(k) for k in kinks(self.name, self.params, self.y)}
        for i, (lo, hi, _, _) in enumerate(self.panels):
            if masses[i] == 0:
                continue
            ends = set()
            if lo in kink_set or (mp.fsum(masses[:i]) == 0 and self._density(lo) > mp.mpf(10) ** (-30)):
                ends.add("left")
            if hi in kink_set or (mp.fsum(masses[i + 1:]) == 0 and self._density(hi) > mp.mpf(10) ** (-30)):
                ends.add("right")
            if ends:
                out[i] = ends
        return out

    def _graded_qp(self, i, ends, levels=40, order=12):
        """QP contributions of panel i on sub-panels graded by halving towards the given ends
        (each sub-panel is as wide as its distance from the end: ``order`` nodes suffice)."""
        lo, hi, xs, vals = self.panels[i]
        nodes, weights, _ = _gauss_legendre(order)
        half, mid = (hi - lo) / 2, (hi + lo) / 2
        before = mp.fsum(self.panel_mass[:i])
        if ends == {"left", "right"}:
            ranges = [(lo, mid, "left"), (mid, hi, "right")]
        else:
            ranges = [(lo, hi, next(iter(ends)))]
        dc_total, du_total = mp.mpf(0), mp.mpf(0)
        fractions = sorted({mp.mpf(0)} | {mp.mpf(2) ** (-k) for k in range(levels + 1)})
        for start, stop, toward in ranges:
            width = stop - start
            for a, b in zip(fractions[:-1], fractions[1:]):
                sub_half = (b - a) * width / 2
                for t, w in zip(nodes, weights):
                    frac = a + (b - a) * (t + 1) / 2  # distance from the graded end, in widths
                    x = start + width * frac if toward == "left" else stop - width * frac
                    inside = half * mp.fsum(r * q for r, q in zip(_antiderivative_row((x - mid) / half), vals))
                    dc, du = self._qp_terms(x, sub_half * w, self._density(x), (before + inside) / self.z_scaled)
                    dc_total += dc
                    du_total += du
        return dc_total, du_total

    # -- CDF at arbitrary points, with relative accuracy in the tails ----------------------
    def _tail(self, x, lower):
        """int_{-inf}^x q (lower) or int_x^inf q, unnormalised (scaled by exp(-log_peak))."""
        key = (mp.mpf(x), lower)
        if key not in self._tails:
            self._tails[key] = self._tail_integral(*key)
        return self._tails[key]

    def _tail_integral(self, x, lower):
        """Tail beyond x; a further mode beyond x (poisson_square's mirror mode, outside the
        support when its mass is below 1e-48 of Z) is integrated on panels up to its far side."""
        x = mp.mpf(x)
        base = self.log_q_unnormalised(x)
        beyond = [(g, lq) for g, lq in zip(self.grid, self.grid_logs) if (g < x if lower else g > x)]
        if beyond:
            g_best, l_best = max(beyond, key=lambda p: p[1])
            if l_best > base + 1 and l_best - self.log_peak > -800:
                far = [g for g, lq in beyond if lq >= l_best - LOG_DROP]
                end = mp.mpf(min(far) if lower else max(far))
                pts = sorted({x, mp.mpf(g_best), end})
                pts += [k for k in map(mp.mpf, kinks(self.name, self.params, self.y)) if pts[0] < k < pts[-1]]
                middle = _integrate(self._density, sorted(set(pts)))
                return middle + self._monotone_tail(end, lower)
        return self._monotone_tail(x, lower)

    def _monotone_tail(self, x, lower):
        sign = -1 if lower else 1
        slope = mp.diff(lambda f: self.log_q_unnormalised(f), x)
        rate = -sign * slope  # > 0 when the density decays away from x
        scale = 1 / rate if rate > 0 else mp.mpf(math.sqrt(self.v))
        base = self.log_q_unnormalised(x)
        if base - self.log_peak < -800:  # tail mass below ~1e-340 of Z: zero in double precision
            return mp.mpf(0)  # (also the zero-density side of step with eps = 0)
        func = lambda t: mp.exp(self.log_q_unnormalised(x + sign * t * scale) - base)  # noqa: E731
        brk = [mp.mpf(0)] + [mp.mpf(2) ** k for k in range(-6, 12)]
        for k in kinks(self.name, self.params, self.y):
            t = sign * (mp.mpf(k) - x) / scale
            if 0 < t < brk[-1]:
                brk.append(t)
        brk.sort()
        val = _integrate(func, brk)
        return val * scale * mp.exp(base - self.log_peak)

    def cdf(self, x, upper=False):
        """F(x) (or 1 - F(x) if ``upper``), computed directly on the small side."""
        with mp.workdps(DPS):
            x = mp.mpf(x)
            # beyond the support: direct tail integral (relative accuracy)
            if x <= self.lower:
                lower = self._tail(x, True) / self.z_scaled
                return 1 - lower if upper else lower
            if x >= self.upper:
                up = self._tail(x, False) / self.z_scaled
                return up if upper else 1 - up
            # inside: whole panels on each side (positive sums) plus one rule on the split panel
            i = max(j for j, p in enumerate(self.panels) if p[0] <= x)
            lo, hi = self.panels[i][0], self.panels[i][1]
            left_part = _panel(self._density, lo, x)[0] if x > lo else mp.mpf(0)
            right_part = _panel(self._density, x, hi)[0] if x < hi else mp.mpf(0)
            # plus the tails beyond the support (~1e-48 of Z, but not of a small F near its ends)
            lower = (self._tail(self.lower, True) + mp.fsum(self.panel_mass[:i]) + left_part) / self.z_scaled
            up = (mp.fsum(self.panel_mass[i + 1:]) + right_part + self._tail(self.upper, False)) / self.z_scaled
            return up if upper else lower


class QuantileForm:
    """sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du computed in quantile space (QP paper eq. 7).

    u = Phi(z): sigma_QP = int F^-1(Phi(z)) z phi(z) dz over z in [-13, 13] (beyond, ~1e-36),
    Gauss-Legendre panels of width 1 in z, split at z = Phi^-1(F(kink)). F^-1 is found by
    safeguarded Newton on the reference's panel representation of F (and of 1 - F above the
    median, with 1 - u = Phi(-z) formed exactly), so no quantity of the f-space forms is reused
    except F itself.
    """

    def __init__(self, t: TiltedReference):
        self.t = t
        self.prefix = [mp.mpf(0)]
        for mass in t.panel_mass:
            self.prefix.append(self.prefix[-1] + mass)

    def _partial(self, i, x):
        lo, hi, xs, vals = self.t.panels[i]
        half, mid = (hi - lo) / 2, (hi + lo) / 2
        return half * mp.fsum(r * q for r, q in zip(_antiderivative_row((x - mid) / half), vals))

    def quantile(self, z, start=None):
        """F^-1(Phi(z)), to ~35 digits (Newton from ``start``, e.g. the previous quantile)."""
        t = self.t
        upper = z > 0
        target = mp.ncdf(-z if upper else z) * t.z_scaled  # mass beyond the quantile, on its side
        total = self.prefix[-1]
        # panel holding the quantile
        if upper:
            i = max(j for j in range(len(t.panels)) if total - self.prefix[j] >= target)
        else:
            i = min(j for j in range(len(t.panels)) if self.prefix[j + 1] >= target)
        lo, hi = t.panels[i][0], t.panels[i][1]

        def residual(x):  # increasing in x
            part = self._partial(i, x)
            if upper:
                return target - (total - self.prefix[i] - part)
            return self.prefix[i] + part - target

        x = start if start is not None and lo < start < hi else (lo + hi) / 2
        for _ in range(200):
            r = residual(x)
            if r > 0:
                hi = x
            else:
                lo = x
            dens = t._density(x)
            x_new = x - r / dens if dens > 0 else (lo + hi) / 2
            if not lo < x_new < hi:
                x_new = (lo + hi) / 2
            if abs(x_new - x) <= mp.mpf(10) ** (-(DPS - 5)) * (1 + abs(x)):
                return x_new
            x = x_new
        return x

    def sigma_qp(self, z_max=13, width=1):
        t = self.t
        with mp.workdps(DPS):
            cuts = {mp.mpf(-z_max) + k * width for k in range(int(2 * z_max / width) + 1)}
            for k in kinks(t.name, t.params, t.y):
                u = t.cdf(k)
                if 0 < u < 1:
                    zk = _ndtri(mp.mpf(u))
                    if -z_max < zk < z_max:
                        cuts.add(zk)
            cuts = sorted(cuts)
            nodes, weights, _ = _gauss_legendre(GL_NODES)
            total = mp.mpf(0)
            previous = None
            for a, b in zip(cuts[:-1], cuts[1:]):
                half = (b - a) / 2
                for tn, w in zip(nodes, weights):
                    z = (a + b) / 2 + half * tn
                    previous = self.quantile(z, previous)
                    total += half * w * previous * z * mp.npdf(z)
            return total


def tilted_reference(name, params, y, m, v):
    """Dict of floats: log_z, mean, var, sigma_qp (CDF form), sigma_qp_quantile (u form)."""
    t = TiltedReference(name, params, y, m, v)
    return {
        "log_z": float(t.log_z),
        "mean": float(t.mean),
        "var": float(t.var),
        "sigma_qp": float(t.sigma_qp_cdf_form),
        "sigma_qp_quantile": float(t.sigma_qp_quantile_form),
    }


def tilted_cdf_reference(name, params, y, m, v, xs=None):
    """{"x", "lower" (F), "upper" (1 - F)} at each x (default :func:`cdf_points`), ~30 digits
    relative, tails included."""
    t = TiltedReference(name, params, y, m, v)
    xs = cdf_points(t) if xs is None else [float(x) for x in xs]
    return {
        "x": xs,
        "lower": [float(t.cdf(x)) for x in xs],
        "upper": [float(t.cdf(x, upper=True)) for x in xs],
    }


#: CDF test points, in tilted standard deviations from the tilted mean
CDF_OFFSETS = (-40.0, -20.0, -10.0, -5.0, -2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0)


def cdf_points(t: TiltedReference):
    """Tilted mean + sd * CDF_OFFSETS, the cavity mean, the likelihood's kinks and points just
    beside them (special cases of the closed forms), sorted."""
    mean, sd = float(t.mean), float(mp.sqrt(t.var))
    pts = {mean + sd * k for k in CDF_OFFSETS}
    pts.add(t.m)
    for k in kinks(t.name, t.params, t.y) + ([0.0] if t.name in ("probit", "poisson_square") else []):
        pts.update({k, k + 1e-9 * sd, k - 1e-9 * sd, k + 1e-3 * sd, k - 1e-3 * sd})
    return sorted(pts)


# -- cache ------------------------------------------------------------------------------------
def _key(kind, name, params, y, m, v, extra=""):
    p = ",".join(f"{k}={float(params[k])!r}" for k in sorted(params))
    return f"{kind}|{name}|{p}|y={float(y)!r}|m={float(m)!r}|v={float(v)!r}{extra}"


_CACHES: dict = {}


def cache_dir() -> Path:
    """Where values missing from the committed files are stored (never inside the repository)."""
    env = os.environ.get("QPVIZ_TEST_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "qpviz-tests"


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _load(name=CACHE_FILE):
    """The cache ``name``: the committed values overlaid with those of :func:`cache_dir` (an
    unreadable cache file there is ignored: its values are recomputed)."""
    if name not in _CACHES:
        try:
            local = _read(cache_dir() / name)
        except (OSError, ValueError):
            local = {}
        _CACHES[name] = {**_read(DATA_DIR / name), **local}
    return _CACHES[name]


def save_cache(name=CACHE_FILE, *, commit=False):
    """Write the values of cache ``name`` that the committed file lacks to :func:`cache_dir`
    (atomically); with ``commit=True`` write all of them to the committed file instead."""
    values = _load(name)
    if commit:
        path, out = DATA_DIR / name, values
    else:
        tracked = _read(DATA_DIR / name)
        path = cache_dir() / name
        out = {k: v for k, v in values.items() if tracked.get(k) != v}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out, indent=0, sort_keys=True))
    os.replace(tmp, path)


def cached_reference(name, params, y, m, v, *, store=True):
    """:func:`tilted_reference` through the JSON cache (computed and stored when missing)."""
    cache = _load()
    key = _key("moments", name, params, y, m, v)
    if key not in cache:
        cache[key] = tilted_reference(name, params, y, m, v)
        if store:
            save_cache()
    return cache[key]


def cached_cdf_reference(name, params, y, m, v, *, store=True):
    """:func:`tilted_cdf_reference` at :func:`cdf_points`, through the JSON cache."""
    cache = _load(CDF_CACHE_FILE)
    key = _key("cdf", name, params, y, m, v)
    if key not in cache:
        cache[key] = tilted_cdf_reference(name, params, y, m, v)
        if store:
            save_cache(CDF_CACHE_FILE)
    return cache[key]


def cached_quantile_form(name, params, y, m, v, *, store=True):
    """:class:`QuantileForm` sigma_QP (quantile space) through the JSON cache."""
    cache = _load()
    key = _key("quantile", name, params, y, m, v)
    if key not in cache:
        cache[key] = float(QuantileForm(TiltedReference(name, params, y, m, v)).sigma_qp())
        if store:
            save_cache()
    return cache[key]


def quantile_form_cases():
    """The cases checked in quantile space (slow: ~1 min each, so a handful): narrow, unit and
    wide cavities, a truncation (step eps = 0), a density jump, kinks and heavy tails. Bimodal
    tilted distributions (poisson_square at small |m|) are left out on purpose: their quantile
    function has an algebraic singularity (u - 1/2)^(1/(2y+1)) at the valley, which this plain
    Gauss-Legendre rule in z does not resolve; the two f-space forms cover them."""
    return [
        ("probit", {}, 1.0, -10.0, 0.05**2),
        ("probit", {}, -1.0, 0.0, 1.0),
        ("step", {"eps": 0.0}, -1.0, 0.0, 1.0),
        ("step", {"eps": 0.05}, 1.0, 10.0, 400.0),
        ("laplace", {"scale": 0.5}, 2.5, 10.0, 400.0),
        ("student_t", {"nu": 3.0, "scale": 1.0}, 2.5, -10.0, 400.0),
        ("poisson_exp", {}, 50.0, 10.0, 400.0),
        ("gaussian", {"variance": 0.5}, 2.5, -10.0, 0.05**2),
    ]


def accuracy_cases():
    """Every (name, params, y, m, v) of the accuracy test (the domain corners/edges + random)."""
    cases = []
    for name, params in likelihood_settings():
        for y in observations(name):
            for m, v in cavity_points():
                cases.append((name, params, y, m, v))
    return cases


def cdf_cases():
    """(name, params, y, m, v) of the closed-form CDF tests: both labels/several counts, tiny Z,
    m = 0 (the special cases of eqs. 47-49), tiny and huge cavity variances."""
    cavities = [(0.0, 1.0), (0.0, 0.0025), (0.0, 400.0), (0.5, 1.0), (-3.0, 4.0), (-10.0, 0.0025),
                (10.0, 0.0025), (-10.0, 1.0), (10.0, 400.0), (-10.0, 400.0)]
    cases = [("probit", {}, y, m, v) for y in LABELS for m, v in cavities]
    for eps in (0.0, 0.05, 0.2):
        cases += [("step", {"eps": eps}, y, m, v) for y in LABELS for m, v in cavities[:8]]
    for count in (0.0, 1.0, 5.0, 50.0):
        cases += [("poisson_square", {}, count, m, v) for m, v in cavities]
    return cases


if __name__ == "__main__":  # fill the caches: python tests/reference.py [moments|cdf|quantile] [--commit]
    import sys
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for qpviz.config
    args = [a for a in sys.argv[1:] if a != "--commit"]
    commit = "--commit" in sys.argv[1:]
    which = args[0] if args else "moments"
    cases = {"moments": accuracy_cases, "cdf": cdf_cases, "quantile": quantile_form_cases}[which]()
    build = {"moments": cached_reference, "cdf": cached_cdf_reference, "quantile": cached_quantile_form}[which]
    name = CDF_CACHE_FILE if which == "cdf" else CACHE_FILE
    t0 = time.time()
    for i, case in enumerate(cases):
        build(*case, store=False)
        if i % 20 == 0:
            save_cache(name, commit=commit)
            print(f"{i}/{len(cases)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    save_cache(name, commit=commit)
    print(f"done: {len(cases)} cases in {time.time() - t0:.0f}s", file=sys.stderr)
