"""Scalable EP (SEP) for GP classification: minibatches, stochastic hyper-parameters, Dask shards.

Paper 003 (Hernandez-Lobato and Hernandez-Lobato 2016), sec. 2.2-2.3 and its supplement.

**Model.** M inducing values u = f(Z), p(u) = N(0, K_uu). Each data point n has one exact factor
phi_n(u) = int p(y_n | f) N(f | a_n^T u, d_n) df with a_n = K_uu^-1 k_un and FITC's conditional
variance d_n = k_nn - k_un^T a_n, approximated by a rank-one Gaussian site (eq. 2, supplement eq. 10)

    phi~_n(u) = exp(-tau_n (a_n^T u)^2 / 2 + nu_n a_n^T u),

the same factor structure as :class:`qpviz.inference.sparse_prior.SparsePrior` (GFITC's q(u)).
q(u) = N(mu, Sigma) has precision K_uu^-1 + Lambda and precision-mean b, with Lambda = sum_n
tau_n a_n a_n^T and b = sum_n nu_n a_n (supplement eqs. 12-13).

**Site refinement** (supplement A.2-A.4): a site's cavity removes its factor from q; the tilted
distribution p(y_n|f) N(f | a_n^T mu^\\n, a_n^T Sigma^\\n a_n + d_n) is projected by the package's
site rule (:class:`qpviz.inference.sites.SiteRule`, steps 1'-4': EP's moments, or QP's W2
variance with ``projection="qp"``); all sites of a minibatch are refined in parallel against
the same q, damped (0.99 with minibatches, 0.5 in batch mode, supplement eq. 25), then q is
rebuilt.

**Removing a factor after the hyper-parameters moved** (the memory choice). The paper treats
a stored factor as a fixed function of u: its hyper-parameter gradient (eq. 4 = supplement
eq. 33) is the one "under the assumption that all phi~_n remain fixed", and the master rebuilds
q from K_uu(new)^-1 + Lambda in O(M^3) ("the training cost scales like O(m^3). The memory
requirements scale, however, like O(nm)"). We do the same: each site stores (tau_n, nu_n) *and
the direction a_n^old it was last fitted on*; the master keeps Lambda and b in u-space.
Consequences:

* memory O(N M) (the stored directions, held by the shards that own the points);
* per minibatch of B points: O(B M^2 + B M D) on the shards (kernel columns, cavities, site
  rule, rank-one contributions, gradient) and O(M^3 + M^2 D) on the master (K_uu, its
  Cholesky, rebuilding q, the K_uu part of the gradient): O(M^3) for B <= M as the paper says.
  In products of M x M or M x B matrices (0.1-0.25 ms each at M = B = 200, one BLAS thread): a
  shard does two triangular solves (a_n), two triangular products (R a_n, and K^-1 Sigma times
  the weighted sum of R a_n and R a_old: :func:`.sep_shard._gradient_terms`), one dsyrk
  (A diag(tau) A^T), one general product (its K_uu term), K_uf and its VJP (which reads K_uf, not
  recomputing it); with stored sites (epoch 2 on) also R a_old (two triangular products: R is
  not formed) and one dsyrk. The master: K_uu, two Cholesky factors, two triangular products (P),
  one inversion (by halves), one triangular solve (K^-1 R^T), two triangular products (the prior's
  dL/dK_uu, from P's L^T Lambda), and the VJP of K_uu (reading the rebuild's K_uu). (An SVI
  step, :mod:`.svi`, has about as many as a SEP step: ``benchmarks/results/bench_sep_step.txt``);
* a point's cavity removes tau_n a_n^old a_n^old^T (Sherman-Morrison, supplement eqs. 14-15)
  and the refreshed site sits on the current a_n: Lambda += tau_new a_n a_n^T - tau_old
  a_n^old a_n^old^T. The sums Lambda, b are re-added exactly from the shards once per epoch
  (O(N M^2), the cost of an epoch anyway), so rounding in the running updates does not pile up.

(The alternative, storing only the scalars (tau_n, nu_n) on h_n = a_n^T u and re-projecting
every site after each hyper-parameter step, needs O(N) memory but O(N M^2) per step: no
minibatch speed-up.)

**Evidence** (supplement eqs. 26-29): log Z_q = Phi(q) - Phi(p) + sum_n log Z~_n with
Phi(q) - Phi(p) = -1/2 log|I + L^T Lambda L| + 1/2 b^T mu (K_uu = L L^T) and
log Z~_n = log Z_n + Phi(cav_n) - Phi(q), the last difference one-dimensional along a_n^old:
-1/2 log(1 - tau v) + (tau m^2 - 2 nu m + nu^2 v) / (2 (1 - tau v)), m, v = q's mean and
variance of a_n^old^T u. A step records the minibatch estimate Phi(q) - Phi(p) +
(N/B) sum_{n in batch} log Z~_n at the state the step starts from (exact in batch mode); the
returned ``log_marginal_likelihood`` is log Z_q summed over every point at the final state.

**Gradient** (eq. 4 / eq. 6 with minibatches) in (log theta, Z), analytic:

    d log Z_q = -1/2 tr(Mm dK_uu) + (N/B) sum_{n in batch} d_direct log Z_n,
    Mm = K_uu^-1 - K_uu^-1 (Sigma + mu mu^T) K_uu^-1                          (supplement eq. 35),

where log Z_n = l(m_n, V_n), m_n = a_n^T c_n, V_n = a_n^T S_n a_n + d_n with the cavity
N(c_n, S_n) held fixed. With w = K_uu^-1 c_n, r = K_uu^-1 S_n a_n - a_n, g_m = dl/dm,
g_V = dl/dV (from the tilted moments):

    dL/dK_uf[:, n] = g_m w + 2 g_V r,   dL/dK_uu += -sym(g_m a_n w^T + g_V a_n (2 r + a_n)^T),
    dL/d k_nn = g_V,

chained to (log theta, Z) by :func:`qpviz.inference.inducing.covariance_vjp` (the data part on
the shard that owns the points, the K_uu part on the master). Eq. 4 is the exact gradient of
log Z_q at fixed factors when EP has converged; elsewhere it leaves out sum_n (eta^_n - eta)^T
d theta_prior (the paper: "very small and can be ignored"). A step is one pass over its
minibatch (:func:`qpviz.inference.sep_shard.refine_sites`): the kernel columns and cavities of
its points are computed once, and give both the refined sites and this gradient at the state the
step starts from (the same state whose evidence estimate the step records); then q's sums take
the new sites, one step of the paper's sign-adaptive rates (:class:`SignAdaptiveSteps`; by
default; with minibatches the rule reads an exponential average of the gradients,
:data:`.step_rules.MINIBATCH_SMOOTHING`) or of Adadelta (rho 0.9, eps 1e-5; ``step_rule="adadelta"``) moves
(log theta, Z), and q is rebuilt once, at the new hyper-parameters; no step is taken from
q = p(u) (no site set yet: log Z_q is then flat for probit). Until issue 24 the gradient was
taken after a first rebuild, at the refined q: a second pass over the minibatch and a second
rebuild per step (2.1x an SVI step at N = 2e4, M = 200; ``benchmarks/bench_sep_step.py``; with one
pass and the products above: 0.71-0.92x in the first epoch, 0.90-0.95x once sites are stored;
``docs/scalable.md``), and on
200,000 points of a sharp-boundary problem SEP ended at 7.1% test error against 5.9% now
(``benchmarks/bench_sep_accuracy.py``). A likely reason, not proven: after refining, the
minibatch's own sites are matched to q while the others are not, so the N/B-scaled estimate
describes a converged data set and the left-out (eta^_n - eta) terms bias it; before refining,
the minibatch is a fair sample of the sites as they are. The sign rule's small, self-halving
steps let the sites follow the hyper-parameters (with Adadelta, or with damping 0.5, SEP's signal
variance drifted up: sites lagging behind the hyper-parameters bias the fixed-factor gradient). On
raw minibatch gradients, though, its rates halved at every other step and the learning stopped
(signal variance 12 and length scale 0.59 frozen, against SVI's 0.55 and 0.32; test NTLL 0.243 against
SVI's 0.239); on their running average it reaches SVI's hyper-parameters and ends ahead of SVI
(``benchmarks/results/bench_sep_accuracy_200k.txt``).

**Execution.** The per-step data work is :func:`refine_sites` / :func:`site_gradient` (pure
functions of a shard's data and sites and the broadcast :class:`Broadcast`), run by
:class:`SEPShard` objects held by an executor: in-process (default) or Dask actors, one
shard per worker, created once with their X, y (data stay on the workers; the master keeps q
and the hyper-parameters, paper Figure 1 right). The global minibatch, drawn on the master
with ``np.random.default_rng(seed)``, is split to the shards owning its points, so a seed gives
the same run in-process and on Dask (up to the order of floating-point sums).

**Likelihoods.** Any likelihood the site rule handles (probit, logit, ...; EP or QP). ``alpha`` < 1:
Power EP (tempered sites, :mod:`.sep_shard`): a cavity removes alpha of a factor, the tilted
distribution is p(y|f)^alpha N(f | cavity), log Z_q = Phi(q) - Phi(p) + (1/alpha) sum_n [log Z~_n +
Phi(cav_n) - Phi(q)] and the data part of the gradient carries 1/alpha (as :mod:`.sparse_prior`).
Predictions use SEP's own q(u): f_* ~ N(a_*^T mu, k_** - k_*^T a_* + a_*^T Sigma a_*)
(supplement eq. 36).
"""
from __future__ import annotations

