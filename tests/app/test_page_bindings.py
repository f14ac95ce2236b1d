"""Widget -> model forwarding (app/binding.py) on the Projection Explorer, GP 1-D and Sparse pages:
a page writing its model's values into its widgets forwards nothing, so a change (a link's
several values, a preset, a likelihood, a drag) is computed once, and a refusal's message stays."""
from __future__ import annotations

import json

import numpy as np
import param
import pytest

import binding
from qpviz.explorer import state as explorer_state
from safe_text import shown


class Model(param.Parameterized):
    n = param.Integer(default=3)


def test_forward_skips_the_values_the_model_holds():
    import panel as pn

    model, applied = Model(), []
    box = pn.widgets.TextInput(value="3")
    binding.forward(box, binding.holds(model, "n", str), applied.append)
    box.value = "4"  # the reader's: forwarded
    model.n = 4
    box.value = "3"
    box.value = "4"  # what the page writes for the model's 4: held, not forwarded
    assert applied == ["4", "3"]


@pytest.fixture
def computations(monkeypatch):
    """Every ExplorerState computation of views (a)-(c), by its cavity."""
    done, real = [], explorer_state.compute
    monkeypatch.setattr(explorer_state, "compute",
                        lambda lik, y, m, s, **options: done.append((lik.name, y, m, s)) or real(lik, y, m, s, **options))
    return done


def test_explorer_link_of_several_values_is_computed_once(computations):
    import projection_explorer

    page = projection_explorer.ProjectionExplorer()
    computations.clear()
    query = {"lik": "student_t", "student_t": "nu=4, scale=0.5", "y": "2.5", "m": "-2", "s": "3", "label": "-1",
             "count": "7", "show": '["QP"]', "scale": "common", "step_eps": "0.2"}
    assert page.apply_link(query) == []
    assert computations == [("student_t", 2.5, -2.0, 3.0)]  # once: the widgets showing it forward nothing
    assert (page.likelihood.value, page.y_real.value, page.mean_slider.value, page.std_slider.value) == ("student_t", 2.5, -2.0, 3.0)
    assert page.parameter_widgets["student_t"].value == "nu=4, scale=0.5"
    assert page.parameter_widgets["step_eps"].value == 0.2 and page.y_count.value == 7 and page.y_label.value == -1.0
    assert page.show.value == ["QP"] and page.map_scale.value == "common" and not page.state.show_ep
    assert json.loads(page.link_values()["show"]) == ["QP"]
    computations.clear()
    page.likelihood.value = "step"  # the reader's choice, with the eps its hidden input holds
    assert computations == [("step", 1.0, -2.0, 3.0)] and page.state.likelihood_params == {"eps": 0.2}


def test_explorer_link_whose_view_fails_shows_the_opening_view_computed_once(computations, monkeypatch):
    import projection_explorer

    page = projection_explorer.ProjectionExplorer()
    page.apply_link({"lik": "probit", "m": "-3"})
    computations.clear()
    real = explorer_state.check_inputs

    def refuse_step(lik, *args):
        if lik.name == "step":
            raise ValueError("no view for this link")
        return real(lik, *args)

    monkeypatch.setattr(explorer_state, "check_inputs", refuse_step)
    notes = page.apply_link({"lik": "step", "step_eps": "0.2", "count": "4", "m": "2"})
    assert "cannot be computed" in notes[-1] and page.link_note.visible
    opening = projection_explorer.explorer.OPENING_VIEW
    assert computations == [(opening["likelihood"], opening["y"], opening["cavity_mean"], opening["cavity_std"])]
    # the link's inputs of the likelihood not shown are kept; the widgets show the opening view
    assert page.parameter_widgets["step_eps"].value == 0.2 and page.likelihood.value == opening["likelihood"]
    assert page.y_count.value == opening["y"] and page.mean_slider.value == opening["cavity_mean"]


def test_gp1d_preset_is_fitted_once_with_its_own_likelihood_parameters(monkeypatch):
    import gp_1d
    from qpviz.gpdemo import oned_model

    page = gp_1d.GP1DPage()
    page.model.cancel_job(quiet=True)
    page.methods.value = ["ep", "qp"]
    fits, real = [], oned_model.GP1DModel.refit
    monkeypatch.setattr(page.model, "refit", lambda: fits.append(dict(page.model.likelihood_params)) or real(page.model))
    page.preset.value = "outliers, Student-t"  # step -> student_t: the page then shows student_t's nu 4, scale 0.5
    assert fits == [{"nu": 4.0, "scale": 0.5}]  # not refitted with student_t's initial nu 3, scale 1
    assert page.model.likelihood_params == {"nu": 4.0, "scale": 0.5} and page.lik_params.value == "nu=4, scale=0.5"
    fits.clear()
    page.n_points.value = "70"
    page.lik_params.value = "nu = 5, scale = 0.5"  # (shown again as the page writes it: not refitted for that)
    assert fits == [{"nu": 4.0, "scale": 0.5}, {"nu": 5.0, "scale": 0.5}] and page.lik_params.value == "nu=5, scale=0.5"


def test_gp1d_refused_typed_value_keeps_its_message_and_fits_nothing(monkeypatch):
    import gp_1d
    from qpviz.gpdemo import oned_model

    page = gp_1d.GP1DPage()
    page.model.cancel_job(quiet=True)
    fits, real = [], oned_model.GP1DModel.refit
    monkeypatch.setattr(page.model, "refit", lambda: fits.append(1) or real(page.model))
    page.n_points.value = "3.5"
    assert page.n_points.value == gp_1d.TYPED["n_points"].show(page.model.n_points)  # the value kept, shown
    assert fits == [] and page.alert.visible and "3.5" in shown(page.alert.object)


@pytest.fixture
def sparse():
    """A Sparse page (its curve job cancelled at the end)."""
    import sparse_page

    page = sparse_page.SparsePage()
    yield page
    page.model.cancel_curve()


SPARSE_WIDGETS = pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")  # (the page's widgets)


@SPARSE_WIDGETS
def test_sparse_redraws_forward_nothing_and_a_drag_fits_once(sparse, monkeypatch):
    from qpviz.gpdemo import sparse_model

    page = sparse
    model = page.model
    fits, real = [], sparse_model.SparseModel.refit
    monkeypatch.setattr(model, "refit", lambda: fits.append(model.Z.size) or real(model))
    page.preset.value = next(p for p in sparse_model.sparse_demo.PRESETS if p != model.preset)
    assert fits == [model.Z.size]  # the new preset's fit; its handles and widgets drawn: no refit
    assert page.z_text.value == model.z_text and page.m_slider.value == model.m
    fits.clear()
    page.m_slider.value = model.m + 1
    assert fits == [model.Z.size] and page.views.handles.data["x"] == list(np.ravel(model.Z))
    fits.clear()
    xs = list(page.views.handles.data["x"])
    xs[0] += 0.1 * (xs[1] - xs[0])
    page.views.handles.data = {"x": xs, "y": list(page.views.handles.data["y"])}  # a drag of the first handle
    assert fits == [len(xs)] and np.ravel(model.Z)[0] == pytest.approx(xs[0])


@SPARSE_WIDGETS
def test_sparse_refused_pseudo_inputs_keep_their_message(sparse):
    page = sparse
    in_use = page.model.z_text
    page.z_text.value = "0.1, nope"
    assert page.z_text.value == page.model.z_text == in_use  # the box shows the pseudo-inputs in use again
    assert page.alert.visible and "nope" in shown(page.alert.object)
