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

from collections.abc import Iterable

from scheduler.groups.assembly import TreeAssembler, single_key
from scheduler.groups.chains import GroupChains
from scheduler.groups.members import NO_PODS, Members
from scheduler.groups.priority import PriorityClasses
from scheduler.groups.structure import Name, Node, Structure
from scheduler.groups.tree import Forest, GroupTree, OrphanPod, depth_problem
from scheduler.model.coscheduling import API_GROUP as COSCHEDULING_API_GROUP
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup, PriorityClass


def _live(pod: Pod | None) -> Pod | None:
    """The pod if it can still be bound or keep a gang alive: not terminal, not being deleted."""
    return None if pod is None or pod.is_terminal or pod.is_terminating else pod


class GroupIndex:
    """See the module docstring. ``scheduler_name``: our ``spec.schedulerName``.

    Holds the groups, what changed since the last :meth:`refresh` and the trees; its parts hold the rest:
    :attr:`members` (pods by the PodGroup they name, :mod:`~scheduler.groups.members`), :attr:`structure`
    (children and heads, :mod:`~scheduler.groups.structure`), :attr:`priorities` (PriorityClasses,
    :mod:`~scheduler.groups.priority`), :attr:`assembler` (one tree from those, :mod:`~scheduler.groups.assembly`)
    and :attr:`chains` (a group's ancestors and a running pod's membership for preemption,
    :mod:`~scheduler.groups.chains`).
    """

    def __init__(self, scheduler_name: str) -> None:
        self.scheduler_name = scheduler_name
        self.pgs: dict[Name, PodGroup] = {}
        self.cpgs: dict[Name, CompositePodGroup] = {}
        self.members = Members()
        self.priorities = PriorityClasses()
        self.structure = Structure(self.pgs, self.cpgs)
        self._singles: dict[str, Pod] = {}
        """Lone pods of ours (no schedulingGroup), pending and not gated."""
        self._dirty: set[Node] = set()
        self._dirty_orphans: set[Name] = set()
        self._dirty_singles: set[str] = set()
        self._stale: set[Node] = set()
        """Heads whose trees hold pod objects replaced by a quiet update: rebuilt, not reported."""
        self._stale_singles: set[str] = set()
        self.unread_apis: dict[str, str] = {}
        """PodGroup API group → why its PodGroups are not read (``run``: not served yet, :meth:`set_unread_apis`),
        told to the pods that link to one of its PodGroups instead of "waiting for it to appear"."""
        self.absent: dict[tuple[str, str, str], str] = {}
        """``(kind, namespace, name)`` → why that PodGroup or CompositePodGroup is not there although it was given
        (``simulate``: refused as invalid, or of an API version not read, set before the groups are fed; ``run``:
        refused as invalid, :meth:`set_absent`), told to the pods and groups that wait for it instead of "waiting
        for it to appear"."""
        self.quiet: set[GroupKey] = set()
        """Roots whose trees were rebuilt by quiet updates only (not reported as changed), until a caller takes them
        (:meth:`~scheduler.cache.cluster.ClusterCache.take_quiet_roots`): what holds such a root's old tree takes
        the new one, so the replaced pod objects are let go."""
        self.rebuilt: set[GroupKey] = set()
        """Roots whose trees the last :meth:`refresh` rebuilt, changed or quietly (what derives from a tree's pod
        objects, such as the room a partial tree holds, is read again from them)."""
        self.trees: dict[GroupKey, GroupTree] = {}
        """Trees of ours by root key: group trees and lone-pod trees."""
        self.empty: dict[GroupKey, GroupTree] = {}
        """Trees with no pod at all (see :attr:`Forest.empty`)."""
        self.orphans: dict[str, OrphanPod] = {}
        """Pods of ours naming a PodGroup that does not exist, by pod key."""
        self._orphans_of: dict[Name, list[str]] = {}
        """The keys in :attr:`orphans` by the PodGroup they wait for."""
        self._tree_of_head: dict[Node, GroupKey] = {}
        self.refused_members: dict[Name, dict[str, str]] = {}
        """PodGroup → the pods naming it that were refused as invalid (pod name → why): a gang short of members says
        which were refused, not only how many exist (``simulate``: set before the pods are fed; ``run``:
        :meth:`set_refused_member`)."""
        self.assembler = TreeAssembler(scheduler_name, self.pgs, self.cpgs, self.members, self.structure,
                                       self.priorities, self.absent, self.refused_members)
        self.chains = GroupChains(self.pgs, self.cpgs, self.trees, self.members, self.structure, self.priorities)

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
        succeeded = self.members.finished(key, pod)
        if succeeded is not None:
            self._touch_group(succeeded)
        pod = _live(pod)
        if quiet and pod is not None:
            name = self.members.replace(key, pod)
            if name is not None:
                node: Node = ("PodGroup", name)
                self._stale.add(self.structure.head_of(node) or node)
                return
            if key in self._singles:
                self._singles[key] = pod
                self._stale_singles.add(key)
                return
        old_group = self.members.remove(key)
        if old_group is not None:
            self._touch_group(old_group)
        if self._singles.pop(key, None) is not None:
            self._dirty_singles.add(key)
        if pod is None:
            return
        group = pod.group_name
        if group is None:
            if pod.spec.scheduler_name == self.scheduler_name and pod.awaits_placement:
                self._singles[key] = pod
                self._dirty_singles.add(key)
            return
        name = (pod.metadata.namespace, group)
        self.members.add(name, key, pod)
        self._touch_group(name)

    def set_podgroup(self, name: Name, pg: PodGroup | None, *, quiet: bool = False) -> None:
        """The PodGroup ``name`` is now ``pg`` (None: deleted); ``quiet``: only what trees do not read changed."""
        old = self.pgs.get(name)
        if quiet and pg is not None and old is not None:
            self.pgs[name] = pg
            return
        self.chains.forget()
        if pg is None:
            self.pgs.pop(name, None)
            self.members.group_deleted(name)
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
        self.chains.forget()
        if cpg is None:
            self.cpgs.pop(name, None)
        else:
            self.cpgs[name] = cpg
        self._group_changed(("CompositePodGroup", name), old, cpg)

    def set_absent(self, kind: str, name: Name, why: str | None) -> None:
        """Why the PodGroup or CompositePodGroup ``name`` (``kind``) is not there although it exists — refused as
        invalid — or None when that no longer holds (:attr:`absent`; the cache says when: the group stored, deleted,
        or listed again without it): what waits for it is judged again on the next :meth:`refresh`."""
        key = (kind, *name)
        if self.absent.get(key) == why:
            return
        if why is None:
            del self.absent[key]
        else:
            self.absent[key] = why
        if kind == "PodGroup":
            self._dirty_orphans.add(name)
        else:  # the heads that name it as their parent (rare: every head is looked at again)
            self._dirty.update(head for head, _ in self.structure.heads.values())

    def set_refused_member(self, group: Name, pod: str, why: str | None) -> None:
        """Pod ``pod`` (a name) naming PodGroup ``group`` was refused as invalid (``why``), or no longer is (None: it
        was stored or deleted): the group's tree is judged again (:attr:`refused_members`)."""
        refused = self.refused_members.get(group, {})
        if refused.get(pod) == why:
            return
        if why is None:
            del refused[pod]
            if not refused:
                del self.refused_members[group]
        else:
            self.refused_members.setdefault(group, {})[pod] = why
        self._touch_group(group)

    def set_unread_apis(self, apis: dict[str, str]) -> None:
        """The PodGroup APIs not read now, and why (:attr:`unread_apis`): the pods waiting for a group are judged
        again on the next :meth:`refresh`, so an API read from now on is no longer given as their reason."""
        if apis != self.unread_apis:
            self.unread_apis = apis
            self._dirty_orphans.update(self._orphans_of)

    def set_priority_class(self, name: str, pc: PriorityClass | None) -> None:
        """A PriorityClass changed: every tree's priority may change."""
        self.priorities.set(name, pc)
        self.chains.forget()
        self._dirty.update(head for head, _ in self.structure.heads.values())
        self._dirty_singles.update(self._singles)

    def _group_changed(self, node: Node, old: PodGroup | CompositePodGroup | None,
                       new: PodGroup | CompositePodGroup | None) -> None:
        old_parent = old.spec.parent_composite_pod_group_name if old is not None else None
        new_parent = new.spec.parent_composite_pod_group_name if new is not None else None
        if old is None or new is None or old_parent != new_parent:
            self.structure.dirty = True
        self._dirty.add(node)
        head = self.structure.head_of(node)
        if head is not None:
            self._dirty.add(head)

    def _touch_group(self, name: Name) -> None:
        """A pod of PodGroup ``name`` came, went or changed: its tree (or its orphans) is rebuilt, and what
        preemption remembers of its members is forgotten (:meth:`~scheduler.groups.chains.GroupChains.forget_group`)."""
        self.chains.forget_group(name)
        if name in self.pgs:
            node: Node = ("PodGroup", name)
            self._dirty.add(self.structure.head_of(node) or node)
        else:
            self._dirty_orphans.add(name)

    # -- refreshing ----------------------------------------------------------------------------
    def refresh(self) -> set[GroupKey]:
        """Rebuild what changed since the last call; returns the root keys whose tree appeared, changed
        or disappeared (lone-pod trees included); :attr:`rebuilt` names them and those rebuilt quietly."""
        changed: set[GroupKey] = set()
        quietly: set[GroupKey] = set()
        self.structure.ensure()
        self._dirty |= self.structure.take_changed()
        dirty, self._dirty = self._dirty, set()
        known = self.structure.heads
        heads = {known[n][0] if n in known else n for n in dirty}
        heads |= {n for n in dirty if n in self._tree_of_head}  # a head no longer (now under a parent): its tree goes
        stale = {known[n][0] if n in known else n for n in self._stale} - heads
        self._stale = set()
        gone: dict[GroupKey, int] = {}  # the priorities of the trees rebuilt, before and after
        came: dict[GroupKey, int] = {}
        for head in (*heads, *stale):
            old_key = self._tree_of_head.pop(head, None)
            if old_key is not None:
                old = self.trees.pop(old_key, None)
                if old is not None:
                    gone[old_key] = old.priority
                self.empty.pop(old_key, None)
                if head in heads:
                    changed.add(old_key)
            if head not in known or known[head][0] != head:
                continue  # no longer a head (the group is gone or hangs under another)
            tree, is_empty = self.assembler.tree(head, known[head][1])
            if tree is None:
                continue
            (self.empty if is_empty else self.trees)[tree.key] = tree
            if not is_empty:
                came[tree.key] = tree.priority
            self._tree_of_head[head] = tree.key
            if head in heads:
                changed.add(tree.key)
            elif not is_empty:
                quietly.add(tree.key)
        if gone != came:  # the priority a group's pods count at (GroupChains.chain_priority) changed
            self.chains.forget()
        # Every dirty group's orphans are dropped before any is judged again: a pod that moved from one
        # waiting group to another is then kept under its new group only.
        for name in self._dirty_orphans:
            for key in self._orphans_of.pop(name, ()):
                self.orphans.pop(key, None)
        for name in self._dirty_orphans:
            self._add_orphans(name)
        self._dirty_orphans.clear()
        for key in self._dirty_singles | self._stale_singles:
            tree_key = single_key(key)
            self.trees.pop(tree_key, None)
            pod = self._singles.get(key)
            if pod is not None:
                self.trees[tree_key] = self.assembler.single(pod)
            if key in self._dirty_singles:
                changed.add(tree_key)
            elif pod is not None:
                quietly.add(tree_key)
        self._stale_singles.clear()
        self._dirty_singles.clear()
        self.quiet |= quietly
        self.rebuilt = changed | quietly
        return changed

    def forest(self) -> Forest:
        """Every tree, orphan and empty tree, in a stable order (the result of :func:`build_trees`)."""
        self.refresh()
        trees = sorted(self.trees.values(), key=lambda t: (t.key.kind != "Pod", tuple(t.key)))
        group_trees = [t for t in trees if t.key.kind != "Pod"]
        singles = [t for t in trees if t.key.kind == "Pod"]
        return Forest(trees=group_trees + singles, orphans=[self.orphans[k] for k in sorted(self.orphans)],
                      empty=sorted(self.empty.values(), key=lambda t: tuple(t.key)))

    def _add_orphans(self, name: Name) -> None:
        """The pods waiting for PodGroup ``name`` (not yet read) kept as its orphans: O(its members), not
        O(every orphan). Its previous orphans were dropped first (:meth:`refresh`)."""
        if name in self.pgs:
            return
        keys = []
        for key, pod in self.members.live.get(name, NO_PODS).items():
            if pod.spec.scheduler_name == self.scheduler_name and pod.awaits_placement:
                api = f"{COSCHEDULING_API_GROUP} " if pod.group_api == COSCHEDULING_API_GROUP else ""
                unread = self.unread_apis.get(pod.group_api or "")
                message = (f"{api}PodGroup {name[0]}/{name[1]} cannot be read: {unread}" if unread is not None
                           else self.absent.get(("PodGroup", *name))
                           or f"waiting for {api}PodGroup {name[0]}/{name[1]} to appear")
                self.orphans[key] = OrphanPod(pod, message)
                keys.append(key)
        if keys:
            self._orphans_of[name] = keys

    def layout_problems(self, kind: str, name: Name) -> list[str]:
        """The shape problems of the tree holding group ``(kind, name)`` as far as the groups fed so far
        show it, with the messages the scheduler reports for them: a cycle in
        ``parentCompositePodGroupName`` and a depth over :data:`~scheduler.groups.tree.MAX_DEPTH`.

        A missing parent or a CompositePodGroup with no children yet is not a problem here: at
        ``kubectl apply`` time they may simply not have been created yet (the admission webhook,
        ``scheduler.operator.validation``, asks this). ``kind``: PodGroup or CompositePodGroup, fed
        with ``set_*`` before; raises ``KeyError`` otherwise. Source: the ``Invalid`` reason in the
        ``scheduling.k8s.io/v1alpha3`` ``CompositePodGroupStatus.conditions`` doc ("kube-scheduler detects an
        invalid group layout during runtime validation", such as "a detected cycle, exceeding the maximum depth
        of 4").
        """
        self.structure.ensure()
        node: Node = (kind, name)
        head, invalid = self.structure.head(node)
        problems = []
        if invalid and self.structure.parent_of(head) in self.cpgs:  # a cycle's head has a parent; a cut chain's none
            problems.append(invalid)
        _, depth = self.assembler.group(head, [], [], depth=1, path=frozenset())
        if too_deep := depth_problem(depth):
            problems.append(too_deep)
        return problems


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