import dataclasses
import functools
import time
import warnings

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from qpviz._blas import lower_inverse, small_problem_threads
from qpviz.inference import metrics
from qpviz.inference.distributed import DaskExecutor, LocalExecutor
from qpviz.inference.distributed import shard_bounds as _shard_bounds
from qpviz.inference.distributed import split as _split
from qpviz.inference.inducing import cholesky_kuu
from qpviz.inference.options import TrainingOptions, option
from qpviz.inference.posterior import GPPosterior, TrainingMarginals
from qpviz.inference.sep_refresh import StaleSites
from qpviz.inference.sep_shard import SHARD_CHUNK, Broadcast, SEPShard, refine_sites, site_gradient
from qpviz.inference.sites import SiteRule
from qpviz.inference.sparse_prior import check_alpha
from qpviz.inference.step_rules import STEP_RULES, SignAdaptiveSteps, make_step_rule
from qpviz.inference.stochastic import (TrainingRecord, check_positive_int, inducing_problem, minibatches,
                                       steps_per_epoch)
from qpviz.kernels import Kernel, as_inputs

__all__ = ["SEPOptions", "fit_sep", "SEPState", "SEPModel", "SEPShard", "Broadcast", "refine_sites", "site_gradient",
           "log_evidence", "sep_gradient", "STOCHASTIC_DAMPING", "BATCH_DAMPING", "SignAdaptiveSteps", "STEP_RULES",
           "SHARD_CHUNK"]

