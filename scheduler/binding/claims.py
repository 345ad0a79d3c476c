"""DynamicResources' PreBind: write each claim's allocation and reservations before the first bind.

kube-scheduler's DynamicResources PreBind (``pkg/scheduler/framework/plugins/dynamicresources``, v1.37) writes
``status.allocation`` (``devices.results``, ``config``, ``nodeSelector``, ``allocationTimestamp``) and
``status.reservedFor`` through the ``resourceclaims/{name}/status`` subresource. Here, per plan:

* :meth:`DynamicResourcesPreBind.pre_flight` turns the plan's allocations into
  :class:`~scheduler.dra.writes.ClaimWrite` values from the cache *as the plan saw it* (before any await:
  the claims' resourceVersions, the PodGroups' uids, the claims pods were pinned to);
* :meth:`~DynamicResourcesPreBind.pre_bind` writes them concurrently (bounded by the writer), each as a merge
  patch carrying the ``metadata.resourceVersion`` the plan was made from (the precondition). A
  scheduler-made extended-resource claim is created first (owned by its pod; the pod's claim an earlier attempt
  left — a rollback that could not delete it — is deleted before, as kube-scheduler deletes it) and the pod's
  ``status.extendedResourceClaimStatus`` is written after it. A 409 means someone else changed the claim
  since the plan was made, unless a re-read shows our own write landed. After the first permanent failure
  no new write starts;
* then, when a device allocated has ``bindingConditions`` (KEP-5007: a fabric attached, a device
  prepared by its driver before the pod may start), it waits — through the binding cycle's wait for a
  condition, re-read whenever the cache applies a ResourceClaim, at most ``binding_timeout_s`` (kube-scheduler's
  default, 600 s) — until every such condition is True in the claim's ``status.devices[]``; a
  ``bindingFailureConditions`` entry True there, or the timeout, fails the plan: nothing is bound, every claim
  is rolled back, and the devices whose binding failed are not given to the next attempts (they stay out
  until their ResourceSlice changes). ``simulate`` cannot wait: it reports the conditions the plan would
  wait for and binds;
* :meth:`~DynamicResourcesPreBind.rollback` (kube's Unreserve) removes our reservations, and our allocation
  when no other consumer remains, and deletes a claim we created — for every claim written after a PreBind
  failure, and only for the members not bound after a failed bind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from scheduler.cache.cluster import ClusterCache
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.writes import ClaimWrite, claim_writes, landed, merged_reservations
from scheduler.errors import ApiError, Conflict, NotFound
from scheduler.framework.binding_cycle import BindingCycle, Failure, Undone
from scheduler.framework.cycle_state import StateKey
from scheduler.framework.interface import JSON, ApiWriter
from scheduler.model.kinds import POD, RESOURCE_CLAIM

log = logging.getLogger(__name__)

NAME = "DynamicResources"

CLAIM_WRITES: StateKey[list[ClaimWrite]] = StateKey(f"{NAME}/writes")
"""The plan's claim writes, made by ``pre_flight``."""
WRITTEN: StateKey[ClaimOutcome] = StateKey(f"{NAME}/written")
"""How far the writes got, for the rollback."""
FAILED_DEVICES: StateKey[tuple[str, ...]] = StateKey(f"{NAME}/failed-devices")
"""Devices whose binding conditions failed or timed out (excluded from the next attempts)."""

BINDING_TIMEOUT_S = 600.0
"""How long a plan waits for its devices' binding conditions, seconds: kube-scheduler's default
(``DynamicResourcesArgs.bindingTimeout``, KEP-5007)."""
BINDING_TIMED_OUT = ("timed out waiting for the binding conditions of ResourceClaim {claim} ({timeout:g} s; "
                     "not True: {pending})")
BINDING_FAILED = "ResourceClaim {claim}: binding failed for device {device}: condition {condition} is True"


@dataclass(slots=True)
class WrittenClaim:
    """How far one :class:`ClaimWrite` got: the claim's API ``name``, its ``resource_version`` after our
    last write, and which of create / status / pod status were written (what a rollback must undo)."""

    write: ClaimWrite
    name: str
    resource_version: str = ""
    created: bool = False
    status_written: bool = False
    pod_status_written: bool = False

    @property
    def key(self) -> str:
        return f"{self.write.namespace}/{self.name}"


@dataclass(slots=True)
class ClaimOutcome:
    """What happened to a plan's claim writes: ``written`` (every write started, with its progress), the
    first permanent failure (claim key, error), and after a failure the claims whose rollback failed."""

    written: list[WrittenClaim] = field(default_factory=list)
    failed: tuple[str, ApiError] | None = None
    not_released: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None


