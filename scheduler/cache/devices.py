"""The DRA half of the cache: the device inventory per pool, what claims allocate, and in-flight plans.

* The :class:`~scheduler.dra.inventory.Inventory` is updated per slice (only that slice's pool is
  indexed again), per DeviceClass and when nodes change — never rebuilt whole on an event.
* Allocated devices are kept per claim from ``status.allocation``, so a claim losing its allocation
  (or deleted) returns its devices at once.
* A plan's claim allocations are *held* from the moment it is assumed (:meth:`DeviceCache.assume`)
  until the watch shows each claim allocated (a created extended-resource claim is recognised by
  its devices), the claim that existed is gone, the pod owning a created claim is gone — or the
  driver forgets them after a failed write. A claim whose allocation is in flight is not offered
  to another plan: a pod of another root that names it waits until the allocation is visible and
  is then pinned to it (so a claim shared by name between roots is allocated once).

Not thread-safe: used from the event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.dra.claims import ClaimIndex, ClaimMemo
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import Inventory
from scheduler.framework.node_table import NodeTable
from scheduler.framework.plan import ClaimAllocation
from scheduler.model.dra import DeviceClass, DeviceUse, ResourceClaim, ResourceSlice
from scheduler.model.namespace import Namespace
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeldClaim:
    """Devices an in-flight plan holds for one claim: ``uses`` (how its allocation uses each), whether the
    claim ``existed`` in the cache when assumed (else it is created by the plan, under a generated name), and
    the ``pod`` owning a created claim (``ns/name``)."""

    uses: tuple[DeviceUse, ...]
    existed: bool
    pod: str | None = None




class DeviceCache:
    """See the module docstring. ``claims``/``templates``/``podgroups``: the cache's live dicts (read only
    here). ``synthesize``: make missing template claims from their template (``simulate``)."""

    def __init__(self, claims: Mapping[str, ResourceClaim], templates: Mapping[str, object],
                 podgroups: Mapping[str, object], *, synthesize: bool = False,
                 namespaces: Mapping[str, Namespace] | None = None) -> None:
        self.inventory = Inventory(NodeTable.build(()))
        self._claims = claims
        self._templates = templates
        self._podgroups = podgroups
        self._namespaces: Mapping[str, Namespace] = namespaces if namespaces is not None else {}
        self.synthesize = synthesize
        self._allocated: dict[str, tuple[DeviceUse, ...]] = {}
        """Claim key → how its ``status.allocation`` uses its devices."""
        self._allocated_uses: tuple[DeviceUse, ...] | None = ()
        self.held: dict[str, dict[str, HeldClaim]] = {}
        """Plan token → claim key → devices the plan allocates, until the watch shows them."""
        self._logged_problems: set[str] = set()
        self.synthesized: dict[str, ResourceClaim] = {}
        """Claims made from their template (``synthesize``), kept across snapshots: made once, by key."""
        self.excluded: set[str] = set()
        """Devices whose binding conditions failed or timed out: no plan gets them until their pool's slices
        change (the driver publishes them again)."""
        self.memo = ClaimMemo()
        """Each pending pod's resolved claims and each claim's converted spec, kept until what they were
        resolved from changes (:func:`~scheduler.dra.claims.resolve_all`)."""
        self._idle: tuple[NodeTable, int, DraView] | None = None
        """The view of a cluster where nothing asks for devices, per node table and inventory generation."""

    # -- feeding -------------------------------------------------------------------------------
    def set_slice(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        if self.excluded:
            pools = {f"{s.spec.driver}/{s.spec.pool.name}/" for s in (old, new) if s is not None}
            self.excluded = {d for d in self.excluded if not d.startswith(tuple(pools))}
        if new is not None:
            self.inventory.set_slice(new, old)
        elif old is not None:
            self.inventory.remove_slice(old)
        self._log_problems()

    def set_class(self, name: str, klass: DeviceClass | None) -> None:
        if klass is None:
            self.inventory.remove_class(name)
        else:
            self.inventory.set_class(klass)

    def set_table(self, table: NodeTable) -> None:
        self.inventory.set_table(table)
        self._log_problems()

    def set_claim(self, key: str, claim: ResourceClaim | None) -> None:
        """A claim changed: how its allocation uses its devices."""
        uses = claim.allocated_uses if claim is not None else ()
        if uses:
            self._allocated[key] = uses
        else:
            self._allocated.pop(key, None)
        self._allocated_uses = None

    def _log_problems(self) -> None:
        problems = set(self.inventory.problems)
        for problem in sorted(problems - self._logged_problems):
            log.warning("DRA: %s", problem)
        self._logged_problems = problems

    # -- in-flight plans -------------------------------------------------------------------------
    def assume(self, token: str, allocations: Iterable[ClaimAllocation]) -> None:
        """Hold the devices of a plan's claim allocations (``token``: unique to the plan)."""
        held = {a.claim: HeldClaim(a.device_uses, a.claim in self._claims, a.pod if a.synthetic else None)
                for a in allocations}
        if held:
            self.held[token] = held

    def forget(self, token: str, claims: Iterable[str] | None = None) -> None:
        """Release a plan's held devices: all of them, or only those of ``claims`` (keys as in the plan)."""
        held = self.held.get(token)
        if held is None:
            return
        for key in list(held) if claims is None else claims:
            held.pop(key, None)
        if not held:
            del self.held[token]

    def settle(self, changed: str | None, pods: Mapping[str, Pod]) -> None:
        """End holds the watch has caught up with: the claim is shown allocated (a created claim, under a
        generated name, is recognised by its devices), a claim that existed is gone, or the pod owning a
        created claim is gone (``pods``: the cache's pods, when a pod changed). ``changed``: the claim
        key that changed, or None to check every hold."""
        if not self.held:
            return
        allocated: set[tuple[str, str | None]] | None = None  # made only for a created claim's hold: every
        # allocated (device, shareID) — a share is recognised by its own id, not by its device, which others share
        for token in list(self.held):
            held = self.held[token]
            for key, hold in list(held.items()):
                if hold.existed:
                    done = changed is None or changed == key
                    if done:
                        claim = self._claims.get(key)
                        done = claim is None or claim.is_allocated
                else:
                    if allocated is None:
                        allocated = {(u.device, u.share_id) for u in self.allocated_uses()}
                    done = bool(hold.uses) and {(u.device, u.share_id) for u in hold.uses} <= allocated
                if not done and hold.pod is not None:
                    owner = pods.get(hold.pod)
                    done = owner is None or owner.is_terminal
                if done:
                    del held[key]
            if not held:
                del self.held[token]

    # -- views ---------------------------------------------------------------------------------
    def allocated_uses(self) -> tuple[DeviceUse, ...]:
        """How the ``status.allocation`` of every claim in the cache uses its devices."""
        if self._allocated_uses is None:
            self._allocated_uses = tuple(u for uses in self._allocated.values() for u in uses)
        return self._allocated_uses

    def held_uses(self) -> tuple[DeviceUse, ...]:
        """How the in-flight plans use the devices they hold."""
        return tuple(u for held in self.held.values() for h in held.values() for u in h.uses)

    def held_device_ids(self) -> frozenset[str]:
        """Every device an in-flight plan's allocations name."""
        return frozenset(u.device for u in self.held_uses())

    def exclude(self, device_ids: Iterable[str]) -> None:
        """See :attr:`excluded`."""
        self.excluded.update(device_ids)

    def in_flight(self) -> frozenset[str]:
        """Keys of claims an in-flight plan is allocating (existing claims only)."""
        return frozenset(k for held in self.held.values() for k, h in held.items() if h.existed)

    def claim_index(self, table: NodeTable, classes: Mapping[str, DeviceClass]) -> ClaimIndex:
        """Claims, templates, classes and PodGroups for claim resolution, over the cache's live dicts."""
        return ClaimIndex(self._claims, self._templates, classes, self._podgroups,  # type: ignore[arg-type]
                          self.synthesize, frozenset(table.resources), self.synthesized, self.in_flight(),
                          namespaces=self._namespaces, memo=self.memo)

    def view(self, table: NodeTable, classes: Mapping[str, DeviceClass], pending: Iterable[Pod]) -> DraView:
        """The solver's DRA input for the ``pending`` pods that may need devices: the inventory with every
        claim's allocation and every in-flight plan's devices taken.

        With no pending pod to resolve, no device published, none allocated and none held, the view is the
        same for every snapshot until the nodes or the slices change: it is built once (a cluster without
        DRA then pays nothing per cycle)."""
        pending = list(pending)
        idle = (not pending and not self.held and not self.inventory.devices and not self.allocated_uses()
                and not self.excluded)
        if idle:
            hit = self._idle
            if hit is not None and hit[0] is table and hit[1] == self.inventory.generation:
                return hit[2]
        inventory = self.inventory.with_allocated(self.allocated_uses())
        held = (*self.held_uses(), *(DeviceUse(d) for d in sorted(self.excluded)))
        view = DraView.build(inventory, self.claim_index(table, classes), pending, held)
        if idle:
            self._idle = (table, self.inventory.generation, view)
        return view
