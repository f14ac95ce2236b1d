"""The pure-NumPy tilted quadrature (qpviz.tilted_numpy) against the built-in likelihoods' values
(closed forms, the numba engine), the independent mpmath reference cache and SciPy's QUADPACK."""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

import qpviz
from qpviz import tilted
from qpviz import tilted_numpy as tn

M_GRID = np.array([-10.0, -4.0, -0.3, 0.0, 1.0, 6.0, 10.0])
STD_GRID = np.array([0.05, 0.3, 1.0, 4.0, 20.0])
M, S = (a.ravel() for a in np.meshgrid(M_GRID, STD_GRID))
V = S**2

SETTINGS = [
    ("gaussian", {"variance": 0.1}, (-3.0, 0.0, 2.5)),
    ("probit", {}, (-1.0, 1.0)),
    ("logistic", {}, (-1.0, 1.0)),
    ("step", {"eps": 0.0}, (-1.0, 1.0)),
    ("step", {"eps": 0.1}, (-1.0, 1.0)),
    ("poisson_square", {}, (0.0, 1.0, 5.0, 50.0)),
    ("poisson_exp", {}, (0.0, 1.0, 5.0, 50.0)),
    ("student_t", {"nu": 4.0, "scale": 0.5}, (-3.0, 0.0, 2.5)),
    ("laplace", {"scale": 1.0}, (-3.0, 0.0, 2.5)),
]
# every other registered likelihood at its default parameters (a new one is covered without an edit)
_OBSERVATIONS = {"binary": (-1.0, 1.0), "count": (0.0, 1.0, 5.0, 50.0), "real": (-3.0, 0.0, 2.5)}
SETTINGS += [(name, {}, _OBSERVATIONS[cls.support]) for name, cls in qpviz.likelihoods.REGISTRY.items()
             if name not in {n for n, _, _ in SETTINGS}]
IDS = [f"{n}-{p}" for n, p, _ in SETTINGS]
# likelihoods whose built-in CDF is a closed form (the others use the numba quadrature, whose
# far tails are only accurate to its absolute tolerance)
CLOSED_CDF = {"probit", "step", "poisson_square"}


def _summary(lik, y, m, v, **kw):
    return tn.tilted_summary(lik.log_prob, y, m, v, kinks=lik.kinks, **kw)


def test_registry_is_covered():
    assert {name for name, _, _ in SETTINGS} == set(qpviz.likelihoods.REGISTRY)


@pytest.mark.parametrize("name, params, ys", SETTINGS, ids=IDS)
def test_entropy_matches_the_numba_engine(name, params, ys):
    lik = qpviz.likelihood(name, **params)
    m, v = np.array([-4.0, 0.3, 6.0]), np.array([0.04, 1.0, 25.0])
    # Known limit (entropy only feeds the KL the explorer prints): at an interior zero of the density
    # (Poisson-square, y = 1: q ~ f^2) q log q has a log singularity that the mass-driven panels do not
    # resolve: mpmath 1.1111563 / 1.3056216 at (m, v) = (0.3, 1) / (6, 25); numba 3.6e-7 / 2.5e-7 off,
    # NumPy 5.5e-7 / 1.3e-5 off. Elsewhere the two engines agree to ~1e-15.
    tol = 2e-5 if lik.even_in_f else 1e-9
    for y in ys:
        np.testing.assert_allclose(_summary(lik, y, m, v).entropy, tilted.tilted_summary(lik, y, m, v).entropy,
                                   rtol=0, atol=tol)


def test_gauss_legendre_cumulative_matrices_integrate_polynomials():
    x, w, cum, rcum = tn.gauss_legendre_rules(16)
    for p in range(16):
        vals = x**p
        exact_left = (x ** (p + 1) - (-1.0) ** (p + 1)) / (p + 1)
        exact_right = (1.0 - x ** (p + 1)) / (p + 1)
        np.testing.assert_allclose(cum @ vals, exact_left, atol=1e-14)
        np.testing.assert_allclose(rcum @ vals, exact_right, atol=1e-14)
        assert w @ vals == pytest.approx((1 - (-1) ** (p + 1)) / (p + 1), abs=1e-14)


