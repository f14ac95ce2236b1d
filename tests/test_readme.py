"""The README's Python examples run as written (the public API is a contract with users)."""
from doc_examples import DOCS, README, python_blocks, run_python_examples

from qpviz.likelihoods import REGISTRY


def test_readme_python_examples_run():
    assert len(python_blocks(README)) >= 1
    namespace = run_python_examples(README)
    assert namespace["qp"].var <= namespace["ep"].var  # the projection tour
    assert namespace["post"].converged  # the fit tour


def test_docs_list_every_registered_likelihood():
    table, tour = (DOCS / "likelihoods.md").read_text(), README.read_text()
    missing = [name for name in REGISTRY if f"| `{name}` |" not in table]
    assert not missing, f"docs/likelihoods.md's likelihood table lacks {missing}"
    missing = [name for name in REGISTRY if f"`{name}`" not in tour]
    assert not missing, f"the README's API tour does not name {missing}"
