"""NodeAffinity: ``spec.nodeSelector`` and required node affinity.

Mirrors ``plugins/nodeaffinity/node_affinity.go`` (v1.37): every nodeSelector pair must match a
label, and the required ``nodeSelectorTerms`` must match (:mod:`scheduler.framework.selectors`
has the matching rules).
"""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.selectors import node_selector_matches
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node
from scheduler.model.pod import PodSpec

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"  # node_affinity.go ErrReasonPod

_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject the node unless nodeSelector and the required node affinity both match."""
    labels = node.metadata.labels
    for key, value in spec.node_selector.items():
        if labels.get(key) != value:
            return _REJECT
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and not node_selector_matches(required, node):
        return _REJECT
    return None


def queueing_hint(event: ClusterEvent) -> bool:
    """A node added, or a node's labels changed, may now match (kube's ``isSchedulableAfterNodeChange``)."""
    if event.kind != "Node":
        return False
    return event.action is Action.ADD or (event.action is Action.UPDATE
                                          and event.old.metadata.labels != event.new.metadata.labels)
