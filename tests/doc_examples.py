"""What the README and the pages under docs/ hold: their Python examples (run by the tests, so
they cannot rot), their relative links and their headings' anchors."""
from __future__ import annotations

import re
from pathlib import Path

from qpviz.inference import methods
from qpviz.likelihoods import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_PYTHON = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
#: a Markdown link [text](target), target without spaces; an image ![..](..) too
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *$", flags=re.M)


def python_blocks(path: Path) -> list[str]:
    return _PYTHON.findall(path.read_text())


def run_python_examples(path: Path) -> dict:
    """Run a page's Python blocks in order, in one namespace (a block may use an earlier one's
    names), and return that namespace; likelihoods and methods an example registers are unregistered after."""
    saved = dict(REGISTRY)
    saved_methods = dict(methods.REGISTRY)
    namespace: dict = {"__name__": f"example:{path.name}"}
    try:
        for block in python_blocks(path):
            exec(compile(block, str(path), "exec"), namespace)  # noqa: S102 - our own documentation
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)
        for name in set(methods.REGISTRY) - set(saved_methods):
            methods.unregister_method(name)
    return namespace


def relative_links(path: Path) -> list[str]:
    """The targets of the page's links that point into the repository (no scheme, no mail)."""
    return [t for t in _LINK.findall(path.read_text()) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {anchor(h) for h in _HEADING.findall(path.read_text())}
