"""Sparse GP regression (FITC, PITC, DTC, VFE, Power EP) in closed form: dense formulas, identities,
ordering facts, analytic gradients, learning and input errors (issue 12)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qpviz
from qpviz import kernels
from qpviz.inference.fit import OptimiserBoundWarning
from qpviz.inference.sparse_regression import fit_sparse_regression, kmeans_blocks, sparse_log_evidence

CASES = [("fitc", 1.0), ("pitc", 1.0), ("dtc", 1.0), ("vfe", 1.0), ("ep", 1.0), ("ep", 0.5), ("ep", 0.05),
         ("qp", 0.3)]


def regression_problem(rng, n=40, m=7, d=2):
    X = rng.uniform(-3, 3, size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, -1]) + 0.3 * rng.normal(size=n)
    Z = rng.uniform(-3, 3, size=(m, d))
    return X, y, Z


def dense_sparse_gp(X, y, kernel, Z, s2, method, alpha=1.0, blocks=None, X_new=None, jitter=1e-8):
    """The method's evidence and predictions from N x N matrices (slogdet / solve), the textbook way."""
    n, m = X.shape[0], Z.shape[0]
    Kuu = kernel(Z) + jitter * np.eye(m)
    Kuf, Kff = kernel(Z, X), kernel(X)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    D = np.diag(np.diag(Kff - Q))
    extra = 0.0
    if method == "fitc":
        Lam = D + s2 * np.eye(n)
    elif method == "pitc":
        mask = np.zeros((n, n))
        for b in blocks:
            mask[np.ix_(b, b)] = 1.0
        Lam = mask * (Kff - Q) + s2 * np.eye(n)
    elif method in ("dtc", "vfe"):
        Lam = s2 * np.eye(n)
        extra = -np.trace(D) / (2 * s2) if method == "vfe" else 0.0
    else:  # Power EP
        Lam = alpha * D + s2 * np.eye(n)
        extra = -(1 - alpha) / (2 * alpha) * np.sum(np.log1p(alpha * np.diag(D) / s2))
    A = Q + Lam
    value = -0.5 * (n * np.log(2 * np.pi) + np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)) + extra
    if X_new is None:
        return value
    Sigma = np.linalg.inv(Kuu + Kuf @ np.linalg.solve(Lam, Kuf.T))  # the reference may invert
    Ksu = kernel(X_new, Z)
    mean = Ksu @ Sigma @ Kuf @ np.linalg.solve(Lam, y)
    cov = kernel(X_new) - Ksu @ np.linalg.solve(Kuu, Ksu.T) + Ksu @ Sigma @ Ksu.T
    return value, mean, cov


def exact_gp(X, y, kernel, s2, X_new):
    """log N(y | 0, K + s2 I) and the exact predictive (R&W eqs. 2.25, 2.26, 2.30), no jitter."""
    Ky = kernel(X) + s2 * np.eye(X.shape[0])
    value = -0.5 * (X.shape[0] * np.log(2 * np.pi) + np.linalg.slogdet(Ky)[1] + y @ np.linalg.solve(Ky, y))
    Ks = kernel(X, X_new)
    mean = Ks.T @ np.linalg.solve(Ky, y)
    var = kernel.diag(X_new) - np.sum(Ks * np.linalg.solve(Ky, Ks), axis=0)
    return value, mean, var


