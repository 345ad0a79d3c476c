"""Group trees: pods → PodGroup (leaf) → CompositePodGroup (inner nodes) → root.

Children point *up* (``spec.parentCompositePodGroupName``); this module rebuilds one
tree per root and decides, per tree, whether it can be tried now:

* **Invalid** — a cycle, depth > 4, a malformed policy, or pods of one
  tree with different ``schedulerName`` (KEP-6012 run-time validation; kube-scheduler
  fails the whole hierarchy with SchedulerError for mixed scheduler names). Never tried.
* **Waiting** — a gang whose existing members (pending + bound) are fewer than
  ``minCount``, or a composite with fewer admissible children than ``minGroupCount``
  (kube-scheduler's GangScheduling PreEnqueue), or a group whose parent CompositePodGroup does not exist
  (yet: objects are created in any order). Not tried until members or the parent appear.
* **Ready** — handed to the solver.

A tree with no pod at all (of any scheduler) is kept apart in ``Forest.empty``: it may be
another scheduler's group whose pods are not created yet, so the live scheduler ignores it;
``simulate`` reports it as Waiting.

One bad tree never affects another: every problem is recorded on the tree (and pods
naming a PodGroup that does not exist are reported on their own), the rest is built.
This module holds the tree values; :mod:`scheduler.groups.index` assembles and maintains them.
It does no I/O and imports no Kubernetes client.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scheduler.model.pod import Pod
from scheduler.model.scheduling import (
    GroupKey,
)

MAX_DEPTH = 4
"""Deepest allowed tree, counting the root as 1 (Workload template depth limit, KEP-6012)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Node = tuple[str, tuple[str, str]]
"""A group object during assembly: ``(kind, (namespace, name))``."""


class TreeState(enum.Enum):
    """Whether a tree can be tried now (see the module docstring)."""

    READY = "Ready"
    WAITING = "Waiting"
    INVALID = "Invalid"
    SCHEDULED = "Scheduled"
    """Nothing pending: every member that exists is already bound."""


@dataclass(frozen=True, slots=True)
class Leaf:
    """A PodGroup (or a lone pod of ours, ``kind`` Pod) with its members.

    ``min_count`` is the gang's ``minCount``, or None for a basic group (members are
    placed one by one, whatever fits). ``pending`` are the unbound, ungated, non-terminal
    member pods in try order (priority descending, then creation, then name — kube-scheduler's
    in-group order); ``bound`` are members already on a node (they count toward minCount);
    ``gated`` counts members held by ``schedulingGates``; ``succeeded`` counts members seen finished
    with phase Succeeded (they did their part: a gang whose members complete is not *below* minCount).
    """

    key: GroupKey
    min_count: int | None
    topology_key: str | None
    pending: tuple[Pod, ...]
    bound: tuple[Pod, ...] = ()
    gated: int = 0
    created: datetime = _EPOCH
    succeeded: int = 0

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def need(self) -> int:
        """Pods that must still be placed for the leaf to be satisfied (gang: minCount − bound; basic: 1)."""
        if self.min_count is None:
            return 1 if not self.bound else 0
        return max(0, self.min_count - len(self.bound))

    @property
    def admissible(self) -> bool:
        """Enough members exist to try: pending + bound ≥ minCount (basic: at least one pending)."""
        if self.min_count is None:
            return bool(self.pending)
        return len(self.pending) + len(self.bound) >= self.min_count

    @property
    def satisfied(self) -> bool:
        """Satisfied by members already bound (or succeeded): gang ≥ minCount, basic at least one — at least one
        either way (a ``minCount`` below 1, which the API refuses, makes an Invalid tree, never one satisfied
        without a member)."""
        if self.min_count is None:
            return bool(self.bound) or self.succeeded > 0
        return len(self.bound) + self.succeeded >= max(self.min_count, 1)

    def leaves(self) -> Iterable[Leaf]:
        yield self


@dataclass(frozen=True, slots=True)
class Composite:
    """A CompositePodGroup: ``min_group_count`` children must be satisfied together (None = basic)."""

    key: GroupKey
    min_group_count: int | None
    topology_key: str | None
    children: tuple[Leaf | Composite, ...]
    created: datetime = _EPOCH

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def need(self) -> int:
        """Children that must be satisfied (gang: minGroupCount; basic: 1)."""
        return self.min_group_count if self.min_group_count is not None else 1

    @property
    def admissible(self) -> bool:
        """At least ``need`` children are admissible (KEP-6012 PreEnqueue)."""
        return sum(c.admissible for c in self.children) >= self.need

    @property
    def satisfied(self) -> bool:
        """At least ``need`` children (and at least one) are satisfied by bound members."""
        return sum(c.satisfied for c in self.children) >= max(self.need, 1)

    def leaves(self) -> Iterable[Leaf]:
        for child in self.children:
            yield from child.leaves()


Group = Leaf | Composite