#: supplement A.4: damping of the site parameters with minibatches (q is rebuilt after each)
STOCHASTIC_DAMPING = 0.99
#: ... and in batch mode (every site refined from the same q)
BATCH_DAMPING = 0.5


# -- the master: q, hyper-parameters and predictions ------------------------------------------------------
class SEPModel:
    """What predictions need from the model: ``kernel``, inducing inputs ``Z``, training ``X``."""

    def __init__(self, kernel: Kernel, Z: np.ndarray, X: np.ndarray, jitter_used: float):
        self.kernel, self.Z, self.X, self.jitter_used = kernel, Z, X, jitter_used

    @property
    def m(self) -> int:
        return self.Z.shape[0]

    @property
    def n(self) -> int:
        return self.X.shape[0]


class SEPState(TrainingMarginals):
    """SEP's q(u) = N(mean_u, cov_u) with its sites; ``predict_f`` is supplement eq. 36."""

    def __init__(self, prior: SEPModel, chol_kuu, mean_u, cov_u, tau, nu):
        self.prior, self.chol_kuu, self.mean_u, self.cov_u, self.tau, self.nu = prior, chol_kuu, mean_u, cov_u, tau, nu
        self._train = None

    def predict_f(self, X_new, full_cov: bool = False):
        X_new = as_inputs(X_new, "X_new")
        kernel, Z = self.prior.kernel, self.prior.Z
        Kus = kernel(Z, X_new)
        A = linalg.cho_solve((self.chol_kuu, True), Kus, check_finite=False)
        mean = A.T @ self.mean_u
        if full_cov:
            return mean, kernel(X_new) - Kus.T @ A + A.T @ self.cov_u @ A
        return mean, kernel.diag(X_new) - np.einsum("ij,ij->j", Kus, A) + np.einsum("ij,ij->j", A, self.cov_u @ A)

    def _training_inputs(self):
        return self.prior.X

    @property
    def f_var(self) -> np.ndarray:
        return self.var


