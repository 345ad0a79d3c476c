"""Assembling one group tree: the groups under a head, their members, the tree's state, priority and message.

A PodGroup becomes a :class:`~scheduler.groups.tree.Leaf` (its pending members in priority, then creation order;
its bound ones), a CompositePodGroup a :class:`~scheduler.groups.tree.Composite` of its
children in creation order. The tree is Invalid for a bad policy, a cycle, a depth over
:data:`~scheduler.groups.tree.MAX_DEPTH`, a childless composite, pods of several schedulers or pods linked by the
other PodGroup API; Waiting while it is not admissible (members or groups missing) or its head's parent
CompositePodGroup does not exist; Scheduled when nothing is
pending; Ready otherwise. Past the depth limit the groups are still read (flat, without recursion), so an Invalid
tree names every group and pod under it. A tree with no pod at all is kept apart (empty); one none of whose pods
is ours is not built. The tree's priority is its head group's own, else the highest of its pods' (a grouped pod
counts at its group's priority, as kube-scheduler's ``podgrouppreemption.go`` v1.37 walks to the root). No I/O;
never raises on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.groups.members import NO_PODS, Members
from scheduler.groups.priority import PriorityClasses
from scheduler.groups.structure import Name, Node, Structure
from scheduler.groups.tree import (
    MAX_DEPTH,
    Composite,
    Group,
    GroupTree,
    Leaf,
    TreeState,
    created_at,
    depth_problem,
    waiting_message,
)
from scheduler.model.coscheduling import API_GROUP as COSCHEDULING_API_GROUP
from scheduler.model.coscheduling import POD_GROUP_LABEL, api_group_of
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup, policy_error, topology_key

NAMED_REFUSED = 3
"""How many members refused as invalid a waiting gang's message names (the rest are counted)."""


