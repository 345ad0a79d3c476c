"""The binder: writes a plan — its claims' allocations first, then its bindings — and reports the outcome.

Design §6: each member is bound with ``POST pods/{name}/binding``; there is no group bind.
What keeps the gang atomic is that the plan was complete and assumed before the first write,
and that the driver forgets the rest of the plan as soon as one member cannot be bound.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

from scheduler.kube import JSON, PODS, RESOURCE_CLAIMS, ApiError, Conflict, KubeClient, NotFound
from scheduler.model.dra import (
    API_VERSION,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    DeviceClass,
    ResourceClaim,
    ResourceClaimSpec,
)
from scheduler.model.pod import Pod
from scheduler.model.quantity import resource_list
from scheduler.solver.plan import ClaimAllocation, Plan

log = logging.getLogger(__name__)

T = TypeVar("T")

PODGROUP_API_GROUP = "scheduling.k8s.io"


@dataclass(slots=True)
class BindOutcome:
    """What happened to a plan: pods bound, the first permanent failure (pod key, error), pods not attempted."""

    bound: list[tuple[Pod, str]] = field(default_factory=list)
    failed: tuple[str, ApiError] | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.skipped


# -- claim writes (DRA) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimWrite:
    """One ResourceClaim write of a plan, made before its first bind.

    ``claim``: ``namespace/name`` (for a synthetic claim the solver's name; the created claim gets a
    generated one). ``reserve``: ``reservedFor`` entries to add (API dicts). ``resource_version``: the
    claim's version the plan was made from ("" for a claim to create). ``existing``: its ``reservedFor``
    as read. ``allocation``: the ``status.allocation`` to write (without timestamp), or None when the
    claim is allocated already and only ``reserve`` is added. ``create``: the body of a scheduler-made
    extended-resource claim to create first; ``pod``: its owning pod (``namespace/name``) and
    ``request_mappings`` the pod's ``extendedResourceClaimStatus.requestMappings``.
    """

    claim: str
    reserve: tuple[JSON, ...]
    resource_version: str = ""
    existing: tuple[JSON, ...] = ()
    allocation: JSON | None = None
    create: JSON | None = None
    pod: str | None = None
    request_mappings: tuple[JSON, ...] = ()

    @property
    def namespace(self) -> str:
        return self.claim.partition("/")[0]


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


class ExtendedRequest(NamedTuple):
    """One request of a scheduler-made extended-resource claim: ``container-<i>-request-<j>``."""

    name: str
    container: str
    resource: str
    class_name: str
    amount: int


def extended_requests(pod: Pod, served: Mapping[str, str], node_resources: Collection[str]) -> list[ExtendedRequest]:
    """The requests of ``pod``'s extended-resource claim, in the order the solver names them.

    ``served``: extended resource → DeviceClass (``ClaimIndex.extended_classes()``); ``node_resources``:
    resources some node offers (never served through DRA). Mirrors ``scheduler.dra.claims.ClaimIndex._extended``
    (reference §6.6): per container ``i``, the served resources with a positive amount in name order are
    ``container-<i>-request-<j>``.
    """
    out: list[ExtendedRequest] = []
    for i, container in enumerate(pod.spec.containers):
        j = 0
        wanted = resource_list({**container.resources.limits, **container.resources.requests})
        for res, amount in sorted(wanted.items()):
            if res in served and res not in node_resources and amount > 0:
                out.append(ExtendedRequest(f"container-{i}-request-{j}", container.name, res, served[res], amount))
                j += 1
    return out


def consumer(kind: str, name: str, uid: str) -> JSON:
    """A ``reservedFor`` entry: a pod (``resource: pods``) or a PodGroup (``scheduling.k8s.io/podgroups``)."""
    if kind == "PodGroup":
        return {"apiGroup": PODGROUP_API_GROUP, "resource": "podgroups", "name": name, "uid": uid}
    return {"resource": "pods", "name": name, "uid": uid}


def _reserved(claim: ResourceClaim) -> tuple[JSON, ...]:
    return tuple(r.model_dump(by_alias=True, exclude_none=True) for r in claim.status.reserved_for)


def _allocation_config(spec: ResourceClaimSpec, requests: Sequence[str],
                       classes: Mapping[str, DeviceClass]) -> list[JSON]:
    """``devices.config`` of an allocation: each used class's config for the requests it served (FromClass),
    then the claim's own config (FromClaim) — what drivers read at prepare time (structured allocator)."""
    by_name: dict[str, str] = {}
    for req in spec.devices.requests:
        for name, alt in req.alternatives():
            by_name[name] = alt.device_class_name
    out: list[JSON] = []
    for name in dict.fromkeys(requests):
        klass = classes.get(by_name.get(name, ""))
        for cfg in klass.spec.config if klass is not None else ():
            if cfg.opaque is not None:
                out.append({"source": "FromClass", "requests": [name],
                            "opaque": cfg.opaque.model_dump(by_alias=True, exclude_none=True)})
    for claim_cfg in spec.devices.config:
        if claim_cfg.opaque is not None:
            out.append({"source": "FromClaim", "requests": list(claim_cfg.requests),
                        "opaque": claim_cfg.opaque.model_dump(by_alias=True, exclude_none=True)})
    return out


