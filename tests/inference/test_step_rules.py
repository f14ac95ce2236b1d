"""SEP's hyper-parameter step rules (qpviz.inference.step_rules): the paper's sign-adaptive rates
against a direct transcription, and the averaged variant that minibatch gradients need."""
import numpy as np
import pytest

from qpviz.inference.step_rules import MINIBATCH_SMOOTHING, SignAdaptiveSteps, make_step_rule
from qpviz.inference.stochastic import Adadelta


def _paper_rule(gradients, initial_step=1e-3, max_step=0.02):
    """Paper 003 supplement A.6 written out step by step: rate x 1.02 on the same sign, x 1/2 on a flip,
    first step initial_step long, each step at most max_step."""
    steps, rate, previous = [], None, None
    for g in gradients:
        if rate is None:
            rate = [initial_step / max(abs(gi), 1e-12) for gi in g]
        else:
            rate = [r * (1.02 if np.sign(gi) == np.sign(pi) else 0.5) for r, gi, pi in zip(rate, g, previous)]
        rate = [min(r, max_step / max(abs(gi), 1e-12)) for r, gi in zip(rate, g)]
        previous = g
        steps.append([r * gi for r, gi in zip(rate, g)])
    return np.array(steps)


def test_without_smoothing_the_rule_is_the_papers():
    rng = np.random.default_rng(0)
    gradients = rng.standard_normal((300, 4)) * [1.0, 1e3, 1e-4, 5.0] + [0.5, 0.0, 1e-4, -2.0]
    rule = SignAdaptiveSteps(4)
    ours = np.array([rule.step(g) for g in gradients])
    np.testing.assert_allclose(ours, _paper_rule(gradients), rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_gradients_stop_the_raw_rule_and_not_the_averaged_one(seed):
    """Gradients whose sign is right on average (signal-to-noise 1, three scales): the raw rule's rates
    halve on every other step and it barely moves; on the running average it moves at nearly its
    largest step (0.02 a step) the whole way, whatever the gradient's scale."""
    rng = np.random.default_rng(seed)
    direction = np.array([1.0, 50.0, -0.01])
    moved = {}
    for smoothing in (0.0, MINIBATCH_SMOOTHING):
        rule, x = SignAdaptiveSteps(3, smoothing=smoothing), np.zeros(3)
        for _ in range(2000):
            x += rule.step(direction * (1.0 + rng.standard_normal(3)))
        moved[smoothing] = x * np.sign(direction)
    assert np.all(moved[0.0] < 0.5)
    assert np.all(moved[MINIBATCH_SMOOTHING] > 25.0)  # of at most 40


def test_the_averaged_rule_settles_on_gradients_that_are_noise_only():
    rng = np.random.default_rng(5)
    rule, x = SignAdaptiveSteps(3, smoothing=MINIBATCH_SMOOTHING), np.zeros(3)
    for _ in range(2000):
        x += rule.step(rng.standard_normal(3) * [1.0, 50.0, 0.01])
    assert np.all(np.abs(x) < 1.0)
    assert np.all(rule.rate * [1.0, 50.0, 0.01] < 1e-6)  # its rates have shrunk away


def test_smoothing_outside_zero_to_one_is_refused():
    for smoothing in (-0.1, 1.0, 2.0):
        with pytest.raises(ValueError, match=r"smoothing must be in \[0, 1\)"):
            SignAdaptiveSteps(2, smoothing=smoothing)


def test_make_step_rule_averages_only_minibatch_gradients():
    assert make_step_rule("sign", 5, minibatches=True).smoothing == MINIBATCH_SMOOTHING
    assert make_step_rule("sign", 5, minibatches=False).smoothing == 0.0
    assert isinstance(make_step_rule("adadelta", 5, minibatches=True), Adadelta)
