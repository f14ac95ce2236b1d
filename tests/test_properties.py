"""Properties of the EP and QP projections (hypothesis), over the whole stated domain.

Domain: every likelihood and parameter set the app offers (qpviz.config), cavity mean in
[-10, 10], cavity std in [0.05, 20] (drawn log-uniformly), labels +-1, counts 0..50, real y in
[-3, 3].

* var_QP <= var_EP (QP paper Theorem 2), equality for the Gaussian likelihood;
* W2^2(tilted, N(mean_EP, var_QP)) = var_EP - var_QP, with W2 computed *independently* of the
  library's expansion: the quantile form int_0^1 (F^-1(u) - mean - sigma Phi^-1(u))^2 du
  (u = Phi(z), Gauss-Legendre in z, split at the likelihood's kinks), with F^-1 from
  qpviz.tilted.tilted_quantile; and the QP Gaussian minimises it: moving the mean or the std by
  delta raises W2^2 by exactly delta^2 (the W2^2 surface is a paraboloid with its minimum at
  (mean_EP, sigma_QP), QP paper App. D);
* label symmetry of probit, logistic and step: (y, m) -> (-y, -m) maps mean -> -mean and keeps
  var_EP, var_QP and log Z;
* no NaN or inf in log Z, mean, var, sigma_QP and the site parameters anywhere;
* site_update reports non-positive precisions (student_t, poisson_square) instead of hiding
  them, and log-concave likelihoods never produce them.

The same kind of properties over every *registered* likelihood's whole stated domain (parameters
over their declared ranges, counts to 1000, far real observations), the numba site updates, the
tables and whole EP/QP fits: tests/test_properties_domain.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import reference
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import qpviz
from qpviz import tilted
from qpviz.projection import NonPositiveSitePrecision, site_update

SETTINGS = reference.likelihood_settings()
SYMMETRIC = [s for s in SETTINGS if s[0] in ("probit", "logistic", "step")]
PROFILE = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tilted_case(draw, choices=tuple(SETTINGS)):
    """(likelihood, y, m, v) anywhere in the accuracy domain."""
    name, params = draw(st.sampled_from(choices))
    lik = qpviz.likelihood(name, **params)
    if lik.support == "binary":
        y = draw(st.sampled_from([-1.0, 1.0]))
    elif lik.support == "count":
        y = float(draw(st.integers(0, 50)))
    else:
        y = draw(st.floats(-3.0, 3.0, allow_nan=False))
    m = draw(st.floats(-10.0, 10.0, allow_nan=False))
    log_std = draw(st.floats(math.log(0.05), math.log(20.0), allow_nan=False))
    return lik, y, m, math.exp(2.0 * log_std)


def _both(lik, y, m, v):
    ep = qpviz.project(lik, y, m, v, method="ep")
    qp = qpviz.project(lik, y, m, v, method="qp", use_table=False)
    return ep, qp


# -- Theorem 2 ------------------------------------------------------------------------------
@PROFILE
@given(tilted_case())
def test_qp_variance_never_exceeds_ep_variance(case):
    lik, y, m, v = case
    ep, qp = _both(lik, y, m, v)
    assert qp.var <= ep.var * (1 + 1e-12), f"{lik!r} y={y} m={m} v={v}: var_QP {qp.var!r} > var_EP {ep.var!r}"
    np.testing.assert_array_equal(qp.mean, ep.mean)


@PROFILE
@given(
    st.sampled_from([0.1, 0.5, 1.0, 3.7]),
    st.floats(-3.0, 3.0),
    st.floats(-10.0, 10.0),
    st.floats(math.log(0.05), math.log(20.0)),
)
def test_gaussian_likelihood_qp_equals_ep(noise, y, m, log_std):
    lik = qpviz.likelihood("gaussian", variance=noise)
    v = math.exp(2 * log_std)
    ep, qp = _both(lik, y, m, v)
    np.testing.assert_allclose(qp.var, ep.var, rtol=1e-10)
    np.testing.assert_allclose(ep.var, 1 / (1 / v + 1 / noise), rtol=1e-12)


# -- W2 computed independently --------------------------------------------------------------
_Z_NODES, _Z_WEIGHTS = np.polynomial.legendre.leggauss(160)
_Z_MAX = 7.5  # u in [Phi(-7.5), Phi(7.5)] = [3e-14, 1 - 3e-14]: quantiles still resolvable in double


def _tilted_quantiles(lik, u, y, m, v, mean, sd):
    """F^-1(u) by bisection on the library's tilted CDF (its survival function for u > 1/2, so
    upper quantiles keep their accuracy): 200 halvings of a bracket around the tilted mean."""
    upper = u > 0.5
    target = np.where(upper, 1.0 - u, u)
    # the bracket reaches the cavity's tails too: a heavy-tailed likelihood under a wide cavity has its far
    # quantiles there (student_t, nu = 4, cavity variance 148: F^-1(Phi(7)) is beyond 60 tilted sds)
    reach = 60.0 * max(sd, math.sqrt(v))
    lo = np.full(u.shape, mean - reach)
    hi = np.full(u.shape, mean + reach)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        below = tilted.tilted_cdf(lik, mid, y, m, v)
        above = tilted.tilted_cdf(lik, mid, y, m, v, upper=True)
        go_right = np.where(upper, above > target, below < target)
        lo = np.where(go_right, mid, lo)
        hi = np.where(go_right, hi, mid)
        if np.all(hi - lo <= 4e-16 * np.maximum(np.abs(mid), sd)):
            break
    return 0.5 * (lo + hi)


def _quantile_grid(lik, y, m, v, mean, sd):
    """Nodes z, weights w (for int . phi(z) dz) and F^-1(Phi(z)) on [-7.5, 7.5], split at the
    images z = Phi^-1(F(f)) of the likelihood's kinks and zeros (F^-1 is not smooth there: at a
    zero of the tilted density, e.g. f = 0 for Poisson-square with y > 0, it has a cusp)."""
    from scipy.special import ndtr, ndtri

    cuts = [-_Z_MAX, _Z_MAX]
    zeros = [0.0] if lik.name == "poisson_square" and y > 0 else []  # p(y|f) = f^(2y) e^(-f^2) / y!
    for k in np.concatenate([np.atleast_1d(lik.kinks(y)), zeros]):
        u = float(tilted.tilted_cdf(lik, k, y, m, v))
        if 0 < u < 1 and -_Z_MAX < ndtri(u) < _Z_MAX:
            cuts.append(float(ndtri(u)))
            if k in zeros:  # F^-1 ~ (u - F(k))^(1/(2y+1)): panels graded geometrically into the cusp
                cuts += [float(ndtri(u)) + sign * 10.0**-e for e in range(1, 10) for sign in (-1, 1)]
    cuts = sorted(cuts)
    zs, ws = [], []
    for a, b in zip(cuts[:-1], cuts[1:]):
        zs.append(0.5 * (a + b) + 0.5 * (b - a) * _Z_NODES)
        ws.append(0.5 * (b - a) * _Z_WEIGHTS)
    z = np.concatenate(zs)
    w = np.concatenate(ws) * np.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    return z, w, _tilted_quantiles(lik, ndtr(z), y, m, v, mean, sd)


def _w2_squared(z, w, quantiles, mean, std):
    """int_0^1 (F^-1(u) - mean - std Phi^-1(u))^2 du by the z = Phi^-1(u) substitution."""
    return float(np.sum(w * (quantiles - mean - std * z) ** 2))


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tilted_case())
@example((qpviz.likelihood("student_t", nu=4.0, scale=0.5), 0.0, 0.0, 148.4131591025766))  # a CI run drew it
def test_w2_of_the_qp_gaussian_is_var_ep_minus_var_qp_and_minimal(case):
    lik, y, m, v = case
    ep, qp = _both(lik, y, m, v)
    mean, var_ep, var_qp = float(ep.mean), float(ep.var), float(qp.var)
    sigma = math.sqrt(var_qp)
    z, w, quantiles = _quantile_grid(lik, y, m, v, mean, math.sqrt(var_ep))
    assert np.all(np.isfinite(quantiles)) and np.all(np.diff(quantiles) >= -1e-12 * math.sqrt(var_ep))
    w2sq = _w2_squared(z, w, quantiles, mean, sigma)
    label = f"{lik!r} y={y} m={m} v={v}"
    assert abs(w2sq - (var_ep - var_qp)) <= 1e-8 * var_ep, f"{label}: W2^2 {w2sq!r} vs var_EP - var_QP {var_ep - var_qp!r}"
    # the library's own W2 (closed expansion) agrees with the quadrature one
    lib = float(qpviz.projection.w2_to_gaussian(lik, y, m, v, mean, var_qp)) ** 2
    assert abs(lib - w2sq) <= 1e-8 * var_ep, f"{label}: w2_to_gaussian^2 {lib!r} vs quadrature {w2sq!r}"
    # QP minimises W2: moving the mean or the std by delta adds exactly delta^2
    delta = 1e-2 * sigma
    for dm, ds in [(delta, 0.0), (-delta, 0.0), (0.0, delta), (0.0, -delta)]:
        raised = _w2_squared(z, w, quantiles, mean + dm, sigma + ds) - w2sq
        assert raised > 0, f"{label}: perturbing (mean, std) by ({dm}, {ds}) lowered W2"
        assert abs(raised - delta**2) <= 1e-3 * delta**2, f"{label}: W2^2 rose by {raised!r}, expected {delta**2!r}"


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tilted_case(), st.lists(st.floats(1e-12, 1 - 1e-12), min_size=1, max_size=8))
def test_tilted_quantile_inverts_the_tilted_cdf(case, us):
    """qpviz.tilted.tilted_quantile(u) is the x with F(x) = u (1 - F(x) = 1 - u above 1/2)."""
    lik, y, m, v = case
    u = np.array(us)
    x = tilted.tilted_quantile(lik, u, y, m, v)
    lower = tilted.tilted_cdf(lik, x, y, m, v)
    upper = tilted.tilted_cdf(lik, x, y, m, v, upper=True)
    got = np.where(u > 0.5, 1.0 - upper, lower)
    np.testing.assert_allclose(got, u, rtol=1e-9, atol=1e-15, err_msg=f"{lik!r} y={y} m={m} v={v}")


# -- symmetry ----------------------------------------------------------------------------------
@PROFILE
@given(tilted_case(tuple(SYMMETRIC)))
def test_label_flip_mirrors_the_projection(case):
    lik, y, m, v = case
    ep, qp = _both(lik, y, m, v)
    ep_f, qp_f = _both(lik, -y, -m, v)
    sd = math.sqrt(float(ep.var))
    assert abs(float(ep_f.mean) + float(ep.mean)) <= 1e-12 * max(abs(float(ep.mean)), sd)
    np.testing.assert_allclose(ep_f.var, ep.var, rtol=1e-12)
    np.testing.assert_allclose(qp_f.var, qp.var, rtol=2e-9)  # sigma_QP by quadrature: 1e-9 target
    np.testing.assert_allclose(ep_f.log_z, ep.log_z, rtol=1e-12, atol=1e-13)


# -- everything finite -------------------------------------------------------------------------
@PROFILE
@given(tilted_case())
def test_everything_is_finite(case):
    lik, y, m, v = case
    summary = tilted.tilted_summary(lik, y, m, v)
    for field in ("log_z", "mean", "var", "entropy", "qp_std"):
        value = getattr(summary, field)
        assert np.all(np.isfinite(value)), f"{lik!r} y={y} m={m} v={v}: {field} = {value!r}"
    assert np.all(summary.var > 0) and np.all(summary.qp_std > 0)
    for proj in _both(lik, y, m, v):
        assert np.isfinite(proj.log_z) and np.isfinite(proj.mean) and np.isfinite(proj.var) and proj.var > 0
        site = proj.site()
        assert np.isfinite(site.precision) and np.isfinite(site.precision_mean)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s[0] + "".join(f"-{v:g}" for v in s[1].values()))
def test_everything_is_finite_on_the_domain_corners(setting):
    name, params = setting
    lik = qpviz.likelihood(name, **params)
    ys = np.array(reference.observations(name))
    ms = np.array([-10.0, -5.0, 0.0, 5.0, 10.0])
    stds = np.array([0.05, 0.3, 1.0, 5.0, 20.0])
    y, m, s = np.meshgrid(ys, ms, stds, indexing="ij")
    v = s**2
    for proj in (qpviz.project(lik, y, m, v, method="ep"), qpviz.project(lik, y, m, v, method="qp", use_table=False)):
        for value in (proj.log_z, proj.mean, proj.var):
            assert value.shape == y.shape and np.all(np.isfinite(value))
        assert np.all(proj.var > 0)
        site = proj.site()
        assert np.all(np.isfinite(site.precision)) and np.all(np.isfinite(site.precision_mean))


# -- site updates --------------------------------------------------------------------------------
def test_student_t_gives_non_positive_site_precision_and_it_is_reported():
    """y far (in scale units) from a narrow cavity: log p is convex there, the tilted is wider."""
    lik = qpviz.likelihood("student_t", nu=3.0, scale=1.0)
    for method in ("ep", "qp"):
        proj = qpviz.project(lik, 0.0, 5.0, 1.0, method=method, use_table=False)
        assert proj.var > 1.0  # wider than the cavity
        site = proj.site()
        assert not site.positive and site.precision < 0
        assert site.var < 0  # reported as a negative variance, not hidden
        with pytest.raises(NonPositiveSitePrecision, match="precision <= 0"):
            site.check()
    # a direct call reports the same, elementwise
    update = site_update([0.0, 0.0], [1.0, 1.0], [0.1, 0.2], [0.5, 1.5])
    np.testing.assert_array_equal(update.positive, [True, False])
    np.testing.assert_allclose(update.precision, [1.0, 1 / 1.5 - 1.0])


@PROFILE
@given(tilted_case(tuple(s for s in SETTINGS if qpviz.likelihood(s[0], **s[1]).log_concave)))
def test_log_concave_likelihoods_give_positive_site_precisions(case):
    lik, y, m, v = case
    assert lik.log_concave
    for proj in _both(lik, y, m, v):
        site = proj.site()
        # var <= cavity var; equality (precision 0) only when the likelihood is flat over the cavity
        assert site.precision >= -1e-9 / v, f"{lik!r} y={y} m={m} v={v}: precision {site.precision!r}"
        assert bool(site.positive) == bool(site.precision > 0)


def test_site_update_rejects_non_positive_projected_variance():
    with pytest.raises(ValueError, match="projected variance must be > 0"):
        site_update(0.0, 1.0, 0.0, 0.0)
