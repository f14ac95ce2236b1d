"""Site updates shared by EP and QP (numba kernels; QP paper eqs. 5-7, Algorithm 1).

One site update, given the current posterior marginal N(post_mean, post_var) and the site
(tau_i, nu_i) in natural parameters:

1. cavity (Alg. 1 line 5): tau_c = 1/post_var - tau_i, nu_c = post_mean/post_var - nu_i;
2. project the tilted distribution p(y_i|f) N(f | nu_c/tau_c, 1/tau_c) / Z_i (lines 6-10):
   EP takes its mean and variance (eq. 5); QP the same mean and variance sigma_QP^2 (eq. 7);
3. new site (eq. 6): tau_hat = 1/var - tau_c, nu_hat = mean/var - nu_c;
4. damping in natural parameters: tau_i <- (1 - d) tau_i + d tau_hat (same for nu; d = 1 is
   the undamped update);
5. negative site precision rule (as GPML's infEP): a damped tau_i < 0 is set to 0 (the site
   then carries no precision; nu_i keeps its damped value) and counted as ``CLIPPED``; a
   cavity with tau_c <= 0 or a non-finite projection leaves the site unchanged, counted as
   ``SKIPPED_CAVITY`` / ``SKIPPED_PROJECTION``.

**Power EP and sparse priors** (paper 001, "Power EP"; Bui, Yan and Turner 2017, JMLR 18(104)).
The same rule runs Power EP with power alpha = ``likelihood.alpha`` (a likelihood
``tempered(alpha)``, p(y|f)^alpha) on sites t_i(h_i) of a variable h_i whose latent value is
f_i = h_i + e_i, e_i ~ N(0, d_i) independent of everything else (``cond_var`` d_i: the prior's
conditional variance of f_i given the inducing values, :class:`qpviz.inference.sparse_prior.SparsePrior`;
zero, i.e. h_i = f_i, for the dense prior). With post_mean / post_var the marginal of h_i:

1'. cavity: a fraction alpha of the site is removed, tau_c = 1/post_var - alpha tau_i,
    nu_c = post_mean/post_var - alpha nu_i;  m = nu_c/tau_c, v = 1/tau_c;
2'. the tilted distribution of f_i, p(y_i|f)^alpha N(f | m, v + d_i) / Z~_i, is projected as in
    step 2 (mean mu_f; variance s_f^2 by moments or by W2);
3'. the projection is carried to h_i through the exact Gaussian conditional of h_i given f_i
    (rho = v / (v + d_i): mu_h = m + rho (mu_f - m), s_h^2 = v (1 - rho) + rho^2 s_f^2); the new
    site solves alpha tau_hat = 1/s_h^2 - tau_c, alpha nu_hat = mu_h/s_h^2 - nu_c. Computed without
    cancellation: the f-site (tau_f, nu_f) of step 3 with cavity variance v + d_i, smoothed by
    the noise e_i, alpha tau_hat = tau_f / (1 + d_i tau_f), alpha nu_hat = nu_f / (1 + d_i tau_f)
    (int N(f | h, d) exp(-tau_f f^2/2 + nu_f f) df; 1 + d_i tau_f > 0 whenever s_f^2 > 0);
4'. damping and the negative-precision rule as in steps 4-5.

With alpha = 1 and d_i = 0 these are steps 1-5 operation for operation (the dense engine's
results are unchanged bit for bit). QP keeps EP's mean and, since s_h^2 grows with s_f^2,
gives an h-variance <= EP's at every projection. The tempered tilted moments come from the
checked Gauss-Hermite rule of :mod:`qpviz.tilted.hermite` where it is accurate, else from the
quadrature (closed forms are for alpha = 1), except for a likelihood whose tilted distributions
are Gaussian (``gaussian_tilted``): p(y|f)^alpha is then exp(alpha (-tau_p f^2/2 + nu_p f + c0))
with (tau_p, nu_p, c0) read off its own closed-form moments, and the tempered tilted
distribution is Gaussian in closed form (:func:`power_gaussian_moments`; VFE's limit alpha -> 0
needs it: log Z~ = O(alpha) is divided by alpha in the evidence).

The QP variance comes from the lookup tables (``qpviz.tables.qp_var_scalar``) where they
cover the query, from the checked Gauss-Hermite rule (:func:`qpviz.tilted.hermite.hermite_qp_std`;
narrow cavities, below the tables' range) where it is accurate, and from the direct integral
``qpviz.tilted.qp_std_scalar`` otherwise.

EP with a likelihood whose numba ``moments`` kernel covers every input (``closed`` below: probit,
step, gaussian, Poisson-square) needs neither the adaptive quadrature nor the tables. The
kernels take ``closed`` as an argument that their thin entry points (``*_closed`` /
``*_general``) pass as a constant, so numba types it as a literal; the two helpers
:func:`tilted_moments_of` and :func:`projection_of` are overloaded on that literal, so the
closed variant is compiled without them: a first EP fit on a cold numba cache compiles in
seconds, not the ~10 s the quadrature and table code take. (``numba.literally`` would do the
same at a cost of milliseconds per call.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit, types
from numba.extending import overload

from qpviz._jit import HANDLE_ALPHA, lk_moments, untempered
from qpviz.config import NUMBA_OPTIONS
from qpviz.tables import jit_data as _table_jit_data
from qpviz.tables import qp_var_scalar as _table_qp_var
from qpviz.tables.lookup import table_log_ratio
from qpviz.tilted import qp_std_scalar, tilted_moments_scalar
from qpviz.tilted.hermite import hermite_moments, hermite_projection


__all__ = ["EP", "QP", "OK", "CLIPPED", "SKIPPED_CAVITY", "SKIPPED_PROJECTION", "SiteRule", "site_step", "site_step_packed",
           "power_site_step", "site_natural", "parallel_site_updates", "cavity_log_z", "power_gaussian_moments",
           "power_gaussian_moments_numpy", "NO_COND_VAR"]

EP = 0
QP = 1
METHOD_CODES = {"ep": EP, "qp": QP}

#: status codes of one site update
OK = 0
CLIPPED = 1
SKIPPED_CAVITY = 2
SKIPPED_PROJECTION = 3

#: ``cond_var`` of a rule whose sites sit on f itself (d_i = 0 for every site: the dense prior)
NO_COND_VAR = np.empty(0)
# The slots of a rule packed for numba (:attr:`SiteRule.jit`, read by :func:`site_step_packed`)
RULE_METHOD = 0  #: EP or QP
RULE_HANDLE = 1  #: the likelihood's numba handle (:mod:`qpviz._jit`)
RULE_DAMPING = 2  #: damping in (0, 1]
RULE_COEF = 3  #: the QP table's coefficients (empty without a table)
RULE_META = 4  #: the QP table's layout (empty without a table)


def _base(likelihood):
    """The likelihood a tempered one raises to its power (itself when not tempered)."""
    return getattr(likelihood, "base", likelihood)


def gaussian_power(likelihood) -> bool:
    """A tempered likelihood whose base has Gaussian tilted distributions (module docstring)."""
    return likelihood.alpha != 1.0 and _base(likelihood).gaussian_tilted


def closed_form_moments(likelihood) -> bool:
    """Whether the likelihood's numba kernels give its tilted moments in closed form for every
    input (not tempered, or tempered with Gaussian tilted distributions): then EP needs neither
    the quadrature nor the tables."""
    jit = likelihood.jit
    return (jit is not None and jit.complete_moments
            and (likelihood.alpha == 1.0 or _base(likelihood).gaussian_tilted))


@dataclass(frozen=True)
class SiteRule:
    """Everything a site update needs: projection, likelihood, damping, tables.

    Pickleable (site updates may run in other processes): it holds plain data and the likelihood;
    the likelihood's numba handle (this process's kernel addresses, meaningless in another) is looked up
    where the rule is used (:attr:`handle`).
    """

    method_code: int
    damping: float
    coef: np.ndarray
    meta: np.ndarray
    likelihood: object
    use_table: bool
    #: d_i per site (module docstring, Power EP); empty for d = 0 (the dense prior)
    cond_var: np.ndarray = field(default_factory=lambda: NO_COND_VAR)

    @property
    def handle(self):
        """The likelihood's numba handle (:mod:`qpviz._jit`), or None without jitted kernels."""
        return self.likelihood.jit_handle()

    @property
    def power(self) -> float:
        """Power EP's alpha (the likelihood's; 1 = EP). The numba kernels read it from the handle."""
        return self.likelihood.alpha

    @classmethod
    def build(cls, method: str, likelihood, damping: float, use_table: bool = True, cond_var=None) -> "SiteRule":
        """The rule of ``method`` ("ep" or "qp") for ``likelihood`` (tempered: Power EP), with
        ``cond_var`` d_i >= 0 per site for sites on h_i = f_i - e_i (None: d = 0)."""
        if method not in METHOD_CODES:
            raise ValueError(f"site projection must be one of {sorted(METHOD_CODES)}, got {method!r}")
        if not (0.0 < damping <= 1.0):
            raise ValueError(f"damping must be in (0, 1] (1 = undamped); got {damping!r}")
        if cond_var is None:
            cond_var = NO_COND_VAR
        else:
            cond_var = np.ascontiguousarray(cond_var, dtype=np.float64)
            if cond_var.ndim != 1 or not np.all(cond_var >= 0.0):
                raise ValueError("cond_var must be a 1-D array of conditional variances d_i >= 0")
        if method == "qp" and _base(likelihood).gaussian_tilted:
            method = "ep"  # Gaussian tilted: QP = EP exactly (Theorem 2), as qpviz.project; no quadrature
        coef = meta = np.empty(0)
        if method == "qp" and use_table:
            coef, meta = _table_jit_data(likelihood)
        return cls(METHOD_CODES[method], float(damping), np.ascontiguousarray(coef, dtype=np.float64),
                   np.ascontiguousarray(meta, dtype=np.float64), likelihood, bool(use_table), cond_var)

    @property
    def jit(self):
        """The rule as one opaque tuple for numba code (:func:`site_step_packed`), or None when the
        likelihood has no jitted kernels (then use :meth:`step`)."""
        handle = self.handle
        if handle is None:
            return None
        return (self.method_code, handle, self.damping, self.coef, self.meta)  # the RULE_* slots

    @property
    def closed(self) -> bool:
        """EP with moments in closed form for every input: the kernels' variant without the
        quadrature and the tables (module docstring)."""
        return self.method_code == EP and closed_form_moments(self.likelihood)

    def update_all(self, y, post_mean, post_var, tau, nu):
        """Every site from the same posterior marginals (parallel EP / QP): the numba kernel
        :func:`parallel_site_updates`, or :meth:`step` without numba kernels. Returns
        (tau_new, nu_new, log_z, status) arrays."""
        packed = self.jit
        if packed is None:
            return self.step(y, post_mean, post_var, tau, nu, self.cond_var if self.cond_var.size else None)
        n = post_mean.shape[0]
        tau_out, nu_out, log_z = np.empty(n), np.empty(n), np.empty(n)
        status = np.zeros(n, dtype=np.int64)
        method, handle, damping, coef, meta = packed
        kernel = parallel_site_updates_closed if self.closed else parallel_site_updates_general
        kernel(post_mean, post_var, tau, nu, y, self.cond_var, method, handle, damping, coef, meta, tau_out, nu_out,
               log_z, status)
        return tau_out, nu_out, log_z, status

    def step(self, y, post_mean, post_var, tau, nu, cond_var=None):
        """:func:`power_site_step` on NumPy arrays (broadcast), through the likelihood's Python API:
        returns (tau_new, nu_new, log_z, status) arrays. ``cond_var``: d_i of these sites (None:
        zero). With d_i > 0 step 3' is evaluated literally (rho, mu_h, s_h^2), a reference for
        the numba kernels' cancellation-free form."""
        from qpviz.projection import qp_variance, site_natural_params

        y, post_mean, post_var, tau, nu = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in
                                                                (y, post_mean, post_var, tau, nu)))
        alpha = self.power
        tau_c = 1.0 / post_var - alpha * tau  # alpha = 1: exactly 1/post_var - tau
        nu_c = post_mean / post_var - alpha * nu
        good_cavity = (tau_c > 0.0) & np.isfinite(nu_c)
        safe_tau_c = np.where(good_cavity, tau_c, 1.0)
        m = np.where(good_cavity, nu_c / safe_tau_c, 0.0)
        v = 1.0 / safe_tau_c
        blurred = cond_var is not None and np.any(np.asarray(cond_var) != 0.0)
        v_f = v + np.asarray(cond_var, dtype=np.float64) if blurred else v  # the f-cavity's variance
        if gaussian_power(self.likelihood):
            log_z, mean, var = power_gaussian_moments_numpy(self.likelihood, y, m, v_f)
        else:
            moments = self.likelihood.tilted_moments(y, m, v_f)
            log_z, mean, var = moments.log_z, moments.mean, moments.var
        if self.method_code == QP:
            var = np.minimum(qp_variance(self.likelihood, y, m, v_f, use_table=self.use_table), var)
        good = good_cavity & (var > 0.0) & np.isfinite(mean) & np.isfinite(var)
        if blurred:  # step 3': carry (mean, var) of f to h through h | f
            rho = v / v_f
            mean = m + rho * (mean - m)
            var = v * (1.0 - rho) + rho * rho * var
        site_tau, site_nu = site_natural_params(m, v, mean, np.where(good, var, 1.0))
        if alpha != 1.0:
            site_tau, site_nu = site_tau / alpha, site_nu / alpha
        d = self.damping
        tau_new = (1.0 - d) * tau + d * site_tau
        nu_new = (1.0 - d) * nu + d * site_nu
        clipped = good & (tau_new < 0.0)
        status = np.where(~good_cavity, SKIPPED_CAVITY, np.where(~good, SKIPPED_PROJECTION,
                                                                 np.where(clipped, CLIPPED, OK)))
        tau_out = np.where(good, np.where(clipped, 0.0, tau_new), tau)
        nu_out = np.where(good, nu_new, nu)
        return tau_out, nu_out, np.where(good_cavity, log_z, np.nan), status.astype(np.int64)


