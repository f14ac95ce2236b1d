"""What every stochastic (minibatch) trainer shares: Adadelta steps, epochs of minibatches and a
training record (issue 13: SEP and SVI, paper 003 sec. 4.5).

* :class:`Adadelta` (Zeiler 2012, paper 003's [19]; rho = 0.9, eps = 1e-5 as paper 003 sec. 4.5):
  per-parameter steps

      E[g^2] <- rho E[g^2] + (1 - rho) g^2
      step    = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g        (ascent: x <- x + step)
      E[dx^2] <- rho E[dx^2] + (1 - rho) step^2

* :func:`minibatches`: one epoch, a shuffled partition of 0..N-1 into batches of at most ``size``.
* :class:`TrainingRecord`: the per-step ``history`` a trainer returns (wall time, epoch, the
  objective's estimate, and the validation test error / NTLL when validation data are given), a
  progress bar for command-line runs and a stop request (a ``threading.Event`` or a callback) that
  ends training after the current step, keeping the last state usable.
"""
from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["Adadelta", "minibatches", "steps_per_epoch", "check_positive_int", "inducing_problem", "TrainingRecord"]


class Adadelta:
    """Adadelta steps for maximising (module docstring); ``step(grad)`` returns the increment."""

    def __init__(self, size: int, rho: float = 0.9, eps: float = 1e-5):
        if not 0.0 < rho < 1.0:
            raise ValueError(f"Adadelta's decay rho must be in (0, 1); got {rho!r}")
        if not eps > 0.0:
            raise ValueError(f"Adadelta's eps must be positive; got {eps!r}")
        self.rho, self.eps = float(rho), float(eps)
        self.mean_sq_grad = np.zeros(size)
        self.mean_sq_step = np.zeros(size)

    def step(self, grad) -> np.ndarray:
        grad = np.asarray(grad, float)
        if grad.shape != self.mean_sq_grad.shape:
            raise ValueError(f"gradient of shape {grad.shape}; this Adadelta has {self.mean_sq_grad.shape}")
        rho, eps = self.rho, self.eps
        self.mean_sq_grad = rho * self.mean_sq_grad + (1.0 - rho) * grad * grad
        step = np.sqrt(self.mean_sq_step + eps) / np.sqrt(self.mean_sq_grad + eps) * grad
        self.mean_sq_step = rho * self.mean_sq_step + (1.0 - rho) * step * step
        return step


def check_positive_int(value, name: str) -> int:
    """``value`` as an int, or a ValueError naming ``name`` when it is not a positive integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def steps_per_epoch(n: int, size: int) -> int:
    """Minibatches of :func:`minibatches` in one epoch: ceil(n / size)."""
    return -(-int(n) // int(size))


def minibatches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch: a random permutation of 0..n-1 cut into consecutive batches of ``size`` (the
    last may be smaller); ``size >= n`` gives one batch with every index, in order."""
    size = check_positive_int(size, "minibatch (points per step)")
    if size >= n:
        return [np.arange(n)]
    order = rng.permutation(n)
    return [order[start:start + size] for start in range(0, n, size)]


def inducing_problem(X, y, likelihood, kernel, inducing, seed: int, need_gradients: bool):
    """What SEP and SVI check first: (likelihood object, X, y, Z). ``likelihood``: a name or a
    qpviz likelihood; ``inducing``: Z (M, D) or an int M (K-means centres of X, ``seed``), M <= N;
    ``need_gradients``: the kernel must have vector-Jacobian products (learning it and Z)."""
    from qpviz.inference.inducing import as_inducing, check_training_data  # noqa: PLC0415
    from qpviz.likelihoods import as_likelihood  # noqa: PLC0415

    lik = as_likelihood(likelihood)
    X, y = check_training_data(kernel, X, y, lik)
    Z = as_inducing(inducing, X, seed)
    if Z.shape[0] > X.shape[0]:
        raise ValueError(f"{Z.shape[0]} inducing points for {X.shape[0]} data points: use at most {X.shape[0]}")
    if need_gradients:
        try:
            kernel.cross_vjp(Z[:1], Z[:1], np.zeros((1, 1)))
        except NotImplementedError as err:
            raise ValueError(f"learning the kernel and Z needs kernel gradients: {err}") from None
    return lik, X, y, Z


class TrainingRecord:
    """The history of one training run (module docstring).

    ``validation``: None or (X_val, y_val); ``evaluate(X_val, y_val)`` -> {"test_error", "ntll"}
    is called on each recorded step (every ``every`` steps and the last). ``stop``: None, a
    ``threading.Event`` (set it to stop) or a callable returning True to stop. ``callback(entry)``
    sees each recorded entry (a live plot). ``progress``: a tqdm bar on stderr over ``total`` steps
    (None: a counter without an end).
    """

    def __init__(self, total: int | None, *, label: str, validation=None, every: int = 1, stop=None, callback=None,
                 progress: bool = False):
        if validation is not None:
            if not isinstance(validation, (tuple, list)) or len(validation) != 2:
                raise TypeError("validation must be a pair (X_val, y_val)")
        self.validation = validation
        self.every = max(int(every), 1)
        self.stop, self.callback = stop, callback
        self.history: list[dict] = []
        self.stopped = False
        self._start = time.perf_counter()
        self._paused = 0.0  # time spent on validation: not training time
        self._bar = None
        if progress:
            from tqdm import tqdm  # noqa: PLC0415 - command-line runs only

            self._bar = tqdm(total=None if total is None else int(total), unit="step", desc=label, file=sys.stderr,
                             leave=False)

    def wall_time(self) -> float:
        """Seconds of training so far (validation excluded)."""
        return time.perf_counter() - self._start - self._paused

    def stop_requested(self) -> bool:
        if self.stop is None:
            return False
        if hasattr(self.stop, "is_set"):
            return bool(self.stop.is_set())
        return bool(self.stop())

    def step(self, step: int, epoch: int, objective: float, evaluate=None, last: bool = False, live=None,
             **extra) -> bool:
        """Record step ``step`` (1-based) and return True to go on (False: stop requested).

        ``extra`` numbers go into the history; ``live`` (a dict, e.g. the current inducing inputs)
        reaches the callback only, so that a live view can draw it without the history keeping a
        copy per step."""
        if self._bar is not None:
            self._bar.update(1)
        if step % self.every == 0 or last or self.stop_requested():
            entry = {"step": int(step), "epoch": int(epoch), "wall_time": self.wall_time(),
                     "objective": float(objective), **extra}
            if self.validation is not None and evaluate is not None:
                paused = time.perf_counter()
                entry.update(evaluate(*self.validation))
                self._paused += time.perf_counter() - paused
            self.history.append(entry)
            if self.callback is not None:
                self.callback({**entry, **live} if live else entry)
        if self.stop_requested():
            self.stopped = True
            return False
        return True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
