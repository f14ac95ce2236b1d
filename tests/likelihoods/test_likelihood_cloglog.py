"""The cloglog likelihood against independent computations (mpmath, SciPy quadrature) and in use."""
import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

import qpviz
from qpviz._jit import dlog_prob_batch, log_prob_batch

F = np.concatenate([np.linspace(-40.0, 6.0, 93), [-745.0, -300.0, 1e-12, 0.0, 3.5]])


def _reference(y, f):
    """log p, d1, d2 by mpmath (numerical derivatives at 300 digits, enough for e^-t at f <= 6)."""
    with mpmath.workdps(300):
        def logp(x):
            t = mpmath.exp(x)
            return mpmath.log(-mpmath.expm1(-t)) if y > 0 else -t
        x = mpmath.mpf(float(f))
        return float(logp(x)), float(mpmath.diff(logp, x, 1)), float(mpmath.diff(logp, x, 2))


@pytest.mark.parametrize("y", [-1.0, 1.0])
def test_log_prob_and_derivatives_match_mpmath_numpy_and_numba(y):
    lik = qpviz.likelihood("cloglog")
    ref = np.array([_reference(y, f) for f in F]).T
    d1, d2 = lik.dlog_prob(y, F)
    handle = lik.jit_handle()
    ys = np.full(F.size, y)
    for got in (np.stack([lik.log_prob(y, F), d1, d2]),
                np.vstack([log_prob_batch(handle, ys, F), dlog_prob_batch(handle, ys, F)])):
        np.testing.assert_allclose(got, ref, rtol=2e-9, atol=1e-300)


def test_labels_are_a_distribution():
    lik = qpviz.likelihood("cloglog")
    np.testing.assert_allclose(np.exp(lik.log_prob(1.0, F)) + np.exp(lik.log_prob(-1.0, F)), 1.0, rtol=1e-14)


@pytest.mark.parametrize("y, m, s", [(1.0, 0.3, 1.0), (-1.0, 2.0, 0.5), (1.0, -6.0, 3.0), (-1.0, -8.0, 0.05)])
def test_projections_match_scipy_quadrature(y, m, s):
    lik = qpviz.likelihood("cloglog")

    def density(f):
        return np.exp(lik.log_prob(y, f)) * stats.norm.pdf(f, m, s)

    lo, hi = m - 12 * s, m + 12 * s
    z = integrate.quad(density, lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0]
    mean = integrate.quad(lambda f: f * density(f), lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0] / z
    var = integrate.quad(lambda f: (f - mean) ** 2 * density(f), lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0] / z
    ep = qpviz.project(lik, y, m, s * s, method="ep")
    qp = qpviz.project(lik, y, m, s * s, method="qp")
    np.testing.assert_allclose([ep.log_z, ep.mean, ep.var], [np.log(z), mean, var], rtol=1e-9, atol=1e-12 * s)
    assert qp.mean == ep.mean and qp.var <= ep.var  # Theorem 2


def test_is_registered_and_fits_with_every_method(rng):
    assert "cloglog" in qpviz.likelihoods.REGISTRY
    X = np.linspace(-3, 3, 40)[:, None]
    y = np.where(rng.random(40) < 1 - np.exp(-np.exp(np.sin(2 * X[:, 0]))), 1.0, -1.0)
    kernel = qpviz.kernels.RBF(1.0, 1.0)
    means = {}
    for method in ("ep", "qp", "vb", "laplace"):
        post = qpviz.fit(X, y, "cloglog", kernel, method=method)
        assert post.converged and np.all(np.isfinite(post.predict_f(X)[1]))
        means[method] = post.mean
    mcmc = qpviz.fit(X, y, "cloglog", kernel, method="mcmc", n_samples=1500, burn_in=300, thin=2)
    # every approximation is close to the MCMC reference on this easy problem
    for method, mean in means.items():
        assert np.sqrt(np.mean((mean - mcmc.mean) ** 2)) < 0.15, method
