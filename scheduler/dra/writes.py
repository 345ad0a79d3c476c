"""The ResourceClaim writes a plan needs before its first bind, as pure values
(``resource.k8s.io/v1`` ``ResourceClaimStatus``; KEP-5004 for extended-resource claims).

kube-scheduler's DynamicResources PreBind writes each claim's ``status.allocation``
(``devices.results``, ``config``, ``nodeSelector``, ``allocationTimestamp``) and ``status.reservedFor``.
:func:`claim_writes` turns a plan's :class:`~scheduler.framework.plan.ClaimAllocation` values into
:class:`ClaimWrite` values — which the live binder sends (``scheduler.live.binder``) and
``simulate``'s recording binder applies to its cache — so both make the same writes. A
scheduler-made extended-resource claim (KEP-5004) is created first, owned by its pod and annotated
``resource.kubernetes.io/extended-resource-claim: "true"``; its requests and the pod's request mappings follow
:func:`scheduler.dra.claims.extended_requests` for the resources its node serves through DRA. A claim of that
pod left by an earlier attempt (:func:`extended_resource_claims`) is deleted first. No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scheduler.dra.claims import extended_requests
from scheduler.framework.plan import ClaimAllocation, Plan
from scheduler.model.dra import (
    API_VERSION,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    DeviceClass,
    DeviceUse,
    ResourceClaim,
    ResourceClaimSpec,
)

JSON = dict[str, Any]

PODGROUP_API_GROUP = "scheduling.k8s.io"


@dataclass(frozen=True, slots=True)
class ClaimWrite:
    """One ResourceClaim write of a plan, made before its first bind.

    ``claim``: ``namespace/name`` (for a synthetic claim the solver's name; the created claim gets a
    generated one). ``reserve``: ``reservedFor`` entries to add (API dicts). ``resource_version``: the
    claim's version the plan was made from ("" for a claim to create). ``existing``: its ``reservedFor``
    as read. ``allocation``: the ``status.allocation`` to write (without timestamp), or None when the
    claim is allocated already and only ``reserve`` is added. ``create``: the body of a scheduler-made
    extended-resource claim to create first; ``pod``: its owning pod (``namespace/name``) and
    ``request_mappings`` the pod's ``extendedResourceClaimStatus.requestMappings``; ``stale``: names of the
    pod's extended-resource claims left by earlier attempts, deleted before the create. ``missing``: the claim
    was not in the cache when the plan was made (the write is refused: nothing to write it to).
    """

    claim: str
    reserve: tuple[JSON, ...]
    resource_version: str = ""
    existing: tuple[JSON, ...] = ()
    allocation: JSON | None = None
    create: JSON | None = None
    pod: str | None = None
    request_mappings: tuple[JSON, ...] = ()
    stale: tuple[str, ...] = ()
    missing: bool = False

    @property
    def namespace(self) -> str:
        return self.claim.partition("/")[0]


def consumer(kind: str, name: str, uid: str) -> JSON:
    """A ``reservedFor`` entry: a pod (``resource: pods``) or a PodGroup (``scheduling.k8s.io/podgroups``)."""
    if kind == "PodGroup":
        return {"apiGroup": PODGROUP_API_GROUP, "resource": "podgroups", "name": name, "uid": uid}
    return {"resource": "pods", "name": name, "uid": uid}


def extended_resource_claims(claims: Iterable[ResourceClaim]) -> dict[tuple[str, str, str], list[str]]:
    """The pods' extended-resource claims among ``claims``: (namespace, pod name, pod uid) → names of the claims
    annotated ``resource.kubernetes.io/extended-resource-claim: "true"`` and controlled by that pod (an owner
    reference with its name and uid and ``controller: true``) — what kube-scheduler's
    ``findExtendedResourceClaim`` (``extendeddynamicresources.go``) looks a pod's claim up by. While the pod is
    pending, such a claim was left by an earlier attempt whose rollback could not delete it. O(len(claims)).
    """
    out: dict[tuple[str, str, str], list[str]] = {}
    for c in claims:
        meta = c.metadata
        if meta.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for o in meta.owner_references:
            if o.controller:
                out.setdefault((meta.namespace, o.name, o.uid), []).append(meta.name)
    return out


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


def allocation_status(a: ClaimAllocation, spec: ResourceClaimSpec, classes: Mapping[str, DeviceClass]) -> JSON:
    """The ``status.allocation`` of ``a`` (without ``allocationTimestamp``, which the writer stamps); each result
    carries the ``DeviceRequestAllocationResult`` fields its device use sets (:func:`result_fields`)."""
    devices: JSON = {"results": [{"request": r, "driver": d, "pool": p, "device": dev, **result_fields(use)}
                                 for (r, d, p, dev), use in zip(a.results, a.device_uses, strict=True)]}
    config = _allocation_config(spec, [r for r, _, _, _ in a.results], classes)
    if config:
        devices["config"] = config
    body: JSON = {"devices": devices}
    if a.node_selector is not None:
        body["nodeSelector"] = dict(a.node_selector)
    return body


def result_fields(use: DeviceUse) -> JSON:
    """The optional ``DeviceRequestAllocationResult`` fields a device use sets, named as the API names them:
    ``adminAccess`` (KEP-5018), ``shareID`` and ``consumedCapacity`` (KEP-5075), ``bindingConditions`` and
    ``bindingFailureConditions`` (KEP-5007); unset ones are left out."""
    out: JSON = {}
    if use.admin:
        out["adminAccess"] = True
    if use.share_id is not None:
        out["shareID"] = use.share_id
    if use.consumed:
        out["consumedCapacity"] = {name: _quantity(amount) for name, amount in use.consumed}
    if use.binding_conditions:
        out["bindingConditions"] = list(use.binding_conditions)
    if use.binding_failure_conditions:
        out["bindingFailureConditions"] = list(use.binding_failure_conditions)
    return out


def _quantity(amount: Decimal) -> str:
    """An exact amount as a quantity string the API accepts (``"8589934592"``, ``"0.5"``)."""
    return str(int(amount)) if amount == amount.to_integral_value() else format(amount.normalize(), "f")


def claim_writes(plan: Plan, claims: Mapping[str, ResourceClaim], classes: Mapping[str, DeviceClass],
                 podgroup_uids: Mapping[tuple[str, str], str], *, pinned: Mapping[str, Sequence[str]] | None = None,
                 served: Mapping[str, str] | None = None) -> list[ClaimWrite]:
    """The claim writes a plan needs before its first bind.

    * every ``plan.allocations`` entry: its allocation and reservations, with the resourceVersion of the
      cached claim (``claims``: key → claim as the plan saw it); a PodGroup consumer gets its uid from
      ``podgroup_uids`` ((namespace, name) → uid; "" if unknown, which the binder refuses to write);
    * a synthetic (extended-resource) allocation: the claim to create (owned by the pod, annotated
      ``resource.kubernetes.io/extended-resource-claim: "true"``) with ``served`` (extended resource →
      DeviceClass) giving its requests for the resources the allocation serves (``extended``), and the pod's
      request mappings; the pod's extended-resource claims already in ``claims`` (left by an earlier attempt)
      are to be deleted first (``stale``), so the pod keeps one;
    * ``pinned``: pod key → keys of claims that were already allocated: a placed pod not yet in such a
      claim's ``reservedFor`` (nor its PodGroup) is added to it (the kubelet runs only reserved consumers).
    """
    pinned = pinned or {}
    served = served or {}
    pods = {p.key: p for p, _ in plan.placements}
    out: list[ClaimWrite] = []
    leftovers: dict[tuple[str, str, str], list[str]] | None = None
    for a in plan.allocations:
        ns = a.claim.partition("/")[0]
        reserve = tuple(consumer(kind, name, uid or (podgroup_uids.get((ns, name), "") if kind == "PodGroup" else ""))
                        for kind, name, uid in a.reserved_for)
        if a.synthetic and a.pod is not None and a.pod in pods:
            pod = pods[a.pod]
            requests, mapped = extended_requests(pod, served, a.extended)
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
            mappings = tuple({"containerName": m.container, "resourceName": m.resource, "requestName": m.request}
                             for m in mapped)
            if leftovers is None:
                leftovers = extended_resource_claims(claims.values())
            stale = tuple(leftovers.get((ns, pod.metadata.name, pod.metadata.uid), ()))
            out.append(ClaimWrite(a.claim, reserve, allocation=allocation_status(
                a, ResourceClaimSpec.model_validate(spec_body), classes), create=create, pod=a.pod,
                request_mappings=mappings, stale=stale))
            continue
        claim = claims.get(a.claim)
        if claim is None:
            out.append(ClaimWrite(a.claim, reserve, allocation=allocation_status(a, ResourceClaimSpec(), classes),
                                  missing=True))
            continue
        out.append(ClaimWrite(a.claim, reserve, claim.metadata.resource_version, _reserved(claim),
                              allocation_status(a, claim.spec, classes)))
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


def merged_reservations(existing: Sequence[JSON], reserve: Sequence[JSON]) -> list[JSON]:
    uids = {r.get("uid") for r in existing}
    return [*existing, *(r for r in reserve if r.get("uid") not in uids)]


def _results(status: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    alloc = status.get("allocation") or {}
    return sorted((r.get("request"), r.get("driver"), r.get("pool"), r.get("device"))
                  for r in (alloc.get("devices") or {}).get("results") or [])


def landed(current: JSON, write: ClaimWrite) -> bool:
    """Whether ``current`` (a claim as read) holds our allocation and reservations (our write landed)."""
    status = current.get("status") or {}
    uids = {r.get("uid") for r in status.get("reservedFor") or []}
    if any(r["uid"] not in uids for r in write.reserve):
        return False
    return write.allocation is None or _results(status) == _results({"allocation": write.allocation})


