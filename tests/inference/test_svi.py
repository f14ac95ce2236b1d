"""SVI (qpviz.inference.svi; issue 13): analytic gradients, batch and stochastic training, the
collapsed bound (VFE) as its optimum for a Gaussian likelihood, history and stop."""
import threading

import numpy as np
import pytest

import qpviz
from qpviz.inference import svi
from qpviz.inference.fit import METHODS, OPTIONS
from qpviz.inference.inducing import cholesky_kuu, kmeans_inducing
from qpviz.inference.metrics import evaluate
from qpviz.kernels import RBF
from qpviz.scalable_data import synthetic_classification


def _classification(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.sin(2.0 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _regression(n=120, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    return X, np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=n)


def _random_parameters(kernel, Z, whiten, rng):
    M = Z.shape[0]
    L = np.tril(0.3 * rng.normal(size=(M, M)))
    np.fill_diagonal(L, np.exp(0.3 * rng.normal(size=M)))
    if not whiten:  # S of the size of K_uu, as the unwhitened q(u) has
        L = np.linalg.cholesky(kernel(Z) + 1e-3 * np.eye(M)) @ L
    return svi.SVIParameters(rng.normal(size=M), L, kernel, Z)


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("lik", ["probit", "gaussian"])
def test_analytic_gradients_match_finite_differences(whiten, lik, rng):
    X, y = _classification(40)
    if lik == "gaussian":
        y = y + 0.2 * rng.normal(size=y.size)
    likelihood = qpviz.likelihood(lik)
    kernel = RBF(variance=1.3, lengthscale=[0.8, 1.2])
    Z = X[:5] + 0.1
    packing = svi._Packing(kernel, Z, learn_theta=True, learn_Z=True)
    x = packing.pack(_random_parameters(kernel, Z, whiten, rng))

    def bound(point, gradients=False):  # a minibatch-like scale and three shards: all paths
        return svi.svi_bound(X, y, packing.unpack(point), likelihood, whiten, scale=1.7, shard_size=15,
                             gradients=gradients)

    value, grads = bound(x, gradients=True)
    assert value == pytest.approx(bound(x)[0], abs=0)
    analytic = packing.pack_gradient(packing.unpack(x), grads.d_m, grads.d_L, grads.d_theta, grads.d_Z)
    h = 1e-6
    numeric = np.array([(bound(x + h * e)[0] - bound(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-6 * np.max(np.abs(numeric)))


def test_a_minibatch_estimate_is_the_bound_on_average_over_a_partition():
    X, y = _classification(60)
    kernel = RBF(variance=1.0, lengthscale=1.0)
    params = _random_parameters(kernel, X[:6], True, np.random.default_rng(3))
    lik = qpviz.likelihood("probit")
    full, _ = svi.svi_bound(X, y, params, lik, gradients=False)
    parts = [svi.svi_bound(X[rows], y[rows], params, lik, scale=60 / 20, gradients=False)[0]
             for rows in np.split(np.random.default_rng(4).permutation(60), 3)]
    assert np.mean(parts) == pytest.approx(full, rel=1e-12)
    assert np.std(parts) > 1e-3  # each one alone is only an estimate


def test_batch_bound_increases_at_every_iteration_and_is_the_reported_evidence():
    X, y = _classification(80)
    post = qpviz.fit(X, y, "probit", RBF(variance=1.0, lengthscale=2.0), method="svi", inducing=8, minibatch=80,
                     optimise=True, max_opt_iter=60)
    bounds = np.array([entry["objective"] for entry in post.history])
    assert len(bounds) >= 30
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert bounds[-1] > bounds[0] + 5.0
    assert post.diagnostics["mode"] == "batch"
    final = svi.SVIParameters(post.q_mean, post.q_sqrt, post.kernel, post.inducing)
    assert svi.svi_bound(X, y, final, post.likelihood, gradients=False)[0] == pytest.approx(
        post.log_marginal_likelihood, rel=1e-12)
    assert post.hyperparameters["lengthscale"] != 2.0
    assert not np.allclose(post.diagnostics["inducing"], kmeans_inducing(X, 8))


@pytest.mark.parametrize("whiten", [True, False])
def test_gaussian_likelihood_optimum_is_the_collapsed_vfe_bound(whiten):
    X, y = _regression()
    Z = np.linspace(-3, 3, 8)[:, None]
    kernel = RBF(variance=1.0, lengthscale=0.7)
    lik = qpviz.likelihood("gaussian", variance=0.1)
    vfe = qpviz.fit(X, y, lik, kernel, method="vfe", inducing=Z)
    post = qpviz.fit(X, y, lik, kernel, method="svi", inducing=Z, minibatch=10_000, optimise=False, whiten=whiten)
    assert post.converged
    assert post.log_marginal_likelihood == pytest.approx(vfe.log_marginal_likelihood, abs=1e-5)
    X_new = np.linspace(-4, 4, 9)[:, None]
    for ours, theirs in zip(post.predict_f(X_new), vfe.predict_f(X_new)):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_array_equal(post.inducing, Z)  # optimise=False: kernel and Z stay
    assert post.hyperparameters == {"variance": 1.0, "lengthscale": 0.7, "likelihood.variance": 0.1}


def test_whitened_and_unwhitened_reach_the_same_optimum():
    X, y = _classification(70, seed=2)
    Z = X[:7]
    kernel = RBF(variance=1.5, lengthscale=1.0)
    fits = [qpviz.fit(X, y, "probit", kernel, method="svi", inducing=Z, minibatch=100, optimise=False, whiten=w)
            for w in (True, False)]
    assert fits[0].log_marginal_likelihood == pytest.approx(fits[1].log_marginal_likelihood, abs=1e-6)
    X_new = np.random.default_rng(5).normal(size=(10, 2))
    np.testing.assert_allclose(fits[0].predict_proba(X_new), fits[1].predict_proba(X_new), atol=1e-5)
    assert fits[0].whiten and not fits[1].whiten


def test_stochastic_training_gets_close_to_batch_and_records_its_history():
    X, y = synthetic_classification(3000, dim=2, seed=0)
    train, test = slice(0, 2000), slice(2000, None)
    kernel = RBF(variance=1.0, lengthscale=1.0)
    common = dict(method="svi", inducing=20, optimise=True, seed=0, validation=(X[test], y[test]))
    batch = qpviz.fit(X[train], y[train], "probit", kernel, minibatch=2000, max_opt_iter=150, **common)
    entries = []
    stochastic = qpviz.fit(X[train], y[train], "probit", kernel, minibatch=100, epochs=30, callback=entries.append,
                           **common)
    batch_error = evaluate(batch, X[test], y[test])["test_error"]
    scores = evaluate(stochastic, X[test], y[test])
    assert batch_error < 0.12  # a non-linear problem (the linear baseline's error is about 0.4)
    assert abs(scores["test_error"] - batch_error) < 0.015
    history = stochastic.history
    assert len(history) == 600  # 20 steps per epoch, every one recorded
    assert [{k: v for k, v in e.items() if k != "inducing"} for e in entries] == history
    assert entries[-1]["inducing"].shape == (20, 2) and "inducing" not in history[-1]
    np.testing.assert_array_equal(entries[-1]["inducing"], stochastic.inducing)
    assert not np.allclose(entries[0]["inducing"], entries[-1]["inducing"])  # Z moves
    assert history[-1]["test_error"] == scores["test_error"] and history[-1]["ntll"] == scores["ntll"]
    assert [h["epoch"] for h in history[::20]] == list(range(1, 31))
    assert np.all(np.diff([h["wall_time"] for h in history]) > 0)
    assert history[0]["test_error"] > history[-1]["test_error"] + 0.1
    assert stochastic.converged and not stochastic.stopped and stochastic.diagnostics["mode"] == "stochastic"
    final = svi.SVIParameters(stochastic.q_mean, stochastic.q_sqrt, stochastic.kernel, stochastic.inducing)
    assert stochastic.log_marginal_likelihood == svi.svi_bound(X[train], y[train], final, stochastic.likelihood,
                                                               gradients=False)[0]
    assert stochastic.diagnostics["last_estimate"] == history[-1]["objective"]
    assert abs(stochastic.log_marginal_likelihood - batch.log_marginal_likelihood) < 0.05 * abs(
        batch.log_marginal_likelihood)


@pytest.mark.parametrize("minibatch", [20, 200])
def test_a_stop_request_ends_training_and_keeps_a_usable_posterior(minibatch, capsys):
    X, y = _classification(100)
    stop = threading.Event()

    def after(entry):
        if entry["step"] == 5:
            stop.set()

    post = qpviz.fit(X, y, "probit", RBF(), method="svi", inducing=6, minibatch=minibatch, epochs=50,
                     record_every=1, stop=stop, callback=after, progress=True)
    assert "svi" in capsys.readouterr().err  # the command-line progress bar
    assert post.stopped and not post.converged
    assert [h["step"] for h in post.history] == [1, 2, 3, 4, 5] and post.n_sweeps == 5
    proba = post.predict_proba(X)
    assert np.all(np.isfinite(proba)) and np.all((proba > 0) & (proba < 1))
    assert np.isfinite(post.log_marginal_likelihood)


def test_bad_options_say_what_to_change():
    X, y = _classification(30)
    with pytest.raises(TypeError, match="client must be"):
        qpviz.fit(X, y, "probit", RBF(), method="svi", inducing=4, client=3)
    with pytest.raises(TypeError, match="does not take"):
        qpviz.fit(X, y, "probit", RBF(), method="svi", inducing=4, damping=0.5)
    with pytest.raises(ValueError, match="optimise_likelihood"):
        qpviz.fit(X, y, "gaussian", RBF(), method="svi", inducing=4, optimise_likelihood=True)
    with pytest.raises(ValueError, match="minibatch"):
        qpviz.fit(X, y, "probit", RBF(), method="svi", inducing=4, minibatch=0)
    assert "svi" in METHODS and "minibatch" in OPTIONS["svi"]


def test_a_fixed_kernel_needs_no_kernel_gradients():
    X, y = _classification(40)
    kernel = qpviz.kernels.Periodic(variance=1.0, lengthscale=1.0, period=3.0)  # no vector-Jacobian products
    post = qpviz.fit(X[:, :1], y, "probit", kernel, method="svi", inducing=5, minibatch=40)
    assert post.converged and post.kernel == kernel
    with pytest.raises(ValueError, match="needs kernel gradients.*vector-Jacobian"):  # said before training
        qpviz.fit(X[:, :1], y, "probit", kernel, method="svi", inducing=5, minibatch=40, optimise=True)


@pytest.mark.parametrize("whiten", [True, False])
def test_shards_add_up_to_the_whole_and_survive_pickling(whiten):
    """What mapping the data term over (Dask) shards needs: a partition's shard terms sum to the
    whole data term, and the broadcast arguments travel by pickle unchanged."""
    import pickle

    X, y = _classification(50)
    kernel = RBF(variance=1.2, lengthscale=[0.9, 1.1])
    params = _random_parameters(kernel, X[:6] + 0.05, whiten, np.random.default_rng(6))
    lik = qpviz.likelihood("probit")
    Luu, _ = cholesky_kuu(kernel(params.Z))
    whole = svi.shard_terms(X, y, params, Luu, lik, whiten)
    shipped = pickle.loads(pickle.dumps((params, Luu, lik)))
    parts = [svi.shard_terms(X[rows], y[rows], *shipped[:2], shipped[2], whiten) for rows in np.array_split(
        np.arange(50), 4)]
    total = parts[0] + parts[1] + parts[2] + parts[3]
    assert total.value == pytest.approx(whole.value, rel=1e-12)
    for name in ("d_m", "d_L", "d_theta", "d_Z"):
        np.testing.assert_allclose(getattr(total, name), getattr(whole, name), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("minibatch", [60, 1000], ids=["stochastic", "batch"])
def test_dask_two_workers_equals_in_process_with_the_same_seed(minibatch):
    """client=...: the data term summed by one shard per Dask worker (actors holding their points)
    gives the in-process fit, step for step."""
    distributed = pytest.importorskip("dask.distributed")
    X, y = _classification(300)
    options = dict(inducing=8, minibatch=minibatch, epochs=2, optimise=True, seed=4, max_opt_iter=15)
    local = qpviz.fit(X, y, "probit", RBF(), method="svi", **options)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        remote = qpviz.fit(X, y, "probit", RBF(), method="svi", client=client, **options)
    assert len(remote.history) == len(local.history) > 3
    np.testing.assert_allclose([h["objective"] for h in remote.history], [h["objective"] for h in local.history],
                               rtol=1e-8, atol=1e-8)
    assert remote.log_marginal_likelihood == pytest.approx(local.log_marginal_likelihood, abs=1e-8)
    np.testing.assert_allclose(remote.inducing, local.inducing, atol=1e-8)
    np.testing.assert_allclose(remote.q_mean, local.q_mean, atol=1e-8)
    assert "dashboard_link" in remote.diagnostics


def test_fit_svi_takes_a_likelihood_name_and_refuses_more_inducing_points_than_data():
    from qpviz.inference.svi import fit_svi

    X, y = _classification(20)
    post = fit_svi(X, y, "probit", RBF(), inducing=4, minibatch=20, max_opt_iter=5)
    assert post.likelihood.name == "probit"
    with pytest.raises(ValueError, match="30 inducing points for 20 data points"):
        fit_svi(X, y, "probit", RBF(), inducing=np.zeros((30, 2)), minibatch=20)


def test_a_trial_point_that_overflows_is_refused_and_reported_not_a_crash(monkeypatch):
    # Sonar's SVI fits (60 length scales) failed with "array must not contain infs or NaNs" when
    # L-BFGS-B's line search tried a point where q(u) overflowed: such a point is now refused
    X, y = _classification(80)
    real = svi.svi_bound
    calls = {"n": 0}

    def overflowing_on_the_third(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ValueError("array must not contain infs or NaNs")
        if calls["n"] == 4:
            bound, grads = real(*args, **kwargs)
            return np.nan, grads
        return real(*args, **kwargs)

    monkeypatch.setattr(svi, "svi_bound", overflowing_on_the_third)
    refused = r"SVI: 2 of L-BFGS-B.s \d+ trial points overflowed .* went on from its best"
    with pytest.warns(RuntimeWarning, match=refused):
        post = qpviz.fit(X, y, "probit", RBF(variance=1.0, lengthscale=2.0), method="svi", inducing=8, minibatch=80,
                         optimise=True, max_opt_iter=30)
    mean, var = post.predict_f(X)
    assert np.all(np.isfinite(mean)) and np.all(var > 0) and np.isfinite(post.log_marginal_likelihood)
    assert calls["n"] > 10 and len(post.history) >= 10  # it went on after the refused points


def test_a_starting_point_that_overflows_is_an_error(monkeypatch):
    X, y = _classification(40)
    monkeypatch.setattr(svi, "svi_bound", lambda *a, **k: (_ for _ in ()).throw(ValueError("array must not contain "
                                                                                           "infs or NaNs")))
    with pytest.raises(ValueError, match="infs or NaNs"):
        qpviz.fit(X, y, "probit", RBF(), method="svi", inducing=4, minibatch=40, optimise=True, max_opt_iter=5)
