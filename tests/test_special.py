"""numba special functions against SciPy / mpmath."""
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import special

from qpviz import special as qs


def test_log_ndtr_against_mpmath_everywhere():
    mp.mp.dps = 40
    xs = np.concatenate([np.linspace(-300, -25, 60), np.linspace(-25, 12, 300)])
    got = np.array([qs.log_ndtr(x) for x in xs])
    # log Phi(x) = log1p(-Phi(-x)) keeps the digits of a tiny upper tail
    want = np.array([float(mp.log1p(-mp.ncdf(-mp.mpf(x))) if x > 0 else mp.log(mp.ncdf(mp.mpf(x)))) for x in xs])
    # rtol: erfc(x/sqrt2) inherits the rounding of x/sqrt2, amplified by x^2 in the far tail
    np.testing.assert_allclose(got, want, rtol=5e-14, atol=0)
    # and SciPy agrees to its own accuracy
    np.testing.assert_allclose(got, special.log_ndtr(xs), rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", [1e-300, 1e-200, 1e-50, 1e-10, 1e-3, 0.02, 0.02425, 0.1, 0.3, 0.4999, 0.5])
def test_ndtri_lower_full_precision(p):
    assert qs.ndtri_lower(p) == pytest.approx(special.ndtri(p), rel=4e-16, abs=1e-16)


def test_ndtri_lower_dense_against_scipy():
    ps = np.exp(np.linspace(np.log(1e-250), np.log(0.5), 2000))
    got = np.array([qs.ndtri_lower(p) for p in ps])
    np.testing.assert_allclose(got, special.ndtri(ps), rtol=1e-15, atol=1e-15)


def test_phi_of_ndtri_is_symmetric_and_zero_at_the_ends():
    for p in (1e-12, 0.01, 0.3):
        assert qs.phi_of_ndtri(p) == pytest.approx(qs.phi_of_ndtri(1 - p), rel=1e-10)
    assert qs.phi_of_ndtri(0.0) == 0.0
    assert qs.phi_of_ndtri(1.0) == 0.0
    assert qs.phi_of_ndtri(0.5) == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-15)


@pytest.mark.parametrize("z", [-200.0, -60.0, -10.0, -5.0001, -4.999, -1.0, 0.0, 3.0])
def test_truncation_terms_against_mpmath(z):
    mp.mp.dps = 60
    zz = mp.mpf(z)
    r = mp.npdf(zz) / mp.ncdf(zz)
    factor = 1 - r * (zz + r)
    got_r, got_r_plus_z, got_factor = qs.truncation_terms(z)
    assert got_r == pytest.approx(float(r), rel=1e-14)
    assert got_r_plus_z == pytest.approx(float(r + zz), rel=1e-12)
    assert got_factor == pytest.approx(float(factor), rel=1e-12)


def test_log1pexp_and_logaddexp():
    xs = np.linspace(-800, 800, 4001)
    np.testing.assert_allclose([qs.log1pexp(x) for x in xs], np.logaddexp(0, xs), rtol=1e-15, atol=1e-300)
    assert qs.logaddexp(-np.inf, 2.0) == 2.0
    assert qs.logaddexp(1.0, 2.0) == pytest.approx(np.logaddexp(1.0, 2.0), rel=1e-15)
