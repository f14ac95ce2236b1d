"""``qpviz.fit``: one entry point for every inference method, and EP-evidence hyper-parameter fitting.

    post = qpviz.fit(X, y, "probit", qpviz.kernels.RBF(), method="qp", optimise=True, tol=1e-6)
    mean, var = post.predict_f(X_new)

``optimise=True`` follows the QP paper (Alg. 1 line 15, sec. 6): the kernel's log
hyper-parameters maximise EP's approximate evidence (eq. 4) with scipy's L-BFGS-B, using the
analytic gradient of the posterior state's ``grad_log_marginal`` (:mod:`.prior`) and warm-started EP runs; the
requested method then runs with those hyper-parameters (for QP this is the paper's protocol:
hyper-parameters from EP, then QP sites, which report their own evidence). VB fits its own bound
instead (sec. 6: "VB is also optimized by L-BFGS-B with the same configuration"), with the
same gradient at its optimum (:func:`optimise_hyperparameters`).

This module is the entry point only: the methods, the options each declares and the functions
that run them are the registry :mod:`.methods`; hyper-parameter optimisation is :mod:`.hyper`.
"""
from __future__ import annotations

from qpviz.inference.hyper import (OptimiserBoundWarning, likelihood_log_param_grad, likelihood_scale_params,
                                   optimise_hyperparameters, resolve_bounds)
from qpviz.inference.methods import METHODS, OPTIONS, REGISTRY
from qpviz.kernels import Kernel
from qpviz.likelihoods import as_likelihood

__all__ = ["fit", "optimise_hyperparameters", "likelihood_log_param_grad", "METHODS", "OPTIONS",
           "likelihood_scale_params", "OptimiserBoundWarning", "resolve_bounds"]


def fit(X, y, likelihood, kernel: Kernel, method: str = "ep", optimise: bool = False, **options):
    """Fit a GP with ``likelihood`` and ``kernel`` to (X, y) by ``method``; return the posterior.

    Methods: ``"ep"`` and ``"qp"`` (:mod:`.ep`), ``"vb"`` (:mod:`.vb`), ``"laplace"``
    (:mod:`.laplace`), ``"mcmc"`` (:mod:`.mcmc`, a :class:`SamplePosterior`). Options per method
    are declared by the engines (:mod:`.methods`, :data:`OPTIONS`) (e.g. ``tol``, ``damping``, ``order="fixed"|"random"``,
    ``parallel``, ``max_sweeps`` for EP/QP); ``jitter`` overrides :data:`qpviz.config.JITTER`,
    ``prior`` replaces the dense prior by another prior object with the same interface
    (:mod:`.prior`), ``max_opt_iter`` bounds the L-BFGS-B iterations of ``optimise=True`` and
    ``optimise_likelihood=True`` also fits the likelihood's scale parameter (Gaussian noise
    variance, Student-t / Laplace scale). ``bounds`` limits the fitted hyper-parameters (natural
    units): one ``(low, high)`` pair for all, or a dict by name (``kernel.param_names``, e.g.
    ``"variance"``, ``"lengthscale[1]"``, and ``"likelihood.scale"``) with the rest at
    :data:`qpviz.config.HYPER_BOUNDS`; a fitted value on a bound raises an
    :class:`OptimiserBoundWarning` and is listed in ``diagnostics["optimisation"]["at_bound"]``.
    The fitted values are ``post.hyperparameters``.

    Sparse GPs (issue 12): ``inducing=Z`` ((M, D) array, or an int M: K-means centres of X) makes
    ``"ep"`` / ``"qp"`` Power EP on pseudo-points (``alpha`` in (0, 1], default 1) or VSGP
    (``inducing_cov``) for any likelihood (:mod:`.sparse_prior`); ``"fitc"``, ``"pitc"``
    (``blocks``), ``"dtc"`` and ``"vfe"`` are the closed forms for the Gaussian likelihood
    (:mod:`.sparse_regression`). Training options of EP / QP with ``optimise=True`` (GFITC is
    ``method="ep", inducing=Z``), as for SEP and SVI: ``validation=(X_val, y_val)`` scores each
    converged evaluation, ``callback(entry)`` sees each, ``stop`` (a ``threading.Event`` or a
    callable) ends the optimisation at its best point so far, ``progress=True`` shows a bar; the
    posterior's ``history`` is then that record (wall time, evidence, test error, NTLL per
    evaluation) instead of EP's per-sweep convergence measures. ``optimise_inducing=True`` also learns Z: by the closed forms for
    the Gaussian likelihood, else by the Power-EP energy's gradient in Z (:func:`optimise_hyperparameters`).

    ``"svi"`` (issue 13; :func:`qpviz.inference.svi.fit_svi`): the variational bound on inducing
    points, batch (L-BFGS-B, ``minibatch >= N``) or stochastic (Adadelta on ``minibatch``-point
    batches for ``epochs``), with ``validation``, ``stop``, ``callback`` and ``progress``;
    ``optimise=True`` learns the kernel and Z with q(u).

    ``"sep"`` (issue 13, paper 003; :func:`qpviz.inference.sep.fit_sep`): scalable EP, q(u) by
    parallel site refinements on minibatches and, with ``optimise=True``, the kernel and Z by
    Adadelta steps on the minibatch estimate of log Z_q's gradient (``inducing``, ``minibatch``,
    ``epochs``, ``projection="ep"|"qp"``, ``client`` for Dask shards, and the training options).
    """
    if method not in REGISTRY:
        raise ValueError(f"method must be one of {tuple(REGISTRY)}, got {method!r}")
    engine = REGISTRY[method]
    engine.options.check(method, options)
    return engine.run(X, y, as_likelihood(likelihood), kernel, method, optimise, options)
