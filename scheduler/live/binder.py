"""The binder: writes a plan — its durable intent, its claims' allocations, then its bindings — and reports
the outcome.

Architecture §6: each member is bound with ``POST pods/{name}/binding``; there is no group bind.
What keeps the gang atomic is that the plan was complete and assumed before the first write,
and that the driver forgets the rest of the plan as soon as one member cannot be bound.

**Durable intent** (architecture §14): before any claim write or bind, every PodGroup the plan
places members of gets the annotation :data:`~scheduler.groups.intent.INTENT_ANNOTATION` (a merge PATCH
of ``metadata.annotations``, one per PodGroup, in the URGENT lane) naming each member's node. If the
binds then stop half-way — a failed bind, a crash, a lost lease — whoever schedules next reads the
plan back from the PodGroups and holds the rest of its room. A permanent failure of this write binds
nothing.

**Check before each bind** (``precheck``): just before a member's bind, the driver's check of
its target against the cache as it is *now* — the node still exists, is not cordoned, has no
NoSchedule/NoExecute taint the pod does not tolerate, still has the labels the pod's node selection
needs and the allocatable the plan's pods on it need, the pod's claims still stand. A refusal stops the
plan like a failed bind: no further bind starts, the members not bound are forgotten, and the root is
requeued (partial, if some members are bound: they keep their claim on the rest).

* 429, 5xx and transport failures are retried with jittered exponential backoff
  (``retry_initial_s`` doubling up to ``retry_max_s``, at most ``max_attempts`` tries).
* 409 for a pod that turns out to be bound to our node is success (an earlier attempt landed;
  decided by reading the pod, not by parsing the message).
* 404 (pod deleted) or any other 409 (bound elsewhere, gated, being deleted) is permanent for
  that member: the binder stops starting new binds for the plan and reports the failure.
* Concurrency is bounded by ``concurrency`` in-flight writes per binder (client QPS is the
  client's rate limiter).

**DRA** (reference §6.4–§6.6, kube-scheduler's PreBind): before the first bind, :meth:`Binder.write_claims`
writes every :class:`ClaimWrite` of the plan — ``status.allocation`` (``devices.results``, ``config``,
``nodeSelector``, ``allocationTimestamp``) and ``status.reservedFor`` through the ``resourceclaims/{name}/status``
subresource, as a merge patch carrying the ``metadata.resourceVersion`` the plan was made from (the
precondition). A scheduler-made extended-resource claim is created first (owned by its pod) and the pod's
``status.extendedResourceClaimStatus`` is written after it. A 409 means someone else changed the claim since
the plan was made (unless a re-read shows our own write landed); any permanent failure stops the plan's
remaining claim writes and rolls back the ones written (:meth:`Binder.release_claims`: our allocation and
reservations removed, a created claim deleted), so no pod is bound. :func:`claim_writes` turns a plan's
allocations into writes; it is pure.

**Volumes** (kube-scheduler's VolumeBinding PreBind, per gang): after the claims and before the first bind,
:class:`~scheduler.live.volume_binder.VolumeBinder` writes the plan's WaitForFirstConsumer claim bindings
(``volume.kubernetes.io/selected-node``, or a PV's ``claimRef``) and waits, bounded, until the watch shows
every claim bound. If one fails or times out, the claims written are rolled back and no pod is bound; the
annotations and claimRefs stay, as kube-scheduler leaves them (see that module for why).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from scheduler.client.kube import (
    COSCHEDULING_PODGROUPS,
    JSON,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIMS,
    ApiError,
    Conflict,
    KubeClient,
    Lane,
    NotFound,
    Resource,
)
from scheduler.cycle import BindResult, Failure
from scheduler.dra.writes import ClaimWrite, landed, merged_reservations
from scheduler.framework.plan import Plan
from scheduler.groups.intent import INTENT_ANNOTATION, intent_annotation, intent_entries
from scheduler.live.volume_binder import ClaimSource, VolumeBinder, VolumeFailure
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)

T = TypeVar("T")

Precheck = Callable[[Pod, str], str | None]
"""Asked just before binding (pod, node): None to go ahead, else why the target no longer fits."""
RecordedIntent = Callable[[str, str], Mapping[str, tuple[str, str]]]
"""The intent a PodGroup (namespace, name) shows now: pod name → (node, uid prefix) (``groups.intent.parse_intent``)."""


class TargetChanged(ApiError):
    """The pre-bind check refused a member's target (no request was sent; ``status`` 0)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "TargetChanged", message)


