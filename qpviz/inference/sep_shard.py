"""SEP's per-point work (:mod:`.sep`, whose docstring has the model and the formulas): the cavities of
a shard's points, their site refinement, their part of the evidence and of the gradient, and
:class:`SEPShard`, the object an executor (:mod:`.distributed`) holds per shard of the data.

All of it is a pure function of a shard's points, their sites (tau_n, nu_n) with the directions
a_n^old they were fitted on, and the master's :class:`Broadcast`. Power EP (``alpha`` < 1,
:mod:`.sites` steps 1'-4'): a cavity removes alpha of a stored factor, the likelihood is the
tempered one (the rule's), and the evidence and gradient terms of a point carry 1/alpha; alpha = 1
multiplies and divides by 1.0 exactly (EP, bit for bit).

One pass (:func:`refine_sites` with ``gradient=True``) computes the kernel columns and the cavities
once and returns both the refined sites and the gradient terms at the cavities it started from.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from qpviz._blas import small_problem_threads, syrk_update_lower
from qpviz.inference.distributed import prepare_worker
from qpviz.inference.sites import CLIPPED, OK, SKIPPED_CAVITY, SKIPPED_PROJECTION, SiteRule, gaussian_power
from qpviz.inference.sites import power_gaussian_moments_numpy
from qpviz.kernels import Kernel, as_inputs

__all__ = ["Broadcast", "refine_sites", "site_gradient", "SEPShard", "SHARD_CHUNK"]

#: points per piece of a shard's work (:meth:`SEPShard.refine`, :meth:`SEPShard.gradient`, :meth:`SEPShard.evidence`)
SHARD_CHUNK = 2048
#: The smallest cavity variance along a_n handed to the site rule (which takes 1 / var): below it
#: 1 / var overflows. Flooring there changes neither the f-cavity's variance var + d_n (d_n >> 1e-284)
#: nor the site's effect on q (a_n tau_n a_n^T with |a_n|^2 of the order of var).
TINY_VAR = 1e-300


@dataclasses.dataclass(frozen=True)
class Broadcast:
    """The master's state a shard needs for one step: kernel, Z, chol(K_uu), q(u) = N(mean_u, cov_u),
    the site sums' precision Lambda (``prec``) and its whitened half L^T Lambda (``whitened_prec``,
    K_uu = L L^T), K_uu^-1 mean_u (the gradient's u-space pieces by products, not solves). q's
    covariance is a square root, cov_u = R^T R with R = L_P^-1 L^T (P = L_P L_P^T as in
    :func:`.sep._rebuild`): a step needs only quadratic forms a^T cov_u a' = (R a)^T (R a'), so
    neither cov_u nor R is formed per step (:attr:`cov_u`, :attr:`cov_root`: on demand, predictions).
    For the current columns a = L^-T h (h = L^-1 k_u), R a = L_P^-1 h and K_uu^-1 cov_u a =
    (K_uu^-1 R^T) (R a): two triangular products (BLAS dtrmm, ~0.6 of a general product's time at
    M = B = 200, measured) with ``root_solve`` = L_P^-1 (lower) and ``kinv_root`` = K_uu^-1 R^T =
    L^-T L_P^-T (upper), Fortran-ordered for BLAS as ``chol_kuu``; stored directions a_old by
    :meth:`root_times`. ``kuu``: K_uu without jitter
    when the master computed it this step (its gradient's vector-Jacobian product reuses it,
    :func:`.sep._chain`), else None; the master's own: not pickled to the shards."""

    kernel: Kernel
    Z: np.ndarray
    chol_kuu: np.ndarray
    mean_u: np.ndarray
    prec: np.ndarray
    whitened_prec: np.ndarray
    kinv_mean: np.ndarray
    root_solve: np.ndarray
    kinv_root: np.ndarray
    kuu: np.ndarray | None = None

    def __getstate__(self):
        return dict(self.__dict__, kuu=None)  # (shards never read K_uu: M^2 numbers less per step to Dask)

    def root_times(self, A) -> np.ndarray:
        """R A = L_P^-1 (L^T A): two triangular products (0.32 ms at M = B = 200 against 0.26 for a
        general product with R, measured; R itself, a product on the master each step, is saved)."""
        return blas.dtrmm(1.0, self.root_solve, blas.dtrmm(1.0, self.chol_kuu, A, lower=1, trans_a=1), lower=1,
                          overwrite_b=1)

    @functools.cached_property
    def cov_root(self) -> np.ndarray:
        """R = L_P^-1 L^T, q's covariance root (C-ordered: the transpose of BLAS's R^T = L L_P^-T)."""
        return blas.dtrmm(1.0, self.root_solve, self.chol_kuu, side=1, lower=1, trans_a=1).T

    @functools.cached_property
    def cov_u(self) -> np.ndarray:
        """q(u)'s covariance R^T R (exactly symmetric)."""
        return self.cov_root.T @ self.cov_root

    @functools.cached_property
    def kinv_cov(self) -> np.ndarray:
        """K_uu^-1 cov_u = (K_uu^-1 R^T) R (one triangular product; on demand: no step needs it)."""
        return blas.dtrmm(1.0, self.kinv_root, self.cov_root, lower=0)