@dataclass(frozen=True, slots=True)
class GroupTree:
    """One root and everything under it, with its queue attributes and state."""

    root: Group
    state: TreeState
    message: str = ""
    priority: int = 0
    created: datetime = _EPOCH
    groups: tuple[GroupKey, ...] = ()
    """Every group in the tree (root first), for reporting."""

    @property
    def key(self) -> GroupKey:
        return self.root.key

    def pods(self) -> Iterable[Pod]:
        """Every member pod (pending and bound)."""
        for leaf in self.root.leaves():
            yield from leaf.pending
            yield from leaf.bound

    @property
    def bound_count(self) -> int:
        """Members on a node."""
        return sum(len(leaf.bound) for leaf in self.root.leaves())

    @property
    def partial(self) -> bool:
        """Some members are bound but the root is not satisfied by them: the gang holds nodes it cannot use
        yet (a bind failed, the scheduler stopped mid-plan, or a running gang lost members). Such a
        tree's intended room (:mod:`scheduler.groups.intent`) is held for it and it is tried before every other
        root."""
        return self.bound_count > 0 and not self.root.satisfied


@dataclass(frozen=True, slots=True)
class OrphanPod:
    """A pod of ours whose ``schedulingGroup`` names a PodGroup that does not exist (yet)."""

    pod: Pod
    message: str


@dataclass(frozen=True, slots=True)
class Membership:
    """A running pod's place in the groups, as preemption sees it.

    ``priority``: what the pod counts at — its tree's priority for a grouped pod (``spec.priority``,
    else ``priorityClassName``, else the highest member priority), else its own. ``unit``: the
    highest group above it (its PodGroup included) with ``disruptionMode: all``, whose running pods
    are evicted together or not at all; None: the pod is a unit of its own (``single``, the default,
    or no group). ``leaf``: its PodGroup, if any. ``min_count``: the PodGroup's ``gang.minCount`` (None
    for a basic group or no group). ``running``: running members of the PodGroup (bound, not
    terminating) when it is a single-mode gang — for the "keep gangs at or above minCount" preference;
    0 otherwise (not needed).
    """

    priority: int
    unit: GroupKey | None = None
    leaf: GroupKey | None = None
    min_count: int | None = None
    running: int = 0


@dataclass(slots=True)
class Forest:
    """Every tree of ours, plus pods waiting for their group (:func:`scheduler.groups.index.build_trees`)."""

    trees: list[GroupTree] = field(default_factory=list)
    orphans: list[OrphanPod] = field(default_factory=list)
    empty: list[GroupTree] = field(default_factory=list)
    """Trees with no pod at all (of any scheduler), Waiting or Invalid. Not in ``trees``: an
    empty group may be another scheduler's, so the live scheduler leaves it alone; ``simulate``
    reports them, since a snapshot is usually of one's own groups."""


def walk(group: Group) -> Iterator[Group]:
    """``group`` and every group under it, parents before children."""
    yield group
    if isinstance(group, Composite):
        for child in group.children:
            yield from walk(child)


def created_at(meta_ts: datetime | None) -> datetime:
    """A creation timestamp, or the epoch when the object has none (sorts first)."""
    return meta_ts or _EPOCH


def depth_problem(depth: int) -> str | None:
    """Why a tree ``depth`` levels deep (the root is 1) is Invalid, else None. A depth of
    ``MAX_DEPTH + 2`` means "cut while reading": the true depth is not known, only that it is too deep."""
    if depth > MAX_DEPTH + 1:
        return f"tree depth exceeds {MAX_DEPTH}"
    if depth > MAX_DEPTH:
        return f"tree depth {depth} exceeds {MAX_DEPTH}"
    return None


def satisfiable_without(group: Group, left_out: Collection[str]) -> bool:
    """Whether ``group`` could be satisfied without its pending pods ``left_out`` (keys): a gang by the rest of its
    pending members and those bound, a composite by enough such children."""
    if isinstance(group, Leaf):
        return group.satisfied or sum(p.key not in left_out for p in group.pending) >= group.need
    return group.satisfied or sum(satisfiable_without(c, left_out) for c in group.children) >= max(group.need, 1)


def waiting_message(group: Group) -> str:
    """Why a tree is not admissible yet, naming each short gang: ``gang workers: 3/8 pods exist``."""
    parts: list[str] = []

    def walk(g: Group) -> None:
        if isinstance(g, Leaf):
            if not g.admissible:
                have = len(g.pending) + len(g.bound)
                gated = f", {g.gated} scheduling-gated" if g.gated else ""
                if g.min_count is None:
                    parts.append(f"group {g.name}: no pending pods{gated}")
                elif g.gated:  # gated members exist but do not count: say "ready", not "exist"
                    parts.append(f"gang {g.name}: {have}/{g.min_count} pods ready{gated} (minCount {g.min_count})")
                else:
                    parts.append(f"gang {g.name}: {have}/{g.min_count} pods exist (minCount {g.min_count})")
            return
        ok = sum(c.admissible for c in g.children)
        if ok < g.need:
            exist = f"{len(g.children)} exist" if len(g.children) != 1 else "1 exists"
            if g.min_group_count is None:
                parts.append(f"composite {g.name}: no child group ready ({exist})")
            else:
                parts.append(f"composite {g.name}: {ok}/{g.need} child groups ready (minGroupCount {g.need}; {exist})")
        for c in g.children:
            walk(c)

    walk(group)
    return "; ".join(parts)