@pytest.mark.parametrize("name,params,ys", SETTINGS, ids=IDS)
def test_summary_matches_builtin_moments_and_qp(name, params, ys):
    lik = qpviz.likelihood(name, **params)
    for y in ys:
        got = _summary(lik, y, M, V)
        want = lik.tilted_moments(y, M, V)
        want_qp = tilted.qp_std(lik, y, M, V)
        assert got.ok.all()
        assert got.log_z.shape == M.shape
        # log Z: 1e-10 relative, absolute when |log Z| > 1
        np.testing.assert_allclose(got.log_z - want.log_z, 0.0, atol=1e-10 * np.maximum(1, np.abs(want.log_z)).max())
        assert np.all(np.abs(got.log_z - want.log_z) <= 1e-10 * np.maximum(1.0, np.abs(want.log_z)))
        assert np.all(np.abs(got.mean - want.mean) <= 1e-10 * np.sqrt(want.var))
        # the poisson_square closed-form variance itself is good to ~2e-11 (see the mpmath test)
        np.testing.assert_allclose(got.var, want.var, rtol=1e-9)
        np.testing.assert_allclose(got.qp_std, want_qp, rtol=1e-10)


def _reference_cases():
    data = json.loads((Path(__file__).resolve().parents[1] / "data" / "reference_values.json").read_text())
    cases = []
    for key, val in data.items():
        kind, name, par, ys, ms, vs = key.split("|")
        if kind != "moments":
            continue
        params = {k: float(x) for k, x in (p.split("=") for p in par.split(",") if p)}
        y, m, v = (float(p.split("=")[1]) for p in (ys, ms, vs))
        cases.append((name, params, y, m, v, val))
    return cases


def test_against_mpmath_reference_cache():
    """Every cached 40-digit reference point (all likelihoods and app parameter sets, the
    corners of the cavity domain): 1e-12 relative or better."""
    cases = _reference_cases()
    assert len(cases) > 300
    groups = {}
    for name, params, y, m, v, val in cases:
        groups.setdefault((name, tuple(sorted(params.items())), y), []).append((m, v, val))
    for (name, params, y), rows in groups.items():
        lik = qpviz.likelihood(name, **dict(params))
        m = np.array([r[0] for r in rows])
        v = np.array([r[1] for r in rows])
        ref = {k: np.array([r[2][k] for r in rows]) for k in ("log_z", "mean", "var", "sigma_qp")}
        got = _summary(lik, y, m, v)
        assert got.ok.all()
        assert np.all(np.abs(got.log_z - ref["log_z"]) <= 1e-12 * np.maximum(1.0, np.abs(ref["log_z"]))), name
        assert np.all(np.abs(got.mean - ref["mean"]) <= 1e-12 * np.sqrt(ref["var"])), name
        np.testing.assert_allclose(got.var, ref["var"], rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(got.qp_std, ref["sigma_qp"], rtol=1e-12, err_msg=name)


def test_far_out_probit_cavity_keeps_log_z():
    """m = -10, s = 0.05: Z = Phi(-10/sqrt(1.0025)) ~ 1e-23; m = -10, s = 0.05 for the step:
    Z = Phi(-200) ~ 1e-8700 (log space only)."""
    probit = qpviz.likelihood("probit")
    got = _summary(probit, 1.0, -10.0, 0.0025)
    assert got.log_z == pytest.approx(special.log_ndtr(-10.0 / np.sqrt(1.0025)), rel=1e-13)
    step = qpviz.likelihood("step", eps=0.0)
    got = _summary(step, 1.0, -10.0, 0.0025)
    assert got.log_z == pytest.approx(special.log_ndtr(-200.0), rel=1e-13)
    want = step.tilted_moments(1.0, -10.0, 0.0025)
    assert abs(got.mean - want.mean) <= 1e-11 * np.sqrt(want.var)
    assert got.var == pytest.approx(want.var, rel=1e-10)


@pytest.mark.parametrize("name,params,ys", SETTINGS, ids=IDS)
def test_cdf_and_sf_match_builtin(name, params, ys):
    lik = qpviz.likelihood(name, **params)
    closed = name in CLOSED_CDF
    for y in ys[:2]:
        for m, s in [(-10.0, 0.05), (-10.0, 20.0), (0.0, 1.0), (3.0, 4.0), (10.0, 0.05), (10.0, 20.0)]:
            mo = lik.tilted_moments(y, m, s * s)
            x = mo.mean + np.sqrt(mo.var) * np.array([-9.0, -4.0, -1.0, -0.2, 0.0, 0.5, 2.0, 5.0, 9.0])
            for upper in (False, True):
                want = lik.tilted_sf(x, y, m, s * s) if upper else lik.tilted_cdf(x, y, m, s * s)
                got = tn.tilted_cdf(lik.log_prob, x, y, m, s * s, upper=upper, kinks=lik.kinks)
                assert got.shape == x.shape
                if closed:  # relative accuracy all the way into the tails
                    use = want > 1e-300
                    np.testing.assert_allclose(got[use], want[use], rtol=1e-10)
                else:
                    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-13)


