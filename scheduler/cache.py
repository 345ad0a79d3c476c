"""ClusterCache: the scheduler's picture of the cluster, fed only by the watch, plus assumptions.

Holds the current Pods, Nodes, PodGroups, CompositePodGroups and PriorityClasses — and, when the
server serves ``resource.k8s.io/v1``, ResourceSlices, DeviceClasses, ResourceClaims and
ResourceClaimTemplates — by key (the informers call :meth:`replace` after each list and
:meth:`apply` for each watch event), and the placements and devices the scheduler has *assumed*
but the API does not show yet (design §2: a plan's capacity is held in memory from the moment it
is decided, never by half-bound pods or half-written claims).

DRA (reference §6): the device :class:`~scheduler.dra.inventory.Inventory` is rebuilt only when
slices, classes or nodes changed; what is allocated is read from the claims for every snapshot
(so a claim whose allocation is removed, or that is deleted, returns its devices at once), and
the devices of in-flight plans are held by :meth:`assume_devices` until the watch shows their
claims allocated (or gone), or the driver calls :meth:`forget_devices`.

It returns what changed as a :class:`Changes` value; it never calls the queue (style guide:
data flows one way, the driver routes). A re-list replaces the whole kind, so a missed delete
or a replayed add can never double-count usage. An assumption ends when the watch shows the pod
bound (or gone), or when the driver calls :meth:`forget` after a failed bind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from scheduler.dra.claims import ClaimIndex
from scheduler.dra.inventory import Inventory
from scheduler.dra.view import DraView
from scheduler.groups.tree import Forest, build_trees
from scheduler.model.base import describe
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass
from scheduler.solver.plan import ClaimAllocation
from scheduler.solver.snapshot import NodeTable, Snapshot

log = logging.getLogger(__name__)

KINDS: dict[str, type[BaseModel]] = {
    "Pod": Pod,
    "Node": Node,
    "PodGroup": PodGroup,
    "CompositePodGroup": CompositePodGroup,
    "PriorityClass": PriorityClass,
    "ResourceSlice": ResourceSlice,
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
}


@dataclass(slots=True)
class Changes:
    """What a cache update may have changed, for queue re-activation (design §7).

    ``capacity``: a node appeared or changed, or a pod stopped using a node (deleted or
    finished), a ResourceSlice or DeviceClass changed, or a ResourceClaim appeared (a pod may wait
    for it) or released its devices (allocation removed, or deleted) — any waiting root may fit
    now. ``groups``: (namespace, group name) of PodGroups /
    CompositePodGroups that changed or whose member pods changed.
    """

    capacity: bool = False
    groups: set[tuple[str, str]] = field(default_factory=set)

    def merge(self, other: Changes) -> None:
        self.capacity |= other.capacity
        self.groups |= other.groups

    def __bool__(self) -> bool:
        return self.capacity or bool(self.groups)


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _node_essence(node: Node) -> tuple[object, ...]:
    """What the scheduler reads of a node: labels, spec (taints, cordon), allocatable, condition statuses."""
    return (node.metadata.labels, node.spec, node.status.allocatable,
            tuple((c.type, c.status) for c in node.status.conditions))


def _parse(kind: str, raw: Mapping[str, Any]) -> Any | None:
    try:
        obj = KINDS[kind].model_validate(raw)
        if isinstance(obj, Pod):
            _ = obj.requests
        elif isinstance(obj, Node):
            _ = obj.allocatable
        return obj
    except (ValueError, ArithmeticError) as exc:  # pydantic ValidationError, QuantityError, decimal errors
        meta = raw.get("metadata") or {}
        log.warning("ignoring malformed %s %s/%s: %s", kind, meta.get("namespace", ""), meta.get("name", ""),
                    describe(exc))
        return None


def _allocated_ids(claim: ResourceClaim | None) -> frozenset[str]:
    """Device ids a claim's ``status.allocation`` names (empty if unallocated or None)."""
    alloc = claim.status.allocation if claim is not None else None
    return frozenset(r.device_id for r in alloc.devices.results) if alloc is not None else frozenset()


@dataclass(frozen=True, slots=True)
class HeldClaim:
    """Devices an in-flight plan allocates to one claim. ``existed``: the claim was in the cache when
    assumed (else it is a synthetic claim the binder creates); ``pod``: the owning pod of a synthetic claim."""

    devices: frozenset[str]
    existed: bool
    pod: str | None = None


