"""qpviz.inference.stochastic: Adadelta, minibatch epochs, the training record (issue 13)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from qpviz.inference.stochastic import Adadelta, TrainingRecord, minibatches


def test_adadelta_follows_zeilers_recursion_step_by_step():
    rho, eps = 0.9, 1e-5
    opt = Adadelta(2, rho=rho, eps=eps)
    mean_g2, mean_dx2 = np.zeros(2), np.zeros(2)
    for grad in ([1.0, -2.0], [0.5, 0.0], [-3.0, 1.0]):
        g = np.array(grad)
        mean_g2 = rho * mean_g2 + (1 - rho) * g**2
        expected = np.sqrt(mean_dx2 + eps) / np.sqrt(mean_g2 + eps) * g
        mean_dx2 = rho * mean_dx2 + (1 - rho) * expected**2
        assert np.allclose(opt.step(g), expected, rtol=1e-14, atol=0)


def test_adadelta_climbs_a_concave_function():
    opt, x = Adadelta(1), np.array([5.0])
    for _ in range(3000):
        x = x + opt.step(-2.0 * (x - 1.0))  # ascent on -(x - 1)^2
    assert abs(x[0] - 1.0) < 0.05


def test_adadelta_rejects_bad_settings_and_shapes():
    with pytest.raises(ValueError, match="rho"):
        Adadelta(1, rho=1.0)
    with pytest.raises(ValueError, match="eps"):
        Adadelta(1, eps=0.0)
    with pytest.raises(ValueError, match="shape"):
        Adadelta(2).step([1.0])


def test_minibatches_partition_every_index_once_per_epoch():
    rng = np.random.default_rng(0)
    batches = minibatches(103, 20, rng)
    assert [b.size for b in batches] == [20] * 5 + [3]
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(103))
    assert not np.array_equal(np.concatenate(batches), np.arange(103))  # shuffled
    assert np.array_equal(minibatches(10, 50, rng)[0], np.arange(10))  # one full batch, in order
    with pytest.raises(ValueError, match="positive integer"):
        minibatches(10, 0, rng)


def test_training_record_keeps_history_validation_and_live_data_apart():
    seen = []
    record = TrainingRecord(5, label="t", validation=(np.zeros((2, 1)), np.ones(2)), every=2, callback=seen.append)
    evaluate = lambda X, y: {"test_error": 0.25, "ntll": 0.5}  # noqa: E731
    for step in range(1, 6):
        assert record.step(step, 1, -float(step), evaluate=evaluate, last=step == 5, live={"inducing": [step]})
    assert [e["step"] for e in record.history] == [2, 4, 5]
    assert all(e["test_error"] == 0.25 and "inducing" not in e for e in record.history)
    assert [e["inducing"] for e in seen] == [[2], [4], [5]]
    times = [e["wall_time"] for e in record.history]
    assert times == sorted(times)


def test_a_stop_request_ends_training_after_the_current_step_and_is_recorded():
    stop = threading.Event()
    record = TrainingRecord(10, label="t", every=100, stop=stop)
    assert record.step(1, 0, 0.0)
    stop.set()
    assert not record.step(2, 0, 1.0)
    assert record.stopped and record.history[-1]["step"] == 2  # the last state is in the history
    with pytest.raises(TypeError, match="pair"):
        TrainingRecord(1, label="t", validation=np.zeros(3))
