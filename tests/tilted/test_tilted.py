"""The adaptive tilted-quadrature engine against closed forms and independent integrals."""
import numpy as np
import pytest
from scipy import integrate, special, stats

import qpviz
from qpviz import tilted
from qpviz.likelihoods import REGISTRY

#: the values the dashboard offers (each class's Parameter.choices)
GAUSSIAN_VARIANCES = REGISTRY["gaussian"].parameters[0].choices
STEP_EPS = REGISTRY["step"].parameters[0].choices

M_GRID = np.array([-10.0, -4.0, -0.3, 0.0, 1.0, 6.0, 10.0])
STD_GRID = np.array([0.05, 0.3, 1.0, 4.0, 20.0])
M, S = (a.ravel() for a in np.meshgrid(M_GRID, STD_GRID))
V = S**2

CLOSED = [("gaussian", {"variance": var}, y) for var in GAUSSIAN_VARIANCES for y in (-3.0, 0.0, 2.5)]
CLOSED += [("probit", {}, y) for y in (-1.0, 1.0)]
CLOSED += [("step", {"eps": eps}, y) for eps in STEP_EPS for y in (-1.0, 1.0)]
CLOSED += [("poisson_square", {}, y) for y in (0.0, 1.0, 5.0, 50.0)]


@pytest.mark.parametrize("name,params,y", CLOSED)
def test_quadrature_reproduces_closed_form_moments(name, params, y):
    lik = qpviz.likelihood(name, **params)
    closed = lik.tilted_moments(y, M, V)
    quad = tilted.tilted_summary(lik, y, M, V, want_qp=False, closed_form=False)
    assert quad.ok.all()
    np.testing.assert_allclose(quad.log_z, closed.log_z, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose((quad.mean - closed.mean) / np.sqrt(closed.var), 0.0, atol=1e-10)
    np.testing.assert_allclose(quad.var, closed.var, rtol=1e-9)


@pytest.mark.parametrize("variance", GAUSSIAN_VARIANCES)
def test_gaussian_tilted_qp_equals_ep_and_entropy_is_exact(variance):
    lik = qpviz.likelihood("gaussian", variance=variance)
    s = tilted.tilted_summary(lik, 0.7, M, V)
    np.testing.assert_allclose(s.qp_std, np.sqrt(s.var), rtol=1e-12)
    np.testing.assert_allclose(s.entropy, 0.5 * np.log(2 * np.pi * np.e * s.var), rtol=1e-12, atol=1e-12)


def _truncated_normal_sigma(m, sd, y):
    """sigma_QP of N(m, sd^2) truncated to y f > 0 by the u-form with its closed-form quantile."""
    a = -y * m / sd  # truncation point of g = (y f - y m) / sd
    tail = special.ndtr(-a)

    def integrand(t):  # u = Phi(t); Q(u) = Phi^-1(Phi(a) + u tail) = -Phi^-1(Phi(-t) tail)
        return -special.ndtri(special.ndtr(-t) * tail) * t * stats.norm.pdf(t)

    value, _ = integrate.quad(integrand, -12, 12, limit=400, epsabs=1e-15, epsrel=1e-12, points=[0.0])
    return sd * value


@pytest.mark.parametrize("m,sd", [(-2.0, 1.0), (0.0, 1.0), (1.5, 0.5), (3.0, 4.0), (-1.0, 0.3)])
@pytest.mark.parametrize("y", [-1.0, 1.0])
def test_step_sigma_qp_matches_truncated_normal_quantile_integral(m, sd, y):
    got = tilted.qp_std(qpviz.likelihood("step", eps=0.0), y, m, sd**2)
    assert got == pytest.approx(_truncated_normal_sigma(m, sd, y), rel=1e-9)


LIKELIHOODS = [
    ("gaussian", {"variance": 0.5}, 0.3),
    ("probit", {}, 1.0),
    ("logistic", {}, -1.0),
    ("step", {"eps": 0.0}, 1.0),
    ("step", {"eps": 0.1}, -1.0),
    ("poisson_square", {}, 3.0),
    ("poisson_exp", {}, 2.0),
    ("student_t", {"nu": 3.0, "scale": 1.0}, 2.0),
    ("laplace", {"scale": 0.5}, -1.0),
]


@pytest.mark.parametrize("name,params,y", LIKELIHOODS)
def test_cdf_against_scipy_quad_of_the_density(name, params, y):
    lik = qpviz.likelihood(name, **params)
    m, v = 0.4, 1.7
    moments = lik.tilted_moments(y, m, v)
    sd = np.sqrt(moments.var)
    xs = moments.mean + sd * np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    got = tilted.tilted_cdf(lik, xs, y, m, v)
    pdf = lambda f: np.exp(lik.tilted_logpdf(f, y, m, v))  # noqa: E731
    kinks = list(lik.kinks(y))
    for x, g in zip(xs, got):
        want, _ = integrate.quad(pdf, -np.inf, x, epsabs=1e-14, epsrel=1e-12, limit=200)
        if kinks and kinks[0] < x:
            left, _ = integrate.quad(pdf, -np.inf, kinks[0], epsabs=1e-14, epsrel=1e-12, limit=200)
            right, _ = integrate.quad(pdf, kinks[0], x, epsabs=1e-14, epsrel=1e-12, limit=200)
            want = left + right
        assert g == pytest.approx(want, abs=1e-10)
    upper = tilted.tilted_cdf(lik, xs, y, m, v, upper=True)
    np.testing.assert_allclose(got + upper, 1.0, atol=1e-13)
    assert np.all(np.diff(got) > 0)


@pytest.mark.parametrize("name,params,y", LIKELIHOODS)
def test_quantile_inverts_cdf_in_both_tails(name, params, y):
    lik = qpviz.likelihood(name, **params)
    m, v = -0.8, 2.5
    u = np.array([1e-12, 1e-6, 0.01, 0.3, 0.5, 0.9, 1 - 1e-6, 1 - 1e-10])
    x = tilted.tilted_quantile(lik, u, y, m, v)
    assert np.all(np.diff(x) > 0)
    lower = tilted.tilted_cdf(lik, x, y, m, v)
    upper = tilted.tilted_cdf(lik, x, y, m, v, upper=True)
    np.testing.assert_allclose(np.where(u < 0.5, lower, upper), np.where(u < 0.5, u, 1 - u), rtol=1e-8)


@pytest.mark.parametrize("name,params,y", LIKELIHOODS)
def test_sigma_qp_equals_the_u_form_integral(name, params, y):
    """eq. 7 both ways: int phi(Phi^-1(F)) df (engine) = int_0^1 F^-1(u) Phi^-1(u) du (quantiles).

    With u = Phi(t) the u-form is int F^-1(Phi(t)) t phi(t) dt; F^-1 has a kink (step, laplace)
    or a root singularity (poisson_square, at f = 0) where t = Phi^-1(F(point)): split there.
    """
    lik = qpviz.likelihood(name, **params)
    m, v = 0.6, 3.0
    special_points = list(lik.kinks(y)) + ([0.0] if name == "poisson_square" else [])
    t_breaks = sorted(float(special.ndtri(tilted.tilted_cdf(lik, p, y, m, v))) for p in special_points)

    def integrand(t):
        u = special.ndtr(t)
        if u <= 0.0 or u >= 1.0:
            return 0.0
        return float(tilted.tilted_quantile(lik, u, y, m, v)) * t * stats.norm.pdf(t)

    edges = [-9.0] + [t for t in t_breaks if -9 < t < 9] + [9.0]
    value = sum(integrate.quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-11, limit=200)[0]
                for lo, hi in zip(edges[:-1], edges[1:]))
    assert tilted.qp_std(lik, y, m, v) == pytest.approx(value, rel=1e-9)


@pytest.mark.parametrize("name,params,y", LIKELIHOODS)
def test_no_nan_or_failure_over_the_domain(name, params, y):
    lik = qpviz.likelihood(name, **params)
    s = tilted.tilted_summary(lik, y, M, V)
    for field in (s.log_z, s.mean, s.var, s.entropy, s.qp_std):
        assert np.all(np.isfinite(field))
    assert s.ok.all()
    assert np.all(s.qp_std <= np.sqrt(s.var) * (1 + 1e-15))
    assert np.all(s.var > 0)
