"""SEP's per-step pieces (qpviz.inference.sep_shard and sep._rebuild) against dense computations:
q's covariance root and the triangular factors the shards use, the cavities, and the gradient
terms of sites not visited yet (the step's fast path) against the general path."""
import dataclasses
import pickle

import numpy as np
import pytest
from scipy import linalg

import qpviz
from qpviz.inference import sep, sep_shard
from qpviz.inference.sites import SiteRule


def _problem(n=60, m=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (n, 2))
    y = np.where(np.sin(2.0 * X[:, 0]) + X[:, 1] > 0, 1.0, -1.0)
    kernel = qpviz.kernels.RBF(1.2, [0.9, 1.1])
    Z = X[:m] + 0.05
    # a site sum Lambda = sum tau_j a_j a_j^T, b = sum nu_j a_j of made-up sites
    A = linalg.cho_solve(linalg.cho_factor(kernel(Z) + 1e-6 * np.eye(m), lower=True), kernel(Z, X))
    tau, nu = rng.uniform(0.1, 1.5, n), rng.standard_normal(n)
    return X, y, kernel, Z, (A * tau) @ A.T, A @ nu, rng


def test_rebuild_factors_match_the_dense_posterior():
    X, y, kernel, Z, prec, lin, _ = _problem()
    bc, norm_diff, jitter = sep._rebuild(kernel, Z, prec, lin, None)
    K = kernel(Z) + jitter * np.eye(Z.shape[0])
    K_inv = np.linalg.inv(K)
    cov = np.linalg.inv(K_inv + prec)  # q(u): precision K^-1 + Lambda, precision-mean b
    np.testing.assert_allclose(bc.cov_u, cov, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bc.cov_root.T @ bc.cov_root, cov, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bc.mean_u, cov @ lin, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bc.kinv_cov, K_inv @ cov, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(bc.kinv_mean, K_inv @ cov @ lin, rtol=1e-8, atol=1e-10)
    # the shards' triangular factors: L_P^-1 (lower) and K^-1 R^T (upper)
    assert np.allclose(np.triu(bc.root_solve, 1), 0.0) and np.allclose(np.tril(bc.kinv_root, -1), 0.0)
    np.testing.assert_allclose(bc.kinv_root, K_inv @ bc.cov_root.T, rtol=1e-8, atol=1e-10)
    # Phi(q) - Phi(p) = -1/2 log|I + K Lambda| + 1/2 b^T mu
    expected = -0.5 * np.linalg.slogdet(np.eye(Z.shape[0]) + K @ prec)[1] + 0.5 * lin @ cov @ lin
    assert norm_diff == pytest.approx(expected, rel=1e-10)


def test_columns_and_cavities_match_the_dense_formulas():
    X, y, kernel, Z, prec, lin, rng = _problem(seed=1)
    bc, _, jitter = sep._rebuild(kernel, Z, prec, lin, None)
    K = kernel(Z) + jitter * np.eye(Z.shape[0])
    A, d, R_new, Kux = sep_shard._columns(bc, X)
    np.testing.assert_array_equal(Kux, kernel(Z, X))
    A_dense = np.linalg.solve(K, kernel(Z, X))
    np.testing.assert_allclose(A, A_dense, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(R_new.T @ R_new, A_dense.T @ bc.cov_u @ A_dense, rtol=1e-8, atol=1e-10)
    # a quarter of the sites carry factors on other (old) directions; the rest are not set yet
    n = X.shape[0]
    tau = np.where(np.arange(n) % 4 == 0, rng.uniform(0.05, 0.3, n), 0.0)
    nu = np.where(tau > 0, rng.standard_normal(n), 0.0)
    A_old = np.where(tau > 0, A_dense * 0.9, 0.0)
    cav = sep_shard._cavity(A, R_new, A_old, tau, nu, bc, 1.0, d)
    Q = np.linalg.inv(bc.cov_u)  # the cavity removes tau a_old a_old^T and nu a_old from q's natural parameters
    for j in range(n):
        a, o = A_dense[:, j], A_old[:, j]
        cov_c = np.linalg.inv(Q - tau[j] * np.outer(o, o))
        mean_c = cov_c @ (Q @ bc.mean_u - nu[j] * o)
        assert cav["proper"][j]
        assert cav["var"][j] == pytest.approx(a @ cov_c @ a, rel=1e-8, abs=1e-12)
        assert cav["mean"][j] == pytest.approx(a @ mean_c, rel=1e-8, abs=1e-10)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_gradient_terms_of_sites_not_set_yet_match_the_general_path(alpha):
    # a minibatch with some sites set (live) and some not: the general path (old-direction products
    # on the live columns) over all of it equals the sum of the all-live and the none-live calls
    X, y, kernel, Z, prec, lin, rng = _problem(seed=2)
    bc, _, _ = sep._rebuild(kernel, Z, prec, lin, None)
    n = X.shape[0]
    live = np.arange(n) % 3 == 0
    tau = np.where(live, rng.uniform(0.05, 0.3, n), 0.0)
    nu = np.where(live, rng.standard_normal(n), 0.0)
    A_old = np.where(live, rng.normal(0.0, 0.3, (Z.shape[0], n)), 0.0)
    likelihood = qpviz.likelihood("probit").tempered(alpha)
    whole = sep_shard.site_gradient(X, y, tau, nu, A_old, likelihood, bc)
    parts = [sep_shard.site_gradient(X[s], y[s], tau[s], nu[s], A_old[:, s], likelihood, bc) for s in (live, ~live)]
    for j in range(2):
        np.testing.assert_allclose(whole[j], parts[0][j] + parts[1][j], rtol=1e-9, atol=1e-10)

    def sym(G):
        return 0.5 * (G + G.T)

    np.testing.assert_allclose(sym(whole[2]), sym(parts[0][2] + parts[1][2]), rtol=1e-9, atol=1e-10)
    assert np.max(np.abs(parts[1][2])) > 1e-3  # the sites not set yet do contribute
    # the refinement too: per-point sites and the rank-one sums
    rule = SiteRule.build("ep", likelihood, 0.99)
    out = sep_shard.refine_sites(X, y, tau, nu, A_old, rule, bc)
    split = [sep_shard.refine_sites(X[s], y[s], tau[s], nu[s], A_old[:, s], rule, bc) for s in (live, ~live)]
    for s, part in zip((live, ~live), split):
        np.testing.assert_allclose(out["tau"][s], part["tau"], rtol=1e-12)
        np.testing.assert_allclose(out["nu"][s], part["nu"], rtol=1e-12)
    for key in ("new_prec", "old_prec", "new_lin", "old_lin"):
        np.testing.assert_allclose(out[key], split[0][key] + split[1][key], rtol=1e-9, atol=1e-12)


def test_weighted_gram_with_and_without_negative_weights():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 12))
    for w in (rng.uniform(0.0, 2.0, 12), rng.standard_normal(12)):
        np.testing.assert_allclose(sep_shard._weighted_gram(A, w), A @ np.diag(w) @ A.T, rtol=1e-12, atol=1e-12)


def test_the_master_keeps_k_uu_for_its_gradient_and_sends_none_to_the_shards():
    """_rebuild keeps K_uu (no jitter) when it computed it; pickling (to Dask shards) drops it; the
    gradient with it (the kernel's VJP reads it) equals the one that recomputes it."""
    X, y, kernel, Z, prec, lin, rng = _problem(seed=2)
    bc, _, jitter = sep._rebuild(kernel, Z, prec, lin, None)
    np.testing.assert_array_equal(bc.kuu, kernel(Z))
    sent = pickle.loads(pickle.dumps(bc))
    assert sent.kuu is None
    np.testing.assert_array_equal(sent.kinv_root, bc.kinv_root)
    assert sep._rebuild(kernel, Z, prec, lin, None, (bc.chol_kuu, jitter))[0].kuu is None
    M, D = Z.shape
    data = (rng.standard_normal(3), rng.standard_normal((M, D)), rng.standard_normal((M, M)))
    with_kuu, without = sep._chain(bc, data, 3.0), sep._chain(dataclasses.replace(bc, kuu=None), data, 3.0)
    for got, want in zip(with_kuu, without):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
