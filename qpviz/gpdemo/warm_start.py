"""EP / QP sites carried over to edited data: a page's next fit starts from its last one.

A click adds or removes one point; the sites of the points that stay barely move (EP's fixed
point depends on every site, but one point changes it a little), so the fit after the click
starts from them and needs fewer sweeps to the same tolerance (the fixed point does not depend
on where the sweeps start). A point that is new starts from the likelihood's own initial site.
"""
from __future__ import annotations

import numpy as np

__all__ = ["carried_sites"]


def carried_sites(old_X, old_y, old_tau, old_nu, new_X, new_y, initial) -> tuple[np.ndarray, np.ndarray] | None:
    """Sites (tau, nu) for the data (new_X, new_y): the old sites for the same data; else each
    point that was in (old_X, old_y), same inputs and same target, keeps its old site (a repeated point: one old site each, in order);
    the others get ``initial`` = the likelihood's starting (tau, nu) for new_y. None when no
    point was kept (nothing to carry: start as usual)."""
    old_X = np.asarray(old_X, float).reshape(len(old_y), -1)
    new_X = np.asarray(new_X, float).reshape(len(new_y), -1)
    tau, nu = (np.array(a, dtype=np.float64) for a in initial)
    if old_tau is None or old_nu is None or len(old_tau) != len(old_y) or old_X.shape[1] != new_X.shape[1]:
        return None
    if np.array_equal(old_X, new_X) and np.array_equal(old_y, new_y):  # the same data (a hyper-parameter step)
        return np.array(old_tau, dtype=np.float64), np.array(old_nu, dtype=np.float64)
    unused: dict[bytes, list[int]] = {}
    for i in range(len(old_y) - 1, -1, -1):  # popped from the end: the first old copy goes first
        unused.setdefault(_point_key(old_X[i], old_y[i]), []).append(i)
    kept = 0
    for j in range(len(new_y)):
        found = unused.get(_point_key(new_X[j], new_y[j]))
        if found:
            i = found.pop()
            tau[j], nu[j] = old_tau[i], old_nu[i]
            kept += 1
    return (tau, nu) if kept else None


def _point_key(x: np.ndarray, y) -> bytes:
    return np.ascontiguousarray(x, dtype=np.float64).tobytes() + np.float64(y).tobytes()
