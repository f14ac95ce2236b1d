"""A user's likelihood that defines only log_prob works everywhere, through the contract's defaults.

The user-defined probit below has no closed forms, no derivatives and no numba kernels: its
projections come from the NumPy quadrature engine, its derivatives from finite differences.
It must agree with the built-in probit (closed forms, numba) to 1e-7 on projections and to
1e-6 on whole EP and QP fits (issue: engine contracts, point 1).
"""
import numpy as np
import pytest
from scipy import special

import qpviz
from qpviz.likelihoods import REGISTRY


class UserProbit(qpviz.Likelihood):
    name = "user_probit"
    support = "binary"

    def log_prob(self, y, f):
        return special.log_ndtr(np.multiply(y, f))


class UserCauchy(qpviz.Likelihood):
    """A heavy-tailed regression likelihood with a declared parameter (not log-concave)."""

    name = "user_cauchy"
    parameters = (qpviz.Parameter("scale", 1.0, lower=0.0, doc="half width at half maximum"),)

    def log_prob(self, y, f):
        r = np.subtract(y, f) / self.scale
        return -np.log(np.pi * self.scale) - np.log1p(r * r)


@pytest.fixture
def registered_user_classes():
    saved = dict(REGISTRY)
    qpviz.register_likelihood(UserProbit)
    qpviz.register_likelihood(UserCauchy)
    yield
    REGISTRY.clear()
    REGISTRY.update(saved)


def test_user_probit_projections_match_the_built_in():
    user, built_in = UserProbit(), qpviz.likelihood("probit")
    assert user.jit_handle() is None
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    m = np.array([0.3, 2.0, -4.0, -9.5, 9.5, 0.0])
    v = np.array([1.0, 0.2, 9.0, 0.0025, 400.0, 1e-2])
    for method in ("ep", "qp"):
        a = qpviz.project(user, y, m, v, method=method)
        b = qpviz.project(built_in, y, m, v, method=method)
        assert np.all(np.abs(a.mean - b.mean) <= 1e-7 * (np.abs(b.mean) + np.sqrt(b.var)))
        np.testing.assert_allclose(a.var, b.var, rtol=1e-7)
        np.testing.assert_allclose(a.log_z, b.log_z, rtol=1e-7, atol=1e-9)
    ep_b, qp_b = (qpviz.project(built_in, y, m, v, method=k) for k in ("ep", "qp"))
    for fn in (qpviz.projection.w2_to_gaussian, qpviz.projection.kl_to_gaussian):
        for target in (ep_b, qp_b):
            # both forms cancel where the target is nearly the tilted itself (W2 ~ 1e-8 is rounding)
            got, want = fn(user, y, m, v, target.mean, target.var), fn(built_in, y, m, v, target.mean, target.var)
            assert np.all(np.abs(got - want) <= 1e-6 * want + 3e-6 * np.sqrt(v))
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(user.tilted_cdf(x, 1.0, 0.3, 1.0), built_in.tilted_cdf(x, 1.0, 0.3, 1.0), rtol=1e-8)
    np.testing.assert_allclose(user.tilted_quantile([0.1, 0.5, 0.9], 1.0, 0.3, 1.0),
                               built_in.tilted_quantile([0.1, 0.5, 0.9], 1.0, 0.3, 1.0), rtol=1e-8)
    d1, d2 = user.dlog_prob(1.0, x)
    e1, e2 = built_in.dlog_prob(1.0, x)
    np.testing.assert_allclose(d1, e1, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(d2, e2, rtol=1e-5, atol=1e-7)


@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(-3, 3, 40))[:, None]
    y = np.where(np.sin(2 * X[:, 0]) + 0.4 * rng.normal(size=40) > 0, 1.0, -1.0)
    return X, y, qpviz.kernels.RBF(variance=2.0, lengthscale=0.8)


@pytest.mark.parametrize("method, options", [("ep", {}), ("qp", {}), ("ep", {"parallel": True}),
                                             ("qp", {"parallel": True})])
