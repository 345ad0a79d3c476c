"""What each pod and PodGroup needs from DRA: claims to allocate, claims that pin nodes, or why it waits.

Resolution rules (core/v1 ``PodSpec.resourceClaims``, ``scheduling.k8s.io/v1beta1`` ``PodGroupSpec.resourceClaims``,
``resource.k8s.io/v1`` ``ResourceClaim``, KEP-5004 DRA extended resources):

* a pod's ``spec.resourceClaims`` entry names a claim directly (``resourceClaimName``) or through a
  template (``resourceClaimTemplateName``; the generated claim's name is in
  ``status.resourceClaimStatuses``). An entry equal to one of its PodGroup's
  ``spec.resourceClaims`` entries resolves to the **group's** claim instead (name in the PodGroup's
  ``status.resourceClaimStatuses``);
* a claim that is already allocated only restricts the pod to the nodes its
  ``allocation.nodeSelector`` allows; an unallocated one must be allocated by the plan;
* an unallocated claim named (``resourceClaimName``) by exactly one pending pod is that pod's claim:
  allocated on the pod's node like a template claim. One named by several pending pods is *shared*:
  allocated **once** and reachable from the node of every pod that uses it (only those pods). A
  PodGroup's claim is allocated once for the leaf and reserved for the PodGroup;
* a claim an in-flight plan is allocating (``in_flight``) makes the pod wait until the allocation is
  visible, so two roots never allocate one claim twice;
* a pod whose claim does not exist yet waits, with a reason — not ready for scheduling, as kube-scheduler's PreEnqueue
  holds it (so is a pod whose claim is being deleted); so does a pod whose claim is malformed;
* a pod requesting an extended resource that a DeviceClass serves (``extendedResourceName``, or the implicit
  ``deviceclass.resource.kubernetes.io/<class>``) gets a synthesised claim with the requests of
  :func:`extended_requests` (``container-<i>-request-<j>``); it is used on the nodes that do not offer a non-zero
  amount of the resource in their allocatable (the solver's DynamicResources plugin decides node by node,
  :meth:`NeededClaim.served_through`).

``simulate`` passes ``synthesize=True``: a template-generated claim absent from the snapshot is made
from its template, as the resourceclaim controller would — ``<pod>-<entry>`` for a pod's own claim,
``<podgroup>-<entry>`` (one for all members) for a PodGroup's claim. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from scheduler.dra.allocator import (
    MAX_DEVICES_PER_CLAIM,
    ClaimSpec,
    Constraint,
    DeviceToleration,
    Request,
    SubRequest,
)
from scheduler.dra.capacity import Amounts
from scheduler.lazy import lazy_module
from scheduler.model.dra import (
    ALL,
    DeviceClass,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    request_error,
)
from scheduler.model.namespace import Namespace
from scheduler.model.pod import Container, NodeSelector, Pod
from scheduler.model.quantity import QuantityError, parse
from scheduler.model.scheduling import PodGroup

if TYPE_CHECKING:
    from scheduler.dra import cel
else:  # CEL is loaded by the first selector compiled or device viewed
    cel = lazy_module("scheduler.dra.cel")


class ClaimError(ValueError):
    """A claim spec the allocator cannot use (one-of violated, bad mode or count)."""


ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
"""The namespace label (value ``"true"``) that allows ``adminAccess`` requests in it (KEP-5018)."""
ADMIN_ACCESS_FORBIDDEN = ("admin access to devices requires the `resource.kubernetes.io/admin-access: true` label "
                          "on the containing namespace")
"""The API server's refusal of an ``adminAccess`` request elsewhere (``pkg/registry/resource/resourceclaim/
strategy.go`` ``authorizedForAdmin``, v1.37): the scheduler refuses to allocate such a claim with the same words."""


def admin_allowed(namespace: Namespace | None) -> bool:
    """Whether ``adminAccess`` requests may be allocated in ``namespace`` (None: not known, so not allowed)."""
    return namespace is not None and namespace.metadata.labels.get(ADMIN_ACCESS_LABEL) == "true"


def to_spec(spec: ResourceClaimSpec) -> ClaimSpec:
    """Convert a ``ResourceClaimSpec`` into the allocator's hashable :class:`ClaimSpec`.

    Raises :class:`ClaimError` for a malformed request, a request selector that does not compile (an
    unknown function or field is a compile error, as in the API server's validation), or for a claim
    whose requests need more than
    :data:`~scheduler.dra.allocator.MAX_DEVICES_PER_CLAIM` devices at the least.
    """
    requests = []
    for req in spec.devices.requests:
        if err := request_error(req):
            raise ClaimError(err)
        for name, alt in req.alternatives():
            for selector in alt.selectors:
                try:  # checked when the claim is read, as the API server checks it when it is created
                    cel.compile_selector(selector.cel.expression)
                except cel.SelectorError as exc:
                    raise ClaimError(f"request {name!r}: {exc}") from exc
        options = tuple(
            SubRequest(
                result=name,
                class_name=alt.device_class_name,
                selectors=tuple(s.cel.expression for s in alt.selectors),
                count=alt.wanted,
                all=alt.mode == ALL,
                tolerations=tuple(DeviceToleration(t.key, t.operator, t.value, t.effect) for t in alt.tolerations),
                admin=bool(getattr(alt, "admin_access", None)),  # ``exactly`` only: a subrequest has none
                capacity=_capacity_requests(name, alt.capacity.requests) if alt.capacity is not None else (),
            )
            for name, alt in req.alternatives()
        )
        requests.append(Request(req.name, options))
    fewest = sum(min(1 if sub.all else sub.count for sub in r.options) for r in requests)
    if fewest > MAX_DEVICES_PER_CLAIM:  # wording: structured allocator.go, v1.37
        raise ClaimError(f"number of requested devices {fewest} exceeds the claim limit of {MAX_DEVICES_PER_CLAIM}")
    constraints = tuple(Constraint(tuple(c.requests), c.match_attribute, c.distinct_attribute)
                        for c in spec.devices.constraints)
    return ClaimSpec(tuple(requests), constraints)


def _invalid(claim: str, template: str | None, synthesized: bool) -> tuple[str, str]:
    """How a malformed claim ``claim`` (``ns/name``) is named: the object to fix — its ResourceClaimTemplate
    ``template`` (``ns/name``) when the claim was made from it here (``synthesized``), else the claim — and the
    start of a pod's reason (``ResourceClaimTemplate ml/t is invalid (claim ml/p-gpu made from it)``; a claim the
    resourceclaim controller made names its template too)."""
    if template and synthesized:
        subject = f"ResourceClaimTemplate {template}"
        return subject, f"{subject} is invalid (claim {claim} made from it)"
    subject = f"ResourceClaim {claim}"
    return subject, f"{subject}{f' (made from ResourceClaimTemplate {template})' if template else ''} is invalid"


def _capacity_requests(request: str, requests: Mapping[str, str | int | float]) -> Amounts:
    """A request's ``capacity.requests`` parsed exactly, in name order; raises :class:`ClaimError` on a malformed
    or negative quantity (the API server refuses such a claim)."""
    out = []
    for name, quantity in sorted(requests.items()):
        try:
            amount = parse(quantity)
        except QuantityError as exc:
            raise ClaimError(f"request {request!r}: capacity {name!r}: {exc}") from exc
        if amount < 0:
            raise ClaimError(f"request {request!r}: capacity {name!r} must not be negative")
        out.append((name, amount))
    return tuple(out)


class ExtendedRequest(NamedTuple):
    """One request of a scheduler-made extended-resource claim: ``container-<i>-request-<j>`` for ``amount``
    devices of ``class_name``, serving ``resource``."""

    name: str
    resource: str
    class_name: str
    amount: int


class RequestMapping(NamedTuple):
    """One entry of the pod's ``status.extendedResourceClaimStatus.requestMappings``: the claim request that
    serves ``container``'s ``resource`` (an init container may be served by the request of a later one)."""

    container: str
    resource: str
    request: str


