"""NominatedNode: a preemptor's pods are tried first on the nodes preemption nominated them for.

kube-scheduler evaluates a pod's ``status.nominatedNodeName`` before any other node
(``schedule_one.go`` ``findNodesThatFitPod`` → ``evaluateNominatedNode``): the victims were chosen so
that the pod fits *there*, and the search elsewhere need not find the same answer. For a gang this
matters more: preemption proves that the tree fits once the victims are gone with one particular
plan (:func:`~scheduler.solver.search.placements_hold`), while our search is heuristic and may, on
the same nodes, place the pods in another order and miss it — and then preempt again. So
:func:`~scheduler.cycle.schedule_one` first solves a root whose pending pods carry nominations with
:data:`~scheduler.solver.plugins.NOMINATED_FIRST`, a profile whose extra PreFilter pins each
nominated pod to its node (pods without a nomination are free). That plan is taken when it places every
pending pod; otherwise the ordinary search decides, and the pinned plan wins only if it places more
pods — a stale nomination (the node gone, its room taken) must not leave out a pod that fits elsewhere,
as kube falls back to the full search for each pod whose nominated node does not fit.

Not a Filter of the ordinary profile: a nomination is a hint, never a constraint (kube lets a pod go
elsewhere when its nominated node no longer fits).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import BoolArray
from scheduler.model.pod import Pod

NAME = "NominatedNode"


def nominated(pods: Iterable[Pod]) -> bool:
    """Whether some pod of ``pods`` has a ``status.nominatedNodeName``."""
    return any(p.status.nominated_node_name for p in pods)


class NominatedNode:
    """PreFilter pinning a signature to its pods' nominated node (see the module docstring)."""

    name = NAME

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        return pod.status.nominated_node_name or None  # pods nominated elsewhere never share a signature

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        node = sig.pods[0].status.nominated_node_name
        if not node:
            return None
        mask = np.zeros(len(state.table), dtype=bool)
        row = state.table.index.get(node)
        if row is not None:  # a node gone: no row, and the pinned attempt fails over to the ordinary search
            mask[row] = True
        return mask


PLUGIN = NominatedNode()