@pytest.mark.parametrize("method, alpha", CASES)
def test_every_method_matches_dense_formulas(method, alpha, rng):
    X, y, Z = regression_problem(rng)
    X_new = rng.uniform(-4, 4, size=(9, 2))
    kernel = kernels.Matern52(1.3, [0.9, 1.4])
    lik = qpviz.likelihood("gaussian", variance=0.2)
    blocks = kmeans_blocks(X, 8) if method == "pitc" else None
    post = fit_sparse_regression(X, y, lik, kernel, method, Z, blocks=blocks, alpha=alpha)
    value, mean, cov = dense_sparse_gp(X, y, kernel, Z, 0.2, method, alpha, blocks, X_new)
    assert post.log_marginal_likelihood == pytest.approx(value, abs=1e-8)
    got_mean, got_var = post.predict_f(X_new)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got_var, np.diag(cov), rtol=0, atol=1e-8)
    full_mean, full_cov = post.predict_f(X_new, full_cov=True)
    np.testing.assert_allclose(full_cov, cov, rtol=0, atol=1e-8)
    np.testing.assert_allclose(full_mean, mean, rtol=0, atol=1e-8)
    # the Gaussian predictive density adds the noise to the latent variance
    y_new = np.sin(X_new[:, 0])
    expected = -0.5 * np.log(2 * np.pi * (np.diag(cov) + 0.2)) - 0.5 * (y_new - mean) ** 2 / (np.diag(cov) + 0.2)
    np.testing.assert_allclose(post.predictive_log_density(X_new, y_new), expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(post.predict_y(X_new)[1], np.diag(cov) + 0.2, rtol=0, atol=1e-8)


def well_conditioned_problem(rng, n=25):
    """Inputs about 1.4 length scales apart: K's condition number ~1e4, so that the identities
    below are not drowned by the rounding of the exact GP itself."""
    X = (np.linspace(-3, 3, n) + 0.05 * rng.normal(size=n))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    return X, y, kernels.RBF(1.3, 0.35), np.linspace(-4, 4, 11)[:, None]


@pytest.mark.parametrize("method, alpha", [("fitc", 1.0), ("vfe", 1.0), ("dtc", 1.0), ("ep", 1.0), ("ep", 0.5),
                                           ("ep", 0.1), ("ep", 1e-6), ("pitc", 1.0)])
def test_inducing_at_the_inputs_is_the_exact_gp(method, alpha, rng):
    """Z = X: Q = K, so every method is the exact GP. The identity is exact at zero jitter; with
    jitter eps, Q = K (K + eps I)^-1 K ~ K - eps I, which shifts DTC / VFE / Power EP's noise by
    ~eps: measured 2.5e-7 in the evidence with the package's 1e-8 (and 1.7e-7 for the dense EP
    fit, which adds the same jitter to K). FITC's diagonal correction restores diag K, so it
    stays exact (3e-13). Hence jitter=1e-12 for the 1e-8 identity, and a 1e-6 check at the
    default jitter."""
    X, y, kernel, X_new = well_conditioned_problem(rng)
    lik = qpviz.likelihood("gaussian", variance=0.3)
    value, mean, var = exact_gp(X, y, kernel, 0.3, X_new)
    blocks = kmeans_blocks(X, 5) if method == "pitc" else None
    post = fit_sparse_regression(X, y, lik, kernel, method, X, alpha=alpha, blocks=blocks, jitter=1e-12)
    assert post.log_marginal_likelihood == pytest.approx(value, abs=1e-8)
    got_mean, got_var = post.predict_f(X_new)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got_var, var, rtol=0, atol=1e-8)
    default = fit_sparse_regression(X, y, lik, kernel, method, X, alpha=alpha, blocks=blocks)
    assert default.diagnostics["jitter"] == qpviz.config.JITTER
    assert default.log_marginal_likelihood == pytest.approx(value, abs=1e-6)
    if method == "fitc":
        assert default.log_marginal_likelihood == pytest.approx(value, abs=1e-11)
    dense = qpviz.fit(X, y, lik, kernel, method="ep")  # the dense engine, for the record
    np.testing.assert_allclose(got_mean, dense.predict_f(X_new)[0], rtol=0, atol=1e-7)