def extended_requests(pod: Pod, served: Mapping[str, str], dra: Collection[str]
                      ) -> tuple[list[ExtendedRequest], list[RequestMapping]]:
    """The requests of ``pod``'s extended-resource claim on a node that serves the resources ``dra`` through DRA,
    and the pod's request mappings; the requests sorted by name.

    ``served``: extended resource → DeviceClass (``ClaimIndex.extended_classes()``); ``dra``: the resources the
    chosen node serves through DRA (each in ``served``; the others come from the node's allocatable). The rule of
    kube-scheduler's ``createRequestsAndMappings`` (``extendeddynamicresources.go``), per resource: containers are
    numbered init containers first, then app containers (``i``); ``j`` is the resource's position among the
    container's requested resources, sorted. Every app container and sidecar (an init container with
    ``restartPolicy: Always``) gets its own request of its amount. A plain init container runs before the
    containers after it start, so it reuses their requests first and asks only for what they lack; the init
    containers' requests are then one, of the largest amount, which all of them map to (the devices the pod
    needs are the largest init container's or the sum of the others, as for any resource).
    """
    containers = (*pod.spec.init_containers, *pod.spec.containers)
    inits = len(pod.spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= inits or c.restart_policy == "Always"]
    short_lived = [i for i in range(inits) if i not in long_lived]
    requests: list[ExtendedRequest] = []
    mappings: list[RequestMapping] = []
    for res in sorted(dra):
        class_name = served[res]
        kept: list[ExtendedRequest | None] = [None] * len(containers)
        for i in long_lived:
            kept[i], made = _container_request(i, containers[i], res, class_name, ())
            mappings.extend(made)
        largest: ExtendedRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for i in short_lived:
            request, made = _container_request(i, containers[i], res, class_name, kept[i:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or request.amount > largest.amount:
                    largest = request
            short_mappings.extend(made)
        if largest is not None:
            requests.append(largest)
            short_mappings = [m._replace(request=largest.name) if m.request in short_names else m
                              for m in short_mappings]
        requests.extend(r for r in kept if r is not None)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def _container_request(index: int, container: Container, resource: str, class_name: str,
                       reusable: Sequence[ExtendedRequest | None]
                       ) -> tuple[ExtendedRequest | None, list[RequestMapping]]:
    """Container ``index``'s request for ``resource`` (None when it asks for none, or ``reusable`` — the requests
    of the long-lived containers started after it — cover it) and its mappings."""
    wanted = container.requests()
    amount = wanted.get(resource, 0)
    if amount <= 0:
        return None, []
    mappings: list[RequestMapping] = []
    reused = 0
    for other in reusable:
        if other is not None:
            reused += other.amount
            mappings.append(RequestMapping(container.name, resource, other.name))
            if reused >= amount:
                return None, mappings
    name = f"container-{index}-request-{sorted(wanted).index(resource)}"
    mappings.append(RequestMapping(container.name, resource, name))
    return ExtendedRequest(name, resource, class_name, amount - reused), mappings


@dataclass(frozen=True, slots=True)
class NeededClaim:
    """A claim the plan must allocate: its ``key`` (``ns/name``), the pod's entry name, and the spec."""

    key: str
    entry: str
    spec: ClaimSpec
    synthetic: bool = False
    """True for a scheduler-made extended-resource claim (created at bind time, KEP-5004)."""
    group: bool = False
    """The pod's PodGroup claim — its entry equals one of its PodGroup's ``spec.resourceClaims`` entries, a template or
    a claim by name — reserved for the PodGroup, not the pod (KEP-5729)."""
    resources: tuple[str, ...] = ()
    """For a synthetic claim: the extended resource each of ``spec.requests`` serves (in their order)."""

    def served_through(self, dra: Collection[str]) -> NeededClaim | None:
        """This synthetic claim on a node that serves only the resources ``dra`` through DRA (it offers the others
        in its allocatable): the requests for those; None when none is left (the claim is not made there)."""
        keep = [i for i, res in enumerate(self.resources) if res in dra]
        if len(keep) == len(self.resources):
            return self
        if not keep:
            return None
        spec = ClaimSpec(tuple(self.spec.requests[i] for i in keep), self.spec.constraints)
        return replace(self, spec=spec, resources=tuple(self.resources[i] for i in keep))


@dataclass(frozen=True, slots=True)
class PodClaims:
    """What one pod needs: ``allocate`` per-pod claims, ``shared`` leaf-level claims (group or shared
    by name), ``pinned`` keys of allocated claims that restrict its nodes, or ``waiting`` (why not yet)."""

    allocate: tuple[NeededClaim, ...] = ()
    shared: tuple[NeededClaim, ...] = ()
    pinned: tuple[str, ...] = ()
    waiting: str | None = None
    not_ready: bool = False
    """``waiting`` is for a claim not created yet or being deleted: what kube-scheduler's DynamicResources holds the pod
    for at PreEnqueue (``dynamicresources.go``), before any attempt — the pod is not ready for scheduling."""
    extended: tuple[str, ...] = ()
    """Extended resources the pod requests that a DeviceClass serves: from the allocatable of a node offering a
    non-zero amount, through DRA (the synthetic claim in :attr:`allocate`) on every other node."""
    invalid: str | None = None
    """When ``waiting`` is for a malformed claim (a selector that does not compile, a bad request): the object the
    user wrote — the ResourceClaimTemplate of a claim ``simulate`` made from it, else the claim — and what is wrong
    with it, the same for every pod using it (``simulate`` lists each once among its DRA problems)."""


RESERVED_FOR_MAX = 256
"""The most consumers a claim's ``status.reservedFor`` may list (``resource/v1`` ``ResourceClaimReservedForMaxSize``):
a pod or group not among them cannot use the claim until one leaves (kube-scheduler's DynamicResources PreFilter:
"resourceclaim in use")."""

_CLAIM, _SYNTH, _TEMPLATE, _GROUP, _FLIGHT, _SHARED, _NAMESPACE = range(7)
"""What a resolution read (:attr:`PendingPod.reads`): a claim (API object or made from its template), a
synthesised claim alone, a template, a PodGroup, whether a claim is in flight, whether it is shared by
name, a namespace."""

Read = tuple[int, str]
"""``(kind, key)``: one lookup a resolution made; the resolution holds until what that lookup answers is reported
changed (:meth:`PendingClaims.changed`; the cache replaces an object on every change, never edits it)."""


@dataclass(slots=True, eq=False)
class PendingPod:
    """One pending pod as :class:`PendingClaims` holds it: the pod, its key, the claim keys it names
    (``resourceClaimName``), and — once resolved — the reads of its resolution and the result."""

    pod: Pod
    key: str
    named: tuple[str, ...]
    reads: tuple[Read, ...] = ()
    claims: PodClaims | None = None


@dataclass(slots=True)
class ClaimIndex:
    """Claims, templates, classes and PodGroups by key (``ns/name``; classes by name); resolves pods with
    :meth:`for_pod`. The mappings may be the cache's live dicts: the index never writes to them."""

    claims: Mapping[str, ResourceClaim]
    templates: Mapping[str, ResourceClaimTemplate]
    classes: Mapping[str, DeviceClass]
    podgroups: Mapping[str, PodGroup]
    synthesize: bool = False
    synthesized: dict[str, ResourceClaim] = field(default_factory=dict)
    """Claims made from their template (``synthesize``), by key."""
    in_flight: frozenset[str] = frozenset()
    """Keys of claims an in-flight plan is allocating: pods naming them wait."""
    named_by: dict[str, int] = field(default_factory=dict)
    """Claim key → how many pending pods name it (``resourceClaimName``); set by :func:`resolve_all`."""
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)
    """Namespaces by name: their labels say where ``adminAccess`` is allowed."""
    memo: PendingClaims | None = None
    """Where converted specs are kept across snapshots (:attr:`PendingClaims.specs`); None: converted each time."""
    served: dict[str, str] | None = None
    """:meth:`extended_classes`, once computed for this index (the classes do not change under it)."""
    refused: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """``(kind, ns/name)`` → why the object was left out (``simulate``'s invalid ResourceClaims and
    ResourceClaimTemplates), so a pod waiting for one says so; fixed for the cache's life (a live API server
    stores no invalid object)."""

    @classmethod
    def build(cls, claims: Iterable[ResourceClaim], templates: Iterable[ResourceClaimTemplate],
              classes: Iterable[DeviceClass], podgroups: Iterable[PodGroup], *, synthesize: bool = False
              ) -> ClaimIndex:
        return cls({c.key: c for c in claims}, {t.key: t for t in templates},
                   {c.metadata.name: c for c in classes},
                   {f"{g.metadata.namespace}/{g.metadata.name}": g for g in podgroups}, synthesize)

    def claim(self, key: str) -> ResourceClaim | None:
        """The claim of ``key``: from the API objects, or made from its template."""
        return self.claims.get(key) or self.synthesized.get(key)

    def extended_classes(self) -> dict[str, str]:
        """Extended resource name → DeviceClass serving it (the newest class wins, then the first name);
        computed once per index."""
        if self.served is None:
            self.served = self._extended_classes()
        return self.served

    def _extended_classes(self) -> dict[str, str]:
        out: dict[str, tuple[object, str]] = {}
        for name in sorted(self.classes):
            klass = self.classes[name]
            stamp = klass.metadata.creation_timestamp
            for res in klass.extended_resource_names:
                prev = out.get(res)
                if prev is None or (stamp is not None and (prev[0] is None or stamp > prev[0])):  # type: ignore[operator]
                    out[res] = (stamp, name)
        return {res: name for res, (_, name) in out.items()}

    def for_pod(self, pod: Pod) -> PodClaims:
        """Resolve a pod's claims (see the module docstring); never raises."""
        return self._resolve(pod, [])

    def _resolve(self, pod: Pod, reads: list[Read]) -> PodClaims:
        """:meth:`for_pod`, appending to ``reads`` every lookup the result depends on (see :data:`Read`)."""
        ns = pod.metadata.namespace
        group = None
        if pod.group_name:
            group_key = f"{ns}/{pod.group_name}"
            group = self.podgroups.get(group_key)
            reads.append((_GROUP, group_key))
        group_entries = {(e.name, e.resource_claim_name, e.resource_claim_template_name): e
                         for e in (group.spec.resource_claims if group else ())}
        group_names = {s.name: s.resource_claim_name for s in (group.status.resource_claim_statuses if group else ())}
        pod_names = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
        allocate: list[NeededClaim] = []
        shared: list[NeededClaim] = []
        pinned: list[str] = []
        for entry in pod.spec.resource_claims:
            ident = (entry.name, entry.resource_claim_name, entry.resource_claim_template_name)
            is_group = ident in group_entries
            if entry.resource_claim_name:
                name: str | None = entry.resource_claim_name
            elif is_group:
                name = group_names.get(entry.name)
            else:
                name = pod_names.get(entry.name)
            claim = None
            if name:
                claim = self.claim(f"{ns}/{name}")
                reads.append((_CLAIM, f"{ns}/{name}"))
            if claim is None and entry.resource_claim_template_name and self.synthesize:
                owner = pod.group_name if is_group and pod.group_name else pod.metadata.name
                claim = self._synthesize(ns, owner, entry.name, entry.resource_claim_template_name, reads)
            if claim is None:
                what = (f"PodGroup {ns}/{pod.group_name} claim {entry.name!r}" if is_group
                        else f"claim {entry.name!r}")
                if name and (problem := self.refused.get(("ResourceClaim", f"{ns}/{name}"))) is not None:
                    return PodClaims(waiting=f"ResourceClaim {ns}/{name} of {what} is invalid: {problem}")
                template = entry.resource_claim_template_name
                source = missing = ""
                if template:
                    source = f" (template {template})"
                    reads.append((_TEMPLATE, f"{ns}/{template}"))
                    if (problem := self.refused.get(("ResourceClaimTemplate", f"{ns}/{template}"))) is not None:
                        missing = f": ResourceClaimTemplate {ns}/{template} is invalid: {problem}"
                    elif f"{ns}/{template}" not in self.templates:  # the resourceclaim controller cannot make it
                        missing = f": ResourceClaimTemplate {ns}/{template} not found"
                named = f" {ns}/{name}" if name else ""
                return PodClaims(waiting=f"waiting for ResourceClaim{named} of {what}{source} to be created{missing}",
                                 not_ready=True)
            if claim.metadata.deletion_timestamp is not None:  # DynamicResources PreEnqueue: "being deleted"
                return PodClaims(waiting=f"ResourceClaim {claim.key} is being deleted", not_ready=True)
            if claim.is_allocated:
                consumers = claim.status.reserved_for
                if len(consumers) >= RESERVED_FOR_MAX and not claim.is_reserved_for(pod.metadata.uid) and not (
                        group is not None and claim.is_reserved_for(group.metadata.uid)):
                    return PodClaims(waiting=f"ResourceClaim {claim.key} is in use by {len(consumers)} consumers, "
                                             f"the most it may have ({RESERVED_FOR_MAX})")
                pinned.append(claim.key)
                continue
            in_flight = claim.key in self.in_flight
            reads.append((_FLIGHT, claim.key))
            if in_flight:
                return PodClaims(waiting=f"ResourceClaim {claim.key} is being allocated for another group; "
                                         "waiting for its allocation to be written")
            spec_or_error = self._to_spec(claim)
            template = entry.resource_claim_template_name
            if isinstance(spec_or_error, ClaimError):
                subject, invalid = _invalid(claim.key, template and f"{ns}/{template}", claim.key in self.synthesized)
                return PodClaims(waiting=f"{invalid}: {spec_or_error}", invalid=f"{subject}: {spec_or_error}")
            spec = spec_or_error
            if any(sub.admin for r in spec.requests for sub in r.options):
                namespace = self.namespaces.get(ns)
                reads.append((_NAMESPACE, ns))
                if not admin_allowed(namespace):
                    _, invalid = _invalid(claim.key, template and f"{ns}/{template}", claim.key in self.synthesized)
                    return PodClaims(waiting=f"{invalid}: {ADMIN_ACCESS_FORBIDDEN}")
            needed = NeededClaim(claim.key, entry.name, spec, group=is_group)
            by_name = False
            if entry.resource_claim_name:
                by_name = self.named_by.get(claim.key, 0) > 1
                reads.append((_SHARED, claim.key))
            (shared if is_group or by_name else allocate).append(needed)
        extended, ext_claim = self._extended(pod)
        if ext_claim is not None:
            allocate.append(ext_claim)
        return PodClaims(tuple(allocate), tuple(shared), tuple(pinned), extended=extended)

    def _synthesize(self, ns: str, owner: str, entry: str, template_name: str,
                    reads: list[Read]) -> ResourceClaim | None:
        """The claim the resourceclaim controller would make from the template for ``owner`` (a pod,
        or a PodGroup for its group claims: one claim shared by all members), named ``<owner>-<entry>``."""
        template = self.templates.get(f"{ns}/{template_name}")
        reads.append((_TEMPLATE, f"{ns}/{template_name}"))
        if template is None:
            return None
        name = f"{owner}-{entry}"
        made = self.synthesized.get(f"{ns}/{name}")
        if made is not None:  # made for an earlier member: one claim for all of a PodGroup's members
            reads.append((_SYNTH, made.key))
            return made
        claim = ResourceClaim.model_validate({
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"resource.kubernetes.io/pod-claim-name": entry}},
            "spec": template.spec.spec.model_dump(by_alias=True, exclude_none=True)})
        self.synthesized[claim.key] = claim
        reads.append((_SYNTH, claim.key))
        return claim

    def _to_spec(self, claim: ResourceClaim) -> ClaimSpec | ClaimError:
        """:func:`to_spec` of the claim's spec, or the error it raised; kept in :attr:`memo` per claim while
        the spec is the same object or an equal one."""
        memo = self.memo
        hit = memo.specs.get(claim.key) if memo is not None else None
        if hit is not None and (hit[0] is claim.spec or hit[0] == claim.spec):
            return hit[1]
        try:
            result: ClaimSpec | ClaimError = to_spec(claim.spec)
        except ClaimError as exc:
            result = exc
        if memo is not None:
            memo.specs[claim.key] = (claim.spec, result)
        return result

    def _extended(self, pod: Pod) -> tuple[tuple[str, ...], NeededClaim | None]:
        served = self.extended_classes()
        if not served:
            return (), None
        dra = sorted(r for r, v in pod.requests.items() if v > 0 and r in served)
        wanted, _ = extended_requests(pod, served, dra)
        if not wanted:
            return (), None
        requests = tuple(Request(r.name, (SubRequest(r.name, r.class_name, count=r.amount),)) for r in wanted)
        key = f"{pod.metadata.namespace}/{pod.metadata.name}-extended-resources"
        return tuple(dra), NeededClaim(key, "extended-resources", ClaimSpec(requests), synthetic=True,
                                       resources=tuple(r.resource for r in wanted))

    def pinned_selectors(self, keys: Iterable[str]) -> list[NodeSelector | None]:
        """The ``allocation.nodeSelector`` of each allocated claim (None: usable everywhere)."""
        out: list[NodeSelector | None] = []
        for key in keys:
            claim = self.claim(key)
            alloc = claim.status.allocation if claim and claim.status else None
            out.append(alloc.node_selector if alloc else None)
        return out


