"""TaintToleration: a node's NoSchedule / NoExecute taints must each be tolerated.

Mirrors ``plugins/tainttoleration/taint_toleration.go`` and ``v1helper.TolerationsTolerateTaint``
(v1.37): a toleration matches when its effect is empty or equal, its key is empty (only with
``Exists``, which then matches every key) or equal, and ``Exists`` ignores the value while
``Equal`` (the default) compares it. PreferNoSchedule taints do not filter.
"""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node, Taint
from scheduler.model.pod import PodSpec, Toleration

NAME = "TaintToleration"
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def reason(taint: Taint) -> str:
    """``node(s) had untolerated taint {key: value}`` (taint_toleration.go, v1.37 wording)."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint (``Toleration.ToleratesTaint``)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key != taint.key and not (toleration.key == "" and toleration.operator == "Exists"):
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in ("Equal", "") and toleration.value == taint.value


def filter_node(spec: PodSpec, node: Node) -> Status | None:
    """Reject the node on its first NoSchedule/NoExecute taint that no toleration matches."""
    for taint in node.spec.taints:
        if taint.effect not in FILTERED_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in spec.tolerations):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason(taint),), NAME)
    return None


def queueing_hint(event: ClusterEvent) -> bool:
    """A node added, or a node whose taints changed, may now be tolerated."""
    if event.kind != "Node":
        return False
    return event.action is Action.ADD or (event.action is Action.UPDATE
                                          and event.old.spec.taints != event.new.spec.taints)
