"""Property tests (hypothesis) over every registered likelihood's whole stated domain (issue 9.7).

Every test is parametrized by the names in ``qpviz.likelihoods.REGISTRY`` read at collection
time, so a newly registered likelihood is covered without editing this file. A case is
(likelihood, y, m, v):

* parameters: a preset, a combination of the ``choices`` (what the tables cover), or a value
  drawn over the declared range (:func:`parameter_values`: inclusive ends exactly, exclusive
  ends approached to within a float step or a finite extreme for infinite ones);
* y over the support: labels +-1; counts 0..1000 (0, 50 = the last tabulated count, 51 and
  1000 always among the draws); reals up to +-1000;
* cavity mean in [-10, 10] (binary, counts) or y + [-30, 30] (real; and sometimes a mean in
  [-10, 10] with y far away); cavity std log-uniform in [0.05, 20], both ends exactly.

Properties (QP paper /work/shared/papers/000: eqs. 5-7, Theorem 2, Prop. 1):

* ``qpviz.project`` EP and QP (tables on; direct quadrature on a smaller budget) are finite,
  var > 0, and QP's mean is EP's mean;
* sigma_QP <= sigma_EP (the library clamps its outputs to the bound, so the raw table values
  are checked too), equality for a Gaussian tilted distribution;
* the W2 identity at the optimum, W2^2(tilted, N(mean, var_QP)) = var_EP - var_QP, and W2 to
  the QP Gaussian <= W2 to the EP Gaussian;
* log-concave likelihoods: var_QP <= var_EP <= cavity var, so both site precisions are >= 0;
* the numba site update (``SiteRule.step`` on arrays, ``site_step_packed`` on scalars) gives
  finite sites that agree with each other and with ``project(...).site()``;
* the tables agree with direct quadrature to 1e-7 relative on the tables' domain;
* EP and QP on random small GP problems: no NaN in the posterior or the predictions, a finite
  log marginal likelihood, and a ConvergenceWarning exactly when ``converged`` is False.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import qpviz
from qpviz import config, tables, tilted
from qpviz.inference import ConvergenceWarning
from qpviz.inference.sites import CLIPPED, OK, SiteRule, site_step_packed
from qpviz.likelihoods import REGISTRY
from qpviz.projection import qp_variance, w2_to_gaussian
from qpviz.tables import families

NAMES = list(REGISTRY)
STD_RANGE = families.TABLE_STD_RANGE  # the stated domain: the tables' std range
MEAN_RANGE = (-10.0, 10.0)
REAL_OFFSET = 30.0
FAR_Y = 1000.0
MAX_COUNT = 1000
#: finite stand-ins for infinite ends of a parameter range: (0, inf) is drawn log-uniformly from
#: [1e-2, 1e2] (a noise variance or scale from 1/5 of the smallest cavity std to 5x the largest;
#: Student-t nu from a tail heavier than Cauchy to almost Gaussian)
POSITIVE_EXTREMES = (1e-2, 1e2)
GENERIC_EXTREME = 1e2


def _profile(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# -- strategies ---------------------------------------------------------------------------------
def parameter_values(p: qpviz.Parameter) -> st.SearchStrategy[float]:
    """Floats over ``p``'s declared range (ends exactly where inclusive, one float step inside an
    exclusive finite end), plus its ``choices`` and default."""
    lo, hi = p.lower, p.upper
    if lo == 0.0 and math.isinf(hi):
        a, b = POSITIVE_EXTREMES
    else:
        a = lo if math.isfinite(lo) else (min(-GENERIC_EXTREME, hi - GENERIC_EXTREME) if math.isfinite(hi)
                                          else -GENERIC_EXTREME)
        b = hi if math.isfinite(hi) else max(GENERIC_EXTREME, a + GENERIC_EXTREME)
    if math.isfinite(lo) and a == lo and not p.lower_inclusive:
        a = math.nextafter(lo, math.inf)
    if math.isfinite(hi) and b == hi and not p.upper_inclusive:
        b = math.nextafter(hi, -math.inf)
    ends = [x for x in (a, b) if p.check(x) == x]
    inside = (st.floats(math.log(a), math.log(b)).map(math.exp) if a > 0 and b / a > 100
              else st.floats(a, b, allow_nan=False, allow_infinity=False))
    fixed = sorted(set(ends) | set(map(float, p.choices)) | {float(p.default)})
    return st.one_of(st.sampled_from(fixed), inside.filter(lambda x: p.check(x) == x))


def parameter_sets(cls) -> st.SearchStrategy[dict]:
    """A preset, a combination of choices (the tabulated sets), or values over the whole range."""
    offered = families.table_parameter_sets(cls)
    if not cls.parameters:
        return st.just({})
    anywhere = st.fixed_dictionaries({p.name: parameter_values(p) for p in cls.parameters})
    return st.one_of(st.sampled_from(offered), anywhere)


def observations(support: str) -> st.SearchStrategy[float]:
    if support == "binary":
        return st.sampled_from([-1.0, 1.0])
    if support == "count":
        return st.one_of(st.sampled_from([0, 1, 50, 51, MAX_COUNT]), st.integers(0, MAX_COUNT)).map(float)
    return st.one_of(st.sampled_from([0.0, -FAR_Y, FAR_Y]), st.floats(-FAR_Y, FAR_Y),
                     st.floats(-3.0, 3.0))


def cavity_stds() -> st.SearchStrategy[float]:
    log_lo, log_hi = math.log(STD_RANGE[0]), math.log(STD_RANGE[1])
    return st.one_of(st.sampled_from(STD_RANGE), st.floats(log_lo, log_hi).map(math.exp))


def _means(lo, hi):
    return st.one_of(st.sampled_from([lo, hi, 0.5 * (lo + hi)]), st.floats(lo, hi))


@st.composite
def tilted_cases(draw, name: str):
    """(likelihood, y, m, v) anywhere in the stated domain of likelihood ``name``."""
    cls = REGISTRY[name]
    lik = cls(**draw(parameter_sets(cls)))
    y = draw(observations(lik.support))
    if lik.support == "real" and draw(st.booleans()):
        m = y + draw(_means(-REAL_OFFSET, REAL_OFFSET))  # the cavity anywhere near the observation
    else:
        m = draw(_means(*MEAN_RANGE))
    s = draw(cavity_stds())
    return lik, y, m, s * s


@st.composite
def table_cases(draw, name: str):
    """(likelihood, y, m, v) on the tables' domain (qpviz.tables.families) at a tabulated parameter set."""
    cls = REGISTRY[name]
    lik = cls(**draw(st.sampled_from(families.table_parameter_sets(cls))))
    family = families.family_for(lik)
    if lik.support == "binary":
        y = draw(st.sampled_from([-1.0, 1.0]))
    elif lik.support == "count":
        y = float(draw(st.one_of(st.sampled_from([0, config.MAX_TABLE_COUNT]),
                                 st.integers(0, config.MAX_TABLE_COUNT))))
    else:
        y = draw(st.floats(-5.0, 5.0))
    s = draw(st.one_of(st.sampled_from(families.TABLE_STD_RANGE),
                       st.floats(*map(math.log, families.TABLE_STD_RANGE)).map(math.exp)))
    if family is not None and family.fold == families.FOLD_REAL:
        m = y + draw(_means(-families.REAL_OFFSET, families.REAL_OFFSET))
    else:
        m = draw(_means(-families.BINARY_MEAN, families.BINARY_MEAN))
    return lik, y, m, s * s


