"""The DRA device inventory: which devices each node can reach, what is allocated, what counters are left.

Built from ResourceSlices, DeviceClasses and ResourceClaims against a node table:

* per (driver, pool) only the slices of the highest ``pool.generation`` count, and only once the
  pool is complete (``resourceSliceCount`` slices of that generation seen); incomplete pools are
  reported in :attr:`Inventory.problems` and not used (reference §6.1);
* a device is reachable from the node named by its slice (``nodeName``), from every node its
  ``nodeSelector`` matches, or from all nodes (``allNodes``); with ``perDeviceNodeSelection`` the
  device says it itself;
* devices named in an allocated claim's ``status.allocation`` are taken, and what they consume
  of shared counters is subtracted (so partitionable GPUs and MIG are never over-allocated);
* selectors are evaluated lazily with :mod:`scheduler.dra.cel`, memoised per (class, selectors,
  device); a selector that fails to compile or evaluate matches nothing and is recorded in
  :attr:`Inventory.selector_errors`, so the claim is unschedulable with a message naming the
  class or claim — it never raises into the solver.

Pure apart from the memo; no client imports.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal

import numpy as np

from scheduler.dra import cel
from scheduler.dra.allocator import Device, DeviceState, SubRequest
from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    counter_quantities,
    qualified_name,
    slice_error,
)
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector
from scheduler.solver.filters.node_affinity import term_matches
from scheduler.solver.snapshot import BoolArray, IntArray, NodeTable


@functools.lru_cache(maxsize=1024)
def _parse_version(text: str) -> cel.Version:
    """:meth:`cel.Version.parse`, memoised: a fleet publishes a handful of driver/CUDA versions on
    thousands of devices, and a ``Version`` is immutable (a bad one raises each time; not cached)."""
    return cel.Version.parse(text)


def _selector_mask(selector: NodeSelector, nodes: tuple[Node, ...]) -> BoolArray:
    return np.array([any(term_matches(t, n) for t in selector.node_selector_terms) for n in nodes], dtype=bool)


@dataclass(eq=False)
class Inventory:
    """Devices, reach, counters and allocations; see the module docstring."""

    table: NodeTable
    devices: dict[str, Device]
    reach: dict[str, BoolArray]
    """device id → nodes (rows of ``table``) that can use it."""
    scope: dict[str, NodeSelector | str | None]
    """device id → where an allocation of it is usable: a node name, the slice's NodeSelector, or None (all)."""
    views: dict[str, cel.DeviceView]
    counters: dict[str, dict[str, Decimal]]
    classes: dict[str, DeviceClass]
    allocated: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    selector_errors: dict[str, str] = field(default_factory=dict)
    """(class or claim) label → error message, for every selector that failed."""
    _by_node: list[list[Device]] | None = None
    _match: dict[tuple[str, tuple[str, ...], str], bool] = field(default_factory=dict)
    _match_errors: dict[tuple[str, tuple[str, ...], str], tuple[str, str]] = field(default_factory=dict)
    """memo key → (label, message) of the selector error that made it False, re-reported on a memo hit."""
    _usable: dict[tuple[str, tuple[str, ...]], tuple[IntArray, frozenset[str], dict[str, str]]] = field(
        default_factory=dict)
    """(class, selectors) → per-node count of matching devices, their ids, and the selector errors met
    (label → message, in the order :meth:`matches` reported them; re-reported on a memo hit)."""
    home: dict[str, int] = field(default_factory=dict)
    """device id → the one row that reaches it, or -1 when none or several do (node-set, all-nodes)."""
    consuming: set[str] = field(default_factory=set)
    """Ids of the devices that consume shared counters."""

    @classmethod
    def build(cls, table: NodeTable, slices: Iterable[ResourceSlice], classes: Iterable[DeviceClass],
              claims: Iterable[ResourceClaim]) -> Inventory:
        """Index the usable pools' devices for ``table``'s nodes; mark allocated claims' devices taken."""
        inv = cls(table, {}, {}, {}, {}, {}, {c.metadata.name: c for c in classes})
        pools: dict[tuple[str, str], list[ResourceSlice]] = {}
        for s in slices:
            pools.setdefault(s.pool_key, []).append(s)
        everywhere = np.ones(len(table), dtype=bool)
        for (driver, pool), members in sorted(pools.items()):
            newest = max(s.spec.pool.generation for s in members)
            current = [s for s in members if s.spec.pool.generation == newest]
            want = max(s.spec.pool.resource_slice_count for s in current)
            if len(current) < want:
                inv.problems.append(f"pool {driver}/{pool}: {len(current)}/{want} slices of generation {newest} "
                                    "seen; not used until complete")
                continue
            for s in current:
                if err := slice_error(s.spec):
                    inv.problems.append(f"ResourceSlice {s.metadata.name}: {err}")
                    continue
                for cs in s.spec.shared_counters:
                    inv.counters[f"{driver}/{pool}/{cs.name}"] = counter_quantities(cs.counters)
            for s in current:
                if slice_error(s.spec):
                    continue
                masks: dict[int, BoolArray] = {}  # id(NodeSelector) → its node mask, once per slice
                for dev in s.spec.devices:
                    try:
                        inv._add(s, dev, everywhere, masks)
                    except ValueError as exc:  # a malformed quantity or version in the slice
                        inv.problems.append(f"device {driver}/{pool}/{dev.name}: {exc}")
        for claim in claims:
            alloc = claim.status.allocation if claim.status else None
            if alloc is None:
                continue
            for result in alloc.devices.results if alloc.devices else ():
                dev_id = result.device_id
                inv.allocated.add(dev_id)
        return inv

    def _add(self, s: ResourceSlice, dev: object, everywhere: BoolArray, masks: dict[int, BoolArray]) -> None:
        from scheduler.model.dra import Device as ApiDevice

        assert isinstance(dev, ApiDevice)
        driver, pool = s.spec.driver, s.spec.pool.name
        dev_id = f"{driver}/{pool}/{dev.name}"
        spec = s.spec
        node_name, selector, all_nodes = spec.node_name, spec.node_selector, spec.all_nodes
        if spec.per_device_node_selection:
            node_name, selector, all_nodes = dev.node_name, dev.node_selector, dev.all_nodes
        if node_name:
            row = self.table.index.get(node_name)
            reach = np.zeros(len(self.table), dtype=bool)
            if row is not None:
                reach[row] = True
            scope: NodeSelector | str | None = node_name
        elif selector is not None:
            shared = masks.get(id(selector))  # the slice's selector is shared by all its devices
            if shared is None:
                shared = masks[id(selector)] = _selector_mask(selector, self.table.nodes)
            reach = shared
            scope = selector
        else:
            reach = everywhere if all_nodes else np.zeros(len(self.table), dtype=bool)
            scope = None
        consumes = []
        weight = 0.0
        for use in dev.consumes_counters:
            set_id = f"{driver}/{pool}/{use.counter_set}"
            amounts = tuple(sorted(counter_quantities(use.counters).items()))
            consumes.append((set_id, amounts))
            total = self.counters.get(set_id, {})
            shares = [float(a / total[c]) for c, a in amounts if total.get(c)]
            weight += max(shares, default=1.0)
        present = [(k, a, v) for k, a in dev.attributes.items() if (v := a.value) is not None]
        attributes = {qualified_name(driver, k): v for k, _, v in present}
        self.devices[dev_id] = Device(
            id=dev_id, driver=driver, pool=pool, name=dev.name, attributes=attributes, consumes=tuple(consumes),
            taints=tuple((t.key, t.value, t.effect) for t in dev.taints), weight=weight)
        self.reach[dev_id] = reach
        self.scope[dev_id] = scope
        if node_name:
            self.home[dev_id] = -1 if row is None else row
        else:
            rows = np.flatnonzero(reach)
            self.home[dev_id] = int(rows[0]) if len(rows) == 1 else -1
        if consumes:
            self.consuming.add(dev_id)
        self.views[dev_id] = cel.DeviceView.build(
            driver, {k: _parse_version(a.version_value) if a.version_value is not None else v for k, a, v in present},
            {k: c.quantity for k, c in dev.capacity.items()}, bool(dev.allow_multiple_allocations))

    def with_allocated(self, device_ids: Iterable[str]) -> Inventory:
        """The same devices, reach, counters and selector memo, with ``device_ids`` as the allocated set.

        For the live cache: the device index is rebuilt only when slices, classes or nodes change,
        while allocations change with every claim; the copy starts with no selector errors and
        collects those its own solve meets (memoised ones included).
        """
        if self._by_node is None and len(self.table):
            self.on_node(0)  # index once, shared by every copy
        return replace(self, allocated=set(device_ids), selector_errors={})

    # -- views ---------------------------------------------------------------------
    def on_node(self, row: int) -> list[Device]:
        """Devices reachable from node ``row``."""
        if self._by_node is None:
            by_node: list[list[Device]] = [[] for _ in range(len(self.table))]
            for dev_id, reach in self.reach.items():
                for r in np.flatnonzero(reach):
                    by_node[int(r)].append(self.devices[dev_id])
            self._by_node = by_node
        return self._by_node[row]

    def state(self, assumed: Iterable[str] = ()) -> DeviceState:
        """A fresh scratch state: allocated (and ``assumed``) devices taken, their counter use subtracted."""
        counters = {k: dict(v) for k, v in self.counters.items()}
        taken = set(self.allocated)
        taken.update(assumed)
        state = DeviceState(taken=taken, counters=counters)
        for dev_id in sorted(taken & self.consuming):  # only these change counters; in a fixed order
            for set_id, amounts in self.devices[dev_id].consumes:
                left = counters.setdefault(set_id, {})
                for c, a in amounts:
                    left[c] = left.get(c, Decimal(0)) - a
        return state

    def matches(self, sub: SubRequest, device: Device) -> bool:
        """Whether ``device`` is of ``sub``'s class and passes the class's and the request's selectors."""
        key = (sub.class_name, sub.selectors, device.id)
        hit = self._match.get(key)
        if hit is None:
            hit, error = self._evaluate(sub, device)
            self._match[key] = hit
            if error is not None:
                self._match_errors[key] = error
        if (error := self._match_errors.get(key)) is not None:
            self.selector_errors[error[0]] = error[1]
        return hit

    def _evaluate(self, sub: SubRequest, device: Device) -> tuple[bool, tuple[str, str] | None]:
        """Whether ``device`` matches, and the (label, message) of the selector error that stopped it."""
        klass = self.classes.get(sub.class_name)
        if klass is None:
            label = f"DeviceClass {sub.class_name}"
            return False, (label, f"DeviceClass {sub.class_name} not found")
        class_exprs = [s.cel.expression for s in klass.spec.selectors if s.cel is not None]
        for label, exprs in ((f"DeviceClass {sub.class_name}", class_exprs), (f"request {sub.result}", sub.selectors)):
            for expr in exprs:
                try:
                    if not cel.compile_selector(expr).matches(self.views[device.id]):
                        return False, None
                except cel.SelectorError as exc:
                    return False, (label, f"{label}: selector {expr!r}: {exc}")
        return True, None

    def usable_counts(self, sub: SubRequest) -> tuple[IntArray, frozenset[str]]:
        """Per node, how many devices matching ``sub`` it reaches (ignoring what is taken), and the ids
        of the matching devices. Memoised per (class, selectors) like :meth:`matches`, whose selector
        errors it re-reports on a hit. Do not modify the returned array."""
        key = (sub.class_name, sub.selectors)
        hit = self._usable.get(key)
        if hit is None:
            counts = np.zeros(len(self.table), dtype=np.int64)
            matching: list[str] = []
            before = self.selector_errors
            self.selector_errors = {}  # collect the errors this pass reports, in order
            try:
                for dev in self.devices.values():
                    if self.matches(sub, dev):
                        counts += self.reach[dev.id]
                        matching.append(dev.id)
                errors = self.selector_errors
            finally:
                self.selector_errors = before
            counts.setflags(write=False)
            hit = self._usable[key] = (counts, frozenset(matching), errors)
        self.selector_errors.update(hit[2])
        return hit[0], hit[1]

    def usable_nodes(self, sub: SubRequest) -> BoolArray:
        """Nodes that can reach at least ``sub.count`` devices matching ``sub`` (ignoring what is taken)."""
        counts, _ = self.usable_counts(sub)
        return counts >= (1 if sub.all else sub.count)
