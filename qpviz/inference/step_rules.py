"""Hyper-parameter step rules of SEP (:mod:`.sep`; paper 003 supplement A.6): Adadelta with
minibatches (:class:`qpviz.inference.stochastic.Adadelta`) and the sign-adaptive rates of batch
mode (:class:`SignAdaptiveSteps`). Each has ``step(grad) -> increment`` for ascent."""
from __future__ import annotations

import numpy as np

from qpviz.inference.stochastic import Adadelta

__all__ = ["SignAdaptiveSteps", "STEP_RULES"]


class SignAdaptiveSteps:
    """Paper 003's batch-mode learning rates (supplement A.6, last paragraph): one rate per
    parameter, x 1.02 while its gradient keeps its sign, x 1/2 when the sign flips; ascent
    x <- x + rate * g. The first rates make every first step ``initial_step`` long
    (rate_0 = initial_step / |g_0|), so the rule does not depend on the gradient's scale (N);
    a step is at most ``max_step`` per coordinate (the sites must follow the hyper-parameters:
    with initial_step 1e-2 and no cap, the 1.02^k growth gave a step on the 2,000-point test
    problem that threw log Z_q from -401 to -687 before it recovered)."""

    def __init__(self, size: int, initial_step: float = 1e-3, max_step: float = 0.02):
        self.initial_step, self.max_step = float(initial_step), float(max_step)
        self.rate = None
        self.previous = np.zeros(size)

    def step(self, grad) -> np.ndarray:
        grad = np.asarray(grad, float)
        if self.rate is None:
            self.rate = self.initial_step / np.maximum(np.abs(grad), 1e-12)
        else:
            self.rate = np.where(np.sign(grad) == np.sign(self.previous), 1.02 * self.rate, 0.5 * self.rate)
        self.previous = grad
        self.rate = np.minimum(self.rate, self.max_step / np.maximum(np.abs(grad), 1e-12))
        return self.rate * grad


#: hyper-parameter step rules: Adadelta (paper 003 with minibatches) and the batch-mode sign rule
STEP_RULES = {"adadelta": Adadelta, "sign": SignAdaptiveSteps}