def resolve_all(index: ClaimIndex, pods: Iterable[Pod]) -> Mapping[str, PodClaims]:
    """:meth:`ClaimIndex.for_pod` for every pending pod that has claims or DRA-served extended resources,
    after counting how many of them name each claim (a claim named by one pod is that pod's own): every pod
    resolved from scratch (what :class:`PendingClaims` gives by resolving only what changed)."""
    pending = [p for p in pods if not p.is_bound and not p.is_terminal]
    counts: dict[str, int] = {}
    for pod in pending:
        for entry in pod.spec.resource_claims:
            if entry.resource_claim_name:
                key = f"{pod.metadata.namespace}/{entry.resource_claim_name}"
                counts[key] = counts.get(key, 0) + 1
    index.named_by = counts
    out: dict[str, PodClaims] = {}
    for pod in pending:
        claims = index.for_pod(pod)
        if _needs_devices(claims):
            out[pod.key] = claims
    return out


def _needs_devices(claims: PodClaims) -> bool:
    return bool(claims.allocate or claims.shared or claims.pinned or claims.waiting or claims.extended)


_CHANGES: dict[str, tuple[int, ...]] = {"claim": (_CLAIM, _SYNTH), "template": (_TEMPLATE,), "podgroup": (_GROUP,),
                                        "namespace": (_NAMESPACE,), "flight": (_FLIGHT,)}