def _columns(bc: Broadcast, X):
    """(a = K_uu^-1 K_uX (M, B), d = diag K_XX - diag K_Xu K_uu^-1 K_uX clipped at 0, R a (M, B): the
    columns' products with q's covariance root, :class:`Broadcast`; K_uX, which the gradient's
    vector-Jacobian product reuses)."""
    Kux = bc.kernel(bc.Z, X)
    # half = L^-1 K_uX as half^T = K_Xu L^-T: BLAS's right-side solve with L^T on K_uX's C-ordered numbers
    # (~0.8 of the left-side solve's time at M = B = 200, measured; the other side and layouts: 1.2-1.3x)
    half = blas.dtrsm(1.0, bc.chol_kuu, Kux.T, side=1, lower=1, trans_a=1).T
    d = bc.kernel.diag(X) - np.einsum("ij,ij->j", half, half)
    A = blas.dtrsm(1.0, bc.chol_kuu, half, lower=1, trans_a=1)
    return A, np.maximum(d, 0.0), blas.dtrmm(1.0, bc.root_solve, half, lower=1), Kux


def _live_product(product, A_old, live):
    """product(A_old) on the columns of live sites, zeros elsewhere (no copies when all or none are live)."""
    if live.all():
        return product(A_old)
    out = np.zeros_like(A_old)
    if live.any():
        out[:, live] = product(A_old[:, live])
    return out


def _weighted_gram(A, w):
    """A diag(w) A^T, by the symmetric product (C C^T, C = A diag(sqrt w): BLAS dsyrk, ~2/3 of a general
    product's time at M = B = 200, measured) when w >= 0, as the site rule keeps tau."""
    if np.all(w >= 0.0):
        C = A * np.sqrt(w)
        return C @ C.T
    return (A * w) @ A.T


