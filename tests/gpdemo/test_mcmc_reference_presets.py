"""The MCMC reference of every GP 1-D preset (seeds 0-7) and of the GP 2-D presets (seeds 0-1) against EP
(issue 21).

Sampled by default (issue 22.6): each GP 1-D preset runs two of its eight seeds (SAMPLED_SEEDS), each
GP 2-D preset one of its two (GP2D_SEEDS); the seeds of a preset run one code path on other data, and
every seed of every preset passed every check with a wide margin in the full sweep.
``QPVIZ_FULL_SWEEPS=1`` runs the full sweep (every seed of every preset). Each case that runs checks
the same things.

A reference is accepted when it agrees with EP's latent mean at the data where EP's mean is
clearly nonzero (|m_EP| > 0.25 max |m_EP|: the same sign), has mean |f| within a factor 2 of
EP's, reports split R-hat below 1.01 and bulk ESS of at least 400, and needs less than 60 s of CPU time
(the page's wall-clock budget is 60 s; here the budget is lifted and the process's CPU time is
measured, so a loaded machine (other tests on the same two cores) does not fail the case).
Before the fix the "step likelihood, eps = 0" preset gave mean |f| 0.00-0.16 of EP's for seeds
2-7 and said "converged". For a likelihood even in f (Poisson-square) the data identify only |f|:
there the size sqrt(E f^2) is compared instead of mean |E f| and sign (qpviz.inference.mcmc).
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from qpviz import explorer
from qpviz.gpdemo import oned, presets, twod
from qpviz.inference import diagnostics
from qpviz.kernels import RBF
from sweeps import FULL_SWEEPS

SEEDS = range(8)
#: The seeds each preset's default (sampled) run keeps; QPVIZ_FULL_SWEEPS=1 runs every seed. The full
#: sweep (2026-11-27) passed with R-hat <= 1.0075 (bound 1.01), bulk ESS >= 838 (bound 400), size or
#: mean |f| ratios 0.91-1.20 (bounds 0.5-2) and no sign against EP's, 0.4-1.3 CPU s a seed (13-22 s
#: for Poisson-square). Each preset keeps the seed of its highest R-hat and the seed of its lowest
#: ESS, the two checks nearest their bounds (the step preset's R-hat seed 4 is one of the seeds 2-7
#: that failed before its fix). Poisson-square keeps seeds 0 and 3: both checks of an even likelihood
#: (the size ratio and the full convergence verdict) on two data sets, 14-22 s each.
SAMPLED_SEEDS = {
    "sharp step": (1, 7),
    "sine boundary": (2, 5),
    "noisy boundary": (4, 7),
    "imbalanced classes": (0, 4),
    "step likelihood, eps = 0 (EP vs QP differ)": (0, 4),
    "far-out cavities, kernel variance 100 (EP vs QP differ)": (4, 6),
    "Poisson-square, small counts (EP vs QP differ)": (0, 3),
    "coal-mining disasters": (3, 4),
    "synthetic Poisson rate": (0, 1),
    "outliers, Student-t": (2, 5),
    "outliers, Laplace": (6, 7),
    "cloglog": (1, 5),
}


def preset_cases() -> list[tuple[str, int]]:
    """(preset, seed) of every case that runs: all eight seeds of each preset, or the sample above
    (every seed of a preset the sample does not name: a new preset runs in full until it is measured)."""
    return [(name, seed) for name in presets.PRESETS for seed in SEEDS
            if FULL_SWEEPS or seed in SAMPLED_SEEDS.get(name, SEEDS)]


def _model(name: str, seed: int):
    data = presets.make(name, 60, seed)
    return data, explorer.build_likelihood(data.likelihood, **data.likelihood_params), \
        oned.make_kernel(data.kernel, data.variance, data.lengthscale)


def _verdict_matches_numbers(ref) -> None:
    passes = ref.rhat < diagnostics.RHAT_THRESHOLD and ref.ess >= diagnostics.ESS_THRESHOLD
    assert ref.converged == passes, ref.convergence()
    text = ref.convergence()
    assert text.startswith("converged (R-hat" if passes else "not converged (R-hat"), text
    assert "ESS" in text and text.count(" s") >= 1


# one case per seed: parallel workers share the slow presets (ids as before: "<preset>-<seed>")
@pytest.mark.parametrize("name, seed", preset_cases())
def test_reference_agrees_with_ep_and_reports_its_diagnostics(name, seed):
    data, lik, kernel = _model(name, seed)
    ep = oned.fit_methods(data.X, data.y, lik, kernel, methods=("ep",))["ep"]  # EP's warnings are off here
    start = time.process_time()
    ref = oned.mcmc_reference(data.X, data.y, lik, kernel, time_budget=math.inf)
    seconds = time.process_time() - start
    where = f"{name}, seed {seed}: {ref.convergence()}, {seconds:.1f} CPU s"
    assert seconds < 60.0, where
    assert math.isfinite(ref.rhat) and math.isfinite(ref.ess), where
    _verdict_matches_numbers(ref)
    m_ep, m = ep.train_mean, ref.train_mean
    if lik.even_in_f:
        # the data identify |f| only (qpviz.inference.mcmc): compare the size sqrt(E f^2) of the
        # latent (the rate's scale), not its sign; converged by the full criterion on |f|.
        size = np.mean(np.sqrt(m**2 + ref.train_var)) / np.mean(np.sqrt(m_ep**2 + ep.train_var))
        assert 0.5 <= size <= 2.0, f"{where}: size ratio {size:.3f}"
        assert ref.converged, where
        return
    clear = np.abs(m_ep) > 0.25 * np.max(np.abs(m_ep))
    assert np.all(np.sign(m[clear]) == np.sign(m_ep[clear])), where
    ratio = np.mean(np.abs(m)) / np.mean(np.abs(m_ep))
    assert 0.5 <= ratio <= 2.0, f"{where}: mean |f| ratio {ratio:.3f}"
    assert ref.converged, where


#: The GP 2-D presets' seeds: both with QPVIZ_FULL_SWEEPS=1, else the one of the higher R-hat. Both
#: seeds of every preset passed with R-hat <= 1.0028, bulk ESS >= 2764, all clear signs as EP's and
#: mean |f| ratios 0.993-1.006 (2026-11-27, 1.2-1.4 CPU s a seed).
GP2D_SEEDS = {"moons": (1,), "xor": (1,), "circles": (1,), "gaussians": (1,), "banana": (0,)}


@pytest.mark.parametrize("name", list(GP2D_SEEDS))
def test_gp2d_reference_agrees_with_ep_on_the_grid(name):
    """The GP 2-D page's reference (its default kernel, 100 points, its MCMC settings) for seed 0
    and 1 (one of them unless QPVIZ_FULL_SWEEPS=1: GP2D_SEEDS)."""
    kernel = RBF(variance=4.0, lengthscale=0.8)
    for seed in (0, 1) if FULL_SWEEPS else GP2D_SEEDS[name]:
        X, y = twod.make_preset(name, 100, seed)
        ep = twod.fit_grid(X, y, kernel, methods=("ep",), grid_size=20)
        start = time.process_time()
        ref = twod.mcmc_grid(X, y, kernel, grid_size=20, chains=4, n_samples=1000, burn_in=1000, thin=20,
                             time_budget=math.inf)
        assert time.process_time() - start < 60.0
        report = ref.mcmc_diagnostics
        where = f"{name}, seed {seed}: {report['status']}"
        assert ref.converged["mcmc"] and report["rhat"] < diagnostics.RHAT_THRESHOLD, where
        assert report["ess"] >= diagnostics.ESS_THRESHOLD and report["status"].startswith("converged"), where
        m_ep, m = ep.mean["ep"], ref.mean["mcmc"]
        clear = np.abs(m_ep) > 0.25 * np.max(np.abs(m_ep))
        assert np.mean(np.sign(m[clear]) == np.sign(m_ep[clear])) > 0.99, where
        assert 0.5 <= np.mean(np.abs(m)) / np.mean(np.abs(m_ep)) <= 2.0, where


def test_the_sample_names_presets_and_seeds_of_the_sweep():
    """A renamed preset or a seed outside SEEDS in SAMPLED_SEEDS would leave a sample that runs nothing
    it claims to."""
    assert set(SAMPLED_SEEDS) <= set(presets.PRESETS), set(SAMPLED_SEEDS) - set(presets.PRESETS)
    assert all(seeds and set(seeds) <= set(SEEDS) for seeds in SAMPLED_SEEDS.values()), SAMPLED_SEEDS
    assert set(GP2D_SEEDS) <= set(twod.PRESETS), set(GP2D_SEEDS) - set(twod.PRESETS)
    assert all(seeds and set(seeds) <= {0, 1} for seeds in GP2D_SEEDS.values()), GP2D_SEEDS
