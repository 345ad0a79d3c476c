"""Tree assembly, incremental: the trees follow pod and group changes, rebuilding only what they touch.

:class:`GroupIndex` is fed every pod, PodGroup, CompositePodGroup and PriorityClass as it changes
(``set_*``; pods as the scheduler should see them — an assumed pod already bound to its node) and
keeps one :class:`~scheduler.groups.tree.GroupTree` per root group of ours, plus the lone pods of
ours as one-pod trees and the pods waiting for a PodGroup that does not exist. :meth:`refresh`
rebuilds only the roots ("heads") that a change touched, in O(members of those trees):

* a pod change touches the tree of its PodGroup (or its lone-pod tree, or the orphans);
* a group added, removed or re-parented changes which head groups hang from: the heads are
  recomputed from the back-references (O(groups), rare) and every tree whose head or content
  changed is rebuilt;
* a PriorityClass change touches every tree (priorities resolve through classes).

Children point *up* (``spec.parentCompositePodGroupName``); a tree hangs from its *head*: the
root, or the highest group found when a parent is missing (then the tree is Invalid), or the
lexically first group of a cycle. :func:`build_trees` assembles everything at once (tests,
benchmarks) through the same code. No I/O; never raises on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from scheduler.groups.intent import intended_node, parse_intent
from scheduler.groups.tree import (
    MAX_DEPTH,
    Composite,
    Forest,
    Group,
    GroupTree,
    Leaf,
    Membership,
    OrphanPod,
    TreeState,
    created_at,
    depth_problem,
    waiting_message,
)
from scheduler.model.coscheduling import API_GROUP as COSCHEDULING_API_GROUP
from scheduler.model.coscheduling import POD_GROUP_LABEL, MemberCounts, api_group_of
from scheduler.model.pod import Pod
from scheduler.model.scheduling import (
    CompositePodGroup,
    GangPolicy,
    GroupKey,
    PodGroup,
    PriorityClass,
    policy_error,
    topology_key,
)

Name = tuple[str, str]
"""(namespace, name) of a group."""
Node = tuple[str, Name]
"""A group object during assembly: ``(kind, (namespace, name))``."""

_NO_PODS: Mapping[str, Pod] = MappingProxyType({})


def _live(pod: Pod | None) -> Pod | None:
    """The pod if it can still be bound or keep a gang alive: not terminal, not being deleted."""
    return None if pod is None or pod.is_terminal or pod.is_terminating else pod


class GroupIndex:
    """See the module docstring. ``scheduler_name``: our ``spec.schedulerName``."""

    def __init__(self, scheduler_name: str) -> None:
        self.scheduler_name = scheduler_name
        self.pgs: dict[Name, PodGroup] = {}
        self.cpgs: dict[Name, CompositePodGroup] = {}
        self.class_value: dict[str, int] = {}
        self.default_priority = 0
        self._classes: dict[str, PriorityClass] = {}
        self._members: dict[Name, dict[str, Pod]] = {}
        """Live pods by the PodGroup they name (whether or not it exists)."""
        self._pod_group: dict[str, Name] = {}
        self._succeeded: dict[Name, set[str]] = {}
        """Per PodGroup, the keys of members seen finished with phase Succeeded (kept after the pods are
        deleted, until the PodGroup is: a gang whose members complete is done, not below minCount)."""
        self._terminal: dict[Name, dict[str, Pod]] = {}
        """Per PodGroup, the member pods that exist with phase Succeeded or Failed (counted by the scheduler-plugins
        status, :meth:`member_counts`); ``_terminal_group`` says under which group each is."""
        self._terminal_group: dict[str, Name] = {}
        self._singles: dict[str, Pod] = {}
        """Lone pods of ours (no schedulingGroup), pending and not gated."""
        self._children: dict[Name, set[Node]] = {}
        self._heads: dict[Node, tuple[Node, str | None]] = {}
        self._under: dict[Node, list[Name]] = {}
        """Every PodGroup under each head, however deep (membership does not depend on the depth cut)."""
        self._structure_dirty = False
        self._dirty: set[Node] = set()
        self._dirty_orphans: set[Name] = set()
        self._dirty_singles: set[str] = set()
        self._stale: set[Node] = set()
        """Heads whose trees hold pod objects replaced by a quiet update: rebuilt, not reported."""
        self._stale_singles: set[str] = set()
        self.trees: dict[GroupKey, GroupTree] = {}
        """Trees of ours by root key: group trees and lone-pod trees."""
        self.empty: dict[GroupKey, GroupTree] = {}
        """Trees with no pod at all (see :attr:`Forest.empty`)."""
        self.orphans: dict[str, OrphanPod] = {}
        """Pods of ours naming a PodGroup that does not exist, by pod key."""
        self._tree_of_head: dict[Node, GroupKey] = {}

    # -- feeding -------------------------------------------------------------------------------
    def set_pod(self, key: str, pod: Pod | None, *, quiet: bool = False) -> None:
        """The pod of ``key`` is now ``pod`` (None: deleted). Terminal and terminating pods count as gone.

        ``quiet``: nothing a tree reads changed (a status condition): the stored object is replaced and its
        tree is rebuilt on the next refresh without being reported as changed (so it lets go of the old
        object, and the queue is not woken by the scheduler's own status writes). A pending pod's
        :attr:`~scheduler.model.pod.Pod.asks` is read here, once, rather than by the first solve.
        """
        if pod is not None and not pod.spec.node_name:
            _ = pod.asks
        if pod is not None and pod.status.phase == "Succeeded" and pod.group_name is not None:
            done = self._succeeded.setdefault((pod.metadata.namespace, pod.group_name), set())
            if key not in done:
                done.add(key)
                self._touch_group((pod.metadata.namespace, pod.group_name))
        self._set_terminal(key, pod)
        pod = _live(pod)
        if quiet and pod is not None:
            name = self._pod_group.get(key)
            if name is not None and key in self._members.get(name, _NO_PODS):
                self._members[name][key] = pod
                node: Node = ("PodGroup", name)
                known = self._heads.get(node)
                self._stale.add(known[0] if known is not None else node)
                return
            if key in self._singles:
                self._singles[key] = pod
                self._stale_singles.add(key)
                return
        old_group = self._pod_group.pop(key, None)
        if old_group is not None:
            members = self._members.get(old_group)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self._members[old_group]
            self._touch_group(old_group)
        if self._singles.pop(key, None) is not None:
            self._dirty_singles.add(key)
        if pod is None:
            return
        group = pod.group_name
        if group is None:
            if pod.spec.scheduler_name == self.scheduler_name and not pod.is_bound and not pod.is_gated:
                self._singles[key] = pod
                self._dirty_singles.add(key)
            return
        name = (pod.metadata.namespace, group)
        self._members.setdefault(name, {})[key] = pod
        self._pod_group[key] = name
        self._touch_group(name)

    def _set_terminal(self, key: str, pod: Pod | None) -> None:
        """Keep :attr:`_terminal` in step with pod ``key`` (None: deleted)."""
        old = self._terminal_group.pop(key, None)
        if old is not None:
            self._terminal[old].pop(key, None)
            if not self._terminal[old]:
                del self._terminal[old]
        if pod is not None and pod.is_terminal and pod.group_name is not None:
            name = (pod.metadata.namespace, pod.group_name)
            self._terminal.setdefault(name, {})[key] = pod
            self._terminal_group[key] = name

    def member_counts(self, namespace: str, pod_group: str) -> MemberCounts:
        """The pods naming PodGroup ``namespace/pod_group`` that exist, counted as scheduler-plugins' PodGroup
        status counts them (:class:`~scheduler.model.coscheduling.MemberCounts`): live members plus those
        finished (Succeeded / Failed) that still exist; pods being deleted are not counted. O(members)."""
        live = self._members.get((namespace, pod_group), _NO_PODS).values()
        done = self._terminal.get((namespace, pod_group), {}).values()
        return MemberCounts(pods=len(live) + len(done), bound=sum(p.is_bound for p in (*live, *done)),
                            running=sum(p.status.phase == "Running" for p in live),
                            succeeded=sum(p.status.phase == "Succeeded" for p in done),
                            failed=sum(p.status.phase == "Failed" for p in done))

    def set_podgroup(self, name: Name, pg: PodGroup | None, *, quiet: bool = False) -> None:
        """The PodGroup ``name`` is now ``pg`` (None: deleted); ``quiet``: only what trees do not read changed."""
        old = self.pgs.get(name)
        if quiet and pg is not None and old is not None:
            self.pgs[name] = pg
            return
        if pg is None:
            self.pgs.pop(name, None)
            self._succeeded.pop(name, None)
        else:
            self.pgs[name] = pg
        self._group_changed(("PodGroup", name), old, pg)
        self._dirty_orphans.add(name)

    def set_composite(self, name: Name, cpg: CompositePodGroup | None, *, quiet: bool = False) -> None:
        """The CompositePodGroup ``name`` is now ``cpg`` (None: deleted); ``quiet`` as for PodGroups."""
        old = self.cpgs.get(name)
        if quiet and cpg is not None and old is not None:
            self.cpgs[name] = cpg
            return
        if cpg is None:
            self.cpgs.pop(name, None)
        else:
            self.cpgs[name] = cpg
        self._group_changed(("CompositePodGroup", name), old, cpg)

    def set_priority_class(self, name: str, pc: PriorityClass | None) -> None:
        """A PriorityClass changed: every tree's priority may change."""
        if pc is None:
            self._classes.pop(name, None)
        else:
            self._classes[name] = pc
        self.class_value = {c.metadata.name: c.value for c in self._classes.values()}
        self.default_priority = next((c.value for c in sorted(self._classes.values(), key=lambda c: c.metadata.name)
                                      if c.global_default), 0)
        self._dirty.update(head for head, _ in self._heads.values())
        self._dirty_singles.update(self._singles)

    def _group_changed(self, node: Node, old: PodGroup | CompositePodGroup | None,
                       new: PodGroup | CompositePodGroup | None) -> None:
        old_parent = old.spec.parent_composite_pod_group_name if old is not None else None
        new_parent = new.spec.parent_composite_pod_group_name if new is not None else None
        if old is None or new is None or old_parent != new_parent:
            self._structure_dirty = True
        self._dirty.add(node)
        known = self._heads.get(node)
        if known is not None:
            self._dirty.add(known[0])

    def _touch_group(self, name: Name) -> None:
        if name in self.pgs:
            node: Node = ("PodGroup", name)
            known = self._heads.get(node)
            self._dirty.add(known[0] if known is not None else node)
        else:
            self._dirty_orphans.add(name)

    # -- refreshing ----------------------------------------------------------------------------
    def refresh(self) -> set[GroupKey]:
        """Rebuild what changed since the last call; returns the root keys whose tree appeared, changed
        or disappeared (lone-pod trees included)."""
        changed: set[GroupKey] = set()
        self._ensure_structure()
        dirty, self._dirty = self._dirty, set()
        heads = {self._heads[n][0] if n in self._heads else n for n in dirty}
        stale = {self._heads[n][0] if n in self._heads else n for n in self._stale} - heads
        self._stale = set()
        for head in (*heads, *stale):
            old_key = self._tree_of_head.pop(head, None)
            if old_key is not None:
                self.trees.pop(old_key, None)
                self.empty.pop(old_key, None)
                if head in heads:
                    changed.add(old_key)
            if head not in self._heads or self._heads[head][0] != head:
                continue  # no longer a head (the group is gone or hangs under another)
            tree, is_empty = self._tree(head, self._heads[head][1])
            if tree is None:
                continue
            (self.empty if is_empty else self.trees)[tree.key] = tree
            self._tree_of_head[head] = tree.key
            if head in heads:
                changed.add(tree.key)
        for name in self._dirty_orphans:
            self._refresh_orphans(name)
        self._dirty_orphans.clear()
        for key in self._dirty_singles | self._stale_singles:
            tree_key = _single_key(key)
            self.trees.pop(tree_key, None)
            pod = self._singles.get(key)
            if pod is not None:
                self.trees[tree_key] = self._single(pod)
            if key in self._dirty_singles:
                changed.add(tree_key)
        self._stale_singles.clear()
        self._dirty_singles.clear()
        return changed

    def _ensure_structure(self) -> None:
        """Rebuild the children lists and heads if groups were added, removed or re-parented, marking every
        tree whose head changed for the next :meth:`refresh`."""
        if not self._structure_dirty:
            return
        self._structure_dirty = False
        before = dict(self._heads)
        self._rebuild_structure()
        for node in before.keys() | self._heads.keys():
            old, new = before.get(node), self._heads.get(node)
            if old != new:
                if old is not None:
                    self._dirty.add(old[0])
                if new is not None:
                    self._dirty.add(new[0])

    def forest(self) -> Forest:
        """Every tree, orphan and empty tree, in a stable order (the result of :func:`build_trees`)."""
        self.refresh()
        trees = sorted(self.trees.values(), key=lambda t: (t.key.kind != "Pod", tuple(t.key)))
        group_trees = [t for t in trees if t.key.kind != "Pod"]
        singles = [t for t in trees if t.key.kind == "Pod"]
        return Forest(trees=group_trees + singles, orphans=[self.orphans[k] for k in sorted(self.orphans)],
                      empty=sorted(self.empty.values(), key=lambda t: tuple(t.key)))

    def _refresh_orphans(self, name: Name) -> None:
        for key in [k for k, o in self.orphans.items() if (o.pod.metadata.namespace, o.pod.group_name) == name]:
            del self.orphans[key]
        if name in self.pgs:
            return
        for key, pod in self._members.get(name, _NO_PODS).items():
            if pod.spec.scheduler_name == self.scheduler_name and not pod.is_bound and not pod.is_gated:
                api = f"{COSCHEDULING_API_GROUP} " if pod.group_api == COSCHEDULING_API_GROUP else ""
                self.orphans[key] = OrphanPod(pod, f"waiting for {api}PodGroup {name[0]}/{name[1]} to appear")

    def _rebuild_structure(self) -> None:
        """Children lists and every group's head, from the back-references (O(groups))."""
        self._children = {}
        nodes: list[Node] = [("PodGroup", k) for k in sorted(self.pgs)]
        nodes += [("CompositePodGroup", k) for k in sorted(self.cpgs)]
        for node in nodes:
            parent = self._parent_of(node)
            if parent is not None and parent in self.cpgs:
                self._children.setdefault(parent, set()).add(node)
        self._heads = {}
        self._under = {}
        for node in nodes:
            head, _ = self._head(node)
            if node[0] == "PodGroup":
                self._under.setdefault(head, []).append(node[1])

    def _parent_of(self, node: Node) -> Name | None:
        kind, nk = node
        obj: PodGroup | CompositePodGroup = self.pgs[nk] if kind == "PodGroup" else self.cpgs[nk]
        parent = obj.spec.parent_composite_pod_group_name
        return (nk[0], parent) if parent else None

    def _head(self, node: Node) -> tuple[Node, str | None]:
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
            parent = self._parent_of(chain[-1])
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

    def layout_problems(self, kind: str, name: Name) -> list[str]:
        """The shape problems of the tree holding group ``(kind, name)`` as far as the groups fed so far
        show it, with the messages the scheduler reports for them: a cycle in
        ``parentCompositePodGroupName`` and a depth over :data:`~scheduler.groups.tree.MAX_DEPTH`.

        A missing parent or a CompositePodGroup with no children yet is not a problem here: at
        ``kubectl apply`` time they may simply not have been created yet (the admission webhook,
        ``scheduler.operator.validation``, asks this). ``kind``: PodGroup or CompositePodGroup, fed
        with ``set_*`` before; raises ``KeyError`` otherwise. Source: reference §4 ("depth ≤ 4, no
        cycles ... the scheduler detects bad layouts at run time").
        """
        self._ensure_structure()
        node: Node = (kind, name)
        head, invalid = self._head(node)
        problems = []
        if invalid and self._parent_of(head) in self.cpgs:  # the head of a cycle has a parent; a cut chain's has none
            problems.append(invalid)
        _, depth = self._group(head, [], [], depth=1, path=frozenset())
        if too_deep := depth_problem(depth):
            problems.append(too_deep)
        return problems

    # -- priorities ----------------------------------------------------------------------------
    def pod_priority(self, pod: Pod) -> int:
        """``spec.priority``, else the value of ``priorityClassName``, else the global default."""
        if pod.spec.priority is not None:
            return pod.spec.priority
        if pod.spec.priority_class_name:
            return self.class_value.get(pod.spec.priority_class_name, self.default_priority)
        return self.default_priority

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

        The same rule the queue orders roots by (reference §8.4: a grouped pod counts at its group's
        priority; kube-scheduler walks to the root, ``podgrouppreemption.go`` v1.37).
        """
        key, top = chain[-1]
        tree = self.trees.get(key)
        if tree is not None:
            return tree.priority
        own = self.group_priority(top)
        if own is not None:
            return own
        node: Node = (key.kind, (key.namespace, key.name))
        leaves = self._under.get(node) or ([(key.namespace, key.name)] if key.kind == "PodGroup" else [])
        return max((self.pod_priority(p) for nk in leaves for p in self._members.get(nk, _NO_PODS).values()),
                   default=self.default_priority)

    def membership(self, pod: Pod) -> Membership:
        """How a running ``pod`` (any scheduler) is grouped for preemption: the priority it counts at
        (:meth:`chain_priority`, or its own without a known PodGroup), the highest group of its chain with
        ``disruptionMode: all`` (its victim unit), its PodGroup with ``minCount`` and running members."""
        group = pod.group_name
        chain = self.chain(pod.metadata.namespace, group) if group is not None else ()
        if not chain:
            return Membership(self.pod_priority(pod))
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
            running = sum(1 for p in self.members(leaf_key.namespace, leaf_key.name).values() if p.is_bound)
        return Membership(self.chain_priority(chain), unit, leaf_key, min_count, running)

    def members(self, namespace: str, pod_group: str) -> Mapping[str, Pod]:
        """The live pods (not terminal, not being deleted) naming PodGroup ``namespace/pod_group``, by key."""
        return self._members.get((namespace, pod_group), _NO_PODS)

    def leaves_under(self, key: GroupKey) -> list[Name]:
        """The PodGroups at or under group ``key`` (a PodGroup: itself), as the groups are now; cycle-safe,
        depth-bounded like the trees. The trees themselves are rebuilt only by :meth:`refresh`."""
        if key.kind == "PodGroup":
            return [(key.namespace, key.name)]
        self._ensure_structure()
        out: list[Name] = []
        stack: list[tuple[Node, int]] = [(("CompositePodGroup", (key.namespace, key.name)), 1)]
        seen: set[Node] = set()
        while stack:
            node, depth = stack.pop()
            if node in seen or depth > MAX_DEPTH + 1:
                continue
            seen.add(node)
            if node[0] == "PodGroup":
                out.append(node[1])
                continue
            stack.extend((child, depth + 1) for child in sorted(self._children.get(node[1], ())))
        return sorted(out)

    def class_policy(self, class_name: str | None) -> str | None:
        """The ``preemptionPolicy`` of PriorityClass ``class_name``, if it exists and sets one."""
        pc = self._classes.get(class_name or "")
        return pc.preemption_policy if pc is not None else None

    def effective_priority(self, pod: Pod) -> int:
        """The priority ``pod`` counts at for preemption and nominated room: its tree's
        (:meth:`chain_priority`) when it names a known PodGroup, else its own (:meth:`pod_priority`)."""
        group = pod.group_name
        if group is not None:
            chain = self.chain(pod.metadata.namespace, group)
            if chain:
                return self.chain_priority(chain)
        return self.pod_priority(pod)

    def group_priority(self, obj: PodGroup | CompositePodGroup) -> int | None:
        """The group's ``priority``, else its ``priorityClassName``'s value, else None."""
        if obj.spec.priority is not None:
            return obj.spec.priority
        if obj.spec.priority_class_name and obj.spec.priority_class_name in self.class_value:
            return self.class_value[obj.spec.priority_class_name]
        return None

    # -- assembling one tree -------------------------------------------------------------------
    def _single(self, pod: Pod) -> GroupTree:
        leaf = Leaf(key=_single_key(pod.key), min_count=None, topology_key=None, pending=(pod,),
                    created=created_at(pod.metadata.creation_timestamp))
        return GroupTree(root=leaf, state=TreeState.READY, priority=self.pod_priority(pod), created=leaf.created,
                         groups=(leaf.key,))

    def _tree(self, node: Node, invalid: str | None) -> tuple[GroupTree | None, bool]:
        """The tree hanging from head ``node`` and whether it is empty (no pod at all), or (None, False)
        when it is another scheduler's."""
        problems: list[str] = [invalid] if invalid else []
        keys: list[GroupKey] = []
        group, depth = self._group(node, problems, keys, depth=1, path=frozenset())
        pods = [p for nk in self._under.get(node, []) for p in self._members.get(nk, _NO_PODS).values()]
        names = sorted({p.spec.scheduler_name for p in pods})
        if pods and self.scheduler_name not in names:
            return None, False  # another scheduler's tree
        if len(names) > 1:
            counts = ", ".join(f"{n} ({sum(p.spec.scheduler_name == n for p in pods)})" for n in names)
            problems.append(f"pods of one tree must share one schedulerName, found {counts}")
        if too_deep := depth_problem(depth):
            problems.append(too_deep)
        root_obj = self.pgs[node[1]] if node[0] == "PodGroup" else self.cpgs[node[1]]
        prio = self.group_priority(root_obj)
        if prio is None:
            prio = max((self.pod_priority(p) for p in pods), default=self.default_priority)

        def tree(state: TreeState, message: str = "") -> GroupTree:
            return GroupTree(root=group, state=state, message=message, priority=prio, created=group.created,
                             groups=tuple(keys))

        if not pods:  # nobody's yet: kept apart (Forest.empty), never tried
            if problems:
                return tree(TreeState.INVALID, "; ".join(problems)), True
            return tree(TreeState.WAITING, waiting_message(group)), True
        if problems:
            return tree(TreeState.INVALID, "; ".join(problems)), False
        if not any(leaf.pending for leaf in group.leaves()) and all(leaf.admissible for leaf in group.leaves()):
            return tree(TreeState.SCHEDULED), False
        if not group.admissible:
            return tree(TreeState.WAITING, waiting_message(group)), False
        return tree(TreeState.READY), False

    def _group(self, node: Node, problems: list[str], keys: list[GroupKey], depth: int,
               path: frozenset[Node]) -> tuple[Group, int]:
        kind, (ns, name) = node
        key = GroupKey(kind, ns, name)
        keys.append(key)
        path = path | {node}
        if kind == "PodGroup":
            pg = self.pgs[(ns, name)]
            if err := policy_error(pg.spec.scheduling_policy):
                problems.append(f"PodGroup {ns}/{name}: {err}")
            gang = pg.spec.scheduling_policy.gang
            by_key = self._members.get((ns, name), _NO_PODS)
            members = by_key.values()
            if err := _link_error(ns, name, pg, members):
                problems.append(err)
            pending = sorted(
                (p for p in members if not p.is_bound and not p.is_gated),
                key=lambda p: (-self.pod_priority(p), created_at(p.metadata.creation_timestamp), p.metadata.name),
            )
            intent = parse_intent(pg)
            intended = tuple((p.key, n) for p in pending if (n := intended_node(intent, p)) is not None) \
                if intent else ()
            leaf = Leaf(
                key=key,
                min_count=gang.min_count if gang is not None and gang.min_count else (None if gang is None else 1),
                topology_key=topology_key(pg.spec.scheduling_constraints),
                pending=tuple(pending),
                bound=tuple(sorted((p for p in members if p.is_bound), key=lambda p: p.metadata.name)),
                gated=sum(1 for p in members if p.is_gated and not p.is_bound),
                created=created_at(pg.metadata.creation_timestamp),
                succeeded=sum(1 for k in self._succeeded.get((ns, name), ()) if k not in by_key),
                intended=intended,
            )
            return leaf, depth
        cpg = self.cpgs[(ns, name)]
        if err := policy_error(cpg.spec.scheduling_policy):
            problems.append(f"CompositePodGroup {ns}/{name}: {err}")
        kids = sorted(
            (c for c in self._children.get((ns, name), ()) if c not in path),
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
        if not self._children.get((ns, name)) and depth <= MAX_DEPTH:  # cut children are reported elsewhere
            problems.append(f"CompositePodGroup {ns}/{name} has no child groups")
        cgang = cpg.spec.scheduling_policy.gang
        comp = Composite(
            key=key,
            min_group_count=(cgang.min_group_count or 1) if cgang is not None else None,
            topology_key=topology_key(cpg.spec.scheduling_constraints),
            children=tuple(children),
            created=created_at(cpg.metadata.creation_timestamp),
        )
        return comp, deepest

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


def _single_key(pod_key: str) -> GroupKey:
    ns, _, name = pod_key.partition("/")
    return GroupKey("Pod", ns, name)


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
    index = GroupIndex(scheduler_name)
    for pc in priority_classes:
        index.set_priority_class(pc.metadata.name, pc)
    for pg in podgroups:
        index.set_podgroup((pg.metadata.namespace, pg.metadata.name), pg)
    for cpg in composites:
        index.set_composite((cpg.metadata.namespace, cpg.metadata.name), cpg)
    for pod in pods:
        index.set_pod(pod.key, pod)
    return index.forest()