@pytest.mark.parametrize(
    "name,params,y,m,v,x,upper",
    [
        ("laplace", {"scale": 1.0}, 2.5, 3.0, 16.0, 40.06320168800906, True),
        ("poisson_exp", {}, 50.0, 0.0, 1.0, 5.138852836775499, True),
        ("logistic", {}, 1.0, -10.0, 400.0, -71.1719575083002, False),
        ("student_t", {"nu": 4.0, "scale": 0.5}, -3.0, 0.0, 1.0, 5.957793657445313, True),
        ("poisson_square", {}, 1.0, 0.0, 1.0, -8.0, False),
    ],
)
def test_tail_probabilities_against_quadpack(name, params, y, m, v, x, upper):
    """Tail probabilities (1e-12 .. 1e-41, some beyond the numerical support) keep their
    relative accuracy: QUADPACK on the tail over QUADPACK on the whole."""
    lik = qpviz.likelihood(name, **params)
    mo = lik.tilted_moments(y, m, v)
    grid = mo.mean + np.sqrt(mo.var) * np.linspace(-5, 5, 1001)
    with np.errstate(divide="ignore"):
        peak = float(np.max(lik.log_prob(y, grid) - 0.5 * (grid - m) ** 2 / v))

    def dens(t):
        with np.errstate(divide="ignore"):
            return np.exp(float(lik.log_prob(y, t)) - 0.5 * (t - m) ** 2 / v - peak)

    span = 60.0 * np.sqrt(mo.var) + 60.0
    pts = sorted({float(mo.mean), float(y), float(m), 0.0})
    pts = [p for p in pts if abs(p - mo.mean) < span]
    whole = integrate.quad(dens, mo.mean - span, mo.mean + span, points=pts, epsabs=0, epsrel=1e-13, limit=500)[0]
    tail = integrate.quad(dens, x, x + span, epsabs=0, epsrel=1e-12, limit=500)[0] if upper else \
        integrate.quad(dens, x - span, x, epsabs=0, epsrel=1e-12, limit=500)[0]
    got = tn.tilted_cdf(lik.log_prob, x, y, m, v, upper=upper, kinks=lik.kinks)
    assert got == pytest.approx(tail / whole, rel=1e-10)


