"""Pure-NumPy adaptive quadrature of 1-D tilted distributions q(f) = p(y|f) N(f|m, v) / Z.

The engine needs only a vectorised ``log_prob(y, f)`` (and, optionally, the break points
``kinks(y)`` where log p is not smooth), so it serves likelihoods that users write in Python; it
is also the NumPy reference the numba engine (:mod:`qpviz.tilted`) can be checked against.

Everything is vectorised over the points (y, m, v) and over the quadrature panels: each stage
below is a short loop over *levels*, and each level makes one ``log_prob`` call on a flat array
of nodes of all points and all panels.

1. Locate the mass (no derivatives needed). A grid over m +- 10 s (s = sqrt v), plus points at
   and next to the kinks, is widened until log q at both ends lies ``TAIL_LOG_DROP`` nats below
   the grid's peak. Every local maximum of the grid within that range is zoomed (a 9-point grid
   on the two neighbouring cells, repeated) until the peak is resolved; the curvature of the last
   grid gives a width w. The support is trimmed to the grid cells that carry mass.
2. Pass 1: composite Gauss-Legendre panels (``GL_NODES`` nodes) between break points (the
   kinks, each mode and mode +- 2w, 6w, 16w, 40w); breadth-first bisection until each panel and
   its two halves agree to ``rel_tol * 1e-2`` of the mass. log Z, mean and variance follow.
   Log densities are relative to an anchor a (the highest mode):
   log q(f) - log q(a) = log p(y|f) - log p(y|a) - (f - a)(f + a - 2m) / 2v, which does not
   cancel when a lies many cavity widths from m.
3. Pass 2 (sigma_QP, QP paper eq. 7): F at the nodes is the mass of the panels to the left
   plus a spectral (Legendre) cumulative integral inside the panel, and the survival function
   S is the mass to the right plus the spectral integral to the panel's right end, so
   phi(Phi^-1(min(F, S))) never suffers 1 - F cancellation. Panels are bisected again until the
   integral of that integrand settles (it behaves like F sqrt(2 log 1/F) at a hard truncation).
4. CDF and quantiles: F(x) = (mass left of x's panel + GL on [a_k, x]) / Z and
   S(x) = (mass right of the panel + GL on [x, b_k]) / Z; outside the support the tail
   int_{-inf}^x q (or int_x^inf q) is its own adaptive integral, relative to q(x), so the far
   tails keep their relative accuracy. Quantiles solve log F(x) = log u (or log S(x) = log(1 - u)
   for u > 1/2) by safeguarded Newton.

Nothing is silent: panels or levels running out set ``ok = False``; NaN or +inf from
``log_prob``, and invalid cavities, raise ``ValueError``.

The stages are one module each: :mod:`.context` (inputs, log q), :mod:`.locate` (1),
:mod:`.panels` (2, the Gauss-Legendre panels), :mod:`.summary` (moments and sigma_QP,
:func:`tilted_summary`), :mod:`.tails` (4, :func:`tilted_cdf`) and :mod:`.quantile`
(:func:`tilted_quantile`). The names below are the public ones.
"""
from __future__ import annotations

from qpviz.tilted_numpy.panels import gauss_legendre_rules
from qpviz.tilted_numpy.quantile import tilted_quantile
from qpviz.tilted_numpy.summary import TiltedSummaryNumpy, tilted_summary
from qpviz.tilted_numpy.tails import tilted_cdf

__all__ = ["TiltedSummaryNumpy", "tilted_summary", "tilted_cdf", "tilted_quantile", "gauss_legendre_rules"]
