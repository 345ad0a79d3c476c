"""The static half of a snapshot: nodes, their allocatable matrix, labels, domains, and static filter memos.

``NodeTable`` holds what changes only when nodes change: names, labels, taints, allocatable as an
``(N, R)`` integer matrix, topology domains, and a memo of static filter results per pod
scheduling signature. It is immutable once built: the cache builds a new table when a node is
added, removed or relabelled, and :meth:`NodeTable.with_allocatable` shares the memos when only
allocatable changed (static filters never read it).

Units: ``cpu`` in milli-cores, every other resource in whole units (bytes, counts).
Nodes are sorted by name, which makes every tie-break in the solver deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.framework.selectors import as_int
from scheduler.framework.status import Status
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector, NodeSelectorRequirement, PodSpec
from scheduler.model.quantity import PODS, is_extended

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

StaticKey = tuple[object, ...]
StaticCheck = Callable[[PodSpec, Node], Status | None]
"""A node's verdict on a pod spec from its static properties alone (the static filters in order)."""

MAX_UNITS = 2**53
"""Amounts in the int64 matrices are clamped to ±2^53 units — far above any real node (8 EiB, 9e12
cores) and far enough below 2^63 that sums over a node's pods cannot overflow. An API-valid but
absurd request (``cpu: 1e16``) thus simply never fits instead of crashing the solver."""


MAX_REQUEST_VECTORS = 4096
"""Distinct requests whose rows a table keeps (:meth:`NodeTable.request_vector`); past it the memo starts over."""


def clamp(units: int) -> int:
    """``units`` clamped to ±:data:`MAX_UNITS`."""
    return max(-MAX_UNITS, min(units, MAX_UNITS))


T = TypeVar("T")