def _rebuild(kernel, Z, prec, lin, jitter, chol=None):
    """q(u) from K_uu and the site sums (Lambda, b) in O(M^3): returns (Broadcast, Phi(q) - Phi(p), jitter used).

    Whitened, K_uu = L L^T: precision of v = L^-1 u is P = I + L^T Lambda L, Sigma = L P^-1 L^T,
    mu = Sigma b; Phi(q) - Phi(p) = -1/2 log|P| + 1/2 b^T mu. ``chol`` = (L, jitter used) of the
    same kernel and Z skips K_uu and its factorisation. Also K_uu^-1 Sigma and K_uu^-1 mu, which
    the gradient uses."""
    kuu = kernel(Z) if chol is None else None
    L, jitter_used = cholesky_kuu(kuu, jitter) if chol is None else chol
    Lf = np.asfortranarray(L)  # BLAS's layout: no copies in dtrmm / dpotri
    # P = I + L^T Lambda L; Lambda is symmetric, so its transpose is the Fortran view of the same numbers.
    # L^T Lambda is kept: the prior's gradient term K^-1 Sigma Lambda is two triangular products of it
    whitened_prec = blas.dtrmm(1.0, Lf, prec.T, side=0, lower=1, trans_a=1)
    P = blas.dtrmm(1.0, Lf, whitened_prec, side=1, lower=1)
    P[np.diag_indices_from(P)] += 1.0
    # (the Cholesky factorisation reads P's lower triangle only: P symmetric up to rounding needs no averaging)
    Lp = linalg.cholesky(P, lower=True, overwrite_a=True, check_finite=False)
    # Lp^-1 is bounded (P >= I): R = Lp^-1 L^T, K^-1 R^T = L^-T Lp^-T and K^-1 mu by products with it
    Lp_inv = lower_inverse(Lp)
    # R = Lp^-1 L^T (Sigma = R^T R) is not formed: R b and mu = R^T (R b) by triangular matrix-vector products
    root_lin = blas.dtrmv(Lp_inv, blas.dtrmv(Lf, lin, lower=1, trans=1), lower=1)
    mean = blas.dtrmv(Lf, blas.dtrmv(Lp_inv, root_lin, lower=1, trans=1), lower=1)
    norm_diff = -float(np.sum(np.log(np.diag(Lp)))) + 0.5 * float(lin @ mean)
    # K^-1 Sigma = L^-T L^-1 L Lp^-T Lp^-1 L^T = F R with F = K^-1 R^T = L^-T Lp^-T (upper triangular),
    # and K^-1 mu = F (R b); Lp^-1 and F serve the shards (Broadcast)
    F = np.asfortranarray(linalg.solve_triangular(Lf, Lp_inv.T, lower=True, trans="T", check_finite=False))
    kinv_mean = F @ root_lin
    return (Broadcast(kernel, Z, Lf, mean, prec, whitened_prec, kinv_mean, Lp_inv, F, kuu), norm_diff, jitter_used)


def _prior_gradient_matrix(bc: Broadcast):
    """dL/dK_uu of Phi(q) - Phi(p) at fixed factors: -1/2 (K^-1 - K^-1 (Sigma + mu mu^T) K^-1)
    (supplement eqs. 34-35), with K^-1 - K^-1 Sigma K^-1 = K^-1 Sigma (Sigma^-1 - K^-1) = K^-1 Sigma Lambda:
    = (K^-1 R^T) (Lp^-1 (L^T Lambda)): two triangular products of the rebuild's L^T Lambda (measured
    0.32 ms against 0.42 for K^-1 Sigma and a general product with Lambda, M = 200), no inverse of K_uu.
    Symmetric up to rounding: :func:`_chain` symmetrises the sum."""
    Mm = blas.dtrmm(1.0, bc.kinv_root, blas.dtrmm(1.0, bc.root_solve, bc.whitened_prec, lower=1), lower=0)
    Mm = blas.dger(-1.0, bc.kinv_mean, bc.kinv_mean, a=Mm, overwrite_a=1)  # in place (Fortran-ordered)
    Mm *= -0.5
    return Mm


