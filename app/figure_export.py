"""Save a page's figures as one file, laid out as on screen: "Save figures (PNG)" and "Save figures (SVG)".

Everything happens in the browser (no server-side webdriver): the buttons' JavaScript
(:data:`EXPORT_JS`) walks the Bokeh views of the document and keeps the figures drawn on the open
tab (a hidden tab's elements have a 0 x 0 box), plus the open tab's images (an image pane, e.g. a
PNG). Each Bokeh figure is redrawn off screen by its own ``PlotView.export``:

- PNG: ``export("png", hidpi=true)`` gives a canvas at the screen's device pixel ratio r; every
  figure is drawn on one white canvas at r * (its on-screen position - the top-left corner of all
  figures), so a figure's pixel (x, y) lands at r * (x + left - left_min, y + top - top_min).
- SVG: ``export("svg")`` draws the figure through Bokeh's SVG rendering context (real vectors:
  paths and text; an image glyph becomes an embedded PNG); each figure's <svg> is nested in one
  root <svg> at its on-screen position (in CSS pixels), an image as an <image> with a PNG data URI.
  (Bokeh 3.9 draws a legend's glyphs into an SVG at devicePixelRatio times their size; see
  ``exportSvg`` for the correction.)

The file downloads as ``qpviz-<page>-<UTC timestamp>.png`` / ``.svg``. With no figure drawn yet
(a tab still loading) the button says so on its label for a moment and saves nothing.
"""
from __future__ import annotations

import json

import panel as pn
import param
from panel.widgets.base import CompositeWidget

from layout import CONTROLS_WIDTH

__all__ = ["FORMATS", "EXPORT_JS", "BUTTON_MIN_WIDTH", "MESSAGE_MS", "FigureExportButtons", "export_buttons",
           "button_label"]

#: The file formats offered, one button each.
FORMATS = ("png", "svg")
#: Smallest width of a button (px), normal and enlarged (projector mode: one button per line).
BUTTON_MIN_WIDTH = {False: 130, True: CONTROLS_WIDTH - 20}
#: How long a button shows "nothing to save" or a failure on its label (ms).
MESSAGE_MS = 3000

#: The buttons' JavaScript (PAGE, FORMAT, LABEL and MESSAGE_MS are set in front of it by
#: :func:`export_buttons`; Panel passes the clicked Bokeh button as ``source``).
EXPORT_JS = r"""
const SVG_NS = "http://www.w3.org/2000/svg";
const shown = el => {
    if (!el || !el.isConnected) return null;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 ? box : null;  // 0 x 0: on a hidden tab or not laid out yet
};
// A plot view draws a frame of renderers (a Figure, or a Plot HoloViews built); a layout's views
// (rows, grids, panes) only hold other views.
const isPlot = view => typeof view.export === "function" && view.frame !== undefined && view.renderer_views !== undefined;

function collect() {
    const items = [], seen = new Set(), images = new Set();
    const walk = view => {
        if (!view || seen.has(view)) return;
        seen.add(view);
        if (isPlot(view)) {
            const box = shown(view.el);
            if (box) items.push({kind: "plot", view, box, title: view.model.title && view.model.title.text || ""});
            return;  // a plot's own child views (toolbar, renderers) hold no other plot
        }
        const root = view.el && view.el.shadowRoot;
        if (root) for (const img of root.querySelectorAll("img")) {
            const box = shown(img);
            if (box && img.complete && img.naturalWidth > 0 && !images.has(img)) {
                images.add(img);
                items.push({kind: "image", img, box, title: img.alt || ""});
            }
        }
        for (const child of (view.child_views || [])) walk(child);
    };
    for (const view of Object.values(window.Bokeh ? Bokeh.index : {})) walk(view);
    return items;
}

// The items' common box (window coordinates, off-screen parts included: only differences matter).
function extent(items) {
    const left = Math.min(...items.map(i => i.box.left)), top = Math.min(...items.map(i => i.box.top));
    const right = Math.max(...items.map(i => i.box.right)), bottom = Math.max(...items.map(i => i.box.bottom));
    return {left, top, width: Math.ceil(right - left), height: Math.ceil(bottom - top)};
}

function imageDataUrl(img) {
    if (img.src.startsWith("data:image/")) return img.src;
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    canvas.getContext("2d").drawImage(img, 0, 0);
    return canvas.toDataURL("image/png");
}

function composePng(items, area) {
    const ratio = window.devicePixelRatio || 1;
    const canvas = document.createElement("canvas");
    canvas.width = Math.ceil(area.width * ratio);
    canvas.height = Math.ceil(area.height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "white";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (const item of items) {
        const x = (item.box.left - area.left) * ratio, y = (item.box.top - area.top) * ratio;
        const w = item.box.width * ratio, h = item.box.height * ratio;
        const drawable = item.kind === "plot" ? item.view.export("png", true).canvas : item.img;
        ctx.drawImage(drawable, x, y, w, h);
    }
    return new Promise((resolve, reject) =>
        canvas.toBlob(blob => blob ? resolve(blob) : reject(new Error("the canvas gave no PNG")), "image/png"));
}

// Bokeh's SVG export draws a legend's glyphs from their on-screen canvases at the canvases' pixel
// size, devicePixelRatio times too large (drawImage(canvas, x, y) in its SVG context): while the
// figures are exported, a canvas shown on the page is drawn at its on-screen (CSS) size instead.
function exportSvg(plots) {
    const context = Object.getPrototypeOf(plots[0].export("svg", false).ctx);
    const drawImage = context.drawImage;
    context.drawImage = function (image, ...args) {
        const box = args.length === 2 && image instanceof HTMLCanvasElement ? shown(image) : null;
        return box && image.width !== box.width ? drawImage.call(this, image, ...args, box.width, box.height)
                                                : drawImage.call(this, image, ...args);
    };
    try {
        return plots.map(view => view.export("svg", false).ctx.get_svg());
    } finally {
        context.drawImage = drawImage;
    }
}

function composeSvg(items, area) {
    const root = document.createElementNS(SVG_NS, "svg");
    root.setAttribute("xmlns", SVG_NS);
    root.setAttribute("version", "1.1");
    root.setAttribute("width", area.width);
    root.setAttribute("height", area.height);
    root.setAttribute("viewBox", `0 0 ${area.width} ${area.height}`);
    const background = document.createElementNS(SVG_NS, "rect");
    for (const [key, value] of Object.entries({width: "100%", height: "100%", fill: "white"}))
        background.setAttribute(key, value);
    root.appendChild(background);
    const plots = items.filter(item => item.kind === "plot");
    const drawings = plots.length ? exportSvg(plots.map(item => item.view)) : [];
    for (const item of items) {
        const place = {x: item.box.left - area.left, y: item.box.top - area.top,
                       width: item.box.width, height: item.box.height};
        let node;
        if (item.kind === "plot") {
            node = drawings[plots.indexOf(item)];
            node.setAttribute("viewBox", `0 0 ${item.view.bbox.width} ${item.view.bbox.height}`);
        } else {
            node = document.createElementNS(SVG_NS, "image");
            node.setAttribute("href", imageDataUrl(item.img));
        }
        for (const [key, value] of Object.entries(place)) node.setAttribute(key, value);
        node.setAttribute("class", "qpviz-figure");
        node.setAttribute("data-title", item.title);
        root.appendChild(node);
    }
    const text = '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(root);
    return Promise.resolve(new Blob([text], {type: "image/svg+xml"}));
}

function download(blob, name) {
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function say(text) {
    source.label = text;
    setTimeout(() => { source.label = LABEL; }, MESSAGE_MS);
}

(async () => {
    const items = collect();
    if (items.length === 0) {
        say("No figure drawn yet");
        return;
    }
    try {
        const area = extent(items);
        const blob = await (FORMAT === "png" ? composePng(items, area) : composeSvg(items, area));
        const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");
        download(blob, `qpviz-${PAGE}-${stamp}.${FORMAT}`);
    } catch (error) {
        console.warn("qpviz: saving the figures failed:", error);
        say("Saving failed: try again");
    }
})();
"""