def tilted_moments_of(lk, y, m, v, closed):
    """(log Z, mean, var) of the tilted distribution: the likelihood's closed form when ``closed``
    is the literal True (NaN where it has none), else the closed form where there is one, the
    checked Gauss-Hermite rule (:func:`qpviz.tilted.hermite.hermite_moments`) where it is accurate
    (nearly Gaussian tilted distributions: narrow cavities, tempered or not), and the adaptive
    quadrature (:func:`qpviz.tilted.tilted_moments_scalar`) elsewhere. Numba only."""


@overload(tilted_moments_of, prefer_literal=True, jit_options=NUMBA_OPTIONS)
def _tilted_moments_of(lk, y, m, v, closed):
    if isinstance(closed, types.BooleanLiteral) and closed.literal_value:
        def closed_form(lk, y, m, v, closed):
            if lk[HANDLE_ALPHA] != 1.0:  # tempered, Gaussian tilted distributions (closed_form_moments)
                return power_gaussian_moments(lk, y, m, v)
            ok, log_z, mean, var = lk_moments(lk, y, m, v)
            if not ok:
                return np.nan, np.nan, np.nan
            return log_z, mean, var

        return closed_form

    def general(lk, y, m, v, closed):
        has_closed, log_z, mean, var = lk_moments(lk, y, m, v)
        if has_closed:
            return log_z, mean, var
        fast, log_z, mean, var = hermite_moments(lk, y, m, v)
        if fast:
            return log_z, mean, var
        return tilted_moments_scalar(lk, y, m, v)

    return general


