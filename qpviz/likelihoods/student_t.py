"""Student-t likelihood p(y | f) = t_nu((y - f) / scale) / scale: robust regression, not log-concave."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from qpviz._jit import JitKernels
from qpviz.likelihoods.base import Likelihood
from qpviz.likelihoods.parameter import Parameter
from qpviz.likelihoods.registry import register_likelihood


def _log_prob(params, y, f):
    nu = params[0]
    scale = params[1]
    r = (y - f) / scale
    return (math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu) - 0.5 * math.log(nu * math.pi)
            - math.log(scale) - 0.5 * (nu + 1.0) * math.log1p(r * r / nu))


def _dlog_prob(params, y, f, out):
    nu = params[0]
    scale = params[1]
    r = (y - f) / scale
    denom = nu + r * r
    out[0] = (nu + 1.0) * r / (scale * denom)
    out[1] = (nu + 1.0) * (r * r - nu) / (scale * scale * denom * denom)
    return 0.0


def _starts(params, y, m, v, out):
    # the tilted can be bimodal: one mode near the cavity, one near the observation
    out[0] = m
    out[1] = y
    out[2] = 0.5 * (m + y)
    return 0.0


@register_likelihood
class StudentT(Likelihood):
    """p(y | f) = Gamma((nu+1)/2) / (Gamma(nu/2) sqrt(nu pi) scale) (1 + ((y-f)/scale)^2/nu)^(-(nu+1)/2)."""

    name = "student_t"
    menu_rank = 80
    support = "real"
    log_concave = False
    parameters = (Parameter("nu", 4.0, lower=0.0, doc="degrees of freedom"),
                  Parameter("scale", 1.0, lower=0.0, doc="scale of the noise", fit_scale=True))
    presets = ({"nu": 3.0, "scale": 1.0}, {"nu": 4.0, "scale": 0.5}, {"nu": 10.0, "scale": 1.0})
    jit = JitKernels(_log_prob, _dlog_prob, starts=_starts)
    qp_table = {"fold": "real", "t_lo": 0.0, "t_hi": 20.0, "center_width": lambda params, k: (0.0, params["scale"])}

    def noise_variance(self):
        """scale^2 nu / (nu - 2); inf for nu <= 2."""
        return self.scale**2 * self.nu / (self.nu - 2.0) if self.nu > 2.0 else math.inf

    def log_prob(self, y, f):
        nu, scale = self.nu, self.scale
        r = np.subtract(y, f) / scale
        return (special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
                - np.log(scale) - (nu + 1) / 2 * np.log1p(r**2 / nu))

    def dlog_prob(self, y, f):
        nu, scale = self.nu, self.scale
        r = np.subtract(y, f) / scale
        denom = nu + r**2
        return (nu + 1) * r / (scale * denom), (nu + 1) * (r**2 - nu) / (scale**2 * denom**2)
