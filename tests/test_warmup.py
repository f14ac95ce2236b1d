"""The kernel warm-up (qpviz.warmup): what each target compiles, and its record of a finished run."""
from __future__ import annotations

import pytest

from qpviz import warmup
from qpviz.explorer import likelihood_names


@pytest.mark.parametrize("what", warmup.STEPS)
def test_every_step_is_run_once_and_the_last_group_uses_the_others(what):
    groups = warmup.steps(what)
    labels = [label for group in groups for label, _ in group]
    assert len(groups) == 3 and len(labels) == len(set(labels))
    assert "QP table (fast form)" in [label for label, _ in groups[0]]
    # the tilted quadrature only for "all": the explorer's one-point quadratures use the NumPy
    # engine and EP with closed-form moments compiles without it
    assert ("tilted quadrature: panels" in [label for label, _ in groups[0]]) == (what == "all")
    last = [label for label, _ in groups[2]]
    assert ("explorer page" in last) == (what != "fit")
    assert ("EP and QP fits" in last) == (what != "explorer")
    assert ("sparse Power EP and QP fits" in last) == (what == "all")


def test_all_compiles_every_likelihood_the_page_offers_and_explorer_none():
    def likelihoods(what):
        return {label.split(": ")[1] for group in warmup.steps(what) for label, _ in group
                if label.startswith("likelihood kernels")}

    assert likelihoods("all") == set(likelihood_names())
    assert likelihoods("explorer") == set()  # its page needs no likelihood cfunc


def test_a_finished_run_is_recorded_until_the_sources_or_the_caches_change(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(warmup, "_stamp", lambda what: tmp_path / f"warmup-{what}.txt")
    state = {"value": "abc 10"}
    monkeypatch.setattr(warmup, "_state", lambda: state["value"])
    assert not warmup.is_warm("explorer")
    warmup._write_stamp("explorer")
    assert warmup.is_warm("explorer") and not warmup.is_warm("fit")
    state["value"] = "abc 9"  # a cache file was deleted
    assert not warmup.is_warm("explorer")
    state["value"] = "def 10"  # a source changed
    assert not warmup.is_warm("explorer")
    state["value"] = "abc 10"
    warmup._write_stamp("all")
    assert warmup.is_warm("fit")  # everything covers every target
