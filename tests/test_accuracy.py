"""The accuracy requirement: sigma_QP, EP mean/variance and log Z against mpmath.

"QP std within 1e-9 relative of a high-precision computation, for cavity means in [-10, 10]
and cavity std in [0.05, 20] (Poisson counts up to 50), every likelihood."

The reference is tests/reference.py (mpmath, 40 digits, its own quadrature; read from the
committed tests/data/reference_values.json, values it lacks cached outside the repository, see
``reference.cache_dir``). Points: every corner and edge midpoint of the domain
(m in {-10, 0, 10} x std in {0.05, 1, 20}) and seeded interior points, for both labels, counts
{0, 1, 5, 50} and real y in {-3, 0, 2.5}, for every parameter set the app offers
(qpviz.config). Errors are relative: for sigma_QP and the variance to the value itself; for
the mean to max(|mean|, tilted std) (a tilted mean of 1e-40 has no meaningful relative error);
for log Z to max(|log Z|, 1) (an absolute error in log Z is the relative error of Z).

Run ``PYTHONPATH=. python tests/test_accuracy.py`` (from the repository root) to print the worst
errors per likelihood.
"""
from __future__ import annotations

import numpy as np
import pytest
import reference

import qpviz
from qpviz import tilted

TOL = 1e-9
SETTINGS = reference.likelihood_settings()


def _setting_id(setting):
    name, params = setting
    return name + "".join(f"-{k}={v:g}" for k, v in params.items())


def _cases(setting):
    name, params = setting
    pts = [(y, m, v) for y in reference.observations(name) for m, v in reference.cavity_points()]
    y, m, v = (np.array(c) for c in zip(*pts))
    refs = [reference.cached_reference(name, params, *p) for p in pts]
    want = {key: np.array([r[key] for r in refs]) for key in refs[0]}
    return y, m, v, want


def errors(setting):
    """Relative errors of every quantity at every accuracy point of one likelihood setting."""
    name, params = setting
    lik = qpviz.likelihood(name, **params)
    y, m, v, want = _cases(setting)
    ep = qpviz.project(lik, y, m, v, method="ep")
    qp = qpviz.project(lik, y, m, v, method="qp", use_table=False)
    sd = np.sqrt(want["var"])
    got = {
        "sigma_qp (project)": (np.sqrt(qp.var), want["sigma_qp"], want["sigma_qp"]),
        "sigma_qp (tilted.qp_std)": (tilted.qp_std(lik, y, m, v), want["sigma_qp"], want["sigma_qp"]),
        "ep mean": (ep.mean, want["mean"], np.maximum(np.abs(want["mean"]), sd)),
        "ep var": (ep.var, want["var"], want["var"]),
        "log Z": (ep.log_z, want["log_z"], np.maximum(np.abs(want["log_z"]), 1.0)),
        "qp mean (= ep mean)": (qp.mean, want["mean"], np.maximum(np.abs(want["mean"]), sd)),
    }
    out = {}
    for key, (value, target, scale) in got.items():
        value = np.asarray(value, float)
        with np.errstate(invalid="ignore"):
            err = np.abs(value - target) / scale
        out[key] = (np.where(np.isfinite(value), err, np.inf), y, m, v, value, target)
    return out


def _report(key, err, y, m, v, value, target):
    bad = np.flatnonzero(~(err <= TOL))
    lines = [f"{key}: {bad.size} of {err.size} points off by more than {TOL:g} (relative)"]
    for i in bad[np.argsort(-err[bad])][:8]:
        lines.append(
            f"  y={y[i]:g} m={m[i]:g} v={v[i]:g}: got {value[i]!r}, mpmath {target[i]!r}, rel err {err[i]:.2e}"
        )
    return "\n".join(lines)


@pytest.mark.parametrize("setting", SETTINGS, ids=[_setting_id(s) for s in SETTINGS])
def test_accuracy_against_mpmath(setting):
    failures = [
        _report(key, *vals) for key, vals in errors(setting).items() if not np.all(vals[0] <= TOL)
    ]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("setting", SETTINGS, ids=[_setting_id(s) for s in SETTINGS])
def test_reference_forms_of_eq7_agree(setting):
    """The reference's CDF form and quantile form of sigma_QP agree (checks the reference itself)."""
    *_, want = _cases(setting)
    np.testing.assert_allclose(want["sigma_qp_quantile"], want["sigma_qp"], rtol=1e-13)
    # and its QP std never exceeds its EP std (Theorem 2), with equality only for the Gaussian
    assert np.all(want["sigma_qp"] <= np.sqrt(want["var"]) * (1 + 1e-14))


QUANTILE_CASES = reference.quantile_form_cases()


@pytest.mark.parametrize("case", QUANTILE_CASES, ids=[_setting_id(c[:2]) + f"-y={c[2]:g}-m={c[3]:g}-v={c[4]:g}" for c in QUANTILE_CASES])
def test_reference_quantile_space_form_agrees(case):
    """The reference's sigma_QP integrated in quantile space, int_0^1 F^-1(u) Phi^-1(u) du with
    F^-1 by root finding (reference.QuantileForm), equals its f-space value: the two sides of
    eq. 7 are computed by different routes and agree."""
    want = reference.cached_reference(*case)["sigma_qp"]
    assert reference.cached_quantile_form(*case) == pytest.approx(want, rel=1e-13)


def test_points_cover_the_domain_edges():
    pts = reference.cavity_points()
    means = {m for m, _ in pts}
    stds = {round(float(np.sqrt(v)), 12) for _, v in pts}
    assert {-10.0, 0.0, 10.0} <= means and {0.05, 1.0, 20.0} <= stds
    assert all(-10 <= m <= 10 and 0.05 <= np.sqrt(v) * (1 + 1e-12) and np.sqrt(v) <= 20 * (1 + 1e-12) for m, v in pts)
    assert 50.0 in reference.observations("poisson_square") and 50.0 in reference.observations("poisson_exp")


if __name__ == "__main__":  # PYTHONPATH=. python tests/test_accuracy.py: worst relative errors
    keys = None
    for setting in SETTINGS:
        errs = errors(setting)
        if keys is None:
            keys = list(errs)
            print(f"{'likelihood':34s}" + "".join(f"{k:>26s}" for k in keys))
        print(f"{_setting_id(setting):34s}" + "".join(f"{errs[k][0].max():26.2e}" for k in keys))
