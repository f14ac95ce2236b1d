"""Convergence diagnostics of MCMC chains: rank-normalised split R-hat and bulk effective sample size.

Vehtari, Gelman, Simpson, Carpenter and Buerkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2).

Draws come as an array (chains, draws) or (chains, draws, variables); each variable is judged
on its own. Every chain is split into halves (a chain drifting within itself then differs
from its other half), the pooled draws are replaced by normal scores of their ranks
(z = Phi^-1((r - 3/8) / (S + 1/4)), ties averaged), and

* R-hat = sqrt(((n - 1) / n W + B / n) / W) with W the mean within-half variance and B / n the
  variance of the half means; :func:`split_rhat` reports the larger of the R-hats of the
  rank-normalised draws (location) and of their folded version |x - median| (scale / tails);
* ESS = M n / tau, tau = -1 + 2 sum_t P_t, where P_t = rho_2t + rho_2t+1 are sums of the
  combined autocorrelations rho_t = 1 - (W - mean_m acov_m(t)) / var+ (Geyer's initial positive
  sequence, made monotone). :func:`bulk_ess` is the ESS of the rank-normalised split draws.

Pure NumPy / SciPy; a variable that does not vary at all gives NaN (it says nothing).
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = ["split_chains", "rank_normalise", "rhat", "split_rhat", "ess", "bulk_ess", "summary",
           "RHAT_THRESHOLD", "ESS_THRESHOLD"]

#: Largest max R-hat called converged: Vehtari et al. (2021) recommend 1.01 (1.1, the older
#: rule, passes chains whose means still differ by a third of a posterior sd at 4 x 1000 draws).
RHAT_THRESHOLD = 1.01
#: Smallest bulk ESS called converged: 400 = 100 per chain for 4 chains (Vehtari et al. 2021,
#: section 4): the R-hat and ESS estimates themselves are reliable from there on, and the
#: reference's Monte Carlo error of a mean is then below 5% of the posterior sd.
ESS_THRESHOLD = 400.0


def _as_3d(draws) -> np.ndarray:
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (chains, draws) or (chains, draws, variables); got {x.shape}")
    if x.shape[1] < 4:
        raise ValueError(f"need at least 4 draws per chain; got {x.shape[1]}")
    return x


def split_chains(draws) -> np.ndarray:
    """(2 M, n // 2, V): each chain's first and second half as separate chains (the middle draw
    of an odd-length chain is dropped)."""
    x = _as_3d(draws)
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def rank_normalise(draws) -> np.ndarray:
    """Normal scores of the pooled ranks, per variable: Phi^-1((r - 3/8) / (S + 1/4)), same shape."""
    x = _as_3d(draws)
    m, n, v = x.shape
    flat = x.reshape(m * n, v)
    ranks = stats.rankdata(flat, axis=0)  # ties averaged
    return special.ndtri((ranks - 0.375) / (m * n + 0.25)).reshape(m, n, v)


def rhat(draws) -> np.ndarray:
    """Classic potential scale reduction of the given chains (no splitting or ranks), per variable."""
    x = _as_3d(draws)
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean(axis=0)
    between_over_n = x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(((n - 1) / n * within + between_over_n) / within)
    return np.where(within > 0, out, np.nan)


def split_rhat(draws) -> np.ndarray:
    """Rank-normalised split R-hat per variable: max(bulk R-hat, folded R-hat) (Vehtari et al. 2021)."""
    split = split_chains(draws)
    bulk = rhat(rank_normalise(split))
    folded = rhat(rank_normalise(np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))))
    out = np.maximum(bulk, folded)
    return np.where(_varies(split), out, np.nan)


def _varies(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1, x.shape[2])
    return flat.max(axis=0) > flat.min(axis=0)


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """acov[m, t, v] = 1/n sum_s (x_s - mean)(x_s+t - mean) per chain, by FFT (biased, as in Stan)."""
    m, n, v = x.shape
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n


def ess(draws) -> np.ndarray:
    """Effective sample size of the given chains (no splitting or ranks), per variable (Geyer's
    initial monotone sequence on the combined autocorrelation; Stan's estimator)."""
    x = _as_3d(draws)
    m, n, v = x.shape
    acov = _autocovariance(x)
    within = acov[:, 0].mean(axis=0) * n / (n - 1)  # mean within-chain variance (unbiased)
    var_plus = within * (n - 1) / n
    if m > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)
    out = np.full(v, np.nan)
    for j in range(v):
        if not var_plus[j] > 0:
            continue
        rho = 1.0 - (within[j] - acov[:, :, j].mean(axis=0)) / var_plus[j]
        rho[0] = 1.0
        pairs = rho[:n - n % 2].reshape(-1, 2).sum(axis=1)  # P_t = rho_2t + rho_2t+1
        positive = np.flatnonzero(pairs <= 0)
        pairs = pairs[:positive[0]] if positive.size else pairs  # initial positive sequence
        pairs = np.minimum.accumulate(pairs)  # initial monotone sequence
        tau = max(-1.0 + 2.0 * pairs.sum(), 1.0 / np.log10(m * n))  # Stan's floor on tau
        out[j] = m * n / tau
    return out


def bulk_ess(draws) -> np.ndarray:
    """Bulk effective sample size per variable: :func:`ess` of the rank-normalised split chains."""
    split = split_chains(draws)
    return np.where(_varies(split), ess(rank_normalise(split)), np.nan)


def summary(draws, rhat_threshold: float = RHAT_THRESHOLD, ess_threshold: float = ESS_THRESHOLD) -> dict:
    """max split R-hat and min bulk ESS over the variables of ``draws`` (chains, draws[, variables])
    and whether they pass: {"rhat", "ess", "converged", "chains", "draws"}. A variable that never
    varies counts as a failure (NaN R-hat); one chain is never called converged (its two halves
    cannot show a mode it never visited)."""
    x = _as_3d(draws)
    r, e = split_rhat(x), bulk_ess(x)
    max_rhat = float(np.max(r)) if not np.any(np.isnan(r)) else float("nan")
    min_ess = float(np.min(e)) if not np.any(np.isnan(e)) else float("nan")
    return {"rhat": max_rhat, "ess": min_ess, "converged": bool(x.shape[0] >= 2 and max_rhat < rhat_threshold and min_ess >= ess_threshold),
            "chains": x.shape[0], "draws": x.shape[1]}
