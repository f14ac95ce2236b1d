"""Side-by-side comparison of methods on one data set."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz import kernels
from qpviz.inference.compare import compare_methods


def test_compare_methods_rows_and_reference(rng):
    X = np.linspace(-2, 2, 20)[:, None]
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=20) > 0, 1.0, -1.0)
    X_test = np.linspace(-2, 2, 7)[:, None] + 0.05
    y_test = np.where(np.sin(2 * X_test[:, 0]) > 0, 1.0, -1.0)
    out = compare_methods(X, y, "probit", kernels.RBF(1.0, 0.7), X_test=X_test, y_test=y_test,
                          options={"qp": {"use_table": False}, "mcmc": {"n_samples": 3000, "seed": 4}})
    assert [r["method"] for r in out.rows] == ["ep", "qp", "vb", "laplace", "mcmc"]
    dist = out.column("mean_w2_to_mcmc")
    assert dist["mcmc"] == 0.0
    assert dist["ep"] < dist["laplace"]
    evidence = out.column("log_evidence")
    assert evidence["vb"] < evidence["ep"] and np.isnan(evidence["mcmc"])
    assert all(0 <= r["test_error"] <= 1 and r["ntll"] > 0 for r in out.rows)
    # Corollary 2.2 on the same data
    v_ep = out.posteriors["ep"].predict_f(X_test)[1]
    v_qp = out.posteriors["qp"].predict_f(X_test)[1]
    assert np.all(v_qp <= v_ep + 1e-12)


def test_compare_methods_errors():
    X = np.zeros((3, 1))
    with pytest.raises(ValueError, match="unknown method"):
        compare_methods(X, [1.0, 1.0, -1.0], "probit", kernels.RBF(), methods=("ep", "gibbs"))
    with pytest.raises(ValueError, match="reference method"):
        compare_methods(X, [1.0, 1.0, -1.0], "probit", kernels.RBF(), methods=("ep",))
