"""The DRA device inventory: which devices each node can reach, what is allocated, what counters are left.

Maintained from ResourceSlices and DeviceClasses against a node table, **per pool**: the cache
calls :meth:`Inventory.set_slice` / :meth:`Inventory.remove_slice` for each slice event and only
that slice's pool is indexed again (O(devices of the pool)), :meth:`Inventory.set_class` /
:meth:`Inventory.remove_class` forget only that class's selector results, and
:meth:`Inventory.set_table` recomputes reach when nodes change (the CEL memo survives all three
except for the devices or class concerned).

* per (driver, pool) only the slices of the highest ``pool.generation`` count, and only once the
  pool is complete (``resourceSliceCount`` slices of that generation seen); incomplete pools are
  reported in :attr:`Inventory.problems` and not used (``resource.k8s.io/v1`` ``ResourcePool``);
* a device is reachable from the node named by its slice (``nodeName``), from every node its
  ``nodeSelector`` matches, or from all nodes (``allNodes``); with ``perDeviceNodeSelection`` the
  device says it itself;
* devices named in an allocated claim's ``status.allocation`` are taken (:meth:`with_allocated`
  gives a cycle's copy with the allocated set), and what they consume of shared counters is
  subtracted (so partitionable GPUs and MIG are never over-allocated);
* :meth:`Inventory.device_index` numbers the devices, so a set of them (the allocated and assumed
  ones, those a request matches) is a boolean mask and counting them per node is vectorised;
* selectors are evaluated lazily with :mod:`scheduler.dra.cel`, memoised per (class, selectors,
  device); a selector that fails to compile or evaluate matches nothing and is reported into the
  caller's error sink (one per solve), so the claim is unschedulable with a message naming the
  class or request — it never raises into the solver.

A copy made by :meth:`with_allocated` shares the index with the live inventory: it is valid until
the next ``set_*``/``remove_*`` call (the cycle never solves on a snapshot older than the cache);
:attr:`generation` tells them apart. Pure apart from the memo; no client imports.
"""

from __future__ import annotations

import difflib
import functools
import itertools
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np

from scheduler.dra.allocator import MAX_DEVICES_PER_CLAIM, Device, DeviceState, SubRequest
from scheduler.dra.capacity import Capacity, CapacityPolicy, qualify
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.selectors import node_selector_matches
from scheduler.lazy import lazy_module
from scheduler.model.dra import (
    AttributeValue,
    CapacityRequestPolicy,
    DeviceClass,
    DeviceUse,
    ResourceClaim,
    ResourceSlice,
    counter_quantities,
    qualified_name,
    slice_error,
    taken_devices,
)
from scheduler.model.dra import Device as ApiDevice
from scheduler.model.dra import DeviceAttribute as ApiDeviceAttribute
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector
from scheduler.model.quantity import parse

if TYPE_CHECKING:
    from scheduler.dra import cel
else:  # CEL is loaded by the first selector compiled or device viewed
    cel = lazy_module("scheduler.dra.cel")

PoolKey = tuple[str, str]
"""(driver, pool name): pools are per driver."""

INVALID_POOLS = "invalid resource pools were encountered"
"""Node reason when a claim cannot be allocated on a node that an invalid pool reaches (kube-scheduler's
structured allocator wording, ``allocator.go``, v1.37)."""

INCOMPLETE_POOLS = "resource pools were incomplete (not all their slices published yet)"
"""Node reason when a claim cannot be allocated on a node that an incomplete pool reaches: its devices are not used
until every slice of its newest generation is seen (ours; kube-scheduler's allocator skips such a pool silently)."""

CLASS_CUTOFF = 0.8
"""How alike an existing DeviceClass name must be to be offered for a missing one (``difflib`` ratio). Class
names share domain suffixes: ``gpu.nvidai.com`` is offered ``gpu.nvidia.com`` (0.93), ``gpu.nvidia.com`` is not
offered ``gpu.example.com`` (0.62)."""

ErrorSink = MutableMapping[str, str]
"""Where selector errors are reported: (class or request) label → message."""