def projection_of(method, coef, meta, lk, y, m, v, closed):
    """(log Z, mean, var) of the projection of the tilted distribution (EP: eq. 5; QP: eq. 7, the
    variance sigma_QP^2 <= var; Theorem 2 holds also where a table's 1e-8 error exceeds the true
    gap). ``closed`` the literal True: the likelihood's closed form (EP only). Else the closed form
    where there is one, the checked Gauss-Hermite rule where it is accurate (one expansion gives
    the moments and sigma_QP; a table that covers the cavity still gives sigma_QP), the adaptive
    quadrature elsewhere; sigma_QP from ``qp_var_scalar`` (tables, Gauss-Hermite, quadrature)
    whenever the moments did not come from the Gauss-Hermite rule. Numba only."""


@overload(projection_of, prefer_literal=True, jit_options=NUMBA_OPTIONS)
def _projection_of(method, coef, meta, lk, y, m, v, closed):
    if isinstance(closed, types.BooleanLiteral) and closed.literal_value:
        return lambda method, coef, meta, lk, y, m, v, closed: tilted_moments_of(lk, y, m, v, closed)

    def general(method, coef, meta, lk, y, m, v, closed):
        has_closed, log_z, mean, var = lk_moments(lk, y, m, v)
        if not has_closed:
            # a table that covers the cavity gives sigma_QP: the expansion then computes moments only
            h = table_log_ratio(coef, meta, y, m, v) if method == QP else np.nan
            fast, log_z, mean, var, sigma = hermite_projection(lk, y, m, v, method == QP and h != h)
            if fast:
                if method == QP:
                    if h == h:
                        sigma2 = v * math.exp(2.0 * h)
                    elif sigma == sigma:
                        sigma2 = sigma * sigma
                    else:  # the moments are accurate, F's expansion is not (module qpviz.tilted.hermite)
                        sigma2 = qp_std_scalar(lk, y, m, v) ** 2
                    var = min(sigma2, var)
                return log_z, mean, var
            log_z, mean, var = tilted_moments_scalar(lk, y, m, v)
        if method == QP:
            var = min(_table_qp_var(coef, meta, lk, y, m, v), var)
        return log_z, mean, var

    return general


