"""NodeAffinity: ``spec.nodeSelector`` and required node affinity.

Mirrors ``plugins/nodeaffinity/node_affinity.go`` and ``component-helpers``
``scheduling/corev1/nodeaffinity`` (v1.37): every nodeSelector pair must match a label; the
required ``nodeSelectorTerms`` are ORed, a term's requirements ANDed; a term with no
requirements matches nothing. Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (integer
comparison; a non-integer label or value never matches). ``matchFields`` supports only
``metadata.name`` (In / NotIn, one value), as the API does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from scheduler.model.node import Node
from scheduler.model.pod import NodeSelectorRequirement, NodeSelectorTerm, PodSpec
from scheduler.solver.status import Code, Status

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"  # node_affinity.go ErrReasonPod

_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


_INT64 = re.compile(r"[+-]?[0-9]+")


def _as_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: decimal digits with an optional sign, within int64."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _compare(label: str | None, values: tuple[str, ...], op: Callable[[int, int], bool]) -> bool:
    if label is None or len(values) != 1:
        return False
    have, want = _as_int(label), _as_int(values[0])
    return have is not None and want is not None and op(have, want)


def requirement_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """Whether one label requirement matches a label set (``labels.Selector`` semantics)."""
    value = labels.get(req.key)
    match req.operator:
        case "In":
            return value is not None and value in req.values
        case "NotIn":
            return value is None or value not in req.values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        case "Gt":
            return _compare(value, req.values, lambda a, b: a > b)
        case "Lt":
            return _compare(value, req.values, lambda a, b: a < b)
    return False  # an unknown operator matches nothing (the API server rejects it anyway)


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """Whether a node selector term matches: all expressions and all field requirements hold."""
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(requirement_matches(r, node.metadata.labels) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node.metadata.name}
    return all(_field_matches(r, fields) for r in term.match_fields)


def _field_matches(req: NodeSelectorRequirement, fields: Mapping[str, str]) -> bool:
    """A ``matchFields`` requirement: only ``metadata.name`` with In/NotIn and exactly one value
    (``nodeSelectorRequirementsAsFieldSelector``); anything else matches nothing."""
    if req.key not in fields or req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return False
    return requirement_matches(req, fields)


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject the node unless nodeSelector and the required node affinity both match."""
    labels = node.metadata.labels
    for key, value in spec.node_selector.items():
        if labels.get(key) != value:
            return _REJECT
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and not any(term_matches(t, node) for t in required.node_selector_terms):
        return _REJECT
    return None