def _chain(bc: Broadcast, data, scale: float):
    """Eq. 6 from the shards' summed data terms ``data`` = (d log theta, dZ, dL/dK_uu, the last not
    yet symmetrised) scaled by ``scale`` = N / B, plus the prior's K_uu part: the gradient in
    (log theta, Z)."""
    kernel, Z = bc.kernel, bc.Z
    G_uu = scale * data[2]
    G_uu += _prior_gradient_matrix(bc)
    G_uu = G_uu + G_uu.T  # the symmetric part (x 2, halved next): the shards' terms are not symmetrised
    G_uu *= 0.5
    # K_uu = k(Z, Z): Z is both arguments and G_uu symmetric, so dL/dZ doubles the first-argument product
    gt_uu, gz_uu = kernel.cross_vjp(Z, Z, G_uu, K=bc.kuu)
    return scale * data[0] + gt_uu, scale * data[1] + 2.0 * gz_uu


def _sum_parts(parts, bc: Broadcast):
    """The shards' (d log theta, dZ, dL/dK_uu) summed (zeros without any; one shard's own arrays)."""
    total = None
    for part in parts:
        if part is not None:
            total = part if total is None else tuple(a + b for a, b in zip(total, part))
    if total is None:
        M = bc.Z.shape[0]
        total = (np.zeros(len(bc.kernel.param_names)), np.zeros_like(bc.Z), np.zeros((M, M)))
    return total


def sep_gradient(executor, parts, bc: Broadcast, scale: float):
    """Eq. 6: the gradient of log Z_q in (log theta, Z) (module docstring), data sums from the
    shards scaled by ``scale`` = N / B."""
    results = executor.call("gradient", [(p, bc) if len(p) else None for p in parts])
    return _chain(bc, _sum_parts(results, bc), scale)


def log_evidence(executor, n_shards: int, kernel: Kernel, Z, prec, lin, jitter=None, counts: bool = False):
    """log Z_q (supplement eq. 28) over every point at (kernel, Z) with the stored factors held fixed
    (Lambda = ``prec``, b = ``lin`` and each shard's sites and directions): the objective whose
    gradient eq. 4 is at an EP fixed point. Points without a proper cavity add nothing; with
    ``counts`` the result is (log Z_q, how many such points)."""
    bc, norm_diff, _ = _rebuild(kernel, np.asarray(Z, float), prec, lin, jitter)
    parts = executor.call("evidence", [(bc,)] * n_shards)
    value = norm_diff + sum(part[0] for part in parts)
    return (value, sum(part[1] for part in parts)) if counts else value



_REFUSED = "not taken: SEP builds its own inducing-point model and learns the kernel and Z by its step rule"


