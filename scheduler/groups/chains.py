"""A group's chain of ancestors, and what it gives a running pod for preemption: the priority it counts at and
its victim unit.

The walk follows ``parentCompositePodGroupName`` from a PodGroup to the root (kube-scheduler's priority walk,
bounded by ``WorkloadMaxTreeDepth``); a grouped pod counts at its tree's priority
(``podgrouppreemption.go`` v1.37), and the highest group of its chain with ``disruptionMode: all`` is evicted as
one unit. Reads the groups as they are now (no refresh needed). No I/O.
"""

from __future__ import annotations

from scheduler.groups.members import NO_PODS, Members
from scheduler.groups.priority import PriorityClasses
from scheduler.groups.structure import Name, Node, Structure
from scheduler.groups.tree import MAX_DEPTH, GroupTree, Membership
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, GangPolicy, GroupKey, PodGroup


class GroupChains:
    """Chains and memberships over the index's groups (``pgs``, ``cpgs``), trees, members, structure and priority
    classes, as they are when asked (see the module docstring)."""

    def __init__(self, pgs: dict[Name, PodGroup], cpgs: dict[Name, CompositePodGroup], trees: dict[GroupKey, GroupTree],
                 members: Members, structure: Structure, priorities: PriorityClasses) -> None:
        self.pgs = pgs
        self.cpgs = cpgs
        self.trees = trees
        self.members = members
        self.structure = structure
        self.priorities = priorities
        self._memberships: dict[tuple[str, str], Membership] = {}
        """:meth:`membership` of a grouped pod by (namespace, PodGroup) until :meth:`forget`: what it reads is the
        same for every member, and a preemption that finds no victim reads every running group's once."""
        self.generation = 0
        """Counts the :meth:`forget` calls: every membership's priority and unit read at one generation hold while
        it stays the same (a PodGroup's running members may change: :meth:`forget_group`)."""

    def forget(self) -> None:
        """Any membership may have changed (a group, a PriorityClass, a tree's priority, the pods a group's
        priority follows): drop the memo and start a new :attr:`generation`."""
        self.generation += 1
        if self._memberships:
            self._memberships.clear()

    def forget_group(self, name: tuple[str, str]) -> None:
        """A pod of PodGroup ``name`` came, went or changed: its members' memberships are read again (their
        running count); when the priority its tree counts at follows its pods' priorities (:meth:`chain_priority`
        with neither a tree of ours nor a priority of the group's own), every membership may have changed."""
        self._memberships.pop(name, None)
        chain = self.chain(*name)
        if chain and chain[-1][0] not in self.trees and self.priorities.group_priority(chain[-1][1]) is None:
            self.forget()

    def chain(self, namespace: str, pod_group: str) -> tuple[tuple[GroupKey, PodGroup | CompositePodGroup], ...]:
        """The PodGroup ``namespace/pod_group`` and its ancestors, leaf first, as (key, object).

        The walk follows ``parentCompositePodGroupName`` up to the root; a missing parent, a cycle
        or :data:`MAX_DEPTH` + 1 levels end it at the last group found (as kube-scheduler's priority
        walk does, bounded by ``WorkloadMaxTreeDepth``). Empty when the PodGroup is unknown. Reads the
        groups as they are now (no refresh needed); O(depth).
        """
        pg = self.pgs.get((namespace, pod_group))
        if pg is None:
            return ()
        out: list[tuple[GroupKey, PodGroup | CompositePodGroup]] = [(GroupKey("PodGroup", namespace, pod_group), pg)]
        seen = {pod_group}
        parent = pg.spec.parent_composite_pod_group_name
        while parent and parent not in seen and len(out) <= MAX_DEPTH:
            cpg = self.cpgs.get((namespace, parent))
            if cpg is None:
                break
            seen.add(parent)
            out.append((GroupKey("CompositePodGroup", namespace, parent), cpg))
            parent = cpg.spec.parent_composite_pod_group_name
        return tuple(out)

    def chain_priority(self, chain: tuple[tuple[GroupKey, PodGroup | CompositePodGroup], ...]) -> int:
        """The priority every pod under the top of ``chain`` schedules and is preempted at: the tree's
        priority when the tree is ours (:class:`GroupTree.priority`), else the top group's ``priority`` /
        ``priorityClassName``, else the highest priority of the pods under it, else the default class.

        The same rule the queue orders roots by (a grouped pod counts at its group's
        priority; kube-scheduler walks to the root, ``podgrouppreemption.go`` v1.37).
        """
        key, top = chain[-1]
        tree = self.trees.get(key)
        if tree is not None:
            return tree.priority
        own = self.priorities.group_priority(top)
        if own is not None:
            return own
        node: Node = (key.kind, (key.namespace, key.name))
        leaves = self.structure.under.get(node) or ([(key.namespace, key.name)] if key.kind == "PodGroup" else [])
        live = self.members.live
        return max((self.priorities.pod_priority(p) for nk in leaves for p in live.get(nk, NO_PODS).values()),
                   default=self.priorities.default_priority)

    def membership(self, pod: Pod) -> Membership:
        """How a running ``pod`` (any scheduler) is grouped for preemption: the priority it counts at
        (:meth:`chain_priority`, or its own without a known PodGroup), the highest group of its chain with
        ``disruptionMode: all`` (its victim unit), its PodGroup with ``minCount`` and running members. Memoised per
        PodGroup until :meth:`forget`."""
        group = pod.group_name
        if group is None:
            return Membership(self.priorities.pod_priority(pod))
        name = (pod.metadata.namespace, group)
        hit = self._memberships.get(name)
        if hit is not None:
            return hit
        chain = self.chain(pod.metadata.namespace, group)
        if not chain:
            return Membership(self.priorities.pod_priority(pod))
        unit: GroupKey | None = None
        for key, obj in chain:
            mode = obj.spec.disruption_mode
            if mode is not None and mode.all is not None:
                unit = key
        leaf_key, leaf = chain[0]
        gang = leaf.spec.scheduling_policy.gang
        min_count = gang.min_count if gang is not None and isinstance(gang, GangPolicy) else None
        running = 0  # only single-mode gangs need it (which members are spare)
        if unit is None and min_count is not None:
            running = self.members.bound(leaf_key.namespace, leaf_key.name)
        found = self._memberships[name] = Membership(self.chain_priority(chain), unit, leaf_key, min_count, running)
        return found

    def effective_priority(self, pod: Pod) -> int:
        """The priority ``pod`` counts at for preemption and nominated room: its tree's
        (:meth:`chain_priority`) when it names a known PodGroup, else its own
        (:meth:`~scheduler.groups.priority.PriorityClasses.pod_priority`)."""
        group = pod.group_name
        if group is not None:
            chain = self.chain(pod.metadata.namespace, group)
            if chain:
                return self.chain_priority(chain)
        return self.priorities.pod_priority(pod)
