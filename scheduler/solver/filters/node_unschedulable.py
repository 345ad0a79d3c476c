"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes no new pods unless tolerated.

Mirrors ``plugins/nodeunschedulable/node_unschedulable.go`` (v1.37): a pod tolerating the
``node.kubernetes.io/unschedulable:NoSchedule`` taint may still go there.
"""

from __future__ import annotations

from scheduler.model.node import Node, Taint
from scheduler.model.pod import PodSpec
from scheduler.solver.filters.taint_toleration import tolerates
from scheduler.solver.status import Code, Status

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
