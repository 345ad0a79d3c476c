"""``NodeTable.selector_mask``: the vectorised node selector agrees with the per-node matcher, and PV affinity
is matched on labels only (kube's ``CheckNodeAffinity`` builds the node from its labels, so it has no name)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.node_table import NodeTable
from scheduler.framework.selectors import node_selector_matches
from scheduler.model.pod import NodeSelector
from tests.unit.solver.builders import node

NODES = [node("n1", labels={"zone": "a", "rank": "3"}), node("n2", labels={"zone": "b", "rank": "10"}),
         node("n3", labels={"zone": "a"}), node("n4", labels={"rank": "x"})]
TABLE = NodeTable.build(NODES)


def selector(*terms: dict[str, Any]) -> NodeSelector:
    return NodeSelector.model_validate({"nodeSelectorTerms": list(terms)})


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


CASES = [
    pytest.param(selector({"matchExpressions": [expr("zone", "In", "a")]}), [1, 0, 1, 0], id="in"),
    pytest.param(selector({"matchExpressions": [expr("zone", "NotIn", "a")]}), [0, 1, 0, 1],
                 id="not-in-matches-nodes-without-the-label"),
    pytest.param(selector({"matchExpressions": [expr("zone", "Exists")]}), [1, 1, 1, 0], id="exists"),
    pytest.param(selector({"matchExpressions": [expr("zone", "DoesNotExist")]}), [0, 0, 0, 1], id="does-not-exist"),
    pytest.param(selector({"matchExpressions": [expr("rank", "Gt", "4")]}), [0, 1, 0, 0],
                 id="gt-compares-integers-and-skips-non-integers"),
    pytest.param(selector({"matchExpressions": [expr("rank", "Lt", "4")]}), [1, 0, 0, 0], id="lt"),
    pytest.param(selector({"matchExpressions": [expr("zone", "In", "a"), expr("rank", "Exists")]}), [1, 0, 0, 0],
                 id="a-term-ands-its-requirements"),
    pytest.param(selector({"matchExpressions": [expr("zone", "In", "b")]}, {"matchExpressions": [expr("rank", "Lt",
                                                                                                     "4")]}),
                 [1, 1, 0, 0], id="terms-are-ored"),
    pytest.param(selector({}), [0, 0, 0, 0], id="an-empty-term-matches-nothing"),
    pytest.param(selector({"matchFields": [expr("metadata.name", "In", "n2")]}), [0, 1, 0, 0], id="match-fields"),
]


@pytest.mark.parametrize(("sel", "expected"), CASES)
def test_selector_mask_matches_the_per_node_matcher(sel: NodeSelector, expected: list[int]) -> None:
    mask = TABLE.selector_mask(sel)
    assert mask.tolist() == [bool(x) for x in expected]
    assert mask.tolist() == [node_selector_matches(sel, n) for n in TABLE.nodes]


def test_pv_affinity_is_matched_on_labels_only_so_match_fields_see_no_name() -> None:
    by_name = selector({"matchFields": [expr("metadata.name", "In", "n2")]})
    not_name = selector({"matchFields": [expr("metadata.name", "NotIn", "n2")]})
    assert not TABLE.selector_mask(by_name, names=False).any()
    assert TABLE.selector_mask(not_name, names=False).all()


def test_masks_are_memoised_and_read_only() -> None:
    sel = selector({"matchExpressions": [expr("zone", "In", "a")]})
    mask = TABLE.selector_mask(sel)
    assert TABLE.selector_mask(sel) is mask
    with pytest.raises(ValueError):
        mask[0] = False


KEYS = st.sampled_from(["zone", "rank", "gpu"])
VALUES = st.lists(st.sampled_from(["a", "b", "3", "10", "x", "-1"]), max_size=3)
OPS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
REQ = st.builds(lambda k, o, v: expr(k, o, *v), KEYS, OPS, VALUES)
TERM = st.builds(lambda reqs: {"matchExpressions": reqs}, st.lists(REQ, max_size=3))
LABELS = st.dictionaries(KEYS, st.sampled_from(["a", "b", "3", "10", "x", "-1"]), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(TERM, max_size=3), st.lists(LABELS, min_size=1, max_size=6))
def test_vectorised_mask_equals_the_per_node_matcher_on_random_selectors(terms: list[dict[str, Any]],
                                                                        labels: list[dict[str, str]]) -> None:
    table = NodeTable.build([node(f"n{i}", labels=lab) for i, lab in enumerate(labels)])
    sel = selector(*terms)
    expected = np.array([node_selector_matches(sel, n) for n in table.nodes], dtype=bool)
    assert (table.selector_mask(sel) == expected).all()