@njit(**NUMBA_OPTIONS)
def project_scalar(method, lk, y, m, v, coef, meta, closed):
    """(log Z, mean, var) of the projection of the tilted distribution (EP: eq. 5; QP: eq. 7)."""
    return projection_of(method, coef, meta, lk, y, m, v, closed)


@njit(**NUMBA_OPTIONS)
def site_step(method, lk, y, post_mean, post_var, tau, nu, damping, coef, meta, closed):
    """One site update on f itself (module docstring steps 1-5; Power EP with the handle's alpha)
    -> (tau_new, nu_new, log_z, status)."""
    return power_site_step(method, lk, y, post_mean, post_var, tau, nu, damping, coef, meta, closed, 0.0)


@njit(**NUMBA_OPTIONS)
def power_site_step(method, lk, y, post_mean, post_var, tau, nu, damping, coef, meta, closed, cond_var):
    """One Power-EP site update on h = f - e, e ~ N(0, cond_var) (module docstring steps 1'-4';
    alpha = lk[HANDLE_ALPHA], the handle's power) -> (tau_new, nu_new, log_z of the tilted f, status).
    ``cond_var = 0`` and alpha = 1: exactly :func:`site_step`'s steps 1-5."""
    alpha = lk[HANDLE_ALPHA]
    tau_c = 1.0 / post_var - alpha * tau  # alpha = 1: exactly 1/post_var - tau (1.0 * x == x)
    nu_c = post_mean / post_var - alpha * nu
    if not (tau_c > 0.0) or not np.isfinite(nu_c):
        return tau, nu, np.nan, SKIPPED_CAVITY
    m = nu_c / tau_c
    v = 1.0 / tau_c
    if cond_var != 0.0:
        v = v + cond_var  # the f-cavity N(m, v + d)
    log_z, mean, var = project_scalar(method, lk, y, m, v, coef, meta, closed)
    if not (var > 0.0) or not np.isfinite(mean) or not np.isfinite(var):
        return tau, nu, log_z, SKIPPED_PROJECTION
    site_tau, site_nu = site_natural(m, v, mean, var)
    if cond_var != 0.0:  # the f-site smoothed by e ~ N(0, d): the site on h (step 3')
        smooth = 1.0 + cond_var * site_tau
        site_tau = site_tau / smooth
        site_nu = site_nu / smooth
    if alpha != 1.0:  # the projection gives alpha times the site (step 3')
        site_tau = site_tau / alpha
        site_nu = site_nu / alpha
    tau_new = (1.0 - damping) * tau + damping * site_tau
    nu_new = (1.0 - damping) * nu + damping * site_nu
    if tau_new < 0.0:
        return 0.0, nu_new, log_z, CLIPPED
    return tau_new, nu_new, log_z, OK


