"""Node filters with kube-scheduler semantics: one concept per module, one explicit registry.

A filter is a pure function ``(pod, node) -> Status | None`` over the *static* properties of
a node (labels, taints, cordon, conditions): None means the node passes. Static results are
computed once per distinct pod scheduling signature and cached by the node table.
Resource fit depends on free capacity and lives in :mod:`scheduler.solver.fit`.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.model.node import Node
from scheduler.model.pod import PodSpec
from scheduler.solver.filters import node_affinity, node_lifecycle, node_unschedulable, taint_toleration
from scheduler.solver.status import Status

NodeFilter = Callable[[PodSpec, Node], Status | None]
"""Filter contract: must only read ``spec`` and ``node``; returns None (passes) or a non-success Status."""

REGISTRY: dict[str, NodeFilter] = {
    node_unschedulable.NAME: node_unschedulable.filter_node,
    node_lifecycle.NAME: node_lifecycle.filter_node,
    taint_toleration.NAME: taint_toleration.filter_node,
    node_affinity.NAME: node_affinity.filter_node,
}
"""Every static filter, run in kube's default-profile order (``apis/config/v1/default_plugins.go``:
NodeUnschedulable, …, TaintToleration, NodeAffinity; our NodeLifecycle right after the cordon
check); the first rejection is the node's reason, as kube's framework stops at the first
failing Filter plugin."""


def run_filters(spec: PodSpec, node: Node) -> Status | None:
    """Run every registered filter in order; return the first rejection, or None."""
    for check in REGISTRY.values():
        status = check(spec, node)
        if status is not None:
            return status
    return None
