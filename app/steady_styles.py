"""Bokeh's renderers leave their stylesheets alone when a repaint would write the same text.

BokehJS 3.9 places each renderer's DOM element (glyphs, axes, grids, titles, colour bars, legends)
by rewriting a small stylesheet on *every* paint (``RendererView.paint`` -> ``update_position`` ->
``InlineStyleSheet.replace``), and ``InlineStyleSheet._update`` sets the ``<style>`` element's text
even when it is unchanged. Chromium then parses the sheet again and recomputes the styles of that
renderer's shadow tree: a "style rule change" for every renderer of every figure repainted. On a
GP 2-D key press (five maps) that was ~16 ms of the browser's ~45 ms animation frame and ~10 ms of
style recalculation after it; on the GP 1-D page alike (the update painted ~20 ms sooner on both).

:class:`SteadyStyles`, an invisible component of the dashboard, wraps ``_update`` once per browser
window so that it writes only new text. The behaviour is BokehJS's own whenever the text changes
(a resize, a new layout); if a BokehJS version lacks the method, nothing is wrapped and its
``data-steady`` attribute says ``"off"``. A Panel custom component: app/dashboard.py imports this
module before any session's document is made (see its note on custom components).
"""
from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["SteadyStyles"]


class SteadyStyles(JSComponent):
    """Wraps BokehJS's ``InlineStyleSheet._update`` (once per window) to skip identical text."""

    _esm = """
    export function render() {
      let proto = null;
      try {
        proto = window.Bokeh.require("core/dom").InlineStyleSheet.prototype;
      } catch (error) {
        proto = null;  // another BokehJS layout: leave it as it is
      }
      if (proto && typeof proto._update === "function" && !proto._update.qpvizSteady) {
        const update = proto._update;
        const steady = function (css) {
          if (this.el == null || this.el.textContent !== css) update.call(this, css);
        };
        steady.qpvizSteady = true;
        proto._update = steady;
      }
      const marker = document.createElement("span");
      marker.className = "qpviz-steady-styles";
      marker.dataset.steady = proto && proto._update.qpvizSteady ? "on" : "off";
      return marker;
    }
    """