def _label(lik, y, m, v):
    return f"{lik!r} y={y!r} m={m!r} v={v!r}"


def _finite(*values):
    return all(np.all(np.isfinite(x)) for x in values)


BY_NAME = pytest.mark.parametrize("name", NAMES)
TABULATED = [n for n in NAMES if any(families.family_for(REGISTRY[n](**p)) is not None
                                     for p in families.table_parameter_sets(REGISTRY[n]))]


# -- projections ------------------------------------------------------------------------------
def _check_pair(lik, y, m, v, ep, qp):
    label = _label(lik, y, m, v)
    for proj in (ep, qp):
        assert _finite(proj.log_z, proj.mean, proj.var), f"{label}: {proj}"
        assert proj.var > 0, f"{label}: {proj.method} var {proj.var!r}"
    assert qp.mean == ep.mean, f"{label}: QP mean {qp.mean!r} != EP mean {ep.mean!r}"
    assert qp.log_z == ep.log_z


@BY_NAME
@_profile(40)
@given(data=st.data())
def test_projections_are_finite_and_share_the_mean(name, data):
    lik, y, m, v = data.draw(tilted_cases(name))
    ep = qpviz.project(lik, y, m, v, method="ep")
    _check_pair(lik, y, m, v, ep, qpviz.project(lik, y, m, v, method="qp"))


