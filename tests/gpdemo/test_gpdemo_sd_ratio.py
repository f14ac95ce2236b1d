"""qpviz.gpdemo.sd_ratio: each method's latent sd over the MCMC reference's, and the sentence reading it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from qpviz.gpdemo import sd_ratio

X_GRID = np.linspace(-1.0, 3.0, 41)
DATA = np.array([[0.0], [2.5]])


def _bumps(ep_peak=0.4, qp_peak=0.1):
    """Variances whose sd is 1 + peak exp(-(x - 2)^2) against a reference of sd 1."""
    bump = np.exp(-(X_GRID - 2.0) ** 2)
    return {"ep": (1 + ep_peak * bump) ** 2, "qp": (1 + qp_peak * bump) ** 2}, np.ones_like(X_GRID)


def test_the_sentence_names_the_largest_over_estimate_where_it_is_and_the_averages():
    variances, reference = _bumps()
    result = sd_ratio.compare(variances, reference, X_GRID[:, None], DATA, ess=800)
    np.testing.assert_allclose(result.ratios["ep"], np.sqrt(variances["ep"]))
    assert result.peak["ep"] == (pytest.approx(1.4), 30) and X_GRID[30] == pytest.approx(2.0)
    inside = (X_GRID >= 0.0) & (X_GRID <= 2.5)
    assert result.average["qp"] == pytest.approx(np.mean(np.sqrt(variances["qp"])[inside]))
    assert result.low["ep"] == (pytest.approx(1.0 + 0.4 * np.exp(-4.0)), 10)  # x = 0, the data's left end
    assert ("EP's largest sd ratio to the reference is 1.40x at x = 2 (its smallest 1.01x at x = 0); "
            "QP's 1.10x there.") in result.sentence
    assert f"Averaged over the data's range: EP {result.average['ep']:.2f}x, QP {result.average['qp']:.2f}x." in result.sentence
    assert result.error == pytest.approx(1 / math.sqrt(1600)) and result.band() == pytest.approx((0.95, 1.05))
    assert "unreliable" not in result.sentence and "not distinguishable" not in result.sentence
    assert "±2.5% (1/sqrt(2 ESS), ESS 800): ratios within 1 ± 0.050 cannot be told from 1." in result.sentence


def test_ratios_within_the_references_own_error_are_not_told_from_one():
    variances, reference = _bumps(ep_peak=0.03, qp_peak=0.0)
    result = sd_ratio.compare(variances, reference, X_GRID[:, None], DATA, ess=800)  # error 2.5 %: band 1 +- 0.05
    assert "is 1.03x at x = 2" in result.sentence
    assert "There, within MCMC's own error of 1 (not distinguishable from it): EP, QP." in result.sentence
    variances["ep"] = np.full_like(X_GRID, 1.1**2)  # 1.1 is 4 errors from 1
    result = sd_ratio.compare(variances, reference, X_GRID[:, None], DATA, ess=800)
    assert "error of 1 (not distinguishable from it): QP." in result.sentence
    result = sd_ratio.compare(*_bumps(), X_GRID[:, None], DATA, ess=8)  # error 25 %: 1.4 is not told from 1 either
    assert "(not distinguishable from it): EP, QP." in result.sentence


def test_an_unconverged_or_undiagnosed_reference_makes_the_comparison_unreliable():
    status = "not converged (R-hat 1.3, ESS 12, 0.4 s): the chains disagree"
    result = sd_ratio.compare(*_bumps(), X_GRID[:, None], DATA, ess=12, converged=False, status=status)
    assert result.sentence.startswith(f"This comparison is unreliable: the MCMC reference is {status}.")
    result = sd_ratio.compare(*_bumps(), X_GRID[:, None], DATA, ess=math.nan)
    assert math.isnan(result.error) and result.band() == (1.0, 1.0) and "its own error is unknown" in result.sentence


def test_no_nan_or_inf_reaches_a_plot_where_the_reference_sd_is_zero_or_a_variance_is_bad():
    variances, reference = _bumps()
    reference[:5] = 0.0  # e.g. a pinned latent
    reference[5] = np.nan
    variances["qp"][30] = np.inf
    variances["ep"][31] = -1.0
    result = sd_ratio.compare(variances, reference, X_GRID[:, None], DATA, ess=800)
    assert np.all(np.isnan(result.ratios["ep"][:6])) and np.isnan(result.ratios["ep"][31])
    for method in ("ep", "qp"):
        x, ratio = result.finite(method, X_GRID)
        assert np.all(np.isfinite(ratio)) and np.all(np.isfinite(x)) and x.size == ratio.size
    assert result.finite("qp", X_GRID)[0].size == X_GRID.size - 7
    # QP's peak skips its bad point; EP's is still found
    assert result.peak["ep"][1] == 30 and result.peak["qp"][1] != 30
    nowhere = sd_ratio.compare(variances, np.zeros_like(reference), X_GRID[:, None], DATA, ess=800)
    assert not nowhere.peak and "No sd ratio is defined" in nowhere.sentence


def test_an_under_estimate_says_so_and_2d_positions_read_as_pairs():
    x1, x2 = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 5))
    positions = np.column_stack([x1.ravel(), x2.ravel()])
    reference = np.ones((5, 5))
    laplace = np.full((5, 5), 0.64)
    laplace[3, 1] = 0.81  # sd 0.9 at (x1, x2) = (-0.5, 0.5)
    result = sd_ratio.compare({"laplace": laplace}, reference, positions, positions, ess=400)
    assert ("Laplace's largest sd ratio to the reference is 0.90x at (x1, x2) = (-0.5, 0.5) (its smallest 0.80x at "
            "(x1, x2) = (-1, -1)).") in result.sentence
    assert result.ratios["laplace"].shape == (5, 5)
