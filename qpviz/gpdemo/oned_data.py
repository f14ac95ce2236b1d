"""The data of the "GP 1-D" page as files and links: a CSV upload read into (X, y) and the data a
shared link carries ('x:y;x:y;...'), each bad file or link a ValueError saying what is wrong.
"""
from __future__ import annotations

import numpy as np

from qpviz import explorer
from qpviz.gpdemo import presets

__all__ = ["MAX_UPLOAD_BYTES", "MAX_LINK_POINTS", "too_large_message", "parse_csv", "encode_data", "decode_data"]

#: Largest CSV upload accepted.
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
#: Most points a link carries (the URL stays below ~8 kB).
MAX_LINK_POINTS = 300


def too_large_message(n_bytes: int) -> str:
    """What to change about a file of ``n_bytes`` above MAX_UPLOAD_BYTES."""
    limit = MAX_UPLOAD_BYTES // (1024 * 1024)
    return f"the file has {n_bytes / 1e6:.1f} MB; the limit is {limit} MB: upload at most {presets.MAX_POINTS} rows x, y"


def parse_csv(content: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, 1), y) from a CSV file with two numeric columns x, y (an optional header line).

    Raises ValueError saying what is wrong: empty, larger than 5 MB, not two columns, not
    numbers, more than :data:`qpviz.gpdemo.presets.MAX_POINTS` rows.
    """
    if content is None or len(content) == 0:
        raise ValueError("the file is empty; upload a CSV with two columns x, y")
    if len(content) > MAX_UPLOAD_BYTES:
        raise ValueError(too_large_message(len(content)))
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the file is not text (UTF-8); upload a CSV with two columns x, y") from None
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("the file has no rows; upload a CSV with two columns x, y")
    rows = [line.replace(";", ",").split(",") for line in lines]
    if any(len(row) != 2 for row in rows):
        bad = next(i for i, row in enumerate(rows) if len(row) != 2)
        raise ValueError(f"every row needs exactly two columns x, y; row {bad + 1} has {len(rows[bad])}")
    try:
        float(rows[0][0]), float(rows[0][1])
    except ValueError:
        rows = rows[1:]  # a header line
    if len(rows) > presets.MAX_POINTS:
        raise ValueError(f"the file has {len(rows)} rows; at most {presets.MAX_POINTS} points are allowed")
    try:
        values = np.array([[float(a), float(b)] for a, b in rows])
    except ValueError:
        raise ValueError("every x and y must be a number (e.g. 1.5,-1); found text in the data rows") from None
    if values.shape[0] < 2:
        raise ValueError("the file needs at least 2 data rows")
    if not np.all(np.isfinite(values)):
        raise ValueError("every x and y must be finite (no NaN or inf)")
    return values[:, :1], values[:, 1]


def encode_data(X, y) -> str:
    """'x:y;x:y;...' with 6 significant digits ('' beyond MAX_LINK_POINTS points)."""
    if y.size > MAX_LINK_POINTS:
        return ""
    return ";".join(f"{a:.6g}:{b:.6g}" for a, b in zip(np.ravel(X), y))


def decode_data(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`encode_data` (ValueError for text that is not 'x:y;...' numbers)."""
    pairs = [item.split(":") for item in text.split(";") if item]
    if not pairs or any(len(p) != 2 for p in pairs) or len(pairs) > presets.MAX_POINTS:
        raise ValueError("expected 'x:y;x:y;...' with 1 to 1000 points")
    values = np.array([[explorer.parse_number(a, "x"), explorer.parse_number(b, "y")] for a, b in pairs])
    return values[:, :1], values[:, 1]
