"""Hyper-parameter step rules of SEP (:mod:`.sep`; paper 003 supplement A.6): Adadelta with
minibatches (:class:`qpviz.inference.stochastic.Adadelta`) and the sign-adaptive rates of batch
mode (:class:`SignAdaptiveSteps`). Each has ``step(grad) -> increment`` for ascent."""
from __future__ import annotations

import numpy as np

from qpviz.inference.stochastic import Adadelta

__all__ = ["SignAdaptiveSteps", "STEP_RULES", "MINIBATCH_SMOOTHING", "make_step_rule"]


class SignAdaptiveSteps:
    """Paper 003's batch-mode learning rates (supplement A.6, last paragraph): one rate per
    parameter, x 1.02 while its gradient keeps its sign, x 1/2 when the sign flips; ascent
    x <- x + rate * g. The first rates make every first step ``initial_step`` long
    (rate_0 = initial_step / |g_0|), so the rule does not depend on the gradient's scale (N);
    a step is at most ``max_step`` per coordinate (the sites must follow the hyper-parameters:
    with initial_step 1e-2 and no cap, the 1.02^k growth gave a step on the 2,000-point test
    problem that threw log Z_q from -401 to -687 before it recovered).

    ``smoothing`` beta in [0, 1): the rule reads the bias-corrected exponential average
    m_t / (1 - beta^t), m_t = beta m_{t-1} + (1 - beta) g_t, m_0 = 0, instead of g_t (0: the paper's
    rule, exactly). Minibatch gradients need it: their signs flip on about every other step while
    the mean gradient keeps its sign, and x 1.02 / x 1/2 at random shrinks a rate by
    sqrt(1.02 / 2) per step on average, so the learning stops (measured on 200,000 points, M = 200,
    minibatch 200: the length scale froze after 1,000 steps and the signal variance after 3,000,
    far from their optimum). An average over ~1 / (1 - beta) steps keeps the sign of the mean."""

    def __init__(self, size: int, initial_step: float = 1e-3, max_step: float = 0.02, smoothing: float = 0.0):
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be in [0, 1) (0: no averaging); got {smoothing!r}")
        self.initial_step, self.max_step, self.smoothing = float(initial_step), float(max_step), float(smoothing)
        self.rate = None
        self.previous = np.zeros(size)
        self.average = np.zeros(size)
        self.steps = 0

    def step(self, grad) -> np.ndarray:
        grad = np.asarray(grad, float)
        if self.smoothing:
            self.steps += 1
            self.average = self.smoothing * self.average + (1.0 - self.smoothing) * grad
            grad = self.average / (1.0 - self.smoothing ** self.steps)
        if self.rate is None:
            self.rate = self.initial_step / np.maximum(np.abs(grad), 1e-12)
        else:
            self.rate = np.where(np.sign(grad) == np.sign(self.previous), 1.02 * self.rate, 0.5 * self.rate)
        self.previous = grad
        self.rate = np.minimum(self.rate, self.max_step / np.maximum(np.abs(grad), 1e-12))
        return self.rate * grad


#: The sign rule's gradient averaging with minibatches (:class:`SignAdaptiveSteps`); batch mode: none.
MINIBATCH_SMOOTHING = 0.9


def make_step_rule(name: str, size: int, minibatches: bool):
    """The step rule ``name`` of :data:`STEP_RULES` for ``size`` parameters; the sign rule averages
    the gradients of minibatches (:data:`MINIBATCH_SMOOTHING`)."""
    if name == "sign":
        return SignAdaptiveSteps(size, smoothing=MINIBATCH_SMOOTHING if minibatches else 0.0)
    return STEP_RULES[name](size)


#: hyper-parameter step rules: Adadelta (paper 003 with minibatches) and the batch-mode sign rule
STEP_RULES = {"adadelta": Adadelta, "sign": SignAdaptiveSteps}
