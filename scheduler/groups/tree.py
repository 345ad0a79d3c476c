"""Group trees: pods → PodGroup (leaf) → CompositePodGroup (inner nodes) → root.

Children point *up* (``spec.parentCompositePodGroupName``); this module rebuilds one
tree per root and decides, per tree, whether it can be tried now:

* **Invalid** — missing parent, a cycle, depth > 4, a malformed policy, or pods of one
  tree with different ``schedulerName`` (KEP-6012 run-time validation; kube-scheduler
  fails the whole hierarchy with SchedulerError for mixed scheduler names). Never tried.
* **Waiting** — a gang whose existing members (pending + bound) are fewer than
  ``minCount``, or a composite with fewer admissible children than ``minGroupCount``
  (kube-scheduler's GangScheduling PreEnqueue). Not tried until members appear.
* **Ready** — handed to the solver.

A tree with no pod at all (of any scheduler) is kept apart in ``Forest.empty``: it may be
another scheduler's group whose pods are not created yet, so the live scheduler ignores it;
``simulate`` reports it as Waiting.

One bad tree never affects another: every problem is recorded on the tree (and pods
naming a PodGroup that does not exist are reported on their own), the rest is built.
This module does no I/O and imports no Kubernetes client.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from scheduler.model.pod import Pod
from scheduler.model.scheduling import (
    CompositePodGroup,
    PodGroup,
    PriorityClass,
    policy_error,
    topology_key,
)

MAX_DEPTH = 4
"""Deepest allowed tree, counting the root as 1 (Workload template depth limit, KEP-6012)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Node = tuple[str, tuple[str, str]]
"""A group object during assembly: ``(kind, (namespace, name))``."""


class GroupKey(NamedTuple):
    """Identity of a schedulable unit: ``kind`` is PodGroup, CompositePodGroup or Pod."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


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
    ``gated`` counts members held by ``schedulingGates``.
    """

    key: GroupKey
    min_count: int | None
    topology_key: str | None
    pending: tuple[Pod, ...]
    bound: tuple[Pod, ...] = ()
    gated: int = 0
    created: datetime = _EPOCH

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


@dataclass(frozen=True, slots=True)
class OrphanPod:
    """A pod of ours whose ``schedulingGroup`` names a PodGroup that does not exist (yet)."""

    pod: Pod
    message: str


@dataclass(slots=True)
class Forest:
    """The result of :func:`build_trees`: trees of ours, plus pods waiting for their group."""

    trees: list[GroupTree] = field(default_factory=list)
    orphans: list[OrphanPod] = field(default_factory=list)
    empty: list[GroupTree] = field(default_factory=list)
    """Trees with no pod at all (of any scheduler), Waiting or Invalid. Not in ``trees``: an
    empty group may be another scheduler's, so the live scheduler leaves it alone; ``simulate``
    reports them, since a snapshot is usually of one's own groups."""


def _created(meta_ts: datetime | None) -> datetime:
    return meta_ts or _EPOCH


