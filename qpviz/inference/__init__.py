"""GP inference engines: EP, QP, VB, Laplace and an MCMC reference, on one posterior type.

``qpviz.inference.fit(X, y, likelihood, kernel, method="ep"|"qp"|"vb"|"laplace"|"mcmc",
optimise=False, **options)`` returns a posterior with ``predict_f``, ``log_marginal_likelihood``,
``site_mean``, ``site_var``, ``converged`` and ``n_sweeps`` (:mod:`.fit`; the methods and the
options each declares: :mod:`.methods`, :mod:`.options`; fits on a prior's sites:
:mod:`.site_fit`; hyper-parameter optimisation: :mod:`.hyper`).

Modules:

* :mod:`.prior`: the prior interface every engine uses (typed ``Protocol``s); :mod:`.dense`
  its exact dense implementation, :mod:`.dense_sweep` that prior's blocked (BLAS-3)
  sequential sweep;
* :mod:`.sites`: numba site updates (cavity, EP/QP projection, damping, negative precisions);
* :mod:`.sweep`: the EP/QP sweep loop (sequential or parallel, convergence), written once;
* :mod:`.ep`: EP and QP runs on that loop, and the evidence, eq. 4;
* :mod:`.vb`, :mod:`.laplace`, :mod:`.mcmc`: the other methods;
* :mod:`.posterior`: the posterior objects and predictions (probabilities, App. H counts);
* :mod:`.metrics`: test error and negative test log-likelihood (QP paper sec. 6);
* :mod:`.compare`: every method on the same data, side by side (``compare_methods``).
"""
from __future__ import annotations

from qpviz.inference.compare import Comparison, compare_methods
from qpviz.inference.ep import ConvergenceWarning
from qpviz.inference.fit import METHODS, fit, optimise_hyperparameters
from qpviz.inference.posterior import GPPosterior, SamplePosterior
from qpviz.inference.dense import DensePrior
from qpviz.inference.prior import GaussianState, Prior

__all__ = ["fit", "optimise_hyperparameters", "METHODS", "GPPosterior", "SamplePosterior", "DensePrior", "Prior", "GaussianState",
           "ConvergenceWarning", "compare_methods", "Comparison"]
