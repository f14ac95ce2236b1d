"""Input checks shared by the closed-form tilted CDFs: broadcast, finite, v > 0, labels."""
from __future__ import annotations

import numpy as np

__all__ = ["prepare", "check_labels"]


def prepare(x, y, m, v, what: str):
    try:
        arrays = [np.asarray(a, dtype=np.float64) for a in (x, y, m, v)]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: x, y, m and v must be numeric (numbers or arrays)") from exc
    x, y, m, v = np.broadcast_arrays(*arrays)
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(m)) and np.all(np.isfinite(v))):
        raise ValueError(f"{what}: y, cavity mean m and cavity variance v must be finite")
    if np.any(np.isnan(x)):
        raise ValueError(f"{what}: x contains NaN; pass the points where the CDF is wanted")
    if np.any(v <= 0):
        raise ValueError(f"{what}: the cavity variance v must be > 0, got min {v.min():g}; use e.g. v=1.0")
    return x, y, m, v


def check_labels(y, what: str):
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{what}: labels y must be -1 or +1; got {np.unique(y)[:6].tolist()}")
