"""The solver's view of the cluster: a node table (static) and a snapshot of usage (per cycle).

``NodeTable`` holds what changes only when nodes change: names, labels, taints, allocatable
as an ``(N, R)`` integer matrix, topology domains, and a memo of static filter results per
pod scheduling signature. ``Snapshot`` adds the ``(N, R)`` matrix of used requests (bound and
assumed pods) and is immutable: :meth:`Snapshot.assume` returns a new one, so a solver run
can never change the caller's state.

Units: ``cpu`` in milli-cores, every other resource in whole units (bytes, counts).
Nodes are sorted by name, which makes every tie-break in the solver deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.model.node import Node
from scheduler.model.pod import Pod, PodSpec
from scheduler.model.quantity import PODS, is_extended
from scheduler.solver.filters import run_filters
from scheduler.solver.status import Status

if TYPE_CHECKING:
    from scheduler.dra.view import DraView

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

StaticKey = tuple[object, ...]

MAX_UNITS = 2**53
"""Amounts in the int64 matrices are clamped to ±2^53 units — far above any real node (8 EiB, 9e12
cores) and far enough below 2^63 that sums over a node's pods cannot overflow. An API-valid but
absurd request (``cpu: 1e16``) thus simply never fits instead of crashing the solver."""


def _clamp(units: int) -> int:
    return max(-MAX_UNITS, min(units, MAX_UNITS))


def static_key(spec: PodSpec) -> StaticKey:
    """The part of a pod spec that static filters read: two pods with equal keys pass the same nodes."""
    return (tuple(sorted(spec.node_selector.items())), spec.affinity, spec.tolerations)


@dataclass(frozen=True, slots=True)
class StaticFit:
    """Static filter results for one signature: ``ok`` mask over nodes, and each rejected node's Status."""

    ok: BoolArray
    rejected: Mapping[int, Status]


@dataclass(frozen=True, slots=True)
class Domains:
    """Topology domains of one label key: ``values[i]`` is domain i; ``of_node[n]`` is -1 without the label."""

    values: tuple[str, ...]
    of_node: npt.NDArray[np.int32]