@BY_NAME
@_profile(15)
@given(data=st.data())
def test_projections_without_tables_are_finite_and_share_the_mean(name, data):
    lik, y, m, v = data.draw(tilted_cases(name))
    ep = qpviz.project(lik, y, m, v, method="ep")
    _check_pair(lik, y, m, v, ep, qpviz.project(lik, y, m, v, method="qp", use_table=False))


# -- Theorem 2 ------------------------------------------------------------------------------------
#: the tables hold sigma_QP to 2.8e-8 relative (measured, lookup_tables/README.md; target 1e-7),
#: so var_QP to ~6e-8: a raw table value may exceed var_EP by that much where the true gap is
#: smaller (narrow cavities far out: measured 4.8e-8 for poisson_exp, y = 50, m = -10, s = 0.05)
TABLE_VAR_RTOL = 1e-7


@BY_NAME
@_profile(30)
@given(data=st.data())
def test_sigma_qp_never_exceeds_sigma_ep(name, data):
    lik, y, m, v = data.draw(tilted_cases(name))
    label = _label(lik, y, m, v)
    ep = qpviz.project(lik, y, m, v, method="ep")
    for use_table in (True, False):
        qp = qpviz.project(lik, y, m, v, method="qp", use_table=use_table)
        assert qp.var <= ep.var, f"{label}: var_QP {qp.var!r} > var_EP {ep.var!r} (use_table={use_table})"
        if lik.gaussian_tilted:
            assert qp.var == ep.var, f"{label}: Gaussian tilted, but var_QP {qp.var!r} != var_EP {ep.var!r}"
    raw = float(qp_variance(lik, y, m, v))  # the table (or quadrature) value before project's clamp
    assert math.isfinite(raw) and raw > 0
    assert raw <= ep.var * (1 + TABLE_VAR_RTOL), f"{label}: raw var_QP {raw!r} > var_EP {ep.var!r}"


def _quadrature_ok(lik, y, m, v) -> bool:
    """Whether the tilted quadrature reports success; where it does not (far-out Gaussian tilted
    distributions, see the xfail below) its values are not checked here. The warning it gives for
    such a case is the answer here, not a failure (pytest turns warnings into errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tilted.QuadratureWarning)
        return bool(tilted.tilted_summary(lik, y, m, v).ok)


@_profile(30)
@given(data=st.data())
def test_gaussian_likelihood_qp_equals_ep_by_quadrature(data):
    """Theorem 2's equality case, through the general quadrature (tilted.qp_std), not the shortcut."""
    lik, y, m, v = data.draw(tilted_cases("gaussian"))
    assume(_quadrature_ok(lik, y, m, v))
    ep = qpviz.project(lik, y, m, v, method="ep")
    sigma = float(tilted.qp_std(lik, y, m, v))
    np.testing.assert_allclose(sigma, math.sqrt(ep.var), rtol=1e-9, err_msg=_label(lik, y, m, v))
    np.testing.assert_allclose(ep.var, v * lik.variance / (v + lik.variance), rtol=1e-13)


def test_quadrature_failure_far_out_is_reported():
    """Where the quadrature misses its tolerance (the counterexample below) it says so: a
    QuadratureWarning naming the input, never silently wrong numbers."""
    lik = qpviz.likelihood("gaussian", variance=0.1)
    with pytest.warns(tilted.QuadratureWarning, match="y=-1000"):
        summary = tilted.tilted_summary(lik, -1000.0, -10.0, 0.05**2, closed_form=False)
    assert not summary.ok
    with pytest.warns(tilted.QuadratureWarning):
        w2_to_gaussian(lik, -1000.0, -10.0, 0.05**2, -34.0, 0.01)


