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
  is then pinned to it (so a claim shared by name between roots is allocated once). Holds are
  indexed by claim and by owner pod, so a claim or pod event looks only at its own holds.
* The pending pods that may need devices and everything their claim resolution reads are reported
  here as they change (:meth:`DeviceCache.set_pod`, :meth:`DeviceCache.changed`, and the claim and
  in-flight changes seen here), so a snapshot resolves only the pods whose inputs changed
  (:class:`~scheduler.dra.claims.PendingClaims`).

Not thread-safe: used from the event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.dra.claims import ClaimIndex, PendingClaims
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import DeviceIndex, Inventory
from scheduler.framework.node_table import BoolArray, NodeTable
from scheduler.framework.plan import ClaimAllocation
from scheduler.model.dra import DeviceClass, DeviceUse, ResourceClaim, ResourceSlice, taken_devices
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
        self._taking: dict[str, int] = {}
        """Device id → how many allocated claims and in-flight holds take it (:func:`~scheduler.model.dra.taken_devices`
        of their uses); only positive counts."""
        self._taken_mask: tuple[DeviceIndex, BoolArray] | None = None
        """The devices of :attr:`_taking` as a mask over one inventory index, updated in place per claim event and
        per hold while the index stays (:meth:`_taken`)."""
        self._mask_dirty: set[str] = set()
        """Devices whose :attr:`_taking` count went to or from zero since the mask was last brought up to date."""
        self.held: dict[str, dict[str, HeldClaim]] = {}
        """Plan token → claim key → devices the plan allocates, until the watch shows them."""
        self._held_uses: tuple[DeviceUse, ...] | None = ()
        """:meth:`held_uses`, until a hold is added or ended."""
        self._logged_problems: set[str] = set()
        self._problems_stale = False
        """Slices or nodes changed since the inventory's problems were last logged: logged at the next :meth:`view`,
        so a pool whose slices arrive one by one (a list, a driver publishing) is not called incomplete meanwhile."""
        self.synthesized: dict[str, ResourceClaim] = {}
        """Claims made from their template (``synthesize``), kept across snapshots: made once, by key."""
        self.refused: dict[tuple[str, str], str] = {}
        """``(kind, ns/name)`` → why a ResourceClaim or ResourceClaimTemplate was left out of the snapshot
        (``simulate`` sets it before the first snapshot; :attr:`~scheduler.dra.claims.ClaimIndex.refused`)."""
        self.excluded: set[str] = set()
        """Devices whose binding conditions failed or timed out: no plan gets them until their pool's slices
        change (the driver publishes them again)."""
        self.pending = PendingClaims()
        """The pending pods that may need devices (:meth:`set_pod`), their resolved claims and each claim's
        converted spec, kept up to date from the changes reported here."""
        self._holders: dict[str, set[str]] = {}
        """Claim key → tokens of the plans holding it that found it in the cache (``existed``): the claims in
        flight; a claim event settles only these."""
        self._created: set[tuple[str, str]] = set()
        """(token, claim key) of the holds of claims a plan creates: settled by their devices on claim events."""
        self._owned: dict[str, set[tuple[str, str]]] = {}
        """Pod key → (token, claim key) of the holds of the claims created for it: a pod event settles these."""
        self._in_flight: frozenset[str] | None = frozenset()
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
        self._problems_stale = True

    def set_class(self, name: str, klass: DeviceClass | None) -> None:
        if klass is None:
            self.inventory.remove_class(name)
        else:
            self.inventory.set_class(klass)

    def set_table(self, table: NodeTable) -> None:
        self.inventory.set_table(table)
        self._problems_stale = True

    def set_claim(self, key: str, claim: ResourceClaim | None) -> None:
        """A claim was added, changed or deleted (``claim`` None): how its allocation uses its devices; the holds
        the watch has now caught up with end (:meth:`settle_claim`)."""
        uses = claim.allocated_uses if claim is not None else ()
        before = self._allocated.get(key, ())
        if uses or before:
            if uses:
                self._allocated[key] = uses
            else:
                del self._allocated[key]
            self._allocated_uses = None
            for device in taken_devices(before):  # the rule held_mask applies, whatever it is
                self._take(device, -1)
            for device in taken_devices(uses):
                self._take(device, 1)
        self.pending.changed("claim", key)
        self.settle_claim(key)

    def _take(self, device: str, delta: int) -> None:
        left = self._taking.get(device, 0) + delta
        if left > 0:
            self._taking[device] = left
        else:
            self._taking.pop(device, None)
        if left in (0, 1):
            self._mask_dirty.add(device)

    def _taken(self) -> BoolArray:
        """(D,) bool over the inventory's :meth:`~scheduler.dra.inventory.Inventory.device_index`: the devices the
        claims' allocations and the in-flight plans' holds take — what ``held_mask`` finds from
        :meth:`allocated_uses` and :meth:`held_uses`, kept up to date per claim event and per hold instead of
        recounted per snapshot. Writable and owned here: copy before handing it out."""
        index = self.inventory.device_index()
        hit = self._taken_mask
        if hit is None or hit[0] is not index:
            mask = index.mask(self._taking)
            self._taken_mask = (index, mask)
        else:
            mask, position = hit[1], index.position
            for device in self._mask_dirty:
                row = position.get(device)
                if row is not None:
                    mask[row] = device in self._taking
        self._mask_dirty.clear()
        return mask

    def set_pod(self, key: str, pod: Pod | None) -> None:
        """Pod ``key`` is now ``pod``: pending (not assumed) and perhaps needing devices — it has claims or
        requests an extended resource; None when it is not (any more). Holds of claims it owns end when it is
        gone or finished (:meth:`settle_pod`)."""
        self.pending.set_pod(key, pod)

    def changed(self, what: str, key: str) -> None:
        """A ResourceClaimTemplate (``template``), PodGroup (``podgroup``) or Namespace (``namespace``) was added,
        replaced or deleted (see :meth:`~scheduler.dra.claims.PendingClaims.changed`)."""
        self.pending.changed(what, key)

    def _log_problems(self) -> None:
        """Log the inventory's problems not logged yet (once each while they last)."""
        self._problems_stale = False
        problems = set(self.inventory.problems)
        for problem in sorted(problems - self._logged_problems):
            log.warning("DRA: %s", problem)
        self._logged_problems = problems

    # -- in-flight plans -------------------------------------------------------------------------
    def assume(self, token: str, allocations: Iterable[ClaimAllocation]) -> None:
        """Hold the devices of a plan's claim allocations (``token``: unique to the plan)."""
        held = {a.claim: HeldClaim(a.device_uses, a.claim in self._claims, a.pod if a.synthetic else None)
                for a in allocations}
        if not held:
            return
        self.forget(token)
        self.held[token] = held
        self._held_uses = None
        for key, hold in held.items():
            for device in taken_devices(hold.uses):
                self._take(device, 1)
            if hold.existed:
                holders = self._holders.setdefault(key, set())
                if not holders:
                    self._flight(key)
                holders.add(token)
            else:
                self._created.add((token, key))
            if hold.pod is not None:
                self._owned.setdefault(hold.pod, set()).add((token, key))

    def forget(self, token: str, claims: Iterable[str] | None = None) -> None:
        """Release a plan's held devices: all of them, or only those of ``claims`` (keys as in the plan)."""
        held = self.held.get(token)
        if held is None:
            return
        for key in list(held) if claims is None else list(claims):
            self._release(token, key)

    def _release(self, token: str, key: str) -> None:
        """End one hold (and the plan's entry with its last hold); keeps the indexes in step."""
        held = self.held.get(token)
        hold = held.pop(key, None) if held is not None else None
        if hold is None:
            return
        if not held:
            del self.held[token]
        self._held_uses = None
        for device in taken_devices(hold.uses):
            self._take(device, -1)
        if hold.existed:
            holders = self._holders[key]
            holders.discard(token)
            if not holders:
                del self._holders[key]
                self._flight(key)
        else:
            self._created.discard((token, key))
        if hold.pod is not None:
            owned = self._owned[hold.pod]
            owned.discard((token, key))
            if not owned:
                del self._owned[hold.pod]

    def _flight(self, key: str) -> None:
        """Claim ``key`` went in or out of flight."""
        self._in_flight = None
        self.pending.changed("flight", key)

    def settle_claim(self, key: str) -> None:
        """End the holds the watch has caught up with after claim ``key`` changed: a hold of that claim when it
        is shown allocated or is gone, and a hold of a created claim (under a generated name) once every
        device it holds (a share: by its shareID) is shown allocated. O(holds of ``key`` + of created claims)."""
        tokens = self._holders.get(key)
        if tokens:
            claim = self._claims.get(key)
            if claim is None or claim.is_allocated:
                for token in list(tokens):
                    self._release(token, key)
        if self._created:  # a share is recognised by its own shareID, not by its device, which others share
            allocated = {(u.device, u.share_id) for u in self.allocated_uses()}
            for token, created in list(self._created):
                uses = self.held[token][created].uses
                if uses and {(u.device, u.share_id) for u in uses} <= allocated:
                    self._release(token, created)

    def settle_pod(self, key: str, pod: Pod | None) -> None:
        """End the holds of the claims pod ``key`` owns once it is gone (``pod`` None) or finished."""
        owned = self._owned.get(key)
        if owned and (pod is None or pod.is_terminal):
            for token, claim in list(owned):
                self._release(token, claim)

    # -- views ---------------------------------------------------------------------------------
    def allocated_uses(self) -> tuple[DeviceUse, ...]:
        """How the ``status.allocation`` of every claim in the cache uses its devices."""
        if self._allocated_uses is None:
            self._allocated_uses = tuple(u for uses in self._allocated.values() for u in uses)
        return self._allocated_uses

    def held_uses(self) -> tuple[DeviceUse, ...]:
        """How the in-flight plans use the devices they hold (kept until a hold is added or ended)."""
        if self._held_uses is None:
            self._held_uses = tuple(u for held in self.held.values() for h in held.values() for u in h.uses)
        return self._held_uses

    def held_device_ids(self) -> frozenset[str]:
        """Every device an in-flight plan's allocations name."""
        return frozenset(u.device for u in self.held_uses())

    def exclude(self, device_ids: Iterable[str]) -> None:
        """See :attr:`excluded`."""
        self.excluded.update(device_ids)

    def in_flight(self) -> frozenset[str]:
        """Keys of claims an in-flight plan is allocating (existing claims only)."""
        if self._in_flight is None:
            self._in_flight = frozenset(self._holders)
        return self._in_flight

    def claim_index(self, classes: Mapping[str, DeviceClass]) -> ClaimIndex:
        """Claims, templates, classes and PodGroups for claim resolution, over the cache's live dicts."""
        return ClaimIndex(self._claims, self._templates, classes, self._podgroups,  # type: ignore[arg-type]
                          self.synthesize, self.synthesized, self.in_flight(),
                          namespaces=self._namespaces, memo=self.pending, refused=self.refused)

    def view(self, table: NodeTable, classes: Mapping[str, DeviceClass]) -> DraView:
        """The solver's DRA input for the pending pods reported (:meth:`set_pod`): the inventory with every
        claim's allocation and every in-flight plan's devices taken.

        With no pending pod to resolve, no device published, none allocated and none held, the view is the
        same for every snapshot until the nodes or the slices change: it is built once (a cluster without
        DRA then pays nothing per cycle)."""
        if self._problems_stale:
            self._log_problems()
        pending = self.pending
        index = self.claim_index(classes)
        resolved = pending.resolve(index)
        idle = (not resolved and not self.held and not self.inventory.devices and not self._allocated
                and not self.excluded)
        if idle:
            hit = self._idle
            if hit is not None and hit[0] is table and hit[1] == self.inventory.generation:
                return hit[2]
        inventory = self.inventory.with_allocated(self.allocated_uses())
        held = self.held_uses()
        if self.excluded:
            excluded = tuple(DeviceUse(d) for d in sorted(self.excluded))
            held = (*held, *excluded)
            taken = self._taken() | inventory.device_index().mask(taken_devices(excluded))
        else:
            taken = self._taken().copy()
        taken.setflags(write=False)
        view = DraView.of(inventory, index, resolved, held, pending.pinned, taken)
        if idle:
            self._idle = (table, self.inventory.generation, view)
        return view
