"""Engines ask a likelihood class what it can do, never its name (issue 23, point 3).

* the generic predictive band (Gauss-Hermite over the latent, observation moments by quadrature
  over y or sums over counts) equals the closed forms of the built-ins that have one;
* a user's likelihood with a real or count observation gets the observation's band, not the latent one;
* no module outside ``qpviz/likelihoods/`` compares a likelihood's name to a string literal.
"""
import ast
from pathlib import Path

import numpy as np
import pytest

import qpviz
from qpviz.gpdemo import oned
from qpviz.likelihoods import REGISTRY
from qpviz.likelihoods.base import BAND_RANGE_POINTS

ROOT = Path(__file__).resolve().parents[2]

MEAN = np.array([-2.0, -0.7, 0.0, 0.3, 1.1, 2.5])
VAR = np.array([0.04, 1.0, 0.5, 2.0, 0.3, 0.8])


def plain_copy(built_in: qpviz.Likelihood) -> qpviz.Likelihood:
    """A fresh subclass with only ``log_prob`` and ``support`` of ``built_in``: every other method
    is the contract's generic default (no closed forms, no numba kernels)."""

    class Plain(qpviz.Likelihood):
        name = f"plain_{built_in.name}"
        support = built_in.support

        def log_prob(self, y, f):
            return built_in.log_prob(y, f)

    return Plain()


CLOSED_FORMS = [("gaussian", {"variance": 0.3}), ("student_t", {"nu": 4.0, "scale": 0.5}),
                ("student_t", {"nu": 10.0, "scale": 1.0}), ("laplace", {"scale": 0.7}), ("poisson_exp", {}),
                ("poisson_square", {})]


@pytest.mark.parametrize("name, params", CLOSED_FORMS)
def test_generic_band_equals_the_closed_forms(name, params):
    built_in = qpviz.likelihood(name, **params)
    plain = plain_copy(built_in)
    closed = built_in.predictive_band(MEAN, VAR)
    generic = plain.predictive_band(MEAN, VAR)
    # the count band's range comes from a grid of latent points: where f^2 has its minimum inside
    # the interval the grid misses 0 by at most half a step
    step = 4.0 * np.sqrt(VAR) / (BAND_RANGE_POINTS - 1)
    slack = (step / 2) ** 2 if name == "poisson_square" else 0.0
    for what, g, c in zip(("centre", "lower", "upper"), generic, closed):
        assert np.all(np.abs(g - c) <= 2e-7 * np.abs(c) + 1e-9 + slack), (name, what, g, c)
    f = np.linspace(-3.0, 2.0, 11)
    for g, c in zip(plain.observation_moments(f), built_in.observation_moments(f)):
        np.testing.assert_allclose(g, c, rtol=1e-7, atol=1e-9)


