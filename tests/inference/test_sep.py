"""Scalable EP (qpviz.inference.sep, paper 003): batch fixed point = GFITC's EP, analytic gradient,
Dask = in-process, accuracy on a 2,000-point problem, history / stop / option errors."""
import threading
import warnings

import numpy as np
import pytest

import qpviz
from qpviz.inference import metrics, sep
from qpviz.inference.inducing import kmeans_inducing
from qpviz.inference.sites import SiteRule


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, 2))
    f = np.sin(1.5 * X[:, 0]) + 0.6 * X[:, 1]
    return X, np.where(f + 0.4 * rng.standard_normal(n) > 0, 1.0, -1.0)


@pytest.mark.parametrize("projection", ["ep", "qp"])
def test_batch_sep_without_learning_is_gfitc_ep(projection):
    X, y = _data(200)
    Z = X[:12].copy()
    kernel = qpviz.kernels.RBF(1.5, [1.0, 0.8])
    ref = qpviz.fit(X, y, "probit", kernel, method=projection, inducing=Z, tol=1e-11, max_sweeps=2000)
    post = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=Z, minibatch=len(y), epochs=2000,
                     optimise=False, tol=1e-11, projection=projection)
    assert post.converged and post.diagnostics["damping"] == sep.BATCH_DAMPING
    assert post.log_marginal_likelihood == pytest.approx(ref.log_marginal_likelihood, abs=1e-6)
    X_new, _ = _data(40, seed=5)
    for a, b in zip(post.predict_f(X_new), ref.predict_f(X_new)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(post.predict_proba(X_new), ref.predict_proba(X_new), atol=1e-6)
    np.testing.assert_allclose(post.site_precision, ref.site_precision, atol=1e-6)
    # the training marginals are f's (h's plus FITC's d_n), as GFITC's predict_f(X)
    np.testing.assert_allclose(post.var, ref.predict_f(X)[1], atol=1e-6)


def test_minibatch_sep_without_learning_reaches_the_same_fixed_point():
    # minibatches of 50 (damping 0.99, running updates of Lambda and b, re-summed each epoch)
    X, y = _data(400)
    Z = X[:12].copy()
    kernel = qpviz.kernels.RBF(1.5, [1.0, 0.8])
    ref = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, tol=1e-11, max_sweeps=2000)
    post = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=Z, minibatch=50, epochs=20, optimise=False)
    assert post.diagnostics["stochastic"] and post.diagnostics["damping"] == sep.STOCHASTIC_DAMPING
    assert post.log_marginal_likelihood == pytest.approx(ref.log_marginal_likelihood, abs=1e-8)
    np.testing.assert_allclose(post.predict_f(X)[0], ref.predict_f(X)[0], atol=1e-8)