@pytest.mark.xfail(strict=True, raises=tilted.QuadratureWarning,
                   reason="the tilted quadrature fails (ok=False, wrong moments and sigma_QP) once log p(y | mode) "
                   "is below ~ -7e5; it warns (QuadratureWarning) rather than returning them silently")
def test_quadrature_far_out_gaussian_tilted():
    """Measured counterexample: gaussian(variance=0.1), y = -1000, cavity N(-10, 0.05^2). Exact:
    the tilted is N(-34.146..., 0.0024390...), sigma_QP = 0.049386; the quadrature gives mean
    -34.073, var 5.0e-4, sigma_QP 0.021167 and ok=False (first failure near |y - m| = 400:
    log p(y | mode) = -7.6e5; the same at noise 0.5 / 1.0 from log p ~ -1.2e6 / -6.8e5)."""
    lik = qpviz.likelihood("gaussian", variance=0.1)
    y, m, v = -1000.0, -10.0, 0.05**2
    summary = tilted.tilted_summary(lik, y, m, v, closed_form=False)
    exact_var = v * 0.1 / (v + 0.1)
    assert summary.ok
    np.testing.assert_allclose(summary.mean, m + v * (y - m) / (v + 0.1), rtol=1e-12)
    np.testing.assert_allclose(summary.var, exact_var, rtol=1e-9)
    np.testing.assert_allclose(tilted.qp_std(lik, y, m, v), math.sqrt(exact_var), rtol=1e-9)


# -- W2 identity (Prop. 1 + Theorem 2) -------------------------------------------------------------
#: W2^2 = var_t + var - 2 sqrt(var) sigma_QP (w2_to_gaussian) is a difference of terms of size
#: var_EP, so rounding leaves ~1e-15 var_EP, and at var = var_QP it is stationary in sigma (an
#: error d of sigma_QP costs only d^2 var). What remains is that w2_to_gaussian takes var_t from
#: the numba closed forms while project may take var_EP from a likelihood's NumPy ones: both are
#: held to the library's 1e-9 accuracy target (they differed by 1.5e-10 relative for step at
#: eps = 1e-88, z = -10, before step's moments were made cancellation-free).
#: Tolerance: 1e-9 var_EP absolute.
W2_ATOL = 1e-9


@BY_NAME
@_profile(25)
@given(data=st.data())
def test_w2_identity_at_the_qp_optimum(name, data):
    lik, y, m, v = data.draw(tilted_cases(name))
    assume(_quadrature_ok(lik, y, m, v))  # w2_to_gaussian reads sigma_QP from the quadrature
    label = _label(lik, y, m, v)
    ep = qpviz.project(lik, y, m, v, method="ep")
    qp = qpviz.project(lik, y, m, v, method="qp", use_table=False)
    mean, var_ep, var_qp = float(ep.mean), float(ep.var), float(qp.var)
    w2_qp = float(w2_to_gaussian(lik, y, m, v, mean, var_qp))
    w2_ep = float(w2_to_gaussian(lik, y, m, v, mean, var_ep))
    assert math.isfinite(w2_qp) and math.isfinite(w2_ep)
    assert abs(w2_qp**2 - (var_ep - var_qp)) <= W2_ATOL * var_ep, (
        f"{label}: W2^2 {w2_qp**2!r} vs var_EP - var_QP {var_ep - var_qp!r}")
    assert w2_qp <= w2_ep + math.sqrt(W2_ATOL * var_ep), f"{label}: W2 to QP {w2_qp!r} > W2 to EP {w2_ep!r}"


