"""The Poisson-square tilted CDF (QP paper 000, App. C.2): incomplete-gamma sums of positive terms."""
from __future__ import annotations

import numpy as np
from scipy import special

from qpviz.likelihoods._tilted_cdfs.inputs import prepare
from qpviz.likelihoods._tilted_cdfs.logspace import LOG_2PI, log_diff_exp, log_mills, logsumexp_rows
from qpviz.likelihoods._tilted_cdfs.quadrature import log_integral_finite

__all__ = ["poisson_square_tilted_cdf"]


def poisson_square_tilted_cdf(x, y, m, v, upper: bool = False) -> np.ndarray:
    """CDF (or survival) of q(f) = f^(2y) exp(-f^2) N(f|m, v) / (y! Z), counts y = 0, 1, 2, ...

    Completing the square (QP paper 000, App. C.2, eqs. 52, 55, 62, 67):
    q(f) is proportional to f^(2y) N(f | beta, tau^2), beta = m/(1 + 2v), tau^2 = v/(1 + 2v)
    = alpha/2. The paper expands (f - beta + beta)^(2y) binomially about beta (eq. 64) and
    integrates each power against the Gaussian with incomplete gamma functions (eqs. 65-66).
    That sum alternates in sign when beta < 0 (or x < beta) and cancels catastrophically for
    large y, so here every piece is written as a sum of *positive* terms:

    * normaliser: int f^(2y) N(f|mu, tau^2) df = sum_j C(2y, 2j) mu^(2y-2j) tau^(2j) (2j-1)!!;
    * upper pieces U(c, mu) = int_c^inf f^(2y) N(f|mu, tau^2) df, c >= 0:
      mu >= 0: eq. 64 about mu, sum_k C(2y,k) mu^(2y-k) tau^k M_k, with
      M_k = int_{(c-mu)/tau}^inf t^k phi(t) dt > 0 (the incomplete gamma terms of eq. 66,
      Gamma((k+1)/2, t0^2/2) 2^((k-1)/2)/sqrt(2 pi), evaluated by their positive recurrence);
      mu < 0: expanded about c instead, sum_k C(2y,k) c^(2y-k) tau^k I_k(delta), with
      I_k = int_0^inf u^k phi(u + delta) du > 0, delta = (c - mu)/tau (recurrence / continued
      fraction, see ``_log_shifted_moments``);
    * F(x) for x <= 0 is U(-x, -beta) (f -> -f, the likelihood is even in f); SF(x) = F(-x)
      at -m. For x > 0, F = 1 - SF unless that would cancel (F < 1/4): then
      F = [U(0, -beta) + int_0^x f^(2y) N(f|beta, tau^2) df] / normaliser, the last
      integral by tanh-sinh quadrature of its positive integrand in log space.

    All sums are formed in log space (log-sum-exp), so y up to several hundred is fine.
    """
    what = "poisson_square_tilted_cdf"
    x, y, m, v = prepare(x, y, m, v, what)
    if not np.all((y >= 0) & (y == np.round(y))):
        raise ValueError(f"{what}: counts y must be integers >= 0; got {np.unique(y)[:6].tolist()}")
    if upper:
        x, m = -x, -m  # SF(x; m) = F(-x; -m): q(f; m) = q(-f; -m)
    return _poisson_square_lower(x, y, m, v)


def _poisson_square_lower(x, y, m, v):
    beta = m / (1.0 + 2.0 * v)
    tau = np.sqrt(v / (1.0 + 2.0 * v))
    n = (2.0 * y).astype(np.int64)
    log_norm = _log_even_power_mean(n, beta, tau)
    xa = np.where(np.isfinite(x), x, 0.0)
    # x <= 0: F = U(-x, -beta) / norm
    log_left = _log_upper_power_integral(n, np.maximum(-xa, 0.0), -beta, tau)
    cdf = np.exp(np.minimum(log_left - log_norm, 0.0))
    right = xa > 0
    if np.any(right):
        sf = np.exp(
            np.minimum(_log_upper_power_integral(n[right], xa[right], beta[right], tau[right]) - log_norm[right], 0.0)
        )
        cdf_right = 1.0 - sf
        small = cdf_right < 0.25
        if np.any(small):
            idx = np.flatnonzero(right)[small]
            neg = _log_upper_power_integral(n[idx], np.zeros(idx.size), -beta[idx], tau[idx])
            inner = log_integral_finite(
                _power_gauss_log_density(n[idx], beta[idx], tau[idx]), np.zeros(idx.size), xa[idx]
            )
            cdf_right[small] = np.exp(np.logaddexp(neg, inner) - log_norm[idx])
        cdf = np.array(cdf, copy=True)
        cdf[right] = cdf_right
    cdf = np.where(np.isneginf(x), 0.0, np.where(np.isposinf(x), 1.0, cdf))
    return np.clip(cdf, 0.0, 1.0)


