"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes no new pods unless tolerated.

Mirrors ``plugins/nodeunschedulable/node_unschedulable.go`` (v1.37): a pod tolerating the
``node.kubernetes.io/unschedulable:NoSchedule`` taint may still go there.
"""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node, Taint
from scheduler.model.pod import PodSpec
from scheduler.solver.plugins.taint_toleration import tolerates

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"  # node_unschedulable.go ErrReasonUnschedulable
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject a cordoned node unless the pod tolerates the unschedulable taint."""
    if not node.spec.unschedulable:
        return None
    if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in spec.tolerations):
        return None
    return _REJECT


def queueing_hint(event: ClusterEvent) -> bool:
    """A node added, or a node uncordoned."""
    if event.kind != "Node":
        return False
    return event.action is Action.ADD or (event.action is Action.UPDATE and event.old.spec.unschedulable
                                          and not event.new.spec.unschedulable)