@dataclasses.dataclass(frozen=True)
class SEPOptions(TrainingOptions):
    """The options of ``qpviz.fit(..., method="sep")`` (:func:`fit_sep`; ``prior``, ``max_opt_iter``,
    ``optimise_likelihood`` and ``bounds`` are refused with a message saying why)."""

    prior: object = option(None, _REFUSED)
    max_opt_iter: int = option(None, _REFUSED)
    optimise_likelihood: bool = option(False, _REFUSED)
    bounds: object = option(None, _REFUSED)
    inducing: object = option(200, "inducing inputs Z, (M, D), or an int M (K-means centres)")
    minibatch: int = option(200, "points per step (`>= N`: batch mode)")
    epochs: int = option(5, "passes over the data")
    seed: int = option(0, "random seed (minibatches; K-means inducing inputs)")
    client: object = option(None, "a Dask `Client`, a scheduler address ('tcp://host:8786') or 'local': "
                                  "one shard per worker")
    projection: str = option("ep", "site projection, 'ep' (moments) or 'qp' (W2)")
    damping: float | None = option(None, f"site step (None: {STOCHASTIC_DAMPING} with minibatches, "
                                         f"{BATCH_DAMPING} in batch mode)")
    tol: float = option(1e-6, "largest site change at convergence (batch mode without learning)")
    use_table: bool = option(True, "QP reads sigma_QP from the lookup tables where they cover the cavity")
    record_every: int = option(1, "steps between history entries")
    n_shards: int = option(1, "in-process shards of the data")
    step_rule: str | None = option(None, "'sign' (the paper's sign-adaptive rates, on averaged gradients with minibatches) or "
                                      "'adadelta' (None: 'sign')")
    alpha: float = option(1.0, "Power EP's power in (0, 1]: tempered sites (1 = EP)")
    drop_stale: bool = option(True, "with minibatches and learning: forget the first epoch's sites fitted at "
                                    "hyper-parameters that moved on since (sep_refresh)")


def fit_sep(X, y, likelihood, kernel: Kernel, *, inducing=200, minibatch: int = 200, epochs: int = 5,
            optimise: bool = True, seed: int = 0, validation=None, client=None, projection: str = "ep",
            progress: bool = False, stop=None, callback=None, damping: float | None = None, tol: float = 1e-6,
            jitter: float | None = None, use_table: bool = True, record_every: int = 1, n_shards: int = 1,
            step_rule: str | None = None, alpha: float = 1.0, drop_stale: bool = True):
    """Train SEP (module docstring); returns a :class:`GPPosterior` with a :class:`SEPState`.

    ``inducing``: int M (K-means centres of X, ``seed``) or an (M, D) array of starting inducing
    inputs; ``minibatch``: points per step (>= N: batch mode, every site refined each step);
    ``epochs``: passes over the data; ``optimise``: a step of ``step_rule`` on (log theta, Z) after
    every refinement; ``damping``: default 0.99 with minibatches, 0.5 in batch mode; ``projection``:
    "ep" (moments) or "qp" (QP's W2 projection); ``client``: None (in-process, ``n_shards``
    shards), a Dask ``Client``, a scheduler address or "local" (:class:`DaskExecutor`);
    ``validation`` = (X_val, y_val) adds test error / NTLL to each recorded step of
    ``post.history``; ``stop`` (a ``threading.Event`` or a callable) and ``callback(entry)`` as
    :class:`qpviz.inference.stochastic.TrainingRecord`. ``step_rule``: "sign" (the default:
    :class:`SignAdaptiveSteps`, the paper's batch rule) or "adadelta" (paper 003 sec. 4.5 with
    minibatches). With Adadelta's growing steps, batch SEP learning Z on the 2,000-point test
    problem oscillated after ~70 steps (log Z_q -407 -> -463, test error 8.5% -> 10.7%; the sign
    rule: -430 to -400.0 in 200 steps; GFITC with Z fixed: -401.3); with minibatches the sign rule
    reads a running average of the gradients (:class:`SignAdaptiveSteps`): on 200,000 points of a
    sharp-boundary problem with 5% label noise (M = 200, two epochs) it ended at 5.4% test error,
    NTLL 0.233 (SVI: 6.0%, 0.239; Adadelta: 6.0%, 0.239; on raw minibatch gradients: 5.7%, 0.243), and on
    the flights Adadelta went further (issue 24; ``docs/scalable.md``). A run stops early when no site moves
    more than ``tol`` in a batch-mode step without hyper-parameter learning (``converged=True``;
    runs with minibatches or ``optimise=True`` report ``converged=False``: they stop after ``epochs``).
    ``alpha`` in (0, 1]: Power EP's power (tempered sites, :mod:`.sep_shard`; 1 = EP); the
    posterior's likelihood is the untempered one. ``drop_stale`` (with minibatches and learning):
    in the first 200 steps of the first epoch, sites fitted at hyper-parameters that have moved on since
    are forgotten (:mod:`.sep_refresh`; ``diagnostics["stale_sites_dropped"]``: the steps up to which).
    """
    alpha = check_alpha(alpha)
    if projection not in ("ep", "qp"):
        raise ValueError(f"projection must be 'ep' (moment matching) or 'qp' (W2); got {projection!r}")
    lik, X, y, Z = inducing_problem(X, y, likelihood, kernel, inducing, seed, optimise)
    n = X.shape[0]
    minibatch = check_positive_int(minibatch, "minibatch (points per step)")
    epochs = check_positive_int(epochs, "epochs")
    record_every = check_positive_int(record_every, "record_every")
    n_shards = check_positive_int(n_shards, "n_shards")
    if client is not None and n_shards != 1:
        raise ValueError("n_shards splits the data in-process; with a Dask client there is one shard per worker: "
                         "drop n_shards")
    if not tol > 0:
        raise ValueError(f"tol must be > 0; got {tol!r}")
    stochastic = minibatch < n
    if step_rule is None:
        step_rule = "sign"
    if step_rule not in STEP_RULES:
        raise ValueError(f"step_rule must be one of {sorted(STEP_RULES)}; got {step_rule!r}")
    if damping is None:
        damping = STOCHASTIC_DAMPING if stochastic else BATCH_DAMPING
    rule = SiteRule.build(projection, lik.tempered(alpha), damping, use_table=use_table)
    M = Z.shape[0]
    executor = (LocalExecutor([SEPShard(X[lo:hi], y[lo:hi], M, rule) for lo, hi in _shard_bounds(n, n_shards)])
                if client is None else DaskExecutor(client, X, y, SEPShard, M, rule))
    try:
        return _train(executor, executor.bounds if client is not None else _shard_bounds(n, n_shards), X, y, lik,
                      kernel, Z, rule, minibatch, epochs, optimise, seed, validation, progress, stop, callback, tol,
                      jitter, record_every, stochastic, projection, step_rule, bool(drop_stale))
    finally:
        executor.close()


