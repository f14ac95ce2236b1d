"""A file upload that refuses a too-large file in the browser, before anything is sent.

Panel's FileInput (1.9) sends the whole file, base64-encoded, in one websocket message. A file
above the server's maximum message size (Bokeh's default 20 MB; a 50 MB CSV measured here)
made the server drop the connection: the session died with the console error "not connected so
cannot send" and no message on the page. FileInput has no size limit in this Panel version
(FileDropper's ``max_file_size`` needs FilePond from a CDN). :class:`CsvUpload` checks the size
in the browser and sends only the size of a file above ``max_bytes``; it also reports every
choice of a file, an empty one or the same one twice included (FileInput reported neither:
its value did not change).
"""
from __future__ import annotations

import base64

import param
from panel.custom import JSComponent

__all__ = ["CsvUpload"]


class CsvUpload(JSComponent):
    """An ``<input type=file>``; each chosen file sets ``file`` to {"count", "name", "size",
    "data"}: ``data`` is the base64 content, or None if ``size`` exceeds ``max_bytes`` (the file
    was not read). ``count`` grows with each choice, so choosing the same file again is an event."""

    accept = param.String(default=".csv,text/csv", doc="File types the browser's dialog offers.")
    max_bytes = param.Integer(default=5 * 1024 * 1024, bounds=(0, None), doc="Largest file sent to the server.")
    file = param.Dict(default={}, doc="The last chosen file (see the class docstring).")

    _esm = """
    export function render({ model }) {
      const box = document.createElement('div');
      box.style.margin = '5px 10px';
      const input = document.createElement('input');
      input.type = 'file';
      input.accept = model.accept;
      input.className = 'qpviz-csv-upload';
      const last = document.createElement('div');  // the input forgets its file (below): name it here
      last.style.fontSize = '90%';
      box.append(input, last);
      let count = 0;
      input.addEventListener('change', () => {
        const chosen = input.files && input.files[0];
        input.value = '';  // choosing the same file again fires 'change' again
        if (!chosen) return;
        count += 1;
        last.textContent = `last file: ${chosen.name} (${(chosen.size / 1e6).toFixed(2)} MB)`;
        const sent = { count: count, name: chosen.name, size: chosen.size, data: null };
        if (chosen.size > model.max_bytes) { model.file = sent; return; }
        const reader = new FileReader();
        reader.onload = () => {
          const url = String(reader.result);
          sent.data = url.slice(url.indexOf(',') + 1);  // strip 'data:<type>;base64,'
          model.file = sent;
        };
        reader.onerror = () => { model.file = sent; };  // unreadable: reported like a refused file
        reader.readAsDataURL(chosen);
      });
      model.on('accept', () => { input.accept = model.accept; });
      return box;
    }
    """

    def content(self) -> bytes | None:
        """The bytes of the last chosen file; None if it was too large (or unreadable)."""
        data = self.file.get("data")
        return None if data is None else base64.b64decode(data)