def _cavity(A, R_new, A_old, tau, nu, bc: Broadcast, alpha: float, d):
    """Cavities of q without alpha of each stored factor (tau, nu on its old direction a_old, columns
    of A_old), seen along the current directions (columns of A; ``R_new`` = R A, :func:`_columns`) (supplement eqs. 14-15 by
    Sherman-Morrison). Sites that carry nothing (tau = nu = 0: not visited yet) need no product
    with their old direction. Returns a dict of the 1-D quantities and u-space pieces.

    A cavity is proper when its variance along a_n is >= 0 and the f-cavity's, var + d_n, is > 0: a
    point far from every inducing input has a_n ~ 0 and var ~ 0 (it underflows on the 64-D digits),
    yet its f-cavity N(mean, d_n) is a proper distribution whose log Z~_n belongs to log Z_q."""
    tau_a, nu_a = alpha * tau, alpha * nu
    live = (tau != 0.0) | (nu != 0.0)
    if live.any():  # a^T Sigma a' = (R a)^T (R a')
        R_old = _live_product(bc.root_times, A_old, live)
        v_oo = np.einsum("ij,ij->j", R_old, R_old)
        m_o = A_old.T @ bc.mean_u
        v_on = np.einsum("ij,ij->j", R_new, R_old)
    else:  # no stored factor to remove (a_old^T mu is then multiplied by tau = nu = 0 only)
        v_oo = m_o = v_on = np.zeros(A.shape[1])
    v_nn = np.einsum("ij,ij->j", R_new, R_new)
    m_n = A.T @ bc.mean_u
    denom = 1.0 - tau_a * v_oo
    proper = denom > 0.0
    safe = np.where(proper, denom, 1.0)
    coef = tau_a / safe  # Sigma^\n = Sigma + coef s_o s_o^T
    shift = (tau_a * m_o - nu_a) / safe  # mu^\n = mu + shift s_o
    var_c = v_nn + coef * v_on * v_on
    mean_c = m_n + shift * v_on
    proper &= (var_c >= 0.0) & (var_c + d > 0.0)
    # Phi(cav) - Phi(q) along a_old (module docstring of .sep), without dividing by v_oo
    log_norm_diff = -0.5 * np.log(safe) + 0.5 * (tau_a * m_o ** 2 - 2.0 * nu_a * m_o + nu_a ** 2 * v_oo) / safe
    return dict(mean=mean_c, var=np.where(proper, var_c, 1.0), proper=proper, live=live, R_new=R_new,
                R_old=R_old if live.any() else None, coef=coef, shift=shift, v_on=v_on, log_norm_diff=log_norm_diff)


def _tilted(likelihood, y, mean, var):
    """(log Z~, mean, var) of the (tempered) tilted distribution p(y|f)^alpha N(f | mean, var)."""
    if gaussian_power(likelihood):
        return power_gaussian_moments_numpy(likelihood, y, mean, var)
    moments = likelihood.tilted_moments(y, mean, var)
    return moments.log_z, moments.mean, moments.var


def _gradient_terms(X, y, A, Kux, d, cav, likelihood, bc: Broadcast):
    """The data part of eq. 4 at fixed cavities (module docstring of .sep): (d/d log theta,
    d/dZ (M, D), dL/dK_uu contribution (M, M; its symmetric part counts, formed once by the master,
    :func:`.sep._chain`)), sums over the points. ``Kux`` = K(Z, X) (:func:`_columns`)."""
    alpha = likelihood.alpha
    ok = cav["proper"]
    V = cav["var"] + d
    _, mean_f, var_f = _tilted(likelihood, np.asarray(y, float), cav["mean"], V)
    resid = (mean_f - cav["mean"]) / V
    g_m = np.where(ok, resid, 0.0) / alpha
    g_V = np.where(ok, 0.5 * (resid ** 2 + (var_f - V) / V ** 2), 0.0) / alpha
    # u-space cavity pieces: c = mu + shift s_o, S a = Sigma a + coef (a_old^T Sigma a) s_o, so
    # K^-1 c = K^-1 mu + shift K^-1 Sigma a_old and K^-1 S a = K^-1 Sigma a + coef v_on K^-1 Sigma a_old;
    # with K^-1 Sigma = (K^-1 R^T) R (Broadcast) the columns' K^-1 Sigma terms of
    # G_uf = w g_m + 2 g_V (K^-1 S a - a) are one triangular product of R a and R a_old weighted:
    # G_uf = kinv_root (R a (2 g_V) + R a_old (shift g_m + 2 g_V coef v_on)) + K^-1 mu g_m - 2 g_V a
    two_g_V = 2.0 * g_V
    weighted = cav["R_new"] * two_g_V
    if cav["live"].any():  # (sites not visited yet carry no factor: no a_old terms)
        weighted += cav["R_old"] * (cav["shift"] * g_m + two_g_V * cav["coef"] * cav["v_on"])
    G_uf = blas.dtrmm(1.0, bc.kinv_root, weighted, lower=0, overwrite_b=1)  # (Fortran-ordered: BLAS works in place)
    G_uf = blas.dger(1.0, bc.kinv_mean, g_m, a=G_uf, overwrite_a=1)
    A_g_V = A * g_V
    G_uf -= A_g_V  # (G_uf + A g_V, for G_uu; G_uf itself once more A g_V less)
    # -(A g_m) w^T - (A g_V) (2 r + A)^T = -A (G_uf + A g_V)^T in one product; symmetrised by the master
    # (:func:`.sep._chain`, once for the sum of all shards)
    G_uu = blas.dgemm(-1.0, A, G_uf, trans_b=1)
    G_uf -= A_g_V
    # K_uf and diag K_ff only: the K_uu part of the gradient is the master's (one product for all shards)
    g_theta, g_Z = bc.kernel.cross_vjp(bc.Z, X, G_uf, K=Kux)
    return g_theta + bc.kernel.diag_vjp(X, g_V)[0], g_Z, G_uu


