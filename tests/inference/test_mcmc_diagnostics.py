"""Split R-hat and bulk ESS (qpviz.inference.diagnostics) against chains whose answer is known."""
from __future__ import annotations

import numpy as np
import pytest

from qpviz.inference import diagnostics


def _ar1(rho: float, chains: int, n: int, seed: int) -> np.ndarray:
    """Stationary AR(1) chains x_t = rho x_t-1 + e_t (integrated autocorrelation time (1 + rho) / (1 - rho))."""
    gen = np.random.default_rng(seed)
    noise = gen.standard_normal((chains, n))
    x = np.empty((chains, n))
    x[:, 0] = noise[:, 0] / np.sqrt(1.0 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


def test_independent_normal_chains_give_rhat_one_and_ess_near_the_draws():
    x = np.random.default_rng(0).standard_normal((4, 1000, 6))
    assert np.all(np.abs(diagnostics.split_rhat(x) - 1.0) < 0.01)
    ess = diagnostics.bulk_ess(x)
    assert np.all((ess > 0.8 * 4000) & (ess < 1.25 * 4000))
    report = diagnostics.summary(x)
    assert report["converged"] and report["chains"] == 4 and report["draws"] == 1000


def test_chains_with_different_means_give_rhat_well_above_one():
    """One chain of four 2 sd off: raw R-hat sqrt(1 + var(means) / W) = sqrt(2) (ranks shrink it a little)."""
    x = np.random.default_rng(1).standard_normal((4, 1000)) + np.array([0.0, 0.0, 0.0, 2.0])[:, None]
    assert diagnostics.rhat(x)[0] == pytest.approx(np.sqrt(2.0), abs=0.05)
    assert diagnostics.split_rhat(x)[0] > 1.3
    report = diagnostics.summary(x)
    assert not report["converged"] and report["rhat"] > 1.3


def test_a_drifting_chain_is_caught_by_splitting_it():
    """Each chain drifts from -1 to 1: whole-chain means agree, halves do not."""
    gen = np.random.default_rng(2)
    x = gen.standard_normal((4, 1000)) * 0.3 + np.linspace(-1.0, 1.0, 1000)[None, :]
    assert diagnostics.rhat(x)[0] < 1.01  # the classic R-hat sees nothing
    assert diagnostics.split_rhat(x)[0] > 1.2


def test_a_scale_difference_is_caught_by_the_folded_rhat():
    gen = np.random.default_rng(3)
    x = gen.standard_normal((4, 2000)) * np.array([1.0, 1.0, 1.0, 3.0])[:, None]
    assert diagnostics.rhat(diagnostics.rank_normalise(diagnostics.split_chains(x)))[0] < 1.02
    assert diagnostics.split_rhat(x)[0] > 1.05


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_ar1_ess_matches_n_one_minus_rho_over_one_plus_rho(rho):
    x = _ar1(rho, 4, 20000, seed=int(10 * rho))
    expected = x.size * (1.0 - rho) / (1.0 + rho)
    assert diagnostics.ess(x)[0] == pytest.approx(expected, rel=0.12)
    assert diagnostics.bulk_ess(x)[0] == pytest.approx(expected, rel=0.12)


def test_rhat_matches_the_textbook_formula():
    """Gelman et al. (BDA3, eq. 11.3-11.4) written out by hand on a small array."""
    x = np.random.default_rng(4).standard_normal((3, 7)) + np.array([0.0, 0.5, -0.2])[:, None]
    n = x.shape[1]
    means = [float(np.mean(chain)) for chain in x]
    grand = sum(means) / len(means)
    between = n / (len(means) - 1) * sum((m - grand) ** 2 for m in means)
    within = sum(sum((v - m) ** 2 for v in chain) / (n - 1) for chain, m in zip(x, means)) / len(means)
    expected = np.sqrt(((n - 1) / n * within + between / n) / within)
    assert diagnostics.rhat(x)[0] == pytest.approx(expected, rel=1e-12)


def test_a_constant_variable_is_not_converged():
    x = np.ones((4, 100, 2))
    x[:, :, 1] = np.random.default_rng(5).standard_normal((4, 100))
    assert np.isnan(diagnostics.split_rhat(x)[0]) and np.isfinite(diagnostics.split_rhat(x)[1])
    assert not diagnostics.summary(x)["converged"]


def test_one_chain_is_never_called_converged_and_bad_shapes_are_refused():
    assert not diagnostics.summary(np.random.default_rng(6).standard_normal((1, 4000)))["converged"]
    with pytest.raises(ValueError, match="at least 4 draws"):
        diagnostics.split_rhat(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="shape"):
        diagnostics.split_rhat(np.zeros(10))