def static_key(spec: PodSpec) -> StaticKey:
    """The part of a pod spec that static filters (and the static scores: preferred node affinity,
    PreferNoSchedule taints) read: two pods with equal keys pass, and score, the same nodes. Of
    ``spec.affinity`` only the node affinity: pod (anti-)affinity is dynamic (InterPodAffinity keys
    its signatures on it)."""
    node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    return (tuple(sorted(spec.node_selector.items())), node_affinity, spec.tolerations)


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
    _selectors: dict[tuple[NodeSelector, bool], BoolArray] = field(default_factory=dict, repr=False)
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _vectors: dict[tuple[tuple[str, int], ...], tuple[IntArray, tuple[str, ...]]] = field(
        default_factory=dict, repr=False)

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
                alloc[i, column[r]] = clamp(v)
        return cls(ordered, resources, alloc, column, _accelerators(resources, alloc))

    def with_allocatable(self, node: Node) -> NodeTable | None:
        """A table where ``node`` (already a row, same name) has its new allocatable, sharing the static
        and domain memos (static filters do not read allocatable); None when the node offers a resource
        the table has no column for (the caller rebuilds)."""
        row = self.index[node.name]
        if any(r not in self.column for r in node.allocatable):
            return None
        alloc = self.allocatable.copy()
        alloc[row] = 0
        for r, v in node.allocatable.items():
            alloc[row, self.column[r]] = clamp(v)
        nodes = list(self.nodes)
        nodes[row] = node
        return replace(self, nodes=tuple(nodes), allocatable=alloc, accelerator=_accelerators(self.resources, alloc))

    def __len__(self) -> int:
        return len(self.nodes)

    @cached_property
    def index(self) -> dict[str, int]:
        """Node name → row."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    @cached_property
    def offered(self) -> frozenset[str]:
        """The resources some node offers a non-zero amount of in ``status.allocatable``: a resource every node
        lists at 0 is offered by none, as kube-scheduler's DynamicResources plugin reads it
        (``extendeddynamicresources.go``: an allocatable amount of 0 is served through DRA)."""
        return frozenset(self.resources[j] for j in np.flatnonzero((self.allocatable > 0).any(axis=0)))

    @cached_property
    def max_allocatable(self) -> IntArray:
        """``(R,)`` the largest allocatable of each resource on any node (≥ 1), to compare resources by share."""
        if not len(self.nodes):
            return np.ones(len(self.resources), dtype=np.int64)
        return np.asarray(np.maximum(self.allocatable.max(axis=0), 1), dtype=np.int64)

    def static_fit(self, spec: PodSpec, check: StaticCheck) -> StaticFit:
        """``check`` over every node for pods like ``spec``, computed once per :func:`static_key` and memoised
        (``check`` must be the same function for the table's lifetime: the solver's static filter chain)."""
        key = static_key(spec)
        hit = self._static.get(key)
        if hit is not None:
            return hit
        ok = np.ones(len(self.nodes), dtype=bool)
        rejected: dict[int, Status] = {}
        for i, node in enumerate(self.nodes):
            status = check(spec, node)
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

    def selector_mask(self, selector: NodeSelector, *, names: bool = True) -> BoolArray:
        """Which nodes ``selector`` matches, ``(N,)`` (memoised per selector; do not modify the result).

        The semantics of :func:`scheduler.framework.selectors.node_selector_matches` (terms ORed, a term's
        requirements ANDed, an empty term matches nothing; ``matchFields`` only ``metadata.name`` In/NotIn
        with one value), vectorised over the label domains. ``names=False`` matches against nodes that
        have labels but no name, as kube's ``CheckNodeAffinity`` does for a PersistentVolume's node affinity
        (``volume/util``: the node is built from labels only, so ``matchFields`` sees ``metadata.name: ""``).
        """
        key = (selector, names)
        hit = self._selectors.get(key)
        if hit is not None:
            return hit
        mask = np.zeros(len(self.nodes), dtype=bool)
        for term in selector.node_selector_terms:
            if not term.match_expressions and not term.match_fields:
                continue
            here = np.ones(len(self.nodes), dtype=bool)
            for req in term.match_expressions:
                here &= self._label_requirement(req)
            for req in term.match_fields:
                here &= self._field_requirement(req, names)
            mask |= here
        mask.setflags(write=False)
        self._selectors[key] = mask
        return mask

    def _label_requirement(self, req: NodeSelectorRequirement) -> BoolArray:
        doms = self.domains(req.key)
        ids = doms.of_node
        has = ids >= 0
        wanted = np.array([i for i, v in enumerate(doms.values) if v in req.values], dtype=np.int32)
        match req.operator:
            case "In":
                return np.isin(ids, wanted)
            case "NotIn":
                return ~np.isin(ids, wanted)
            case "Exists":
                return has
            case "DoesNotExist":
                return ~has
            case "Gt" | "Lt":
                want = as_int(req.values[0]) if len(req.values) == 1 else None
                if want is None:
                    return np.zeros(len(ids), dtype=bool)
                have = [as_int(v) for v in doms.values]
                ok = np.array([h is not None and (h > want if req.operator == "Gt" else h < want) for h in have]
                              + [False], dtype=bool)
                return ok[ids]  # -1 (no label) indexes the trailing False
        return np.zeros(len(ids), dtype=bool)

    def _field_requirement(self, req: NodeSelectorRequirement, names: bool) -> BoolArray:
        if req.key != "metadata.name" or req.operator not in ("In", "NotIn") or len(req.values) != 1:
            return np.zeros(len(self.nodes), dtype=bool)
        equal = (np.array([n.name == req.values[0] for n in self.nodes], dtype=bool) if names
                 else np.full(len(self.nodes), req.values[0] == "", dtype=bool))
        return equal if req.operator == "In" else ~equal

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this table's lifetime (shared with :meth:`with_allocatable`):
        for per-node values that depend only on labels and taints, e.g. a static score per static key.
        ``key`` must start with the caller's plugin name."""
        if key in self._memo:
            return self._memo[key]  # type: ignore[no-any-return]
        value = compute()
        self._memo[key] = value
        return value

    def request_vector(self, requests: Mapping[str, int]) -> tuple[IntArray, tuple[str, ...]]:
        """A request as a row over this table's columns, plus the resources no node offers at all.

        Memoised per request (most pods share a few shapes; the columns outlive :meth:`with_allocatable`), at
        most :data:`MAX_REQUEST_VECTORS` at a time. The row is read-only (a write raises ``ValueError``): callers
        copy it to change it."""
        key = tuple(requests.items())
        hit = self._vectors.get(key)
        if hit is not None:
            return hit
        if len(self._vectors) >= MAX_REQUEST_VECTORS:
            self._vectors.clear()
        found = self._request_vector(requests)
        found[0].setflags(write=False)
        self._vectors[key] = found
        return found

    def _request_vector(self, requests: Mapping[str, int]) -> tuple[IntArray, tuple[str, ...]]:
        vec = np.zeros(len(self.resources), dtype=np.int64)
        unknown: list[str] = []
        for r, v in requests.items():
            col = self.column.get(r)
            if col is None:
                if v > 0:
                    unknown.append(r)
            else:
                vec[col] = clamp(v)
        return vec, tuple(sorted(unknown))


def _accelerators(resources: tuple[str, ...], alloc: IntArray) -> BoolArray:
    ext_cols = [j for j, r in enumerate(resources) if is_extended(r)]
    if not ext_cols:
        return np.zeros(alloc.shape[0], dtype=bool)
    return np.asarray((alloc[:, ext_cols] > 0).any(axis=1), dtype=bool)
