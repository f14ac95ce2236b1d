"""The VSGP page object (app/vsgp_page.py), without a browser: its widgets drive the model
(qpviz/gpdemo/vsgp_model.py, tested on its own in tests/gpdemo/test_vsgp_model.py)."""
from __future__ import annotations

import numpy as np
import pytest

import vsgp_page
from safe_text import shown


@pytest.fixture
def page() -> vsgp_page.VSGPPage:
    built = vsgp_page.VSGPPage(n=120, m=5)
    built._build_views()
    assert built.model.message == "" and built.model.fits is not None
    return built


@pytest.mark.parametrize("typed", ["-3", "1.5", "abc", "10001"])
def test_a_bad_typed_seed_is_named_with_its_range_and_the_box_shows_the_seed_in_use(page, typed):
    """Issue 21: the seed's number box dropped letters silently."""
    box, fits = page.widgets["seed"], page.model.fits
    box.value = typed
    said = f"seed: {typed!r} was not applied; type a whole number from 0 to 10000; kept 0"
    assert page.model.message == said and shown(page.alert.object) == said and page.alert.visible
    assert page.model.fits is fits and box.value == "0"
    box.value = "2"
    assert page.model.message == "" and page.model.seed == 2 and page.model.fits is not fits
    assert not page.alert.visible


def test_a_widget_moves_the_model_and_the_model_moves_the_widget_with_one_refit(page):
    m = page.model
    fitted, version = m.fitted, m.version
    page.widgets["blur"].value = 0.5
    assert m.blur == 0.5 and m.fitted == fitted + 1 and m.version == version + 1  # VSGP refitted, FITC cached
    m.m = 4  # e.g. a link: the slider follows, and its change back to the model is no second refit
    assert page.widgets["m"].value == 4 and m.version == version + 2
    assert page.table.object.count("<tr>") == 3  # a header and the two fits


def test_a_drag_in_the_centres_source_refits_and_the_redraw_is_no_drag(page):
    m, source = page.model, page.figures.centre_source
    version = m.version
    xs, ys = list(source.data["x"]), list(source.data["y"])
    xs[0] += 0.3
    source.data = {"x": xs, "y": ys}  # what the point-draw tool sends at the end of a drag
    assert m.version == version + 1 and len(m.centres) == 5 and np.isclose(m.centres[0][0], round(xs[0], 3))
    # the redraw put the fitted (rounded) centres back into the source: that echo refitted nothing
    assert np.allclose(source.data["x"], [c[0] for c in m.centres]) and m.version == version + 1
    ellipses = page.figures.ellipse_source.data
    assert np.allclose(ellipses["x"], source.data["x"]) and len(ellipses["width"]) == 5
    assert page.figures.figures["vsgp"].figure.title.text == m.title("vsgp")


@pytest.mark.parametrize("value", ['[[0.5,"a"],[1,1]]', "[[0.5,NaN]]", "[1,2]"])
def test_a_link_with_bad_centres_is_named_and_the_page_opens_on_kmeans_centres(value, monkeypatch):
    """JSON Panel reads as a list, but no list of [x1, x2] pairs: refused by the model's centres check."""
    import panel as pn  # noqa: PLC0415
    from panel.io.location import Location  # noqa: PLC0415

    location = Location(search=f"?vs_n=120&vs_m=4&vs_centres={value}")
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: location))
    built = vsgp_page.VSGPPage()
    built._build_views()
    banner = shown(built.link_alert.object)
    assert built.link_alert.visible and "vs_centres=" in banner and "centres must be a list of at most 40" in banner
    m = built.model
    assert m.centres == [] and (m.n, m.m) == (120, 4) and len(m.shown[2]) == 4 and m.message == ""
    good = '[[0.5,0.5],[-1,1],[1,-1]]'
    location.search = f"?vs_n=120&vs_m=3&vs_centres={good}"
    assert m.centres == [[0.5, 0.5], [-1.0, 1.0], [1.0, -1.0]] and np.allclose(m.shown[2], m.centres)


def test_a_blur_step_redraws_the_vsgp_map_only_and_sends_the_points_no_more(page):
    """FITC's fit comes from the cache on a blur step and the data are the same read-only arrays:
    the FITC map's pixels, contours and points, and either map's points, are not sent again."""
    from bokeh.document import Document  # noqa: PLC0415
    from bokeh.document.events import ColumnDataChangedEvent, ColumnsPatchedEvent  # noqa: PLC0415
    import panel as pn  # noqa: PLC0415

    doc = Document()
    doc.add_root(pn.panel(page).get_root(doc))
    X, y = page.model.shown[:2]
    assert not X.flags.writeable and not y.flags.writeable  # fits and maps may hold them: nobody changes them
    events = []
    doc.on_change(events.append)
    fitc, blurred = page.figures.figures["fitc"], page.figures.figures["vsgp"]
    title = fitc.figure.title.text
    page.model.blur = 0.9
    assert page.model.shown[0] is X and page.model.fits["fitc"] is not None
    data_events = [e for e in events if isinstance(e, (ColumnDataChangedEvent, ColumnsPatchedEvent))]
    fitc_sources = {fitc.image, *fitc.points.values(), *(r.line_renderer.data_source for r, _ in fitc.contours),
                    *blurred.points.values()}
    assert not [e for e in data_events if e.model in fitc_sources]
    assert any(e.model is blurred.image for e in data_events)  # the VSGP map is new
    assert fitc.figure.title.text != title and "blur=0.9" in fitc.figure.title.text  # titles name the blur