@functools.lru_cache(maxsize=1024)
def _parse_version(text: str) -> cel.Version:
    """:meth:`cel.Version.parse`, memoised: a fleet publishes a handful of driver/CUDA versions on
    thousands of devices, and a ``Version`` is immutable (a bad one raises each time; not cached)."""
    return cel.Version.parse(text)


def _cel_value(attribute: ApiDeviceAttribute, value: AttributeValue) -> cel.AttributeValue:
    """An attribute's value as selectors see it: versions parsed (one or a list of them)."""
    versions = attribute.versions
    if versions is None:
        return value
    if attribute.version_values is not None:
        return tuple(_parse_version(v) for v in versions)
    return _parse_version(versions[0])


def selector_mask(selector: NodeSelector, nodes: tuple[Node, ...]) -> BoolArray:
    """Which of ``nodes`` a NodeSelector matches, as a mask."""
    return np.array([node_selector_matches(selector, n) for n in nodes], dtype=bool)


def pool_error(slices: Iterable[ResourceSlice]) -> str | None:
    """Why the slices of one pool generation make the pool invalid, else None: a device name listed twice,
    a counter set defined twice, or a device consuming a counter set (or a counter) the pool does not
    define. Kubernetes' allocator ignores such a pool entirely (structured ``pools.go`` ``poolIsInvalid``,
    ``getAndValidateCounterSets``, ``validateDeviceCounterConsumption``, v1.37; wording copied)."""
    slices = list(slices)
    names: set[str] = set()
    for s in slices:
        for dev in s.spec.devices:
            if dev.name in names:
                return f"duplicate device name {dev.name}"
            names.add(dev.name)
    counter_sets: dict[str, frozenset[str]] = {}
    for s in slices:
        for cs in s.spec.shared_counters:
            if cs.name in counter_sets:
                return f"duplicate counter set name {cs.name}"
            counter_sets[cs.name] = frozenset(cs.counters)
    for s in slices:
        for dev in s.spec.devices:
            for use in dev.consumes_counters:
                known = counter_sets.get(use.counter_set)
                if known is None:
                    return f"counter set {use.counter_set} not found"
                for counter in use.counters:
                    if counter not in known:
                        return f"counter {counter} not found in counter set {use.counter_set}"
    return None


@dataclass(frozen=True, eq=False)
class DeviceIndex:
    """The devices of one inventory generation in a fixed order, so that sets of devices are masks.

    ``ids``: device ids, in the inventory's order (D of them); ``position``: id → its index in ``ids``;
    ``home``: (D,) int, per device the one node row that reaches it, or -1 when none or several do
    (node-set and all-nodes devices); ``shared``: (D,) bool, the devices with ``allowMultipleAllocations``
    (``any_shared``: whether there is one).
    """

    ids: tuple[str, ...]
    position: dict[str, int]
    home: IntArray
    shared: BoolArray
    any_shared: bool

    def mask(self, device_ids: Iterable[str]) -> BoolArray:
        """(D,) bool, True at the devices of ``device_ids``; ids this index does not know are left out
        (a device of a slice removed since it was allocated)."""
        mask = np.zeros(len(self.ids), dtype=bool)
        position = self.position
        mask[[position[d] for d in device_ids if d in position]] = True
        return mask


MatchKey = tuple[str, tuple[str, ...]]
"""(class name, request selectors): what a device's selector result depends on besides the device."""


