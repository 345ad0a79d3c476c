"""Whose placement took the room of a root ``simulate`` left unschedulable, when it fits the cluster as given.

``simulate`` decides the roots one after another in queue order (partial roots, then priority, then age), each on
the cluster as the plans before it left it. A root that does not fit may well fit the cluster as given: its room
went to a root placed earlier in the same run. Its reason says what is short now (``4 nvidia.com/gpu free … 16
needed``), not that the room was there before the run. :func:`room_taken` solves each such root once more on the
snapshot taken before the first decision (``Simulation.initial``; no preemption, nothing of this run assumed), and
when it fits there, names the nodes that plan uses and the roots placed before it in this run with pods on them —
once it is checked that they took its room: with every root placed before it assumed on the cluster as given (the
pods a preemption of the run evicted left out) it does not fit, with every other one but those it does. Else the
room went elsewhere (pods of another root that repel its pods, a claim decided before, a nomination) and nothing is
said.

``run`` does not do this: its room is taken by binds as they happen, and each cycle's reason says what is short then,
as kube-scheduler's does. Pure: no I/O; the snapshot is read, never changed.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.cycle import schedule_one
from scheduler.framework.plan import Decision, Plan, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot, bound_copy
from scheduler.framework.status import Code
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey


@dataclass(frozen=True, slots=True)
class RoomTaken:
    """A root left unschedulable that fits the cluster as given. ``nodes``: where its plan on the cluster as given
    puts its pods, (node, pods) by node name; ``by``: the roots placed before it in the run with pods on those
    nodes, (root, its priority), in decision order."""

    nodes: tuple[tuple[str, int], ...]
    by: tuple[tuple[GroupKey, int], ...]


def room_taken(results: Iterable[tuple[GroupTree, Plan | Unschedulable]], initial: Snapshot,
               config: SolverConfig, evictions: Iterable[tuple[GroupKey, Iterable[Pod]]] = ()
               ) -> dict[GroupKey, RoomTaken]:
    """For each root of ``results`` (the run's decisions, in order: the tree as decided and its decision) decided
    Unschedulable after some root was placed — not for an error (a plan the binding refused, one not assumed), nor
    when its minimum was placed and only members above it fit nowhere: solved again alone on ``initial`` with
    ``config`` and no PostFilter; when that plan satisfies the root (a basic group's overflow, members above
    ``minCount`` may be left out: ``nodes`` counts the pods it places), a :class:`RoomTaken` under its key —
    provided roots placed before it still have pods on the nodes of that plan (the takers), it does not fit
    ``initial`` with every root placed before it assumed, and it fits with all but the takers (else the room went
    elsewhere — pods of another root that repel its pods, a preemptor's nomination, a claim or volume decision — and
    nothing is said). ``evictions``: (preemptor, the pods its preemption evicted), in the run's order; they are gone
    from the run once the preemptor is decided. One solve per such root, three when it has takers; roots that fail
    on the cluster as given cost that solve and get no entry."""
    victims: dict[GroupKey, list[Pod]] = {}
    for root, pods in evictions:
        victims.setdefault(root, []).extend(pods)
    run = _Run(initial)
    out: dict[GroupKey, RoomTaken] = {}
    for tree, decision in results:
        run.evict(victims.pop(tree.key, ()))
        if isinstance(decision, Plan):
            run.place(tree, decision)
            continue
        if not run.placed or tree.key in out or decision.code is Code.ERROR or decision.minimum is not None:
            continue
        alone = schedule_one(tree, initial, config)
        if not _fits(alone):
            continue
        assert isinstance(alone, Plan)
        nodes = Counter(node for _, node in alone.placements)
        takers = [(earlier, plan) for earlier, plan in run.placed
                  if any(node in nodes and pod.key not in run.evicted for pod, node in plan.placements)]
        if (not takers or _fits(schedule_one(tree, run.now, config))
                or not _fits(schedule_one(tree, run.without({e.key for e, _ in takers}), config))):
            continue  # no takers; or the plans before it leave it room (a nomination took it, or the bound pods of
            # a plan whose binding failed); or it fits no better without the takers
        out[tree.key] = RoomTaken(tuple(sorted(nodes.items())),
                                  tuple((earlier.key, earlier.priority) for earlier, _ in takers))
    return out


def _fits(decision: Decision) -> bool:
    return isinstance(decision, Plan) and bool(decision.placements)


class _Run:
    """The cluster as given with the run's plans so far assumed and its evictions so far applied, each once, in
    order (:meth:`place`, :meth:`evict`): :attr:`now`; :meth:`without` some roots' plans is what the run would have
    left had they not been placed (without the nominations and claims it holds besides). ``now`` starts as a copy of
    ``base`` that indexes its own pods, so ``Snapshot.assume`` moving that index on in place never touches
    ``base``'s."""

    def __init__(self, base: Snapshot) -> None:
        self.base = base
        self.now = dataclasses.replace(base, index_view=None)
        self.placed: list[tuple[GroupTree, Plan]] = []
        self.evicted: set[str] = set()

    def place(self, tree: GroupTree, plan: Plan) -> None:
        self.placed.append((tree, plan))
        self.now = self.now.assume(plan.placements, plan.device_uses, plan.volumes)

    def evict(self, pods: Iterable[Pod]) -> None:
        gone = [pod for pod in pods if pod.key not in self.evicted]
        if gone:
            self.evicted.update(pod.key for pod in gone)
            self.now = self.now.without(gone)

    def without(self, roots: set[GroupKey]) -> Snapshot:
        """The run so far without the plans of ``roots``: their pods gone from the nodes, and only the other plans'
        devices and volume decisions taken."""
        gone = [(pod, node) for earlier, plan in self.placed if earlier.key in roots
                for pod, node in plan.placements if pod.key not in self.evicted]
        snap = self.now.without(bound_copy(pod, node) for pod, node in gone)
        theirs = [plan for earlier, plan in self.placed if earlier.key in roots]
        others = [plan for earlier, plan in self.placed if earlier.key not in roots]
        dra, volumes = snap.dra, snap.volumes  # Snapshot.without keeps them: made again if they decided any
        if dra is not None and self.base.dra is not None and any(plan.allocations for plan in theirs):
            dra = self.base.dra.with_allocated(u for plan in others for u in plan.device_uses)
        if volumes is not None and self.base.volumes is not None and any(plan.volumes for plan in theirs):
            kept = [(pod, node) for plan in others for pod, node in plan.placements if pod.key not in self.evicted]
            volumes = self.base.volumes.with_assumed(kept, [b for plan in others for b in plan.volumes])
        return dataclasses.replace(snap, dra=dra, volumes=volumes)  # index_view: the branch ``without`` made