@dataclass(slots=True)
class BindOutcome:
    """What happened to a plan: pods bound, the first permanent failure (pod key, error), pods not attempted."""

    bound: list[tuple[Pod, str]] = field(default_factory=list)
    failed: tuple[str, ApiError] | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.skipped


@dataclass(frozen=True, slots=True)
class BindResultParts:
    """A plan stopped before any bind: the failing object, the message, the HTTP status, the claims released."""

    key: str
    message: str
    status: int
    release: list[str]


def failure_result(parts: BindResultParts, pods: list[str]) -> BindResult:
    """The result of a plan stopped before its first bind: every member forgotten, ``parts.release`` released."""
    return BindResult(failure=Failure(parts.key, parts.message, parts.status), forget=pods, release=parts.release)


# -- claim writes (DRA) ------------------------------------------------------------------------------


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


class Binder:
    """See the module docstring. ``rng`` gives the jitter (seedable for tests)."""

    def __init__(self, kube: KubeClient, *, concurrency: int = 16, max_attempts: int = 5,
                 retry_initial_s: float = 0.2, retry_max_s: float = 5.0, rng: random.Random | None = None,
                 fence: Callable[[], bool] | None = None, volumes: ClaimSource | None = None,
                 volume_timeout_s: float = 300.0) -> None:
        self.kube = kube
        self.podgroups = PODGROUPS
        """The PodGroup resource the durable intent is written to: the version API discovery chose
        (``scheduler.client.podgroup_api``; v1alpha2 on Kubernetes 1.36)."""
        self.fence = fence or (lambda: True)
        """Checked before every claim write and bind: False (the lease was lost) starts no new write,
        so a replica that stopped leading never binds next to the new leader (architecture §14)."""
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_attempts = max_attempts
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.rng = rng or random.Random()
        self.volumes = (VolumeBinder(kube, volumes, timeout_s=volume_timeout_s, retry=self._retry,
                                     semaphore=self.semaphore, fence=self.fence) if volumes is not None else None)
        """The PVC step (None: a plan with claim bindings fails, as nothing could see them bound)."""

    # -- the transaction -----------------------------------------------------------------------------
    async def commit(self, plan: Plan, writes: Sequence[ClaimWrite], outcome: BindOutcome | None = None,
                     intent: str | None = None, precheck: Precheck | None = None,
                     recorded: RecordedIntent | None = None) -> tuple[BindResult, BindOutcome]:
        """Write a plan: its durable intent (``intent``: the plan's token; None writes none), every claim
        (allocation, reservations), then every binding, each checked by ``precheck`` first — one transaction.
        ``recorded``: the intent a PodGroup already shows (an equal one is not written again).

        Returns what the cycle must give back (:class:`~scheduler.cycle.BindResult`: pods to forget,
        claims whose devices are free again, the failure message) and the per-pod outcome for the
        metrics. A failed claim write rolls back every claim written and binds nothing. A failed bind
        stops the plan's remaining binds; the members not bound are forgotten and the claims written
        only for them are rolled back, so the next plan may choose other devices.

        ``outcome``: filled in as binds land, so a caller whose transaction raised still knows which
        members are bound (they must never be forgotten: the server has them).

        Between the claims and the binds, the plan's PersistentVolumeClaims are bound (:meth:`_bind_volumes`);
        if one is not, the claims written are rolled back and no member is bound.
        """
        outcome = outcome if outcome is not None else BindOutcome()
        claims: ClaimOutcome | None = None
        pods = [p.key for p, _ in plan.placements]
        if intent is not None:
            failed = await self.write_intent(plan, intent, recorded)
            if failed is not None:
                group, error = failed
                message = f"recording the plan on PodGroup {group} failed: {error}; no member bound, the group requeued"
                outcome.failed, outcome.skipped = failed, pods
                return BindResult(failure=Failure(group, message, error.status), forget=pods, release=None), outcome
        if writes:
            claims = await self.write_claims(writes)
            if claims.failed is not None:
                failed_key, error = claims.failed
                kept = {r.write.claim for r in claims.written if r.key in claims.not_released}
                rolled_back = sum(1 for r in claims.written
                                  if (r.created or r.status_written) and r.key not in claims.not_released)
                message = (f"writing ResourceClaim {failed_key} failed: {error}; no member bound, {rolled_back} "
                           "claim write(s) rolled back, the group requeued")
                if claims.not_released:
                    message += f" (could not roll back {', '.join(claims.not_released)})"
                result = BindResult(failure=Failure(failed_key, message, error.status), forget=pods,
                                    release=[a.claim for a in plan.allocations if a.claim not in kept])
                outcome.failed, outcome.skipped = claims.failed, pods
                return result, outcome
        if plan.volumes:
            failure = await self._bind_volumes(plan, claims)
            if failure is not None:
                outcome.failed = (failure.key, ApiError(failure.status, "VolumeBinding", failure.message))
                outcome.skipped = pods
                return failure_result(failure, pods), outcome
        await self.bind_plan(plan.placements, outcome, precheck)
        if outcome.ok:
            return BindResult(bound=list(outcome.bound)), outcome
        bound = {p.key for p, _ in outcome.bound}
        release = await self._release_unbound(plan, claims, bound) if claims is not None else []
        if outcome.failed is not None:
            failed_key, error = outcome.failed
            what, status = f"binding {failed_key} failed: {error}", error.status
            if isinstance(error, TargetChanged):
                what = f"not binding {failed_key}: {error.message}"
        else:
            failed_key, what, status = outcome.skipped[0], "leadership lost before binding", 0
        message = (f"{what}; {len(bound)}/{len(plan.placements)} members bound, the rest forgotten and the "
                   "group requeued")
        return BindResult(bound=list(outcome.bound), failure=Failure(failed_key, message, status),
                          forget=[k for k in pods if k not in bound], release=release), outcome

    async def _bind_volumes(self, plan: Plan, claims: ClaimOutcome | None) -> BindResultParts | None:
        """Bind the plan's PersistentVolumeClaims; on failure roll back the claims written. Returns None when
        every claim is bound, else what the result must say."""
        if self.volumes is None:
            vol = VolumeFailure(plan.volumes[0].claim, "no PersistentVolumeClaim watch: claims cannot be seen bound")
            written: list[str] = []
        else:
            outcome = await self.volumes.bind(plan.volumes)
            if outcome.failure is None:
                return None
            vol, written = outcome.failure, outcome.written
        records = claims.written if claims is not None else []
        not_released = set(await self.release_claims(records)) if records else set()
        kept = {r.write.claim for r in records if r.key in not_released}
        release = [a.claim for a in plan.allocations if a.claim not in kept]
        message = f"binding volumes failed: {vol.message}; no member bound"
        if records:
            message += f", {len(records) - len(not_released)} claim write(s) rolled back"
        message += ", the group requeued"
        if written:
            message += (f"; left in place, as kube-scheduler leaves them: {', '.join(written)} (the next attempt "
                        "resumes with them)")
        if not_released:
            message += f" (could not roll back {', '.join(sorted(not_released))})"
        return BindResultParts(vol.key, message, vol.status, release)

    async def _release_unbound(self, plan: Plan, claims: ClaimOutcome, bound: set[str]) -> list[str]:
        """After a failed bind, roll back the claims written only for members that were not bound (all of
        them if none was: a PodGroup claim too); returns the plan's claim keys released."""
        unbound = {p.metadata.uid for p, _ in plan.placements if p.key not in bound}
        release = [r for r in claims.written
                   if not bound or (r.write.reserve and all(c.get("uid") in unbound for c in r.write.reserve))]
        if not release:
            return []
        not_released = set(await self.release_claims(release))
        done = [r for r in release if r.key not in not_released]
        log.info("released %d claim(s) of unbound members: %s", len(done), ", ".join(r.key for r in done))
        return [r.write.claim for r in done]

    async def write_intent(self, plan: Plan, token: str, recorded: RecordedIntent | None = None
                           ) -> tuple[str, ApiError] | None:
        """Record ``plan`` (under ``token``) on each PodGroup it places members of, unless ``recorded`` says the
        PodGroup shows these very placements already (a retry of the same plan writes nothing); None when all
        stand, else the first PodGroup (``ns/name``) whose write failed for good, and the error. A PodGroup
        whose intent is too large to record (``groups.intent``: over ~9,000 members) gets its older intent
        removed instead, with a warning: that gang is bound without durable intent."""
        by_group: dict[tuple[str, str], list[tuple[Pod, str]]] = {}
        resource: dict[tuple[str, str], Resource] = {}  # the PodGroup API each member links (a tree links one)
        for pod, node in plan.placements:
            if pod.group_name is not None:
                by_group.setdefault((pod.metadata.namespace, pod.group_name), []).append((pod, node))
                resource[pod.metadata.namespace, pod.group_name] = (
                    COSCHEDULING_PODGROUPS if pod.group_api == COSCHEDULING_PODGROUPS.group else self.podgroups)
        if not by_group:  # group-less pods: nothing to record (the binds check the fence themselves)
            return None
        values = {key: intent_annotation(token, ps) for key, ps in by_group.items()}
        if recorded is not None:
            values = {(ns, name): value for (ns, name), value in values.items()
                      if recorded(ns, name) != (intent_entries(by_group[ns, name]) if value is not None else {})}
        failures: list[tuple[str, ApiError]] = []

        async def one(ns: str, name: str, value: str | None) -> None:
            if value is None:
                log.warning("PodGroup %s/%s: the plan of its %d members is too large to record as its intent; "
                            "it is bound without one (a restart cannot hold its room)", ns, name,
                            len(by_group[ns, name]))
            body: JSON = {"metadata": {"annotations": {INTENT_ANNOTATION: value}}}
            async with self.semaphore:
                try:
                    await self._retry(f"record plan on PodGroup {ns}/{name}", lambda: self.kube.patch(
                        resource[ns, name], ns, name, body, lane=Lane.URGENT))
                except ApiError as exc:
                    failures.append((f"{ns}/{name}", exc))

        if not self.fence():
            return (f"{plan.root.namespace}/{plan.root.name}", ApiError(0, "NotLeader", "leadership lost"))
        await asyncio.gather(*(one(ns, name, value) for (ns, name), value in sorted(values.items())))
        return failures[0] if failures else None

    async def bind_plan(self, placements: Sequence[tuple[Pod, str]], outcome: BindOutcome | None = None,
                        precheck: Precheck | None = None) -> BindOutcome:
        """Bind every (pod, node) of a plan; stop starting new binds after a permanent failure or a refusal
        of ``precheck``. ``outcome`` (returned) is filled in as each bind lands."""
        outcome = outcome if outcome is not None else BindOutcome()
        stop = asyncio.Event()

        async def one(pod: Pod, node: str) -> None:
            async with self.semaphore:
                if stop.is_set() or not self.fence():
                    outcome.skipped.append(pod.key)
                    stop.set()
                    return
                refused = precheck(pod, node) if precheck is not None else None
                if refused is not None:
                    if outcome.failed is None:
                        outcome.failed = (pod.key, TargetChanged(refused))
                    stop.set()
                    return
                try:
                    await self._bind(pod, node)
                except ApiError as exc:
                    if outcome.failed is None:
                        outcome.failed = (pod.key, exc)
                    stop.set()
                    return
                outcome.bound.append((pod, node))

        await asyncio.gather(*(one(pod, node) for pod, node in placements))
        return outcome

    async def _retry(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``await call()``, retried with jittered backoff while it fails with a retryable error."""
        delay = self.retry_initial_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                return await call()
            except ApiError as exc:
                if not exc.retryable or attempt == self.max_attempts:
                    raise
                log.info("%s failed (%s), retry %d in %.2f s", what, exc, attempt, delay)
                await asyncio.sleep(delay * (0.5 + self.rng.random()))
                delay = min(delay * 2, self.retry_max_s)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _bind(self, pod: Pod, node: str) -> None:
        try:
            await self._retry(f"bind {pod.key} -> {node}", lambda: self.kube.bind(
                pod.metadata.namespace, pod.metadata.name, node, uid=pod.metadata.uid or None))
        except ApiError as exc:
            # A 409, or a failure whose reply may have been lost (5xx, timeout): an attempt of ours may have
            # landed (reference §1.3: "already assigned" to our node is success) — ask the server.
            if (isinstance(exc, Conflict) or exc.retryable) and await self._bound_to(pod, node):
                return
            raise

    async def _bound_to(self, pod: Pod, node: str) -> bool:
        """Whether the pod is bound to ``node`` now (decides a 409 by the object, not the message text)."""
        try:
            current = await self.kube.get(PODS, pod.metadata.namespace, pod.metadata.name, lane=Lane.URGENT)
        except ApiError:
            return False
        return bool((current.get("spec") or {}).get("nodeName") == node)

    # -- claims --------------------------------------------------------------------------------------
    async def write_claims(self, writes: Sequence[ClaimWrite]) -> ClaimOutcome:
        """Write every claim of a plan (concurrently, bounded); after the first permanent failure start no
        more, wait for those in flight, and roll back everything written. See the module docstring."""
        outcome = ClaimOutcome()
        stop = asyncio.Event()

        async def one(write: ClaimWrite) -> None:
            async with self.semaphore:
                if stop.is_set():
                    return
                if not self.fence():
                    if outcome.failed is None:
                        outcome.failed = (write.claim, ApiError(0, "NotLeader", "leadership lost before the write"))
                    stop.set()
                    return
                record = WrittenClaim(write, write.claim.partition("/")[2])
                outcome.written.append(record)
                try:
                    await self._write_claim(record)
                except ApiError as exc:
                    if outcome.failed is None:
                        outcome.failed = (record.key, exc)
                    stop.set()

        await asyncio.gather(*(one(w) for w in writes))
        if outcome.failed is not None:
            outcome.not_released = await self.release_claims(outcome.written)
        return outcome

    async def _write_claim(self, record: WrittenClaim) -> None:
        write = record.write
        ns = write.namespace
        missing = [r for r in write.reserve if not r.get("uid")]
        if missing:
            raise NotFound(404, "NotFound", f"{missing[0]['resource']} {ns}/{missing[0]['name']} is not known; "
                                            f"cannot reserve claim {write.claim} for it")
        rv = write.resource_version
        if write.create is not None:
            body = write.create
            created = await self._retry(f"create claim for {write.pod}",
                                        lambda: self.kube.create(RESOURCE_CLAIMS, ns, body, lane=Lane.URGENT))
            record.name = str(created["metadata"]["name"])
            record.created = True
            rv = str(created["metadata"].get("resourceVersion") or "")
        elif not rv:
            raise NotFound(404, "NotFound", f"ResourceClaim {write.claim} is not in the cache")
        status: JSON = {"reservedFor": merged_reservations(write.existing, write.reserve)}
        if write.allocation is not None:
            status["allocation"] = {**write.allocation,
                                    "allocationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        try:
            result = await self._patch_claim_status(record, rv, status, "write")
        except Conflict:
            current = await self._read_claim(ns, record.name)
            if current is None or not landed(current, write):
                raise
            result = current  # an earlier attempt of ours landed
        record.status_written = True
        record.resource_version = str((result.get("metadata") or {}).get("resourceVersion") or "")
        if write.pod is not None and write.request_mappings:
            pod_ns, _, pod_name = write.pod.partition("/")
            patch = {"status": {"extendedResourceClaimStatus": {"requestMappings": list(write.request_mappings),
                                                                "resourceClaimName": record.name}}}
            await self._retry(f"write extendedResourceClaimStatus of {write.pod}",
                              lambda: self.kube.patch(PODS, pod_ns, pod_name, patch, sub="status", lane=Lane.URGENT))
            record.pod_status_written = True

    async def _patch_claim_status(self, record: WrittenClaim, rv: str, status: JSON, what: str) -> JSON:
        """Merge-patch ``status`` of the claim through ``resourceclaims/{name}/status``, on condition that it is
        still at resourceVersion ``rv`` (else :class:`Conflict`)."""
        body = {"metadata": {"resourceVersion": rv}, "status": status}
        return await self._retry(f"{what} claim {record.key}", lambda: self.kube.patch(
            RESOURCE_CLAIMS, record.write.namespace, record.name, body, sub="status", lane=Lane.URGENT))

    async def _read_claim(self, ns: str, name: str) -> JSON | None:
        try:
            return await self.kube.get(RESOURCE_CLAIMS, ns, name, lane=Lane.URGENT)
        except ApiError:
            return None

    async def release_claims(self, written: Sequence[WrittenClaim]) -> list[str]:
        """Undo claim writes (rollback, reference §6.5 Unreserve): remove our reservations, and our
        allocation when no other consumer remains; delete a claim we created. Best effort, each claim on
        its own; returns the keys of claims that could not be released (they keep our writes)."""
        failed: list[str] = []
        for record in written:
            try:
                await self._release(record)
            except ApiError as exc:
                log.warning("could not roll back claim %s: %s", record.key, exc)
                failed.append(record.key)
        return failed

    async def _release(self, record: WrittenClaim) -> None:
        if record.created:
            if record.pod_status_written and record.write.pod is not None:
                pod_ns, _, pod_name = record.write.pod.partition("/")
                clear = {"status": {"extendedResourceClaimStatus": None}}
                await self._retry(f"clear extendedResourceClaimStatus of {record.write.pod}", lambda: self.kube.patch(
                    PODS, pod_ns, pod_name, clear, sub="status", lane=Lane.URGENT))
            with contextlib.suppress(NotFound):
                await self._retry(f"delete claim {record.key}", lambda: self.kube.delete(
                    RESOURCE_CLAIMS, record.write.namespace, record.name, lane=Lane.URGENT))
        elif record.status_written:
            await self._unwrite(record)

    async def _unwrite(self, record: WrittenClaim) -> None:
        """Remove our reservations (and our allocation if no consumer is left) from a claim we wrote."""
        write = record.write
        ns = write.namespace
        ours = {r["uid"] for r in write.reserve}
        rv = record.resource_version
        current: JSON = {"status": {"reservedFor": merged_reservations(write.existing, write.reserve)}}
        for _ in range(self.max_attempts):
            remaining = [r for r in (current.get("status") or {}).get("reservedFor") or [] if r.get("uid") not in ours]
            status: JSON = {"reservedFor": remaining or None}
            if write.allocation is not None and not remaining:
                status["allocation"] = None
            try:
                await self._patch_claim_status(record, rv, status, "roll back")
                return
            except NotFound:
                return
            except Conflict:
                fresh = await self.kube.get(RESOURCE_CLAIMS, ns, record.name, lane=Lane.URGENT)
                if not landed(fresh, write):
                    return  # someone else changed it since: nothing of ours is left to remove
                current = fresh
                rv = str((fresh.get("metadata") or {}).get("resourceVersion") or "")
        raise Conflict(409, "Conflict", f"claim {record.key} kept changing during the rollback")