# -- log-concave likelihoods ---------------------------------------------------------------------
def _log_concave_check(lik, y, m, v, use_table=True):
    label = _label(lik, y, m, v)
    ep = qpviz.project(lik, y, m, v, method="ep")
    qp = qpviz.project(lik, y, m, v, method="qp", use_table=use_table)
    assert qp.var <= ep.var <= v, f"{label}: var_QP {qp.var!r}, var_EP {ep.var!r}, cavity var {v!r}"
    for proj in (ep, qp):
        site = proj.site()
        assert _finite(site.precision, site.precision_mean), f"{label}: {site}"
        assert site.precision >= 0, f"{label}: {proj.method} site precision {site.precision!r} < 0"
        assert bool(site.positive) == bool(site.precision > 0)
        if site.positive:
            assert site.var > 0 and math.isfinite(site.var)


#: classes whose instances may be log-concave: ``log_concave`` True, or a property (step: eps = 0)
LOG_CONCAVE = [n for n in NAMES if REGISTRY[n].log_concave is True or isinstance(REGISTRY[n].log_concave, property)]


@pytest.mark.parametrize("name", LOG_CONCAVE)
@_profile(30)
@given(data=st.data())
def test_log_concave_likelihoods_shrink_and_give_non_negative_site_precisions(name, data):
    lik, y, m, v = data.draw(tilted_cases(name).filter(lambda case: case[0].log_concave))
    _log_concave_check(lik, y, m, v)


@pytest.mark.parametrize("use_table", [True, False])
@pytest.mark.parametrize("y, m", [(1.0, 8.0), (-1.0, -8.0), (1.0, 10.0), (-1.0, -10.0)])
def test_probit_far_from_the_boundary_narrow_cavity(y, m, use_table):
    """The issue's case: probit, m = 8, s = 0.05 (z = y m / s = 160): var = v (1 - ~1e-14), and
    1/var_QP - 1/v cancelled to a site variance of -2.1e9; the site must be >= 0 precision."""
    lik = qpviz.likelihood("probit")
    v = 0.05**2
    _log_concave_check(lik, y, m, v, use_table)
    for method in ("ep", "qp"):
        site = qpviz.project(lik, y, m, v, method=method, use_table=use_table).site()
        assert not (site.var < 0), f"site variance {site.var!r}"


@pytest.mark.parametrize("eps, z", [(1e-300, -36.4), (1e-100, -20.4), (5.1592598929513454e-67, -14.8),
                                     (1e-30, -10.4), (0.05, -3.0), (0.2, 5.0)])
def test_step_moments_far_in_the_tail_against_mpmath(eps, z):
    """Step with eps > 0 is a mixture of the cavity (weight eps / Z) and a truncated Gaussian;
    eq. 48's v - v gamma (y m + v gamma) cancelled to 4.8e-7 relative at eps = 1e-300, z = -36.4
    (found by the numba-vs-NumPy site property: 2.1e-9 apart at eps = 5e-67, z = -14.8)."""
    import mpmath as mp

    with mp.workdps(60):
        e, mz = mp.mpf(eps), mp.mpf(z)
        cdf = mp.ncdf(mz)
        r = mp.npdf(mz) / cdf
        w_cavity, w_trunc = e, (1 - 2 * e) * cdf
        total = w_cavity + w_trunc
        mean = (w_cavity * mz + w_trunc * (mz + r)) / total
        second = (w_cavity * (1 + mz**2) + w_trunc * (1 - r * (r + mz) + (mz + r) ** 2)) / total
        want = (float(mp.log(total)), float(mean), float(second - mean**2))
    lik = qpviz.likelihood("step", eps=eps)
    for y in (1.0, -1.0):  # y m / s = z with s = 1
        for got in (lik.tilted_moments(y, y * z, 1.0), tilted.tilted_summary(lik, y, y * z, 1.0)):
            np.testing.assert_allclose(got.log_z, want[0], rtol=1e-14, atol=1e-300)
            np.testing.assert_allclose(y * got.mean, want[1], rtol=0, atol=1e-13 * max(1.0, abs(want[1])))
            np.testing.assert_allclose(got.var, want[2], rtol=1e-12)


