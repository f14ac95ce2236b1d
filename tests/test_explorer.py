"""The Projection Explorer without a browser: qpviz.explorer's state and view data, and the page
object of app/projection_explorer.py constructed and driven in-process.

Numbers are checked against an independent computation: the tilted distribution tabulated on a
fine grid from ``lik.log_prob`` alone (trapezoid rule), not through qpviz.tilted.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

import qpviz
from qpviz import explorer
from qpviz.explorer import ExplorerState
from qpviz.likelihoods import REGISTRY
from qpviz.tables import families
from layout import CONTROL_CSS
from safe_text import shown

#: A valid observation per likelihood for the parametrised tests.
Y = {"binary": -1.0, "count": 3.0, "real": 0.7}
#: Several valid observations per support for the registry test.
Y_VALUES = {"binary": (-1.0, 1.0), "count": (0.0, 1.0, 2.0, 3.0), "real": (-0.8, 0.0, 2.5)}


def grid_reference(lik, y, m, s, points=400_001):
    """Z, mean, var, sigma_QP and the CDF of the tilted distribution on a fine grid (trapezoid
    rule on each piece between the kinks of p(y|f), so that jumps cost no accuracy).

    sigma_QP = int phi(Phi^-1(F(f))) df (QP paper eq. 7, last form).
    """
    lo, hi = m - 14 * s, m + 14 * s
    kinks = [k for k in np.asarray(lik.kinks(y), float) if lo < k < hi]
    edges = [lo, *kinks, hi]
    pieces = []
    for a, b in zip(edges[:-1], edges[1:]):
        n = max(int(points * (b - a) / (hi - lo)), 1001)
        pieces.append(np.linspace(np.nextafter(a, b), np.nextafter(b, a), n))
    with np.errstate(divide="ignore"):
        unnorm = [np.exp(lik.log_prob(y, f)) * stats.norm.pdf(f, m, s) for f in pieces]
    z = sum(np.trapezoid(g, f) for f, g in zip(pieces, unnorm))
    mean = sum(np.trapezoid(f * g, f) for f, g in zip(pieces, unnorm)) / z
    var = sum(np.trapezoid((f - mean) ** 2 * g, f) for f, g in zip(pieces, unnorm)) / z
    f = np.concatenate(pieces)
    q = np.concatenate(unnorm) / z
    steps = 0.5 * (q[1:] + q[:-1]) * np.diff(f)
    steps[np.cumsum([len(p) for p in pieces])[:-1] - 1] = 0.0  # no mass across the tiny gap at a kink
    cdf = np.clip(np.concatenate(([0.0], np.cumsum(steps))), 0.0, 1.0)
    sigma_qp = sum(np.trapezoid(stats.norm.pdf(special.ndtri(c)), x) for x, c in zip(pieces, np.split(cdf, np.cumsum([len(p) for p in pieces])[:-1])))
    return {"Z": z, "mean": mean, "var": var, "sigma_qp": sigma_qp, "f": f, "cdf": cdf, "pdf": q}


def state_for(name: str, **inputs) -> ExplorerState:
    state = ExplorerState()
    assert state.update(likelihood=name), state.error
    assert state.update(y=Y[state.likelihood_object().support], **inputs), state.error
    return state


@pytest.fixture(params=list(REGISTRY))
def name(request) -> str:
    return request.param


class MyCauchy(qpviz.Likelihood):
    """A user's likelihood: only log_prob and one declared parameter (no choices, no kernels)."""

    name = "my_cauchy_explorer"
    support = "real"
    parameters = (qpviz.Parameter("scale", default=1.0, lower=0.0, doc="half width"),)

    def log_prob(self, y, f):
        return -np.log(np.pi * self.scale * (1 + ((y - f) / self.scale) ** 2))


@pytest.fixture
def user_likelihood():
    """MyCauchy registered for one test, and removed from the registry afterwards."""
    qpviz.register_likelihood(MyCauchy)
    try:
        yield MyCauchy
    finally:
        REGISTRY.pop(MyCauchy.name, None)


# -- the registry is the explorer's list -------------------------------------------------------
def test_every_registered_likelihood_computes_every_view_with_its_initial_parameters(name):
    lik = explorer.build_likelihood(name, **explorer.initial_params(name))
    for y in Y_VALUES[lik.support]:
        result = explorer.compute(lik, y, 0.4, 1.3)
        for view in (result.densities, result.quantiles):
            for key, values in view.items():
                assert np.all(np.isfinite(values)), (name, y, key)
        assert all(np.isfinite(v) for v in result.summary.values()), (name, y)
        data = explorer.ratio_map(lik, y, shape=(5, 4))
        # <= 1 (Theorem 2; var_QP is capped at var_EP against the tables' 1e-8 error)
        assert np.all(np.isfinite(data["ratio"])) and np.all(data["ratio"] <= 1.0), (name, y)


def test_the_explorer_offers_the_registry_including_cloglog():
    state = ExplorerState()
    assert state.param.likelihood.objects == list(REGISTRY) == explorer.likelihood_names()
    assert "cloglog" in state.param.likelihood.objects
    assert state.update(likelihood="cloglog") and state.likelihood_object() == qpviz.likelihood("cloglog")
    assert state.y == 1.0 and state.likelihood_params == {}


def test_a_user_registered_likelihood_appears_with_its_parameter_input(user_likelihood):
    state = ExplorerState()
    assert user_likelihood.name in state.param.likelihood.objects
    assert state.update(likelihood=user_likelihood.name, y=0.3)
    assert state.likelihood_params == {"scale": 1.0} and np.isfinite(state.result.summary["var_qp"])
    assert state.update(likelihood_params={"scale": "0.5"}) and state.likelihood_object().scale == 0.5
    assert state.result.summary["var_qp"] <= state.result.summary["var_ep"] * (1 + 1e-9)
    assert state.update(likelihood_params={"scale": -1.0}) is False
    assert "scale must be a finite number in (0, inf) (half width)" in state.error
    [control] = explorer.parameter_controls(user_likelihood.name)
    assert (control.kind, control.key, control.default) == ("number", "my_cauchy_explorer_scale", 1.0)
    assert "(0, inf)" in control.label


def test_a_state_made_before_a_registration_offers_it_when_asked(user_likelihood):
    REGISTRY.pop(user_likelihood.name)
    state = ExplorerState()
    assert user_likelihood.name not in state.param.likelihood.objects
    qpviz.register_likelihood(user_likelihood)
    assert state.update(likelihood=user_likelihood.name, y=0.0), state.error
    assert user_likelihood.name in state.param.likelihood.objects