def _allocation(a: ClaimAllocation, spec: ResourceClaimSpec, classes: Mapping[str, DeviceClass]) -> JSON:
    devices: JSON = {"results": [{"request": r, "driver": d, "pool": p, "device": dev} for r, d, p, dev in a.results]}
    config = _allocation_config(spec, [r for r, _, _, _ in a.results], classes)
    if config:
        devices["config"] = config
    body: JSON = {"devices": devices}
    if a.node_selector is not None:
        body["nodeSelector"] = dict(a.node_selector)
    return body


def claim_writes(plan: Plan, claims: Mapping[str, ResourceClaim], classes: Mapping[str, DeviceClass],
                 podgroup_uids: Mapping[tuple[str, str], str], *, pinned: Mapping[str, Sequence[str]] | None = None,
                 served: Mapping[str, str] | None = None, node_resources: Collection[str] = ()) -> list[ClaimWrite]:
    """The claim writes a plan needs before its first bind.

    * every ``plan.allocations`` entry: its allocation and reservations, with the resourceVersion of the
      cached claim (``claims``: key → claim as the plan saw it); a PodGroup consumer gets its uid from
      ``podgroup_uids`` ((namespace, name) → uid; "" if unknown, which the binder refuses to write);
    * a synthetic (extended-resource) allocation: the claim to create (owned by the pod, annotated
      ``resource.kubernetes.io/extended-resource-claim: "true"``) with ``served`` / ``node_resources``
      giving its requests, and the pod's request mappings;
    * ``pinned``: pod key → keys of claims that were already allocated: a placed pod not yet in such a
      claim's ``reservedFor`` (nor its PodGroup) is added to it (the kubelet runs only reserved consumers).
    """
    pinned = pinned or {}
    served = served or {}
    pods = {p.key: p for p, _ in plan.placements}
    out: list[ClaimWrite] = []
    for a in plan.allocations:
        ns = a.claim.partition("/")[0]
        reserve = tuple(consumer(kind, name, uid or (podgroup_uids.get((ns, name), "") if kind == "PodGroup" else ""))
                        for kind, name, uid in a.reserved_for)
        if a.synthetic and a.pod is not None and a.pod in pods:
            pod = pods[a.pod]
            requests = extended_requests(pod, served, node_resources)
            spec_body: JSON = {"devices": {"requests": [
                {"name": r.name, "exactly": {"deviceClassName": r.class_name, "allocationMode": "ExactCount",
                                             "count": r.amount}} for r in requests]}}
            create: JSON = {
                "apiVersion": API_VERSION, "kind": "ResourceClaim",
                "metadata": {"generateName": f"{pod.metadata.name}-extended-resources-", "namespace": ns,
                             "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                                                  "uid": pod.metadata.uid, "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "spec": spec_body}
            mappings = tuple({"containerName": r.container, "resourceName": r.resource, "requestName": r.name}
                             for r in requests)
            out.append(ClaimWrite(a.claim, reserve, allocation=_allocation(
                a, ResourceClaimSpec.model_validate(spec_body), classes), create=create, pod=a.pod,
                request_mappings=mappings))
            continue
        claim = claims.get(a.claim)
        if claim is None:
            out.append(ClaimWrite(a.claim, reserve, allocation=_allocation(a, ResourceClaimSpec(), classes)))
            continue
        out.append(ClaimWrite(a.claim, reserve, claim.metadata.resource_version, _reserved(claim),
                              _allocation(a, claim.spec, classes)))
    adds: dict[str, list[JSON]] = {}
    for pod, _ in plan.placements:
        for key in pinned.get(pod.key, ()):
            claim = claims.get(key)
            if claim is None or not claim.is_allocated:
                continue
            held = claim.status.reserved_for
            if any(r.uid == pod.metadata.uid for r in held) or any(
                    r.resource == "podgroups" and r.name == pod.group_name for r in held):
                continue
            adds.setdefault(key, []).append(consumer("Pod", pod.metadata.name, pod.metadata.uid))
    for key, entries in sorted(adds.items()):
        claim = claims[key]
        out.append(ClaimWrite(key, tuple(entries), claim.metadata.resource_version, _reserved(claim)))
    return out


def _merged(existing: Sequence[JSON], reserve: Sequence[JSON]) -> list[JSON]:
    uids = {r.get("uid") for r in existing}
    return [*existing, *(r for r in reserve if r.get("uid") not in uids)]


def _results(status: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    alloc = status.get("allocation") or {}
    return sorted((r.get("request"), r.get("driver"), r.get("pool"), r.get("device"))
                  for r in (alloc.get("devices") or {}).get("results") or [])


def _ours(current: JSON, write: ClaimWrite) -> bool:
    """Whether ``current`` (a claim as read) holds our allocation and reservations (our write landed)."""
    status = current.get("status") or {}
    uids = {r.get("uid") for r in status.get("reservedFor") or []}
    if any(r["uid"] not in uids for r in write.reserve):
        return False
    return write.allocation is None or _results(status) == _results({"allocation": write.allocation})


class Binder:
    """See the module docstring. ``rng`` gives the jitter (seedable for tests)."""

    def __init__(self, kube: KubeClient, *, concurrency: int = 16, max_attempts: int = 5,
                 retry_initial_s: float = 0.2, retry_max_s: float = 5.0, rng: random.Random | None = None,
                 fence: Callable[[], bool] | None = None) -> None:
        self.kube = kube
        self.fence = fence or (lambda: True)
        """Checked before every claim write and bind: False (the lease was lost) starts no new write,
        so a replica that stopped leading never binds next to the new leader (design §8)."""
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_attempts = max_attempts
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.rng = rng or random.Random()

    async def bind_plan(self, placements: Sequence[tuple[Pod, str]]) -> BindOutcome:
        """Bind every (pod, node) of a plan; stop starting new binds after a permanent failure."""
        outcome = BindOutcome()
        stop = asyncio.Event()

        async def one(pod: Pod, node: str) -> None:
            async with self.semaphore:
                if stop.is_set() or not self.fence():
                    outcome.skipped.append(pod.key)
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
        except Conflict:
            if await self._bound_to(pod, node):
                return  # an earlier attempt of ours landed (reference §1.3: treat as success)
            raise

    async def _bound_to(self, pod: Pod, node: str) -> bool:
        """Whether the pod is bound to ``node`` now (decides a 409 by the object, not the message text)."""
        try:
            current = await self.kube.get(PODS, pod.metadata.namespace, pod.metadata.name)
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
                                        lambda: self.kube.create(RESOURCE_CLAIMS, ns, body))
            record.name = str(created["metadata"]["name"])
            record.created = True
            rv = str(created["metadata"].get("resourceVersion") or "")
        elif not rv:
            raise NotFound(404, "NotFound", f"ResourceClaim {write.claim} is not in the cache")
        status: JSON = {"reservedFor": _merged(write.existing, write.reserve)}
        if write.allocation is not None:
            status["allocation"] = {**write.allocation,
                                    "allocationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        try:
            result = await self._patch_claim_status(record, rv, status, "write")
        except Conflict:
            current = await self._read_claim(ns, record.name)
            if current is None or not _ours(current, write):
                raise
            result = current  # an earlier attempt of ours landed
        record.status_written = True
        record.resource_version = str((result.get("metadata") or {}).get("resourceVersion") or "")
        if write.pod is not None and write.request_mappings:
            pod_ns, _, pod_name = write.pod.partition("/")
            patch = {"status": {"extendedResourceClaimStatus": {"requestMappings": list(write.request_mappings),
                                                                "resourceClaimName": record.name}}}
            await self._retry(f"write extendedResourceClaimStatus of {write.pod}",
                              lambda: self.kube.patch(PODS, pod_ns, pod_name, patch, sub="status"))
            record.pod_status_written = True

    async def _patch_claim_status(self, record: WrittenClaim, rv: str, status: JSON, what: str) -> JSON:
        """Merge-patch ``status`` of the claim through ``resourceclaims/{name}/status``, on condition that it is
        still at resourceVersion ``rv`` (else :class:`Conflict`)."""
        body = {"metadata": {"resourceVersion": rv}, "status": status}
        return await self._retry(f"{what} claim {record.key}", lambda: self.kube.patch(
            RESOURCE_CLAIMS, record.write.namespace, record.name, body, sub="status"))

    async def _read_claim(self, ns: str, name: str) -> JSON | None:
        try:
            return await self.kube.get(RESOURCE_CLAIMS, ns, name)
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
                await self._retry(f"clear extendedResourceClaimStatus of {record.write.pod}",
                                  lambda: self.kube.patch(PODS, pod_ns, pod_name, clear, sub="status"))
            with contextlib.suppress(NotFound):
                await self._retry(f"delete claim {record.key}",
                                  lambda: self.kube.delete(RESOURCE_CLAIMS, record.write.namespace, record.name))
        elif record.status_written:
            await self._unwrite(record)

    async def _unwrite(self, record: WrittenClaim) -> None:
        """Remove our reservations (and our allocation if no consumer is left) from a claim we wrote."""
        write = record.write
        ns = write.namespace
        ours = {r["uid"] for r in write.reserve}
        rv = record.resource_version
        current: JSON = {"status": {"reservedFor": _merged(write.existing, write.reserve)}}
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
                fresh = await self.kube.get(RESOURCE_CLAIMS, ns, record.name)
                if not _ours(fresh, write):
                    return  # someone else changed it since: nothing of ours is left to remove
                current = fresh
                rv = str((fresh.get("metadata") or {}).get("resourceVersion") or "")
        raise Conflict(409, "Conflict", f"claim {record.key} kept changing during the rollback")