@dataclass(eq=False)
class NodeTable:
    """Nodes and their static properties; see the module docstring."""

    nodes: tuple[Node, ...]
    resources: tuple[str, ...]
    allocatable: IntArray
    column: dict[str, int]
    accelerator: BoolArray
    """Nodes that offer any extended resource (GPUs and the like)."""
    _static: dict[StaticKey, StaticFit] = field(default_factory=dict, repr=False)
    _domains: dict[str, Domains] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, nodes: Iterable[Node], extra_resources: Iterable[str] = ()) -> NodeTable:
        """Index ``nodes`` (sorted by name) over the union of their allocatable resources and ``extra_resources``."""
        ordered = tuple(sorted(nodes, key=lambda n: n.name))
        names: set[str] = {PODS, *extra_resources}
        for node in ordered:
            names.update(node.allocatable)
        resources = tuple(sorted(names))
        column = {r: i for i, r in enumerate(resources)}
        alloc = np.zeros((len(ordered), len(resources)), dtype=np.int64)
        for i, node in enumerate(ordered):
            for r, v in node.allocatable.items():
                alloc[i, column[r]] = _clamp(v)
        ext_cols = [column[r] for r in resources if is_extended(r)]
        accel: BoolArray = np.zeros(len(ordered), dtype=bool)
        if ext_cols:
            accel = np.asarray((alloc[:, ext_cols] > 0).any(axis=1), dtype=bool)
        return cls(ordered, resources, alloc, column, accel)

    def __len__(self) -> int:
        return len(self.nodes)

    @cached_property
    def index(self) -> dict[str, int]:
        """Node name → row."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    @cached_property
    def max_allocatable(self) -> IntArray:
        """``(R,)`` the largest allocatable of each resource on any node (≥ 1), to compare resources by share."""
        if not len(self.nodes):
            return np.ones(len(self.resources), dtype=np.int64)
        return np.asarray(np.maximum(self.allocatable.max(axis=0), 1), dtype=np.int64)

    def static_fit(self, spec: PodSpec) -> StaticFit:
        """Static filter results for pods like ``spec``, computed once per :func:`static_key` and memoised."""
        key = static_key(spec)
        hit = self._static.get(key)
        if hit is not None:
            return hit
        ok = np.ones(len(self.nodes), dtype=bool)
        rejected: dict[int, Status] = {}
        for i, node in enumerate(self.nodes):
            status = run_filters(spec, node)
            if status is not None:
                ok[i] = False
                rejected[i] = status
        fit = StaticFit(ok, rejected)
        self._static[key] = fit
        return fit

    def domains(self, key: str) -> Domains:
        """Topology domains of the node label ``key`` (memoised)."""
        hit = self._domains.get(key)
        if hit is not None:
            return hit
        values = sorted({n.metadata.labels[key] for n in self.nodes if key in n.metadata.labels})
        ids = {v: i for i, v in enumerate(values)}
        of_node = np.array([ids.get(n.metadata.labels.get(key, ""), -1) if key in n.metadata.labels else -1
                            for n in self.nodes], dtype=np.int32)
        doms = Domains(tuple(values), of_node)
        self._domains[key] = doms
        return doms

    def request_vector(self, requests: Mapping[str, int]) -> tuple[IntArray, tuple[str, ...]]:
        """A request as a row over this table's columns, plus the resources no node offers at all."""
        vec = np.zeros(len(self.resources), dtype=np.int64)
        unknown: list[str] = []
        for r, v in requests.items():
            col = self.column.get(r)
            if col is None:
                if v > 0:
                    unknown.append(r)
            else:
                vec[col] = _clamp(v)
        return vec, tuple(sorted(unknown))


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A consistent view for one scheduling cycle: the node table, the used-requests matrix and,
    when DRA objects exist, the device view (:class:`scheduler.dra.view.DraView`)."""

    table: NodeTable
    used: IntArray
    dra: DraView | None = None
    nominated: tuple[tuple[int, IntArray, int], ...] = ()
    """Unbound pods with ``status.nominatedNodeName`` (row, requests, priority): room another
    scheduler freed by preemption. The solver counts those of priority ≥ the root's as running
    there (kube-scheduler ``addGENominatedPods``)."""

    @classmethod
    def build(cls, table: NodeTable, pods: Iterable[Pod], dra: DraView | None = None) -> Snapshot:
        """Usage from every bound, non-terminal pod of any scheduler on a known node."""
        used = np.zeros_like(table.allocatable)
        row = table.index
        nominated: list[tuple[int, IntArray, int]] = []
        for pod in pods:
            if pod.is_terminal:
                continue
            if not pod.is_bound:
                target = row.get(pod.status.nominated_node_name or "")
                if target is not None and not pod.is_terminating:
                    vec, _ = table.request_vector(pod.requests)
                    nominated.append((target, vec, pod.spec.priority or 0))
                continue
            i = row.get(pod.spec.node_name)
            if i is None:
                continue
            for r, v in pod.requests.items():
                col = table.column.get(r)
                if col is not None:
                    used[i, col] += _clamp(v)
        return cls(table, used, dra, tuple(nominated))

    def free(self) -> IntArray:
        """A fresh ``(N, R)`` matrix of free capacity (allocatable − used); callers may modify it."""
        return self.table.allocatable - self.used

    def assume(self, placements: Sequence[tuple[Pod, str]], device_ids: Iterable[str] = ()) -> Snapshot:
        """A new snapshot with ``placements`` (pod, node name) added to usage and ``device_ids`` taken
        (design §2 *assume*). DRA-served extended resources are not node usage."""
        used = self.used.copy()
        row = self.table.index
        for pod, node_name in placements:
            vec, _ = self.table.request_vector(pod.requests)
            used[row[node_name]] += vec
        dra = self.dra.with_allocated(device_ids) if self.dra is not None else None
        return Snapshot(self.table, used, dra, self.nominated)