def _converged_shard(X, y, kernel, Z, alpha=1.0):
    M = Z.shape[0]
    rule = SiteRule.build("ep", qpviz.likelihood("probit").tempered(alpha), 0.5)
    executor = sep.LocalExecutor([sep.SEPShard(X, y, M, rule)])
    idx = np.arange(len(y))
    prec, lin = np.zeros((M, M)), np.zeros(M)
    bc, _, _ = sep._rebuild(kernel, Z, prec, lin, None)
    for _ in range(400):
        out = executor.call("refine", [(idx, bc)])[0]
        prec, lin = out["new_prec"], out["new_lin"]
        bc, _, _ = sep._rebuild(kernel, Z, prec, lin, None)
        if out["change"] < 1e-13:
            break
    assert out["change"] < 1e-12
    return executor, idx, prec, lin, bc


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_gradient_matches_finite_differences_of_log_zq_at_fixed_sites(alpha):
    X, y = _data(150, seed=2)
    Z = X[:8].copy()
    kernel = qpviz.kernels.RBF(1.3, [1.0, 0.7])
    executor, idx, prec, lin, bc = _converged_shard(X, y, kernel, Z, alpha)
    g_theta, g_Z = sep.sep_gradient(executor, [idx], bc, 1.0)
    analytic = np.concatenate([g_theta, g_Z.ravel()])
    theta = np.concatenate([kernel.log_params(), Z.ravel()])

    def log_zq(th):
        return sep.log_evidence(executor, 1, kernel.with_log_params(th[:3]), th[3:].reshape(Z.shape), prec, lin)

    h = 1e-5
    numeric = np.array([(log_zq(theta + h * e) - log_zq(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    assert np.max(np.abs(numeric)) > 1.0  # a real slope to compare
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-6)
    # the minibatch estimate (eq. 6) with N/B scaling is unbiased: the halves' mean is the whole
    halves = [sep.sep_gradient(executor, [part], bc, 2.0) for part in (idx[::2], idx[1::2])]
    prior_part = sep.sep_gradient(executor, [idx[:0]], bc, 1.0)
    for j in range(2):
        mean = 0.5 * (halves[0][j] + halves[1][j])
        np.testing.assert_allclose(mean, (g_theta, g_Z)[j], rtol=1e-10, atol=1e-10)
        assert not np.allclose(halves[0][j], prior_part[j])


def test_dask_two_workers_equals_in_process_with_the_same_seed():
    distributed = pytest.importorskip("dask.distributed")
    X, y = _data(400, seed=3)
    kernel = qpviz.kernels.RBF(1.0, 1.0)
    options = dict(inducing=10, minibatch=80, epochs=2, optimise=True, seed=4)
    local = qpviz.fit(X, y, "probit", kernel, method="sep", **options)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        remote = qpviz.fit(X, y, "probit", kernel, method="sep", client=client, **options)
    assert len(local.history) == len(remote.history) == 10
    assert remote.log_marginal_likelihood == pytest.approx(local.log_marginal_likelihood, abs=1e-8)
    np.testing.assert_allclose(remote.diagnostics["inducing"], local.diagnostics["inducing"], atol=1e-8)
    np.testing.assert_allclose(remote.kernel.log_params(), local.kernel.log_params(), atol=1e-8)
    np.testing.assert_allclose(remote.site_precision, local.site_precision, atol=1e-8)
    np.testing.assert_allclose([h["objective"] for h in remote.history], [h["objective"] for h in local.history],
                               atol=1e-8)
    # the hyper-parameters did move: the comparison covers the Adadelta steps
    assert np.max(np.abs(local.kernel.log_params() - kernel.log_params())) > 1e-3


def test_sep_matches_gfitc_test_error_on_2000_points():
    X, y = _data(2000, seed=0)
    X_test, y_test = _data(2000, seed=1)
    Z = kmeans_inducing(X, 30, 0)
    kernel = qpviz.kernels.RBF(1.0, 1.0)
    gfitc = qpviz.fit(X, y, "probit", kernel, method="ep", inducing=Z, optimise=True, parallel=True)
    post = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=Z, minibatch=200, epochs=20, optimise=True)
    te_gfitc = metrics.evaluate(gfitc, X_test, y_test)["test_error"]
    te_sep = metrics.evaluate(post, X_test, y_test)["test_error"]
    assert abs(te_sep - te_gfitc) <= 0.005, (te_sep, te_gfitc)
    assert not np.allclose(post.diagnostics["inducing"], Z)  # SEP learnt Z too


def test_batch_mode_learning_raises_the_evidence_with_the_sign_rule():
    X, y = _data(300, seed=8)
    post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", inducing=10, minibatch=300, epochs=60,
                     optimise=True)
    assert post.diagnostics["step_rule"] == "sign" and post.diagnostics["damping"] == sep.BATCH_DAMPING
    evidence = [h["objective"] for h in post.history]
    assert evidence[-1] > evidence[5] + 1.0  # the hyper-parameters and Z were learnt
    assert post.log_marginal_likelihood == pytest.approx(evidence[-1], abs=0.5)


def test_history_stop_and_option_errors():
    X, y = _data(300, seed=6)
    X_val, y_val = _data(100, seed=7)
    kernel = qpviz.kernels.RBF()
    post = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=10, minibatch=100, epochs=2, optimise=True,
                     validation=(X_val, y_val))
    assert [h["step"] for h in post.history] == list(range(1, 7))
    assert [h["epoch"] for h in post.history] == [1, 1, 1, 2, 2, 2]
    for entry in post.history:
        assert {"wall_time", "objective", "test_error", "ntll", "hyperparameters"} <= set(entry)
        assert "inducing" not in entry  # the callback's live view only
        assert 0.0 <= entry["test_error"] <= 1.0 and entry["ntll"] > 0
    assert np.all(np.diff([h["wall_time"] for h in post.history]) > 0)
    assert np.isfinite(post.log_marginal_likelihood) and post.diagnostics["stochastic"]
    assert post.diagnostics["damping"] == sep.STOCHASTIC_DAMPING

    stop = threading.Event()
    seen = []

    def callback(entry):
        seen.append(entry["step"])
        assert entry["inducing"].shape == (10, 2)
        if entry["step"] == 3:
            stop.set()

    stopped = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=10, minibatch=50, epochs=5, stop=stop,
                        callback=callback)
    assert seen == [1, 2, 3] and stopped.diagnostics["stopped"] and stopped.n_sweeps == 3
    p = stopped.predict_proba(X_val)
    assert np.all((p > 0) & (p < 1)) and np.isfinite(stopped.log_marginal_likelihood)
    assert metrics.evaluate(stopped, X_val, y_val)["test_error"] < 0.5

    def fit(**options):
        return qpviz.fit(X, y, "probit", kernel, method="sep", **{"inducing": 5, "epochs": 1, **options})

    with pytest.raises(ValueError, match="minibatch"):
        fit(minibatch=0)
    with pytest.raises(ValueError, match="epochs"):
        fit(epochs=0)
    with pytest.raises(ValueError, match="projection"):
        fit(projection="kl")
    with pytest.raises(ValueError, match="step_rule"):
        fit(step_rule="sgd")
    for bad in (0.0, 1.5, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match=r"alpha must be .*\(0, 1\]"):
            fit(alpha=bad)
    with pytest.raises(TypeError, match="does not take option"):
        fit(bounds=(0.1, 10.0))
    with pytest.raises(TypeError, match="client"):
        fit(client=42)
    with pytest.raises(ValueError, match="inducing"):
        fit(inducing=400)
    with pytest.raises(ValueError, match="one entry per row"):
        qpviz.fit(X, y[:-1], "probit", kernel, method="sep", inducing=5)


