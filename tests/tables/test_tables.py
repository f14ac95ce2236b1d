"""QP lookup tables (qpviz.tables, lookup_tables/build.py): accuracy against direct computation,
fallbacks for missing/corrupt/stale files, determinism of the builder, the patch-tree numerics."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import qpviz
from qpviz import config, tables, tilted
from qpviz.tables import chebyshev, store
from qpviz.tables.families import TABLE_STD_RANGE, all_families, family_for, mean_map, mean_unmap
from qpviz.tables.lookup import table_log_ratio
from qpviz.tables.packing import runtime

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


# -- shipped tables against direct computation -------------------------------------------------
def _queries(family, rng, n=150):
    """Random (y, m, v) over a family's table domain, plus its corners."""
    s_lo, s_hi = TABLE_STD_RANGE
    t_lo, t_hi = family.mean_domain
    s = np.exp(rng.uniform(math.log(s_lo), math.log(s_hi), n))
    if family.likelihood in ("student_t", "laplace"):
        y = rng.uniform(-5.0, 5.0, n)
        m = y + rng.uniform(-t_hi, t_hi, n)
        corners_y, corners_m = [0.0] * 4, [-t_hi, t_hi, 0.0, t_hi]
    elif family.n_tables > 1:
        y = rng.integers(0, family.n_tables, n).astype(float)
        m = rng.uniform(-t_hi, t_hi, n)
        corners_y, corners_m = [0.0, family.n_tables - 1.0] * 2, [-t_hi, t_hi] * 2
    else:
        y = rng.choice([-1.0, 1.0], n)
        m = rng.uniform(t_lo, t_hi, n)
        corners_y, corners_m = [1.0, -1.0, 1.0, -1.0], [t_lo, t_hi] * 2
    y = np.concatenate([y, corners_y])
    m = np.concatenate([m, corners_m])
    s = np.concatenate([s, [s_lo, s_lo, s_hi, s_hi]])
    return y, m, s * s


def _covered(lik, y, m, v):
    coef, meta = tables.jit_data(lik)
    return np.array([not math.isnan(table_log_ratio(coef, meta, *q)) for q in zip(y, m, v)])


@pytest.mark.parametrize("family", all_families(), ids=lambda f: f.file_name)
def test_shipped_table_matches_direct_computation(family, rng):
    lik = family.make_likelihood()
    y, m, v = _queries(family, rng)
    covered = _covered(lik, y, m, v)
    # the table really answers (else this test would only compare direct with direct)
    assert covered.mean() > 0.97, f"only {covered.mean():.0%} of the domain is tabulated"
    got = tables.qp_variance(lik, y, m, v)
    direct = tilted.qp_std(lik, y, m, v)
    rel = np.abs(np.sqrt(got) / direct - 1.0)
    assert rel.max() <= TOL_STD, f"max relative error {rel.max():.2e} at y={y[rel.argmax()]}, m={m[rel.argmax()]}, v={v[rel.argmax()]}"


def test_binary_tables_use_the_label_symmetry(rng):
    lik = qpviz.likelihood("logistic")
    m = rng.uniform(-9, 9, 50)
    v = np.exp(rng.uniform(-5, 5, 50))
    np.testing.assert_array_equal(tables.qp_variance(lik, -1.0, m, v), tables.qp_variance(lik, 1.0, -m, v))
    # and the label really matters: for m != 0 the two labels give different variances
    assert np.all(tables.qp_variance(lik, -1.0, m, v) != tables.qp_variance(lik, 1.0, m, v))


