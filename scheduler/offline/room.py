"""Whose placement took the room of a root ``simulate`` left unschedulable, when it fits the cluster as given.

``simulate`` decides the roots one after another in queue order (partial roots, then priority, then age), each on
the cluster as the plans before it left it. A root that does not fit may well fit the cluster as given: its room
went to a root placed earlier in the same run. Its reason says what is short now (``4 nvidia.com/gpu free … 16
needed``), not that the room was there before the run. :func:`room_taken` solves each such root once more on the
snapshot taken before the first decision (``Simulation.initial``; no preemption, nothing of this run assumed), and
when it fits there, names the nodes that plan uses and the roots placed before it in this run with pods on them.

``run`` does not do this: its room is taken by binds as they happen, and each cycle's reason says what is short then,
as kube-scheduler's does. Pure: no I/O; the snapshot is read, never changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.cycle import schedule_one
from scheduler.framework.plan import Plan, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.groups.tree import GroupTree
from scheduler.model.scheduling import GroupKey


@dataclass(frozen=True, slots=True)
class RoomTaken:
    """A root left unschedulable that fits the cluster as given. ``nodes``: where its plan on the cluster as given
    puts its pods, (node, pods) by node name; ``by``: the roots placed before it in the run with pods on those
    nodes, (root, its priority), in decision order."""

    nodes: tuple[tuple[str, int], ...]
    by: tuple[tuple[GroupKey, int], ...]


def room_taken(results: Iterable[tuple[GroupTree, Plan | Unschedulable]], initial: Snapshot,
               config: SolverConfig) -> dict[GroupKey, RoomTaken]:
    """For each root of ``results`` (the run's decisions, in order: the tree as decided and its decision) decided
    Unschedulable after some root was placed — not for an error (a plan the binding refused, one not assumed), nor
    when its minimum was placed and only members above it fit nowhere: solved again alone on ``initial`` with
    ``config`` and no PostFilter;
    when that places the whole root, a :class:`RoomTaken` under its key — provided a root placed before it has pods on
    the nodes of that plan (else the room went elsewhere: a preemptor's nomination, a claim or volume decision, and
    nothing is said). One solve per such root; roots that fail on the cluster as given cost that solve and get no
    entry."""
    placed: list[tuple[GroupTree, Plan]] = []
    out: dict[GroupKey, RoomTaken] = {}
    for tree, decision in results:
        if isinstance(decision, Plan):
            placed.append((tree, decision))
            continue
        if not placed or tree.key in out or decision.code is Code.ERROR or decision.minimum is not None:
            continue
        alone = schedule_one(tree, initial, config)
        if not isinstance(alone, Plan) or not alone.placements:
            continue
        nodes = Counter(node for _, node in alone.placements)
        by = tuple((earlier.key, earlier.priority) for earlier, plan in placed
                   if any(node in nodes for _, node in plan.placements))
        if by:
            out[tree.key] = RoomTaken(tuple(sorted(nodes.items())), by)
    return out