def test_power_ep_limits_are_fitc_and_vfe(rng):
    """alpha = 1 is FITC; alpha -> 0 is VFE with an O(alpha) gap: log1p(alpha d / s2) / alpha =
    d / s2 - alpha d^2 / (2 s2^2) + ..., so the gap is ~alpha sum_n d_n / (2 s2) (plus the change
    of Lambda = s2 + alpha d), i.e. it grows with N d / s2. Here Z covers the inputs (d <~ 0.05):
    the gap at alpha = 1e-6 is 1.3e-6 and shrinks tenfold with alpha (with length scales
    [1.1, 0.7], d <~ 0.2, it is 6.8e-5: the 1e-5 of the issue needs N d / s2 <~ 10)."""
    X, y, _ = regression_problem(rng, n=60)
    Z = np.stack(np.meshgrid(np.linspace(-3, 3, 5), np.linspace(-3, 3, 5)), -1).reshape(-1, 2)
    X_new = rng.uniform(-4, 4, size=(15, 2))
    kernel = kernels.RBF(0.9, [1.5, 1.5])
    lik = qpviz.likelihood("gaussian", variance=0.15)
    fits = {name: fit_sparse_regression(X, y, lik, kernel, method, Z, alpha=alpha)
            for name, method, alpha in (("fitc", "fitc", 1.0), ("pep1", "ep", 1.0), ("vfe", "vfe", 1.0),
                                        ("pep0", "ep", 1e-6))}
    for a, b, tol in (("fitc", "pep1", 1e-8), ("vfe", "pep0", 1e-5)):
        assert fits[a].log_marginal_likelihood == pytest.approx(fits[b].log_marginal_likelihood, abs=tol)
        for got, want in zip(fits[a].predict_f(X_new), fits[b].predict_f(X_new)):
            np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    # in between, Power EP's evidence moves from VFE's bound to FITC's evidence
    values = [fit_sparse_regression(X, y, lik, kernel, "ep", Z, alpha=a).log_marginal_likelihood
              for a in (1e-6, 0.25, 0.5, 0.75, 1.0)]
    assert values[0] == pytest.approx(fits["vfe"].log_marginal_likelihood, abs=1e-5)
    assert values[-1] == pytest.approx(fits["fitc"].log_marginal_likelihood, abs=1e-8)
    gap = values[0] - fits["vfe"].log_marginal_likelihood
    smaller = fit_sparse_regression(X, y, lik, kernel, "ep", Z, alpha=1e-7).log_marginal_likelihood
    assert smaller - fits["vfe"].log_marginal_likelihood == pytest.approx(gap / 10, rel=1e-2)


def test_pitc_block_extremes(rng):
    X, y, Z = regression_problem(rng, n=30, m=5)
    X_new = rng.uniform(-3, 3, size=(6, 2))
    kernel = kernels.Matern32(1.1, 0.8)
    lik = qpviz.likelihood("gaussian", variance=0.25)
    one = fit_sparse_regression(X, y, lik, kernel, "pitc", Z, blocks=[np.arange(30)])
    value, mean, var = exact_gp(X, y, kernel, 0.25, X_new)
    assert one.log_marginal_likelihood == pytest.approx(value, abs=1e-10)
    singles = fit_sparse_regression(X, y, lik, kernel, "pitc", Z, blocks=[np.array([i]) for i in range(30)])
    fitc = fit_sparse_regression(X, y, lik, kernel, "fitc", Z)
    assert singles.log_marginal_likelihood == pytest.approx(fitc.log_marginal_likelihood, abs=1e-10)
    for got, want in zip(singles.predict_f(X_new), fitc.predict_f(X_new)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    # the default partition: K-means blocks of about M points, each index once
    default = fit_sparse_regression(X, y, lik, kernel, "pitc", Z)
    assert sorted(np.concatenate(default.blocks).tolist()) == list(range(30))
    assert len(default.blocks) == 6 and default.diagnostics["block_sizes"] == [b.size for b in default.blocks]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(3, 30), m=st.integers(1, 12), d=st.integers(1, 3), log_ls=st.floats(-1.5, 1.5),
       log_noise=st.floats(-4, 1), seed=st.integers(0, 2**16))
