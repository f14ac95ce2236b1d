"""Where does a method over- or under-estimate the latent standard deviation? Ratios to MCMC's.

Shared by the "GP 1-D" (ratio along x) and "GP 2-D" (ratio maps) pages:

* :func:`sd_ratios`: sd_method / sd_MCMC at every grid point, NaN where the reference's sd is
  too small to divide by (the pages draw only the finite values);
* :func:`reference_error`: the relative standard error of MCMC's sd estimate, about
  1 / sqrt(2 ESS) for a sample standard deviation from ESS effective draws (normal
  approximation; the grid variances add the GP conditional variance, which has no Monte Carlo
  error, so this bounds the error from above);
* :func:`compare`: ratios, where each method's largest ratio lies inside the data's range, its
  average there, and a sentence reading the picture (e.g. "EP's sd is 1.4x the reference at
  x = 2; QP's 1.1x there"), saying which ratios cannot be told from 1 within twice the
  reference's error and that the comparison is unreliable when MCMC did not converge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["LABELS", "SD_FLOOR", "sd_ratios", "reference_error", "SdComparison", "compare", "data_region"]

#: Method names in sentences.
LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace"}
#: A reference sd at or below this is not divided by (the ratio is left undefined).
SD_FLOOR = 1e-9


def sd_ratios(variances: dict, reference_var) -> dict[str, np.ndarray]:
    """method -> sqrt(var_method) / sqrt(var_MCMC), elementwise; NaN where either variance is not
    finite or the reference's sd is <= :data:`SD_FLOOR` (or the method's variance is < 0)."""
    ref_sd = np.sqrt(np.clip(np.asarray(reference_var, float), 0.0, None))
    usable = np.isfinite(ref_sd) & (ref_sd > SD_FLOOR)
    out = {}
    for method, var in variances.items():
        var = np.asarray(var, float)
        ok = usable & np.isfinite(var) & (var >= 0)
        out[method] = np.divide(np.sqrt(np.where(ok, var, 0.0)), np.where(ok, ref_sd, 1.0),
                                out=np.full(var.shape, np.nan), where=ok)
    return out


def reference_error(ess: float) -> float:
    """Relative standard error of an sd estimated from ``ess`` effective draws: 1 / sqrt(2 ESS)
    (NaN when the ESS is unknown or not positive)."""
    return 1.0 / math.sqrt(2.0 * ess) if ess is not None and math.isfinite(ess) and ess > 0 else math.nan


def data_region(points, data) -> np.ndarray:
    """Grid points (G, d) inside the bounding box of the data (N, d): the averages' region."""
    points = np.asarray(points, float).reshape(len(points), -1)
    data = np.asarray(data, float).reshape(-1, points.shape[1])
    return np.all((points >= data.min(axis=0)) & (points <= data.max(axis=0)), axis=1)


def _where(point) -> str:
    point = np.ravel(point)
    if point.size == 1:
        return f"x = {point[0]:.3g}"
    return "(x1, x2) = (" + ", ".join(f"{v:.3g}" for v in point) + ")"


@dataclass
class SdComparison:
    """Each method's sd ratio to the MCMC reference, summarised (:func:`compare`)."""

    ratios: dict  #: method -> ratio per grid point (NaN where undefined), the grid's shape
    error: float  #: relative standard error of the reference's sd (1 / sqrt(2 ESS); NaN if unknown)
    peak: dict = field(default_factory=dict)  #: method -> (largest ratio in the data's range, its grid index)
    low: dict = field(default_factory=dict)  #: method -> (smallest ratio in the data's range, its grid index)
    average: dict = field(default_factory=dict)  #: method -> mean ratio over the data's range
    sentence: str = ""

    def finite(self, method: str, positions):
        """(positions, ratios) of ``method`` where its ratio is defined (what a plot may draw)."""
        ratio = np.ravel(self.ratios[method])
        keep = np.isfinite(ratio)
        return np.asarray(positions)[keep], ratio[keep]

    def band(self) -> tuple[float, float]:
        """1 -+ twice the reference's relative error: ratios inside cannot be told from 1 ((1, 1) if unknown)."""
        half = 2.0 * self.error if math.isfinite(self.error) else 0.0
        return 1.0 - half, 1.0 + half