def test_parameter_controls_come_from_each_classes_declarations(name):
    cls = REGISTRY[name]
    controls = explorer.parameter_controls(name)
    start = explorer.initial_params(name)
    assert set(start) == {p.name for p in cls.parameters}
    covered = {p for c in controls for p in c.parameters}
    assert covered == set(start)
    params = {}
    for control in controls:
        assert control.likelihood == name
        assert control.value_for(start) == control.default
        params.update(control.params_for(control.default))
        if control.kind == "select":
            [parameter] = [p for p in cls.parameters if p.name == control.parameters[0]]
            assert set(parameter.choices) <= set(control.options.values())
        if control.kind == "preset":
            assert [control.params_for(label) for label in control.options] == [
                {k: float(v) for k, v in preset.items()} for preset in cls.presets]
    assert params == start


def test_controls_keep_the_old_url_keys():
    keys = {c.key for name in REGISTRY for c in explorer.parameter_controls(name)}
    assert keys >= {"gaussian_variance", "step_eps", "student_t", "laplace_scale"}
    [student_t] = explorer.parameter_controls("student_t")
    assert student_t.params_for("nu=4, scale=0.5") == {"nu": 4.0, "scale": 0.5}


def test_the_cavity_sliders_lie_inside_the_qp_tables_domain():
    lo, hi = explorer.CAVITY_STD_SLIDER
    assert families.TABLE_STD_RANGE[0] <= lo < hi <= families.TABLE_STD_RANGE[1]
    assert max(map(abs, explorer.CAVITY_MEAN_SLIDER)) <= min(families.BINARY_MEAN, families.COUNT_MEAN)


# -- the state and its numbers -----------------------------------------------------------------
def test_default_state_is_valid_and_computed():
    state = ExplorerState()
    assert state.error == ""
    assert state.likelihood == "probit" and state.y == 1.0
    assert set(state.result.summary) >= {"Z", "mean", "var_ep", "var_qp", "ratio", "w2_ep", "kl_qp", "site_var_qp"}


def test_numbers_equal_qpviz_project(name):
    state = state_for(name, cavity_mean=0.4, cavity_std=1.3)
    lik = state.likelihood_object()
    ep = qpviz.project(lik, state.y, 0.4, 1.3**2, method="ep")
    qp = qpviz.project(lik, state.y, 0.4, 1.3**2, method="qp")
    s = state.result.summary
    assert s["mean"] == pytest.approx(float(ep.mean), rel=1e-14, abs=1e-14)
    assert s["var_ep"] == pytest.approx(float(ep.var), rel=1e-14)
    assert s["var_qp"] == pytest.approx(float(qp.var), rel=1e-14)
    assert s["log_Z"] == pytest.approx(float(ep.log_z), rel=1e-14, abs=1e-14)
    assert s["site_var_qp"] == pytest.approx(float(qp.site().var), rel=1e-12)
    assert s["site_mean_ep"] == pytest.approx(float(ep.site().mean), rel=1e-12, abs=1e-12)


def test_numbers_match_an_independent_grid_computation(name):
    state = state_for(name, cavity_mean=-0.3, cavity_std=1.7)
    ref = grid_reference(state.likelihood_object(), state.y, -0.3, 1.7)
    s = state.result.summary
    assert s["Z"] == pytest.approx(ref["Z"], rel=1e-6)
    assert s["mean"] == pytest.approx(ref["mean"], rel=1e-6, abs=1e-6)
    assert s["var_ep"] == pytest.approx(ref["var"], rel=1e-6)
    assert math.sqrt(s["var_qp"]) == pytest.approx(ref["sigma_qp"], rel=1e-5)


def test_qp_variance_never_exceeds_ep_and_w2_kl_are_each_methods_optimum(name):
    state = state_for(name, cavity_mean=1.1, cavity_std=2.2)
    s = state.result.summary
    assert s["var_qp"] <= s["var_ep"] * (1 + 1e-12)  # QP paper Theorem 2
    assert s["ratio"] == pytest.approx(s["var_qp"] / s["var_ep"], rel=1e-15)
    assert s["w2_qp"] <= s["w2_ep"] + 1e-12  # QP minimises W2 over Gaussians
    assert s["kl_ep"] <= s["kl_qp"] + 1e-12  # EP minimises KL(tilted || Gaussian)


def test_w2_matches_the_quantile_integral():
    """W2^2 = int_0^1 (F^-1(u) - mu - sigma Phi^-1(u))^2 du (QP paper eq. 11), from the grid CDF."""
    state = state_for("step", cavity_mean=0.2, cavity_std=1.0)
    ref = grid_reference(state.likelihood_object(), -1.0, 0.2, 1.0)
    s = state.result.summary
    u = np.linspace(0, 1, 200_001)[1:-1]
    quantile = np.interp(u, ref["cdf"], ref["f"])
    for key in ("ep", "qp"):
        resid = quantile - s["mean"] - math.sqrt(s[f"var_{key}"]) * special.ndtri(u)
        assert s[f"w2_{key}"] == pytest.approx(math.sqrt(np.trapezoid(resid**2, u)), rel=2e-3)


def test_densities_are_normalised_and_the_likelihood_is_scaled_to_the_plot(name):
    state = state_for(name, cavity_mean=0.5, cavity_std=0.9)
    d = state.result.densities
    assert explorer.DENSITY_POINTS <= d["x"].size <= explorer.DENSITY_POINTS + 2
    for key in ("cavity", "tilted", "ep", "qp"):
        assert np.trapezoid(d[key], d["x"]) == pytest.approx(1.0, abs=2e-3), key
    peak = max(d[key].max() for key in ("cavity", "tilted", "ep", "qp"))
    assert d["likelihood"].max() == pytest.approx(peak, rel=1e-12)
    lik = state.likelihood_object()
    expected = np.exp(lik.log_prob(state.y, d["x"][200])) * d["likelihood_scale"]
    assert d["likelihood"][200] == pytest.approx(float(expected), rel=1e-12)


def test_tilted_quantiles_invert_the_cdf(name):
    state = state_for(name, cavity_mean=-0.6, cavity_std=1.4)
    q = state.result.quantiles
    lik = state.likelihood_object()
    assert np.all(np.diff(q["tilted"]) >= 0), "a quantile function never decreases"
    inner = (q["u"] > 1e-3) & (q["u"] < 1 - 1e-3)
    cdf = lik.tilted_cdf(q["tilted"][inner], state.y, -0.6, 1.4**2)
    np.testing.assert_allclose(cdf, q["u"][inner], rtol=1e-6, atol=1e-9)
    ref = grid_reference(lik, state.y, -0.6, 1.4)
    np.testing.assert_allclose(q["tilted"][inner], np.interp(q["u"][inner], ref["cdf"], ref["f"]), atol=2e-3)