def refine_sites(X, y, tau, nu, A_old, rule: SiteRule, bc: Broadcast, gradient: bool = False):
    """Refine the sites of points (X, y) in parallel against q (module docstring of .sep); pure.

    Returns a dict: new ``tau``, ``nu``, directions ``A`` (M, B), ``status``; the rank-one
    sums ``new_prec`` = A T_new A^T, ``new_lin`` = A nu_new and ``old_prec``, ``old_lin`` of
    the replaced factors; ``evidence`` = sum of log Z~_n at the state before refining; the
    largest site change ``change``; with ``gradient``, ``gradient`` = :func:`site_gradient`'s
    terms at the cavities of the state before refining (the same columns and cavities).
    """
    alpha = rule.power
    A, d, R_new, Kux = _columns(bc, X)
    cav = _cavity(A, R_new, A_old, tau, nu, bc, alpha, d)
    # the rule removes alpha (tau, nu) from the marginal it is given: give it cavity x alpha site on a_n.
    # It works in precisions (1 / var), so var is floored where 1 / var would overflow (see TINY_VAR)
    cav_var = np.maximum(cav["var"], TINY_VAR)
    post_var = 1.0 / (1.0 / cav_var + alpha * tau)
    post_mean = post_var * (cav["mean"] / cav_var + alpha * nu)
    tau_new, nu_new, log_z, status = dataclasses.replace(rule, cond_var=d).update_all(
        np.ascontiguousarray(y, dtype=np.float64), post_mean, post_var, tau, nu)
    improper = ~cav["proper"]
    keep = improper | (status == SKIPPED_CAVITY) | (status == SKIPPED_PROJECTION)
    tau_new = np.where(improper, tau, tau_new)
    nu_new = np.where(improper, nu, nu_new)
    status = np.where(improper, SKIPPED_CAVITY, status)
    A_new = np.where(keep[None, :], A_old, A) if keep.any() else A  # an unchanged site keeps its direction
    # a point without a proper cavity (its stored factor outweighs q along a_old) adds no term
    # to the estimate; the final log Z_q counts such points (diagnostics "n_improper_cavities")
    terms = np.where(cav["proper"], log_z + cav["log_norm_diff"], 0.0) / alpha
    change = float(np.max(np.abs(np.concatenate([tau_new - tau, nu_new - nu])), initial=0.0))
    live = cav["live"]
    old = A_old if live.all() else A_old[:, live]
    out = dict(tau=tau_new, nu=nu_new, A=A_new, status=status, new_prec=_weighted_gram(A_new, tau_new),
               new_lin=A_new @ nu_new, old_prec=_weighted_gram(old, tau[live]), old_lin=old @ nu[live],
               evidence=float(np.sum(terms)), n_points=int(np.size(tau)), change=change)
    if gradient:
        out["gradient"] = _gradient_terms(X, y, A, Kux, d, cav, rule.likelihood, bc)
    return out


def site_gradient(X, y, tau, nu, A_old, likelihood, bc: Broadcast):
    """The data part of eq. 4 for points (X, y) at fixed cavities (module docstring of .sep); pure.

    Returns (d/d log theta (the kernel's, K_uf and diag K_ff parts), d/dZ (M, D) (K_uf part),
    dL/dK_uu contribution (M, M; only its symmetric part counts)), all sums over the points (not scaled by N/B)."""
    A, d, R_new, Kux = _columns(bc, X)
    return _gradient_terms(X, y, A, Kux, d, _cavity(A, R_new, A_old, tau, nu, bc, likelihood.alpha, d), likelihood, bc)