@pytest.mark.parametrize("name, params, y, m, v", [
    ("probit", {}, 1.0, 10.5, 1.0),          # mean outside +-10
    ("probit", {}, -1.0, 0.3, 0.04**2),      # std below 0.05
    ("step", {"eps": 0.1}, 1.0, 10.5, 0.05**2),  # |m| / s above 200 (the step's table is 1-D in m / s)
    ("poisson_exp", {}, config.MAX_TABLE_COUNT + 3.0, 1.0, 0.5),  # count above the tables
    ("laplace", {"scale": 1.0}, 3.0, 3.0 + 20.5, 1.0),  # |m - y| above 20
    ("student_t", {"nu": 5.0, "scale": 1.0}, 0.0, 0.5, 1.0),  # a parameter set without a table
])
def test_outside_the_tables_the_value_is_computed_directly(name, params, y, m, v):
    lik = qpviz.likelihood(name, **params)
    coef, meta = tables.jit_data(lik)
    assert math.isnan(table_log_ratio(coef, meta, y, m, v))
    # the checked Gauss-Hermite rule (qpviz.tilted.hermite) where it accepts, else the quadrature
    # itself: both agree with the quadrature far inside the tables' 1e-8
    np.testing.assert_allclose(tables.qp_variance(lik, y, m, v), tilted.qp_std(lik, y, m, v) ** 2, rtol=1e-10)


def test_project_uses_tables_by_default_and_direct_on_request(rng):
    lik = qpviz.likelihood("probit")
    y, m, v = _queries(all_families()[0], rng, n=40)
    with_table = qpviz.project(lik, y, m, v, method="qp")
    assert tables.loaded_families() == {"probit.npz": True}
    direct = qpviz.project(lik, y, m, v, method="qp", use_table=False)
    np.testing.assert_allclose(with_table.var, direct.var, rtol=2 * TOL_STD)
    np.testing.assert_array_equal(with_table.mean, direct.mean)
    # Theorem 2 (var_QP <= var_EP) up to the table's error where the two are nearly equal
    assert np.all(with_table.var <= qpviz.project(lik, y, m, v, method="ep").var * (1 + 2 * TOL_STD))


def test_scalar_kernel_matches_vectorised_lookup_inside_numba(rng):
    from numba import njit

    lik = qpviz.likelihood("poisson_square")
    coef, meta = tables.jit_data(lik)

    @njit
    def loop(coef, meta, lk, y, m, v):
        return np.array([tables.qp_var_scalar(coef, meta, lk, y[i], m[i], v[i]) for i in range(y.size)])

    y = rng.integers(0, 60, 30).astype(float)
    m = rng.uniform(-12, 12, 30)
    v = np.exp(rng.uniform(-6, 6, 30))
    np.testing.assert_array_equal(loop(coef, meta, lik.jit_handle(), y, m, v), tables.qp_variance(lik, y, m, v))


def test_likelihoods_without_tables_get_empty_arrays():
    for lik in (qpviz.likelihood("gaussian", variance=0.5), qpviz.likelihood("laplace", scale=3.0)):
        coef, meta = tables.jit_data(lik)
        assert coef.size == 0 and meta.size == 0


# -- missing, corrupt and stale files ------------------------------------------------------------
def _check_direct_with_warning(tmp_path, monkeypatch, match):
    monkeypatch.setattr(config, "TABLE_DIR", tmp_path)
    lik = qpviz.likelihood("probit")
    y, m, v = np.array([1.0, -1.0]), np.array([0.5, 2.0]), np.array([1.0, 3.0])
    with pytest.warns(tables.TableWarning, match=match):
        got = tables.qp_variance(lik, y, m, v)
    np.testing.assert_allclose(got, tilted.qp_std(lik, y, m, v) ** 2, rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tables.TableWarning)  # one warning per family, not per call
        tables.qp_variance(lik, y, m, v)
    assert tables.loaded_families() == {"probit.npz": False}


def test_missing_file_warns_and_computes_directly(tmp_path, monkeypatch):
    _check_direct_with_warning(tmp_path, monkeypatch, "missing")


def test_corrupt_coefficients_fail_the_checksum(tmp_path, monkeypatch):
    src = config.TABLE_DIR / "probit.npz"
    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["coef_rest"] = arrays["coef_rest"].copy()
    arrays["coef_rest"][-1] += 1e-6  # a tiny change a wrong table could hide
    np.savez_compressed(tmp_path / "probit.npz", **arrays)
    _check_direct_with_warning(tmp_path, monkeypatch, "checksum")


