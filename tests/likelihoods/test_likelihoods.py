"""Every likelihood: numba kernels vs NumPy references, derivatives, validation, registry."""
import numpy as np
import pytest

import qpviz
from qpviz.likelihoods import REGISTRY, InvalidObservation
from qpviz._jit import dlog_prob_batch, log_prob_batch

#: Observations per support; parameters: the class defaults, except where a case below sets them.
OBSERVATIONS = {"binary": [-1.0, 1.0], "count": [0.0, 1.0, 7.0], "real": [-3.0, 0.0, 2.5]}
PARAMS = {"gaussian": {"variance": 0.5}, "step": {"eps": 0.1}, "student_t": {"nu": 3.0, "scale": 0.7},
          "laplace": {"scale": 0.5}}
#: Every registered likelihood (a new one is tested here without an edit).
CASES = {name: (PARAMS.get(name, {}), OBSERVATIONS[cls.support]) for name, cls in REGISTRY.items()}


def test_the_registry_holds_the_built_ins():
    assert {"gaussian", "probit", "logistic", "step", "cloglog", "poisson_square", "poisson_exp", "student_t",
            "laplace"} <= set(REGISTRY)


@pytest.mark.parametrize("name", sorted(CASES))
def test_numba_log_prob_matches_numpy_reference(name):
    params, ys = CASES[name]
    lik = qpviz.likelihood(name, **params)
    fs = np.linspace(-6, 6, 121) + 0.013  # avoid the kinks exactly
    for y in ys:
        ref = lik.log_prob(y, fs)
        got = log_prob_batch(lik.jit_handle(), np.full(fs.size, float(y)), fs)
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_match_finite_differences(name):
    params, ys = CASES[name]
    lik = qpviz.likelihood(name, **params)
    fs = np.linspace(-3, 3, 25) + 0.0137
    h = 1e-5
    for y in ys:
        d1, d2 = lik.dlog_prob(y, fs)
        fd1 = (lik.log_prob(y, fs + h) - lik.log_prob(y, fs - h)) / (2 * h)
        fd2 = (lik.log_prob(y, fs + h) - 2 * lik.log_prob(y, fs) + lik.log_prob(y, fs - h)) / h**2
        np.testing.assert_allclose(d1, fd1, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(d2, fd2, rtol=1e-3, atol=1e-3)
        got = dlog_prob_batch(lik.jit_handle(), np.full(fs.size, float(y)), fs)
        np.testing.assert_allclose(got[0], d1, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], d2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_predictive_is_a_normalised_distribution_for_discrete_y(name):
    params, ys = CASES[name]
    lik = qpviz.likelihood(name, **params)
    if lik.support == "binary":
        total = lik.predictive(1.0, 0.3, 2.0) + lik.predictive(-1.0, 0.3, 2.0)
        assert total == pytest.approx(1.0, abs=1e-12)
    elif lik.support == "count":
        counts = np.arange(0, 80.0)
        assert lik.predictive(counts, 0.8, 0.3).sum() == pytest.approx(1.0, abs=1e-10)


def test_probit_predictive_closed_form():
    from scipy import special

    lik = qpviz.likelihood("probit")
    assert lik.predictive(1.0, 0.7, 2.0) == pytest.approx(special.ndtr(0.7 / np.sqrt(3.0)), rel=1e-14)


def test_poisson_square_negative_binomial_predictive_sums_to_one_and_matches_moments():
    lik = qpviz.likelihood("poisson_square")
    counts = np.arange(0, 400.0)
    p = lik.negative_binomial_predictive(counts, 1.5, 0.2)
    assert p.sum() == pytest.approx(1.0, abs=1e-10)
    # the Gamma matched to g = f^2 has mean E[f^2] = mean^2 + var, so does the count
    assert (counts * p).sum() == pytest.approx(1.5**2 + 0.2, rel=1e-10)


@pytest.mark.parametrize(
    "name,y,message",
    [("probit", 0.5, "{-1, +1}"), ("step", 2, "{-1, +1}"), ("poisson_square", -1, "counts"),
     ("poisson_exp", 1.5, "counts"), ("gaussian", np.nan, "finite")],
)
def test_bad_observations_say_what_is_allowed(name, y, message):
    lik = qpviz.likelihood(name)
    with pytest.raises(InvalidObservation, match=message.replace("{", r"\{").replace("}", r"\}").replace("+", r"\+")):
        qpviz.project(lik, y, 0.0, 1.0)


@pytest.mark.parametrize(
    "name,params,message",
    [("step", {"eps": 0.5}, "eps"), ("step", {"eps": -0.1}, "eps"), ("gaussian", {"variance": 0}, "variance"),
     ("student_t", {"nu": -1}, "nu"), ("laplace", {"scale": "big"}, "scale")],
)
def test_bad_parameters_name_the_parameter(name, params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        qpviz.likelihood(name, **params)


def test_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match="probit"):
        qpviz.likelihood("probitt")


def test_likelihoods_compare_and_print_by_value():
    assert qpviz.likelihood("step", eps=0.1) == qpviz.likelihood("step", eps=0.1)
    assert qpviz.likelihood("step", eps=0.1) != qpviz.likelihood("step", eps=0.2)
    assert repr(qpviz.likelihood("laplace", scale=2.0)) == "qpviz.likelihood('laplace', scale=2.0)"


@pytest.mark.parametrize("y, m, v", [(327.0, 9.263634334794698, 433.6), (1000.0, -4.0, 0.0025), (100.0, 0.0, 2.0),
                                     (0.0, 3.0, 0.5)])
def test_poisson_square_moments_by_the_raw_moment_recurrence_match_mpmath(y, m, v):
    """The O(n) recurrence M_(k+1) = beta M_k + k tau2 M_(k-1) (with Stein's identity for A_1, A_2)
    against the per-term binomial sums at 60 digits, up to counts of 1000."""
    import mpmath
    from qpviz.likelihoods.poisson_square import tilted_moments_scalar

    mpmath.mp.dps = 60
    n = 2 * int(y)
    vv, mm = mpmath.mpf(v), mpmath.mpf(m)
    tau2 = vv / (1 + 2 * vv)
    beta, tau = abs(mm) / (1 + 2 * vv), mpmath.sqrt(tau2)

    def gauss(i):
        return mpmath.mpf(0) if i % 2 else (mpmath.fac2(i - 1) if i else mpmath.mpf(1))

    a = [mpmath.fsum(mpmath.binomial(n, j) * beta ** (n - j) * tau**j * gauss(j + k) for j in range(n + 1))
         for k in range(3)]
    mean = (beta + tau * a[1] / a[0]) * (1 if m >= 0 else -1)
    var = tau2 * (a[2] / a[0] - (a[1] / a[0]) ** 2)
    log_z = mpmath.log(mpmath.sqrt(tau2 / vv)) - mm * mm / (1 + 2 * vv) - mpmath.loggamma(y + 1) + mpmath.log(a[0])
    got = tilted_moments_scalar(y, m, v)
    assert got[0] == pytest.approx(float(log_z), rel=1e-13, abs=1e-13)
    assert abs(got[1] - float(mean)) <= 1e-12 * float(mpmath.sqrt(var))
    assert got[2] == pytest.approx(float(var), rel=1e-11)


def test_the_handle_slots_hold_what_their_names_say():
    from qpviz import _jit

    base = qpviz.likelihood("student_t", nu=4.0, scale=0.5)
    lk = base.tempered(0.25).jit_handle()
    assert len(lk) == 11
    np.testing.assert_array_equal(lk[_jit.HANDLE_PARAMS], [4.0, 0.5])
    assert lk[_jit.HANDLE_ALPHA] == 0.25
    assert (lk[_jit.HANDLE_SMOOTH], lk[_jit.HANDLE_UNIMODAL], lk[_jit.HANDLE_HAS_TAYLOR]) == (1.0, 0.0, 0.0)
    assert _jit.lk_log_prob(lk, 1.0, 0.2) == pytest.approx(0.25 * float(base.log_prob(1.0, 0.2)), rel=1e-14)
    plain = _jit.untempered(lk)
    assert plain[_jit.HANDLE_ALPHA] == 1.0
    assert _jit.lk_log_prob(plain, 1.0, 0.2) == pytest.approx(float(base.log_prob(1.0, 0.2)), rel=1e-14)
    assert _jit.lk_starts(plain, 1.0, 0.3, 2.0) == _jit.lk_starts(lk, 1.0, 0.3, 2.0)
    laplace = qpviz.likelihood("laplace", scale=0.5).jit_handle()
    assert laplace[_jit.HANDLE_SMOOTH] == 0.0 and _jit.lk_kink(laplace, 1.5) == 1.5
    probit = qpviz.likelihood("probit").jit_handle()
    assert (probit[_jit.HANDLE_UNIMODAL], probit[_jit.HANDLE_HAS_TAYLOR]) == (1.0, 1.0)
    assert _jit.lk_moments(probit, 1.0, 0.0, 1.0)[0] and not _jit.lk_moments(lk, 1.0, 0.0, 1.0)[0]


def _python_typings(dispatcher, *args) -> int:
    """How many arguments of a warm call ``dispatcher(*args)`` numba types in Python: its C
    dispatcher calls ``typeof_pyval`` only for a value it has no type fingerprint for."""
    dispatcher(*args)  # compiled, and every fingerprint it can take is known
    calls = []
    typeof = dispatcher.typeof_pyval
    dispatcher.typeof_pyval = lambda value: calls.append(type(value).__name__) or typeof(value)
    try:
        dispatcher(*args)
    finally:
        del dispatcher.typeof_pyval
    return len(calls)


@pytest.mark.parametrize("name", ["probit", "student_t"])
def test_a_call_with_the_handle_types_it_by_fingerprint(name):
    """The handle (kernel addresses, floats, the parameter array) takes the dispatcher's C fast
    path: no typing in Python per call (with the cfunc objects in it, every call typed it in
    Python, ~100 us of the ~100-230 us a site sweep call took from Python)."""
    from qpviz import _jit
    from qpviz.inference.sites import SiteRule

    lik = qpviz.likelihood(name).tempered(0.5)
    y, f = np.ones(3), np.linspace(-1.0, 1.0, 3)
    assert _python_typings(log_prob_batch, lik.jit_handle(), y, f) == 0
    assert _python_typings(log_prob_batch, _jit.untempered(lik.jit_handle()), y, f) == 0
    rule = SiteRule.build("qp", qpviz.likelihood(name), 1.0)
    method, handle, damping, coef, meta = rule.jit
    from qpviz.inference import dense_sweep

    n = 4
    args = (np.eye(n), np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n), np.arange(n), 0, method, handle, damping,
            coef, meta, np.zeros(n), np.zeros(n, np.int64), np.empty((dense_sweep.SWEEP_BLOCK, n)),
            np.empty(dense_sweep.SWEEP_BLOCK), True)
    assert _python_typings(dense_sweep.sweep_sites_general, *args) == 0
