"""Likelihoods p(y | f) of one latent value, each one small class (see :mod:`.base`).

``qpviz.likelihood(name, **params)`` builds one by name:

============== ======================= ===================================================
name           parameters              observations
============== ======================= ===================================================
gaussian       variance (> 0)          real y
probit         (none)                  y in {-1, +1}
logistic       (none)                  y in {-1, +1}
step           eps in [0, 0.5)         y in {-1, +1}; eps = label-noise probability
poisson_square (none)                  counts y = 0, 1, 2, ...; rate f^2 (QP paper App. C.2)
poisson_exp    (none)                  counts y = 0, 1, 2, ...; rate exp(f)
student_t      nu (> 0), scale (> 0)   real y
laplace        scale (> 0)             real y
============== ======================= ===================================================
"""
from __future__ import annotations

from qpviz.likelihoods.base import InvalidObservation, Likelihood, TiltedMoments
from qpviz.likelihoods.gaussian import Gaussian
from qpviz.likelihoods.laplace import Laplace
from qpviz.likelihoods.logistic import Logistic
from qpviz.likelihoods.poisson_exp import PoissonExp
from qpviz.likelihoods.poisson_square import PoissonSquare
from qpviz.likelihoods.probit import Probit
from qpviz.likelihoods.step import Step
from qpviz.likelihoods.student_t import StudentT

__all__ = [
    "REGISTRY",
    "likelihood",
    "Likelihood",
    "TiltedMoments",
    "InvalidObservation",
    "Gaussian",
    "Probit",
    "Logistic",
    "Step",
    "PoissonSquare",
    "PoissonExp",
    "StudentT",
    "Laplace",
]

REGISTRY: dict[str, type[Likelihood]] = {
    cls.name: cls for cls in (Gaussian, Probit, Logistic, Step, PoissonSquare, PoissonExp, StudentT, Laplace)
}


def likelihood(name: str, **params) -> Likelihood:
    """Build a likelihood by name, e.g. ``likelihood("step", eps=0.1)``.

    Unknown names or parameters raise an error that lists what is accepted.
    """
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown likelihood {name!r}; choose one of {sorted(REGISTRY)}") from None
    return cls(**params)
