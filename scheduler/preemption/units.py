"""Victim units: which running pods a preemptor may evict, grouped into what must go together, in order.

Who can be a victim (kube-scheduler ``podgrouppreemption.go``, v1.37): a running
pod — bound to a node, not terminating, not merely assumed — of *strictly* lower priority than the
preemptor, of any scheduler, outside the preemptor's own tree. A grouped pod counts at its group's
priority (:class:`~scheduler.preemption.group_view.Membership`).

What goes together: a pod whose groups up to the root have no ``disruptionMode: all`` is a unit of
its own; otherwise the unit is the whole group rooted at its highest ancestor with ``all``, and
every running pod of it — on any node — is evicted, or none is.

Only pods on nodes the preemptor could use at all are looked at (:func:`usable_rows`: passing the static
filters for one of its pending pods, with the allocatable to hold it once everything else is gone): evicting
elsewhere never frees room it can use. An ``all`` unit found there still brings all of its pods, wherever
they run.

Importance (:func:`importance`, most important first — the reprieve order, so the least important
units are the ones left to evict): higher priority; then what breaks a gang if evicted — an ``all`` unit (a whole
group) and a member a single-mode gang needs to stay at ``minCount`` — before what does not: spare members (the
youngest ``running − minCount`` are spare) and lone pods; then a group before a lone pod (kube 1.38
``MoreImportantVictim`` ranks: ``all`` unit > member of a group > pod), so among the units that break a gang a
single-mode gang's members go before a whole ``all`` group; then larger units; then the earlier start
(``status.startTime``; none yet counts as youngest); then the group, so members of one single-mode gang stay adjacent
and one gang is emptied before the next is touched (volcano#4607); then the uid (kube 1.38's deterministic
tie-break).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType

import numpy as np

from scheduler.dra.device_snapshot import DraView
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.snapshot import LogMark, Snapshot
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.quantity import is_extended
from scheduler.model.scheduling import GroupKey
from scheduler.preemption.group_view import GroupView, Membership

YOUNGEST = datetime.max.replace(tzinfo=UTC)
"""The start time of a pod without ``status.startTime`` (kube's ``GetPodStartTime`` uses now): youngest."""

MAX_REMEMBERED_NODES = 100_000
"""Nodes :class:`NodeEntries` remembers before starting afresh (a 5,000-node cluster uses 5,000)."""

RANK_ALL = 2
RANK_MEMBER = 1
RANK_POD = 0
"""Unit ranks, kube 1.38 ``MoreImportantVictim``: compositepodgroup/podgroup unit > member of a group > pod."""


@dataclass(slots=True)
class Unit:
    """Pods that are evicted together. ``key``: the ``all`` group, or the pod's key. ``pods`` and ``rows``
    (each pod's node row) are parallel. ``group``: the group whose members are ordered together (the
    unit's group, a single-mode member's PodGroup, or the pod). ``essential``: a single-mode gang
    member its gang needs to stay at ``minCount``."""

    key: GroupKey | str
    priority: int
    rank: int
    group: str
    pods: list[Pod] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    essential: bool = False
    spare: int = 0
    """For a member of a single-mode group: how many of its group's candidate units may be evicted with the group
    still at ``minCount`` — its spare (not essential) units, every one of them for a group without ``minCount``."""
    start: datetime = YOUNGEST
    group_size: int = 1
    group_start: datetime = YOUNGEST
    uid: str = ""
    """The smallest uid of its pods (the last tie-break), filled in with the start times."""


def start_of(pod: Pod) -> datetime:
    """``status.startTime`` (timezone-aware), or :data:`YOUNGEST`."""
    ts = pod.status.start_time
    if ts is None:
        return YOUNGEST
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def importance(unit: Unit) -> tuple[object, ...]:
    """Sort key, most important first (see the module docstring)."""
    return (-unit.priority, not (unit.essential or unit.rank == RANK_ALL), -unit.rank, -unit.group_size,
            unit.group_start, unit.group, -len(unit.pods), unit.start, unit.uid)


def usable_rows(snapshot: Snapshot, tree: GroupTree, static_check: object, *, allocatable: bool = True) -> BoolArray:
    """``(N,)``: the nodes where some pending pod of ``tree`` could run once every other pod is gone — it passes the
    static filters (``static_check``: the profile's, memoised per pod template on the node table) and the node's
    allocatable holds its requests (:func:`allocatable_holds`; ``allocatable=False``: the static filters only). An
    extended resource a node does not offer is left to DRA only when a DeviceClass serves it for the pod (its
    resolved claims' ``extended``, as the search's DynamicResources decides): else that node cannot hold the pod,
    and a pod requesting a resource no node offers and no DeviceClass serves can run nowhere."""
    mask = np.zeros(len(snapshot.table), dtype=bool)
    for _, rows in _pod_rows(snapshot, tree, static_check, allocatable=allocatable):
        mask |= rows
    return mask


def usable_rows_and_unplaceable(snapshot: Snapshot, tree: GroupTree, static_check: object
                                ) -> tuple[BoolArray, list[Pod]]:
    """:func:`usable_rows`, and the pending pods of ``tree`` that no node could hold even emptied — none passes the
    static filters for the pod and has the allocatable to hold it (the same rule, pod by pod) — in one pass."""
    mask = np.zeros(len(snapshot.table), dtype=bool)
    out: list[Pod] = []
    for pod, rows in _pod_rows(snapshot, tree, static_check, allocatable=True):
        mask |= rows
        if not rows.any():
            out.append(pod)
    return mask, out


def _pod_rows(snapshot: Snapshot, tree: GroupTree, static_check: object, *,
              allocatable: bool) -> Iterator[tuple[Pod, BoolArray]]:
    """Each pending pod of ``tree`` with the nodes of :func:`usable_rows` for it alone (read-only)."""
    table = snapshot.table
    holds: dict[tuple[tuple[tuple[str, int], ...], tuple[str, ...]], BoolArray] = {}  # per request shape
    resolved = snapshot.dra.pods if isinstance(snapshot.dra, DraView) else {}
    for leaf in tree.root.leaves():
        for pod in leaf.pending:
            static = table.static_fit(pod.spec, static_check).ok  # type: ignore[arg-type]
            if not allocatable:
                yield pod, static
                continue
            claims = resolved.get(pod.key)
            served = claims.extended if claims is not None else ()
            shape = (tuple(pod.requests.items()), served)
            fits = holds.get(shape)
            if fits is None:
                vector, unknown = table.request_vector(pod.requests)
                fits = holds[shape] = (allocatable_holds(table.allocatable, vector, table.resources, served)
                                       if set(unknown) <= set(served) else np.zeros(len(table), dtype=bool))
            yield pod, static & fits


def allocatable_holds(allocatable: IntArray, request: IntArray, resources: Sequence[str],
                      served: Collection[str] | None = None) -> BoolArray:
    """``(N,)``: the nodes whose ``allocatable`` (``(N, R)``) is at least ``request`` (``(R,)``) in every resource
    the node offers or that DRA does not serve. A request above a node's allocatable is kube-scheduler's
    NodeResourcesFit ``UnschedulableAndUnresolvable`` (``fitsRequest``: ``Unresolvable: podRequest >
    allocatable``, ``noderesources/fit.go``), and preemption skips such nodes (``nodesWherePreemptionMightHelp``):
    no eviction makes room there. An extended resource the node does not offer at all is left to DRA, which may
    serve it there (KEP-5004), as :class:`~scheduler.solver.plugins.resources_fit.NodeResourcesFit` does — when a
    DeviceClass serves it (``served``: those resources; None: any extended resource); else such a node cannot
    hold it either."""
    fits = np.ones(len(allocatable), dtype=bool)
    for col in np.flatnonzero(request > 0).tolist():
        offered = allocatable[:, col]
        short = offered < request[col]
        resource = resources[col]
        if is_extended(resource) and (served is None or resource in served):
            short &= offered > 0
        fits &= ~short
    return fits


@dataclass(frozen=True, slots=True)
class Entry:
    """The running pods of one group on one node (or one lone pod), as the scan reads them: ``group`` is the
    (namespace, PodGroup) they name, None for a lone pod; ``keys``, ``pods``, ``starts`` and ``uids`` are
    parallel."""

    group: tuple[str, str] | None
    keys: tuple[str, ...]
    pods: tuple[Pod, ...]
    starts: tuple[datetime, ...]
    uids: tuple[str, ...]
    earliest: datetime = YOUNGEST
    """The earliest of ``starts``."""
    least_uid: str = ""
    """The smallest of ``uids``."""
    priority: int | None = None
    """A lone pod's ``spec.priority`` when set (immutable once admitted, so what it counts at without asking
    the view); None otherwise."""


class NodeEntries:
    """:class:`Entry` lists per node, memoised while the node's :class:`NodeInfo` is the same object (NodeInfos
    are immutable: the cache replaces a node's when a pod lands on it or leaves it), so a scan of a cluster
    that barely changed between two preemptions reads each group once per node instead of each pod.
    Pods being deleted are left out (they are going already).

    It also keeps, per group, the nodes it has entries on (:meth:`placed`): complete for a snapshot once
    :meth:`sync` has read its nodes — O(nodes changed) when the snapshot's change log tells which
    (:meth:`Snapshot.rows_changed`), else an identity comparison of the NodeInfo tuple."""

    def __init__(self) -> None:
        self._memo: dict[str, tuple[NodeInfo, tuple[Entry, ...], dict[tuple[str, str], Entry]]] = {}
        self._where: dict[tuple[str, str], dict[str, Entry]] = {}
        self._synced: Sequence[NodeInfo | None] = ()  # the NodeInfos of the last :meth:`sync`, all read
        self._mark: LogMark | None = None  # where the last :meth:`sync` left the snapshot's change log
        self._stray: set[str] = set()  # nodes read outside a sync since the last one: read again by the next
        self._syncing = False

    def entries(self, info: NodeInfo) -> tuple[Entry, ...]:
        """The entries of the pods on ``info``'s node: one per group there, then one per lone pod."""
        return self._read(info)[1]

    def by_group(self, info: NodeInfo) -> dict[tuple[str, str], Entry]:
        """The grouped entries of :meth:`entries`, by (namespace, PodGroup) (read-only)."""
        return self._read(info)[2]

    def sync(self, snapshot: Snapshot) -> None:
        """Read every node of ``snapshot`` whose NodeInfo changed since it was last read, so that :meth:`placed`
        is complete for them."""
        infos, index = snapshot.infos, snapshot.table.index
        changed, mark = snapshot.rows_changed(self._mark)
        if changed is None:
            synced = self._synced if len(self._synced) == len(infos) else [None] * len(infos)
            changed = list(itertools.compress(itertools.count(), map(operator.is_not, synced, infos)))
        strays = [row for name in self._stray if (row := index.get(name)) is not None]
        self._syncing = True
        try:
            for row in itertools.chain(changed, strays):
                self._read(infos[row])
        finally:
            self._syncing = False
        self._synced, self._mark = infos, mark
        self._stray.clear()

    def placed(self, group: tuple[str, str]) -> Mapping[str, Entry]:
        """Node name → the entry of ``group`` (namespace, PodGroup) there, over the nodes read (read-only)."""
        return self._where.get(group, _NOWHERE)

    def _read(self, info: NodeInfo) -> tuple[NodeInfo, tuple[Entry, ...], dict[tuple[str, str], Entry]]:
        hit = self._memo.get(info.name)
        if hit is not None and hit[0] is info:
            return hit
        grouped: dict[tuple[str, str], list[tuple[str, Pod]]] = {}
        lone: list[Entry] = []
        for key, pod in info.pods.items():
            if pod.metadata.deletion_timestamp is not None:
                continue
            group = pod.group_name
            if group is not None:
                grouped.setdefault((pod.metadata.namespace, group), []).append((key, pod))
            else:
                start, uid = start_of(pod), pod.metadata.uid or key
                lone.append(Entry(None, (key,), (pod,), (start,), (uid,), start, uid, pod.spec.priority))
        found: dict[tuple[str, str], Entry] = {}
        for g, pairs in grouped.items():
            starts = tuple(start_of(p) for _, p in pairs)
            uids = tuple(p.metadata.uid or k for k, p in pairs)
            found[g] = Entry(g, tuple(k for k, _ in pairs), tuple(p for _, p in pairs), starts, uids, min(starts),
                             min(uids))
        if len(self._memo) >= MAX_REMEMBERED_NODES:  # bound the memory of nodes long gone
            self._memo.clear()
            self._where.clear()
            self._synced, self._mark = (), None
            hit = None
        if not self._syncing:
            self._stray.add(info.name)  # perhaps another snapshot's NodeInfo: the next sync reads the node again
        where = self._where
        if hit is not None:
            for g in hit[2]:
                on = where.get(g)
                if on is not None:
                    on.pop(info.name, None)
                    if not on:
                        del where[g]
        for g, entry in found.items():
            where.setdefault(g, {})[info.name] = entry
        hit = self._memo[info.name] = (info, (*found.values(), *lone), found)
        return hit


_NOWHERE: Mapping[str, Entry] = MappingProxyType({})


MIN_CANDIDATE_NODES = 16
"""Nodes the first round of victim search reads at least (more for a root with more pending pods or needs)."""
ROOM_SLACK = 2
"""The first round reads this many times the nodes whose whole capacity would just cover the root's need."""
WINDOW_GROWTH = 4
"""How much larger each next round's window of nodes is than the one before."""


class NodeFloors:
    """Per node row, the lowest priority any running, not-deleting pod on it counts at (its
    :class:`Membership` priority; ``NO_FLOOR`` for a node without one), memoised while the node's
    :class:`NodeInfo` is the same object — so a decision re-reads only the nodes that changed since the last.

    For ordering the nodes (:meth:`floors`, for :func:`windows`) a floor may be stale: a group's priority may have
    changed while its pods stayed put, which only makes a window less well chosen. :meth:`exact` also re-reads
    every row read before the view's membership :meth:`~scheduler.preemption.group_view.GroupView.generation`
    last changed, so a node whose exact floor is at or above a root's priority holds no victim of it.

    The same read keeps a floor per resource — per node row and resource column, the lowest priority of a pod on it
    that requests some of that resource — for :meth:`requested_below`."""

    NO_FLOOR = np.iinfo(np.int64).max

    def __init__(self, nodes: NodeEntries) -> None:
        self.nodes = nodes
        self._table: object = None
        self._seen: list[NodeInfo | None] = []
        self._mark: LogMark | None = None
        self._floor = np.empty(0, dtype=np.int64)
        self._read_at = np.empty(0, dtype=np.int64)
        """The view's generation when each row's floor was read."""
        self._by_resource = np.empty((0, 0), dtype=np.int64)
        """``(N, R)``: per row and resource column, the lowest priority of a pod there requesting it (``NO_FLOOR``)."""

    def floors(self, snapshot: Snapshot, view: GroupView) -> IntArray:
        """``(N,)`` int64, the floor of each node row of ``snapshot`` (read-only). Re-reads the rows the snapshot's
        change log names since the last call (:meth:`Snapshot.rows_changed`), else every row whose NodeInfo is
        another object than last time."""
        infos = snapshot.infos
        changed, mark = snapshot.rows_changed(self._mark)
        if self._table is not snapshot.table or len(self._seen) != len(infos):
            self._table, self._seen, changed = snapshot.table, [None] * len(infos), None
            self._floor = np.full(len(infos), self.NO_FLOOR, dtype=np.int64)
            self._by_resource = np.full((len(infos), len(snapshot.table.resources)), self.NO_FLOOR, dtype=np.int64)
            self._read_at = np.full(len(infos), -1, dtype=np.int64)
        self._mark = mark
        seen = self._seen
        if changed is None:
            changed = list(itertools.compress(itertools.count(), map(operator.is_not, seen, infos)))
        generation = view.generation()
        column = snapshot.table.column
        for row in changed:
            if seen[row] is not infos[row]:
                self._read(row, infos[row], view, generation, column)
        return self._floor

    def exact(self, snapshot: Snapshot, view: GroupView, rows: BoolArray) -> IntArray:
        """:meth:`floors`, with every row of ``rows`` read at the view's current generation: exact for them."""
        floor = self.floors(snapshot, view)
        generation = view.generation()
        infos, column = snapshot.infos, snapshot.table.column
        for row in np.flatnonzero(rows & (self._read_at != generation)).tolist():
            self._read(row, infos[row], view, generation, column)
        return floor

    def requested_below(self, snapshot: Snapshot, view: GroupView, rows: BoolArray, limit: int,
                        cols: Sequence[int]) -> list[bool]:
        """Per resource column of ``cols`` (of ``snapshot``'s table): whether a running pod counting at a priority below
        ``limit``, on a node of ``rows``, requests some of it — only those pods' eviction can free it there. Exact for
        ``rows`` (read as :meth:`exact` reads them)."""
        self.exact(snapshot, view, rows)
        return [bool((self._by_resource[:, col][rows] < limit).any()) for col in cols]

    def _read(self, row: int, info: NodeInfo, view: GroupView, generation: int, column: Mapping[str, int]) -> None:
        lowest = int(self.NO_FLOOR)
        by_resource = [lowest] * len(column)
        for entry in self.nodes.entries(info):
            priority = entry.priority if entry.priority is not None else view.membership(entry.pods[0]).priority
            if priority < lowest:
                lowest = priority
            for pod in entry.pods:
                for name, amount in pod.requests.items():
                    col = column.get(name)
                    if col is not None and amount > 0 and priority < by_resource[col]:
                        by_resource[col] = priority
        self._floor[row], self._seen[row], self._read_at[row] = lowest, info, generation
        self._by_resource[row] = by_resource


def windows(floors: IntArray, rows: BoolArray, limit: int, pending: int = 0, capacity: IntArray | None = None,
            need: IntArray | None = None) -> Iterator[BoolArray]:
    """The nodes to look for victims on, in growing rounds: of the nodes in ``rows`` with a pod of priority below
    ``limit``, those of lowest floor (ties in row order) — first as many as the root has ``pending`` pods, or
    :data:`ROOM_SLACK` times as many as it takes for their ``capacity`` (``(N, R)``, e.g. allocatable) to cover
    ``need`` (``(R,)``, the root's minimum need) in every resource when that is more, and at least
    :data:`MIN_CANDIDATE_NODES`; then :data:`WINDOW_GROWTH` times as many each
    round, up to all of them (the last round is ``rows`` itself, the same array, so a caller can tell it by
    identity). So one decision reads the victims of
    O(window) nodes, not of the cluster, while
    a tree the nearest nodes cannot serve still gets every node before preemption is judged not helpful. The
    same idea as kube-scheduler's candidate sampling (``minCandidateNodesAbsolute``), without its share of the
    cluster (10 %), which would make the cost grow with the cluster. A window as wide as the pending pods lets a
    gang's victims come from one group spread over that many nodes rather than from every group on fewer nodes
    (volcano#4607)."""
    eligible = np.flatnonzero(rows & (floors < limit))
    if len(eligible) > MIN_CANDIDATE_NODES:
        ranked = eligible[np.argsort(floors[eligible], kind="stable")]
        size = max(MIN_CANDIDATE_NODES, pending, ROOM_SLACK * _covering(ranked, capacity, need))
        while size < len(eligible):
            window = np.zeros(len(rows), dtype=bool)
            window[ranked[:size]] = True
            yield window
            size *= WINDOW_GROWTH
    yield rows


def _covering(ranked: IntArray, capacity: IntArray | None, need: IntArray | None) -> int:
    """How many of the ``ranked`` node rows, from the first, it takes for ``capacity`` to cover ``need`` (0: no
    need; all of them when even they fall short)."""
    if capacity is None or need is None:
        return 0
    cols = np.flatnonzero(need > 0)
    if not cols.size:
        return 0
    head = ranked[:MIN_CANDIDATE_NODES * WINDOW_GROWTH]  # most needs are covered by a few nodes: look there first
    for part in (head, ranked) if len(head) < len(ranked) else (ranked,):
        covered = (np.cumsum(capacity[np.ix_(part, cols)], axis=0) >= need[cols]).all(axis=1)
        if covered.any():
            return int(np.argmax(covered)) + 1
    return len(ranked)


def candidates(snapshot: Snapshot, tree: GroupTree, view: GroupView, rows: BoolArray, *,
               inclusive: bool = False, nodes: NodeEntries | None = None) -> list[Unit]:
    """The victim units the root of ``tree`` may evict, found on the nodes of ``rows`` (see the module
    docstring), in no particular order. Each unit's pods are every running pod of it (an ``all`` unit's
    on any node); empty when nothing of lower priority runs there. ``inclusive``: units of the root's own
    priority count too — never for eviction, only for the starvation guard's "which pods must finish".
    ``nodes``: a memo kept across calls (the plugin's), else one for this call.
    """
    nodes = nodes or NodeEntries()
    own = {p.key for p in tree.pods()}
    own_groups = {(leaf.key.namespace, leaf.key.name) for leaf in tree.root.leaves() if leaf.key.kind == "PodGroup"}
    limit = tree.priority + 1 if inclusive else tree.priority  # victims: priority < limit
    assumed = view.assumed()
    members: dict[tuple[str, str], Membership] = {}
    units: dict[GroupKey | str, Unit] = {}
    whole: list[Unit] = []
    for row in np.flatnonzero(rows).tolist():
        for entry in nodes.entries(snapshot.infos[row]):
            group = entry.group
            if group is None:
                key, pod = entry.keys[0], entry.pods[0]
                if key in own or key in assumed:
                    continue
                priority = entry.priority if entry.priority is not None else view.membership(pod).priority
                if priority < limit:
                    units[key] = Unit(key, priority, RANK_POD, key, [pod], [row], start=entry.starts[0],
                                      uid=entry.uids[0])
                continue
            if group in own_groups:
                continue
            found_m = members.get(group)
            m = found_m if found_m is not None else members.setdefault(group, view.membership(entry.pods[0]))
            if m.priority >= limit:
                continue
            if m.unit is not None:
                whole_unit = units.get(m.unit)
                if whole_unit is None:
                    whole_unit = units[m.unit] = Unit(m.unit, m.priority, RANK_ALL, str(m.unit), uid=entry.least_uid)
                    whole.append(whole_unit)
                _add(whole_unit, entry, row, assumed)
                continue
            picked = range(len(entry.keys)) if not assumed else [i for i, k in enumerate(entry.keys)
                                                                 if k not in assumed]
            leaf = str(m.leaf)
            for i in picked:
                units[entry.keys[i]] = Unit(entry.keys[i], m.priority, RANK_MEMBER, leaf, [entry.pods[i]], [row],
                                            start=entry.starts[i], uid=entry.uids[i])
    if not rows.all() and whole:  # an all unit's pods elsewhere go too: gather them from the groups
        _gather(snapshot, view, whole, assumed, rows, nodes)
    found = [u for u in units.values() if u.pods]
    _order_within_groups(found, members)
    return found


def staying(snapshot: Snapshot, tree: GroupTree, view: GroupView, rows: BoolArray,
            nodes: NodeEntries | None = None) -> int:
    """How many running pods on the nodes of ``rows`` preemption for ``tree`` never evicts: outside its tree, of
    its priority or higher (kube-scheduler evicts strictly lower priorities only, ``podgrouppreemption.go``). Pods
    being deleted are left out, as :class:`NodeEntries` leaves them. ``nodes``: a memo kept across calls, else one
    for this call."""
    nodes = nodes or NodeEntries()
    own = {p.key for p in tree.pods()}
    of_group: dict[tuple[str, str], int] = {}  # a group's priority, read once however many nodes it runs on
    count = 0
    for row in np.flatnonzero(rows).tolist():
        for entry in nodes.entries(snapshot.infos[row]):
            group = entry.group
            if group is None:
                priority = entry.priority if entry.priority is not None else view.membership(entry.pods[0]).priority
            elif (known := of_group.get(group)) is not None:
                priority = known
            else:
                priority = of_group[group] = view.membership(entry.pods[0]).priority
            if priority >= tree.priority:
                count += len(entry.keys) if not own else sum(1 for key in entry.keys if key not in own)
    return count


def _add(unit: Unit, entry: Entry, row: int, assumed: Collection[str]) -> None:
    """Add the pods of ``entry`` (on node ``row``) to an ``all`` unit, all at once unless some are assumed."""
    if not assumed:
        unit.pods.extend(entry.pods)
        unit.rows.extend([row] * len(entry.pods))
        if entry.earliest < unit.start:
            unit.start = entry.earliest
        if entry.least_uid < unit.uid:
            unit.uid = entry.least_uid
        return
    for i, key in enumerate(entry.keys):
        if key not in assumed:
            unit.pods.append(entry.pods[i])
            unit.rows.append(row)
            unit.start = min(unit.start, entry.starts[i])
            unit.uid = min(unit.uid, entry.uids[i])


def _gather(snapshot: Snapshot, view: GroupView, whole: Iterable[Unit], assumed: Collection[str],
            read: BoolArray, nodes: NodeEntries) -> None:
    """Add to each ``all`` unit its running pods on the nodes the scan did not read (``read``: those it did), from
    the nodes' (memoised) entries: a PodGroup unit's from where :meth:`NodeEntries.placed` says its group is, a
    CompositePodGroup's from the nodes and groups its pods name."""
    index, infos = snapshot.table.index, snapshot.infos
    nodes.sync(snapshot)
    for unit in whole:
        key = unit.key
        assert isinstance(key, GroupKey)
        if key.kind == "PodGroup":
            for name, entry in nodes.placed((key.namespace, key.name)).items():
                where = index.get(name)
                if where is not None and not read[where]:
                    _add(unit, entry, where, assumed)
            continue
        elsewhere: dict[tuple[int, str], None] = {}
        for pod in view.unit_pods(key):
            where = index.get(pod.spec.node_name)
            if where is not None and not read[where]:
                elsewhere[where, pod.group_name or ""] = None
        for where, group in elsewhere:
            found = nodes.by_group(infos[where]).get((key.namespace, group))
            if found is not None:
                _add(unit, found, where, assumed)


def _order_within_groups(units: Iterable[Unit], members: dict[tuple[str, str], Membership]) -> None:
    """Fill in group sizes and start times, and the ``essential`` flag and ``spare`` count of single-mode members."""
    by_group: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.rank == RANK_POD:  # a lone pod is a group of its own (its group is its key)
            unit.group_size, unit.group_start = len(unit.pods), unit.start
            continue
        by_group.setdefault(unit.group, []).append(unit)
    for group_units in by_group.values():
        size = sum(len(u.pods) for u in group_units)
        start = min(u.start for u in group_units)
        for u in group_units:
            u.group_size, u.group_start, u.spare = size, start, len(group_units)
        first = group_units[0]
        if first.rank != RANK_MEMBER:
            continue
        pod = first.pods[0]
        m = members.get((pod.metadata.namespace, pod.group_name or ""))
        if m is None or m.min_count is None:
            continue
        spare = max(0, m.running - m.min_count)
        youngest_first = sorted(group_units, key=lambda u: (u.start, u.uid), reverse=True)
        for i, u in enumerate(youngest_first):
            u.essential = i >= spare
            u.spare = min(spare, len(group_units))