def _power_gauss_log_density(n, mu, tau):
    """f -> log(f^n N(f|mu, tau^2)) (f > 0 nodes), broadcast over trailing node axis."""
    n, mu, tau = (np.asarray(a, float)[..., None] for a in (n, mu, tau))

    def log_g(f):
        with np.errstate(divide="ignore", invalid="ignore"):
            log_f = np.where(n > 0, n * np.log(f), 0.0)
        return log_f - 0.5 * ((f - mu) / tau) ** 2 - np.log(tau) - 0.5 * LOG_2PI

    return log_g


def _log_binom(n, k):
    return special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)


def _xlogy_power(power, base):
    """power * log(base) with 0 * log(0) = 0 (base >= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(power == 0, 0.0, power * np.log(base))


def _log_even_power_mean(n, mu, tau):
    """log E[f^n], f ~ N(mu, tau^2), n even: log sum_j C(n,2j) |mu|^(n-2j) tau^(2j) (2j-1)!!."""
    kmax = int(n.max()) if n.size else 0
    j2 = np.arange(0, kmax + 1, 2, dtype=float)  # 2j
    n_, mu_, tau_ = (np.asarray(a, float)[..., None] for a in (n, mu, tau))
    # log (2j-1)!! = log((2j)!) - j log 2 - log(j!)
    log_dfact = special.gammaln(j2 + 1.0) - 0.5 * j2 * np.log(2.0) - special.gammaln(0.5 * j2 + 1.0)
    terms = _log_binom(n_, np.minimum(j2, n_)) + _xlogy_power(n_ - j2, np.abs(mu_)) + j2 * np.log(tau_) + log_dfact
    terms = np.where(j2 <= n_, terms, -np.inf)
    return logsumexp_rows(terms)


def _log_upper_power_integral(n, c, mu, tau):
    """log U(c, mu) = log int_c^inf f^n N(f|mu, tau^2) df for c >= 0, as a sum of positive terms."""
    n, c, mu, tau = np.broadcast_arrays(np.asarray(n), np.asarray(c, float), np.asarray(mu, float), np.asarray(tau, float))
    out = np.empty(n.shape)
    about_mu = mu >= 0
    if np.any(about_mu):
        i = about_mu
        out[i] = _log_upper_about_mean(n[i], c[i], mu[i], tau[i])
    if np.any(~about_mu):
        i = ~about_mu
        out[i] = _log_upper_about_start(n[i], c[i], mu[i], tau[i])
    return out


def _log_upper_about_mean(n, c, mu, tau):
    """mu >= 0: sum_k C(n,k) mu^(n-k) tau^k M_k(t0), t0 = (c - mu)/tau, all terms >= 0."""
    kmax = int(n.max()) if n.size else 0
    return _log_binomial_sum(n, mu, tau, _log_gauss_tail_moments((c - mu) / tau, kmax))


def _log_binomial_sum(n, base, tau, log_moments):
    """log sum_(k <= n) C(n, k) base^(n-k) tau^k exp(log_moments[..., k]) (base >= 0)."""
    k = np.arange(log_moments.shape[-1], dtype=float)
    n_, base_, tau_ = (a[..., None] for a in (n.astype(float), base, tau))
    terms = _log_binom(n_, np.minimum(k, n_)) + _xlogy_power(n_ - k, base_) + k * np.log(tau_) + log_moments
    return logsumexp_rows(np.where(k <= n_, terms, -np.inf))


def _log_gauss_tail_moments(t0, kmax):
    """log M_k(t0) = log int_{t0}^inf t^k phi(t) dt for k = 0..kmax (every M_k > 0).

    For a = |t0|: S_k(a) = int_a^inf t^k phi(t) dt / phi(a) obeys S_0 = Mills(a), S_1 = 1,
    S_k = a^(k-1) + (k-1) S_(k-2) (positive terms, stable). For t0 >= 0, M_k = phi(a) S_k;
    for t0 < 0, M_k = phi(a) S_k (odd k) or (k-1)!! - phi(a) S_k (even k; phi(a) S_k <= (k-1)!!/2).
    """
    a = np.abs(t0)
    log_phi = -0.5 * a**2 - 0.5 * LOG_2PI
    with np.errstate(divide="ignore"):
        log_a = np.log(a)
    log_s = np.empty(a.shape + (kmax + 1,))
    log_s[..., 0] = log_mills(a)
    if kmax >= 1:
        log_s[..., 1] = 0.0
    for k in range(2, kmax + 1):
        log_s[..., k] = np.logaddexp((k - 1) * log_a, np.log(k - 1.0) + log_s[..., k - 2])
    log_tail = log_phi[..., None] + log_s
    k = np.arange(kmax + 1, dtype=float)
    log_dfact = special.gammaln(k + 1.0) - 0.5 * k * np.log(2.0) - special.gammaln(0.5 * k + 1.0)
    even = (k % 2) == 0
    whole = log_diff_exp(log_dfact, np.minimum(log_tail, log_dfact))
    return np.where((t0[..., None] < 0) & even, whole, log_tail)


def _log_upper_about_start(n, c, mu, tau):
    """mu < 0 <= c: sum_k C(n,k) c^(n-k) tau^k I_k(delta), delta = (c - mu)/tau > 0."""
    kmax = int(n.max()) if n.size else 0
    delta = (c - mu) / tau
    log_i = _log_shifted_moments(delta, kmax) + (-0.5 * delta**2 - 0.5 * LOG_2PI)[..., None]
    return _log_binomial_sum(n, c, tau, log_i)


def _log_shifted_moments(delta, kmax):
    """log R_k(delta) = log int_0^inf u^k exp(-u^2/2 - delta u) du, k = 0..kmax, delta >= 0.

    R_0 = Mills(delta), R_1 = 1 - delta R_0, R_(k+1) = k R_(k-1) - delta R_k. R_k is the
    minimal solution of this recurrence, smaller than the other by ~exp(-2 delta sqrt(k)), so
    the forward recurrence is used only where 2 delta sqrt(kmax) <= 4 (at most ~2 digits lost);
    elsewhere the ratios rho_k = R_k/R_(k-1) = k/(delta + rho_(k+1)) come from the backward
    continued fraction (Miller's algorithm), started at N = max((sqrt(kmax) + 19/delta)^2, kmax + 60)
    so that the dominant solution has died out (by exp(-38) for large k, by (k/delta^2)^60 for
    large delta), and R_k = R_0 prod rho_j (all positive).
    """
    out = np.empty(delta.shape + (kmax + 1,))
    log_r0 = log_mills(delta)
    out[..., 0] = log_r0
    if kmax == 0:
        return out
    small = 2.0 * delta * np.sqrt(kmax) <= 4.0
    if np.any(small):
        # scaled by c_k = R_k(0) = 2^((k-1)/2) Gamma((k+1)/2) (c_(k+1) = k c_(k-1)) against overflow:
        # Rs_(k+1) = Rs_(k-1) - delta (c_k / c_(k+1)) Rs_k, Rs_k = R_k / c_k in (0, 1]
        k_all = np.arange(kmax + 2, dtype=float)
        log_c = 0.5 * (k_all - 1.0) * np.log(2.0) + special.gammaln(0.5 * (k_all + 1.0))
        ratio = np.exp(log_c[:-1] - log_c[1:])
        d = delta[small]
        s_prev = np.exp(log_r0[small] - log_c[0])
        s_cur = (1.0 - d * np.exp(log_r0[small])) / np.exp(log_c[1])
        vals = [s_prev, s_cur]
        for k in range(1, kmax):
            s_next = s_prev - d * ratio[k] * s_cur
            vals.append(s_next)
            s_prev, s_cur = s_cur, s_next
        out[small] = np.log(np.stack(vals, axis=-1)) + log_c[: kmax + 1]
    big = ~small
    if np.any(big):
        d = delta[big]
        # large k: dominance exp(-2 delta sqrt(k)); large delta: a factor ~k/delta^2 per step
        start = np.maximum(np.ceil((np.sqrt(kmax) + 19.0 / d) ** 2), kmax + 60).astype(np.int64)
        rho = np.zeros(d.shape)
        log_rho = np.empty(d.shape + (kmax + 1,))
        for k in range(int(start.max()), 0, -1):
            rho = np.where(k <= start, k / (d + rho), 0.0)
            if k <= kmax:
                log_rho[..., k] = np.log(rho)
        log_rho[..., 0] = log_r0[big]
        out[big] = np.cumsum(log_rho, axis=-1)
    return out