# -- numba site update against the NumPy path --------------------------------------------------------
#: the two paths compute the tilted moments by different code (numba kernels vs the likelihood's
#: NumPy closed forms / quadrature batch), each to the library's 1e-9 target (measured: step at
#: eps = 5e-67, z = -14.8 differed by 2.1e-9 relative before d139dd2; now ~1e-13). The site
#: precision (v - var) / (v var) amplifies an absolute error d of var to d / var^2, so precisions
#: are compared on the scale of the posterior precision 1/var (and nu on the scale of (|m| + sd) / var).
SITE_RTOL = 1e-9


@BY_NAME
@pytest.mark.parametrize("method", ["ep", "qp"])
@_profile(20)
@given(data=st.data())
def test_numba_site_update_agrees_with_numpy(name, method, data):
    lik, y, m, v = data.draw(tilted_cases(name))
    label = _label(lik, y, m, v)
    # a site (tau, nu) already present: the posterior is the cavity times it
    tau = data.draw(st.sampled_from([0.0, 0.5 / v, 1.0]))
    nu = data.draw(st.sampled_from([0.0, 1.0, -3.0])) * tau
    post_var = 1.0 / (1.0 / v + tau)
    post_mean = post_var * (m / v + nu)
    rule = SiteRule.build(method, lik, damping=1.0)
    tau_np, nu_np, log_z_np, status_np = rule.step(np.array([y]), np.array([post_mean]), np.array([post_var]),
                                                   np.array([tau]), np.array([nu]))
    assert _finite(tau_np, nu_np, log_z_np), f"{label}: NumPy site {tau_np!r} {nu_np!r} {log_z_np!r}"
    assert status_np[0] in (OK, CLIPPED), f"{label}: status {status_np[0]}"
    # the cavity the rule sees (rounded through the posterior) and the projection of it
    tau_c = 1.0 / post_var - tau
    m_c, v_c = (post_mean / post_var - nu) / tau_c, 1.0 / tau_c
    proj = qpviz.project(lik, y, m_c, v_c, method=method)
    site = proj.site()
    scale_tau = 1.0 / float(proj.var)
    scale_nu = (abs(float(proj.mean)) + math.sqrt(float(proj.var))) / float(proj.var) + abs(m_c) / v_c
    expected_tau = max(float(site.precision), 0.0)  # damping 1: a negative precision is clipped to 0
    assert abs(tau_np[0] - expected_tau) <= SITE_RTOL * scale_tau, f"{label}: tau {tau_np[0]!r} vs {expected_tau!r}"
    assert abs(nu_np[0] - float(site.precision_mean)) <= SITE_RTOL * scale_nu, f"{label}: nu {nu_np[0]!r}"
    if rule.jit is None:
        return
    tau_j, nu_j, log_z_j, status_j = site_step_packed(rule.jit, y, post_mean, post_var, tau, nu)
    assert _finite(tau_j, nu_j, log_z_j), f"{label}: numba site {tau_j!r} {nu_j!r} {log_z_j!r}"
    assert status_j == status_np[0], f"{label}: numba status {status_j} vs NumPy {status_np[0]}"
    assert abs(tau_j - tau_np[0]) <= SITE_RTOL * scale_tau, f"{label}: numba tau {tau_j!r} vs NumPy {tau_np[0]!r}"
    assert abs(nu_j - nu_np[0]) <= SITE_RTOL * scale_nu, f"{label}: numba nu {nu_j!r} vs NumPy {nu_np[0]!r}"
    assert abs(log_z_j - log_z_np[0]) <= 1e-9 * (1 + abs(log_z_np[0])), f"{label}: log Z {log_z_j!r} vs {log_z_np[0]!r}"


# -- tables --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TABULATED)
@_profile(40)
@given(data=st.data())
def test_tables_match_direct_quadrature_on_their_domain(name, data):
    lik, y, m, v = data.draw(table_cases(name))
    assert families.family_for(lik) is not None
    label = _label(lik, y, m, v)
    table = float(tables.qp_variance(lik, y, m, v))
    direct = float(qp_variance(lik, y, m, v, use_table=False))
    assert math.isfinite(table) and table > 0, f"{label}: table var_QP {table!r}"
    assert abs(table - direct) <= 1e-7 * direct, f"{label}: table {table!r} vs direct {direct!r}"