def test_user_probit_ep_and_qp_fits_match_the_built_in(classification, method, options):
    X, y, kernel = classification
    a = qpviz.fit(X, y, UserProbit(), kernel, method=method, tol=1e-10, **options)
    b = qpviz.fit(X, y, "probit", kernel, method=method, tol=1e-10, **options)
    assert a.converged and b.converged
    Xs = np.linspace(-3.5, 3.5, 9)[:, None]
    for got, want in ((a.site_mean, b.site_mean), (a.site_var, b.site_var), (a.mean, b.mean), (a.var, b.var),
                      (a.predict_f(Xs)[0], b.predict_f(Xs)[0]), (a.predict_f(Xs)[1], b.predict_f(Xs)[1]),
                      (a.predict_proba(Xs), b.predict_proba(Xs))):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(a.log_marginal_likelihood, b.log_marginal_likelihood, rtol=1e-6)


@pytest.mark.parametrize("method", ["vb", "laplace"])
def test_user_probit_vb_and_laplace_match_the_built_in(classification, method):
    X, y, kernel = classification
    a = qpviz.fit(X, y, UserProbit(), kernel, method=method)
    b = qpviz.fit(X, y, "probit", kernel, method=method)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.var, b.var, rtol=1e-5, atol=1e-6)


def test_user_probit_mcmc_agrees_with_ep_in_distribution(classification):
    X, y, kernel = classification
    post = qpviz.fit(X, y, UserProbit(), kernel, method="mcmc", n_samples=800, burn_in=200, thin=1)
    ep = qpviz.fit(X, y, "probit", kernel, method="ep")
    assert np.all(np.isfinite(post.mean))
    assert np.sqrt(np.mean((post.mean - ep.mean) ** 2)) < 0.25  # EP is close to exact on such data


def test_registered_user_class_is_built_by_name_and_checks_parameters(registered_user_classes):
    lik = qpviz.likelihood("user_cauchy", scale=0.5)
    assert isinstance(lik, UserCauchy) and lik.params == {"scale": 0.5}
    with pytest.raises(ValueError, match="scale must be a finite number in"):
        qpviz.likelihood("user_cauchy", scale=-1.0)
    with pytest.raises(TypeError, match="has no parameter"):
        qpviz.likelihood("user_cauchy", width=1.0)
    proj = qpviz.project(lik, 0.4, 0.0, 1.0, method="qp")
    assert 0 < proj.var <= qpviz.project(lik, 0.4, 0.0, 1.0).var


def test_a_class_without_log_prob_is_refused_with_a_message():
    class Empty(qpviz.Likelihood):
        name = "empty"

    with pytest.raises(TypeError, match="must define log_prob"):
        qpviz.register_likelihood(Empty)
    with pytest.raises(NotImplementedError, match="must define log_prob"):
        qpviz.project(Empty(), 0.0, 0.0, 1.0)


def test_a_name_clash_is_refused():
    class Other(UserProbit):
        name = "probit"

    with pytest.raises(ValueError, match="registered already"):
        qpviz.register_likelihood(Other)


def test_tempered_likelihood_moments_match_quadrature():
    """p(y|f)^alpha: its tilted moments by the numba engine (built-in) and the NumPy engine (user)."""
    from scipy import integrate, stats

    for lik in (qpviz.likelihood("probit"), UserProbit()):
        tempered = lik.tempered(0.5)
        assert tempered.alpha == 0.5 and lik.tempered(1.0) is lik

        def density(f):
            return np.exp(0.5 * special.log_ndtr(f)) * stats.norm.pdf(f, 0.3, 1.5)

        z = integrate.quad(density, -20, 20, epsabs=0, epsrel=1e-13)[0]
        mean = integrate.quad(lambda f: f * density(f), -20, 20, epsabs=0, epsrel=1e-13)[0] / z
        got = tempered.tilted_moments(1.0, 0.3, 2.25)
        np.testing.assert_allclose([got.log_z, got.mean], [np.log(z), mean], rtol=1e-9)
        assert qpviz.project(tempered, 1.0, 0.3, 2.25, method="qp").var <= got.var
