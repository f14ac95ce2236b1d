"""Bokeh lays a page out once per message from the server, not once per change in it.

BokehJS 3.9 applies a server message's changes one at a time (``Document.apply_json_patch``), and
each change of a layout's size or stylesheets calls ``LayoutDOMView.invalidate_layout``, which lays
the whole page out again at once (``update_layout`` + ``compute_layout``, with forced style
recalculations). Projector mode restyles every control of the page in view in one message: on
GP 2-D that was ~25 full layouts, 2.7 s of the browser's main thread before the new look painted.

:class:`OneLayoutPerPatch`, an invisible component of the dashboard, wraps both methods once per
browser window: while a message is being applied, a layout asked for is noted for its root, and
each noted root is laid out once when the message has been applied. The result is the layout
BokehJS computes after the message's last change, as before. Outside a message (a resize, a view
built later) nothing changes. If a BokehJS version lacks either method, nothing is wrapped and the
marker's ``data-batched`` attribute says ``"off"``. A Panel custom component: app/dashboard.py
imports this module before any session's document is made (see its note on custom components).
"""
from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["OneLayoutPerPatch"]


class OneLayoutPerPatch(JSComponent):
    """Wraps ``Document.apply_json_patch`` and ``LayoutDOMView.invalidate_layout`` (once per window)."""

    _esm = """
    export function render() {
      let view = null, doc = null;
      try {
        view = window.Bokeh.require("models/layouts/layout_dom").LayoutDOMView.prototype;
        doc = window.Bokeh.require("document/document").Document.prototype;
      } catch (error) {
        view = doc = null;  // another BokehJS layout: leave it as it is
      }
      const usable = view && doc && typeof view.invalidate_layout === "function"
        && typeof doc.apply_json_patch === "function";
      if (usable && !doc.apply_json_patch.qpvizBatched) {
        const invalidate = view.invalidate_layout;
        const apply = doc.apply_json_patch;
        const LayoutView = view.constructor;
        let waiting = null;  // the roots to lay out once the message has been applied
        view.invalidate_layout = function () {
          if (waiting === null) return invalidate.call(this);
          let root = this;
          while (root.parent instanceof LayoutView) root = root.parent;
          waiting.add(root);
        };
        const batched = function (...args) {
          if (waiting !== null) return apply.apply(this, args);  // a message inside a message
          waiting = new Set();
          try {
            return apply.apply(this, args);
          } finally {
            const roots = waiting;
            waiting = null;
            for (const root of roots) invalidate.call(root);
          }
        };
        batched.qpvizBatched = true;
        batched.original = apply;  // (a benchmark puts it back to compare)
        doc.apply_json_patch = batched;
      }
      const marker = document.createElement("span");
      marker.className = "qpviz-one-layout";
      marker.dataset.batched = usable && doc.apply_json_patch.qpvizBatched ? "on" : "off";
      return marker;
    }
    """