# -- GP level ------------------------------------------------------------------------------------
MAX_SWEEPS = 8
HUGE_KERNEL_VARIANCE = 1e4


@st.composite
def gp_problems(draw, name: str):
    """(X, y, likelihood, kernel, X_new, EP options) of a small GP problem, sometimes pathological:
    duplicate inputs, all observations equal, a huge kernel variance; sequential (fixed or random
    order), parallel or damped sweeps."""
    cls = REGISTRY[name]
    lik = cls(**draw(st.sampled_from(families.table_parameter_sets(cls))))
    n = draw(st.integers(5, 30))
    dim = draw(st.sampled_from([1, 2]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, dim))
    if draw(st.booleans()):  # duplicate inputs
        X[n // 2:] = X[: n - n // 2]
    variance = draw(st.one_of(st.sampled_from([0.1, 50.0, HUGE_KERNEL_VARIANCE]), st.floats(0.1, 50.0)))
    lengthscale = draw(st.one_of(st.sampled_from([0.1, 5.0]), st.floats(0.1, 5.0)))
    kernel = qpviz.kernels.RBF(variance=variance, lengthscale=lengthscale)
    f = rng.normal(0.0, math.sqrt(variance), size=n)
    same = draw(st.booleans())
    if lik.support == "binary":
        y = np.full(n, draw(st.sampled_from([-1.0, 1.0]))) if same else np.where(f + rng.normal(size=n) > 0, 1.0, -1.0)
    elif lik.support == "count":
        if same:
            y = np.full(n, float(draw(st.sampled_from([0, 3, 200]))))
        else:
            y = rng.poisson(np.exp(np.clip(f, -5.0, 5.0))).astype(float)
    else:
        y = np.full(n, draw(st.sampled_from([0.0, 20.0]))) if same else f + rng.standard_t(3.0, size=n)
    X_new = np.vstack([X[:2], rng.uniform(-6.0, 6.0, size=(3, dim))])
    options = draw(st.sampled_from([{}, {"parallel": True}, {"order": "random", "seed": 3}, {"damping": 0.5}]))
    return X, y, lik, kernel, X_new, options


@BY_NAME
@pytest.mark.parametrize("method", ["ep", "qp"])
@_profile(6)
@given(data=st.data())
def test_ep_and_qp_on_small_gp_problems(name, method, data):
    """The engine's promise: a posterior without NaN, a finite evidence at the final sites, and a
    ConvergenceWarning exactly when ``converged`` is False (never a silent NaN).

    The evidence (eq. 4) is finite whether or not EP converged: the engine keeps every tau_i >= 0
    (a negative site precision is clipped to 0), so each cavity precision 1/var_i - tau_i (the
    marginal precision of f_i under the prior times the other sites) is at least the prior's
    1/K_ii > 0, and every term of eq. 4 is defined. A NaN here is a bug, not a convergence failure."""
    X, y, lik, kernel, X_new, options = data.draw(gp_problems(name))
    with warnings.catch_warnings(record=True) as caught:  # other warnings stay errors (pyproject.toml)
        warnings.simplefilter("always", ConvergenceWarning)
        post = qpviz.fit(X, y, lik, kernel, method=method, max_sweeps=MAX_SWEEPS, **options)
        mean_new, var_new = post.predict_f(X_new)
    label = f"{method} {options} {lik!r} N={len(y)} {kernel!r} y={y.tolist()}"
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert warned == (not post.converged), f"{label}: converged={post.converged}, ConvergenceWarning={warned}"
    assert _finite(post.mean, post.var, mean_new, var_new), f"{label}: NaN/inf in the posterior"
    assert np.all(post.var > 0) and np.all(var_new > 0), f"{label}: non-positive posterior variance"
    assert np.all(post.site_precision >= 0) and _finite(post.site_precision, post.site_nu)
    assert math.isfinite(post.log_marginal_likelihood), (
        f"{label}: log marginal likelihood {post.log_marginal_likelihood!r}, converged={post.converged}")
