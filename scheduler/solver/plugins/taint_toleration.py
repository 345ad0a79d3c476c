"""TaintToleration: a node's NoSchedule / NoExecute taints must each be tolerated.

Mirrors ``plugins/tainttoleration/taint_toleration.go`` and ``v1helper.TolerationsTolerateTaint``
(v1.37): a toleration matches when its effect is empty or equal, its key is empty (only with
``Exists``, which then matches every key) or equal, and ``Exists`` ignores the value while
``Equal`` (the default) compares it. PreferNoSchedule taints do not filter; they score: a node
scores by how few PreferNoSchedule taints it has that the pod's tolerations with effect "" or
PreferNoSchedule do not tolerate (``taint_toleration.go`` ``Score``, ``DefaultNormalizeScore`` reversed),
weight 3, computed once per pod template and node table (``NodeTable.memo``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import IntArray, NodeTable, static_key
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node, Taint
from scheduler.model.pod import Pod, PodSpec, Toleration

NAME = "TaintToleration"
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
PREFER_NO_SCHEDULE = "PreferNoSchedule"
WEIGHT = 3
"""Score weight in the default profile (apis/config/v1/default_plugins.go)."""


def reason(taint: Taint) -> str:
    """``node(s) had untolerated taint {key: value}`` (taint_toleration.go, v1.37 wording)."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint (``Toleration.ToleratesTaint``). ``Gt`` / ``Lt`` (KEP-5471, gate
    ``TaintTolerationComparisonOperators``: the API server accepts them only with it on) compare the taint's value
    with the toleration's as 64-bit decimal integers written canonically (``0`` or ``-?[1-9][0-9]*``:
    ``content.IsDecimalInteger``): ``Gt`` tolerates a taint whose value is greater, ``Lt`` one whose value is less;
    a value that is not such an integer tolerates nothing (``compareNumericValues``)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key != taint.key and not (toleration.key == "" and toleration.operator == "Exists"):
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in COMPARISONS:
        mine, theirs = _int64(toleration.value), _int64(taint.value)
        if mine is None or theirs is None:
            return False
        return theirs > mine if toleration.operator == "Gt" else theirs < mine
    return toleration.operator in ("Equal", "") and toleration.value == taint.value


COMPARISONS = ("Gt", "Lt")
_INT64 = re.compile(r"0|-?[1-9][0-9]*")


def _int64(text: str) -> int | None:
    """``text`` as a canonical decimal integer that fits 64 bits (no sign but ``-``, no leading zero, not ``-0``),
    or None."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


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


def intolerable_preferred(table: NodeTable, spec: PodSpec) -> IntArray:
    """Per node, its PreferNoSchedule taints that no toleration with effect "" or PreferNoSchedule tolerates
    (memoised per static key; all zero without such taints in the table)."""
    def compute() -> IntArray:
        tolerations = [t for t in spec.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
        out = np.zeros(len(table), dtype=np.int64)
        for i, node in enumerate(table.nodes):
            out[i] = sum(1 for taint in node.spec.taints if taint.effect == PREFER_NO_SCHEDULE
                         and not any(tolerates(t, taint) for t in tolerations))
        return out
    return table.memo((NAME, "prefer-no-schedule", static_key(spec)), compute)


_ANY_PREFERRED = (NAME, "any-prefer-no-schedule")


def _any_preferred(table: NodeTable) -> bool:
    def compute() -> bool:
        return any(t.effect == PREFER_NO_SCHEDULE for n in table.nodes for t in n.spec.taints)
    return table.memo(_ANY_PREFERRED, compute)


class TaintTolerationScore:
    """PreferNoSchedule taints as a Score plugin; see the module docstring."""

    name = NAME
    weight = WEIGHT

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        if not _any_preferred(state.table):
            return None
        raw = intolerable_preferred(state.table, sig.pods[0].spec)[rows]
        high = int(raw.max()) if raw.size else 0
        if high <= 0:
            return np.zeros(len(rows), dtype=np.int64)
        scores = 100 - 100 * raw // high
        return np.asarray(scores - scores.min(), dtype=np.int64)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # taints only


SCORE = TaintTolerationScore()


def score_gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether some node has a PreferNoSchedule taint."""
    return _any_preferred(snapshot.table)