def test_closed_forms_are_the_textbook_ones():
    sd = np.sqrt(VAR)
    centre, lower, upper = qpviz.likelihood("student_t", nu=4.0, scale=0.5).predictive_band(MEAN, VAR)
    np.testing.assert_array_equal(centre, MEAN)
    np.testing.assert_allclose(upper, MEAN + 2 * np.sqrt(VAR + 0.25 * 4 / 2))
    centre, lower, upper = qpviz.likelihood("poisson_exp").predictive_band(MEAN, VAR)
    np.testing.assert_allclose((centre, lower, upper), (np.exp(MEAN + VAR / 2), np.exp(MEAN - 2 * sd),
                                                        np.exp(MEAN + 2 * sd)))
    # f^2 over [m - 2 sd, m + 2 sd]: 0 where the interval holds 0
    centre, lower, upper = qpviz.likelihood("poisson_square").predictive_band(np.array([0.3, 3.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose((centre, lower, upper), ([1.09, 10.0], [0.0, 1.0], [2.3**2, 25.0]))


class NoisyObservation(qpviz.Likelihood):
    """A user's Gaussian-noise regression likelihood, written from scratch."""

    name = "user_noisy_observation"
    parameters = (qpviz.Parameter("noise", 1.0, lower=0.0, doc="noise variance"),)

    def log_prob(self, y, f):
        return -0.5 * np.subtract(y, f) ** 2 / self.noise - 0.5 * np.log(2 * np.pi * self.noise)


class UserCounts(qpviz.Likelihood):
    """A user's Poisson likelihood with the exponential link, written from scratch."""

    name = "user_counts"
    support = "count"

    def log_prob(self, y, f):
        from scipy import special

        return np.multiply(y, f) - np.exp(f) - special.gammaln(np.add(y, 1.0))


def test_a_user_real_likelihood_gets_the_observation_band():
    centre, lower, upper, label = oned.predictive_band(NoisyObservation(noise=0.4), MEAN, VAR)
    expected = oned.predictive_band(qpviz.likelihood("gaussian", variance=0.4), MEAN, VAR)
    for got, want in zip((centre, lower, upper), expected):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    assert label == expected[3] == "y: mean +- 2 sd"
    assert np.all(upper - lower > 4 * np.sqrt(VAR) + 1e-3)  # wider than the latent band


def test_a_user_count_likelihood_gets_the_rate_band():
    centre, lower, upper, label = oned.predictive_band(UserCounts(), MEAN, VAR)
    expected = oned.predictive_band(qpviz.likelihood("poisson_exp"), MEAN, VAR)
    for got, want in zip((centre, lower, upper), expected):
        np.testing.assert_allclose(got, want, rtol=1e-8)
    assert label == expected[3] == "expected count E[y | x]"
    assert np.all(upper > centre) and np.all(lower < centre)


def test_a_heavy_tailed_user_likelihood_keeps_a_finite_band():
    class Cauchy(qpviz.Likelihood):
        name = "user_cauchy_band"

        def log_prob(self, y, f):
            r = np.subtract(y, f)
            return -np.log(np.pi) - np.log1p(r * r)

    mean, var = MEAN[:2], VAR[:2]
    assert np.all(np.isinf(Cauchy().observation_moments(mean)[1]))
    centre, lower, upper = Cauchy().predictive_band(mean, var)
    # Var[y] is infinite: the latent band (the page must not draw inf)
    np.testing.assert_allclose((lower, upper), (mean - 2 * np.sqrt(var), mean + 2 * np.sqrt(var)), atol=1e-9)


def test_conjugacy_is_a_class_capability():
    assert [name for name, cls in REGISTRY.items() if cls.is_conjugate] == ["gaussian"]
    assert not NoisyObservation.is_conjugate


# -- no likelihood-name checks outside qpviz/likelihoods --------------------------------------------

KNOWN_EXCEPTIONS: set[str] = set()


def _is_likelihood_name_literal(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in REGISTRY
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_likelihood_name_literal(e) for e in node.elts)
    return False


def _names_a_likelihood(node) -> bool:
    """``x.name``, ``x.likelihood``, or a variable called ``name`` or like ``lik...``."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("name", "likelihood") or "lik" in node.attr
    if isinstance(node, ast.Name):
        return node.id == "name" or "lik" in node.id
    return False


def name_checks(source: str) -> list[int]:
    """Lines comparing a likelihood's name to a registered likelihood name written as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(_is_likelihood_name_literal, operands)) and any(map(_names_a_likelihood, operands)):
                found.append(node.lineno)
    return found


def test_the_check_finds_name_checks():
    assert name_checks('if likelihood.name == "gaussian": pass') == [1]
    assert name_checks('x = lik.name in ("poisson_exp", "poisson_square")') == [1]
    assert name_checks('x = name != "probit"') == [1]
    assert name_checks('x = method in ("ep", "laplace")') == []  # laplace the method, not the likelihood
    assert name_checks('x = likelihood.is_conjugate') == []


def test_no_likelihood_name_checks_outside_the_likelihoods_package():
    offenders = {}
    for path in sorted([*ROOT.joinpath("qpviz").rglob("*.py"), *ROOT.joinpath("app").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("qpviz/likelihoods/") or rel in KNOWN_EXCEPTIONS:
            continue
        lines = name_checks(path.read_text(encoding="utf-8"))
        if lines:
            offenders[rel] = lines
    assert offenders == {}, f"ask the likelihood class (support, is_conjugate, predictive_band, ...): {offenders}"