def test_qq_view_lines_use_the_tilted_mean_and_each_sigma():
    state = state_for("poisson_square", cavity_mean=1.0, cavity_std=1.0)
    q, s = state.result.quantiles, state.result.summary
    np.testing.assert_allclose(q["z"], special.ndtri(q["u"]), atol=1e-12)
    np.testing.assert_allclose(q["qp"], s["mean"] + math.sqrt(s["var_qp"]) * q["z"], rtol=1e-14)
    np.testing.assert_allclose(q["ep"], s["mean"] + math.sqrt(s["var_ep"]) * q["z"], rtol=1e-14)
    # sigma_QP = int_0^1 F^-1(u) Phi^-1(u) du, here over u = Phi(z), |z| <= 3.5 (tails ~1e-3)
    slope = np.trapezoid(q["tilted"] * q["z"], q["u"])
    assert slope == pytest.approx(math.sqrt(s["var_qp"]), rel=1e-2)


def test_quantiles_of_a_gaussian_tilted_distribution_are_exact():
    """Gaussian likelihood: the tilted distribution is the product-of-Gaussians N(mu, sigma^2),
    so F^-1(u) = mu + sigma Phi^-1(u), and the EP and QP lines coincide with it."""
    state = ExplorerState()
    assert state.update(likelihood="gaussian", likelihood_params={"variance": 0.5}, y=-1.1, cavity_mean=0.3,
                        cavity_std=math.sqrt(2.0))
    var = 1.0 / (1.0 / 2.0 + 1.0 / 0.5)
    mu = var * (0.3 / 2.0 + -1.1 / 0.5)
    q = state.result.quantiles
    expected = mu + math.sqrt(var) * q["z"]
    for key in ("tilted", "ep", "qp"):
        np.testing.assert_allclose(q[key], expected, rtol=1e-8, atol=1e-9, err_msg=key)


def test_ratio_map_is_at_most_one_and_matches_pointwise_projections():
    lik = qpviz.likelihood("step", eps=0.1)
    data = explorer.ratio_map(lik, 1.0, shape=(7, 5))
    assert data["ratio"].shape == (5, 7)
    assert np.all(data["ratio"] <= 1 + 1e-12) and np.all(data["ratio"] > 0.5)
    i, j = 3, 2  # std index, mean index
    m, s = data["means"][j], data["stds"][i]
    ep = qpviz.project(lik, 1.0, m, s**2, method="ep", use_table=False)
    qp = qpviz.project(lik, 1.0, m, s**2, method="qp", use_table=False)
    assert data["ratio"][i, j] == pytest.approx(float(qp.var / ep.var), rel=1e-6)


def test_ratio_map_of_the_gaussian_likelihood_is_one():
    data = explorer.ratio_map(qpviz.likelihood("gaussian", variance=0.5), 0.3, shape=(5, 4))
    np.testing.assert_allclose(data["ratio"], 1.0, rtol=1e-9)


def test_cached_ratio_map_computes_each_map_once_and_keeps_the_recent_ones(monkeypatch):
    from qpviz.explorer import views
    from qpviz.gpdemo.jobs import LRUCache

    monkeypatch.setattr(views, "RATIO_MAP_CACHE", LRUCache(2))
    computed = []
    real = views.ratio_map
    monkeypatch.setattr(views, "ratio_map", lambda lik, y, **options: computed.append((lik.name, lik.params, y))
                        or real(lik, y, shape=(5, 4), **options))
    first = explorer.cached_ratio_map("step", {"eps": 0.1}, 1.0)
    assert explorer.cached_ratio_map("step", {"eps": 0.1}, 1) is first  # the same map: not computed again
    assert len(computed) == 1 and computed[0][:2] == ("step", {"eps": 0.1})
    np.testing.assert_array_equal(first["ratio"], real(qpviz.likelihood("step", eps=0.1), 1.0, shape=(5, 4))["ratio"])
    other_y = explorer.cached_ratio_map("step", {"eps": 0.1}, -1.0)
    other_eps = explorer.cached_ratio_map("step", {"eps": 0.2}, 1.0)  # the least recent (eps 0.1, y 1) goes
    assert len(computed) == 3 and not np.array_equal(other_y["ratio"], first["ratio"])
    assert explorer.cached_ratio_map("step", {"eps": 0.2}, 1.0) is other_eps and len(computed) == 3
    assert explorer.cached_ratio_map("step", {"eps": 0.1}, 1.0) is not first and len(computed) == 4


# -- inputs and bad input -----------------------------------------------------------------------
def test_likelihood_parameters_reach_the_likelihood():
    state = ExplorerState()
    assert state.update(likelihood="student_t", likelihood_params={"nu": 4, "scale": 0.5}, y=0.0)
    assert state.likelihood_object().params == {"nu": 4.0, "scale": 0.5}
    assert state.update(likelihood_params={"nu": 10.0})  # the other parameters keep their values
    assert state.likelihood_params == {"nu": 10.0, "scale": 0.5}
    assert state.update(likelihood="step", likelihood_params={"eps": 0.2})
    assert state.likelihood_object() == qpviz.likelihood("step", eps=0.2)
    assert state.update(likelihood="laplace", likelihood_params={"scale": 2.0}, y=0.0)
    assert state.likelihood_object() == qpviz.likelihood("laplace", scale=2.0)
    assert state.update(likelihood="gaussian", likelihood_params={"variance": 0.1})
    assert state.likelihood_object() == qpviz.likelihood("gaussian", variance=0.1)


def test_a_new_likelihood_starts_from_its_first_preset_or_its_defaults():
    state = ExplorerState()
    assert state.update(likelihood="step", likelihood_params={"eps": 0.2})
    assert state.update(likelihood="student_t", y=0.0)
    assert state.likelihood_params == {k: float(v) for k, v in REGISTRY["student_t"].presets[0].items()}
    assert state.update(likelihood="step") and state.likelihood_params == {"eps": 0.0}
    assert state.update(likelihood="step") and state.likelihood_params == {"eps": 0.0}


def test_changing_the_likelihood_moves_y_into_its_support():
    state = ExplorerState(likelihood="gaussian", y=-0.3)
    assert state.update(likelihood="probit") and state.y == -1.0
    assert state.update(likelihood="poisson_exp") and state.y == 0.0
    assert state.update(y=7) and state.update(likelihood="laplace") and state.y == 7.0
    assert state.update(likelihood="poisson_square", y=2.6) is False  # typed y is not adjusted
    assert "counts" in state.error and state.likelihood == "laplace"


