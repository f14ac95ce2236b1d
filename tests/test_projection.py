"""qpviz.project, site updates, W2 and KL to a Gaussian."""
import numpy as np
import pytest
from scipy import integrate, special

import qpviz
from qpviz import tilted
from qpviz.projection import NonPositiveSitePrecision, kl_to_gaussian, site_update, w2_to_gaussian


def test_project_broadcasts_and_orders_variances():
    lik = qpviz.likelihood("probit")
    y = np.array([1.0, -1.0, 1.0])
    m = np.array([[0.0], [2.0]])
    ep = qpviz.project(lik, y, m, 1.5, method="ep")
    qp = qpviz.project(lik, y, m, 1.5, method="qp", use_table=False)
    assert ep.mean.shape == qp.var.shape == (2, 3)
    np.testing.assert_array_equal(ep.mean, qp.mean)
    assert np.all(qp.var <= ep.var)


def test_project_rejects_bad_method_and_cavity():
    lik = qpviz.likelihood("probit")
    with pytest.raises(ValueError, match="method"):
        qpviz.project(lik, 1, 0.0, 1.0, method="kl")
    with pytest.raises(ValueError, match="cavity_var must be > 0"):
        qpviz.project(lik, 1, 0.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        qpviz.project(lik, 1, np.inf, 1.0)
    with pytest.raises(TypeError, match="numeric"):
        qpviz.project(lik, 1, "abc", 1.0)
    with pytest.raises(TypeError, match="qpviz likelihood"):
        qpviz.project("probit", 1, 0.0, 1.0)


def test_site_update_is_eq6_and_recovers_the_projection():
    lik = qpviz.likelihood("logistic")
    proj = qpviz.project(lik, 1.0, 0.3, 2.0, method="ep")
    site = proj.site().check()
    # cavity x site = projection (product of Gaussians)
    precision = 1 / 2.0 + 1 / site.var
    assert 1 / precision == pytest.approx(proj.var, rel=1e-13)
    assert (0.3 / 2.0 + site.mean / site.var) / precision == pytest.approx(proj.mean, rel=1e-13)


def test_non_positive_site_precision_is_reported_not_nan():
    # a projection wider than the cavity (possible for non-log-concave likelihoods)
    site = site_update(0.0, 1.0, np.array([0.5, 0.2, 0.0]), np.array([2.0, 1.0, 0.5]))
    assert site.positive.tolist() == [False, False, True]
    assert np.all(np.isfinite(site.precision)) and np.all(np.isfinite(site.precision_mean))
    assert site.var[0] < 0 and np.isinf(site.var[1]) and site.var[2] == pytest.approx(1.0)
    with pytest.raises(NonPositiveSitePrecision, match="2 site update"):
        site.check()


def test_student_t_can_give_negative_site_precision_and_says_so():
    lik = qpviz.likelihood("student_t", nu=3.0, scale=0.3)
    proj = qpviz.project(lik, 8.0, 0.0, 1.0, method="ep")  # outlier: bimodal tilted, wider than the cavity
    assert proj.var > 1.0
    assert not proj.site().positive


def _w2_numeric(lik, y, m, v, mean, var):
    """W2 via Prop. 1 by quadrature of the quantile functions (u = Phi(t))."""
    sd = np.sqrt(var)

    def integrand(t):
        u = special.ndtr(t)
        q = float(tilted.tilted_quantile(lik, u, y, m, v))
        return (q - mean - sd * t) ** 2 * np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)

    return np.sqrt(integrate.quad(integrand, -9, 9, epsabs=1e-14, epsrel=1e-10, limit=200)[0])


@pytest.mark.parametrize("name,y", [("probit", 1.0), ("poisson_exp", 3.0), ("gaussian", 0.5)])
def test_w2_formula_matches_quantile_quadrature(name, y):
    lik = qpviz.likelihood(name)
    m, v = -0.4, 2.0
    for mean, var in [(0.1, 0.5), (1.0, 2.0)]:
        assert w2_to_gaussian(lik, y, m, v, mean, var) == pytest.approx(_w2_numeric(lik, y, m, v, mean, var), rel=1e-7)


def test_kl_formula_matches_quadrature_and_is_minimised_by_ep():
    lik = qpviz.likelihood("logistic")
    y, m, v = 1.0, 0.5, 3.0
    ep = qpviz.project(lik, y, m, v, "ep")
    qp = qpviz.project(lik, y, m, v, "qp", use_table=False)

    def kl_numeric(mean, var):
        f = lambda x: np.exp(lik.tilted_logpdf(x, y, m, v)) * (  # noqa: E731
            lik.tilted_logpdf(x, y, m, v) + 0.5 * np.log(2 * np.pi * var) + (x - mean) ** 2 / (2 * var))
        return integrate.quad(f, -30, 30, epsabs=1e-13, limit=200)[0]

    for mean, var in [(ep.mean, ep.var), (qp.mean, qp.var), (0.0, 1.0)]:
        assert kl_to_gaussian(lik, y, m, v, mean, var) == pytest.approx(kl_numeric(mean, var), abs=1e-9)
    assert kl_to_gaussian(lik, y, m, v, ep.mean, ep.var) < kl_to_gaussian(lik, y, m, v, qp.mean, qp.var)


def test_gaussian_qp_is_ep_without_quadrature_and_matches_the_engine():
    lik = qpviz.likelihood("gaussian", variance=0.3)
    m = np.linspace(-5, 5, 7)
    qp = qpviz.project(lik, 1.2, m, 2.0, method="qp")
    np.testing.assert_array_equal(qp.var, qpviz.project(lik, 1.2, m, 2.0, method="ep").var)
    np.testing.assert_allclose(tilted.qp_std(lik, 1.2, m, 2.0) ** 2, qp.var, rtol=1e-12)


def test_error_messages_show_plain_numbers():
    with pytest.raises(ValueError, match=r"got 0\.5$"):
        qpviz.likelihood("probit").check_y(0.5)
