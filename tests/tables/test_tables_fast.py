"""The in-memory fast form of the QP tables (qpviz.tables.fast) and the 1-D tables of the
scale-free step: each piece against an independent computation (NumPy polynomials, the stored
form it re-approximates, direct quadrature)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.polynomial import chebyshev as npcheb
from numpy.polynomial import polynomial as nppoly

import qpviz
from qpviz import tables, tilted
from qpviz.tables import chebyshev, fast, store
from qpviz.tables.families import TABLE_STD_RANGE, family_for
from qpviz.tables.layout import H_CELLS_A, H_CELLS_B, SB_COEF_OFFSET, SB_NODE_OFFSET, stored_block
from qpviz.tables.lookup import table_coordinates, table_log_ratio, table_value
from qpviz.tables.packing import B_HI, B_LO, runtime


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_chebyshev_matrices_agree_with_numpy(rng):
    degree = 7
    # D: values at the Lobatto points -> Chebyshev coefficients of the interpolant
    coef = rng.normal(size=degree + 1)
    values = npcheb.chebval(chebyshev.lobatto_points(degree), coef)
    np.testing.assert_allclose(chebyshev.values_to_chebyshev(degree) @ values, coef, atol=1e-13)
    # M: T_i in the power basis
    m = chebyshev.chebyshev_to_power(degree)
    for i in range(degree + 1):
        np.testing.assert_allclose(m[i], np.pad(npcheb.cheb2poly(np.eye(degree + 1)[i])[: degree + 1],
                                                (0, max(0, degree + 1 - (i + 1))))[: degree + 1], atol=0)


@pytest.mark.parametrize("degree, evaluate", [(fast.DEGREE, fast.patch_value), (fast.SMALL_DEGREE, fast.small_patch_value)])
def test_patch_evaluator_matches_numpy_polyval(degree, evaluate, rng):
    # (d + 1)(d + 2) / 2 triangular power coefficients P[l, k], l + k <= d, row-major by l
    triangle = np.add.outer(np.arange(degree + 1), np.arange(degree + 1)) <= degree
    full = rng.normal(size=(degree + 1, degree + 1)) * triangle
    packed = full[triangle]
    assert packed.size == fast.patch_size(degree) == {7: fast.PATCH_SIZE, 5: fast.SMALL_PATCH_SIZE}[degree]
    coef = np.concatenate([rng.normal(size=5), packed])
    for x, y in rng.uniform(-1, 1, size=(50, 2)):
        expected = nppoly.polyval2d(x, y, full.T)  # polyval2d(x, y, c) = sum c[i, j] x^i y^j
        assert evaluate(coef, 5, x, y) == pytest.approx(expected, abs=1e-13)
        assert fast.degree_patch_value(degree, coef, 5, x, y) == evaluate(coef, 5, x, y)
    assert fast.PATCH_SIZE == 36 and fast.SMALL_PATCH_SIZE == 21


def test_line_evaluator_matches_numpy_polyval(rng):
    line = rng.normal(size=8)
    assert fast.line_value(np.concatenate([[0.0], line]), 1, 0.3) == pytest.approx(nppoly.polyval(0.3, line), abs=1e-14)


def _synthetic(a, b):
    return np.sin(3.0 * a) * np.exp(0.3 * b) + np.tanh(4.0 * (a - 0.5) * b)


@pytest.mark.parametrize("degree", [fast.DEGREE, fast.SMALL_DEGREE])
def test_derived_form_matches_the_stored_tree(degree, rng):
    tree = chebyshev.fit_tree(_synthetic, (0.0, 1.0, -1.0, 2.0), grid=(2, 2), degree=14, tol=1e-10)
    stored = (tree.nodes, 0, tree.coef, 0)
    codes, patches, err, slow = fast.derive_table(stored, (0.0, 1.0, -1.0, 2.0), grid=(4, 3), tol=1e-9, degree=degree)
    assert slow == 0 and err <= 1e-9
    # random points, and points on cell and patch edges (the clamping paths)
    a = np.concatenate([rng.uniform(0, 1, 2000), np.linspace(0, 1, 9)])
    b = np.concatenate([rng.uniform(-1, 2, 2000), np.linspace(-1, 2, 9)])
    fa, fb = a * 4, (b + 1.0) / 3.0 * 3
    got = np.array([fast.cell_value(patches, codes, 0, 4, 3, x, z, degree) for x, z in zip(fa, fb)])
    np.testing.assert_allclose(got, _synthetic(a, b), atol=3e-9)


def _ridge(a, b):
    """Gentle for a < 0.5, a steep tanh ridge at a = 0.8."""
    return np.sin(1.5 * a) * np.exp(0.1 * b) + np.tanh(30.0 * (a - 0.8))


def test_cells_too_hard_for_the_fast_patches_read_the_stored_tree(monkeypatch):
    tree = chebyshev.fit_tree(_ridge, (0.0, 1.0, B_LO, B_HI), grid=(2, 2), degree=14, tol=1e-10)
    monkeypatch.setattr(fast, "MAX_LEVEL", 1)  # two patches a cell at most: the ridge's two cells fail
    packed_meta = np.concatenate([[1.0, 1, 1, -10, 10, B_LO, B_HI, 0], [0.0, 1.0, 12, 0], tree.nodes])
    coef, meta, stats = runtime(tree.coef, packed_meta, grid=(2, 2), tol=1e-7)
    assert stats["stored_cells"] == 2
    a = np.linspace(0, 1, 41)
    b = np.linspace(B_LO, B_HI, 41)
    for x in a:
        for z in b:
            fa, fb = x * 2, (z - B_LO) / (B_HI - B_LO) * 2
            h = table_value(coef, meta, 0, fa, fb)
            assert h == pytest.approx(_ridge(x, z), abs=2e-7)


def test_single_table_batch_reads_the_stored_tree_where_the_patches_leave_a_cell(monkeypatch, rng):
    # one 2-D table folded by label (the single-table batch kernel), two of its cells too hard
    # for the fast patches: the batch gives the per-point lookup's numbers there too
    tree = chebyshev.fit_tree(_ridge, (0.0, 1.0, B_LO, B_HI), grid=(2, 2), degree=14, tol=1e-10)
    monkeypatch.setattr(fast, "MAX_LEVEL", 1)
    packed_meta = np.concatenate([[1.0, 1, 1, -10, 10, B_LO, B_HI, 0], [0.0, 1.0, 12, 0], tree.nodes])
    coef, meta, stats = runtime(tree.coef, packed_meta, grid=(2, 2), tol=1e-7)
    assert stats["stored_cells"] == 2
    n = 3000
    y = rng.choice([-1.0, 1.0], n)
    m = rng.uniform(-11, 11, n)  # some outside t in [-10, 10]
    v = np.exp(2 * rng.uniform(math.log(0.03), math.log(30), n))  # some outside s in [0.05, 20]
    out = np.empty(n)
    missing = tables.batch.qp_var_batch(coef, meta, y, m, v, out)
    h = np.array([table_log_ratio(coef, meta, *q) for q in zip(y, m, v)])
    np.testing.assert_array_equal(out, [vi * math.exp(2.0 * hi) for vi, hi in zip(v, h)])  # libm's exp, as the kernels
    assert missing == np.isnan(h).sum() > 0
    fa = np.array([table_coordinates(meta, *q)[1] for q in zip(y, m, v)])
    stored = ~np.isnan(h) & (fa / meta[H_CELLS_A] > 0.5)  # the ridge's cells (a > 0.5) read the tree
    assert stored.sum() > 100


def test_fit_line_on_a_smooth_function():
    line = chebyshev.fit_line(np.arctan, -3.0, 5.0, degree=7, tol=1e-10, cells=2)
    assert line.n_failed == 0 and line.max_check_error <= 1e-10
    x = np.linspace(-3, 5, 1001)
    n = line.coef.shape[0]
    cell = np.minimum(((x + 3.0) / 8.0 * n).astype(int), n - 1)
    local = 2.0 * ((x + 3.0) / 8.0 * n - cell) - 1.0
    got = np.array([npcheb.chebval(u, line.coef[c]) for u, c in zip(local, cell)])
    np.testing.assert_allclose(got, np.arctan(x), atol=1e-10)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_step_qp_std_is_scale_free(eps, rng):
    # the claim behind the 1-D step tables, checked by direct quadrature: sigma_QP(c m, c^2 v) = c sigma_QP(m, v)
    lik = qpviz.likelihood("step", eps=eps)
    m = rng.uniform(-3, 3, 20)
    v = np.exp(rng.uniform(-2, 2, 20))
    c = np.exp(rng.uniform(-3, 3, 20))
    np.testing.assert_allclose(tilted.qp_std(lik, 1.0, c * m, c * c * v), c * tilted.qp_std(lik, 1.0, m, v), rtol=1e-11)


def test_step_table_covers_every_scale_within_its_z_range():
    lik = qpviz.likelihood("step", eps=0.05)
    coef, meta = tables.jit_data(lik)
    # far outside the 2-D std range, but |m| / s <= 200: tabulated and exact to the table's accuracy
    for m, s in [(1e-4, 1e-5), (3e3, 1e3), (-5.0, 0.03)]:
        k, _, fb = table_coordinates(meta, 1.0, m, s * s)
        assert k == 0 and fb < 0  # a 1-D table lookup
        h = table_log_ratio(coef, meta, 1.0, m, s * s)
        assert math.exp(h) * s == pytest.approx(float(tilted.qp_std(lik, 1.0, m, s * s)), rel=1e-8)


def test_runtime_stats_report_the_fast_form():
    tables.clear_cache()
    tables.jit_data(qpviz.likelihood("probit"))
    stats = tables.runtime_stats()["probit.npz"]
    assert stats["max_error"] <= fast.FAST_TOL and stats["patches"] > 0 and stats["cells"] == 64


def test_fast_form_of_a_shipped_table_matches_its_stored_form(rng):
    fam = family_for(qpviz.likelihood("student_t", nu=3.0, scale=1.0))
    coef_s, meta_s = store.load(qpviz.config.TABLE_DIR / fam.file_name, fam)
    coef, meta, _ = runtime(coef_s, meta_s)
    n = 3000
    s = np.exp(rng.uniform(math.log(TABLE_STD_RANGE[0]), math.log(TABLE_STD_RANGE[1]), n))
    m = rng.uniform(-20, 20, n)
    from qpviz.tables.chebyshev import tree_eval

    worst = 0.0
    for mi, si in zip(m, s):
        k, fa, fb = table_coordinates(meta, 0.0, mi, si * si)
        assert k == 0
        a, b = fa / meta[H_CELLS_A], B_LO + fb / meta[H_CELLS_B] * (B_HI - B_LO)
        block = stored_block(0)
        stored = tree_eval(meta_s, int(meta_s[block + SB_NODE_OFFSET]), coef_s, int(meta_s[block + SB_COEF_OFFSET]), a, b)
        worst = max(worst, abs(table_value(coef, meta, k, fa, fb) - stored))
    # FAST_TOL holds at each patch's check points; between them the error can exceed it a little
    # (measured on 20 000 random points of four tables: up to 1.5x at degree 7, 1.25x at degree 5),
    # far below the tables' 1e-7 target
    assert worst <= 2.0 * fast.FAST_TOL


def test_preload_in_the_background_loads_every_family():
    tables.clear_cache()
    thread = tables.preload(background=True)
    lik = qpviz.likelihood("poisson_exp")
    got = tables.qp_variance(lik, 3.0, 0.5, 0.7)  # waits for (or does) this family's load, never a half-built one
    thread.join(timeout=600)
    assert not thread.is_alive()
    loaded = tables.loaded_families()
    assert len(loaded) == len(tables.all_families()) and all(loaded.values())
    assert float(got) == pytest.approx(float(tilted.qp_std(lik, 3.0, 0.5, 0.7)) ** 2, rel=1e-7)


class _CountingLock:
    """A reentrant stand-in for store.NPZ_READ_LOCK that knows whether it is held."""

    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


def test_every_table_file_is_read_under_the_npz_lock(monkeypatch):
    """NumPy parses .npz headers with ast.literal_eval, which CPython 3.11 cannot run in two threads at
    once (a CI run: the background preload and a lookup failed with "AST constructor recursion depth
    mismatch"): every read of a table or of its cached fast form holds store.NPZ_READ_LOCK."""
    lock, reads = _CountingLock(), []
    real_load = np.load

    def load(*args, **kwargs):
        reads.append(lock.depth > 0)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(store, "NPZ_READ_LOCK", lock)
    monkeypatch.setattr(np, "load", load)
    tables.clear_cache()
    tables.preload(background=False)  # every family: the table files and their cached fast forms
    store.read_header(tables.table_dir() / family_for(qpviz.likelihood("probit")).file_name)
    tables.clear_cache()
    assert len(reads) > len(tables.all_families()) and all(reads)
    assert lock.depth == 0


@pytest.mark.parametrize("name", ["probit", "step", "poisson_square", "laplace"])
def test_batch_over_several_blocks_equals_the_scalar_kernel(name, rng, monkeypatch):
    # > 2 blocks of the batch kernel, with points outside the tables (direct) and, for
    # poisson_square, in cells that read the stored tree (|m| ~ 0, s ~ 0.05, large counts);
    # probit and laplace take the single-table kernel (folds y m and |m - y|)
    lik = qpviz.likelihood(name, **({"eps": 0.1} if name == "step" else {}))
    n = 2 * tables.batch.BATCH_BLOCK + 77
    if name == "poisson_square":
        y = rng.integers(0, 60, n).astype(float)
        m = np.where(rng.random(n) < 0.3, rng.uniform(-0.01, 0.01, n), rng.uniform(-12, 12, n))
    elif name == "laplace":
        y = rng.uniform(-5, 5, n)
        m = rng.uniform(-25, 25, n)
    else:
        y = rng.choice([-1.0, 1.0], n)
        m = rng.uniform(-12, 12, n)
    v = np.exp(2 * rng.uniform(math.log(0.04), math.log(25), n))
    coef, meta = tables.jit_data(lik)
    scalar = np.array([tables.qp_var_scalar(coef, meta, lik.jit_handle(), *q) for q in zip(y, m, v)])
    batch = np.empty(n)
    missing = tables.batch.qp_var_batch(coef, meta, y, m, v, batch)
    covered = ~np.isnan(batch)
    assert missing == n - covered.sum()
    np.testing.assert_array_equal(batch[covered], scalar[covered])  # the numba kernels: the same numbers
    # qp_variance takes log v and exp(2 h) from NumPy's SIMD loops for single-table families
    # (probit, laplace), libm's in the kernels: the same to within a few units in the last place;
    # in chunks of NUMPY_CHUNK points (here 1500: chunks that end inside the kernel's blocks)
    monkeypatch.setattr(tables.batch, "NUMPY_CHUNK", 1500)
    np.testing.assert_allclose(tables.qp_variance(lik, y, m, v), scalar, rtol=4e-15, atol=0)
    uncovered = np.array([math.isnan(table_log_ratio(coef, meta, *q)) for q in zip(y, m, v)])
    assert 0 < uncovered.sum() < n  # both paths are exercised


@pytest.mark.parametrize("likelihood, degree", [(("probit", {}), fast.SMALL_DEGREE),
                                                (("student_t", {"nu": 10.0, "scale": 1.0}), fast.DEGREE)])
def test_a_one_table_family_takes_degree_5_unless_degree_7_leaves_fewer_cells_to_the_stored_tree(likelihood, degree):
    # probit: every cell fits at degree 5; Student-t nu = 10: degree 5 left two cells to the slow
    # stored tree, degree 7 none (measured), so its fast form is degree 7
    name, params = likelihood
    fam = family_for(qpviz.likelihood(name, **params))
    coef_s, meta_s = store.load(qpviz.config.TABLE_DIR / fam.file_name, fam)
    coef, meta, stats = runtime(coef_s, meta_s)
    assert stats["degree"] == degree and stats["stored_cells"] == 0
    assert tables.lookup.table_degree(meta, 0) == degree
    assert coef.size >= stats["patches"] * fast.patch_size(degree)
