"""Closed-form tilted CDFs (qpviz.likelihoods._tilted_cdfs) against the mpmath reference.

Every case of ``reference.cdf_cases()`` (probit, step, Poisson-square; both labels / several
counts; tiny Z; m = 0 and x = m, the special cases of QP paper eqs. 47-49) is checked at the
points of ``reference.cdf_points`` (the tilted mean +- up to 40 standard deviations, the cavity
mean, and points at and beside the kinks), for both F and 1 - F:

* absolute error <= 1e-10 everywhere (the brief's requirement), and in fact <= 1e-13;
* relative error <= 1e-9 wherever the reference value is above 1e-290 (tails included).
"""
from __future__ import annotations

import numpy as np
import pytest
import reference

from qpviz.likelihoods import _tilted_cdfs as tilted_cdfs

FUNCTIONS = {
    "probit": lambda x, y, m, v, params, upper: tilted_cdfs.probit_tilted_cdf(x, y, m, v, upper=upper),
    "step": lambda x, y, m, v, params, upper: tilted_cdfs.step_tilted_cdf(x, y, m, v, params["eps"], upper=upper),
    "poisson_square": lambda x, y, m, v, params, upper: tilted_cdfs.poisson_square_tilted_cdf(
        x, y, m, v, upper=upper
    ),
}

ABS_TOL = 1e-13
REL_TOL = 1e-9
TINY = 1e-290


def _case_id(case):
    name, params, y, m, v = case
    p = ",".join(f"{k}={val}" for k, val in params.items())
    return f"{name}({p})-y={y:g}-m={m:g}-v={v:g}"


CASES = reference.cdf_cases()


def _relative_errors(got, want):
    got, want = np.asarray(got), np.asarray(want)
    big = want > TINY
    rel = np.zeros_like(want)
    rel[big] = np.abs(got[big] - want[big]) / want[big]
    return rel, big


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
@pytest.mark.parametrize("upper", [False, True], ids=["cdf", "sf"])
def test_cdf_matches_mpmath(case, upper):
    name, params, y, m, v = case
    ref = reference.cached_cdf_reference(*case)
    x = np.array(ref["x"])
    want = np.array(ref["upper" if upper else "lower"])
    got = FUNCTIONS[name](x, y, m, v, params, upper)
    assert got.shape == x.shape and got.dtype == np.float64
    assert np.all(np.isfinite(got))
    abs_err = np.abs(got - want)
    assert abs_err.max() <= ABS_TOL, f"max abs error {abs_err.max():.3g} at x={x[abs_err.argmax()]!r}"
    rel, big = _relative_errors(got, want)
    worst = int(np.argmax(rel))
    assert rel.max() <= REL_TOL, f"rel error {rel[worst]:.3g} at x={x[worst]!r}: got {got[worst]!r}, want {want[worst]!r}"
    # below the double range the reference is ~0: so must the closed form be
    assert np.all(got[~big] <= 1e-280)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_cdf_plus_survival_is_one_and_monotone(name):
    params = {"eps": 0.1} if name == "step" else {}
    y = 3.0 if name == "poisson_square" else -1.0
    for m, v in [(-2.0, 0.3), (0.0, 1.0), (4.0, 25.0)]:
        x = np.linspace(m - 10 * np.sqrt(v), m + 10 * np.sqrt(v), 401)
        lower = FUNCTIONS[name](x, y, m, v, params, False)
        upper = FUNCTIONS[name](x, y, m, v, params, True)
        np.testing.assert_allclose(lower + upper, 1.0, rtol=0, atol=4e-16 * 8)
        assert np.all(np.diff(lower) >= -4.5e-16)  # monotone up to rounding near 1
        assert lower[0] < 1e-6 and upper[-1] < 1e-6


def test_probit_special_cases_eqs_47_to_49():
    """x = m and/or m = 0: the lines where Owen's T arguments are infinite."""
    for y in (-1.0, 1.0):
        for v in (0.0025, 1.0, 400.0):
            # eq. 49: x = m = 0 -> F = 1/2 - y arctan(sqrt(v)) / pi (= arctan(1/sqrt(v))/pi for y = 1)
            got = tilted_cdfs.probit_tilted_cdf(0.0, y, 0.0, v)
            want = np.arctan(1 / np.sqrt(v)) / np.pi if y > 0 else 0.5 + np.arctan(np.sqrt(v)) / np.pi
            assert got == pytest.approx(want, rel=1e-14)
            # near-special points are continuous with the special ones
            for m in (0.0, 0.7):
                at = tilted_cdfs.probit_tilted_cdf(m, y, m, v)
                near = tilted_cdfs.probit_tilted_cdf(m + np.array([-1e-12, 1e-12]), y, m, v)
                np.testing.assert_allclose(near, at, rtol=1e-9, atol=1e-14)
            at = tilted_cdfs.probit_tilted_cdf(0.3, y, 0.0, v)
            near = tilted_cdfs.probit_tilted_cdf(0.3, y, np.array([-1e-12, 1e-12]), v)
            np.testing.assert_allclose(near, at, rtol=1e-9, atol=1e-14)


