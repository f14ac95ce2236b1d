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
  Cholesky, rebuilding q, the K_uu part of the gradient): O(M^3) for B <= M as the paper says;
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
d theta_prior (the paper: "very small and can be ignored"). A step: refine the minibatch's
sites, rebuild q, evaluate this gradient at the new q, one Adadelta step (rho 0.9, eps 1e-5;
in batch mode by default the paper's sign-adaptive rates, :class:`SignAdaptiveSteps`), rebuild q
at the new hyper-parameters.

**Execution.** The per-step data work is :func:`refine_sites` / :func:`site_gradient` (pure
functions of a shard's data and sites and the broadcast :class:`Broadcast`), run by
:class:`SEPShard` objects held by an executor: in-process (default) or Dask actors, one
shard per worker, created once with their X, y (data stay on the workers; the master keeps q
and the hyper-parameters, paper Figure 1 right). The global minibatch, drawn on the master
with ``np.random.default_rng(seed)``, is split to the shards owning its points, so a seed gives
the same run in-process and on Dask (up to the order of floating-point sums).

**Likelihoods.** Any likelihood the site rule handles (probit, logit, ...; EP or QP), alpha = 1
(no Power EP). Predictions use SEP's own q(u): f_* ~ N(a_*^T mu, k_** - k_*^T a_* + a_*^T Sigma a_*)
(supplement eq. 36).
"""
from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
from scipy import linalg

from qpviz._blas import small_problem_threads
from qpviz.inference import metrics
from qpviz.inference.distributed import DaskExecutor, LocalExecutor, prepare_worker
from qpviz.inference.distributed import shard_bounds as _shard_bounds
from qpviz.inference.distributed import split as _split
from qpviz.inference.inducing import cholesky_kuu, covariance_vjp
from qpviz.inference.options import TrainingOptions, option
from qpviz.inference.posterior import GPPosterior, TrainingMarginals
from qpviz.inference.sites import CLIPPED, OK, SKIPPED_CAVITY, SKIPPED_PROJECTION, SiteRule
from qpviz.inference.stochastic import (Adadelta, TrainingRecord, check_positive_int, inducing_problem, minibatches,
                                       steps_per_epoch)
from qpviz.kernels import Kernel, as_inputs

__all__ = ["SEPOptions", "fit_sep", "SEPState", "SEPModel", "SEPShard", "Broadcast", "refine_sites", "site_gradient",
           "log_evidence", "sep_gradient", "STOCHASTIC_DAMPING", "BATCH_DAMPING", "SignAdaptiveSteps", "STEP_RULES",
           "SHARD_CHUNK"]

#: supplement A.4: damping of the site parameters with minibatches (q is rebuilt after each)
STOCHASTIC_DAMPING = 0.99
#: ... and in batch mode (every site refined from the same q)
BATCH_DAMPING = 0.5
#: points per piece of a shard's work (:meth:`SEPShard.refine`, :meth:`SEPShard.gradient`, :meth:`SEPShard.evidence`)
SHARD_CHUNK = 2048


# -- what the master broadcasts, and the model it predicts with --------------------------------------------
@dataclasses.dataclass(frozen=True)
class Broadcast:
    """The master's state a shard needs for one step: kernel, Z, chol(K_uu) and q(u) = N(mean_u, cov_u)."""

    kernel: Kernel
    Z: np.ndarray
    chol_kuu: np.ndarray
    cov_u: np.ndarray
    mean_u: np.ndarray


def _columns(bc: Broadcast, X):
    """(a = K_uu^-1 K_uX (M, B), d = diag K_XX - diag K_Xu K_uu^-1 K_uX clipped at 0)."""
    Kux = bc.kernel(bc.Z, X)
    A = linalg.cho_solve((bc.chol_kuu, True), Kux, check_finite=False)
    d = bc.kernel.diag(X) - np.einsum("ij,ij->j", Kux, A)
    return A, np.maximum(d, 0.0)


def _cavity(A, A_old, tau, nu, bc: Broadcast):
    """Cavities of q without each stored factor (tau, nu on its old direction a_old, columns of
    A_old), seen along the current directions (columns of A) (supplement eqs. 14-15 by
    Sherman-Morrison). Returns a dict of the 1-D quantities and u-space pieces."""
    S_old = bc.cov_u @ A_old  # Sigma a_old
    v_oo = np.einsum("ij,ij->j", A_old, S_old)
    m_o = A_old.T @ bc.mean_u
    v_on = np.einsum("ij,ij->j", A, S_old)
    S_new = bc.cov_u @ A
    v_nn = np.einsum("ij,ij->j", A, S_new)
    m_n = A.T @ bc.mean_u
    denom = 1.0 - tau * v_oo
    proper = denom > 0.0
    safe = np.where(proper, denom, 1.0)
    coef = tau / safe  # Sigma^\n = Sigma + coef s_o s_o^T
    shift = (tau * m_o - nu) / safe  # mu^\n = mu + shift s_o
    var_c = v_nn + coef * v_on * v_on
    mean_c = m_n + shift * v_on
    proper &= var_c > 0.0
    # Phi(cav) - Phi(q) along a_old (module docstring), without dividing by v_oo
    log_norm_diff = -0.5 * np.log(safe) + 0.5 * (tau * m_o ** 2 - 2.0 * nu * m_o + nu ** 2 * v_oo) / safe
    return dict(mean=mean_c, var=np.where(proper, var_c, 1.0), proper=proper, S_old=S_old, S_new=S_new,
                coef=coef, shift=shift, v_on=v_on, log_norm_diff=log_norm_diff)


def refine_sites(X, y, tau, nu, A_old, rule: SiteRule, bc: Broadcast):
    """Refine the sites of points (X, y) in parallel against q (module docstring); pure.

    Returns a dict: new ``tau``, ``nu``, directions ``A`` (M, B), ``status``; the rank-one
    sums ``new_prec`` = A T_new A^T, ``new_lin`` = A nu_new and ``old_prec``, ``old_lin`` of
    the replaced factors; ``evidence`` = sum of log Z~_n at the state before refining; and the
    largest site change ``change``.
    """
    A, d = _columns(bc, X)
    cav = _cavity(A, A_old, tau, nu, bc)
    # the rule removes (tau, nu) from the marginal it is given: give it cavity x site on a_n
    post_var = 1.0 / (1.0 / cav["var"] + tau)
    post_mean = post_var * (cav["mean"] / cav["var"] + nu)
    tau_new, nu_new, log_z, status = dataclasses.replace(rule, cond_var=d).update_all(
        np.ascontiguousarray(y, dtype=np.float64), post_mean, post_var, tau, nu)
    improper = ~cav["proper"]
    keep = improper | (status == SKIPPED_CAVITY) | (status == SKIPPED_PROJECTION)
    tau_new = np.where(improper, tau, tau_new)
    nu_new = np.where(improper, nu, nu_new)
    status = np.where(improper, SKIPPED_CAVITY, status)
    A = np.where(keep[None, :], A_old, A)  # an unchanged site keeps its direction
    # a point without a proper cavity (its stored factor outweighs q along a_old) adds no term
    # to the estimate; the final log Z_q counts such points (diagnostics "n_improper_cavities")
    terms = np.where(cav["proper"], log_z + cav["log_norm_diff"], 0.0)
    change = float(np.max(np.abs(np.concatenate([tau_new - tau, nu_new - nu])), initial=0.0))
    return dict(tau=tau_new, nu=nu_new, A=A, status=status, new_prec=(A * tau_new) @ A.T, new_lin=A @ nu_new,
                old_prec=(A_old * tau) @ A_old.T, old_lin=A_old @ nu, evidence=float(np.sum(terms)),
                n_points=int(np.size(tau)), change=change)


def site_gradient(X, y, tau, nu, A_old, likelihood, bc: Broadcast):
    """The data part of eq. 4 for points (X, y) at fixed cavities (module docstring); pure.

    Returns (d/d log theta (the kernel's, K_uf and diag K_ff parts), d/dZ (M, D) (K_uf part),
    dL/dK_uu contribution (M, M, symmetric)), all sums over the points (not scaled by N/B)."""
    A, d = _columns(bc, X)
    cav = _cavity(A, A_old, tau, nu, bc)
    ok = cav["proper"]
    V = cav["var"] + d
    moments = likelihood.tilted_moments(np.asarray(y, float), cav["mean"], V)
    resid = (moments.mean - cav["mean"]) / V
    g_m = np.where(ok, resid, 0.0)
    g_V = np.where(ok, 0.5 * (resid ** 2 + (moments.var - V) / V ** 2), 0.0)
    # u-space cavity pieces: c = mu + shift s_o, S a = Sigma a + coef (a_old^T Sigma a) s_o
    c = bc.mean_u[:, None] + cav["S_old"] * cav["shift"][None, :]
    Sa = cav["S_new"] + cav["S_old"] * (cav["coef"] * cav["v_on"])[None, :]
    W = linalg.cho_solve((bc.chol_kuu, True), np.hstack([c, Sa]), check_finite=False)
    w, r = W[:, :c.shape[1]], W[:, c.shape[1]:] - A
    G_uf = w * g_m[None, :] + 2.0 * r * g_V[None, :]
    G_uu = -(A * g_m) @ w.T - (A * g_V) @ (2.0 * r + A).T
    G_uu = 0.5 * (G_uu + G_uu.T)
    M = bc.Z.shape[0]
    g_theta, g_Z, _ = covariance_vjp(bc.kernel, X, bc.Z, None, G_uf, np.zeros((M, M)), g_V)
    return g_theta, g_Z, G_uu


# -- shards and executors ----------------------------------------------------------------------------------
class SEPShard:
    """The points [start, start + n) of the data with their sites (tau, nu) and stored directions
    (module docstring); lives in the master (in-process) or on a Dask worker (an actor)."""

    def __init__(self, X, y, M: int, rule: SiteRule, master_pid: int | None = None):
        self._limits = prepare_worker(master_pid)
        self.X = as_inputs(X)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        n = self.X.shape[0]
        self.rule = rule
        self.tau = np.zeros(n)
        self.nu = np.zeros(n)
        # row j: the direction a_j site j was last fitted on (rows: a minibatch's gather is contiguous)
        self.At = np.zeros((n, M))
        self.status = np.full(n, OK, dtype=np.int64)

    def refine(self, idx, bc: Broadcast) -> dict:
        """:func:`refine_sites` on the shard's points ``idx`` (local indices), in chunks; the sites
        and directions are stored, the sums returned."""
        total = None
        for part in self._chunks(idx):
            out = refine_sites(self.X[part], self.y[part], self.tau[part], self.nu[part], self.At[part].T, self.rule,
                               bc)
            self.tau[part], self.nu[part], self.At[part], self.status[part] = (out.pop("tau"), out.pop("nu"),
                                                                                out.pop("A").T, out.pop("status"))
            if total is None:
                total = out
            else:
                for key, value in out.items():
                    total[key] = max(total[key], value) if key == "change" else total[key] + value
        return total

    def gradient(self, idx, bc: Broadcast):
        """:func:`site_gradient` summed over the shard's points ``idx``, in chunks."""
        total = None
        for part in self._chunks(idx):
            out = site_gradient(self.X[part], self.y[part], self.tau[part], self.nu[part], self.At[part].T,
                                self.rule.likelihood, bc)
            total = out if total is None else tuple(a + b for a, b in zip(total, out))
        return total

    @staticmethod
    def _chunks(idx):
        # chunks of SHARD_CHUNK points keep the (M, chunk) work arrays small: large fresh arrays per
        # call cost page faults (Dask's workers trim freed memory), and at 300,000 points two
        # workers were no faster than one without chunks (measured)
        idx = np.asarray(idx, dtype=np.int64)
        return [idx[start:start + SHARD_CHUNK] for start in range(0, idx.size, SHARD_CHUNK)]

    def aggregates(self):
        """(sum tau_j a_j a_j^T, sum nu_j a_j) over the shard: the exact re-sum of Lambda and b."""
        M = self.At.shape[1]
        prec, lin = np.zeros((M, M)), np.zeros(M)
        for start in range(0, self.At.shape[0], SHARD_CHUNK):  # no second (N, M) array
            rows, tau = self.At[start:start + SHARD_CHUNK], self.tau[start:start + SHARD_CHUNK]
            prec += rows.T @ (rows * tau[:, None])
            lin += rows.T @ self.nu[start:start + SHARD_CHUNK]
        return prec, lin

    def evidence(self, bc: Broadcast) -> tuple[float, int]:
        """(sum_j log Z~_j over the shard's points with a proper cavity at q (no refinement), the
        number of points without one)."""
        total, improper = 0.0, 0
        for start in range(0, self.X.shape[0], SHARD_CHUNK):
            sl = slice(start, start + SHARD_CHUNK)
            A, d = _columns(bc, self.X[sl])
            cav = _cavity(A, self.At[sl].T, self.tau[sl], self.nu[sl], bc)
            log_z = self.rule.likelihood.tilted_moments(self.y[sl], cav["mean"], cav["var"] + d).log_z
            total += float(np.sum(np.where(cav["proper"], log_z + cav["log_norm_diff"], 0.0)))
            improper += int(np.count_nonzero(~cav["proper"]))
        return total, improper

    def sites(self):
        return self.tau.copy(), self.nu.copy(), int(np.count_nonzero(self.status == CLIPPED))


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


def _rebuild(kernel, Z, prec, lin, jitter):
    """q(u) from K_uu and the site sums (Lambda, b) in O(M^3): returns (Broadcast, Phi(q) - Phi(p), jitter used).

    Whitened, K_uu = L L^T: precision of v = L^-1 u is P = I + L^T Lambda L, Sigma = L P^-1 L^T,
    mu = Sigma b; Phi(q) - Phi(p) = -1/2 log|P| + 1/2 b^T mu."""
    L, jitter_used = cholesky_kuu(kernel(Z), jitter)
    M = Z.shape[0]
    P = np.eye(M) + L.T @ prec @ L
    Lp = linalg.cholesky(0.5 * (P + P.T), lower=True, check_finite=False)
    B = linalg.solve_triangular(Lp, L.T, lower=True, check_finite=False)  # Sigma = B^T B
    cov = B.T @ B
    mean = cov @ lin
    norm_diff = -float(np.sum(np.log(np.diag(Lp)))) + 0.5 * float(lin @ mean)
    return Broadcast(kernel, Z, L, cov, mean), norm_diff, jitter_used


def _prior_gradient_matrix(bc: Broadcast):
    """dL/dK_uu of Phi(q) - Phi(p) at fixed factors: -1/2 (K^-1 - K^-1 (Sigma + mu mu^T) K^-1)
    (supplement eqs. 34-35)."""
    M = bc.Z.shape[0]
    Kinv = linalg.cho_solve((bc.chol_kuu, True), np.eye(M), check_finite=False)
    second = bc.cov_u + np.outer(bc.mean_u, bc.mean_u)
    Mm = Kinv - Kinv @ second @ Kinv
    return -0.5 * (0.5 * (Mm + Mm.T))


def sep_gradient(executor, parts, bc: Broadcast, scale: float):
    """Eq. 6: the gradient of log Z_q in (log theta, Z) (module docstring), data sums from the
    shards scaled by ``scale`` = N / B."""
    kernel, Z = bc.kernel, bc.Z
    results = executor.call("gradient", [(p, bc) if len(p) else None for p in parts])
    n_kernel = len(kernel.param_names)
    g_theta, g_Z, G_uu = np.zeros(n_kernel), np.zeros_like(Z), np.zeros((Z.shape[0],) * 2)
    for result in results:
        if result is not None:
            g_theta += result[0]
            g_Z += result[1]
            G_uu += result[2]
    g_theta *= scale
    g_Z *= scale
    G_uu = scale * G_uu + _prior_gradient_matrix(bc)
    # K_uu = k(Z, Z): Z is both arguments and G_uu symmetric, so dL/dZ doubles the first-argument product
    gt_uu, gz_uu = kernel.cross_vjp(Z, Z, G_uu)
    return g_theta + gt_uu, g_Z + 2.0 * gz_uu


def log_evidence(executor, n_shards: int, kernel: Kernel, Z, prec, lin, jitter=None, counts: bool = False):
    """log Z_q (supplement eq. 28) over every point at (kernel, Z) with the stored factors held fixed
    (Lambda = ``prec``, b = ``lin`` and each shard's sites and directions): the objective whose
    gradient eq. 4 is at an EP fixed point. Points without a proper cavity add nothing; with
    ``counts`` the result is (log Z_q, how many such points)."""
    bc, norm_diff, _ = _rebuild(kernel, np.asarray(Z, float), prec, lin, jitter)
    parts = executor.call("evidence", [(bc,)] * n_shards)
    value = norm_diff + sum(part[0] for part in parts)
    return (value, sum(part[1] for part in parts)) if counts else value


class SignAdaptiveSteps:
    """Paper 003's batch-mode learning rates (supplement A.6, last paragraph): one rate per
    parameter, x 1.02 while its gradient keeps its sign, x 1/2 when the sign flips; ascent
    x <- x + rate * g. The first rates make every first step ``initial_step`` long
    (rate_0 = initial_step / |g_0|), so the rule does not depend on the gradient's scale (N);
    a step is at most ``max_step`` per coordinate (the sites must follow the hyper-parameters:
    with initial_step 1e-2 and no cap, the 1.02^k growth gave a step on the 2,000-point test
    problem that threw log Z_q from -401 to -687 before it recovered)."""

    def __init__(self, size: int, initial_step: float = 1e-3, max_step: float = 0.02):
        self.initial_step, self.max_step = float(initial_step), float(max_step)
        self.rate = None
        self.previous = np.zeros(size)

    def step(self, grad) -> np.ndarray:
        grad = np.asarray(grad, float)
        if self.rate is None:
            self.rate = self.initial_step / np.maximum(np.abs(grad), 1e-12)
        else:
            self.rate = np.where(np.sign(grad) == np.sign(self.previous), 1.02 * self.rate, 0.5 * self.rate)
        self.previous = grad
        self.rate = np.minimum(self.rate, self.max_step / np.maximum(np.abs(grad), 1e-12))
        return self.rate * grad


#: hyper-parameter step rules: Adadelta (paper 003 with minibatches) and the batch-mode sign rule
STEP_RULES = {"adadelta": Adadelta, "sign": SignAdaptiveSteps}


_REFUSED = "not taken: SEP builds its own inducing-point model and learns the kernel and Z by Adadelta"


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
    step_rule: str | None = option(None, "'adadelta' or 'sign' (None: Adadelta with minibatches, sign in batch)")


def fit_sep(X, y, likelihood, kernel: Kernel, *, inducing=200, minibatch: int = 200, epochs: int = 5,
            optimise: bool = True, seed: int = 0, validation=None, client=None, projection: str = "ep",
            progress: bool = False, stop=None, callback=None, damping: float | None = None, tol: float = 1e-6,
            jitter: float | None = None, use_table: bool = True, record_every: int = 1, n_shards: int = 1,
            step_rule: str | None = None):
    """Train SEP (module docstring); returns a :class:`GPPosterior` with a :class:`SEPState`.

    ``inducing``: int M (K-means centres of X, ``seed``) or an (M, D) array of starting inducing
    inputs; ``minibatch``: points per step (>= N: batch mode, every site refined each step);
    ``epochs``: passes over the data; ``optimise``: Adadelta steps on (log theta, Z) after every
    refinement; ``damping``: default 0.99 with minibatches, 0.5 in batch mode; ``projection``:
    "ep" (moments) or "qp" (QP's W2 projection); ``client``: None (in-process, ``n_shards``
    shards), a Dask ``Client``, a scheduler address or "local" (:class:`DaskExecutor`);
    ``validation`` = (X_val, y_val) adds test error / NTLL to each recorded step of
    ``post.history``; ``stop`` (a ``threading.Event`` or a callable) and ``callback(entry)`` as
    :class:`qpviz.inference.stochastic.TrainingRecord`. ``step_rule``: "adadelta" (default with
    minibatches, paper 003 sec. 4.5) or "sign" (default in batch mode: :class:`SignAdaptiveSteps`,
    the paper's batch rule; with Adadelta's growing steps, batch SEP learning Z on the 2,000-point
    test problem oscillated after ~70 steps: log Z_q -407 -> -463, test error 8.5% -> 10.7%;
    with the sign rule it rose from -430 to -400.0 in 200 steps, with dips of at most 4 nats while
    inducing points drew close; GFITC with Z fixed: -401.3). A run stops early when no site moves
    more than ``tol`` in a batch-mode step without hyper-parameter learning (``converged=True``;
    runs with minibatches or ``optimise=True`` report ``converged=False``: they stop after ``epochs``).
    """
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
        step_rule = "adadelta" if stochastic else "sign"
    if step_rule not in STEP_RULES:
        raise ValueError(f"step_rule must be one of {sorted(STEP_RULES)}; got {step_rule!r}")
    if damping is None:
        damping = STOCHASTIC_DAMPING if stochastic else BATCH_DAMPING
    rule = SiteRule.build(projection, lik, damping, use_table=use_table)
    M = Z.shape[0]
    executor = (LocalExecutor([SEPShard(X[lo:hi], y[lo:hi], M, rule) for lo, hi in _shard_bounds(n, n_shards)])
                if client is None else DaskExecutor(client, X, y, SEPShard, M, rule))
    try:
        return _train(executor, executor.bounds if client is not None else _shard_bounds(n, n_shards), X, y, lik,
                      kernel, Z, rule, minibatch, epochs, optimise, seed, validation, progress, stop, callback, tol,
                      jitter, record_every, stochastic, projection, step_rule)
    finally:
        executor.close()


def _train(executor, bounds, X, y, lik, kernel, Z, rule, minibatch, epochs, optimise, seed, validation, progress,
           stop, callback, tol, jitter, record_every, stochastic, projection, step_rule):
    n = X.shape[0]
    M, D = Z.shape
    rng = np.random.default_rng(seed)
    prec, lin = np.zeros((M, M)), np.zeros(M)
    bc, norm_diff, jitter_used = _rebuild(kernel, Z, prec, lin, jitter)
    n_kernel = len(kernel.param_names)
    stepper = STEP_RULES[step_rule](n_kernel + M * D)
    per_epoch = steps_per_epoch(n, minibatch)
    record = TrainingRecord(epochs * per_epoch, label="SEP", validation=validation, every=record_every,
                            stop=stop, callback=callback, progress=progress)
    state = {"bc": bc, "jitter": jitter_used}

    def posterior(log_evidence=float("nan"), converged=False, n_steps=0, extra=None):
        bc = state["bc"]
        model = SEPModel(bc.kernel, bc.Z, X, state["jitter"])
        tau, nu, n_clipped = (np.zeros(0), np.zeros(0), 0) if extra is None else extra
        return GPPosterior("sep", lik, X, y, SEPState(model, bc.chol_kuu, bc.mean_u, bc.cov_u, tau, nu), log_evidence,
                           converged, n_steps, record.history,
                           dict(n_clipped=n_clipped, inducing=bc.Z, M=M, jitter=state["jitter"], projection=projection,
                                minibatch=minibatch, stochastic=stochastic, damping=rule.damping,
                                step_rule=step_rule,
                                hyperparameters=dict(bc.kernel.params)))

    def evaluate(X_val, y_val):
        with small_problem_threads(max(len(y_val), M)):
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
                results = executor.call("refine", [(p, state["bc"]) if len(p) else None for p in parts])
                used = [r for r in results if r is not None]
                evidence = norm_diff + n / len(batch) * sum(r["evidence"] for r in used)
                change = max(r["change"] for r in used)
                if len(batch) == n:  # every site refined: the sums afresh, no running differences
                    prec = sum(r["new_prec"] for r in used)
                    lin = sum(r["new_lin"] for r in used)
                else:
                    prec = prec + sum(r["new_prec"] - r["old_prec"] for r in used)
                    lin = lin + sum(r["new_lin"] - r["old_lin"] for r in used)
                bc, norm_diff, state["jitter"] = _rebuild(bc.kernel, bc.Z, prec, lin, jitter)
                state["bc"] = bc
                if optimise:
                    g_theta, g_Z = sep_gradient(executor, parts, bc, n / len(batch))
                    theta = np.concatenate([bc.kernel.log_params(), bc.Z.ravel()])
                    theta = theta + stepper.step(np.concatenate([g_theta, g_Z.ravel()]))
                    bc, norm_diff, state["jitter"] = _rebuild(bc.kernel.with_log_params(theta[:n_kernel]),
                                                              theta[n_kernel:].reshape(M, D), prec, lin, jitter)
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
            bc, norm_diff, state["jitter"] = _rebuild(bc.kernel, bc.Z, prec, lin, jitter)
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
                            dashboard_link=getattr(executor, "dashboard_link", None), n_improper_cavities=improper)
    return post
