"""QP lookup tables (qpviz.tables, lookup_tables/build.py): accuracy against direct computation,
fallbacks for missing/corrupt/stale files, determinism of the builder, the patch-tree numerics."""
from __future__ import annotations

import json
import math
import shutil
import warnings

import numpy as np
import pytest

import qpviz
from qpviz import config, tables, tilted
from qpviz.tables import chebyshev, store
from qpviz.tables.families import STD_RANGE, all_families, family_for, mean_map, mean_unmap
from qpviz.tables.lookup import table_log_ratio

TOL_STD = 1e-7  # the target: max relative error of sigma_QP


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(autouse=True)
def fresh_cache():
    tables.clear_cache()
    yield
    tables.clear_cache()


# -- patch trees on synthetic functions (independent of the likelihoods) ----------------------
def _synthetic(a, b):
    return np.sin(3.0 * a) * np.exp(0.3 * b) + 1.0 / (1.0 + a * a + b * b) + np.tanh(2.0 * a * b)


def _eval_many(tree, a, b):
    return np.array([chebyshev.tree_eval(tree.nodes, 0, tree.coef, 0, x, z) for x, z in zip(a, b)])


def test_chebyshev_coefficients_reproduce_a_polynomial():
    # T_2(x) T_1(y) + 0.5 T_0(x) T_3(y) sampled at Lobatto points has exactly these coefficients
    x = chebyshev.lobatto_points(6)
    gx, gy = np.meshgrid(x, x)
    values = (2 * gx**2 - 1) * gy + 0.5 * (4 * gy**3 - 3 * gy)
    coef = chebyshev.chebyshev_coefficients_2d(values)
    expected = np.zeros((7, 7))
    expected[1, 2] = 1.0
    expected[3, 0] = 0.5
    np.testing.assert_allclose(coef, expected, atol=1e-14)


@pytest.mark.parametrize("grid, degree", [((1, 1), 10), ((3, 2), 8), ((4, 4), 14)])
def test_tree_matches_function_on_random_points(rng, grid, degree):
    box = (-3.0, 3.0, -2.0, 2.0)
    tree = chebyshev.fit_tree(_synthetic, box, grid=grid, degree=degree, tol=1e-9)
    assert tree.n_failed == 0
    a = np.concatenate([rng.uniform(-3, 3, 3000), [-3, 3, -3, 3]])
    b = np.concatenate([rng.uniform(-2, 2, 3000), [-2, -2, 2, 2]])
    err = np.max(np.abs(_eval_many(tree, a, b) - _synthetic(a, b)))
    assert err < 1e-8


def test_tree_marks_unfittable_patches_as_uncovered():
    # a jump cannot be fitted: the patches across it stay uncovered (NaN), the rest is accurate
    def jump(a, b):
        return np.where(a < 0.3, 0.0, 1.0) + b

    tree = chebyshev.fit_tree(jump, (0.0, 1.0, 0.0, 1.0), grid=(2, 1), degree=6, tol=1e-8, max_depth=3)
    assert tree.n_failed > 0
    assert math.isnan(chebyshev.tree_eval(tree.nodes, 0, tree.coef, 0, 0.3, 0.5))
    assert chebyshev.tree_eval(tree.nodes, 0, tree.coef, 0, 0.9, 0.25) == pytest.approx(1.25, abs=1e-12)


def test_fit_tree_rejects_bad_box():
    with pytest.raises(ValueError, match="a0 < a1"):
        chebyshev.fit_tree(_synthetic, (1.0, 0.0, 0.0, 1.0))


def test_mean_map_round_trip_and_ends(rng):
    t_lo, t_hi, t_c, w = -10.0, 10.0, 1.5, 0.3
    s = np.exp(rng.uniform(math.log(0.05), math.log(20), 500))
    a = rng.uniform(0, 1, 500)
    t = mean_unmap(a, s, t_lo, t_hi, t_c, w)
    np.testing.assert_allclose(mean_map(t, s, t_lo, t_hi, t_c, w), a, atol=1e-12)
    np.testing.assert_allclose(mean_map(np.array([t_lo, t_hi]), 1.0, t_lo, t_hi, t_c, w), [0.0, 1.0], atol=1e-15)