def test_step_with_zero_noise_is_a_truncated_normal():
    from scipy import stats

    m, v = 0.4, 2.0
    x = np.linspace(-3, 5, 81)
    a = (0.0 - m) / np.sqrt(v)
    want = stats.truncnorm.cdf(x, a, np.inf, loc=m, scale=np.sqrt(v))
    np.testing.assert_allclose(tilted_cdfs.step_tilted_cdf(x, 1.0, m, v, 0.0), want, rtol=1e-12, atol=1e-15)
    # label -1 mirrors it
    want_neg = stats.truncnorm.cdf(x, -np.inf, (0.0 - m) / np.sqrt(v), loc=m, scale=np.sqrt(v))
    np.testing.assert_allclose(tilted_cdfs.step_tilted_cdf(x, -1.0, m, v, 0.0), want_neg, rtol=1e-12, atol=1e-15)


def test_poisson_square_zero_count_is_gaussian():
    from scipy import stats

    m, v = -1.5, 0.7
    beta, tau2 = m / (1 + 2 * v), v / (1 + 2 * v)
    x = np.linspace(-5, 3, 41)
    want = stats.norm.cdf(x, beta, np.sqrt(tau2))
    np.testing.assert_allclose(tilted_cdfs.poisson_square_tilted_cdf(x, 0, m, v), want, rtol=1e-12, atol=1e-15)


def test_broadcasting_and_scalar_shapes():
    got = tilted_cdfs.probit_tilted_cdf(np.zeros((3, 1)), np.array([1.0, -1.0]), 0.5, 1.0)
    assert got.shape == (3, 2)
    assert np.ndim(tilted_cdfs.step_tilted_cdf(0.1, 1, 0.0, 1.0, 0.1)) == 0
    got = tilted_cdfs.poisson_square_tilted_cdf(np.array([-1.0, 1.0]), np.array([[0], [2], [7]]), 0.3, 2.0)
    assert got.shape == (3, 2)
    assert np.all(np.diff(got, axis=1) > 0)


def test_infinite_points():
    for name in FUNCTIONS:
        params = {"eps": 0.1} if name == "step" else {}
        y = 2.0 if name == "poisson_square" else 1.0
        got = FUNCTIONS[name](np.array([-np.inf, np.inf]), y, 0.3, 1.5, params, False)
        np.testing.assert_array_equal(got, [0.0, 1.0])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tilted_cdfs.probit_tilted_cdf(0.0, 0.5, 0.0, 1.0), "labels y must be -1 or \\+1"),
        (lambda: tilted_cdfs.probit_tilted_cdf(0.0, 1.0, 0.0, 0.0), "variance v must be > 0"),
        (lambda: tilted_cdfs.probit_tilted_cdf(np.nan, 1.0, 0.0, 1.0), "x contains NaN"),
        (lambda: tilted_cdfs.probit_tilted_cdf(0.0, 1.0, np.inf, 1.0), "must be finite"),
        (lambda: tilted_cdfs.step_tilted_cdf(0.0, 1.0, 0.0, 1.0, 0.5), "eps must be in \\[0, 0.5\\)"),
        (lambda: tilted_cdfs.step_tilted_cdf(0.0, 2.0, 0.0, 1.0, 0.1), "labels y must be -1 or \\+1"),
        (lambda: tilted_cdfs.poisson_square_tilted_cdf(0.0, 1.5, 0.0, 1.0), "counts y must be integers"),
        (lambda: tilted_cdfs.poisson_square_tilted_cdf(0.0, -1, 0.0, 1.0), "counts y must be integers"),
        (lambda: tilted_cdfs.poisson_square_tilted_cdf("a", 1, 0.0, 1.0), "must be numeric"),
    ],
)
def test_bad_input_is_explained(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@pytest.mark.parametrize("name, params", [("probit", {}), ("step", {"eps": 0.05}), ("step", {"eps": 0.0}), ("poisson_square", {})])
def test_closed_forms_match_the_quadrature_engine(name, params, rng):
    """The likelihood classes' closed-form CDF (these functions) agrees with the library's
    adaptive-quadrature CDF (qpviz.tilted.tilted_cdf) for random cavities and points."""
    import qpviz
    from qpviz import tilted

    lik = qpviz.likelihood(name, **params)
    for _ in range(12):
        y = float(rng.integers(0, 51)) if name == "poisson_square" else float(rng.choice([-1.0, 1.0]))
        m = float(rng.uniform(-10, 10))
        v = float(np.exp(rng.uniform(np.log(0.0025), np.log(400.0))))
        mean = float(lik.tilted_moments(y, m, v).mean)
        sd = float(np.sqrt(lik.tilted_moments(y, m, v).var))
        x = mean + sd * np.linspace(-6, 6, 13)
        for upper in (False, True):
            closed = lik.tilted_sf(x, y, m, v) if upper else lik.tilted_cdf(x, y, m, v)
            quad = tilted.tilted_cdf(lik, x, y, m, v, upper=upper)
            np.testing.assert_allclose(closed, quad, rtol=1e-9, atol=1e-13, err_msg=f"{lik!r} y={y} m={m} v={v} upper={upper}")
