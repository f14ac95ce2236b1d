"""Closed-form CDFs of three tilted distributions q(f) = p(y|f) N(f|m, v) / Z.

QP (QP paper 000, eq. 7) needs the CDF F of the tilted distribution; for three likelihoods it
has a closed form:

* :func:`probit_tilted_cdf`: p(y|f) = Phi(y f), Owen's T (paper 000, App. C.1, eqs. 35-49);
* :func:`step_tilted_cdf`: p(y|f) = eps + (1 - 2 eps) H(y f) (paper 002, eq. 3), a two-piece
  truncated normal;
* :func:`poisson_square_tilted_cdf`: p(y|f) = f^(2y) exp(-f^2) / y! (paper 000, App. C.2,
  eqs. 61-67), a binomial sum of incomplete gamma functions.

Every function broadcasts ``x, y, m, v`` with NumPy rules, returns float64 arrays, and gives the
CDF (``upper=False``) or the survival function 1 - F (``upper=True``). Both are computed
directly, never as 1 minus the other where that would cancel, so tails keep their relative
accuracy. The closed forms are used where they are well conditioned; where they would cancel
(tiny Z, far tails, alternating sums) a stable form of the *same* integral is used instead and
each function's docstring says which. The stable fallbacks integrate a positive, monotone,
log-space integrand with double-exponential (tanh-sinh / exp-sinh) nodes, which resolve any
length scale without tuning.

One module per likelihood (:mod:`.probit`, :mod:`.step`, :mod:`.poisson_square`) and the shared
pieces: :mod:`.inputs` (checks), :mod:`.logspace` (log-space sums, Mills ratios, normal
intervals) and :mod:`.quadrature` (the double-exponential fallback). The package name starts
with an underscore so that :mod:`qpviz.likelihoods` does not import it as a likelihood; the
likelihood classes call these functions from their ``_tilted_cdf``.
"""
from __future__ import annotations

from qpviz.likelihoods._tilted_cdfs.poisson_square import poisson_square_tilted_cdf
from qpviz.likelihoods._tilted_cdfs.probit import probit_tilted_cdf
from qpviz.likelihoods._tilted_cdfs.step import step_tilted_cdf

__all__ = ["probit_tilted_cdf", "step_tilted_cdf", "poisson_square_tilted_cdf"]