def cache_claim_writes(cache: ClusterCache, cycle: BindingCycle) -> list[ClaimWrite]:
    """The plan's claim writes, from ``cache`` as the plan saw it (its snapshot's DRA view): call before any
    await: the plan's allocations, and the pods pinned to claims allocated already added to their reservations.
    Empty for a cycle without a snapshot."""
    plan, snapshot = cycle.plan, cycle.snapshot
    if snapshot is None or not isinstance(snapshot.dra, DraView):
        return []
    view = snapshot.dra
    uids: dict[tuple[str, str], str] = {}
    for a in plan.allocations:
        ns = a.claim.partition("/")[0]
        for kind, name, _ in a.reserved_for:
            group = cache.group("PodGroup", ns, name) if kind == "PodGroup" else None
            if group is not None:
                uids[(ns, name)] = group.metadata.uid
    pinned = {p.key: view.pods[p.key].pinned for p, _ in plan.placements if p.key in view.pods}
    if not plan.allocations and not any(pinned.values()):
        return []  # nothing to allocate or reserve (most plans): the claims are not gathered
    served: dict[str, str] = {}
    if any(a.synthetic for a in plan.allocations):
        served = cache.devices.claim_index(cache.device_classes).extended_classes()
    claims = {**cache.devices.synthesized, **cache.resource_claims}
    return claim_writes(plan, claims, cache.device_classes, uids, pinned=pinned, served=served)