def _add(total, out):
    """Sum two of :meth:`SEPShard.refine`'s dicts (``change``: the larger)."""
    if total is None:
        return out
    for key, value in out.items():
        if key == "change":
            total[key] = max(total[key], value)
        elif key == "gradient":
            total[key] = tuple(a + b for a, b in zip(total[key], value))
        else:
            total[key] = total[key] + value
    return total


class SEPShard:
    """The points [start, start + n) of the data with their sites (tau, nu) and stored directions
    (module docstring of .sep); lives in the master (in-process) or on a Dask worker (an actor)."""

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
        self.fitted = np.zeros(n, dtype=np.int64)  # the step each site was last refined at (0: never)

    def refine(self, idx, bc: Broadcast, gradient: bool = False, step: int = 0) -> dict:
        """:func:`refine_sites` on the shard's points ``idx`` (local indices), in chunks; the sites
        and directions are stored (with ``step``, the step that refined them), the sums returned."""
        self.fitted[np.asarray(idx, dtype=np.int64)] = step
        total = None
        for part in self._chunks(idx):
            out = refine_sites(self.X[part], self.y[part], self.tau[part], self.nu[part],
                               self.At[part].T, self.rule, bc, gradient)
            self.tau[part], self.nu[part], self.At[part], self.status[part] = (out.pop("tau"), out.pop("nu"),
                                                                                out.pop("A").T, out.pop("status"))
            total = _add(total, out)
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
        """(sum tau_j a_j a_j^T, sum nu_j a_j) over the shard: the exact re-sum of Lambda and b (one
        BLAS thread: O(N M^2) in chunks, by dsyrk on sqrt(tau_j) a_j, since the site rule keeps tau >= 0)."""
        M = self.At.shape[1]
        prec, lin = np.zeros((M, M)), np.zeros(M)
        with small_problem_threads(M):
            for start in range(0, self.At.shape[0], SHARD_CHUNK):  # no second (N, M) array
                rows, tau = self.At[start:start + SHARD_CHUNK], self.tau[start:start + SHARD_CHUNK]
                if np.all(tau >= 0.0):
                    syrk_update_lower(prec, np.ascontiguousarray(rows * np.sqrt(tau)[:, None]), 1.0)
                else:  # (a rule without the non-negative precision clip)
                    prec += np.tril(rows.T @ (rows * tau[:, None]))
                lin += rows.T @ self.nu[start:start + SHARD_CHUNK]
        return np.tril(prec) + np.tril(prec, -1).T, lin

    def evidence(self, bc: Broadcast) -> tuple[float, int]:
        """(sum_j log Z~_j over the shard's points with a proper cavity at q (no refinement), the
        number of points without one)."""
        total, improper = 0.0, 0
        likelihood = self.rule.likelihood
        alpha = likelihood.alpha
        for start in range(0, self.X.shape[0], SHARD_CHUNK):
            sl = slice(start, start + SHARD_CHUNK)
            A, d, R_new, _ = _columns(bc, self.X[sl])
            cav = _cavity(A, R_new, self.At[sl].T, self.tau[sl], self.nu[sl], bc, alpha, d)
            log_z = _tilted(likelihood, self.y[sl], cav["mean"], cav["var"] + d)[0]
            total += float(np.sum(np.where(cav["proper"], log_z + cav["log_norm_diff"], 0.0))) / alpha
            improper += int(np.count_nonzero(~cav["proper"]))
        return total, improper

    def drop(self, until: int):
        """Forget the sites refined at steps 1..``until`` (:mod:`.sep_refresh`): no factor, as before
        their first visit."""
        stale = (self.fitted > 0) & (self.fitted <= until)
        self.tau[stale] = 0.0
        self.nu[stale] = 0.0

    def sites(self):
        return self.tau.copy(), self.nu.copy(), int(np.count_nonzero(self.status == CLIPPED))
