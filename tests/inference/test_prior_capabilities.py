"""Optional prior capabilities are small protocols, checked once when a fit starts (issue 23 point 2):
a prior lacking one that the method needs gets an error naming the capability and the method."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz.inference import hyper, prior as protocols
from qpviz.inference.dense import DensePrior
from qpviz.inference.ep import run_sites
from qpviz.inference.fit import fit
from qpviz.inference.prior import MissingCapability
from qpviz.inference.sparse_prior import SparsePrior
from qpviz.kernels import RBF
from qpviz.likelihoods import likelihood

X = np.linspace(-2, 2, 12)[:, None]
Y = np.where(np.sin(2 * X[:, 0]) > 0, 1.0, -1.0)
KERNEL = RBF(1.0, 0.8)


class Partial:
    """A prior offering the conditioning every method needs and only the members in ``offers``."""

    def __init__(self, offers, inner=None):
        self._inner = inner if inner is not None else DensePrior(KERNEL, X)
        self._offers = set(offers) | {"condition"}
        self.kernel, self.X = self._inner.kernel, self._inner.X

    n = property(lambda self: self._inner.n)

    def __getattr__(self, name):
        if name in self._offers:
            attr = getattr(self._inner, name)
            if name == "with_kernel":
                return lambda kernel: Partial(self._offers, attr(kernel))
            return attr
        raise AttributeError(name)


ALL = ("start_sweeps", "sequential_sweep", "cov_sqrt", "conditional", "with_kernel")


@pytest.mark.parametrize("method, lacks, capability", [
    ("ep", "sequential_sweep", "Sweeps"),
    ("qp", "start_sweeps", "Sweeps"),
    ("vb", "cov_sqrt", "CovarianceRoot"),
    ("mcmc", "conditional", "Conditional"),
    ("mcmc", "cov_sqrt", "CovarianceRoot"),
])
def test_a_missing_capability_is_named_with_the_method(method, lacks, capability):
    prior = Partial(set(ALL) - {lacks})
    with pytest.raises(MissingCapability) as err:
        fit(X, Y, "probit", KERNEL, method=method, prior=prior)
    message = str(err.value)
    assert f"method={method!r}" in message and f"capability {capability}" in message
    assert f"missing: {lacks}" in message and "Partial" in message
    assert isinstance(err.value, TypeError)


def test_learning_the_kernel_needs_a_prior_that_rebuilds():
    prior = Partial(set(ALL) - {"with_kernel"})
    fit(X, Y, "probit", KERNEL, method="ep", prior=prior)  # fits with the kernel as given
    with pytest.raises(MissingCapability, match=r"method='ep' with optimise=True needs a prior with the "
                                                r"capability Rebuild; .*missing: with_kernel"):
        fit(X, Y, "probit", KERNEL, method="ep", prior=prior, optimise=True)


def test_the_check_comes_before_any_work(monkeypatch):
    calls = []
    monkeypatch.setattr("qpviz.inference.site_fit.run_sites", lambda *a, **k: calls.append(1))
    with pytest.raises(MissingCapability):
        fit(X, Y, "probit", KERNEL, method="ep", prior=Partial(()))
    assert calls == []


def test_a_method_runs_on_a_prior_with_just_what_it_needs():
    # Laplace needs only the conditioning; EP the sweeps too: same numbers as on the dense prior
    laplace = fit(X, Y, "probit", KERNEL, method="laplace", prior=Partial(()))
    dense = fit(X, Y, "probit", KERNEL, method="laplace")
    np.testing.assert_allclose(laplace.predict_f(X[:4])[0], dense.predict_f(X[:4])[0], rtol=1e-12)
    ep = fit(X, Y, "probit", KERNEL, method="ep", prior=Partial(("start_sweeps", "sequential_sweep")))
    np.testing.assert_allclose(ep.log_marginal_likelihood, fit(X, Y, "probit", KERNEL).log_marginal_likelihood,
                               rtol=1e-12)


def test_learning_inducing_inputs_needs_them():
    with pytest.raises(ValueError, match=r"optimise_inducing=True needs a sparse prior \(inducing=Z\)"):
        hyper.optimise_hyperparameters(DensePrior(KERNEL, X), likelihood("probit"), Y, optimise_inducing=True)


def test_the_priors_declare_what_they_have():
    dense = DensePrior(KERNEL, X)
    sparse = SparsePrior(KERNEL, X, X[::3])
    assert isinstance(dense, protocols.Prior) and not isinstance(dense, protocols.InducingInputs)
    assert not isinstance(dense, protocols.ConditionalVariances)
    assert isinstance(sparse, protocols.InducingInputs) and isinstance(sparse, protocols.ConditionalVariances)
    assert isinstance(sparse, protocols.Sweeps) and isinstance(sparse, protocols.Rebuild)
    lik = likelihood("probit")
    assert isinstance(run_sites(sparse, lik, Y).state, protocols.BindsLikelihood)
    assert not isinstance(run_sites(dense, lik, Y).state, protocols.BindsLikelihood)