def test_a_scheduler_address_string_connects_like_a_remote_cluster():
    """client="tcp://host:port" (a cluster started elsewhere, e.g. `dask scheduler` and `dask worker`
    on other machines): the executor opens its own Client to that address and closes it at the end."""
    distributed = pytest.importorskip("dask.distributed")
    X, y = _data(200, seed=5)
    options = dict(inducing=6, minibatch=50, epochs=1, optimise=True, seed=1)
    local = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", **options)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  protocol="tcp://", host="127.0.0.1") as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        remote = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", client=address, **options)
        assert list(cluster.scheduler.clients) == ["fire-and-forget"]  # the fit closed its own Client
    assert remote.log_marginal_likelihood == pytest.approx(local.log_marginal_likelihood, abs=1e-8)


@pytest.mark.parametrize("projection", ["ep", "qp"])
def test_batch_sep_with_alpha_is_the_sparse_power_ep_fixed_point(projection):
    # an independent implementation: Power EP on the sparse prior (qpviz.inference.sparse_prior)
    X, y = _data(150, seed=9)
    Z = X[:10].copy()
    kernel = qpviz.kernels.RBF(1.2, [1.0, 0.8])
    ref = qpviz.fit(X, y, "probit", kernel, method=projection, inducing=Z, alpha=0.5, tol=1e-11, max_sweeps=3000)
    post = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=Z, minibatch=len(y), epochs=3000,
                     optimise=False, tol=1e-11, projection=projection, alpha=0.5)
    assert post.converged and post.diagnostics["alpha"] == 0.5
    assert post.log_marginal_likelihood == pytest.approx(ref.log_marginal_likelihood, abs=1e-6)
    np.testing.assert_allclose(post.site_precision, ref.site_precision, atol=1e-6)
    X_new, _ = _data(30, seed=10)
    for a, b in zip(post.predict_f(X_new), ref.predict_f(X_new)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # and alpha matters: EP's fixed point is elsewhere
    ep = qpviz.fit(X, y, "probit", kernel, method="sep", inducing=Z, minibatch=len(y), epochs=3000,
                   optimise=False, tol=1e-11, projection=projection)
    assert abs(ep.log_marginal_likelihood - post.log_marginal_likelihood) > 1e-2


def test_alpha_one_is_ep_bit_for_bit_and_learning_works_with_alpha_and_qp():
    X, y = _data(300, seed=11)
    options = dict(inducing=8, minibatch=60, epochs=3, optimise=True, seed=2)
    plain = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", **options)
    one = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", alpha=1.0, **options)
    assert one.log_marginal_likelihood == plain.log_marginal_likelihood
    np.testing.assert_array_equal(one.site_precision, plain.site_precision)
    np.testing.assert_array_equal(one.kernel.log_params(), plain.kernel.log_params())
    for extra in (dict(alpha=0.5), dict(projection="qp"), dict(projection="qp", alpha=0.5)):
        post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="sep", **options, **extra)
        assert np.isfinite(post.log_marginal_likelihood)
        # learnt: 14 steps of the sign rule (the first 1e-3 long per coordinate)
        assert np.max(np.abs(post.kernel.log_params() - qpviz.kernels.RBF().log_params())) > 3e-3
        assert not np.allclose(post.diagnostics["inducing"], plain.diagnostics["inducing"])
        assert metrics.evaluate(post, X, y)["test_error"] < 0.2
        assert post.likelihood.alpha == 1.0  # predictions are for the untempered model


