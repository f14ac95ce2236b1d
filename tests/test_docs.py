"""The pages under docs/ (the reference the README links to): every Python example runs as
written, every relative link in the README and the pages resolves, and neither speaks of issues."""
from __future__ import annotations

import re

import pytest

from doc_examples import DOCS, README, ROOT, anchor, anchors, python_blocks, relative_links, run_python_examples

PAGES = sorted(DOCS.glob("*.md"))
TOPICS = {"likelihoods", "inference", "sparse", "scalable", "reproduction", "tables", "development"}


def test_one_page_per_topic_each_linked_from_the_readme():
    assert {p.stem for p in PAGES} == TOPICS
    linked = {(README.parent / t.split("#")[0]).resolve() for t in relative_links(README)}
    assert {p.resolve() for p in PAGES} <= linked, "a docs page the README does not link to"


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_python_examples_run(page):
    namespace = run_python_examples(page)
    assert len(namespace) > 1


def test_the_pages_hold_the_examples():
    counts = {p.stem: len(python_blocks(p)) for p in PAGES}
    assert all(counts[t] >= 1 for t in ("likelihoods", "inference", "sparse", "scalable")), counts
    assert counts["scalable"] >= 2  # the SEP example reuses the SVI example's data


def test_the_user_defined_likelihood_example_fits():
    namespace = run_python_examples(DOCS / "likelihoods.md")
    assert namespace["post"].converged and namespace["qp"].var > 0


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_relative_links_resolve(path):
    links = relative_links(path)
    assert links, f"{path.name} links nowhere: the reader cannot get back"
    broken = []
    for target in links:
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists() or not dest.is_relative_to(ROOT):
            broken.append(target)
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(target)
    assert not broken, f"{path.name}: links to nothing: {broken}"


def test_anchor_is_githubs():
    assert anchor("Every option of `qpviz.fit`") == "every-option-of-qpvizfit"
    assert anchor("Scalable classification: SVI, SEP and the large datasets") == \
        "scalable-classification-svi-sep-and-the-large-datasets"


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_no_issue_references(path):
    found = re.findall(r".{0,30}\bissues? \d+.{0,10}", path.read_text(), flags=re.I)
    assert not found, f"{path.name} refers to the tracker: {found}"