def test_typed_text_is_parsed():
    state = ExplorerState()
    assert state.update(cavity_mean=" -1.25 ", cavity_std="0.8")
    assert (state.cavity_mean, state.cavity_std) == (-1.25, 0.8)
    with pytest.raises(TypeError, match="must be a number"):
        explorer.parse_number(True, "y")


def test_page_typed_y_beyond_the_slider_is_accepted(explorer_page):
    explorer_page.likelihood.value = "laplace"
    assert explorer_page.y_real_text.visible and not explorer_page.y_count_text.visible
    explorer_page.y_real_text.value = "25"
    assert explorer_page.state.y == 25.0 and not explorer_page.alert.visible
    assert "y = 25" in explorer_page.figures["densities"].title.text
    explorer_page.y_real_text.value = "60"
    assert shown(explorer_page.alert.object) == ("observation y: '60' was not applied; type a number from -50 to 50; "
                                                 "kept 25")
    assert explorer_page.state.y == 25.0 and explorer_page.y_real_text.value == "25"  # the box shows the value kept


def test_page_typed_count_is_refused_with_its_range_and_the_message_goes_at_the_next_good_value(explorer_page):
    page = explorer_page
    assert page.y_count_text.visible and not page.y_real_text.visible and page.y_count_text.value == "10"
    for typed in ("-3", "1.5", "1001", "nan", "abc"):
        page.y_count_text.value = typed
        assert "count y: " in shown(page.alert.object) and "type a whole number from 0 to 1000; kept 10" in shown(
            page.alert.object), typed
        assert page.state.y == 10.0 and page.y_count_text.value == "10"
    page.mean_slider.value = 2.5  # any good change clears the message; the box follows the slider
    assert not page.alert.visible and page.mean_text.value == "2.5"
    page.y_count_text.value = "4"
    assert page.state.y == 4.0 and page.y_count.value == 4 and not page.alert.visible


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"cavity_std": 0}, "must be > 0"),
        ({"cavity_std": -1.0}, "must be > 0"),
        ({"cavity_std": "abc"}, "must be a number"),
        ({"cavity_mean": "1e300"}, "cavity mean must be in"),
        ({"cavity_mean": float("nan")}, "must be finite"),
        ({"cavity_std": 1e9}, "cavity std must be in"),
        ({"y": 0.5}, "{-1, +1}"),
        ({"y": [1, 2]}, "must be a number"),
        ({"likelihood": "cauchy"}, "likelihood must be one of"),
        ({"likelihood": "step", "likelihood_params": {"eps": 0.7}}, "eps must be a finite number in [0, 0.5)"),
        ({"likelihood_params": {"eps": 0.1}}, "the probit likelihood has no parameter(s) ['eps']"),
        ({"likelihood": "student_t", "likelihood_params": {"nu": "many"}}, "nu must be a number"),
        ({"likelihood_params": [0.1]}, "likelihood_params must be a dict"),
    ],
)
def test_bad_input_keeps_the_last_good_state_and_says_what_to_change(changes, message):
    state = ExplorerState(cavity_mean=0.25, cavity_std=1.2)
    before = state.result
    assert state.update(**changes) is False
    assert message in state.error
    assert state.result is before
    assert (state.cavity_mean, state.cavity_std, state.y, state.likelihood) == (0.25, 1.2, 1.0, "probit")
    assert state.update(cavity_mean=0.3) and state.error == ""


def test_unknown_inputs_are_a_programming_error():
    with pytest.raises(TypeError, match="unknown input"):
        ExplorerState().update(cavity_variance=1.0)


def test_constructing_with_bad_input_raises():
    with pytest.raises(ValueError, match="must be > 0"):
        ExplorerState(cavity_std=0.0)


# -- the page, in-process -------------------------------------------------------------------------
@pytest.fixture
def explorer_page():
    import projection_explorer  # app/ is on the path (pyproject: pythonpath = ["app"])
    return projection_explorer.ProjectionExplorer()


def test_page_slider_updates_state_numbers_and_plots(explorer_page):
    old_tilted = np.array(explorer_page.sources["densities"].data["tilted"])
    explorer_page.mean_slider.value = -1.0
    assert explorer_page.state.cavity_mean == -1.0
    assert f"<td>mean (EP = QP)</td><td>{explorer_page.state.result.summary['mean']:.6g}</td>" in explorer_page.numbers.object
    assert "m = -1.00" in explorer_page.figures["densities"].title.text
    assert not np.allclose(explorer_page.sources["densities"].data["tilted"], old_tilted)
    assert explorer_page.marker.data == {"x": [-1.0], "y": [explorer_page.state.cavity_std]}


def test_page_sources_show_the_current_result_after_each_move(explorer_page):
    """Moves that keep every column's length are sent as patches, the others as new data (here
    the step likelihood's jump at f = 0 leaves the density grid at m = 7.5); either way the
    sources hold the current result, and the quantile grid columns stay as they were."""
    page = explorer_page
    page.likelihood.value = "step"
    u = np.array(page.sources["quantiles"].data["u"])
    lengths = set()
    for m in (0.5, -1.0, 7.5, 7.0, 0.25):
        page.mean_slider.value = m
        d, q = page.state.result.densities, page.state.result.quantiles
        lengths.add(len(d["x"]))
        for key in ("x", "cavity", "likelihood", "tilted", "ep", "qp"):
            np.testing.assert_array_equal(page.sources["densities"].data[key], d[key])
        for key in ("tilted", "ep", "qp"):
            np.testing.assert_array_equal(page.sources["quantiles"].data[key], q[key])
        np.testing.assert_array_equal(page.sources["quantiles"].data["u"], u)
        assert list(page.marker.data["x"]) == [m]
    assert len(lengths) == 2  # both ways of sending were used


def test_page_likelihood_change_shows_its_parameter_and_y_widgets(explorer_page):
    explorer_page.likelihood.value = "poisson_square"
    assert explorer_page.y_count.visible and not explorer_page.y_label.visible and not explorer_page.y_real.visible
    assert not any(w.visible for w in explorer_page.parameter_widgets.values())
    explorer_page.likelihood.value = "student_t"
    assert explorer_page.parameter_widgets["student_t"].visible and explorer_page.y_real.visible
    assert [k for k, w in explorer_page.parameter_widgets.items() if w.visible] == ["student_t"]
    explorer_page.parameter_widgets["student_t"].value = "nu=10, scale=1"
    assert explorer_page.state.likelihood_object().params == {"nu": 10.0, "scale": 1.0}