@dataclass(eq=False)
class Inventory:
    """Devices, reach, counters and allocations; see the module docstring.

    Longer than our ~300-line rule, on purpose: it keeps the device tables (devices, their reach as node
    masks, counters, the CEL views) consistent under incremental slice and class changes, and answers the
    allocator's and the DynamicResources plugin's questions from those same tables; splitting the updates
    from the reads would put one invariant (every index agrees with the slices) in two places.
    """

    table: NodeTable
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    devices: dict[str, Device] = field(default_factory=dict)
    reach: dict[str, BoolArray] = field(default_factory=dict)
    """device id → nodes (rows of ``table``) that can use it."""
    scope: dict[str, NodeSelector | str | None] = field(default_factory=dict)
    """device id → where an allocation of it is usable: a node name, the slice's NodeSelector, or None (all)."""
    views: dict[str, cel.DeviceView] = field(default_factory=dict)
    counters: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    allocated: tuple[DeviceUse, ...] = ()
    """How the cluster's allocated claims use their devices (:meth:`with_allocated` sets them per cycle)."""
    home: dict[str, int] = field(default_factory=dict)
    """device id → the one row that reaches it, or -1 when none or several do (node-set, all-nodes)."""
    consuming: set[str] = field(default_factory=set)
    """Ids of the devices that consume shared counters."""
    generation: int = 0
    """Bumped by every change to the index (copies made before it are stale)."""
    invalid: dict[PoolKey, BoolArray] = field(default_factory=dict)
    """Invalid pools (:func:`pool_error`) → the nodes their slices reach: none of their devices is used, and a
    node they reach that cannot allocate a claim is refused with :data:`INVALID_POOLS`."""
    incomplete: dict[PoolKey, BoolArray] = field(default_factory=dict)
    """Incomplete pools (fewer slices of their newest generation than ``resourceSliceCount``) → the nodes the slices
    seen reach: none of their devices is used, and such a node that cannot allocate a claim is refused with
    :data:`INCOMPLETE_POOLS`."""
    _slices: dict[PoolKey, dict[str, ResourceSlice]] = field(default_factory=dict)
    _pool_devices: dict[PoolKey, list[str]] = field(default_factory=dict)
    _pool_counters: dict[PoolKey, list[str]] = field(default_factory=dict)
    _pool_problems: dict[PoolKey, list[str]] = field(default_factory=dict)
    _match: dict[str, dict[MatchKey, bool]] = field(default_factory=dict)
    """device id → (class, selectors) → whether it matches (the CEL memo)."""
    _match_errors: dict[str, dict[MatchKey, tuple[str, str]]] = field(default_factory=dict)
    """device id → memo key → (label, message) of the selector error that made it False, re-reported on a hit."""
    _usable: dict[MatchKey, tuple[IntArray, BoolArray, dict[str, str]]] = field(default_factory=dict)
    """(class, selectors) → per-node count of matching devices, their mask over :meth:`device_index`, and
    the selector errors met (label → message, in the order :meth:`matches` reported them; re-reported on
    a hit)."""
    _hints: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(missing class, request) → its (label, message) with the closest existing class: kept until the classes
    change (:meth:`set_class`, :meth:`remove_class`), never per device."""
    _by_node: list[list[Device]] | None = None
    _index: DeviceIndex | None = None
    _accelerator_nodes: tuple[object, BoolArray] | None = None

    @classmethod
    def build(cls, table: NodeTable, slices: Iterable[ResourceSlice], classes: Iterable[DeviceClass],
              claims: Iterable[ResourceClaim]) -> Inventory:
        """Index ``slices`` for ``table``'s nodes with ``classes``; mark allocated claims' devices taken."""
        inv = cls(table, {c.metadata.name: c for c in classes})
        pools: dict[PoolKey, dict[str, ResourceSlice]] = {}
        for s in slices:
            pools.setdefault(s.pool_key, {})[s.metadata.name] = s
        inv._slices = pools
        for key in sorted(pools):
            inv._index_pool(key)
        inv.allocated = tuple(u for claim in claims for u in claim.allocated_uses)
        return inv

    # -- maintenance (the cache, per event) --------------------------------------------------------
    def set_slice(self, s: ResourceSlice, previous: ResourceSlice | None = None) -> None:
        """A slice was added or changed (``previous``: its old version, if any): index its pool again
        (and the old pool, when the slice moved to another pool)."""
        if previous is not None and previous.pool_key != s.pool_key:
            self.remove_slice(previous)
        self._slices.setdefault(s.pool_key, {})[s.metadata.name] = s
        self._index_pool(s.pool_key)

    def remove_slice(self, s: ResourceSlice) -> None:
        """A slice was deleted: index its pool again without it."""
        pool = self._slices.get(s.pool_key)
        if pool is not None:
            pool.pop(s.metadata.name, None)
            if not pool:
                del self._slices[s.pool_key]
        self._index_pool(s.pool_key)

    def set_class(self, klass: DeviceClass) -> None:
        """A DeviceClass was added or changed: forget the selector results that depend on it."""
        self.classes[klass.metadata.name] = klass
        self._forget_class(klass.metadata.name)

    def remove_class(self, name: str) -> None:
        """A DeviceClass was deleted: requests of it match nothing from now on."""
        self.classes.pop(name, None)
        self._forget_class(name)

    def set_table(self, table: NodeTable) -> None:
        """Nodes changed: recompute every device's reach against ``table`` (selector results are kept). The views
        per node are rebuilt for the new rows even when there is no pool to index again."""
        self.table = table
        self._changed()
        for key in sorted(self._slices.keys() | self._pool_devices.keys()):
            self._index_pool(key, keep_memo=True)

    def _forget_class(self, name: str) -> None:
        self._hints.clear()  # the closest existing class may be another now
        for results in self._match.values():
            for key in [k for k in results if k[0] == name]:
                del results[key]
        for errors in self._match_errors.values():
            for key in [k for k in errors if k[0] == name]:
                del errors[key]
        self._changed()

    def _changed(self) -> None:
        self.generation += 1
        self._usable.clear()
        self._by_node = None
        self._index = None
        self._accelerator_nodes = None

    def accelerator_nodes(self, table: NodeTable) -> BoolArray:
        """(N,) bool, read-only: ``table``'s accelerator nodes (:attr:`~scheduler.framework.node_table.NodeTable.
        accelerator`: an extended resource in their allocatable) and the nodes some device is local to (its one node
        row, :attr:`home`: accelerators published through DRA). Built once per table and :attr:`generation`, not per
        cycle."""
        hit = self._accelerator_nodes
        if hit is None or hit[0] is not table:
            mask = table.accelerator.copy()
            mask[[row for row in self.home.values() if row >= 0]] = True
            mask.setflags(write=False)
            hit = self._accelerator_nodes = (table, mask)
        return hit[1]

    def _index_pool(self, key: PoolKey, *, keep_memo: bool = False) -> None:
        """(Re)index one pool: drop its devices and counter sets, then add those of its newest complete
        generation (reporting an incomplete pool or a bad slice in :attr:`problems`)."""
        for dev_id in self._pool_devices.pop(key, []):
            self.devices.pop(dev_id, None)
            self.reach.pop(dev_id, None)
            self.scope.pop(dev_id, None)
            self.views.pop(dev_id, None)
            self.home.pop(dev_id, None)
            self.consuming.discard(dev_id)
            if not keep_memo:
                self._match.pop(dev_id, None)
                self._match_errors.pop(dev_id, None)
        for set_id in self._pool_counters.pop(key, []):
            self.counters.pop(set_id, None)
        self._pool_problems.pop(key, None)
        self.invalid.pop(key, None)
        self.incomplete.pop(key, None)
        self._changed()
        members = list(self._slices.get(key, {}).values())
        if not members:
            return
        driver, pool = key
        problems: list[str] = []
        newest = max(s.spec.pool.generation for s in members)
        current = sorted((s for s in members if s.spec.pool.generation == newest), key=lambda s: s.metadata.name)
        want = max(s.spec.pool.resource_slice_count for s in current)
        if len(current) < want:
            self._pool_problems[key] = [f"pool {driver}/{pool}: {len(current)}/{want} slices of generation "
                                        f"{newest} seen; not used until complete"]
            self.incomplete[key] = self._pool_reach(current)
            return
        if err := pool_error(current):
            self._pool_problems[key] = [f"pool {driver}/{pool}: {INVALID_POOLS}: {err}; none of its devices is used"]
            self.invalid[key] = self._pool_reach(current)
            return
        usable = []
        for s in current:
            if err := slice_error(s.spec):
                problems.append(f"ResourceSlice {s.metadata.name}: {err}")
                continue
            usable.append(s)
            for cs in s.spec.shared_counters:
                set_id = f"{driver}/{pool}/{cs.name}"
                self.counters[set_id] = counter_quantities(cs.counters)
                self._pool_counters.setdefault(key, []).append(set_id)
        everywhere = np.ones(len(self.table), dtype=bool)
        added: list[str] = []
        for s in usable:
            masks: dict[int, BoolArray] = {}  # id(NodeSelector) → its node mask, once per slice
            for dev in s.spec.devices:
                try:
                    added.append(self._add(s, dev, everywhere, masks))
                except ValueError as exc:  # a malformed quantity or version in the slice
                    problems.append(f"device {driver}/{pool}/{dev.name}: {exc}")
        self._pool_devices[key] = added
        if problems:
            self._pool_problems[key] = problems

    def _pool_reach(self, slices: Iterable[ResourceSlice]) -> BoolArray:
        """The nodes any of ``slices`` (or, with ``perDeviceNodeSelection``, any of their devices) reaches."""
        reach = np.zeros(len(self.table), dtype=bool)
        for s in slices:
            spec = s.spec
            wheres = [(d.node_name, d.node_selector, d.all_nodes) for d in spec.devices] \
                if spec.per_device_node_selection else [(spec.node_name, spec.node_selector, spec.all_nodes)]
            for node_name, selector, all_nodes in wheres:
                if node_name:
                    row = self.table.index.get(node_name)
                    if row is not None:
                        reach[row] = True
                elif selector is not None:
                    reach |= selector_mask(selector, self.table.nodes)
                elif all_nodes:
                    reach[:] = True
        return reach

    def invalid_reach(self) -> BoolArray:
        """(N,) bool: the nodes some invalid pool reaches."""
        return self._reach_of(self.invalid.values())

    def incomplete_reach(self) -> BoolArray:
        """(N,) bool: the nodes some incomplete pool reaches."""
        return self._reach_of(self.incomplete.values())

    def _reach_of(self, masks: Iterable[BoolArray]) -> BoolArray:
        reach = np.zeros(len(self.table), dtype=bool)
        for mask in masks:
            reach |= mask
        return reach

    @property
    def problems(self) -> list[str]:
        """Why pools, slices or devices are not used (incomplete pools, bad node selection, bad values),
        in pool order."""
        return [p for key in sorted(self._pool_problems) for p in self._pool_problems[key]]

    def _add(self, s: ResourceSlice, dev: ApiDevice, everywhere: BoolArray, masks: dict[int, BoolArray]) -> str:
        """Index one device of a usable slice; returns its id. Raises ValueError (a malformed quantity or version)
        before anything of the device is kept."""
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
                shared = masks[id(selector)] = selector_mask(selector, self.table.nodes)
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
        capacity = tuple(Capacity(name, qualify(driver, name), c.quantity, _policy(c.request_policy))
                         for name, c in dev.capacity.items())
        view = cel.DeviceView.build(  # raises on a malformed version: before anything of the device is kept
            driver, {k: _cel_value(a, v) for k, a, v in present},
            {k: c.quantity for k, c in dev.capacity.items()}, bool(dev.allow_multiple_allocations))
        self.devices[dev_id] = Device(
            id=dev_id, driver=driver, pool=pool, name=dev.name, attributes=attributes, consumes=tuple(consumes),
            taints=tuple((t.key, t.value, t.effect) for t in dev.taints), weight=weight,
            binding_conditions=dev.binding_conditions, binding_failure_conditions=dev.binding_failure_conditions,
            binds_to_node=bool(dev.binds_to_node), shared=bool(dev.allow_multiple_allocations), capacity=capacity)
        self.reach[dev_id] = reach
        self.scope[dev_id] = scope
        if node_name:
            self.home[dev_id] = -1 if row is None else row
        else:
            rows = np.flatnonzero(reach)
            self.home[dev_id] = int(rows[0]) if len(rows) == 1 else -1
        if consumes:
            self.consuming.add(dev_id)
        self.views[dev_id] = view
        return dev_id

    def with_allocated(self, uses: Iterable[DeviceUse]) -> Inventory:
        """The same devices, reach, counters and selector memo, with ``uses`` as the allocations:
        a cycle's copy (allocations change with every claim, the index only with slices, classes and
        nodes). Shares the index, so it is valid until the next change (:attr:`generation`)."""
        if self._by_node is None and len(self.table):
            self.on_node(0)  # index once, shared by every copy
        self.device_index()
        return replace(self, allocated=tuple(uses))

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

    def device_index(self) -> DeviceIndex:
        """The devices numbered (built once per :attr:`generation`, shared by the copies made after)."""
        if self._index is None:
            ids = tuple(self.devices)
            home = np.fromiter((self.home[d] for d in ids), dtype=np.intp, count=len(ids))
            home.setflags(write=False)
            shared = np.fromiter((self.devices[d].shared for d in ids), dtype=bool, count=len(ids))
            shared.setflags(write=False)
            self._index = DeviceIndex(ids, {d: i for i, d in enumerate(ids)}, home, shared, bool(shared.any()))
        return self._index

    def held_mask(self, assumed: Iterable[DeviceUse] = ()) -> BoolArray:
        """(D,) bool over :meth:`device_index`: the devices :meth:`state` starts taken whole (by an allocation or
        by one of ``assumed``: admin access takes none, a share of a shared device leaves it to others),
        read-only."""
        mask = self.device_index().mask(taken_devices(itertools.chain(self.allocated, assumed)))
        mask.setflags(write=False)
        return mask

    def state(self, assumed: Iterable[DeviceUse] = ()) -> DeviceState:
        """A fresh scratch state: the devices the allocations (and ``assumed``) take whole, the shares of shared
        devices with the capacity they consume (``consumedCapacity``, KEP-5075), and their counter use
        subtracted (a shared device's once)."""
        counters = {k: dict(v) for k, v in self.counters.items()}
        uses = (*self.allocated, *assumed)
        taken = {u.device: u for u in uses if u.share_id is None and not u.admin}  # DeviceUse.exclusive, inline
        shares: dict[str, int] = {}
        consumed: dict[str, dict[str, Decimal]] = {}
        devices = self.devices
        for u in uses if len(taken) < len(uses) else ():  # some use is a share or admin access
            if u.share_id is None or u.admin:
                continue
            dev_id = u.device
            shares[dev_id] = shares.get(dev_id, 0) + 1
            if u.consumed and (device := devices.get(dev_id)) is not None:
                used = consumed.get(dev_id)
                if used is None:
                    used = consumed[dev_id] = {}
                for name, amount in u.consumed:
                    key = _capacity_key(device, name)
                    if key is not None:
                        used[key] = used.get(key, Decimal(0)) + amount
        state = DeviceState(taken=taken, counters=counters, shares=shares, consumed=consumed)
        # only these change counters; in a fixed order
        for dev_id in sorted((taken.keys() | shares.keys()) & self.consuming):
            for set_id, amounts in self.devices[dev_id].consumes:
                left = counters.setdefault(set_id, {})
                for c, a in amounts:
                    left[c] = left.get(c, Decimal(0)) - a
        return state

    def matches(self, sub: SubRequest, device: Device, errors: ErrorSink | None = None) -> bool:
        """Whether ``device`` is of ``sub``'s class and passes the class's and the request's selectors — False for
        every device once :meth:`usable_counts` found the selectors failing on some device (the allocator then
        agrees with the node mask).

        A selector that fails is reported into ``errors`` (label → message), also when the memo answers; so is a
        DeviceClass that does not exist, with the closest one existing now (:meth:`missing_class`).
        """
        if sub.class_name not in self.classes:  # no device matches: not memoised per device, the hint may change
            if errors is not None:
                label, message = self.missing_class(sub)
                errors[label] = message
            return False
        key = (sub.class_name, sub.selectors)
        memo = self._match.get(device.id)
        if memo is None:
            memo = self._match[device.id] = {}
        hit = memo.get(key)
        if hit is None:
            hit, error = self._evaluate(sub, device)
            memo[key] = hit
            if error is not None:
                self._match_errors.setdefault(device.id, {})[key] = error
        if errors is not None and self._match_errors:
            known = self._match_errors.get(device.id)
            if known is not None and (error := known.get(key)) is not None:
                errors[error[0]] = error[1]
        if hit and (usable := self._usable.get(key)) is not None and usable[2]:
            return False  # the selectors failed on another device: the request gets none (usable_counts)
        return hit

    def _evaluate(self, sub: SubRequest, device: Device) -> tuple[bool, tuple[str, str] | None]:
        """Whether ``device`` matches, and the (label, message) of the selector error that stopped it."""
        klass = self.classes[sub.class_name]  # a missing class never reaches the memo (matches)
        class_exprs = [s.cel.expression for s in klass.spec.selectors]
        for label, exprs in ((f"DeviceClass {sub.class_name}", class_exprs), (f"request {sub.result}", sub.selectors)):
            for expr in exprs:
                try:
                    if not cel.compile_selector(expr).matches(self.views[device.id]):
                        return False, None
                except cel.SelectorError as exc:
                    return False, (label, f"{label}: selector {expr!r}: {exc.reason}")
        return True, None

    def missing_class(self, sub: SubRequest) -> tuple[str, str]:
        """The (label, message) for ``sub`` whose DeviceClass does not exist, offering the closest existing name.
        kube-scheduler's allocator refuses such a request before it looks at any device ("claim …, request …:
        could not retrieve device class …", structured allocator's ``validateDeviceRequest``), so it is reported
        also when no device exists at all. Memoised per (class, request) until the classes change."""
        hit = self._hints.get((sub.class_name, sub.result))
        if hit is None:
            close = difflib.get_close_matches(sub.class_name, self.classes, n=1, cutoff=CLASS_CUTOFF)
            hint = f" (did you mean {close[0]}?)" if close else ""
            hit = self._hints[(sub.class_name, sub.result)] = (
                f"DeviceClass {sub.class_name}", f"request {sub.result}: DeviceClass {sub.class_name} not found{hint}")
        return hit

    def usable_counts(self, sub: SubRequest, errors: ErrorSink | None = None) -> tuple[IntArray, BoolArray]:
        """Per node, how many devices matching ``sub`` it reaches (ignoring what is taken; a shared device counts
        as :data:`~scheduler.dra.allocator.MAX_DEVICES_PER_CLAIM`, the most results it may serve): (N,) int; and
        which devices match: (D,) bool over :meth:`device_index`. Memoised per (class, selectors) until
        the next change; the selector errors met, and a DeviceClass that does not exist, are reported into
        ``errors`` on every call. A selector that fails on any device leaves ``sub`` no device at all (zero counts,
        nothing matching), as kube-scheduler's structured allocator fails the allocation on a CEL runtime error
        instead of skipping the device. Both arrays are read-only."""
        key = (sub.class_name, sub.selectors)
        hit = self._usable.get(key)
        if hit is None:
            counts = np.zeros(len(self.table), dtype=np.int64)
            ids = self.device_index().ids
            matching = np.zeros(len(ids), dtype=bool)
            met: dict[str, str] = {}
            if sub.class_name not in self.classes:  # no device matches: reported once, not per device
                label, message = self.missing_class(sub)
                met[label] = message
            else:
                for i, dev_id in enumerate(ids):
                    device = self.devices[dev_id]
                    if self.matches(sub, device, met):
                        # a shared device may serve every result of one claim (one share each)
                        counts += self.reach[dev_id] * (MAX_DEVICES_PER_CLAIM if device.shared else 1)
                        matching[i] = True
                if met:  # a selector failed on some device: kube-scheduler's allocator stops at a CEL runtime error
                    counts[:] = 0
                    matching[:] = False
            counts.setflags(write=False)
            matching.setflags(write=False)
            hit = self._usable[key] = (counts, matching, met)
        if errors is not None:
            errors.update(hit[2])
        return hit[0], hit[1]


def _policy(policy: CapacityRequestPolicy | None) -> CapacityPolicy | None:
    """A capacity's ``requestPolicy`` with its quantities parsed exactly (raises ``QuantityError``, a
    ``ValueError``, on a malformed one: the device is then reported and not used)."""
    if policy is None:
        return None
    r = policy.valid_range
    return CapacityPolicy(
        default=parse(policy.default) if policy.default is not None else None,
        minimum=parse(r.min) if r is not None else None,
        maximum=parse(r.max) if r is not None and r.max is not None else None,
        step=parse(r.step) if r is not None and r.step is not None else None,
        valid_values=tuple(parse(v) for v in policy.valid_values))


def _capacity_key(device: Device, name: str) -> str | None:
    """The device's own name of capacity ``name`` (short or with the driver's domain), or None if it has none."""
    for c in device.capacity:
        if c.name == name:  # written as the device publishes it, as the allocator writes it
            return name
    key = qualify(device.driver, name)
    return next((c.name for c in device.capacity if c.qualified == key), None)