def test_unreadable_file_warns(tmp_path, monkeypatch):
    (tmp_path / "probit.npz").write_bytes((config.TABLE_DIR / "probit.npz").read_bytes()[:500])
    _check_direct_with_warning(tmp_path, monkeypatch, "unreadable")


def test_stale_file_is_not_used(tmp_path, monkeypatch):
    src = config.TABLE_DIR / "probit.npz"
    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(str(arrays["header"]))
    header["spec"]["mean_domain"] = [-12.0, 12.0]  # built for another domain
    arrays["header"] = np.array(json.dumps(header))
    np.savez_compressed(tmp_path / "probit.npz", **arrays)
    _check_direct_with_warning(tmp_path, monkeypatch, "stale")


def test_store_encoding_is_lossless(tmp_path, rng):
    fam = all_families()[0]
    coef = np.concatenate([np.round(rng.normal(size=500) / chebyshev.QUANTUM) * chebyshev.QUANTUM,
                           [-0.0, 0.0, 0.1, math.pi, 1e300, -3.0]])
    meta = rng.normal(size=40)
    store.save(tmp_path / fam.file_name, fam, coef, meta, {})
    got_coef, got_meta = store.load(tmp_path / fam.file_name, fam)
    assert got_coef.tobytes() == coef.tobytes() and got_meta.tobytes() == meta.tobytes()


# -- the builder ------------------------------------------------------------------------------------
def test_builder_is_deterministic_and_its_tables_load(tmp_path):
    from dataclasses import replace

    from lookup_tables.build import build_family

    # a cheap variant of a real family: loose tolerance, few cells
    fam = replace(family_for(qpviz.likelihood("step", eps=0.0)), tol=1e-4, grid=(4, 1))
    first = build_family(fam, tmp_path / "a")
    second = build_family(fam, tmp_path / "b")
    assert first["sha256"] == second["sha256"]
    assert first["spec"] == second["spec"] and first["spec"]["tol"] == 1e-4
    coef, meta, _ = runtime(*store.load(tmp_path / "a" / fam.file_name, fam))
    y, m, v = np.array([1.0, -1.0, 1.0]), np.array([0.3, 4.0, -7.0]), np.array([0.2, 9.0, 100.0])
    lik = fam.make_likelihood()
    h = np.array([table_log_ratio(coef, meta, *q) for q in zip(y, m, v)])
    np.testing.assert_allclose(np.exp(h) * np.sqrt(v), tilted.qp_std(lik, y, m, v), rtol=1e-4)


def test_builder_check_accepts_the_shipped_files(capsys):
    from lookup_tables.build import main

    assert main(["--check"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") == len(all_families())


# -- interface ----------------------------------------------------------------------------------------
def test_qp_variance_broadcasts_and_keeps_shapes():
    lik = qpviz.likelihood("probit")
    assert tables.qp_variance(lik, 1.0, 0.3, 2.0).shape == ()
    out = tables.qp_variance(lik, np.array([[1.0], [-1.0]]), np.linspace(-2, 2, 5), 1.5)
    assert out.shape == (2, 5)
    np.testing.assert_allclose(out[1], tables.qp_variance(lik, 1.0, -np.linspace(-2, 2, 5), 1.5), rtol=0)


def test_bad_input_gets_a_clear_error():
    lik = qpviz.likelihood("probit")
    with pytest.raises(ValueError, match=r"labels y in \{-1, \+1\}"):
        tables.qp_variance(lik, 0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="cavity_var must be > 0"):
        tables.qp_variance(lik, 1.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="counts"):
        tables.qp_variance(qpviz.likelihood("poisson_exp"), 2.5, 0.0, 1.0)
    with pytest.raises(TypeError, match="qpviz likelihood"):
        tables.jit_data("probit")