def test_page_menu_is_the_registry_and_parameters_are_remembered_per_likelihood(explorer_page):
    page = explorer_page
    assert page.likelihood.options == list(REGISTRY)
    page.likelihood.value = "cloglog"
    assert page.state.likelihood == "cloglog" and "densities: cloglog" in page.figures["densities"].title.text
    page.likelihood.value = "step"
    assert page.parameter_widgets["step_eps"].visible and page.state.likelihood_params == {"eps": 0.0}
    page.parameter_widgets["step_eps"].value = 0.2
    assert page.state.likelihood_object() == qpviz.likelihood("step", eps=0.2)
    page.likelihood.value = "laplace"
    page.parameter_widgets["step_eps"].value = 0.05  # hidden: kept for later, not applied now
    assert page.state.likelihood == "laplace"
    page.likelihood.value = "step"
    assert page.state.likelihood_params == {"eps": 0.05}


def test_page_of_a_user_registered_likelihood_has_its_number_input(user_likelihood):
    import projection_explorer  # app/ is on the path (pyproject: pythonpath = ["app"])
    page = projection_explorer.ProjectionExplorer()
    assert user_likelihood.name in page.likelihood.options
    page.likelihood.value = user_likelihood.name
    widget = page.parameter_widgets["my_cauchy_explorer_scale"]
    assert widget.visible and widget.value == 1.0 and page.y_real.visible
    widget.value = 2.0
    assert page.state.likelihood_params == {"scale": 2.0} and not page.alert.visible
    widget.value = 0.0
    assert "scale must be a finite number in (0, inf)" in shown(page.alert.object) and widget.value == 2.0


def test_page_bad_typed_value_shows_alert_and_keeps_the_view(explorer_page):
    data = dict(explorer_page.sources["densities"].data)
    explorer_page.std_text.value = "zero"
    assert explorer_page.alert.visible and shown(explorer_page.alert.object) == (
        "cavity std s: 'zero' was not applied; type a number from 0.05 to 8; kept 1.5")
    assert explorer_page.sources["densities"].data["tilted"] is data["tilted"] and explorer_page.std_text.value == "1.5"
    explorer_page.std_text.value = "0.7"
    assert not explorer_page.alert.visible and explorer_page.state.cavity_std == 0.7 and explorer_page.std_slider.value == 0.7


def test_page_projection_toggles_hide_curves_and_numbers(explorer_page):
    explorer_page.show.value = ["QP"]
    assert not explorer_page.renderers["densities"]["ep"].visible and explorer_page.renderers["qq"]["qp"].visible
    assert "<th>EP</th>" not in explorer_page.numbers.object and "<th>QP</th>" in explorer_page.numbers.object


def click_map(page, x: float, y: float) -> None:
    """A click on the map as the browser reports it: Bokeh's Tap event on its figure."""
    from bokeh.events import Tap  # noqa: PLC0415

    page.map.figure._trigger_event(Tap(page.map.figure, x=x, y=y))


def test_page_map_tap_moves_the_cavity(explorer_page):
    click_map(explorer_page, 2.345, 0.61)
    assert (explorer_page.state.cavity_mean, explorer_page.state.cavity_std) == (2.35, 0.61)
    assert explorer_page.mean_slider.value == 2.35
    assert explorer_page.marker.data == {"x": [2.35], "y": [0.61]}  # the map's marker moved with it
    click_map(explorer_page, 100.0, -3.0)  # outside the map: clipped into range
    assert (explorer_page.state.cavity_mean, explorer_page.state.cavity_std) == (explorer.CAVITY_MEAN_SLIDER[1], explorer.CAVITY_STD_SLIDER[0])


def test_page_projector_mode_enlarges_fonts(explorer_page):
    import projection_explorer

    explorer_page.projector = True
    assert explorer_page.figures["densities"].title.text_font_size == "22px"
    assert explorer_page.mean_slider.stylesheets == [CONTROL_CSS, projection_explorer.PROJECTOR_WIDGET_CSS]
    assert explorer_page.why.styles["font-size"] == explorer_page.link_note.styles["font-size"] == "150%"
    explorer_page.projector = False
    assert explorer_page.figures["densities"].title.text_font_size == "13px"
    assert explorer_page.mean_slider.stylesheets == [CONTROL_CSS]  # (labels wrap between words in both modes)


def test_page_map_failure_is_shown_not_raised(explorer_page, monkeypatch):
    import projection_explorer  # app/ is on the path (pyproject: pythonpath = ["app"])

    def broken(*args, **options):
        raise ValueError("table file damaged")

    monkeypatch.setattr(explorer, "cached_ratio_map", broken)  # the page asks the library
    explorer_page.likelihood.value = "logistic"  # a map the page has not drawn
    view = explorer_page.map_view("logistic", {}, 1.0)
    assert "not available" in view.title and np.isnan(view.ratio).all()
    assert explorer_page.map.figure.title.text == view.title and np.isnan(explorer_page.map.source.data["ratio"][0]).all()
    assert np.isfinite([view.low, view.high]).all()  # the colour bar keeps a range
    assert "table file damaged" in shown(explorer_page.alert.object) and explorer_page.alert.visible