def _close_to_one(value: float, error: float) -> bool:
    """Whether ``value`` lies within twice the reference's relative error of 1."""
    return math.isfinite(error) and abs(value - 1.0) <= 2.0 * error


def compare(variances: dict, reference_var, positions, data, ess: float, converged: bool = True,
            status: str = "") -> SdComparison:
    """The sd ratios of ``variances`` (method -> latent variance on the grid) to ``reference_var``
    (MCMC's, same shape) at grid ``positions`` (G, d) (``G`` = the grids' size, flattened row by
    row), summarised over the grid points inside the bounding box of ``data`` (N, d).

    The sentence names the method with the largest over-estimate (EP if shown: the lesson's
    question), its ratio and where, every other method's ratio there, the averages, and the
    reference's own error (``ess``); with ``converged`` False it starts by saying the
    comparison is unreliable (``status``: the reference's diagnostics).
    """
    ratios = sd_ratios(variances, reference_var)
    error = reference_error(ess)
    result = SdComparison(ratios, error)
    dims = np.asarray(data, float).reshape(len(data), -1).shape[1]
    positions = np.asarray(positions, float).reshape(-1, dims)
    region = data_region(positions, data)
    for method, ratio in ratios.items():
        flat = np.ravel(ratio)
        usable = region & np.isfinite(flat)
        if np.any(usable):
            indices = np.flatnonzero(usable)
            index, lowest = int(indices[np.argmax(flat[usable])]), int(indices[np.argmin(flat[usable])])
            result.peak[method] = (float(flat[index]), index)
            result.low[method] = (float(flat[lowest]), lowest)
            result.average[method] = float(np.mean(flat[usable]))
    parts = []
    if not converged:
        parts.append(f"This comparison is unreliable: the MCMC reference is {status or 'not converged'}.")
    if not result.peak:
        parts.append("No sd ratio is defined inside the data's range (the reference's sd is 0 or missing there).")
        result.sentence = " ".join(parts)
        return result
    lead = "ep" if "ep" in result.peak else max(result.peak, key=lambda m: result.peak[m][0])
    label = LABELS.get(lead, lead)
    value, index = result.peak[lead]
    there = {m: float(np.ravel(ratios[m])[index]) for m in result.peak}
    there = {m: r for m, r in there.items() if math.isfinite(r)}
    first = (f"{label}'s largest sd ratio to the reference is {value:.2f}x at {_where(positions[index])} "
             f"(its smallest {result.low[lead][0]:.2f}x at {_where(positions[result.low[lead][1]])})")
    others = [f"{LABELS.get(m, m)}'s {r:.2f}x" for m, r in there.items() if m != lead]
    parts.append(first + ("; " + ", ".join(others) + " there." if others else "."))
    close = [LABELS.get(m, m) for m, r in there.items() if _close_to_one(r, error)]
    if close:
        parts.append(f"There, within MCMC's own error of 1 (not distinguishable from it): {', '.join(close)}.")
    parts.append("Averaged over the data's range: " + ", ".join(
        f"{LABELS.get(m, m)} {a:.2f}x" for m, a in result.average.items()) + ".")
    if math.isfinite(error):
        parts.append(f"MCMC's own sd is known to about ±{100 * error:.1f}% (1/sqrt(2 ESS), ESS {ess:.0f}): "
                     f"ratios within 1 ± {2 * error:.3f} cannot be told from 1.")
    else:
        parts.append("The reference reports no ESS: its own error is unknown.")
    result.sentence = " ".join(parts)
    return result
