"""NodeLifecycle: no new gang members on nodes not ready, draining or awaiting maintenance (KEP-5683)."""

from __future__ import annotations

import pytest

from scheduler.framework.status import Code, Status
from scheduler.model.pod import Toleration
from scheduler.solver.plugins import node_lifecycle
from tests.unit.solver.builders import node, pod

NOT_READY = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were not ready",), "NodeLifecycle")


def blocked(condition: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) had condition {condition}=True",), "NodeLifecycle")


@pytest.mark.parametrize(("conditions", "expected"), [
    pytest.param([], None, id="no-conditions-passes"),
    pytest.param([("Ready", "True")], None, id="ready-node-passes"),
    pytest.param([("DrainInProgress", "True")], blocked("DrainInProgress"), id="DrainInProgress-True-rejects"),
    pytest.param([("Drained", "True")], blocked("Drained"), id="Drained-True-rejects"),
    pytest.param([("MaintenancePlanned", "True")], blocked("MaintenancePlanned"),
                 id="MaintenancePlanned-True-rejects"),
    pytest.param([("DrainInProgress", "False")], None, id="DrainInProgress-False-passes"),
    pytest.param([("Drained", "Unknown")], None, id="Drained-Unknown-passes"),
    pytest.param([("MaintenancePlanned", "False"), ("Drained", "Unknown"), ("DrainInProgress", "False")], None,
                 id="all-blocking-conditions-not-True-passes"),
    pytest.param([("MaintenanceInProgress", "True")], None, id="MaintenanceInProgress-is-ignored"),
    pytest.param([("GracefulNodeShutdownInProgress", "True")], None,
                 id="GracefulNodeShutdownInProgress-is-ignored"),
    pytest.param([("Ready", "True"), ("DiskPressure", "True")], None, id="other-conditions-are-ignored"),
    pytest.param([("Ready", "False")], NOT_READY, id="Ready-False-rejects"),
    pytest.param([("Ready", "Unknown")], NOT_READY, id="Ready-Unknown-rejects"),
    pytest.param([("Ready", "True"), ("MaintenancePlanned", "True"), ("DrainInProgress", "True")],
                 blocked("MaintenancePlanned"), id="first-blocking-condition-in-node-order-is-reported"),
    pytest.param([("DrainInProgress", "False"), ("Drained", "True")], blocked("Drained"),
                 id="a-False-condition-before-a-True-one-does-not-hide-it"),
])
def test_filter_node(conditions: list[tuple[str, str]], expected: Status | None) -> None:
    assert node_lifecycle.filter_node(pod("p").spec, node("n", conditions=conditions)) == expected


@pytest.mark.parametrize(("status", "taint_key"), [("False", "node.kubernetes.io/not-ready"),
                                                   ("Unknown", "node.kubernetes.io/unreachable")])
def test_a_pod_tolerating_the_not_ready_taint_may_go_to_a_node_not_ready(status: str, taint_key: str) -> None:
    tolerant = pod("p").model_copy(deep=True)
    tolerant = tolerant.model_copy(update={"spec": tolerant.spec.model_copy(update={"tolerations": (
        Toleration(key=taint_key, operator="Exists", effect="NoSchedule"),)})})
    assert node_lifecycle.filter_node(tolerant.spec, node("n", conditions=[("Ready", status)])) is None
    only_no_execute = tolerant.spec.model_copy(update={"tolerations": (
        Toleration(key=taint_key, operator="Exists", effect="NoExecute", toleration_seconds=300),)})
    assert node_lifecycle.filter_node(only_no_execute, node("n", conditions=[("Ready", status)])) == NOT_READY