@pytest.mark.parametrize("name,params,ys", SETTINGS, ids=IDS)
def test_quantiles_invert_the_cdf_and_match_builtin(name, params, ys):
    lik = qpviz.likelihood(name, **params)
    u = np.array([1e-12, 1e-4, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-6])
    for y in ys[:2]:
        for m, s in [(-10.0, 20.0), (0.0, 1.0), (10.0, 0.05)]:
            q = tn.tilted_quantile(lik.log_prob, u, y, m, s * s, kinks=lik.kinks)
            lower = u <= 0.5
            f_lo = tn.tilted_cdf(lik.log_prob, q[lower], y, m, s * s, kinks=lik.kinks)
            f_hi = tn.tilted_cdf(lik.log_prob, q[~lower], y, m, s * s, upper=True, kinks=lik.kinks)
            np.testing.assert_allclose(f_lo, u[lower], rtol=1e-9)
            np.testing.assert_allclose(f_hi, 1 - u[~lower], rtol=1e-9)
            if name != "poisson_square" or m != 0.0:  # a symmetric bimodal F is flat at 1/2
                want = tilted.tilted_quantile(lik, u, y, m, s * s)
                sd = np.sqrt(lik.tilted_moments(y, m, s * s).var)
                np.testing.assert_allclose((q - want) / sd, 0.0, atol=2e-9)


def test_quantile_far_tails():
    """u = 1e-100 and 1 - 1e-12: Gaussian tilted (far beyond the support's exp(-80) ends) and the
    truncated Gaussian at its cut (F(x) = x phi(m/s) / (s Phi(m/s)) to first order, exact here)."""
    gauss = qpviz.likelihood("gaussian", variance=0.5)
    y, m, v = 1.0, -2.0, 3.0
    mo = gauss.tilted_moments(y, m, v)
    u = np.array([1e-100, 1e-20, 1 - 1e-12])
    q = tn.tilted_quantile(gauss.log_prob, u, y, m, v)
    want = mo.mean + np.sqrt(mo.var) * np.array([special.ndtri(1e-100), special.ndtri(1e-20), -special.ndtri(1 - u[2])])
    np.testing.assert_allclose(q, want, rtol=1e-11)
    np.testing.assert_allclose(tn.tilted_cdf(gauss.log_prob, want[:2], y, m, v), u[:2], rtol=1e-10)
    step = qpviz.likelihood("step", eps=0.0)
    m, s = 0.5, 1.0
    u = np.array([1e-100, 1 - 1e-12])
    q = tn.tilted_quantile(step.log_prob, u, 1.0, m, s * s, kinks=step.kinks)
    lower_want = 1e-100 * s * special.ndtr(m / s) / np.exp(-0.5 * (m / s) ** 2 - 0.5 * np.log(2 * np.pi))
    assert q[0] == pytest.approx(lower_want, rel=1e-10)
    upper_want = m - s * special.ndtri((1 - u[1]) * special.ndtr(m / s))
    assert q[1] == pytest.approx(upper_want, rel=1e-9)
    assert tn.tilted_cdf(step.log_prob, 50.0, 1.0, m, s * s, upper=True, kinks=step.kinks) == pytest.approx(
        special.ndtr(-(50.0 - m) / s) / special.ndtr(m / s), rel=1e-10)


def test_batch_matches_points_and_broadcasts():
    lik = qpviz.likelihood("student_t", nu=4.0, scale=0.5)
    y = np.array([[-3.0], [2.5]])
    m = np.array([-1.0, 0.0, 4.0])
    batch = _summary(lik, y, m, 2.0)
    assert batch.log_z.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            one = _summary(lik, y[i, 0], m[j], 2.0)
            for field in ("log_z", "mean", "var", "qp_std"):
                assert getattr(batch, field)[i, j] == pytest.approx(float(getattr(one, field)), rel=1e-12)


def test_want_qp_false_and_rel_tol():
    lik = qpviz.likelihood("logistic")
    s = _summary(lik, 1.0, 0.3, 2.0, want_qp=False)
    assert np.isnan(s.qp_std) and s.ok
    loose = _summary(lik, 1.0, 0.3, 2.0, rel_tol=1e-6)
    assert loose.mean == pytest.approx(float(s.mean), rel=1e-6)


