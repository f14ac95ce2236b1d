"""A document change reaches the browser as one websocket message of three frames, arrays inside.

Bokeh sends each NumPy array of a change (a patched image, a contour's coordinates, a source's
column) as a binary buffer of its own: two more websocket frames per array (a header and the
bytes). Chromium hands each frame to the page as a separate message event, a task of its own that
waits its turn on the page's one thread. A VSGP blur step was one change of ~100 frames: the
server wrote them within 5 ms, and the browser took ~35 ms to receive them all before it could
apply the change (measured with a timestamp per message event, at N = 500, M = 20).

:func:`enable` makes Bokeh's PATCH-DOC messages carry their arrays base64-encoded in the content
JSON (Bokeh's own ``Serializer(deferred=False)``, the form of a standalone HTML file): header,
metadata and content, three frames whatever the change. The bytes grow by a third; the pages'
changes are at most a few hundred kB (a 60 x 60 map is 29 kB), which Chromium decodes in well
under a millisecond.
"""
from __future__ import annotations

import base64
import gzip

from bokeh.core.serialization import BytesRep, Serializer
from bokeh.document.json import PatchJson
from bokeh.protocol.messages.patch_doc import patch_doc

__all__ = ["enable", "create_inline", "InlineSerializer"]

#: gzip level of inline floating-point arrays. BokehJS reads inline bytes as gzip (fflate's
#: gunzipSync), and Bokeh compresses them at its ``compression_level`` setting (2): on the pages'
#: floating-point maps that saved 12% of the bytes (GP 2-D at N = 60: 214 against 242 kB) for ~3 ms
#: of compression in the server and of inflation in the browser per step. Level 0 stores them.
INLINE_GZIP_LEVEL = 0
#: gzip level of inline integer arrays (RGBA images, indices): a 60 x 60 RGBA map of a smooth
#: field shrinks 14.4 -> ~3 kB at level 1 in ~0.1 ms.
INTEGER_GZIP_LEVEL = 1
#: memoryview formats of integer elements (struct codes)
INTEGER_FORMATS = frozenset("bBhHiIlLqQ")


class InlineSerializer(Serializer):
    """Bokeh's serializer with bytes inline (``deferred=False``), gzipped at INTEGER_GZIP_LEVEL
    (integer arrays) or INLINE_GZIP_LEVEL (the rest) instead of Bokeh's global ``compression_level``
    (kept for the standalone files Bokeh saves)."""

    def __init__(self, **kwargs):
        super().__init__(deferred=False, **kwargs)

    def _encode_bytes(self, obj) -> BytesRep:
        integers = isinstance(obj, memoryview) and obj.format.lstrip("@=<>!") in INTEGER_FORMATS
        level = INTEGER_GZIP_LEVEL if integers else INLINE_GZIP_LEVEL
        packed = gzip.compress(bytes(obj), compresslevel=level, mtime=1)
        return BytesRep(type="bytes", data=base64.b64encode(packed).decode("ascii"))


def create_inline(cls, events, **metadata) -> patch_doc:
    """A PATCH-DOC message of ``events`` (one document's) with every array inside its JSON and no
    buffers: Bokeh's ``patch_doc.create`` with a serializer that does not defer bytes."""
    if not events:
        raise ValueError("PATCH-DOC message requires at least one event")
    documents = {event.document for event in events}
    if len(documents) != 1:
        raise ValueError("PATCH-DOC message configured with events for more than one document")
    [document] = documents
    serializer = InlineSerializer(references=document.models.synced_references)
    content = PatchJson(events=serializer.encode(events))
    # the models first sent by this message are known to the browser from now on
    document.models.flush_synced(lambda model: not serializer.has_ref(model))
    return cls(cls.create_header(), metadata, content)


create_inline._qpviz_inline = True


def enable() -> None:
    """Every PATCH-DOC message made from now on (by Bokeh's and Panel's writers alike, both call
    ``protocol.create("PATCH-DOC", ...)``) has its arrays inline. Idempotent."""
    if getattr(patch_doc.create, "_qpviz_inline", False):
        return
    patch_doc.create = classmethod(create_inline)