# -- the classroom's findings (issue 10) ------------------------------------------------------------
@pytest.fixture
def map_folder(tmp_path, monkeypatch):
    """The stored maps go to a folder of the test's (qpviz.cache.table_cache_dir follows NUMBA_CACHE_DIR)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    return tmp_path / "qpviz-tables"


def test_a_stored_map_is_read_back_for_the_same_sources_only(map_folder, monkeypatch):
    from qpviz import cache  # noqa: PLC0415
    from qpviz.explorer import views  # noqa: PLC0415

    lik = explorer.build_likelihood("probit")
    data = explorer.ratio_map(lik, 1.0)
    assert views.stored_ratio_map("probit", {}, 1.0) is None
    assert views.store_ratio_map("probit", {}, 1.0, data)
    [path] = map_folder.glob(f"*{cache.RATIO_MAP_SUFFIX}")
    read = views.stored_ratio_map("probit", {}, 1.0)
    assert all(np.array_equal(read[key], data[key]) for key in ("means", "stds", "ratio"))
    assert views.stored_ratio_map("probit", {}, -1.0) is None  # another observation: another map
    monkeypatch.setattr(cache, "source_fingerprint", lambda package=cache.PACKAGE: "edited sources")
    assert views.stored_ratio_map("probit", {}, 1.0) is None  # a map of other sources is never read
    monkeypatch.undo()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(map_folder.parent))
    path.write_bytes(b"damaged")
    assert views.stored_ratio_map("probit", {}, 1.0) is None
    np.savez(path, means=data["means"], stds=data["stds"], ratio=data["ratio"][:-1])  # not the map's shape
    assert views.stored_ratio_map("probit", {}, 1.0) is None
    assert views.store_ratio_map("probit", {}, 1.0, data) and views.stored_ratio_map("probit", {}, 1.0) is not None
    cache.clear_table_caches()  # `python -m qpviz.cache clear` (and a change of the sources) removes it
    assert list(map_folder.glob(f"*{cache.RATIO_MAP_SUFFIX}")) == []


def test_the_opening_view_keeps_the_kernels_map_on_disk_and_a_later_start_reads_it(map_folder, monkeypatch):
    """explorer.opening_view, what a server's start runs: with the kernels it stores the opening map;
    by NumPy quadrature (a warm start's first page, before its kernels load) it reads it and
    computes no map."""
    from qpviz.explorer import state as explorer_state  # noqa: PLC0415

    explorer.RATIO_MAP_CACHE.clear()
    opening = explorer.opening_view("auto")
    key = explorer.views.map_key(opening.likelihood, opening.likelihood_params, opening.y)
    computed = explorer.RATIO_MAP_CACHE.get_recent(key)
    explorer.RATIO_MAP_CACHE.clear()
    monkeypatch.setattr(explorer_state, "cached_ratio_map", lambda *args, **options: pytest.fail("computed the map"))
    assert explorer.opening_view("numpy").engine == "numpy"
    np.testing.assert_array_equal(explorer.RATIO_MAP_CACHE.get_recent(key)["ratio"], computed["ratio"])
    explorer.RATIO_MAP_CACHE.clear()


def test_the_opening_view_shows_qp_visibly_narrower_than_ep():
    state = ExplorerState(**explorer.OPENING_VIEW)
    s = state.result.summary
    assert math.sqrt(s["var_qp"] / s["var_ep"]) < 0.8  # sigma_QP / sigma_EP: the curves lie apart
    # sigma_QP is the least-squares slope of the tilted quantiles against z: correlation x sigma_EP
    q = state.result.quantiles
    weights = np.gradient(q["u"])  # du over the grid u = Phi(z)
    mean_z = np.average(q["z"], weights=weights)
    mean_t = np.average(q["tilted"], weights=weights)
    cov = np.average((q["z"] - mean_z) * (q["tilted"] - mean_t), weights=weights)
    corr = cov / math.sqrt(np.average((q["z"] - mean_z) ** 2, weights=weights)
                           * np.average((q["tilted"] - mean_t) ** 2, weights=weights))
    assert corr < 1 and corr * math.sqrt(s["var_ep"]) == pytest.approx(math.sqrt(s["var_qp"]), rel=0.03)


@pytest.mark.parametrize(
    "query, inputs, note",
    [
        ({"lik": "bogus"}, explorer.OPENING_VIEW, "lik=bogus: not a likelihood (one of "),
        ({"lik": "poisson_exp", "count": "-3"}, {"likelihood": "poisson_exp", "y": 10.0},
         "count=-3: the count y must be a whole number in [0, 1000]; showing count=10 instead"),
        ({"count": "2.5"}, {"y": 10.0}, "count=2.5: the count y must be a whole number in [0, 1000]"),
        ({"s": "nan"}, {"cavity_std": 1.5}, "s=nan: the cavity std s must be a number in [0.05, 8]; showing s=1.5 instead"),
        ({"m": "9"}, {"cavity_mean": 1.0}, "m=9: the cavity mean m must be a number in [-8, 8]; showing m=1 instead"),
        ({"lik": "laplace", "y": "1e400"}, {"likelihood": "laplace", "y": 10.0},
         "y=1e400: the observation y must be a number in [-50, 50]; showing y=10 instead"),
        ({"lik": "probit", "label": "0"}, {"likelihood": "probit", "y": 1.0},
         "label=0: the label y must be -1 or +1; showing label=1 instead"),
        ({"lik": "step", "step_eps": "0.7"}, {"likelihood": "step", "likelihood_params": {"eps": 0.0}},
         "step_eps=0.7: eps must be one of 0, 0.05, 0.1, 0.2; got '0.7'; showing step_eps=0 instead"),
        ({"lik": "student_t", "student_t": "nu=99"}, {"likelihood": "student_t", "likelihood_params": {"nu": 3.0, "scale": 1.0}},
         "student_t=nu=99: nu, scale (presets) must be one of"),
        ({"scale": "yes"}, {}, "scale=yes: scale must be one of own, common; showing scale=own instead"),
    ],
)
def test_a_bad_link_value_is_replaced_and_noted(query, inputs, note):
    reading = explorer.read_link(query)
    [written] = reading.notes
    assert written.startswith(note)
    for key, value in inputs.items():
        assert reading.inputs[key] == value, key
    assert ExplorerState().update(**reading.inputs)  # one consistent, computable view


def test_a_good_link_is_read_without_notes():
    query = {"lik": "student_t", "student_t": "nu=4, scale=0.5", "y": "25", "m": "-2", "s": "3", "label": "-1",
             "count": "7", "show": '["QP"]', "projector": "true", "scale": "common", "step_eps": "0.2"}  # (projector: the header's)
    reading = explorer.read_link(query)
    assert reading.notes == []
    assert reading.inputs == {"likelihood": "student_t", "likelihood_params": {"nu": 4.0, "scale": 0.5}, "y": 25.0,
                              "cavity_mean": -2.0, "cavity_std": 3.0}
    assert reading.sliders == {"label": -1.0, "count": 7.0, "y": 25.0, "m": -2.0, "s": 3.0}
    assert reading.controls == {"student_t": "nu=4, scale=0.5", "step_eps": 0.2}  # hidden step keeps its eps
    assert reading.choices == {"show": '["QP"]', "scale": "common"}
    assert explorer.read_link({"scale": "Common", "show": '["EP","QP"]'}).choices == {"show": '["EP", "QP"]', "scale": "common"}
    # Panel's Location rewrites a list as Python's repr when another page's synced value changes
    reading = explorer.read_link({"show": "['EP', 'QP']"})
    assert reading.choices["show"] == '["EP", "QP"]' and reading.notes == []


def test_page_bad_link_gives_one_consistent_page_and_a_banner(explorer_page):
    page = explorer_page
    notes = page.apply_link({"lik": "bogus", "count": "-3", "s": "nan", "step_eps": "0.7"})
    assert len(notes) == 4 and page.link_note.visible
    for note in notes:
        assert note in shown(page.link_note.object)
    lik, y = explorer.OPENING_VIEW["likelihood"], explorer.OPENING_VIEW["y"]
    assert page.likelihood.value == page.state.likelihood == lik
    assert page.figures["densities"].title.text.startswith(f"(a) densities: {lik}, y = {y:g},")
    assert page.y_count.value == y and page.std_slider.value == explorer.OPENING_VIEW["cavity_std"]
    assert page.parameter_widgets["step_eps"].value == 0.0
    expected = explorer.compute(page.state.likelihood_object(), y, 1.0, 1.5).summary
    assert f"<td>Z (evidence)</td><td>{expected['Z']:.6g}</td>" in page.numbers.object
    # the page's own link is good; read again (Panel's URL sync rewrites it), it keeps the banner
    assert page.apply_link(page.link_values()) == [] and page.link_note.visible
    assert page.apply_link({"lik": "probit"}) == [] and not page.link_note.visible  # a good link for another view


def test_page_link_banner_names_every_refused_key_after_the_url_sync_rewrites_the_link(explorer_page):
    """A link whose every key is bad: the banner names each key, its value and what is shown instead,
    also after Panel's URL sync rewrote the page's values in its own text (here: another key of the
    URL corrected, as the tab's page= is), which reads the same view again. That read used to leave
    "... it replaced them:" over an empty list, and hide the banner."""
    from urllib.parse import urlencode

    from panel.io.location import Location

    import projection_explorer

    page = explorer_page
    location = Location()
    page.url = page._sync_url(location)
    bad = {key: "bogus" for key in projection_explorer.url_keys()}
    location.search = "?" + urlencode({"page": "explorer", **bad})  # the browser reports the link it opened
    location.update_query(page="projection-explorer")  # what Panel's sync writes when the tab corrects page=
    said = shown(page.link_note.object)
    assert page.link_note.visible
    for key in bad:
        assert f"{key}=bogus:" in said and f"showing {key}=" in said, (key, said)


@pytest.mark.parametrize("move", ["mean", "scale", "show"])
def test_page_link_banner_goes_at_the_readers_next_change(explorer_page, move):
    page = explorer_page
    page.apply_link({"m": "bogus"})
    assert page.link_note.visible
    if move == "mean":
        page.mean_slider.value = -1.0
    elif move == "scale":
        page.map_scale.value = "common"
    else:
        page.show.value = ["QP"]
    assert not page.link_note.visible and page.link_note.object == ""


def test_page_link_values_reopen_the_same_view(explorer_page):
    page = explorer_page
    page.likelihood.value = "step"
    page.parameter_widgets["step_eps"].value = 0.1
    page.mean_text.value = "-3.25"
    page.show.value = ["QP"]
    page.map_scale.value = "common"
    other = type(page)()
    assert other.apply_link(page.link_values()) == []
    for name in ("likelihood", "likelihood_params", "y", "cavity_mean", "cavity_std", "show_ep", "show_qp"):
        assert getattr(other.state, name) == getattr(page.state, name), name
    assert other.map_scale.value == "common"


def test_page_sliders_cover_the_valid_ranges_shown_in_their_labels(explorer_page):
    page = explorer_page
    for widget, key, (lo, hi) in (
        (page.mean_slider, "m", explorer.CAVITY_MEAN_SLIDER),
        (page.std_slider, "s", explorer.CAVITY_STD_SLIDER),
        (page.y_real, "y", (-explorer.MAX_ABS_REAL_Y, explorer.MAX_ABS_REAL_Y)),
        (page.y_count, "count", (0, explorer.MAX_COUNT)),
    ):
        assert (widget.start, widget.end) == (lo, hi)
        assert f"in {explorer.range_label(key)}" in widget.label
    assert explorer.range_label("s") == "[0.05, 8]" and explorer.range_label("count") == "[0, 1000]"
    page.likelihood.value = "poisson_exp"
    page.y_count.value = 1000  # the largest valid count is on the slider
    assert page.state.y == 1000.0 and not page.alert.visible


def test_page_map_zoom_is_bounded_to_the_valid_cavities(explorer_page):
    fig = explorer_page.map.figure
    assert fig.x_range.bounds == explorer.CAVITY_MEAN_SLIDER and fig.y_range.bounds == explorer.CAVITY_STD_SLIDER
    assert (fig.y_range.start, fig.y_range.end) == explorer.CAVITY_STD_SLIDER  # no negative std on the axis
    assert fig.toolbar.active_scroll in fig.tools and type(fig.toolbar.active_scroll).__name__ == "WheelZoomTool"


def test_page_map_shows_the_ratio_map_with_its_pixels_centred_on_the_grid(explorer_page):
    s = explorer_page.state
    data = explorer.cached_ratio_map(s.likelihood, s.likelihood_params, s.y)
    shown = explorer_page.map.source.data
    assert shown["ratio"][0] is data["ratio"]  # rows: cavity stds, columns: means (Bokeh draws row 0 at the bottom)
    half = (data["means"][1] - data["means"][0]) / 2
    assert shown["x"][0] == pytest.approx(data["means"][0] - half)
    assert shown["x"][0] + shown["dw"][0] == pytest.approx(data["means"][-1] + half)
    half = (data["stds"][1] - data["stds"][0]) / 2
    assert shown["y"][0] == pytest.approx(data["stds"][0] - half)
    assert shown["y"][0] + shown["dh"][0] == pytest.approx(data["stds"][-1] + half)
    colours = explorer_page.map.colours
    assert (colours.low, colours.high) == (data["ratio"].min(), data["ratio"].max())
    assert explorer_page.map.figure.title.text == f"(d) var_QP / var_EP for {s.likelihood}, y = {s.y:g}"
    explorer_page.likelihood.value = "cloglog"  # a new likelihood: a new map
    assert explorer_page.map.figure.title.text.startswith("(d) var_QP / var_EP for cloglog")
    assert shown is not explorer_page.map.source.data
    explorer_page.mean_slider.value = 1.5  # the cavity: only the marker moves
    data_before = explorer_page.map.source.data
    explorer_page.std_slider.value = 2.0
    assert explorer_page.map.source.data is data_before and explorer_page.marker.data == {"x": [1.5], "y": [2.0]}


def test_page_common_colour_scale_is_one_range_for_every_likelihood(explorer_page):
    for name, params, y in (("probit", {}, 1.0), ("student_t", {"nu": 3.0, "scale": 1.0}, 0.0)):
        own = explorer_page.map_view(name, params, y)
        common = explorer_page.map_view(name, params, y, scale="common")
        assert (own.low, own.high) == (np.nanmin(own.ratio), np.nanmax(own.ratio)) != explorer.COMMON_RATIO_SCALE
        assert (common.low, common.high) == explorer.COMMON_RATIO_SCALE
    explorer_page.map_scale.value = "common"  # the page's choice reaches its colour bar
    assert (explorer_page.map.colours.low, explorer_page.map.colours.high) == explorer.COMMON_RATIO_SCALE


def test_a_gaussian_map_of_one_ratio_everywhere_gets_a_colour_range():
    from explorer_figures import map_view  # noqa: PLC0415

    flat = {"means": np.array([0.0, 1.0]), "stds": np.array([0.5, 1.0]), "ratio": np.ones((2, 2))}
    view = map_view(flat, "gaussian", 0.0)
    assert view.high == 1.0 and view.low < view.high


@pytest.mark.parametrize("name", [n for n in REGISTRY if n != "poisson_square"])
def test_the_common_colour_scale_holds_every_map_but_large_square_rate_counts(name):
    """Every registered likelihood's map at the observations of the tests lies within the common
    scale; only Poisson-square counts from 10 go below its lower end (tested separately)."""
    lik = explorer.build_likelihood(name, **explorer.initial_params(name))
    low, high = explorer.COMMON_RATIO_SCALE
    for y in Y_VALUES[lik.support]:
        ratio = explorer.ratio_map(lik, y, shape=(17, 16))["ratio"]
        assert low <= ratio.min() and ratio.max() <= high, (name, y, ratio.min())


def test_the_common_colour_scale_reaches_down_to_square_rate_counts_of_ten():
    lik = qpviz.likelihood("poisson_square")
    assert explorer.ratio_map(lik, 3.0, shape=(17, 16))["ratio"].min() >= explorer.COMMON_RATIO_SCALE[0]
    assert explorer.ratio_map(lik, 10.0, shape=(41, 40))["ratio"].min() < explorer.COMMON_RATIO_SCALE[0] + 0.05


def test_page_colour_bar_labels_grow_in_projector_mode(explorer_page):
    from bokeh.models import ColorBar

    fig = explorer_page.map.figure
    [bar] = [r for r in fig.right if isinstance(r, ColorBar)]
    assert bar.major_label_text_font_size == "11px"
    explorer_page.projector = True
    assert bar.major_label_text_font_size == "19px"


def test_page_explains_in_plain_words_why_qp_is_narrower(explorer_page):
    text = explorer_page.why.object
    for phrase in ("least-squares slope", "correlation", "sigma_QP <= sigma_EP", "skewed", "step"):
        assert phrase in text
    assert explorer_page.state.likelihood == explorer.OPENING_VIEW["likelihood"]


def test_page_url_state_reads_the_address_the_browser_reports_and_writes_the_view_back(explorer_page):
    from panel.io.location import Location

    page = explorer_page
    location = Location()
    page.url = page._sync_url(location)
    assert page.url.query() == page.link_values() and page.url.query()["lik"] == explorer.OPENING_VIEW["likelihood"]
    location.search = "?lik=bogus&count=-3&other_page=7"  # the browser reports the address it opened
    query = page.url.query()
    assert (query["lik"], query["count"], query["other_page"]) == ("poisson_square", "10", "7")
    assert page.link_note.visible and "lik=bogus" in shown(page.link_note.object) and "count=-3" in shown(page.link_note.object)
    read = []
    page.url._read = read.append
    location.search = location.search.replace("other_page=7", "other_page=8")  # another page writes its key
    assert read == [] and page.url.query()["other_page"] == "8"
    page.likelihood.value = "step"  # a widget change reaches the URL at once
    assert page.url.query()["lik"] == "step"


# -- the NumPy engine: the page while its kernels compile (issue 22.4) -------------------------------
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_numpy_engine_gives_the_kernels_views_to_the_tables_error(name):
    """engine="numpy" (quadrature alone) against the default (closed-form moments and the QP
    tables, numba): the same numbers to the tables' ~1e-8, the same curves and map."""
    lik = explorer.build_likelihood(name, **explorer.initial_params(name))
    y = explorer.default_y(lik, 1.0)
    for m, s in ((0.4, 1.3), (-2.0, 0.3), (3.0, 4.0)):
        kernels, numpy_engine = explorer.compute(lik, y, m, s), explorer.compute(lik, y, m, s, engine="numpy")
        for key in ("Z", "log_Z", "mean", "var_ep", "var_qp", "ratio"):
            assert numpy_engine.summary[key] == pytest.approx(kernels.summary[key], rel=1e-7, abs=1e-12), key
        for key in ("w2_ep", "w2_qp"):  # sqrt of a difference: rounding of ~1e-16 shows as ~1e-8
            assert numpy_engine.summary[key] == pytest.approx(kernels.summary[key], rel=1e-6, abs=1e-7), key
        for curve in ("cavity", "tilted", "ep", "qp", "likelihood"):
            expected = kernels.densities[curve]
            np.testing.assert_allclose(numpy_engine.densities[curve], expected, rtol=1e-6, atol=1e-9 * expected.max())
        for line in ("tilted", "ep", "qp"):
            np.testing.assert_allclose(numpy_engine.quantiles[line], kernels.quantiles[line], rtol=1e-6, atol=1e-7)
    maps = [explorer.ratio_map(lik, y, shape=(5, 4), engine=engine) for engine in ("auto", "numpy")]
    np.testing.assert_allclose(maps[1]["ratio"], maps[0]["ratio"], rtol=0, atol=1e-6)
    assert (maps[1]["ratio"] <= 1.0).all()  # Theorem 2, as the kernels' map
    with pytest.raises(ValueError, match="engine must be one of"):
        explorer.compute(lik, y, 0.0, 1.0, engine="fast")


def test_the_page_built_before_its_kernels_compiles_nothing(tmp_path):
    """The Projection Explorer built while its kernels compile (a first start: a future not done)
    writes nothing to an empty numba cache: its views and map come from NumPy quadrature. The
    control afterwards (a likelihood's closed-form moments, a kernel) writes there, so the cache is
    the one used."""
    import empty_numba_cache  # noqa: PLC0415

    code = (
        "from concurrent.futures import Future\n"
        "import panel as pn\nimport projection_explorer\n"
        "from qpviz import explorer\n"
        "title, page = projection_explorer.page(kernels=Future())\n"
        "pn.panel(page).get_root()\n"
        "page.state.update(cavity_mean=0.3, y=4)\n"
        "assert page.state.engine == 'numpy' and page.state.error == '', page.state.error\n"
        "print(cache_files())\n"
        "explorer.build_likelihood('probit').tilted_moments(1.0, 0.0, 1.0)\n"  # the control: a kernel, cached
        "print(len(cache_files()))\n"
    )
    compiled, control = empty_numba_cache.run(code, tmp_path / "numba")[-2:]
    assert compiled == "[]", f"the page compiled kernels before they were ready: {compiled}"
    assert int(control) > 0