@njit(**NUMBA_OPTIONS)
def _gaussian_log_integral(tau, nu, m, v):
    """log int exp(-tau f^2/2 + nu f) N(f | m, v) df = -1/2 log(1 + tau v) + (v nu^2 + 2 nu m - tau m^2) / (2 (1 + tau v))."""
    scale = 1.0 + tau * v
    return -0.5 * np.log1p(tau * v) + (v * nu * nu + 2.0 * nu * m - tau * m * m) / (2.0 * scale)


@njit(**NUMBA_OPTIONS)
def power_gaussian_moments(lk, y, m, v):
    """(log Z~, mean, var) of p(y|f)^alpha N(f | m, v) for a likelihood with Gaussian tilted
    distributions (module docstring): its closed-form moments at power 1 give log p(y|f) =
    -tau_p f^2/2 + nu_p f + c0 (site of eq. 6, c0 = log Z - log int exp(-tau_p f^2/2 + nu_p f) N(f|m,v) df);
    then var = v / (1 + alpha tau_p v), mean = (m + alpha nu_p v) / (1 + alpha tau_p v) and
    log Z~ = alpha c0 + log int exp(alpha (-tau_p f^2/2 + nu_p f)) N(f|m,v) df, O(alpha) without cancellation."""
    alpha = lk[HANDLE_ALPHA]
    ok, log_z1, mean1, var1 = lk_moments(untempered(lk), y, m, v)
    if not ok:
        return np.nan, np.nan, np.nan
    tau_p, nu_p = site_natural(m, v, mean1, var1)
    c0 = log_z1 - _gaussian_log_integral(tau_p, nu_p, m, v)
    scale = 1.0 + alpha * tau_p * v
    log_z = alpha * c0 + _gaussian_log_integral(alpha * tau_p, alpha * nu_p, m, v)
    return log_z, (m + alpha * nu_p * v) / scale, v / scale