def test_vfe_bound_is_below_the_exact_evidence(n, m, d, log_ls, log_noise, seed):
    """Titsias' bound: log N(y|0, Q + s2 I) - tr(K - Q)/(2 s2) <= log N(y|0, K + s2 I), and FITC
    and Power EP sit above VFE (the trace term's log1p is >= ... <= d / s2)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    Z = rng.normal(size=(min(m, n), d))
    kernel = kernels.RBF(1.0, np.exp(log_ls))
    s2 = float(np.exp(log_noise))
    exact = exact_gp(X, y, kernel, s2, X[:1])[0]
    vfe = sparse_log_evidence(X, y, kernel, Z, s2, "vfe")
    assert vfe <= exact + 1e-9 * (1 + abs(exact))
    for alpha in (1e-3, 0.5):
        assert sparse_log_evidence(X, y, kernel, Z, s2, "ep", alpha=alpha) >= vfe - 1e-9 * (1 + abs(vfe))


# ---- analytic gradients against central finite differences --------------------------------------

def finite_difference(f, x, h=1e-5):
    x = np.asarray(x, float)
    out = np.empty(x.size)
    for j in range(x.size):
        up, down = x.ravel().copy(), x.ravel().copy()
        up[j] += h
        down[j] -= h
        out[j] = (f(up.reshape(x.shape)) - f(down.reshape(x.shape))) / (2 * h)
    return out.reshape(x.shape)


@pytest.mark.parametrize("kernel", [kernels.RBF(1.3, [0.9, 1.4]), kernels.Matern32(0.8, 1.2),
                                    kernels.Matern52(1.1, [0.6, 1.0])], ids=["rbf-ard", "matern32", "matern52-ard"])
@pytest.mark.parametrize("method, alpha", CASES)
def test_evidence_gradients_match_finite_differences(kernel, method, alpha, rng):
    X, y, Z = regression_problem(rng, n=30, m=6)
    s2 = 0.2
    blocks = kmeans_blocks(X, 6) if method == "pitc" else None

    def value(kern=kernel, noise=s2, inducing=Z):
        return sparse_log_evidence(X, y, kern, inducing, noise, method, alpha=alpha, blocks=blocks)

    _, grads = sparse_log_evidence(X, y, kernel, Z, s2, method, alpha=alpha, blocks=blocks, gradients=True)
    fd_theta = finite_difference(lambda t: value(kern=kernel.with_log_params(t)), kernel.log_params())
    np.testing.assert_allclose(grads["kernel"], fd_theta, rtol=1e-6, atol=1e-7)
    fd_noise = finite_difference(lambda t: value(noise=float(np.exp(t[0]))), [np.log(s2)])
    np.testing.assert_allclose(grads["log_noise"], fd_noise[0], rtol=1e-6, atol=1e-7)
    fd_Z = finite_difference(lambda z: value(inducing=z), Z)
    np.testing.assert_allclose(grads["Z"], fd_Z, rtol=1e-6, atol=1e-7)


def test_evidence_and_gradients_take_order_n_m_memory(rng):
    """N = 20000, M = 20: an N x N array alone would be 3.2 GB; the whole evaluation stays < 40 MB."""
    n, m = 20_000, 20
    X = rng.uniform(-3, 3, size=(n, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    Z = X[rng.choice(n, m, replace=False)]
    kernel = kernels.RBF(1.0, [1.0, 1.5, 2.0])
    for method in ("fitc", "vfe", "ep"):
        tracemalloc.start()
        try:
            sparse_log_evidence(X, y, kernel, Z, 0.1, method, alpha=0.5 if method == "ep" else 1.0, gradients=True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 40e6, f"{method}: peak {peak / 1e6:.1f} MB"


# ---- learning ------------------------------------------------------------------------------------

def noisy_sine(rng, n=150, noise=0.1):
    X = rng.uniform(-3, 3, size=(n, 1))
    return X, np.sin(2 * X[:, 0]) + np.sqrt(noise) * rng.normal(size=n)


@pytest.mark.parametrize("method", ["fitc", "vfe", "dtc", "pitc", "ep"])
def test_optimise_learns_the_noise_and_raises_the_evidence(method, rng):
    X, y = noisy_sine(rng)
    kernel = kernels.RBF(1.0, 1.5)
    lik = qpviz.likelihood("gaussian", variance=1.0)
    start = fit_sparse_regression(X, y, lik, kernel, method, 12, alpha=0.5 if method == "ep" else 1.0)
    post = fit_sparse_regression(X, y, lik, kernel, method, 12, alpha=0.5 if method == "ep" else 1.0, optimise=True)
    report = post.diagnostics["optimisation"]
    assert report["success"] and report["failed_evaluations"] == 0
    assert post.log_marginal_likelihood > start.log_marginal_likelihood + 10
    assert report["log_evidence"] == pytest.approx(post.log_marginal_likelihood, abs=1e-8)
    assert 0.05 < post.hyperparameters["likelihood.variance"] < 0.2  # true noise variance 0.1
    assert post.hyperparameters["lengthscale"] == pytest.approx(report["values"]["lengthscale"])
    np.testing.assert_array_equal(post.inducing, start.inducing)  # Z stays put without optimise_inducing


def test_optimise_inducing_moves_z_and_beats_fixed_z(rng):
    X, y = noisy_sine(rng)
    Z0 = np.linspace(-3, -1, 6)[:, None]  # piled up at one end: a poor start
    lik = qpviz.likelihood("gaussian", variance=0.1)
    fixed = fit_sparse_regression(X, y, lik, kernels.RBF(1.0, 1.0), "vfe", Z0, optimise=True)
    # from the fixed-Z optimum (joint fitting from the piled-up start can stop in a worse local
    # optimum: an over-smooth length scale 5 that explains the data as noise)
    moved = fit_sparse_regression(X, y, fixed.likelihood, fixed.kernel, "vfe", Z0, optimise=True,
                                  optimise_inducing=True)
    assert moved.log_marginal_likelihood > fixed.log_marginal_likelihood + 5
    assert moved.inducing.max() > 0.5  # some pseudo-inputs moved to the data on the right
    only_z = fit_sparse_regression(X, y, lik, kernels.RBF(1.0, 1.0), "fitc", Z0, optimise_inducing=True)
    assert only_z.hyperparameters["lengthscale"] == 1.0 and only_z.hyperparameters["likelihood.variance"] == 0.1
    assert only_z.diagnostics["optimisation"]["param_names"] == ()


def test_optimise_likelihood_false_keeps_the_noise_and_bounds_warn(rng):
    X, y = noisy_sine(rng, n=80)
    lik = qpviz.likelihood("gaussian", variance=0.3)
    post = fit_sparse_regression(X, y, lik, kernels.RBF(), "fitc", 8, optimise=True, optimise_likelihood=False)
    assert post.hyperparameters["likelihood.variance"] == 0.3
    assert "likelihood.variance" not in post.diagnostics["optimisation"]["values"]
    with pytest.warns(OptimiserBoundWarning, match="lengthscale"):
        bounded = fit_sparse_regression(X, y, lik, kernels.RBF(), "fitc", 8, optimise=True,
                                        bounds={"lengthscale": (2.0, 3.0)})
    assert bounded.diagnostics["optimisation"]["at_bound"] == ["lengthscale"]
    assert bounded.hyperparameters["lengthscale"] == pytest.approx(2.0)


# ---- input errors ----------------------------------------------------------------------------

def test_bad_inputs_raise_clear_errors(rng):
    X, y, Z = regression_problem(rng, n=20, m=4)
    lik = qpviz.likelihood("gaussian")
    k = kernels.RBF()
    with pytest.raises(ValueError, match="method='ep' or 'qp', inducing=Z"):
        fit_sparse_regression(X, np.sign(y), "probit", k, "fitc", Z)
    with pytest.raises(ValueError, match="M <= 20"):
        fit_sparse_regression(X, y, lik, k, "fitc", 21)
    with pytest.raises(ValueError, match="M <= N"):
        fit_sparse_regression(X, y, lik, k, "fitc", rng.normal(size=(21, 2)))
    with pytest.raises(ValueError, match="2 column"):
        fit_sparse_regression(X, y, lik, k, "vfe", rng.normal(size=(4, 3)))
    with pytest.raises(ValueError, match="finite"):
        fit_sparse_regression(X, np.where(np.arange(20) == 3, np.nan, y), lik, k, "vfe", Z)
    with pytest.raises(ValueError, match="NaN"):
        fit_sparse_regression(np.where(X > 2.5, np.nan, X), y, lik, k, "vfe", Z)
    with pytest.raises(ValueError, match="one entry per row"):
        fit_sparse_regression(X, y[:-1], lik, k, "dtc", Z)
    with pytest.raises(ValueError, match="must be one of"):
        fit_sparse_regression(X, y, lik, k, "sor", Z)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        fit_sparse_regression(X, y, lik, k, "ep", Z, alpha=0.0)
    with pytest.raises(ValueError, match="method='ep' with alpha=0.5"):
        fit_sparse_regression(X, y, lik, k, "vfe", Z, alpha=0.5)
    with pytest.raises(ValueError, match="exactly once: 1 missing .* 1 repeated"):
        fit_sparse_regression(X, y, lik, k, "pitc", Z, blocks=[np.arange(10), np.r_[np.arange(11, 20), 0]])
    with pytest.raises(ValueError, match="indices must lie in 0..19"):
        fit_sparse_regression(X, y, lik, k, "pitc", Z, blocks=[np.arange(21)])
    with pytest.raises(ValueError, match="integer index arrays"):
        fit_sparse_regression(X, y, lik, k, "pitc", Z, blocks=[np.linspace(0, 19, 20)])
    with pytest.raises(ValueError, match="takes none"):
        fit_sparse_regression(X, y, lik, k, "fitc", Z, blocks=[np.arange(20)])
    with pytest.raises(NotImplementedError, match="RBF, Matern32, Matern52"):
        fit_sparse_regression(X, y, lik, kernels.Periodic(), "fitc", Z, optimise=True)
    with pytest.raises(TypeError, match="optimise=True"):
        fit_sparse_regression(X, y, lik, k, "fitc", Z, bounds=(0.1, 10.0))


def test_posterior_surface(rng):
    X, y, Z = regression_problem(rng, n=30, m=5)
    post = fit_sparse_regression(X, y, "gaussian", kernels.RBF(), "ep", Z, alpha=0.4)
    assert post.method == "ep" and post.alpha == 0.4 and post.converged
    np.testing.assert_array_equal(post.inducing, Z)
    assert post.blocks is None
    assert set(post.hyperparameters) == {"variance", "lengthscale", "likelihood.variance"}
    assert post.diagnostics["jitter"] == qpviz.config.JITTER
    mean, var = post.predict_f(X)
    np.testing.assert_allclose(post.mean, mean)
    np.testing.assert_allclose(post.var, var)
    assert np.all(var > 0)
    assert "method='ep'" in repr(post)
    with pytest.raises(ValueError, match="predict_proba needs a binary likelihood"):
        post.predict_proba(X)


def test_posterior_pickles(rng):
    import pickle

    X, y, Z = regression_problem(rng, n=30, m=5)
    post = fit_sparse_regression(X, y, "gaussian", kernels.Matern32(), "pitc", Z)
    again = pickle.loads(pickle.dumps(post))
    X_new = rng.normal(size=(4, 2))
    for got, want in zip(again.predict_f(X_new), post.predict_f(X_new)):
        np.testing.assert_array_equal(got, want)
    assert again.log_marginal_likelihood == post.log_marginal_likelihood
