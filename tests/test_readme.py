"""The README's Python examples run as written (the public API is a contract with users)."""
import re
from pathlib import Path

import pytest

from qpviz.likelihoods import REGISTRY

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    saved = dict(REGISTRY)
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own documentation
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)
    assert namespace["post"].converged  # the user-defined likelihood's fit


def test_readme_lists_every_registered_likelihood():
    text = README.read_text()
    missing = [name for name in REGISTRY if f"| `{name}` |" not in text]
    assert not missing, f"README's likelihood table lacks {missing}"
