"""The per-node half of the cache: node table, used-requests matrix and NodeInfos, kept per event.

:class:`NodeUsage` is fed pods as the scheduler should see them (an assumed pod already shown bound
to its node) and nodes. A pod event changes one row of the ``(N, R)`` used matrix and one
:class:`~scheduler.framework.node_info.NodeInfo` — O(R + pods on that node), never O(all pods).
A node added or removed rebuilds the static table (O(N)) and *remaps* the matrix rows and columns
(numpy fancy indexing, O(N·R)); only the pods of nodes the table did not have before are summed.
A node whose allocatable alone changed keeps the table's static memos. Pods bound to a node the
cache has not seen yet are kept by node name and count as soon as the node appears.

:meth:`snapshot` hands out an immutable :class:`~scheduler.framework.snapshot.Snapshot` (a copy of
the matrix; the NodeInfos as :class:`~scheduler.framework.node_rows.NodeRows` that share every row unchanged
since the previous snapshot with it, so handing one out costs O(N / 64 + rows changed), not a copy of N
NodeInfos), memoised until the next change. Once a snapshot's pod index
(:mod:`scheduler.framework.pod_index`) has been built, the pod changes since are recorded and the
next snapshot moves that index forward with them instead of rebuilding it (O(changes)); a new node
table starts over (a node that appears brings pods the index never saw). Each snapshot also carries the log
of the rows whose NodeInfo changed (:class:`~scheduler.framework.snapshot.RowLog`), so a reader that keeps
per-node memos across snapshots re-reads those rows only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_rows import NodeRows
from scheduler.framework.node_table import IntArray, NodeTable
from scheduler.framework.pod_index import IndexView, PodEntry, pod_entry
from scheduler.framework.snapshot import (
    DeviceSnapshot,
    Nominated,
    RowLog,
    Snapshot,
    nominated_pod,
    pod_vector,
    uses_node,
)
from scheduler.framework.storage_view import StorageView
from scheduler.model.node import Node
from scheduler.model.pod import Pod

LOG_ROWS_PER_NODE = 4
"""How many changed rows per node the change log holds before it starts a new list (bounds its memory)."""


class NodeUsage:
    """See the module docstring. Not thread-safe: used from the event loop only."""

    def __init__(self) -> None:
        self.table = NodeTable.build(())
        self.used: IntArray = np.zeros_like(self.table.allocatable)
        self._infos: dict[str, NodeInfo] = {}
        """Node name → the pods using it (also for nodes not in the table yet)."""
        self._rows = NodeRows()
        """``_infos`` of the table's nodes, by row, as of the last snapshot (shared with it)."""
        self._rows_now: dict[int, NodeInfo] = {}
        """Row → its NodeInfo now, for the rows changed since :attr:`_rows` was made."""
        self._counted: dict[str, tuple[str, Pod]] = {}
        """Pod key → (node, pod) of every pod that uses a node."""
        self._nominated: dict[str, Pod] = {}
        """Unbound pods with ``status.nominatedNodeName``."""
        self._snapshot: Snapshot | None = None
        self._last: Snapshot | None = None
        """The latest snapshot handed out whose pod index may be carried forward."""
        self._changes: dict[str, PodEntry | None] = {}
        """Pod key → its index entry now (None: gone), since :attr:`_last` was made."""
        self._log: list[int] = []
        """Rows whose NodeInfo changed, in order (:class:`~scheduler.framework.snapshot.RowLog`); a new list once
        it holds :data:`LOG_ROWS_PER_NODE` entries per node, or when the table changes."""

    # -- pods ------------------------------------------------------------------------------------
    def set_pod(self, key: str, pod: Pod | None, *, same_entry: bool = False) -> None:
        """The pod of ``key`` is now ``pod`` (None: gone). O(R + pods on its node).

        A pod that stays on its node (the watch confirming an assumed bind, a status update of a running
        pod) is replaced in its NodeInfo with one copy, and its row changes only if its requests did.
        ``same_entry``: the pod's uid, spec, labels and deletion are as before, all its entry in the pod index reads
        (:func:`pod_entry`): that entry stands."""
        old = self._counted.get(key)
        if old is not None and pod is not None and uses_node(pod) and pod.spec.node_name == old[0]:
            node, before = old
            self._counted[key] = (node, pod)
            self._store(node, self._infos[node].with_pod(pod))
            row = self.table.index.get(node)
            if row is not None and before.requests != pod.requests:
                self.used[row] += pod_vector(self.table, pod) - pod_vector(self.table, before)
            if self._last is not None and not same_entry:
                self._changes[key] = self._entry(pod)
            self._snapshot = None
            return
        old = self._counted.pop(key, None)
        if old is not None:
            node, before = old
            info = self._infos[node].without_pods((key,))
            self._store(node, info)
            row = self.table.index.get(node)
            if row is not None:
                self.used[row] -= pod_vector(self.table, before)
        self._nominated.pop(key, None)
        if pod is not None and uses_node(pod):
            node = pod.spec.node_name
            self._counted[key] = (node, pod)
            self._store(node, self._infos.get(node, NodeInfo(node)).with_pod(pod))
            row = self.table.index.get(node)
            if row is not None:
                self.used[row] += pod_vector(self.table, pod)
        elif pod is not None and pod.status.nominated_node_name and not pod.is_terminal:
            self._nominated[key] = pod
        if self._last is not None and (old is not None or key in self._counted):
            self._changes[key] = self._entry(pod) if key in self._counted and pod is not None else None
        self._snapshot = None

    def _entry(self, pod: Pod) -> PodEntry | None:
        """The pod index entry of ``pod``, which uses a node: None when the node is not in the table (deleted while
        its pods wait for the pod garbage collector, or not seen yet), as a snapshot's index holds the pods of its
        rows only (:meth:`~scheduler.framework.snapshot.Snapshot.pod_index`)."""
        return pod_entry(pod) if pod.spec.node_name in self.table.index else None

    def _store(self, node: str, info: NodeInfo) -> None:
        if len(info):
            self._infos[node] = info
        else:
            self._infos.pop(node, None)
        row = self.table.index.get(node)
        if row is not None:
            self._rows_now[row] = info
            if len(self._log) >= LOG_ROWS_PER_NODE * len(self._rows) + LOG_ROWS_PER_NODE:
                self._log = []  # readers of the old list compare every row once
            self._log.append(row)

    # -- nodes -----------------------------------------------------------------------------------
    def set_nodes(self, nodes: Iterable[Node]) -> None:
        """The node set changed (added, removed, relabelled, retainted…): a new table, the matrix remapped."""
        old = self.table
        table = NodeTable.build(nodes)
        used = np.zeros_like(table.allocatable)
        kept = [(table.index[n.name], old.index[n.name]) for n in table.nodes if n.name in old.index]
        shared_cols = [(table.column[r], old.column[r]) for r in table.resources if r in old.column]
        if kept and shared_cols:
            new_rows, old_rows = (np.array(x, dtype=np.intp) for x in zip(*kept, strict=True))
            new_cols, old_cols = (np.array(x, dtype=np.intp) for x in zip(*shared_cols, strict=True))
            used[np.ix_(new_rows, new_cols)] = self.used[np.ix_(old_rows, old_cols)]
        if len(shared_cols) < len(table.resources):  # a new column: the kept nodes' pods may request it too
            fresh = list(range(len(table)))
        else:
            fresh = [table.index[n.name] for n in table.nodes if n.name not in old.index]
        rows_fresh = set(fresh)
        if rows_fresh:
            used[sorted(rows_fresh)] = 0
            for node, pod in self._counted.values():
                row = table.index.get(node)
                if row is not None and row in rows_fresh:
                    used[row] += pod_vector(table, pod)
        self.table = table
        self.used = used
        self._rows = NodeRows(self._infos.get(n.name) or NodeInfo(n.name) for n in table.nodes)
        self._rows_now = {}
        self._log = []
        self._snapshot = None
        self._last = None  # pods of nodes new to the table are not in any index yet
        self._changes.clear()

    def update_node(self, node: Node) -> bool:
        """A known node's allocatable changed and nothing static did: update it in place, keeping the
        table's memos. Returns False when that is not possible (the caller calls :meth:`set_nodes`)."""
        if node.name not in self.table.index:
            return False
        table = self.table.with_allocatable(node)
        if table is None:
            return False
        self.table = table
        self._snapshot = None
        return True

    # -- views -----------------------------------------------------------------------------------
    def snapshot(self, dra: DeviceSnapshot | None = None, volumes: StorageView | None = None,
                 namespaces: Mapping[str, Mapping[str, str]] | None = None,
                 priority: Callable[[Pod], int] | None = None) -> Snapshot:
        """An immutable snapshot of usage (memoised while nothing changed and ``dra``, ``volumes`` and
        ``namespaces`` are the same objects); ``namespaces``: name → labels of the known namespaces.

        ``priority``: the priority a nominated pod holds its room at (the cache passes its group's,
        :meth:`~scheduler.groups.chains.GroupChains.effective_priority`); None: ``spec.priority``.
        """
        hit = self._snapshot
        if (hit is not None and hit.dra is dra and hit.volumes is volumes
                and (namespaces is None or hit.namespaces is namespaces)):
            return hit
        nominated: list[Nominated] = []
        for pod in self._nominated.values():
            entry = nominated_pod(self.table, pod, None if priority is None else priority(pod))
            if entry is not None:
                nominated.append(entry)
        view = self._carried_index()
        infos = self._rows = self._rows.replaced(self._rows_now)
        self._rows_now = {}
        snap = Snapshot(self.table, self.used.copy(), infos, dra, tuple(nominated), volumes,
                        namespaces if namespaces is not None else {}, view, RowLog(self._log, len(self._log), infos))
        self._snapshot = snap
        self._last = snap
        self._changes = {}
        return snap

    def with_nominated(self, snap: Snapshot, nominated: tuple[Nominated, ...]) -> Snapshot:
        """``snap`` (the latest :meth:`snapshot`) with ``nominated`` instead of its nominated pods (the cache adds the
        room partial gangs hold), handed out in its place: the pod index it reads or builds is the one the next
        snapshot carries forward, as that of ``snap`` would be. Another copy of the same NodeInfos shares the index the
        last one read (no rebuild while the pods are the same)."""
        last = self._last
        same = last is not None and last.infos is snap.infos
        view = (last.built_index() if same and last is not None else None) or snap.index_view
        shown = dataclasses.replace(snap, nominated=nominated, index_view=view)
        if same:
            self._last = shown
        return shown

    def _carried_index(self) -> IndexView | None:
        """The last snapshot's pod index moved forward by the changes since, if it was built and is valid."""
        last = self._last
        built = last.built_index() if last is not None else None
        if built is None:
            return None
        return built.advanced(self._changes)

    def invalidate(self) -> None:
        """Forget the memoised snapshot: something its nominated pods' priorities derive from (groups,
        PriorityClasses) changed."""
        self._snapshot = None

    def overcommitted(self, node: str, resources: Iterable[str]) -> list[tuple[str, int, int]]:
        """(resource, used, allocatable) of each of ``resources`` whose bound and assumed requests on ``node``
        exceed its allocatable as the node shows it now (integer units: milli-cpu, bytes, counts); empty when
        all fit or the node is not in the table. The caller leaves out what the node serves through DRA (an
        extended resource a DeviceClass serves, on a node that does not offer it). Design §4 invariant 2, checked
        again before each bind."""
        row = self.table.index.get(node)
        if row is None:
            return []
        used, allocatable, column = self.used[row], self.table.allocatable[row], self.table.column
        return [(name, int(used[c]), int(allocatable[c])) for name in sorted(resources)
                if (c := column.get(name)) is not None and used[c] > allocatable[c]]

    def pods_on(self, node: str) -> NodeInfo:
        """The NodeInfo of ``node`` (empty if no pod uses it)."""
        return self._infos.get(node) or NodeInfo(node)

    def counted(self) -> Iterable[Pod]:
        """Every pod that uses a node."""
        return (pod for _, pod in self._counted.values())