def button_label(fmt: str) -> str:
    """The label of the button that saves the figures as ``fmt`` ("png" or "svg")."""
    return f"Save figures ({fmt.upper()})"


class FigureExportButtons(CompositeWidget):
    """Two buttons saving the open page's figures as one PNG or one SVG file named
    ``qpviz-<page>-<timestamp>``, side by side in a CONTROLS_WIDTH row.

    A widget (made of two), so that a page's projector mode enlarges it with the page's other
    widgets (layout.enlarge sets its stylesheets): the buttons draw in their own shadow DOM, so it
    hands the stylesheets on to them, and the larger labels then take a line each.
    """

    page = param.String(doc="the page's slug in the file name, e.g. 'gp-1-d'")

    def __init__(self, **params):
        super().__init__(**params)
        self.buttons = [self._button(fmt) for fmt in FORMATS]
        # a fixed width, no sizing mode (Bokeh warns of sizing_mode="fixed" without a height); each
        # button keeps its own margin
        self._composite.param.update(objects=self.buttons, styles={"flex-wrap": "wrap"}, width=CONTROLS_WIDTH,
                                     sizing_mode=None, margin=0)
        self.param.watch(self._hand_on_stylesheets, "stylesheets")

    def _button(self, fmt: str) -> pn.widgets.Button:
        label = button_label(fmt)
        button = pn.widgets.Button(label=label, css_classes=["qpviz-export", f"qpviz-export-{fmt}"],
                                   sizing_mode="stretch_width", min_width=BUTTON_MIN_WIDTH[False])
        settings = {"PAGE": self.page, "FORMAT": fmt, "LABEL": label, "MESSAGE_MS": MESSAGE_MS}
        header = "".join(f"const {name} = {json.dumps(value)};\n" for name, value in settings.items())
        button.js_on_click(code=header + EXPORT_JS)
        return button

    def _hand_on_stylesheets(self, event) -> None:
        for button in self.buttons:
            button.param.update(stylesheets=event.new, min_width=BUTTON_MIN_WIDTH[bool(event.new)])


def export_buttons(page_slug: str) -> FigureExportButtons:
    """The page's "Save figures (PNG)" and "Save figures (SVG)" buttons (see :class:`FigureExportButtons`)."""
    return FigureExportButtons(page=page_slug)