def power_gaussian_moments_numpy(likelihood, y, m, v):
    """:func:`power_gaussian_moments` on NumPy arrays through the base likelihood's Python API."""
    from qpviz.projection import site_natural_params

    def log_integral(tau, nu):
        return -0.5 * np.log1p(tau * v) + (v * nu * nu + 2.0 * nu * m - tau * m * m) / (2.0 * (1.0 + tau * v))

    alpha = likelihood.alpha
    base = _base(likelihood).tilted_moments(y, m, v)
    tau_p, nu_p = site_natural_params(m, v, base.mean, base.var)
    c0 = base.log_z - log_integral(tau_p, nu_p)
    scale = 1.0 + alpha * tau_p * v
    return alpha * c0 + log_integral(alpha * tau_p, alpha * nu_p), (m + alpha * nu_p * v) / scale, v / scale


@njit(**NUMBA_OPTIONS)
def site_natural(cavity_mean, cavity_var, mean, var):
    """Eq. 6 without cancellation (:func:`qpviz.projection.site_natural_params`):
    precision (v - var) / (v var), precision-mean ((mean - m) v + m (v - var)) / (v var); the
    differences are exact when var ~ v (Sterbenz), where 1/var - 1/v would cancel."""
    scale = cavity_var * var
    shrink = cavity_var - var
    return shrink / scale, ((mean - cavity_mean) * cavity_var + cavity_mean * shrink) / scale