class ClusterCache:
    """See the module docstring. Not thread-safe: used from the event loop only."""

    def __init__(self, *, dra: bool = False) -> None:
        self.objects: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self.assumed: dict[str, str] = {}
        """pod key → node name, for pods planned and being bound."""
        self.assumed_devices: dict[str, dict[str, HeldClaim]] = {}
        """plan token → claim key → devices the plan allocates, held until the watch shows them."""
        self.dra = dra
        """Whether DRA objects are watched: snapshots then carry a :class:`DraView`."""
        self.version = 0
        self._assumed_copies: dict[str, tuple[Pod, str, Pod]] = {}
        """Bumped on every change; the driver rebuilds trees only when it moved."""
        self._node_version = 0
        self._device_version = 0
        """Bumped when ResourceSlices or DeviceClasses change (the inventory is rebuilt)."""
        self._claim_version = 0
        self._table: tuple[int, NodeTable] | None = None
        self._inventory: tuple[int, int, Inventory] | None = None
        self._allocated: tuple[int, frozenset[str]] | None = None
        self._logged_problems: set[str] = set()

    # -- feeding -------------------------------------------------------------------
    def replace(self, kind: str, raws: Iterable[Mapping[str, Any]]) -> Changes:
        """Replace every object of ``kind`` with a fresh list (initial list and re-list after 410)."""
        fresh = {}
        for raw in raws:
            obj = _parse(kind, raw)
            if obj is not None:
                fresh[_key(obj)] = obj
        old = self.objects[kind]
        changes = Changes()
        for key in old.keys() | fresh.keys():
            if old.get(key) != fresh.get(key):
                changes.merge(self._changed(kind, old.get(key), fresh.get(key)))
        self.objects[kind] = fresh
        self._touch(kind)
        self._settle_assumptions()
        if kind == "ResourceClaim":
            self._settle_devices()
        return changes

    def apply(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> Changes:
        """Apply one watch event (ADDED / MODIFIED / DELETED)."""
        obj = _parse(kind, raw)
        if obj is None:
            return Changes()
        key = _key(obj)
        old = self.objects[kind].get(key)
        if event_type == "DELETED":
            self.objects[kind].pop(key, None)
            new = None
        else:
            self.objects[kind][key] = obj
            new = obj
        if kind == "Node" and old is not None and new is not None and _node_essence(old) == _node_essence(new):
            return Changes()  # a heartbeat or annotation: nothing the scheduler reads changed
        if kind == "Pod" and self._confirms_assumption(key, old, new):
            # The watch shows our own bind landing where we assumed it: trees and usage are the
            # same as before, so nothing is rebuilt (the end-to-end benchmark's main cost).
            self._settle_assumptions((key,))
            return Changes()
        self._touch(kind)
        if kind == "Pod":
            self._settle_assumptions((key,))
        elif kind == "ResourceClaim":
            self._settle_devices(key)
        return self._changed(kind, old, new)

    def _confirms_assumption(self, key: str, old: Pod | None, new: Pod | None) -> bool:
        return (old is not None and new is not None and not old.is_bound and new.is_bound
                and not new.is_terminal and self.assumed.get(key) == new.spec.node_name)

    def _touch(self, kind: str) -> None:
        self.version += 1
        if kind == "Node":
            self._node_version += 1
        elif kind in ("ResourceSlice", "DeviceClass"):
            self._device_version += 1
        elif kind == "ResourceClaim":
            self._claim_version += 1

    def _changed(self, kind: str, old: Any, new: Any) -> Changes:
        changes = Changes()
        if kind == "Node":
            changes.capacity = new is not None  # a node added or changed may fit a waiting gang
        elif kind == "Pod":
            before: Pod | None = old
            after: Pod | None = new
            was_using = before is not None and before.is_bound and not before.is_terminal
            uses = after is not None and after.is_bound and not after.is_terminal
            changes.capacity = was_using and not uses
            for pod in (before, after):
                if pod is not None and pod.group_name:
                    changes.groups.add((pod.metadata.namespace, pod.group_name))
        elif kind in ("PodGroup", "CompositePodGroup"):
            for obj in (old, new):
                if obj is not None:
                    changes.groups.add((obj.metadata.namespace, obj.metadata.name))
        elif kind == "PriorityClass":
            changes.capacity = True  # priorities reorder the queue; cheap to re-check all
        elif kind in ("ResourceSlice", "DeviceClass"):
            changes.capacity = True  # devices appeared, changed or were published anew
        elif kind == "ResourceClaim":
            # a claim appearing may be what a pod waits for; one losing its allocation frees devices
            # (a new allocation only takes devices: no root can fit because of it)
            changes.capacity = (old is None and new is not None) or bool(
                _allocated_ids(old) - _allocated_ids(new))
        return changes

    # -- assume / forget -----------------------------------------------------------
    def assume(self, placements: Iterable[tuple[Pod, str]]) -> None:
        """Hold a plan's capacity: each pod counts as bound to its node until the watch or
        :meth:`forget` says otherwise."""
        for pod, node in placements:
            self.assumed[pod.key] = node
        self.version += 1

    def forget(self, pod_keys: Iterable[str]) -> None:
        """Drop assumptions (a failed or abandoned bind): the capacity is free again."""
        for key in pod_keys:
            self.assumed.pop(key, None)
        self.version += 1

    def _settle_assumptions(self, keys: Iterable[str] | None = None) -> None:
        pods = self.objects["Pod"]
        for key in list(self.assumed if keys is None else keys):
            if key not in self.assumed:
                continue
            pod = pods.get(key)
            if pod is None or pod.is_bound or pod.is_terminal:
                del self.assumed[key]
        if self.assumed_devices:
            self._settle_devices()

    def assume_devices(self, plan: str, allocations: Iterable[ClaimAllocation]) -> None:
        """Hold the devices of a plan's claim allocations (``plan``: a token unique to the plan) until
        the watch shows each claim allocated, or :meth:`forget_devices`."""
        claims = self.objects["ResourceClaim"]
        self.assumed_devices[plan] = {
            a.claim: HeldClaim(frozenset(a.device_ids), a.claim in claims, a.pod if a.synthetic else None)
            for a in allocations}
        self.version += 1

    def forget_devices(self, plan: str, claims: Iterable[str] | None = None) -> None:
        """Release a plan's held devices: all of them, or only those of ``claims`` (keys as in the plan)."""
        held = self.assumed_devices.get(plan)
        if held is None:
            return
        for key in list(held) if claims is None else claims:
            held.pop(key, None)
        if not held:
            del self.assumed_devices[plan]
        self.version += 1

    def assumed_device_ids(self) -> frozenset[str]:
        """Every device held by an in-flight plan."""
        return frozenset(d for held in self.assumed_devices.values() for h in held.values() for d in h.devices)

    def _settle_devices(self, key: str | None = None) -> None:
        """End device assumptions the watch has caught up with: the claim is shown allocated (a synthetic
        claim, created under a generated name, is recognised by its devices), an assumed claim that
        existed is gone, or the pod owning a synthetic claim is gone. ``key``: only that claim changed."""
        if not self.assumed_devices:
            return
        claims: dict[str, ResourceClaim] = self.objects["ResourceClaim"]
        pods = self.objects["Pod"]
        if key is not None:
            changed = _allocated_ids(claims.get(key))
            allocated = changed

            def ended(claim_key: str, held: HeldClaim) -> bool:
                if claim_key == key:
                    return key not in claims or bool(changed)
                return not held.existed and bool(held.devices) and held.devices <= allocated
        else:
            allocated = self.allocated_device_ids()

            def ended(claim_key: str, held: HeldClaim) -> bool:
                claim = claims.get(claim_key)
                if held.existed:
                    return claim is None or claim.is_allocated
                return bool(held.devices) and held.devices <= allocated

        for plan in list(self.assumed_devices):
            held = self.assumed_devices[plan]
            for claim_key, h in list(held.items()):
                owner = pods.get(h.pod) if h.pod else None
                if ended(claim_key, h) or (h.pod is not None and (owner is None or owner.is_terminal)):
                    del held[claim_key]
            if not held:
                del self.assumed_devices[plan]

    # -- views ---------------------------------------------------------------------
    def pods(self) -> list[Pod]:
        """Every pod, with assumed ones shown as bound to their planned node.

        The bound copy of an assumed pod is made once and reused while the pod object and the
        assumption stay the same (copies were a third of the live loop's time).
        """
        out = []
        copies = self._assumed_copies
        for key, pod in self.objects["Pod"].items():
            node = self.assumed.get(key)
            if node is not None and not pod.is_bound:
                cached = copies.get(key)
                if cached is not None and cached[0] is pod and cached[1] == node:
                    pod = cached[2]
                else:
                    copy = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})
                    copies[key] = (pod, node, copy)
                    pod = copy
            out.append(pod)
        for key in [k for k in copies if k not in self.assumed]:
            del copies[key]
        return out

    def node_table(self) -> NodeTable:
        """The static node table, rebuilt only when nodes changed (static filter memo survives)."""
        if self._table is None or self._table[0] != self._node_version:
            self._table = (self._node_version, NodeTable.build(self.objects["Node"].values()))
        return self._table[1]

    def snapshot(self, pods: Iterable[Pod] | None = None) -> Snapshot:
        """Usage from every bound or assumed, non-terminal pod; with DRA, the device view too."""
        listed = self.pods() if pods is None else list(pods)
        table = self.node_table()
        return Snapshot.build(table, listed, self.dra_view(table, listed))

    # -- DRA -------------------------------------------------------------------------
    def inventory(self, table: NodeTable | None = None) -> Inventory:
        """The device index (no allocations), rebuilt only when slices, classes or nodes changed,
        so the CEL selector memo survives across cycles."""
        table = table or self.node_table()
        hit = self._inventory
        if hit is None or hit[0] != self._node_version or hit[1] != self._device_version:
            inv = Inventory.build(table, self.objects["ResourceSlice"].values(), self.objects["DeviceClass"].values(),
                                  ())
            for problem in set(inv.problems) - self._logged_problems:
                log.warning("DRA: %s", problem)
            self._logged_problems = set(inv.problems)
            hit = self._inventory = (self._node_version, self._device_version, inv)
        return hit[2]

    def allocated_device_ids(self) -> frozenset[str]:
        """Devices named by the ``status.allocation`` of some claim in the cache."""
        if self._allocated is None or self._allocated[0] != self._claim_version:
            ids = frozenset(d for c in self.objects["ResourceClaim"].values() for d in _allocated_ids(c))
            self._allocated = (self._claim_version, ids)
        return self._allocated[1]

    def claim_index(self, table: NodeTable | None = None) -> ClaimIndex:
        """Claims, templates, classes and PodGroups for claim resolution (live: never synthesises
        template claims — a pod whose generated claim is missing waits for it)."""
        table = table or self.node_table()
        return ClaimIndex.build(self.objects["ResourceClaim"].values(), self.objects["ResourceClaimTemplate"].values(),
                                self.objects["DeviceClass"].values(), self.objects["PodGroup"].values(),
                                table.resources)

    def dra_view(self, table: NodeTable, pods: Sequence[Pod]) -> DraView | None:
        """The solver's DRA input for ``pods`` (None when DRA is not watched): the inventory with every
        claim's allocation and every in-flight plan's devices taken."""
        if not self.dra:
            return None
        inventory = self.inventory(table).with_allocated(self.allocated_device_ids())
        index = self.claim_index(table)
        served = index.extended_classes()
        # only pending pods with claims or a DRA-servable extended resource can need devices (the rest
        # would resolve to nothing; skipping them keeps a snapshot cheap on clusters without DRA)
        candidates = [p for p in pods if not p.is_bound and not p.is_terminal
                      and (p.spec.resource_claims or (served and any(
                          res in served for c in p.spec.containers
                          for res in (*c.resources.limits, *c.resources.requests))))]
        return DraView.build(inventory, index, candidates, self.assumed_device_ids())

    def forest(self, scheduler_name: str, pods: Iterable[Pod] | None = None) -> Forest:
        """Group trees over the current objects (assumed pods count as bound members)."""
        return build_trees(
            self.pods() if pods is None else pods,
            self.objects["PodGroup"].values(),
            self.objects["CompositePodGroup"].values(),
            self.objects["PriorityClass"].values(),
            scheduler_name=scheduler_name,
        )

    def group(self, kind: str, namespace: str, name: str) -> Any | None:
        """The current PodGroup / CompositePodGroup object, if known."""
        return self.objects[kind].get(f"{namespace}/{name}")

    def pod(self, key: str) -> Pod | None:
        return self.objects["Pod"].get(key)