def _train(executor, bounds, X, y, lik, kernel, Z, rule, minibatch, epochs, optimise, seed, validation, progress,
           stop, callback, tol, jitter, record_every, stochastic, projection, step_rule, drop_stale):
    n = X.shape[0]
    M, D = Z.shape
    rng = np.random.default_rng(seed)
    prec, lin = np.zeros((M, M)), np.zeros(M)
    bc, norm_diff, jitter_used = _rebuild(kernel, Z, prec, lin, jitter)
    n_kernel = len(kernel.param_names)
    stepper = make_step_rule(step_rule, n_kernel + M * D, stochastic)
    per_epoch = steps_per_epoch(n, minibatch)
    record = TrainingRecord(epochs * per_epoch, label="SEP", validation=validation, every=record_every,
                            stop=stop, callback=callback, progress=progress)
    state = {"bc": bc, "jitter": jitter_used}
    stale = StaleSites(per_epoch) if (stochastic and optimise and drop_stale) else None

    def posterior(log_evidence=float("nan"), converged=False, n_steps=0, extra=None):
        bc = state["bc"]
        model = SEPModel(bc.kernel, bc.Z, X, state["jitter"])
        tau, nu, n_clipped = (np.zeros(0), np.zeros(0), 0) if extra is None else extra
        return GPPosterior("sep", lik, X, y, SEPState(model, bc.chol_kuu, bc.mean_u, bc.cov_u, tau, nu), log_evidence,
                           converged, n_steps, record.history,
                           dict(n_clipped=n_clipped, inducing=bc.Z, M=M, jitter=state["jitter"], projection=projection,
                                minibatch=minibatch, stochastic=stochastic, damping=rule.damping,
                                step_rule=step_rule, alpha=rule.power,
                                hyperparameters=dict(bc.kernel.params)))

    def evaluate(X_val, y_val):
        # with BLAS threads as the steps (as SVI): threads woken for a large validation set kept
        # spinning into the next steps (measured: 5.6 ms per step instead of 1.7 at M = 100)
        with small_problem_threads(M):
            return metrics.evaluate(posterior(), X_val, y_val)

    step, converged, go_on = 0, False, True
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        for batch in minibatches(n, minibatch, rng):
            step += 1
            # small steps (minibatch and M below a few hundred) with one BLAS thread: OpenBLAS's
            # threads made a 200 x 200 Cholesky take 0.1 s on this shared 2-core machine (measured)
            with small_problem_threads(max(len(batch), M)):
                parts = _split(batch, bounds)
                # one pass over the minibatch: its sites refined and, with learning, the gradient of
                # log Z_q at the state the step starts from (the same cavities; module docstring)
                # no hyper-parameter step from q = p(u) (no site set yet): there log Z_q is the prior
                # predictive, flat in (log theta, Z) for probit (its gradient was rounding noise, which
                # the sign rule's first step, initial_step / |g|, blew up)
                learn = optimise and bool(np.any(bc.mean_u) or np.any(bc.prec))  # (the M numbers first)
                results = executor.call("refine", [(p, bc, learn, step) if len(p) else None for p in parts])
                used = [r for r in results if r is not None]
                evidence = norm_diff + n / len(batch) * sum(r["evidence"] for r in used)
                change = max(r["change"] for r in used)
                if len(batch) == n:  # every site refined: the sums afresh, no running differences
                    prec = sum(r["new_prec"] for r in used)
                    lin = sum(r["new_lin"] for r in used)
                else:
                    prec = prec + functools.reduce(np.add, (r["new_prec"] - r["old_prec"] for r in used))
                    lin = lin + sum(r["new_lin"] - r["old_lin"] for r in used)
                kernel_now, Z_now, chol = bc.kernel, bc.Z, (bc.chol_kuu, state["jitter"])
                if learn:
                    g_theta, g_Z = _chain(bc, _sum_parts([r["gradient"] for r in used], bc), n / len(batch))
                    theta = np.concatenate([bc.kernel.log_params(), bc.Z.ravel()])
                    theta = theta + stepper.step(np.concatenate([g_theta, g_Z.ravel()]))
                    kernel_now, Z_now, chol = (bc.kernel.with_log_params(theta[:n_kernel]),
                                               theta[n_kernel:].reshape(M, D), None)
                if stale is not None:  # sites fitted at hyper-parameters long gone (.sep_refresh)
                    prec, lin, drop = stale.after_step(step, epoch, kernel_now.log_params(), prec, lin)
                    if drop is not None:
                        executor.call("drop", [(drop,) for _ in bounds])
                bc, norm_diff, state["jitter"] = _rebuild(kernel_now, Z_now, prec, lin, jitter, chol)
                state["bc"] = bc
            converged = (not optimise) and (not stochastic) and change < tol
            last = converged or step == epochs * per_epoch
            go_on = record.step(step, epoch, evidence, evaluate, last=last, max_site_change=change,
                                hyperparameters=dict(bc.kernel.params), live={"inducing": bc.Z})
            if converged or not go_on:
                break
        if converged or not go_on:
            break
        if stochastic:  # exact re-sum of Lambda and b once per epoch (module docstring)
            sums = executor.call("aggregates", [() for _ in bounds])
            prec, lin = sum(s[0] for s in sums), sum(s[1] for s in sums)
            bc, norm_diff, state["jitter"] = _rebuild(bc.kernel, bc.Z, prec, lin, jitter,
                                                      (bc.chol_kuu, state["jitter"]))
            state["bc"] = bc
    record.close()
    bc = state["bc"]
    final_evidence, improper = log_evidence(executor, len(bounds), bc.kernel, bc.Z, prec, lin, jitter, counts=True)
    if improper:
        warnings.warn(f"{improper} of {n} points had no proper cavity at the final q (their stored factors outweigh "
                      "it); log Z_q leaves them out. More epochs, or a smaller damping (shorter site steps), usually remove them",
                      RuntimeWarning, stacklevel=3)
    sites = executor.call("sites", [() for _ in bounds])
    tau = np.concatenate([s[0] for s in sites])
    nu = np.concatenate([s[1] for s in sites])
    post = posterior(final_evidence, converged, step, (tau, nu, sum(s[2] for s in sites)))
    post.diagnostics.update(stopped=record.stopped, steps=step, train_seconds=time.perf_counter() - start,
                            dashboard_link=getattr(executor, "dashboard_link", None), n_improper_cavities=improper,
                            stale_sites_dropped=[] if stale is None else list(stale.dropped))
    return post
