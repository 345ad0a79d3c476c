"""Label and node selector matching, with the API's semantics; shared by plugins and the DRA inventory.

Node selectors (``core/v1 NodeSelector``) follow ``component-helpers``
``scheduling/corev1/nodeaffinity`` (v1.37): terms are ORed, a term's requirements ANDed, a term with
no requirements matches nothing. Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (integer
comparison; a non-integer label or value never matches). ``matchFields`` supports only
``metadata.name`` (In / NotIn, one value), as the API does.

Label selectors (``metav1.LabelSelector``) follow apimachinery ``LabelSelectorAsSelector``:
``matchLabels`` and ``matchExpressions`` (In, NotIn, Exists, DoesNotExist) are ANDed; an empty
selector matches everything, a nil one nothing (the caller decides which it has).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from scheduler.model.node import Node
from scheduler.model.pod import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)

_INT64 = re.compile(r"[+-]?[0-9]+")


def as_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: decimal digits with an optional sign, within int64."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _compare(label: str | None, values: tuple[str, ...], op: Callable[[int, int], bool]) -> bool:
    if label is None or len(values) != 1:
        return False
    have, want = as_int(label), as_int(values[0])
    return have is not None and want is not None and op(have, want)


def requirement_matches(req: NodeSelectorRequirement | LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
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


def node_selector_matches(selector: NodeSelector, node: Node) -> bool:
    """Whether any term of ``selector`` matches ``node`` (terms are ORed)."""
    return any(term_matches(t, node) for t in selector.node_selector_terms)


def _field_matches(req: NodeSelectorRequirement, fields: Mapping[str, str]) -> bool:
    """A ``matchFields`` requirement: only ``metadata.name`` with In/NotIn and exactly one value
    (``nodeSelectorRequirementsAsFieldSelector``); anything else matches nothing."""
    if req.key not in fields or req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return False
    return requirement_matches(req, fields)


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (``matchLabels`` and every ``matchExpressions`` entry).

    Operators In, NotIn, Exists, DoesNotExist (``metav1.LabelSelectorOperator``); an empty selector
    matches every label set. Unknown operators match nothing (the API server rejects them).
    """
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for expr in selector.match_expressions:
        if expr.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
        if not requirement_matches(expr, labels):
            return False
    return True