"""What :meth:`PendingClaims.changed` accepts → the reads (:data:`Read` kinds) such a change may answer differently."""


@dataclass(slots=True, eq=False)
class PendingClaims:
    """The pending pods' resolved claims, kept up to date from change reports: a snapshot resolves only the pods
    whose resolution read something that changed, O(changed) rather than O(pending pods). The one resolution
    cache of ``run`` and ``simulate``.

    The owner reports each pending pod that may need devices as it changes (:meth:`set_pod`; None once it is
    bound, assumed, finished or gone) and each object a resolution may read as it is replaced (:meth:`changed`:
    a claim, template, PodGroup or namespace, or a claim going in or out of flight). ``deps`` is the reverse
    index of the reads (:data:`Read` kind and key → keys of the pods whose last resolution read it), ``dirty``
    the pods to resolve again; a pod starting or stopping to name a claim moves the claim's count of naming pods
    (``named``), and crossing two (shared by name, or the pod's own) is a change of that read too. When the
    served extended resources change (:attr:`epoch`), every pod is resolved again.
    With ``synthesize`` (``simulate``), a resolution may make a claim from its template that other pods read
    (a PodGroup's claim, made by its first member): each claim made is a change of that claim, and
    :meth:`resolve` goes on until no pod is left to resolve (claims are only ever added, so it ends).
    :meth:`resolve` gives what :func:`resolve_all` gives over the same pods and index (property-tested).

    ``rows``: pod key → its :class:`PendingPod`. ``specs``: claim key → (the spec object, :func:`to_spec` of it
    or the :class:`ClaimError` it raised), kept while the claim's spec is the same (:meth:`ClaimIndex._to_spec`).
    Owned by the cache; not thread-safe.
    """

    rows: dict[str, PendingPod] = field(default_factory=dict)
    named: dict[str, int] = field(default_factory=dict)
    deps: dict[Read, set[str]] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    out: dict[str, PodClaims] = field(default_factory=dict)
    pinned: dict[str, int] = field(default_factory=dict)
    """Allocated claim key → how many pods of ``out`` it pins (the keys: what the view needs node masks of)."""
    specs: dict[str, tuple[ResourceClaimSpec, ClaimSpec | ClaimError]] = field(default_factory=dict)
    served: dict[str, str] | None = None
    """The served extended resources every resolution was made against (:meth:`ClaimIndex.extended_classes`)."""
    epoch: int = 0
    """Moves on whenever :attr:`served` changes (every resolution is then stale)."""
    _frozen: Mapping[str, PodClaims] | None = None

    def pods(self) -> list[Pod]:
        """The pending pods reported, in the order they came."""
        return [entry.pod for entry in self.rows.values()]

    def set_pod(self, key: str, pod: Pod | None) -> None:
        """Pod ``key`` is now ``pod``, pending and possibly needing devices; None (or a bound or finished pod):
        it is not (any more). O(its claims) unless the object is the same as before (then O(1))."""
        old = self.rows.get(key)
        if old is not None:
            if old.pod is pod:
                return
            self._drop(old)
        if pod is None or pod.is_bound or pod.is_terminal:
            return
        ns = pod.metadata.namespace
        named = tuple(f"{ns}/{e.resource_claim_name}" for e in pod.spec.resource_claims if e.resource_claim_name)
        self.rows[key] = PendingPod(pod, key, named)
        for claim in named:
            self._count(claim, 1)
        self.dirty.add(key)

    def changed(self, what: str, key: str) -> None:
        """An object a resolution may read was added, replaced or deleted — ``what``: ``claim`` (``ns/name``),
        ``template`` (``ns/name``), ``podgroup`` (``ns/name``), ``namespace`` (name) — or a claim went in or out
        of flight (``flight``, ``ns/name``). Raises KeyError for another ``what``."""
        for kind in _CHANGES[what]:
            self._touch(kind, key)

    def resolve(self, index: ClaimIndex) -> Mapping[str, PodClaims]:
        """Pod key → claims of every reported pod that needs something from DRA, as :func:`resolve_all` would
        give with ``index`` (whose mappings must be the ones the changes were reported for). The mapping is
        not changed afterwards (a new one is made when a later call differs)."""
        index.named_by = self.named
        index.memo = self
        self._sync(index)
        deps, out, dirty, made = self.deps, self.out, self.dirty, index.synthesized
        while dirty:
            key = dirty.pop()
            entry = self.rows[key]
            self._unlink(entry)
            reads: list[Read] = []
            before_made = len(made)
            claims = entry.claims = index._resolve(entry.pod, reads)
            entry.reads = tuple(reads)
            for dep in entry.reads:
                deps.setdefault(dep, set()).add(key)
            for claim in list(made)[before_made:] if len(made) > before_made else ():
                self.changed("claim", claim)  # made from its template: pods that read it as missing look again
            before = out.pop(key, None)
            if before is not None:
                self._pin(before, -1)
            if _needs_devices(claims):
                out[key] = claims
                self._pin(claims, 1)
            elif before is None:
                continue
            self._frozen = None
        if self._frozen is None:
            self._frozen = dict(self.out)
        return self._frozen

    def _sync(self, index: ClaimIndex) -> None:
        """Resolve every pod again when the served extended resources changed since the
        last resolve (:attr:`epoch`); drop converted specs of claims no longer in ``index`` once they outnumber
        the live ones."""
        served = index.extended_classes()
        if served != self.served:
            self.epoch += 1  # every pod's extended-resource claim may change
            self.served = served
            self.dirty = set(self.rows)
        if len(self.specs) > 2 * (len(index.claims) + len(index.synthesized)) + 64:
            self.specs = {k: v for k, v in self.specs.items()
                          if (c := index.claim(k)) is not None and c.spec is v[0]}

    def _touch(self, kind: int, key: str) -> None:
        pods = self.deps.get((kind, key))
        if pods:
            self.dirty |= pods

    def _count(self, claim: str, delta: int) -> None:
        before = self.named.get(claim, 0)
        after = before + delta
        if after:
            self.named[claim] = after
        else:
            del self.named[claim]
        if (before > 1) != (after > 1):
            self._touch(_SHARED, claim)

    def _drop(self, entry: PendingPod) -> None:
        del self.rows[entry.key]
        self._unlink(entry)
        self.dirty.discard(entry.key)
        for claim in entry.named:
            self._count(claim, -1)
        before = self.out.pop(entry.key, None)
        if before is not None:
            self._pin(before, -1)
            self._frozen = None

    def _pin(self, claims: PodClaims, delta: int) -> None:
        for claim in claims.pinned:
            left = self.pinned.get(claim, 0) + delta
            if left:
                self.pinned[claim] = left
            else:
                del self.pinned[claim]

    def _unlink(self, entry: PendingPod) -> None:
        deps = self.deps
        for dep in entry.reads:
            pods = deps.get(dep)
            if pods is not None:
                pods.discard(entry.key)
                if not pods:
                    del deps[dep]
        entry.reads = ()
