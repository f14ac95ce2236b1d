"""Dropping SEP's stale sites in the first epoch (:mod:`.sep`, issue 24).

With minibatches, a site is stored on the direction a_n = K_uu^-1 k_un of the kernel and Z at the
step it was fitted (module docstring of :mod:`.sep`). In the first steps the hyper-parameters
move far (on 200,000 points of a sharp-boundary problem, M = 200: the length scale from 1 to 0.32
and the signal variance from 1 to 1.25 and back within 300 steps), so the sites fitted then sit on
directions that no longer describe their points, and in the first epoch nothing refits them: q(u)
carried them until the second epoch revisited them (SEP's test NTLL 0.0052 behind SVI's at step
900; with the same final kernel and Z held fixed from the start, SEP's sites alone reached
0.2375 at step 100 and 0.2328 at step 500). :class:`StaleSites` drops them.

At the checkpoints, every ``every`` steps of the first epoch up to step ``last``, the sums
(Lambda, b) of the sites are snapshotted; at a checkpoint t the sites fitted up to the previous
checkpoint t - every are dropped (their sum is the snapshot's, exact: in the first epoch no site is
refitted) if the kernel's log hyper-parameters moved by more than ``tolerance`` (any one of them)
since then; q(u) then keeps the sites of the last ``every`` steps, fitted at nearly the current
hyper-parameters, the rest of the epoch adds the sites of new points, and the points whose sites
were dropped get new ones when the second epoch visits them. Once the hyper-parameters settle,
nothing more is dropped. Costs O(M^2) per checkpoint on the master and O(N) on the shards.

Why every 50 steps up to step 200 (measured, benchmarks/results/bench_sep_accuracy_far.txt):
- The rule before, checkpoints at 50 x 2^k in the first half of the epoch, left SEP far behind SVI
  when the kernel started far from its optimum. Started twenty times too smooth (length scale 10,
  optimum ~0.5; 40,000 points, 200 steps an epoch) the length scale was still falling after
  step 100, its last checkpoint, and the sites of steps 51-100 stayed in q until the second epoch:
  test NTLL 0.454 at step 200 and 0.397 at step 300, against SVI's 0.246 and 0.241. With a
  checkpoint every 50 steps: 0.326 and 0.282, and ahead of SVI from step 400 on (before: 600).
- Checkpoints every 50 steps through the whole first epoch cost too much data on the flights: the
  kernel (eight length scales) kept moving by more than the tolerance between checkpoints until
  step 1,200, so q held only the last 50 steps' sites and SEP fell behind SVI at steps 500-800
  (NTLL 0.580 against 0.576 at step 500). 200 steps of at most 0.02 each (the sign rule's cap)
  leave room for a move by a factor of 55; after that a drop leaves too few sites. On the 100k and
  200k problems the curve is then within 0.001 of the rule before's at every record; on the flights
  0.010 above it at step 200 (still 0.048 below SVI's), within 0.001 from step 400 on.
"""
from __future__ import annotations

import numpy as np

__all__ = ["StaleSites", "CHECKPOINT_EVERY", "LAST_CHECKPOINT", "STALE_TOLERANCE"]

#: steps between the first epoch's checkpoints
CHECKPOINT_EVERY = 50
#: the first epoch's last checkpoint (steps)
LAST_CHECKPOINT = 200
#: a kernel log hyper-parameter that moved more than this since a checkpoint makes its sites stale
STALE_TOLERANCE = 0.05


class StaleSites:
    """Checkpoints of the first epoch (module docstring). :meth:`after_step` returns the site sums
    to go on with and the last step whose sites the shards must drop (or None)."""

    def __init__(self, steps_per_epoch: int, every: int = CHECKPOINT_EVERY, last: int = LAST_CHECKPOINT,
                 tolerance: float = STALE_TOLERANCE):
        self.every, self.tolerance = int(every), float(tolerance)
        self.next_checkpoint, self.last_checkpoint = self.every, min(int(steps_per_epoch), int(last))
        self.snapshot = None  # (step, log hyper-parameters, Lambda, b) at the last checkpoint
        self.dropped = []  # the steps up to which sites were dropped

    def after_step(self, step: int, epoch: int, log_params, prec, lin):
        if epoch != 1 or step != self.next_checkpoint or step > self.last_checkpoint:
            return prec, lin, None
        self.next_checkpoint += self.every
        drop = None
        if self.snapshot is not None:
            then, params_then, prec_then, lin_then = self.snapshot
            if np.max(np.abs(np.asarray(log_params) - params_then)) > self.tolerance:
                prec, lin, drop = prec - prec_then, lin - lin_then, then
                self.dropped.append(then)
        self.snapshot = (step, np.array(log_params, float), prec.copy(), lin.copy())
        return prec, lin, drop
