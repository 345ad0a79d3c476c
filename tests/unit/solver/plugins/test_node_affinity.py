"""NodeAffinity: ``nodeSelector`` and required node affinity (node_affinity.go, component-helpers, v1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.status import Code, Status
from scheduler.solver.plugins import node_affinity
from tests.unit.solver.builders import expr, node, pod, required_affinity, term

REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",),
                "NodeAffinity")
NAME = "node-a"
LABELS = {"zone": "z1", "pool": "gpu", "cores": "64", "tier": ""}


def name_is(operator: str, *values: str) -> dict[str, Any]:
    """A ``matchFields`` requirement on ``metadata.name``."""
    return expr("metadata.name", operator, *values)


def check(node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None,
          labels: dict[str, str] | None = None) -> Status | None:
    spec = pod("p", node_selector=node_selector, affinity=affinity).spec
    return node_affinity.filter_node(spec, node(NAME, labels=LABELS if labels is None else labels))


@pytest.mark.parametrize(("node_selector", "expected"), [
    pytest.param(None, None, id="no-selector-passes"),
    pytest.param({"zone": "z1"}, None, id="one-matching-pair-passes"),
    pytest.param({"zone": "z1", "pool": "gpu"}, None, id="all-pairs-matching-passes"),
    pytest.param({"zone": "z1", "pool": "cpu"}, REJECT, id="one-mismatched-pair-rejects"),
    pytest.param({"rack": "r1"}, REJECT, id="absent-label-rejects"),
    pytest.param({"rack": ""}, REJECT, id="empty-value-still-needs-the-label"),
    pytest.param({"tier": ""}, None, id="empty-value-matches-an-empty-label"),
    pytest.param({"Zone": "z1"}, REJECT, id="keys-are-case-sensitive"),
])
def test_node_selector(node_selector: dict[str, str] | None, expected: Status | None) -> None:
    assert check(node_selector=node_selector) == expected


@pytest.mark.parametrize(("requirement", "expected"), [
    pytest.param(expr("zone", "In", "z1"), None, id="In-matching-value-passes"),
    pytest.param(expr("zone", "In", "z2", "z1"), None, id="In-any-of-several-values-passes"),
    pytest.param(expr("zone", "In", "z2"), REJECT, id="In-other-value-rejects"),
    pytest.param(expr("rack", "In", "r1"), REJECT, id="In-absent-label-rejects"),
    pytest.param(expr("zone", "NotIn", "z2"), None, id="NotIn-other-value-passes"),
    pytest.param(expr("zone", "NotIn", "z2", "z1"), REJECT, id="NotIn-listed-value-rejects"),
    pytest.param(expr("rack", "NotIn", "r1"), None, id="NotIn-absent-label-passes"),
    pytest.param(expr("zone", "Exists"), None, id="Exists-present-label-passes"),
    pytest.param(expr("tier", "Exists"), None, id="Exists-empty-valued-label-passes"),
    pytest.param(expr("rack", "Exists"), REJECT, id="Exists-absent-label-rejects"),
    pytest.param(expr("rack", "DoesNotExist"), None, id="DoesNotExist-absent-label-passes"),
    pytest.param(expr("zone", "DoesNotExist"), REJECT, id="DoesNotExist-present-label-rejects"),
    pytest.param(expr("cores", "Gt", "32"), None, id="Gt-greater-passes"),
    pytest.param(expr("cores", "Gt", "64"), REJECT, id="Gt-equal-rejects"),
    pytest.param(expr("cores", "Gt", "100"), REJECT, id="Gt-smaller-rejects"),
    pytest.param(expr("cores", "Gt", "9"), None, id="Gt-compares-as-integers-not-text"),
    pytest.param(expr("cores", "Lt", "128"), None, id="Lt-smaller-passes"),
    pytest.param(expr("cores", "Lt", "64"), REJECT, id="Lt-equal-rejects"),
    pytest.param(expr("cores", "Lt", "9"), REJECT, id="Lt-compares-as-integers-not-text"),
    pytest.param(expr("zone", "Gt", "1"), REJECT, id="Gt-non-integer-label-rejects"),
    pytest.param(expr("zone", "Lt", "1"), REJECT, id="Lt-non-integer-label-rejects"),
    pytest.param(expr("cores", "Gt", "many"), REJECT, id="Gt-non-integer-value-rejects"),
    pytest.param(expr("cores", "Lt", "1.5e3"), REJECT, id="Lt-non-integer-value-rejects"),
    pytest.param(expr("rack", "Gt", "1"), REJECT, id="Gt-absent-label-rejects"),
    pytest.param(expr("cores", "Gt", "1", "2"), REJECT, id="Gt-with-two-values-rejects"),
    pytest.param(expr("cores", "Gt"), REJECT, id="Gt-without-values-rejects"),
    pytest.param(expr("cores", "Lt", "100", "200"), REJECT, id="Lt-with-two-values-rejects"),
    pytest.param(expr("zone", "Matches", "z1"), REJECT, id="unknown-operator-rejects"),
])
def test_match_expressions(requirement: dict[str, Any], expected: Status | None) -> None:
    assert check(affinity=required_affinity(term(requirement))) == expected


@pytest.mark.parametrize(("fields", "expected"), [
    pytest.param([name_is("In", NAME)], None, id="metadata.name-In-own-name-passes"),
    pytest.param([name_is("In", "node-b")], REJECT, id="metadata.name-In-other-name-rejects"),
    pytest.param([name_is("NotIn", NAME)], REJECT, id="metadata.name-NotIn-own-name-rejects"),
    pytest.param([name_is("NotIn", "node-b")], None, id="metadata.name-NotIn-other-name-passes"),
    pytest.param([expr("metadata.uid", "In", NAME)], REJECT, id="unknown-field-key-In-never-matches"),
    pytest.param([expr("metadata.uid", "NotIn", "x")], REJECT, id="unknown-field-key-NotIn-never-matches"),
    pytest.param([expr("spec.unschedulable", "DoesNotExist")], REJECT,
                 id="unknown-field-key-DoesNotExist-never-matches"),
    pytest.param([name_is("In", NAME), expr("metadata.uid", "NotIn", "x")], REJECT,
                 id="an-unknown-field-key-fails-the-whole-term"),
    pytest.param([name_is("In", NAME), name_is("NotIn", "node-b")], None, id="field-requirements-are-ANDed"),
])
def test_match_fields(fields: list[dict[str, Any]], expected: Status | None) -> None:
    assert check(affinity=required_affinity(term(fields=fields))) == expected


@pytest.mark.parametrize(("affinity", "expected"), [
    pytest.param({}, None, id="affinity-without-node-affinity-passes"),
    pytest.param({"nodeAffinity": {}}, None, id="node-affinity-without-required-part-passes"),
    pytest.param(required_affinity(), REJECT, id="required-with-no-terms-rejects"),
    pytest.param(required_affinity(term()), REJECT, id="an-empty-term-matches-nothing"),
    pytest.param(required_affinity(term(), term(expr("zone", "In", "z1"))), None,
                 id="an-empty-term-ORed-with-a-matching-term-passes"),
    pytest.param(required_affinity(term(expr("zone", "In", "z1"), expr("pool", "In", "gpu"))), None,
                 id="expressions-all-matching-pass"),
    pytest.param(required_affinity(term(expr("zone", "In", "z1"), expr("pool", "In", "cpu"))), REJECT,
                 id="expressions-are-ANDed"),
    pytest.param(required_affinity(term(expr("zone", "In", "z2")), term(expr("pool", "In", "gpu"))), None,
                 id="terms-are-ORed-second-matches"),
    pytest.param(required_affinity(term(expr("zone", "In", "z1")), term(expr("pool", "In", "cpu"))), None,
                 id="terms-are-ORed-first-matches"),
    pytest.param(required_affinity(term(expr("zone", "In", "z2")), term(expr("pool", "In", "cpu"))), REJECT,
                 id="no-term-matching-rejects"),
    pytest.param(required_affinity(term(expr("zone", "In", "z1"), fields=[name_is("In", NAME)])), None,
                 id="expressions-and-fields-in-one-term-both-matching-pass"),
    pytest.param(required_affinity(term(expr("zone", "In", "z1"), fields=[name_is("In", "node-b")])), REJECT,
                 id="expressions-and-fields-in-one-term-are-ANDed"),
    pytest.param(required_affinity(term(expr("zone", "In", "z2"), fields=[name_is("In", NAME)])), REJECT,
                 id="matching-fields-do-not-rescue-failing-expressions"),
])
def test_required_terms(affinity: dict[str, Any], expected: Status | None) -> None:
    assert check(affinity=affinity) == expected


@pytest.mark.parametrize(("node_selector", "affinity", "expected"), [
    pytest.param({"zone": "z1"}, required_affinity(term(expr("pool", "In", "gpu"))), None,
                 id="selector-and-affinity-both-matching-pass"),
    pytest.param({"zone": "z2"}, required_affinity(term(expr("pool", "In", "gpu"))), REJECT,
                 id="matching-affinity-does-not-rescue-a-failing-selector"),
    pytest.param({"zone": "z1"}, required_affinity(term(expr("pool", "In", "cpu"))), REJECT,
                 id="matching-selector-does-not-rescue-failing-affinity"),
])
def test_selector_and_affinity_are_ANDed(node_selector: dict[str, str], affinity: dict[str, Any],
                                         expected: Status | None) -> None:
    assert check(node_selector=node_selector, affinity=affinity) == expected


def test_node_without_labels_only_matches_absence() -> None:
    affinity = required_affinity(term(expr("zone", "DoesNotExist"), expr("pool", "NotIn", "gpu")))
    assert check(affinity=affinity, labels={}) is None
    assert check(node_selector={"zone": "z1"}, labels={}) == REJECT


@pytest.mark.parametrize(("label", "requirement"), [
    pytest.param("1_000", expr("cores", "Gt", "999"), id="underscore-digit-separator-label-is-not-an-integer"),
    pytest.param("9223372036854775808", expr("cores", "Gt", "1"), id="label-beyond-int64-is-not-an-integer"),
    pytest.param("64", expr("cores", "Lt", "1_000"), id="underscore-digit-separator-value-is-not-an-integer"),
])
def test_gt_lt_need_go_int64_integers(label: str, requirement: dict[str, Any]) -> None:
    assert check(affinity=required_affinity(term(requirement)), labels={"cores": label}) == REJECT


@pytest.mark.parametrize("field", [
    pytest.param(name_is("Exists"), id="Exists-on-metadata.name-is-invalid"),
    pytest.param(name_is("In", NAME, "node-b"), id="In-with-two-values-is-invalid"),
])
def test_match_fields_only_single_value_in_notin(field: dict[str, Any]) -> None:
    assert check(affinity=required_affinity(term(fields=[field]))) == REJECT