@njit(**NUMBA_OPTIONS)
def site_step_packed(rule, y, post_mean, post_var, tau, nu):
    """:func:`site_step` with the rule packed by :attr:`SiteRule.jit` -> (tau_new, nu_new, log_z, status)."""
    return site_step(rule[RULE_METHOD], rule[RULE_HANDLE], y, post_mean, post_var, tau, nu, rule[RULE_DAMPING],
                     rule[RULE_COEF], rule[RULE_META], False)


@njit(**NUMBA_OPTIONS)
def _cond_var_at(cond_var, i):
    """d_i, or 0 for an empty ``cond_var`` (:data:`NO_COND_VAR`)."""
    return cond_var[i] if cond_var.shape[0] > 0 else 0.0


@njit(**NUMBA_OPTIONS)
def parallel_site_updates(mean, var, tau, nu, y, cond_var, method, lk, damping, coef, meta, tau_out, nu_out, log_z,
                          status, closed):
    """All sites from the same posterior marginals (parallel EP / QP / Power EP); results in the *_out arrays."""
    for i in range(mean.shape[0]):
        t_new, n_new, lz, st = power_site_step(method, lk, y[i], mean[i], var[i], tau[i], nu[i], damping, coef,
                                               meta, closed, _cond_var_at(cond_var, i))
        tau_out[i] = t_new
        nu_out[i] = n_new
        log_z[i] = lz
        status[i] = st


@njit(**NUMBA_OPTIONS)
def cavity_log_z(mean, var, tau, nu, y, cond_var, lk, tau_c, nu_c, log_z, closed):
    """Cavities of the posterior marginals (removing alpha = lk[HANDLE_ALPHA] of each site) and log Z~_i of
    their tilted distributions p(y_i|f)^alpha N(f | nu_c/tau_c, 1/tau_c + d_i) (NaN if tau_c <= 0)."""
    alpha = lk[HANDLE_ALPHA]
    for i in range(mean.shape[0]):
        tau_c[i] = 1.0 / var[i] - alpha * tau[i]
        nu_c[i] = mean[i] / var[i] - alpha * nu[i]
        if tau_c[i] > 0.0:
            v = 1.0 / tau_c[i]
            d = _cond_var_at(cond_var, i)
            if d != 0.0:
                v = v + d
            log_z[i] = tilted_moments_of(lk, y[i], nu_c[i] / tau_c[i], v, closed)[0]
        else:
            log_z[i] = np.nan


@njit(**NUMBA_OPTIONS)
def parallel_site_updates_closed(mean, var, tau, nu, y, cond_var, method, lk, damping, coef, meta, tau_out, nu_out,
                                 log_z, status):
    """:func:`parallel_site_updates` compiled for EP by closed-form moments."""
    parallel_site_updates(mean, var, tau, nu, y, cond_var, method, lk, damping, coef, meta, tau_out, nu_out, log_z,
                          status, True)


@njit(**NUMBA_OPTIONS)
def parallel_site_updates_general(mean, var, tau, nu, y, cond_var, method, lk, damping, coef, meta, tau_out, nu_out,
                                  log_z, status):
    """:func:`parallel_site_updates` for every rule."""
    parallel_site_updates(mean, var, tau, nu, y, cond_var, method, lk, damping, coef, meta, tau_out, nu_out, log_z,
                          status, False)


@njit(**NUMBA_OPTIONS)
def cavity_log_z_closed(mean, var, tau, nu, y, cond_var, lk, tau_c, nu_c, log_z):
    """:func:`cavity_log_z` by closed-form moments."""
    cavity_log_z(mean, var, tau, nu, y, cond_var, lk, tau_c, nu_c, log_z, True)


@njit(**NUMBA_OPTIONS)
def cavity_log_z_general(mean, var, tau, nu, y, cond_var, lk, tau_c, nu_c, log_z):
    """:func:`cavity_log_z` for every likelihood."""
    cavity_log_z(mean, var, tau, nu, y, cond_var, lk, tau_c, nu_c, log_z, False)
