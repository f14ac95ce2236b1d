"""Run several inference methods on the same data and tabulate them side by side.

``compare_methods(X, y, likelihood, kernel, methods=("ep", "qp", "vb", "laplace", "mcmc"))``
fits every method with the same kernel (with ``optimise=True``: the kernel of EP's evidence
maximum, the paper's protocol for all methods, sec. 6), and returns the posteriors plus one row
per method: log evidence (EP/QP eq. 4, VB's ELBO, Laplace's R&W eq. 3.32; NaN for MCMC),
convergence, iterations, seconds, the paper's TE / NTLL on test data when given, and the
distances of the latent marginals to the reference method (MCMC by default, :mod:`.metrics`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from qpviz.inference.fit import METHODS, fit
from qpviz.inference.metrics import evaluate, marginal_distances

__all__ = ["Comparison", "compare_methods"]


@dataclass
class Comparison:
    """Posteriors by method and a list of result rows (dicts with the same keys)."""

    posteriors: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)

    def column(self, key: str) -> dict:
        """{method: row[key]} for one column."""
        return {row["method"]: row[key] for row in self.rows}


def compare_methods(X, y, likelihood, kernel, methods=("ep", "qp", "vb", "laplace", "mcmc"), *, X_test=None,
                    y_test=None, optimise: bool = False, reference: str | None = "mcmc",
                    options: dict | None = None) -> Comparison:
    """Fit each of ``methods`` on (X, y); ``options`` maps a method to its extra fit options."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {METHODS}")
    if reference is not None and reference not in methods:
        raise ValueError(f"the reference method {reference!r} must be one of the compared methods {tuple(methods)}")
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    options = options or {}
    if optimise:
        kernel = fit(X, y, likelihood, kernel, method="ep", optimise=True, **options.get("ep", {})).kernel
    out = Comparison()
    for method in methods:
        start = time.perf_counter()
        post = fit(X, y, likelihood, kernel, method=method, **options.get(method, {}))
        seconds = time.perf_counter() - start
        out.posteriors[method] = post
        row = {"method": method, "log_evidence": post.log_marginal_likelihood, "converged": post.converged,
               "iterations": post.n_sweeps, "seconds": seconds}
        if X_test is not None:
            row.update(evaluate(post, X_test, y_test))
        out.rows.append(row)
    if reference is not None:
        ref = out.posteriors[reference]
        for row in out.rows:
            post = out.posteriors[row["method"]]
            row.update({f"{key}_to_{reference}": value
                        for key, value in marginal_distances(post.mean, post.var, ref.mean, ref.var).items()})
    return out