def test_user_written_log_prob_without_kinks():
    """A plain NumPy function (hard truncation at f = 1, no kinks given, -inf left of it) still
    integrates: the zero region is located and bisected."""

    def log_prob(y, f):
        with np.errstate(divide="ignore"):
            return np.where(f > 1.0, 0.0, -np.inf) + 0.0 * y

    got = tn.tilted_summary(log_prob, 0.0, 0.0, 1.0, kinks=lambda y: [1.0])
    assert got.log_z == pytest.approx(special.log_ndtr(-1.0), rel=1e-13)
    r = np.exp(-0.5 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(-1.0))  # phi(1)/Phi(-1)
    assert got.mean == pytest.approx(r, rel=1e-12)
    assert got.var == pytest.approx(1 + r * 1.0 - r * r, rel=1e-11)


def test_bad_input_raises():
    lik = qpviz.likelihood("probit")
    with pytest.raises(ValueError, match="cavity_var"):
        tn.tilted_summary(lik.log_prob, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="cavity_var"):
        tn.tilted_summary(lik.log_prob, 1.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="cavity_mean"):
        tn.tilted_summary(lik.log_prob, 1.0, np.nan, 1.0)
    with pytest.raises(ValueError, match="log_prob"):
        tn.tilted_summary("probit", 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="NaN|nan"):
        tn.tilted_summary(lambda y, f: np.log(f - 100.0 + 0 * y), 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="-inf at every f"):
        tn.tilted_summary(lambda y, f: np.full(np.shape(f), -np.inf), 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="u must"):
        tn.tilted_quantile(lik.log_prob, 1.5, 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="one tilted"):
        tn.tilted_quantile(lik.log_prob, 0.5, [1.0, -1.0], 0.0, 1.0)
    with pytest.raises(ValueError, match="rel_tol"):
        tn.tilted_summary(lik.log_prob, 1.0, 0.0, 1.0, rel_tol=0.0)


_LIKS = [qpviz.likelihood(n, **p) for n, p, _ in SETTINGS]


@settings(max_examples=60, deadline=None)
@given(
    which=st.integers(0, len(SETTINGS) - 1),
    pick=st.integers(0, 3),
    m=st.floats(-10.0, 10.0),
    log_s=st.floats(np.log(0.05), np.log(20.0)),
)
def test_property_whole_domain(which, pick, m, log_s):
    """Over the whole domain: finite values, ok, sigma_QP <= sqrt(var) (QP paper Theorem 2),
    and agreement with the built-in moments."""
    name, params, ys = SETTINGS[which]
    lik = _LIKS[which]
    y = ys[pick % len(ys)]
    v = float(np.exp(2 * log_s))
    got = _summary(lik, y, m, v)
    assert got.ok
    for field in ("log_z", "mean", "var", "qp_std"):
        assert np.isfinite(getattr(got, field))
    assert 0.0 < got.qp_std <= np.sqrt(got.var)
    want = lik.tilted_moments(y, m, v)
    assert abs(got.log_z - want.log_z) <= 1e-9 * max(1.0, abs(float(want.log_z)))
    assert abs(got.mean - want.mean) <= 1e-9 * np.sqrt(want.var)
    assert got.var == pytest.approx(float(want.var), rel=1e-9)


@pytest.mark.parametrize("package", ["qpviz/tilted_numpy", "qpviz/likelihoods/_tilted_cdfs"])
def test_numerical_packages_are_leaves_of_the_import_graph(package):
    """The NumPy engine and the closed-form CDFs import no likelihood and no engine module, so
    neither can close an import circle with qpviz.likelihoods or qpviz.tilted."""
    import ast

    root = Path(__file__).resolve().parents[2]
    own = package.replace("/", ".")
    for path in sorted((root / package).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.startswith("qpviz") and not name.startswith(own):
                    assert name == "qpviz.config", f"{path.name} imports {name}"


def test_the_tilted_engine_does_not_import_the_likelihoods():
    """qpviz.likelihoods imports qpviz.tilted (its quadrature defaults); qpviz.tilted asks a
    likelihood what it can do (its jit handle, ``closed_form_moments``) and never imports the
    likelihoods package, so the two cannot form an import circle."""
    import ast

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "qpviz" / "tilted").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(name.startswith("qpviz.likelihoods") for name in names), path.name
