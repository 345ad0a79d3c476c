"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter; preferred node affinity scores.

Mirrors ``plugins/nodeaffinity/node_affinity.go`` (v1.37): every nodeSelector pair must match a
label, and the required ``nodeSelectorTerms`` must match (:mod:`scheduler.framework.selectors`
has the matching rules). Score: the sum of the weights of the
``preferredDuringSchedulingIgnoredDuringExecution`` terms a node matches (terms of weight 0 or with
no requirement are left out, component-helpers ``PreferredSchedulingTerms``), normalised to 0–100 by
the best candidate node (``helper.DefaultNormalizeScore``), weight 2. It reads only labels, so it is
computed once per pod template and node table (``NodeTable.memo``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import IntArray, NodeTable, static_key
from scheduler.framework.selectors import node_selector_matches, term_matches
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node
from scheduler.model.pod import ASKS_PREFERRED_NODE_AFFINITY, Pod, PodSpec

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"  # node_affinity.go ErrReasonPod
WEIGHT = 2
"""Score weight in the default profile (apis/config/v1/default_plugins.go)."""

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


def preferred_raw(table: NodeTable, spec: PodSpec) -> IntArray:
    """Per node, the summed weights of the preferred terms it matches (memoised per static key)."""
    def compute() -> IntArray:
        affinity = spec.affinity.node_affinity if spec.affinity else None
        terms = [t for t in affinity.preferred_during_scheduling_ignored_during_execution
                 if t.weight != 0] if affinity else []
        out = np.zeros(len(table), dtype=np.int64)
        for i, node in enumerate(table.nodes):
            out[i] = sum(t.weight for t in terms if term_matches(t.preference, node))
        return out
    return table.memo((NAME, "preferred", static_key(spec)), compute)


def normalize(raw: IntArray) -> IntArray:
    """``helper.DefaultNormalizeScore(100, false, …)`` over the candidates, then shifted so the lowest is 0
    (only differences rank nodes; all equal gives all 0, so it changes no order)."""
    high = int(raw.max()) if raw.size else 0
    if high <= 0:
        return np.zeros(len(raw), dtype=np.int64)
    scores = 100 * raw // high
    return np.asarray(scores - scores.min(), dtype=np.int64)


class NodeAffinityScore:
    """Preferred node affinity as a Score plugin; see the module docstring."""

    name = NAME
    weight = WEIGHT

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        affinity = sig.pods[0].spec.affinity
        node_affinity = affinity.node_affinity if affinity else None
        if node_affinity is None or not node_affinity.preferred_during_scheduling_ignored_during_execution:
            return None
        return normalize(preferred_raw(state.table, sig.pods[0].spec)[rows])

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # labels only


SCORE = NodeAffinityScore()


def score_gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether a pending pod of the root has preferred node affinity terms."""
    return ASKS_PREFERRED_NODE_AFFINITY in asked
