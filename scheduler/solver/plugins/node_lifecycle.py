"""NodeLifecycle: no new placements on nodes that are being drained or await maintenance.

KEP-5683 (v1.37 alpha, gate NodeLifecycleConditions) adds node conditions that no core
component reacts to yet. Our policy (reference §7): a node whose ``DrainInProgress``,
``Drained`` or ``MaintenancePlanned`` condition is ``True`` receives no new gang members —
a gang started there would be disrupted soon. Pods already running are not touched.
"""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node
from scheduler.model.pod import PodSpec

NAME = "NodeLifecycle"
BLOCKING_CONDITIONS = ("DrainInProgress", "Drained", "MaintenancePlanned")

_REJECT = {
    c: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) had condition {c}=True",), NAME)
    for c in BLOCKING_CONDITIONS
}


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject a node with a blocking lifecycle condition set to True."""
    for cond in node.status.conditions:
        if cond.type in _REJECT and cond.is_true:
            return _REJECT[cond.type]
    return None


def queueing_hint(event: ClusterEvent) -> bool:
    """A node added, or a node whose lifecycle conditions changed."""
    if event.kind != "Node":
        return False
    return event.action is Action.ADD or (
        event.action is Action.UPDATE
        and [(c.type, c.status) for c in event.old.status.conditions if c.type in BLOCKING_CONDITIONS]
        != [(c.type, c.status) for c in event.new.status.conditions if c.type in BLOCKING_CONDITIONS])
