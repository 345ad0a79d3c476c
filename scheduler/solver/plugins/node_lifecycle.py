"""NodeLifecycle: no new placements on nodes that are not ready, being drained, or await maintenance.

* **Not ready** (a gang member is never put back on the node whose failure removed it until
  that node is healthy again): a node whose ``Ready`` condition is ``False`` or ``Unknown`` takes no new
  pod, unless the pod tolerates the taint kube's node lifecycle controller puts on such a node
  (``node.kubernetes.io/not-ready`` resp. ``node.kubernetes.io/unreachable``, effect NoSchedule —
  TaintNodesByCondition). On a real cluster the taint says the same a few seconds later; this filter
  does not wait for it, and holds where no lifecycle controller runs. A node that reports no ``Ready``
  condition at all is not judged.
* **Lifecycle conditions**: KEP-5683 (v1.37 alpha, gate NodeLifecycleConditions) adds node conditions
  that no core component reacts to yet. Our policy: a node whose ``DrainInProgress``,
  ``Drained`` or ``MaintenancePlanned`` condition is ``True`` receives no new gang members — a gang
  started there would be disrupted soon.

Pods already running are not touched.
"""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node, Taint
from scheduler.model.pod import PodSpec
from scheduler.solver.plugins.taint_toleration import tolerates

NAME = "NodeLifecycle"
BLOCKING_CONDITIONS = ("DrainInProgress", "Drained", "MaintenancePlanned")
NOT_READY_TAINTS = {
    "False": Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule"),
    "Unknown": Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
}
"""The taint the node lifecycle controller sets for each non-True ``Ready`` status (v1.37 ``TaintNodesByCondition``)."""
WATCHED = (*BLOCKING_CONDITIONS, "Ready")

_REJECT = {
    c: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) had condition {c}=True",), NAME)
    for c in BLOCKING_CONDITIONS
}
_NOT_READY = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were not ready",), NAME)


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject a node that is not ready (unless the pod tolerates its taint) or has a blocking lifecycle condition."""
    for cond in node.status.conditions:
        if cond.type in _REJECT and cond.is_true:
            return _REJECT[cond.type]
        if cond.type == "Ready" and cond.status in NOT_READY_TAINTS:
            taint = NOT_READY_TAINTS[cond.status]
            if not any(tolerates(t, taint) for t in spec.tolerations):
                return _NOT_READY
    return None


def queueing_hint(event: ClusterEvent) -> bool:
    """A node added, or a node whose readiness or lifecycle conditions changed."""
    if event.kind != "Node":
        return False
    return event.action is Action.ADD or (
        event.action is Action.UPDATE
        and [(c.type, c.status) for c in event.old.status.conditions if c.type in WATCHED]
        != [(c.type, c.status) for c in event.new.status.conditions if c.type in WATCHED])
