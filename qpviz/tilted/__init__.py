"""Adaptive quadrature of the tilted distribution q(f) = p(y|f) N(f|m, v) / Z.

One engine serves every likelihood: log Z, mean, variance, entropy, CDF, quantiles and the QP
standard deviation (QP paper eq. 7)

    sigma_QP = int phi(Phi^-1(F(f))) df.

How (and why):

1. Locate the mass. Newton on log q from the likelihood's start points (``starts_scalar``) finds
   the modes and their curvature widths; the domain grows from the modes until log q has fallen
   ``TAIL_LOG_DROP`` nats below its peak (all likelihoods are bounded, so beyond the outermost
   mode the density decreases). Everything is in log space relative to the peak, so Z may
   underflow (Z = Phi(-200)) without harm.
2. Pass 1: adaptive Gauss-Legendre panels (``GL_NODES`` per panel, bisection until a panel and
   its two halves agree) for the mass, mean, variance and entropy. Break points at the modes,
   at mode +- 1, 2, 4, 8 widths and at the likelihood's kink keep narrow features visible.
3. Pass 2: panel by panel, the CDF at the nodes is the mass to the left plus a spectral
   (Legendre) cumulative integral inside the panel; the survival function is the mass to the
   right plus the rest of the panel, so neither tail suffers 1 - F cancellation. The integrand
   phi(Phi^-1(min(F, 1-F))) is integrated with the same bisection test, which also resolves its
   F sqrt(2 log 1/F) behaviour at a hard truncation (the eps = 0 step likelihood).

The kernels are numba scalar functions (``*_scalar``) with vectorised loops (``*_batch``) and
Python wrappers taking a likelihood object (:mod:`qpviz.likelihoods.base`). Tests compare them with
an independent mpmath computation (tests/reference.py) and with the closed forms.

Modules, one idea each:

* :mod:`qpviz.tilted.panels`: modes, domain and adaptive panels (steps 1-2);
* :mod:`qpviz.tilted.moments`: log Z, mean, variance, entropy and sigma_QP (steps 2-3);
* :mod:`qpviz.tilted.cdf`: CDF, survival function and quantiles;
* :mod:`qpviz.tilted.hermite`: the fast route of the EP/QP site kernels for nearly Gaussian tilted
  distributions (Gauss-Hermite in the Laplace frame, checked; the quadrature where it refuses);
* :mod:`qpviz.tilted.api`: the Python functions below, on likelihood objects.
"""
from __future__ import annotations

from qpviz.tilted.api import (
    QuadratureWarning,
    TiltedSummary,
    qp_std,
    quadrature_moments,
    tilted_cdf,
    tilted_quantile,
    tilted_summary,
)
from qpviz.tilted.moments import qp_std_scalar, summary_scalar, tilted_moments_scalar

__all__ = [
    "QuadratureWarning",
    "TiltedSummary",
    "tilted_summary",
    "quadrature_moments",
    "qp_std",
    "tilted_cdf",
    "tilted_quantile",
    "tilted_moments_scalar",
    "qp_std_scalar",
    "summary_scalar",
]