class TreeAssembler:
    """Builds trees from the index's groups (``pgs``, ``cpgs``), members, structure and priority classes, as they
    are when asked (see the module docstring). ``scheduler_name``: our ``spec.schedulerName``; ``absent`` and
    ``refused_members``: the index's (:attr:`~scheduler.groups.index.GroupIndex.absent`,
    :attr:`~scheduler.groups.index.GroupIndex.refused_members`)."""

    def __init__(self, scheduler_name: str, pgs: dict[Name, PodGroup], cpgs: dict[Name, CompositePodGroup],
                 members: Members, structure: Structure, priorities: PriorityClasses,
                 absent: dict[tuple[str, str, str], str], refused_members: dict[Name, dict[str, str]]) -> None:
        self.scheduler_name = scheduler_name
        self.pgs = pgs
        self.cpgs = cpgs
        self.members = members
        self.structure = structure
        self.priorities = priorities
        self.absent = absent
        self.refused_members = refused_members

    def single(self, pod: Pod) -> GroupTree:
        """The one-pod tree of a lone pod of ours (no schedulingGroup): always READY, at the pod's priority."""
        leaf = Leaf(key=single_key(pod.key), min_count=None, topology_key=None, pending=(pod,),
                    created=created_at(pod.metadata.creation_timestamp))
        return GroupTree(root=leaf, state=TreeState.READY, priority=self.priorities.pod_priority(pod),
                         created=leaf.created, groups=(leaf.key,))

    def tree(self, node: Node, invalid: str | None) -> tuple[GroupTree | None, bool]:
        """The tree hanging from head ``node`` and whether it is empty (no pod at all), or (None, False)
        when it is another scheduler's. A head whose parent CompositePodGroup does not exist waits for it (objects
        are created in any order, as a pod waits for its PodGroup), unless the tree is invalid for another reason."""
        parent = self.structure.parent_of(node)
        missing = (self.absent.get(("CompositePodGroup", *parent))
                   or f"waiting for CompositePodGroup {parent[0]}/{parent[1]} to appear"
                   ) if invalid and parent is not None and parent not in self.cpgs else None
        problems: list[str] = [invalid] if invalid and missing is None else []
        keys: list[GroupKey] = []
        group, depth = self.group(node, problems, keys, depth=1, path=frozenset())
        pods = [p for nk in self.structure.under.get(node, []) for p in self.members.live.get(nk, NO_PODS).values()]
        names = sorted({p.spec.scheduler_name for p in pods})
        if pods and self.scheduler_name not in names:
            return None, False  # another scheduler's tree
        if len(names) > 1:
            counts = ", ".join(f"{n} ({sum(p.spec.scheduler_name == n for p in pods)})" for n in names)
            problems.append(f"pods of one tree must share one schedulerName, found {counts}")
        if too_deep := depth_problem(depth):
            problems.append(too_deep)
        root_obj = self.pgs[node[1]] if node[0] == "PodGroup" else self.cpgs[node[1]]
        prio = self.priorities.group_priority(root_obj)
        if prio is None:
            prio = max((self.priorities.pod_priority(p) for p in pods), default=self.priorities.default_priority)

        def tree(state: TreeState, message: str = "") -> GroupTree:
            return GroupTree(root=group, state=state, message=message, priority=prio, created=group.created,
                             groups=tuple(keys))

        if not pods:  # nobody's yet: kept apart (Forest.empty), never tried
            if problems:
                return tree(TreeState.INVALID, "; ".join(problems)), True
            return tree(TreeState.WAITING, missing or self._waiting(group)), True
        if problems:
            return tree(TreeState.INVALID, "; ".join(problems)), False
        if missing:
            return tree(TreeState.WAITING, missing), False
        if not any(leaf.pending for leaf in group.leaves()) and all(leaf.admissible for leaf in group.leaves()):
            return tree(TreeState.SCHEDULED), False
        if not group.admissible:
            return tree(TreeState.WAITING, self._waiting(group)), False
        return tree(TreeState.READY), False

    def _waiting(self, group: Group) -> str:
        """:func:`~scheduler.groups.tree.waiting_message`, followed by the members refused as invalid of its gangs
        short of members (the first :data:`NAMED_REFUSED`, the rest counted): ``…; pod ml/w-0 is invalid: …``."""
        refused = [f"pod {leaf.key.namespace}/{pod} is invalid: {why}" for leaf in group.leaves() if not leaf.admissible
                   for pod, why in sorted(self.refused_members.get((leaf.key.namespace, leaf.key.name), {}).items())]
        more = [f"{len(refused) - NAMED_REFUSED} more pod(s) invalid"] if len(refused) > NAMED_REFUSED else []
        return "; ".join([waiting_message(group), *refused[:NAMED_REFUSED], *more])

    def group(self, node: Node, problems: list[str], keys: list[GroupKey], depth: int,
              path: frozenset[Node]) -> tuple[Group, int]:
        """The group of ``node`` with everything under it (appending its problems and every group key met), and
        the depth reached; ``path``: the groups above it (a cycle stops there)."""
        kind, (ns, name) = node
        key = GroupKey(kind, ns, name)
        keys.append(key)
        path = path | {node}
        if kind == "PodGroup":
            pg = self.pgs[(ns, name)]
            if err := policy_error(pg.spec.scheduling_policy):
                problems.append(f"PodGroup {ns}/{name}: {err}")
            gang = pg.spec.scheduling_policy.gang
            by_key = self.members.live.get((ns, name), NO_PODS)
            pod_priority = self.priorities.pod_priority
            members = by_key.values()
            if err := _link_error(ns, name, pg, members):
                problems.append(err)
            pending = sorted(
                (p for p in members if p.awaits_placement),
                key=lambda p: (-pod_priority(p), created_at(p.metadata.creation_timestamp), p.metadata.name),
            )
            leaf = Leaf(
                key=key,
                min_count=gang.min_count if gang is not None and gang.min_count else (None if gang is None else 1),
                topology_key=topology_key(pg.spec.scheduling_constraints),
                pending=tuple(pending),
                bound=tuple(sorted((p for p in members if p.is_bound), key=lambda p: p.metadata.name)),
                gated=sum(1 for p in members if p.is_gated and not p.is_bound),
                created=created_at(pg.metadata.creation_timestamp),
                succeeded=sum(1 for k in self.members.succeeded.get((ns, name), ()) if k not in by_key),
            )
            return leaf, depth
        cpg = self.cpgs[(ns, name)]
        if err := policy_error(cpg.spec.scheduling_policy):
            problems.append(f"CompositePodGroup {ns}/{name}: {err}")
        kids = self._kids(node, path)
        if depth > MAX_DEPTH and kids:  # too deep already: the tree is Invalid; what is below is listed, flat
            return self._composite(key, cpg, self._below(kids, problems, keys, path)), depth + 2
        children: list[Group] = []
        deepest = depth
        for child in kids:
            g, d = self.group(child, problems, keys, depth + 1, path)
            children.append(g)
            deepest = max(deepest, d)
        return self._composite(key, cpg, children), deepest  # without children yet it waits: created in any order

    def _kids(self, node: Node, path: frozenset[Node]) -> list[Node]:
        """The child groups of composite ``node`` not in ``path`` (a cycle stops there), in creation order."""
        return sorted((c for c in self.structure.children.get(node[1], ()) if c not in path),
                      key=lambda c: (self._created_of(c), c[1][1]))

    def _below(self, kids: list[Node], problems: list[str], keys: list[GroupKey], path: frozenset[Node]) -> list[Group]:
        """Every group under a composite past :data:`~scheduler.groups.tree.MAX_DEPTH`, each once, as one flat list:
        the tree is Invalid, so they are read only to be reported (their pods, their conditions), and read without
        recursion however long the chain. Their composites are listed without children."""
        out: list[Group] = []
        seen, todo = set(path), list(reversed(kids))
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            kind, (ns, name) = node
            if kind == "PodGroup":
                out.append(self.group(node, problems, keys, MAX_DEPTH + 1, frozenset())[0])
                continue
            key = GroupKey(kind, ns, name)
            keys.append(key)
            out.append(self._composite(key, self.cpgs[(ns, name)], ()))
            todo.extend(reversed(self._kids(node, frozenset(seen))))
        return out

    @staticmethod
    def _composite(key: GroupKey, cpg: CompositePodGroup, children: Iterable[Group]) -> Composite:
        cgang = cpg.spec.scheduling_policy.gang
        return Composite(
            key=key,
            min_group_count=(cgang.min_group_count or 1) if cgang is not None else None,
            topology_key=topology_key(cpg.spec.scheduling_constraints),
            children=tuple(children),
            created=created_at(cpg.metadata.creation_timestamp),
        )

    def _created_of(self, node: Node) -> object:
        kind, nk = node
        obj: PodGroup | CompositePodGroup = self.pgs[nk] if kind == "PodGroup" else self.cpgs[nk]
        return created_at(obj.metadata.creation_timestamp)


def _link_error(ns: str, name: str, pg: PodGroup, members: Iterable[Pod]) -> str | None:
    """Why pods join ``pg`` by the other API's link (``spec.schedulingGroup`` names a ``scheduling.k8s.io``
    PodGroup, the scheduler-plugins label a ``scheduling.x-k8s.io`` one; ``model/coscheduling.py``), else
    None: a group of one kind never takes the pods of a group of the other kind with the same name."""
    api = api_group_of(pg)
    other = sorted(p.metadata.name for p in members if p.group_api != api)
    if not other:
        return None
    how = "spec.schedulingGroup.podGroupName" if api == COSCHEDULING_API_GROUP else f"the label {POD_GROUP_LABEL}"
    return (f"PodGroup {ns}/{name} is a {api} PodGroup, but {len(other)} pod(s) name it by {how} (e.g. {other[0]}),"
            f" which links a PodGroup of the other API; the two kinds are never merged")


def single_key(pod_key: str) -> GroupKey:
    """The key of a lone pod's one-pod tree."""
    ns, _, name = pod_key.partition("/")
    return GroupKey("Pod", ns, name)