@pytest.mark.parametrize("far", [40.0, 1e3])
def test_a_point_far_from_every_inducing_input_is_exact_and_silent(far):
    # Far from every Z, a_n = K_uu^-1 k_u(x_n) underflows (x = 40: |a_n|^2 ~ 1e-300, denormal cavity
    # variances, as on the 64-D digits; x = 1e3: exactly 0). The point is then independent of u: q(u) is
    # the fit without it, and its term of log Z_q is log int Phi(y f) N(f | 0, k(x, x)) df = log 1/2.
    # It used to warn "overflow encountered in divide" (or divide by zero) and leave its term out.
    X, y = _data(150)
    Z = X[:10].copy()
    kernel = qpviz.kernels.RBF(1.5, [1.0, 0.8])
    X_far, y_far = np.vstack([X, [[far, far]]]), np.append(y, 1.0)
    options = dict(method="sep", inducing=Z, minibatch=len(y) + 1, epochs=300, optimise=False, tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise"):  # underflow is expected here
            post = qpviz.fit(X_far, y_far, "probit", kernel, **options)
    options["minibatch"] = len(y)
    ref = qpviz.fit(X, y, "probit", kernel, **options)
    assert post.converged and ref.converged and post.diagnostics["n_improper_cavities"] == 0
    X_new, _ = _data(30, seed=3)
    for a, b in zip(post.predict_f(X_new), ref.predict_f(X_new)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert post.log_marginal_likelihood - ref.log_marginal_likelihood == pytest.approx(np.log(0.5), abs=1e-9)
