"""NodeUnschedulable: a cordoned node takes a pod only if it tolerates the unschedulable taint (v1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.status import Code, Status
from scheduler.solver.plugins import node_unschedulable
from tests.unit.solver.builders import node, pod

KEY = "node.kubernetes.io/unschedulable"
REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",), "NodeUnschedulable")


@pytest.mark.parametrize(("unschedulable", "tolerations", "expected"), [
    pytest.param(False, [], None, id="schedulable-node-passes"),
    pytest.param(False, [{"key": "other", "operator": "Exists"}], None,
                 id="schedulable-node-passes-whatever-the-tolerations"),
    pytest.param(True, [], REJECT, id="cordoned-node-rejects-pod-without-tolerations"),
    pytest.param(True, [{"key": KEY, "operator": "Exists"}], None, id="Exists-toleration-for-the-taint-passes"),
    pytest.param(True, [{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}], None,
                 id="Exists-toleration-with-NoSchedule-effect-passes"),
    pytest.param(True, [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}], REJECT,
                 id="toleration-with-NoExecute-effect-does-not-cover-the-NoSchedule-taint"),
    pytest.param(True, [{"operator": "Exists"}], None, id="empty-key-Exists-toleration-passes"),
    pytest.param(True, [{"operator": "Exists", "effect": "NoExecute"}], REJECT,
                 id="empty-key-Exists-for-NoExecute-only-rejects"),
    pytest.param(True, [{"key": KEY, "operator": "Equal"}], None,
                 id="Equal-with-empty-value-matches-the-valueless-taint"),
    pytest.param(True, [{"key": KEY, "operator": "Equal", "value": "true"}], REJECT,
                 id="Equal-with-a-value-rejects"),
    pytest.param(True, [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], REJECT,
                 id="toleration-for-another-key-rejects"),
])
def test_filter_node(unschedulable: bool, tolerations: list[dict[str, Any]], expected: Status | None) -> None:
    spec = pod("p", tolerations=tolerations).spec
    assert node_unschedulable.filter_node(spec, node("n", unschedulable=unschedulable)) == expected


def test_cordon_is_read_from_spec_not_from_taints() -> None:
    """The node's own unschedulable taint is TaintToleration's business; this filter reads ``spec.unschedulable``."""
    tainted_only = node("n", taints=[f"{KEY}:NoSchedule"], unschedulable=False)
    assert node_unschedulable.filter_node(pod("p").spec, tainted_only) is None