class DynamicResourcesPreBind:
    """See the module docstring. ``cache``: where ``pre_flight`` reads the claims (None: the cycle's
    :data:`CLAIM_WRITES` are given by the caller). :attr:`leftovers`: pod key → names of the extended-resource
    claims we created for it and could not delete; the pod's next claim write deletes them first even when the
    cache does not show them yet."""

    name = NAME

    def __init__(self, cache: ClusterCache | None, *, binding_timeout_s: float = BINDING_TIMEOUT_S) -> None:
        self.cache = cache
        self.binding_timeout_s = binding_timeout_s
        self.leftovers: dict[str, set[str]] = {}

    def pre_flight(self, cycle: BindingCycle) -> bool:
        if self.cache is not None and not cycle.read(CLAIM_WRITES, []):
            cycle.write(CLAIM_WRITES, cache_claim_writes(self.cache, cycle))
        writes: list[ClaimWrite] = cycle.read(CLAIM_WRITES, [])
        if self.leftovers and any(w.create is not None and w.pod in self.leftovers for w in writes):
            writes = [replace(w, stale=tuple(sorted({*w.stale, *self.leftovers[w.pod]})))
                      if w.create is not None and w.pod in self.leftovers else w for w in writes]
            cycle.write(CLAIM_WRITES, writes)
        return bool(writes)

    async def pre_bind(self, cycle: BindingCycle, writer: ApiWriter) -> Failure | None:
        writes: list[ClaimWrite] = cycle.read(CLAIM_WRITES, [])
        outcome = await self.write_claims(writes, writer)
        cycle.write(WRITTEN, outcome)
        if outcome.failed is None:
            return await self._binding_conditions(cycle, outcome, writer)
        key, error = outcome.failed
        return Failure(key, f"writing ResourceClaim {key} failed: {error}", error.status, error)

    async def _binding_conditions(self, cycle: BindingCycle, outcome: ClaimOutcome, writer: ApiWriter
                                  ) -> Failure | None:
        """Wait until the binding conditions of every device written are True (see the module docstring)."""
        waits = [(r.key, _conditions(r.write)) for r in outcome.written]
        waits = [(key, devices) for key, devices in waits if devices]
        if not waits or self.cache is None:
            return None
        cache = self.cache
        pending: list[str] = []

        def met() -> bool | Failure:
            pending.clear()
            for key, devices in waits:
                claim = cache.resource_claims.get(key)
                reported = {(d.device_id, d.share_id): {c.type: c.status for c in d.conditions}
                            for d in (claim.status.devices if claim is not None else ())}
                for device, share, wanted, failing in devices:
                    seen = reported.get((device, share), {})
                    failed = next((c for c in failing if seen.get(c) == "True"), None)
                    if failed is not None:
                        cycle.write(FAILED_DEVICES, (device,))
                        return Failure(key, BINDING_FAILED.format(claim=key, device=device, condition=failed))
                    pending.extend(f"{device} {c}" for c in wanted if seen.get(c) != "True")
            return not pending

        state = await writer.wait(met, CLAIM_KINDS, self.binding_timeout_s)
        if isinstance(state, Failure):
            return state
        if state:
            return None
        if not writer.waits():  # simulate: nothing would set them here; report what the plan waits for
            cycle.waiting.extend(f"{key}: {', '.join(f'{d} {c}' for d, _, wanted, _ in devices for c in wanted)}"
                                 for key, devices in waits if any(wanted for _, _, wanted, _ in devices))
            return None
        cycle.write(FAILED_DEVICES, tuple(dict.fromkeys(p.split(" ")[0] for p in pending)))
        key = waits[0][0]
        return Failure(key, BINDING_TIMED_OUT.format(claim=key, timeout=self.binding_timeout_s,
                                                     pending=", ".join(pending)))

    async def rollback(self, cycle: BindingCycle, writer: ApiWriter) -> Undone:
        """After a PreBind failure (nothing bound): every claim written; after a failed bind: the claims
        written only for members not bound. ``released``: the plan's claim keys whose devices are free."""
        outcome = cycle.read(WRITTEN, ClaimOutcome())
        bound = cycle.bound_keys
        if not bound:
            if outcome.failed is None:  # a later PreBind step failed: nothing of ours was undone yet
                outcome.not_released = await self.release_claims(outcome.written, writer)
            kept = {r.write.claim for r in outcome.written if r.key in outcome.not_released}
            undone = sum(1 for r in outcome.written
                         if (r.created or r.status_written) and r.key not in outcome.not_released)
            return Undone(released=tuple(a.claim for a in cycle.plan.allocations if a.claim not in kept),
                          kept=tuple(sorted(outcome.not_released)),
                          summary=f"{undone} claim write(s) rolled back" if outcome.written else "",
                          excluded=cycle.read(FAILED_DEVICES, ()))
        unbound = {p.metadata.uid for p, _ in cycle.plan.placements if p.key not in bound}
        release = [r for r in outcome.written
                   if r.write.reserve and all(c.get("uid") in unbound for c in r.write.reserve)]
        if not release:
            return Undone()
        not_released = set(await self.release_claims(release, writer))
        done = [r for r in release if r.key not in not_released]
        log.info("released %d claim(s) of unbound members: %s", len(done), ", ".join(r.key for r in done))
        return Undone(released=tuple(r.write.claim for r in done), kept=tuple(sorted(not_released)))

    # -- writes ------------------------------------------------------------------------------------
    async def write_claims(self, writes: Sequence[ClaimWrite], writer: ApiWriter) -> ClaimOutcome:
        """Write every claim of a plan (concurrently, bounded); after the first permanent failure start no
        more, wait for those in flight, and roll back everything written."""
        outcome = ClaimOutcome()
        stop = asyncio.Event()

        async def one(write: ClaimWrite) -> None:
            async with writer.slot():
                if stop.is_set():
                    return
                if not writer.leading():
                    if outcome.failed is None:
                        outcome.failed = (write.claim, ApiError(0, "NotLeader", "leadership lost before the write"))
                    stop.set()
                    return
                record = WrittenClaim(write, write.claim.partition("/")[2])
                outcome.written.append(record)
                try:
                    await self._write_claim(record, writer)
                except ApiError as exc:
                    if outcome.failed is None:
                        outcome.failed = (record.key, exc)
                    stop.set()

        await asyncio.gather(*(one(w) for w in writes))
        if outcome.failed is not None:
            outcome.not_released = await self.release_claims(outcome.written, writer)
        return outcome

    async def _write_claim(self, record: WrittenClaim, writer: ApiWriter) -> None:
        write = record.write
        ns = write.namespace
        missing = [r for r in write.reserve if r.get("resource") == "podgroups" and not r.get("uid")]
        if missing:
            raise NotFound(404, "NotFound", f"{missing[0]['resource']} {ns}/{missing[0]['name']} is not known; "
                                            f"cannot reserve claim {write.claim} for it")
        rv = write.resource_version
        if write.create is not None:
            for name in write.stale:  # left by an earlier attempt: the pod keeps one extended-resource claim
                with contextlib.suppress(NotFound):
                    await writer.delete(RESOURCE_CLAIM, ns, name)
                log.info("deleted ResourceClaim %s/%s, left by an earlier attempt of pod %s", ns, name, write.pod)
                self._deleted_leftover(write.pod, name)
            created = await writer.create(RESOURCE_CLAIM, ns, write.create)
            record.name = str(created["metadata"]["name"])
            record.created = True
            rv = str(created["metadata"].get("resourceVersion") or "")
        elif write.missing:
            raise NotFound(404, "NotFound", f"ResourceClaim {write.claim} is not in the cache")
        status: JSON = {"reservedFor": merged_reservations(write.existing, write.reserve)}
        if write.allocation is not None:
            status["allocation"] = {**write.allocation,
                                    "allocationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        try:
            result = await self._patch_status(record, rv, status, writer)
        except Conflict:
            current = await _read(writer, ns, record.name)
            if current is None or not landed(current, write):
                raise
            result = current  # an earlier attempt of ours landed
        record.status_written = True
        record.resource_version = str((result.get("metadata") or {}).get("resourceVersion") or "")
        if write.pod is not None and write.request_mappings:
            pod_ns, _, pod_name = write.pod.partition("/")
            patch = {"status": {"extendedResourceClaimStatus": {"requestMappings": list(write.request_mappings),
                                                                "resourceClaimName": record.name}}}
            await writer.patch(POD, pod_ns, pod_name, patch, sub="status")
            record.pod_status_written = True

    @staticmethod
    async def _patch_status(record: WrittenClaim, rv: str, status: JSON, writer: ApiWriter) -> JSON:
        """Merge-patch ``status`` of the claim through ``resourceclaims/{name}/status``, on condition that it is
        still at resourceVersion ``rv`` (else :class:`Conflict`)."""
        body = {"metadata": {"resourceVersion": rv}, "status": status}
        return await writer.patch(RESOURCE_CLAIM, record.write.namespace, record.name, body, sub="status")

    # -- rollback ----------------------------------------------------------------------------------
    async def release_claims(self, written: Sequence[WrittenClaim], writer: ApiWriter) -> list[str]:
        """Undo claim writes (kube's Unreserve): remove our reservations, and our allocation when no other
        consumer remains; delete a claim we created. Best effort, each claim on its own; returns the keys of
        claims that could not be released (they keep our writes)."""
        failed: list[str] = []
        for record in written:
            try:
                await self._release(record, writer)
            except ApiError as exc:
                log.warning("could not roll back claim %s: %s", record.key, exc)
                failed.append(record.key)
                if record.created and record.write.pod is not None:
                    self.leftovers.setdefault(record.write.pod, set()).add(record.name)
        return failed

    def _deleted_leftover(self, pod: str | None, name: str) -> None:
        left = self.leftovers.get(pod or "")
        if left is not None:
            left.discard(name)
            if not left:
                del self.leftovers[pod or ""]

    async def _release(self, record: WrittenClaim, writer: ApiWriter) -> None:
        if record.created:
            if record.pod_status_written and record.write.pod is not None:
                pod_ns, _, pod_name = record.write.pod.partition("/")
                clear = {"status": {"extendedResourceClaimStatus": None}}
                await writer.patch(POD, pod_ns, pod_name, clear, sub="status")
            with contextlib.suppress(NotFound):
                await writer.delete(RESOURCE_CLAIM, record.write.namespace, record.name)
        elif record.status_written:
            await self._unwrite(record, writer)

    async def _unwrite(self, record: WrittenClaim, writer: ApiWriter, attempts: int = 5) -> None:
        """Remove our reservations (and our allocation if no consumer is left) from a claim we wrote; a claim
        someone else changed since is theirs (left alone)."""
        write = record.write
        ours = {r["uid"] for r in write.reserve}
        rv = record.resource_version
        current: JSON = {"status": {"reservedFor": merged_reservations(write.existing, write.reserve)}}
        for _ in range(attempts):
            remaining = [r for r in (current.get("status") or {}).get("reservedFor") or [] if r.get("uid") not in ours]
            status: JSON = {"reservedFor": remaining or None}
            if write.allocation is not None and not remaining:
                status["allocation"] = None
            try:
                await self._patch_status(record, rv, status, writer)
                return
            except NotFound:
                return
            except Conflict:
                fresh = await writer.get(RESOURCE_CLAIM, write.namespace, record.name)
                if not landed(fresh, write):
                    return  # someone else changed it since: nothing of ours is left to remove
                current = fresh
                rv = str((fresh.get("metadata") or {}).get("resourceVersion") or "")
        raise Conflict(409, "Conflict", f"claim {record.key} kept changing during the rollback")


CLAIM_KINDS = frozenset({RESOURCE_CLAIM.name})


def _conditions(write: ClaimWrite) -> list[tuple[str, str | None, tuple[str, ...], tuple[str, ...]]]:
    """(device id, shareID, binding conditions, binding failure conditions) of each result of ``write`` that has
    any; a share of a shared device is told apart by its ``shareID``, as the claim's ``status.devices`` entries
    are (KEP-5075)."""
    results = ((write.allocation or {}).get("devices") or {}).get("results") or []
    return [(f"{r['driver']}/{r['pool']}/{r['device']}", r.get("shareID"), tuple(r.get("bindingConditions") or ()),
             tuple(r.get("bindingFailureConditions") or ())) for r in results
            if r.get("bindingConditions") or r.get("bindingFailureConditions")]


async def _read(writer: ApiWriter, ns: str, name: str) -> JSON | None:
    try:
        return await writer.get(RESOURCE_CLAIM, ns, name)
    except ApiError:
        return None