class _Builder:
    """One pass of tree assembly; see :func:`build_trees`."""

    def __init__(
        self,
        pods: Iterable[Pod],
        podgroups: Iterable[PodGroup],
        composites: Iterable[CompositePodGroup],
        priority_classes: Iterable[PriorityClass],
        scheduler_name: str,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.pgs = {(g.metadata.namespace, g.metadata.name): g for g in podgroups}
        self.cpgs = {(g.metadata.namespace, g.metadata.name): g for g in composites}
        classes = list(priority_classes)
        self.class_value = {c.metadata.name: c.value for c in classes}
        self.default_priority = next((c.value for c in classes if c.global_default), 0)
        self.members: dict[tuple[str, str], list[Pod]] = {}
        self.singles: list[Pod] = []
        self.orphans: list[OrphanPod] = []
        for pod in pods:
            if pod.is_terminal or pod.is_terminating:
                continue  # a pod being deleted can neither be bound nor keep a gang alive
            group = pod.group_name
            if group is None:
                if pod.spec.scheduler_name == scheduler_name and not pod.is_bound and not pod.is_gated:
                    self.singles.append(pod)
                continue
            key = (pod.metadata.namespace, group)
            if key in self.pgs:
                self.members.setdefault(key, []).append(pod)
            elif pod.spec.scheduler_name == scheduler_name and not pod.is_bound and not pod.is_gated:
                self.orphans.append(
                    OrphanPod(pod, f"waiting for PodGroup {pod.metadata.namespace}/{group} to appear")
                )
        self.children: dict[tuple[str, str], list[Node]] = {}
        self.empty: list[GroupTree] = []

    # -- priorities ----------------------------------------------------------------
    def pod_priority(self, pod: Pod) -> int:
        """``spec.priority``, else the value of ``priorityClassName``, else the global default."""
        if pod.spec.priority is not None:
            return pod.spec.priority
        if pod.spec.priority_class_name:
            return self.class_value.get(pod.spec.priority_class_name, self.default_priority)
        return self.default_priority

    def group_priority(self, obj: PodGroup | CompositePodGroup) -> int | None:
        if obj.spec.priority is not None:
            return obj.spec.priority
        if obj.spec.priority_class_name and obj.spec.priority_class_name in self.class_value:
            return self.class_value[obj.spec.priority_class_name]
        return None

    # -- structure -----------------------------------------------------------------
    def parent_of(self, kind: str, nk: tuple[str, str]) -> tuple[str, str] | None:
        obj: PodGroup | CompositePodGroup = self.pgs[nk] if kind == "PodGroup" else self.cpgs[nk]
        parent = obj.spec.parent_composite_pod_group_name
        return (nk[0], parent) if parent else None

    def head(self, node: Node) -> tuple[Node, str | None]:
        """Walk up from ``node`` to the group its tree hangs from, and why that tree is invalid.

        Returns ``(root, None)`` for a sound chain; ``(group, "parent … not found")`` when a parent
        is missing (the tree hangs from the last group found); ``(first member, "cycle …")`` when
        the chain loops (the lexically first group of the loop stands for it).
        """
        chain = [node]
        seen = {node}
        result: tuple[Node, str | None]
        while True:
            known = self._heads.get(chain[-1])
            if known is not None:
                result = known
                break
            kind, nk = chain[-1]
            parent = self.parent_of(kind, nk)
            if parent is None:
                result = (chain[-1], None)
                break
            if parent not in self.cpgs:
                result = (chain[-1], f"parent CompositePodGroup {parent[0]}/{parent[1]} not found")
                break
            nxt: Node = ("CompositePodGroup", parent)
            if nxt in seen:
                loop = chain[chain.index(nxt):]
                first = loop.index(min(loop))
                loop = loop[first:] + loop[:first]  # start at the lexically first group: one message per cycle
                names = " → ".join(n for _, (_, n) in [*loop, loop[0]])
                result = (loop[0], f"cycle in parentCompositePodGroupName: {names}")
                break
            chain.append(nxt)
            seen.add(nxt)
        for member in chain:  # everything on the way up hangs from the same head (memo: O(groups) overall)
            self._heads[member] = result
        return result

    def build(self) -> Forest:
        forest = Forest(orphans=self.orphans, empty=self.empty)
        nodes: list[Node] = [("PodGroup", k) for k in sorted(self.pgs)]
        nodes += [("CompositePodGroup", k) for k in sorted(self.cpgs)]
        heads: dict[Node, str | None] = {}
        self.tree_pgs: dict[Node, list[tuple[str, str]]] = {}
        self._heads: dict[Node, tuple[Node, str | None]] = {}
        """Every PodGroup under each head, however deep (membership does not depend on the depth cut)."""
        for node in nodes:
            kind, nk = node
            parent = self.parent_of(kind, nk)
            if parent is not None and parent in self.cpgs:
                self.children.setdefault(parent, []).append(node)
            head, problem = self.head(node)
            heads[head] = problem
            if kind == "PodGroup":
                self.tree_pgs.setdefault(head, []).append(nk)
        for head, problem in heads.items():
            tree = self._tree(head, invalid=problem)
            if tree is not None:
                forest.trees.append(tree)
        for pod in self.singles:
            leaf = Leaf(
                key=GroupKey("Pod", pod.metadata.namespace, pod.metadata.name),
                min_count=None,
                topology_key=None,
                pending=(pod,),
                created=_created(pod.metadata.creation_timestamp),
            )
            forest.trees.append(
                GroupTree(
                    root=leaf,
                    state=TreeState.READY,
                    priority=self.pod_priority(pod),
                    created=leaf.created,
                    groups=(leaf.key,),
                )
            )
        return forest

    def _tree(self, node: Node, invalid: str | None = None) -> GroupTree | None:
        problems: list[str] = [invalid] if invalid else []
        keys: list[GroupKey] = []
        group, depth = self._group(node, problems, keys, depth=1, path=set())
        pods = [p for nk in self.tree_pgs.get(node, []) for p in self.members.get(nk, [])]
        names = sorted({p.spec.scheduler_name for p in pods})
        if pods and self.scheduler_name not in names:
            return None  # another scheduler's tree
        if len(names) > 1:
            counts = ", ".join(f"{n} ({sum(p.spec.scheduler_name == n for p in pods)})" for n in names)
            problems.append(f"pods of one tree must share one schedulerName, found {counts}")
        if depth > MAX_DEPTH + 1:
            problems.append(f"tree depth exceeds {MAX_DEPTH} (more than {MAX_DEPTH + 1} levels)")
        elif depth > MAX_DEPTH:
            problems.append(f"tree depth {depth} exceeds {MAX_DEPTH}")
        root_obj = self.pgs[node[1]] if node[0] == "PodGroup" else self.cpgs[node[1]]
        prio = self.group_priority(root_obj)
        if prio is None:
            prio = max((self.pod_priority(p) for p in pods), default=self.default_priority)
        common = dict(root=group, priority=prio, created=group.created, groups=tuple(keys))
        if not pods:  # nobody's yet: kept apart (Forest.empty), never tried
            state = TreeState.INVALID if problems else TreeState.WAITING
            message = "; ".join(problems) if problems else _waiting_message(group)
            self.empty.append(GroupTree(state=state, message=message, **common))  # type: ignore[arg-type]
            return None
        if problems:
            return GroupTree(state=TreeState.INVALID, message="; ".join(problems), **common)  # type: ignore[arg-type]
        if not any(leaf.pending for leaf in group.leaves()):
            waiting = [leaf for leaf in group.leaves() if not leaf.admissible]
            if not waiting:
                return GroupTree(state=TreeState.SCHEDULED, **common)  # type: ignore[arg-type]
        if not group.admissible:
            return GroupTree(state=TreeState.WAITING, message=_waiting_message(group), **common)  # type: ignore[arg-type]
        return GroupTree(state=TreeState.READY, **common)  # type: ignore[arg-type]

    def _group(
        self,
        node: Node,
        problems: list[str],
        keys: list[GroupKey],
        depth: int,
        path: set[Node],
    ) -> tuple[Group, int]:
        kind, (ns, name) = node
        key = GroupKey(kind, ns, name)
        keys.append(key)
        path = path | {node}
        if kind == "PodGroup":
            pg = self.pgs[(ns, name)]
            if err := policy_error(pg.spec.scheduling_policy):
                problems.append(f"PodGroup {ns}/{name}: {err}")
            gang = pg.spec.scheduling_policy.gang
            members = self.members.get((ns, name), [])
            pending = sorted(
                (p for p in members if not p.is_bound and not p.is_gated),
                key=lambda p: (-self.pod_priority(p), _created(p.metadata.creation_timestamp), p.metadata.name),
            )
            leaf = Leaf(
                key=key,
                min_count=gang.min_count if gang is not None and gang.min_count else (None if gang is None else 1),
                topology_key=topology_key(pg.spec.scheduling_constraints),
                pending=tuple(pending),
                bound=tuple(sorted((p for p in members if p.is_bound), key=lambda p: p.metadata.name)),
                gated=sum(1 for p in members if p.is_gated and not p.is_bound),
                created=_created(pg.metadata.creation_timestamp),
            )
            return leaf, depth
        cpg = self.cpgs[(ns, name)]
        if err := policy_error(cpg.spec.scheduling_policy):
            problems.append(f"CompositePodGroup {ns}/{name}: {err}")
        kids = sorted(
            (c for c in self.children.get((ns, name), []) if c not in path),
            key=lambda c: (self._created_of(c), c[1][1]),
        )
        children: list[Group] = []
        deepest = depth
        if depth > MAX_DEPTH and kids:  # too deep already: stop reading (the tree is Invalid; bounded recursion)
            kids = []
            deepest = depth + 2
        for child in kids:
            g, d = self._group(child, problems, keys, depth + 1, path)
            children.append(g)
            deepest = max(deepest, d)
        if not self.children.get((ns, name)) and depth <= MAX_DEPTH:  # cut children are reported elsewhere
            problems.append(f"CompositePodGroup {ns}/{name} has no child groups")
        cgang = cpg.spec.scheduling_policy.gang
        comp = Composite(
            key=key,
            min_group_count=(cgang.min_group_count or 1) if cgang is not None else None,
            topology_key=topology_key(cpg.spec.scheduling_constraints),
            children=tuple(children),
            created=_created(cpg.metadata.creation_timestamp),
        )
        return comp, deepest

    def _created_of(self, node: Node) -> datetime:
        kind, nk = node
        obj: PodGroup | CompositePodGroup = self.pgs[nk] if kind == "PodGroup" else self.cpgs[nk]
        return _created(obj.metadata.creation_timestamp)


def _waiting_message(group: Group) -> str:
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
            parts.append(f"composite {g.name}: {ok}/{len(g.children)} child groups ready (minGroupCount {g.need})")
        for c in g.children:
            walk(c)

    walk(group)
    return "; ".join(parts)


def build_trees(
    pods: Iterable[Pod],
    podgroups: Iterable[PodGroup],
    composites: Iterable[CompositePodGroup],
    priority_classes: Iterable[PriorityClass] = (),
    *,
    scheduler_name: str,
) -> Forest:
    """Assemble one :class:`GroupTree` per root group of ours, plus lone pods of ours as one-pod trees.

    ``pods``: every pod known (any scheduler; bound ones count toward minCount, terminal ones
    are ignored). ``podgroups`` / ``composites``: every PodGroup / CompositePodGroup.
    ``scheduler_name``: our ``spec.schedulerName``; a tree none of whose pods is ours is left out.

    Returns a :class:`Forest`; trees carry their :class:`TreeState` and message. Never raises on
    bad input: structural problems make only the trees concerned Invalid.
    """
    return _Builder(pods, podgroups, composites, priority_classes, scheduler_name).build()
