"""Dropping SEP's stale sites in the first epoch (:mod:`.sep`, issue 24).

With minibatches, a site is stored on the direction a_n = K_uu^-1 k_un of the kernel and Z at the
step it was fitted (module docstring of :mod:`.sep`). In the first steps the hyper-parameters
move far (on 200,000 points of a sharp-boundary problem, M = 200: the length scale from 1 to 0.32
and the signal variance from 1 to 1.25 and back within 300 steps), so the sites fitted then sit on
directions that no longer describe their points, and in the first epoch nothing refits them: q(u)
carried them until the second epoch revisited them (SEP's test NTLL 0.0052 behind SVI's at step
900; with the same final kernel and Z held fixed from the start, SEP's sites alone reached
0.2375 at step 100 and 0.2328 at step 500). :class:`StaleSites` drops them.

At the checkpoints ``first`` x 2^k steps in the first half of the first epoch, the sums (Lambda, b) of the sites
are snapshotted; at a checkpoint t the sites fitted up to the previous checkpoint t/2 are dropped
(their sum is the snapshot's, exact: in the first epoch no site is refitted) if the kernel's log
hyper-parameters moved by more than ``tolerance`` (any one of them) since t/2; q(u) then keeps the
sites of the last t/2 steps, fitted at nearly the current hyper-parameters, the rest of the epoch
(at least t steps: no checkpoint in its second half) adds the sites of new points, and the points
whose sites were dropped get new ones when the second epoch visits them. Once the hyper-parameters
settle, nothing more is dropped. Costs O(M^2) per checkpoint on the master and O(N) on the shards.
"""
from __future__ import annotations

import numpy as np

__all__ = ["StaleSites", "FIRST_CHECKPOINT", "STALE_TOLERANCE"]

#: the first checkpoint (steps); the next ones double it
FIRST_CHECKPOINT = 50
#: a kernel log hyper-parameter that moved more than this since a checkpoint makes its sites stale
STALE_TOLERANCE = 0.05


class StaleSites:
    """Checkpoints of the first epoch (module docstring). :meth:`after_step` returns the site sums
    to go on with and the last step whose sites the shards must drop (or None)."""

    def __init__(self, steps_per_epoch: int, first: int = FIRST_CHECKPOINT, tolerance: float = STALE_TOLERANCE):
        self.next_checkpoint, self.tolerance = int(first), float(tolerance)
        self.last_checkpoint = steps_per_epoch // 2
        self.snapshot = None  # (step, log hyper-parameters, Lambda, b) at the last checkpoint
        self.dropped = []  # the steps up to which sites were dropped

    def after_step(self, step: int, epoch: int, log_params, prec, lin):
        if epoch != 1 or step != self.next_checkpoint or step > self.last_checkpoint:
            return prec, lin, None
        self.next_checkpoint *= 2
        drop = None
        if self.snapshot is not None:
            then, params_then, prec_then, lin_then = self.snapshot
            if np.max(np.abs(np.asarray(log_params) - params_then)) > self.tolerance:
                prec, lin, drop = prec - prec_then, lin - lin_then, then
                self.dropped.append(then)
        self.snapshot = (step, np.array(log_params, float), prec.copy(), lin.copy())
        return prec, lin, drop
