"""A consistent view of the cluster for one scheduling cycle: node table, usage, NodeInfos, devices.

``Snapshot`` joins the static :class:`~scheduler.framework.node_table.NodeTable`, the ``(N, R)``
matrix of requests in use (bound and assumed pods), one :class:`~scheduler.framework.node_info.NodeInfo`
per row (which pods are where), the device view when DRA objects exist, and the nominated pods.
It is immutable: :meth:`Snapshot.assume` returns one with a plan's pods added, and
:meth:`Snapshot.without` one with pods removed (preemption's "would the tree fit if these pods
were gone?"), so no solver run can change the caller's state. Both cost O(N·R) for the matrix copy
plus O(pods touched); the NodeInfos are :class:`~scheduler.framework.node_rows.NodeRows`, which share the
rows they do not change with the snapshot they came from (O(N / 64 + rows changed), not a copy of N).

It also carries the namespaces' labels (pod affinity's ``namespaceSelector``) and
:attr:`Snapshot.pod_index`, the pods indexed for inter-pod rules
(:mod:`scheduler.framework.pod_index`): handed over by the cache, carried forward by ``assume``
(in place: the snapshot it was called on then rebuilds its own if asked again) and ``without`` (an
overlay), or built from the NodeInfos on first use.

The live cache maintains usage and NodeInfos per event and hands out snapshots, each with its log of the rows
changed (:meth:`Snapshot.rows_changed`: which NodeInfos differ from an earlier snapshot's, in O(changes));
:meth:`Snapshot.build` computes one from scratch (tests, benchmarks), without a log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import numpy as np

from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_rows import NodeRows
from scheduler.framework.node_table import IntArray, NodeTable, clamp
from scheduler.framework.plan import VolumeClaimBinding
from scheduler.framework.pod_index import IndexView, PodEntry, pod_entry
from scheduler.framework.storage_view import StorageView
from scheduler.model.dra import DeviceUse
from scheduler.model.lean_pod import lean_pod
from scheduler.model.pod import Pod


class DeviceSnapshot(Protocol):
    """The device half of a snapshot (implemented by ``scheduler.dra.device_snapshot.DraView``): what the framework
    needs of it to assume a plan. Kept as a protocol so the framework does not depend on DRA."""

    def with_allocated(self, uses: Iterable[DeviceUse]) -> DeviceSnapshot:
        """A view where the devices ``uses`` take (``driver/pool/device``) are taken too."""
        ...


@dataclass(frozen=True, slots=True)
class Nominated:
    """An unbound pod with ``status.nominatedNodeName``: room freed for it by preemption.

    ``pod``: its key; ``row``: the nominated node's row; ``request``: its requests over the table's
    columns; ``priority``: its priority. The solver counts those of priority ≥ the root's as running
    there (kube-scheduler ``addGENominatedPods``) — except the root's own pods, for which the room is held.
    """

    pod: str
    row: int
    request: IntArray
    priority: int


def pod_vector(table: NodeTable, pod: Pod) -> IntArray:
    """``pod``'s requests as a row over ``table``'s columns (resources no node offers are left out)."""
    vec, _ = table.request_vector(pod.requests)
    return vec


def uses_node(pod: Pod) -> bool:
    """Whether ``pod`` counts on its node: bound (``spec.nodeName``) and not Succeeded/Failed."""
    return pod.is_bound and not pod.is_terminal


def nominated_pod(table: NodeTable, pod: Pod, priority: int | None = None) -> Nominated | None:
    """The :class:`Nominated` entry of an unbound, non-terminating pod nominated to a known node, else None.

    ``priority``: what the pod counts at — for a grouped pod its group's priority (the cache passes
    it); None: ``spec.priority`` (0 if unset), for callers that know no groups.
    """
    if pod.is_bound or pod.is_terminal or pod.is_terminating:
        return None
    row = table.index.get(pod.status.nominated_node_name or "")
    if row is None:
        return None
    return Nominated(pod.key, row, pod_vector(table, pod), pod.spec.priority or 0 if priority is None else priority)


@dataclass(frozen=True, slots=True, eq=False)
class RowLog:
    """Which node rows' NodeInfos changed, as the cache that handed out a snapshot recorded them: ``rows`` is its
    journal (row numbers, in order, repeats allowed; the cache appends to it and starts a new list when it grows
    long or its node table changes), ``end`` how much of it the snapshot has seen, ``infos`` the snapshot's
    NodeInfos the log describes (a snapshot derived with other NodeInfos carries a log that no longer says
    anything about them: :meth:`Snapshot.rows_changed` checks)."""

    rows: list[int]
    end: int
    infos: NodeRows


@dataclass(frozen=True, slots=True)
class LogMark:
    """Where a reader of :meth:`Snapshot.rows_changed` left off: the log, how far, and the node table."""

    rows: list[int]
    end: int
    table: NodeTable


@dataclass(frozen=True, eq=False)
class Snapshot:
    """See the module docstring. ``infos[i]`` is the NodeInfo of ``table.nodes[i]``; ``namespaces``: namespace
    name → its labels (those the cache knows); ``index_view``: the pod index handed over, if any."""

    table: NodeTable
    used: IntArray
    infos: NodeRows
    dra: DeviceSnapshot | None = None
    nominated: tuple[Nominated, ...] = ()
    volumes: StorageView | None = None
    """Claims, volumes, classes, CSINodes and claim users (None: no storage object known — every claim is missing)."""
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    index_view: IndexView | None = field(default=None, repr=False)
    row_log: RowLog | None = field(default=None, repr=False)
    """The cache's record of changed rows (:meth:`rows_changed`); None: not known (every row may have changed)."""

    def rows_changed(self, since: LogMark | None) -> tuple[list[int] | None, LogMark | None]:
        """The node rows whose NodeInfo may differ from those of the snapshot where ``since`` was taken (a mark
        this method returned), and the mark to pass next time. The rows come from :attr:`row_log` in
        O(changes), with repeats; None when they cannot be told (no mark, no log, another log or node table, or
        NodeInfos other than the log's): the caller then compares every row."""
        log = self.row_log
        if log is None or log.infos is not self.infos:
            return None, None
        mark = LogMark(log.rows, log.end, self.table)
        if since is None or since.rows is not log.rows or since.table is not self.table or since.end > log.end:
            return None, mark
        return log.rows[since.end:log.end], mark

    @property
    def pod_index(self) -> IndexView:
        """The pods of :attr:`infos` indexed for inter-pod rules: the view last read or handed over while it is
        valid, else one built from the NodeInfos (O(pods)). Validity is checked on every read: once the shared
        index has moved on (the cache's next snapshot, an ``assume`` of this snapshot), this snapshot answers for
        its own pods, not for the present."""
        view = self.built_index()
        if view is None:
            view = IndexView.build(pod_entry(p, info.name) for info in self.infos for p in info.pods.values())
        self.__dict__["_pod_index"] = view
        return view

    def built_index(self) -> IndexView | None:
        """The pod index this snapshot has read or was handed, if it is still valid (None: none yet, or stale)."""
        view = self.__dict__.get("_pod_index") or self.index_view
        return view if view is not None and view.valid else None

    def _index_after(self, changes: Mapping[str, PodEntry | None], in_place: bool) -> IndexView | None:
        """The pod index of a snapshot derived from this one by ``changes``, if this one has an index yet."""
        view = self.built_index()
        if view is None:
            return None
        return view.advanced(changes) if in_place else view.branched(changes)

    @classmethod
    def build(cls, table: NodeTable, pods: Iterable[Pod], dra: DeviceSnapshot | None = None,
              volumes: StorageView | None = None, namespaces: Mapping[str, Mapping[str, str]] | None = None
              ) -> Snapshot:
        """Usage and NodeInfos from every bound, non-terminal pod of any scheduler on a known node;
        nominated pods from the unbound ones. ``volumes``: the storage view (its users built from the
        same pods, e.g. by ``StorageView.build``); ``namespaces``: name → labels of the known namespaces."""
        used = np.zeros_like(table.allocatable)
        row = table.index
        on_node: list[dict[str, Pod]] = [{} for _ in table.nodes]
        nominated: list[Nominated] = []
        for pod in pods:
            if not uses_node(pod):
                if (entry := nominated_pod(table, pod)) is not None:
                    nominated.append(entry)
                continue
            i = row.get(pod.spec.node_name)
            if i is None:
                continue
            for r, v in pod.requests.items():
                col = table.column.get(r)
                if col is not None:
                    used[i, col] += clamp(v)
            on_node[i][pod.key] = pod
        infos = NodeRows(NodeInfo(n.name, pods) for n, pods in zip(table.nodes, on_node, strict=True))
        return cls(table, used, infos, dra, tuple(nominated), volumes, dict(namespaces or {}))

    def free(self) -> IntArray:
        """A fresh ``(N, R)`` matrix of free capacity (allocatable − used); callers may modify it."""
        return self.table.allocatable - self.used

    def info(self, node: str) -> NodeInfo | None:
        """The NodeInfo of the node called ``node``, or None if it is not in the table."""
        row = self.table.index.get(node)
        return None if row is None else self.infos[row]

    def assume(self, placements: Sequence[tuple[Pod, str]], device_uses: Iterable[DeviceUse] = (),
               volumes: Iterable[VolumeClaimBinding] = ()) -> Snapshot:
        """A new snapshot with ``placements`` (pod, node name) added to usage and NodeInfos, ``device_uses``
        applied (``Plan.device_uses``) and the claim decisions ``volumes`` applied (the cycle's *assume*). A
        NodeInfo holds the pod object as planned (its node is the NodeInfo's: no bound copy is made).
        Every request counts on the pod's node, as kube-scheduler's NodeInfo counts it; an extended resource the
        node serves through DRA is one it does not offer (allocatable 0), where NodeResourcesFit does not judge it."""
        used = self.used.copy()
        row = self.table.index
        by_row: dict[int, dict[str, Pod]] = {}
        changes: dict[str, PodEntry | None] = {}
        for pod, node_name in placements:
            i = row[node_name]
            used[i] += pod_vector(self.table, pod)
            by_row.setdefault(i, {})[pod.key] = pod
            changes[pod.key] = pod_entry(pod, node_name)
        infos = self.infos.replaced({i: self.infos[i].with_pods(added.values()) for i, added in by_row.items()})
        dra = self.dra.with_allocated(device_uses) if self.dra is not None else None
        storage = self.volumes.with_assumed(placements, volumes) if self.volumes is not None else None
        return Snapshot(self.table, used, infos, dra, self.nominated, storage, self.namespaces,
                        self._index_after(changes, in_place=True))

    def without(self, pods: Iterable[Pod]) -> Snapshot:
        """A new snapshot in which ``pods`` (bound or assumed, found by key on their node) no longer use
        their nodes: their requests are subtracted and they leave their NodeInfos. Pods not in the
        snapshot are ignored. Devices are the caller's business (the device view is kept as is)."""
        used = self.used.copy()
        infos = self.infos
        gone: dict[int, list[str]] = {}
        for pod in pods:
            i = self.table.index.get(pod.spec.node_name)
            if i is None or pod.key not in infos[i].pods:
                i = next((r for r, info in enumerate(infos) if pod.key in info.pods), None)  # planned, not bound
            if i is None:
                continue
            used[i] -= pod_vector(self.table, infos[i].pods[pod.key])
            gone.setdefault(i, []).append(pod.key)
        changes: dict[str, PodEntry | None] = {key: None for keys in gone.values() for key in keys}
        return Snapshot(self.table, used, infos.replaced({i: infos[i].without_pods(keys) for i, keys in gone.items()}),
                        self.dra, self.nominated, self.volumes, self.namespaces,
                        self._index_after(changes, in_place=False))


def bound_copy(pod: Pod, node: str) -> Pod:
    """``pod`` as it will look once bound to ``node`` (``spec.nodeName`` set), in the compact shape the cache keeps
    of pods on a node (:class:`~scheduler.model.lean_pod.LeanPod`, the same reads as a :class:`Pod`): how
    assumed pods are shown."""
    return cast("Pod", lean_pod(pod, node))
