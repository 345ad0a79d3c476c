"""NodeLifecycle: no new gang members on nodes draining or awaiting maintenance (KEP-5683, reference §7)."""

from __future__ import annotations

import pytest

from scheduler.framework.status import Code, Status
from scheduler.solver.plugins import node_lifecycle
from tests.unit.solver.builders import node, pod


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
    pytest.param([("Ready", "False"), ("DiskPressure", "True")], None, id="other-conditions-are-ignored"),
    pytest.param([("Ready", "True"), ("MaintenancePlanned", "True"), ("DrainInProgress", "True")],
                 blocked("MaintenancePlanned"), id="first-blocking-condition-in-node-order-is-reported"),
    pytest.param([("DrainInProgress", "False"), ("Drained", "True")], blocked("Drained"),
                 id="a-False-condition-before-a-True-one-does-not-hide-it"),
])
def test_filter_node(conditions: list[tuple[str, str]], expected: Status | None) -> None:
    assert node_lifecycle.filter_node(pod("p").spec, node("n", conditions=conditions)) == expected
