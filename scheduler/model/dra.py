"""resource.k8s.io/v1 (DRA): ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate.

Shapes per the Kubernetes v1.37 API reference (resource.k8s.io/v1) and its OpenAPI schema
(``io.k8s.api.resource.v1.*``); only what a DRA-aware scheduler reads is modelled, everything
else is ignored (``KubeModel``). Quantities stay as the API strings; :meth:`DeviceCapacity.quantity`
and friends parse them exactly (``Decimal``) with :func:`scheduler.model.quantity.parse`.

Not modelled on purpose: ``derivedAttributes``, ``compatibilityGroups``, ``partitionTypeAttribute``,
``nodeAllocatableResources``, ``skipNodeOperations`` and taint ``timeAdded``.

One-of fields (a slice's node selection, a request's ``exactly``/``firstAvailable``, an
attribute's value) are not enforced by validators — the API server does that, and a malformed
object must not stop parsing of a snapshot; :func:`request_error` / :func:`slice_error` report them.

Attribute and capacity names: a name without a domain (``productName``) belongs to the
driver's own domain, so on a ``gpu.nvidia.com`` device ``productName`` and
``gpu.nvidia.com/productName`` are the same attribute (``resource.k8s.io/v1`` ``QualifiedName``);
:meth:`Device.attribute` resolves either spelling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field, Strict

from scheduler.model.base import Condition, KubeModel, ObjectMeta, OwnedObjectMeta, Time
from scheduler.model.pod import NodeSelector
from scheduler.model.quantity import Quantity, QuantityError, parse

API_GROUP = "resource.k8s.io"
API_VERSION = f"{API_GROUP}/v1"

EXACT_COUNT = "ExactCount"
ALL = "All"

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""On a generated claim: the pod's (or PodGroup's) claim entry name."""
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
"""On a scheduler-made extended-resource claim, value ``"true"`` (KEP-5004 DRA extended resources)."""
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
"""Every DeviceClass is reachable as the extended resource ``<prefix><class name>`` (KEP-5004)."""

AttributeValue = int | bool | str | tuple[int, ...] | tuple[bool, ...] | tuple[str, ...]
"""One attribute's value: a scalar, or the tuple of a list attribute's values (versions as strings)."""
"""The value of a :class:`DeviceAttribute`; a version is its semver string."""


# --- names ----------------------------------------------------------------------------------------


_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"


def _name_check(pattern: str, longest: int, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > longest or not compiled.fullmatch(value):
            raise ValueError(f"must be {what}, at most {longest} characters")
        return value
    return AfterValidator(check)


DeviceName = Annotated[str, _name_check(_LABEL, 63, "a DNS label (lower-case letters, digits, '-')")]
"""A device's name: a DNS label (RFC 1123), as the API server requires (``resource/v1`` ``validateDevice``)."""
PoolName = Annotated[str, _name_check(f"{_SUBDOMAIN}(/{_SUBDOMAIN})*", 253,
                                      "DNS subdomains (lower-case letters, digits, '-', '.') joined by '/'")]
"""A pool's name: DNS subdomains separated by ``/``, at most 253 characters (``validatePoolName``)."""
DriverName = Annotated[str, _name_check(_SUBDOMAIN, 63, "a DNS subdomain (lower-case letters, digits, '-', '.')")]
"""A driver's name: a DNS subdomain of at most 63 characters (``validateDriverName``)."""


def device_id(driver: str, pool: str, device: str) -> str:
    """The cluster-wide identity of a device: ``<driver>/<pool>/<device>``.

    A pool name may itself contain slashes (it is one or more DNS subdomains separated by ``/``),
    so an id splits unambiguously only at its first slash (a driver name is a DNS subdomain) and
    its last (a device name is a DNS label): the models refuse names that break this
    (:data:`DriverName`, :data:`PoolName`, :data:`DeviceName`), so two devices never share an id.
    """
    return f"{driver}/{pool}/{device}"


def qualified_name(driver: str, name: str) -> str:
    """``name`` with its domain: a name without ``/`` belongs to the driver's domain.

    ``qualified_name("gpu.nvidia.com", "productName") == "gpu.nvidia.com/productName"``;
    a name that already has a domain is returned unchanged.
    """
    return name if "/" in name else f"{driver}/{name}"


def split_name(driver: str, name: str) -> tuple[str, str]:
    """``(domain, short name)`` of an attribute or capacity name as CEL sees it
    (``device.attributes[domain].short``); a name without domain is in the driver's domain."""
    domain, _, short = qualified_name(driver, name).rpartition("/")
    return domain, short


_V = TypeVar("_V")


def _lookup(entries: dict[str, _V], driver: str, name: str) -> _V | None:
    """``entries[name]`` under either spelling of ``name`` (with or without the driver's domain)."""
    if name in entries:
        return entries[name]
    domain, short = split_name(driver, name)
    if domain != driver:
        return None  # another domain: only the fully qualified key can match, and it did not
    return entries.get(short if "/" in name else f"{domain}/{short}")


# --- ResourceSlice --------------------------------------------------------------------------------


class ResourcePool(KubeModel):
    """``ResourcePool``: the pool a slice belongs to; only slices of the highest ``generation``
    count, and the pool is complete once ``resourceSliceCount`` of them are seen. A name, a generation ≥ 0 and a
    count ≥ 1, as the API server requires (``resource/v1`` ``validateResourcePool``)."""

    name: PoolName
    generation: int = Field(default=0, ge=0)
    resource_slice_count: int = Field(default=1, ge=1)


class DeviceAttribute(KubeModel):
    """``DeviceAttribute``: exactly one of ``int`` / ``bool`` / ``string`` / ``version``, or of the alpha
    list forms ``ints`` / ``bools`` / ``strings`` / ``versions`` (KEP-5491, feature gate
    ``DRAListTypeAttributes``: a device advertises several values of one attribute).

    Python names follow Go's ``IntValue`` / ``IntValues`` etc. (``int``/``bool`` would shadow builtins).
    """

    int_value: int | None = Field(None, alias="int")
    bool_value: bool | None = Field(None, alias="bool")
    string_value: str | None = Field(None, alias="string")
    version_value: str | None = Field(None, alias="version")
    int_values: tuple[int, ...] | None = Field(None, alias="ints")
    bool_values: tuple[bool, ...] | None = Field(None, alias="bools")
    string_values: tuple[str, ...] | None = Field(None, alias="strings")
    version_values: tuple[str, ...] | None = Field(None, alias="versions")

    @property
    def value(self) -> AttributeValue | None:
        """The one value that is set (a version as its string; a list form as the tuple of its values),
        or None if none is. A list form wins over a scalar, as in Kubernetes' CEL environment
        (``compile.go`` ``getAttributeValue``, v1.37)."""
        for values in (self.int_values, self.bool_values, self.string_values, self.version_values):
            if values is not None:
                return values
        for v in (self.int_value, self.bool_value, self.string_value, self.version_value):
            if v is not None:
                return v
        return None

    @property
    def versions(self) -> tuple[str, ...] | None:
        """The version text(s) when the attribute is a ``version`` or ``versions`` one, else None."""
        if self.version_values is not None:
            return self.version_values
        return (self.version_value,) if self.version_value is not None else None

    @property
    def type(self) -> str | None:
        """Which field is set: ``"int"``, ``"bool"``, ``"string"``, ``"version"``, their plural for a list
        form, or None."""
        for name, v in (
            ("ints", self.int_values),
            ("bools", self.bool_values),
            ("strings", self.string_values),
            ("versions", self.version_values),
            ("int", self.int_value),
            ("bool", self.bool_value),
            ("string", self.string_value),
            ("version", self.version_value),
        ):
            if v is not None:
                return name
        return None


class CapacityRequestPolicyRange(KubeModel):
    """``CapacityRequestPolicyRange``: ``min`` (required), ``max``, ``step`` (quantities; KEP-5075)."""

    min: Quantity
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(KubeModel):
    """``CapacityRequestPolicy``: ``default``, and ``validRange`` or ``validValues`` (ascending) (KEP-5075)."""

    default: Quantity | None = None
    valid_range: CapacityRequestPolicyRange | None = None
    valid_values: tuple[Quantity, ...] = ()


class DeviceCapacity(KubeModel):
    """``DeviceCapacity``: ``value`` (a quantity) and, on a device with ``allowMultipleAllocations``, the
    ``requestPolicy`` that rounds and checks what one allocation consumes of it (KEP-5075)."""

    value: Quantity
    request_policy: CapacityRequestPolicy | None = None

    @property
    def quantity(self) -> Decimal:
        """``value`` parsed exactly (``81559Mi`` → ``Decimal(85520809984)``).

        Raises :class:`~scheduler.model.quantity.QuantityError` on a malformed quantity.
        """
        return parse(self.value)


class Counter(KubeModel):
    """``Counter``: ``value`` (a quantity)."""

    value: Quantity

    @property
    def quantity(self) -> Decimal:
        """``value`` parsed exactly; raises ``QuantityError`` on a malformed quantity."""
        return parse(self.value)


def counter_quantities(counters: dict[str, Counter]) -> dict[str, Decimal]:
    """A ``counters`` map with every value parsed exactly."""
    return {name: c.quantity for name, c in counters.items()}


class DeviceCounterConsumption(KubeModel):
    """``DeviceCounterConsumption``: what a device takes from one shared counter set."""

    counter_set: str
    counters: dict[str, Counter] = Field(default_factory=dict)


class CounterSet(KubeModel):
    """``CounterSet``: a named set of counters shared by the pool's devices (partitionable GPUs)."""

    name: str
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceTaint(KubeModel):
    """``DeviceTaint``: ``effect`` is ``NoSchedule`` | ``NoExecute`` | ``None``."""

    key: str
    value: str = ""
    effect: str


class Device(KubeModel):
    """``Device``: one allocatable device of a slice.

    ``node_name`` / ``node_selector`` / ``all_nodes`` are only set when the slice has
    ``perDeviceNodeSelection: true``.
    """

    name: DeviceName
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    allow_multiple_allocations: bool | None = None
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    def attribute(self, driver: str, name: str) -> DeviceAttribute | None:
        """The attribute called ``name`` on this device of ``driver``, or None.

        ``name`` may be short (``productName``) or fully qualified (``gpu.nvidia.com/productName``);
        the two spellings are the same attribute when the domain is the driver's (an attribute
        published without a domain belongs to the driver's domain). A name of another domain
        (``resource.kubernetes.io/pcieRoot``) matches only that exact key.
        """
        return _lookup(self.attributes, driver, name)

    def attribute_value(self, driver: str, name: str) -> AttributeValue | None:
        """The value of :meth:`attribute` (int, bool, str; a version as its string; a list form as a tuple),
        or None."""
        attr = self.attribute(driver, name)
        return attr.value if attr else None

    def capacity_quantity(self, driver: str, name: str) -> Decimal | None:
        """Capacity ``name`` (short or fully qualified, as for :meth:`attribute`) parsed exactly,
        or None if the device has no such capacity."""
        cap = _lookup(self.capacity, driver, name)
        return cap.quantity if cap else None

    def attributes_by_domain(self, driver: str) -> dict[str, dict[str, AttributeValue]]:
        """Attributes grouped the way CEL sees them: ``device.attributes[domain][short name]``;
        attributes without a value are left out."""
        out: dict[str, dict[str, AttributeValue]] = {}
        for name, attr in self.attributes.items():
            value = attr.value
            if value is not None:
                domain, short = split_name(driver, name)
                out.setdefault(domain, {})[short] = value
        return out

    def capacity_by_domain(self, driver: str) -> dict[str, dict[str, Decimal]]:
        """Capacities grouped as ``device.capacity[domain][short name]``, parsed exactly.

        Raises ``QuantityError`` on a malformed quantity.
        """
        out: dict[str, dict[str, Decimal]] = {}
        for name, cap in self.capacity.items():
            domain, short = split_name(driver, name)
            out.setdefault(domain, {})[short] = cap.quantity
        return out


class ResourceSliceSpec(KubeModel):
    """``ResourceSliceSpec``: exactly one of ``nodeName`` / ``nodeSelector`` / ``allNodes`` /
    ``perDeviceNodeSelection``; a slice holds ``devices`` or ``sharedCounters``."""

    driver: DriverName
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()


class ResourceSlice(KubeModel):
    """``resource.k8s.io/v1 ResourceSlice`` (cluster-scoped, published by a driver)."""

    api_version: str = API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name

    @property
    def pool_key(self) -> tuple[str, str]:
        """``(driver, pool name)``: pools are per driver."""
        return self.spec.driver, self.spec.pool.name

    def device_id(self, device: Device | str) -> str:
        """``<driver>/<pool>/<device>`` of one of this slice's devices (or a device name)."""
        name = device if isinstance(device, str) else device.name
        return device_id(self.spec.driver, self.spec.pool.name, name)

    def device(self, name: str) -> Device | None:
        """The device of that name in this slice, or None."""
        return next((d for d in self.spec.devices if d.name == name), None)


def slice_error(spec: ResourceSliceSpec) -> str | None:
    """Why a slice's node selection is invalid, else None: the slice must set exactly one of
    nodeName, nodeSelector, allNodes, perDeviceNodeSelection, and a device may set its own
    nodeName/nodeSelector/allNodes (exactly one) only under perDeviceNodeSelection."""
    chosen = [bool(spec.node_name), spec.node_selector is not None, bool(spec.all_nodes),
              bool(spec.per_device_node_selection)]
    if sum(chosen) != 1:
        return "spec must set exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection"
    for d in spec.devices:
        own = sum([bool(d.node_name), d.node_selector is not None, bool(d.all_nodes)])
        if spec.per_device_node_selection and own != 1:
            return f"device {d.name!r} must set exactly one of nodeName, nodeSelector, allNodes"
        if not spec.per_device_node_selection and own:
            return f"device {d.name!r} sets its own node selection without spec.perDeviceNodeSelection"
    return None


# --- DeviceClass ----------------------------------------------------------------------------------


class CELDeviceSelector(KubeModel):
    """``CELDeviceSelector``: a CEL ``expression`` that must evaluate to true for a device."""

    expression: str


class DeviceSelector(KubeModel):
    """``DeviceSelector``: currently only ``cel``."""

    cel: CELDeviceSelector
    """Required: the one member of a one-of (a selector without it would match every device)."""


class OpaqueDeviceConfiguration(KubeModel):
    """``OpaqueDeviceConfiguration``: driver parameters, kept as raw JSON (never interpreted)."""

    driver: str
    parameters: Any = None


class DeviceClassConfiguration(KubeModel):
    """``DeviceClassConfiguration``: ``opaque`` driver configuration."""

    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(KubeModel):
    """``DeviceClassSpec``."""

    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None


class DeviceClass(KubeModel):
    """``resource.k8s.io/v1 DeviceClass`` (cluster-scoped)."""

    api_version: str = API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name

    @property
    def extended_resource_names(self) -> tuple[str, ...]:
        """The extended resources this class serves: ``spec.extendedResourceName`` if set, and
        always the implicit ``deviceclass.resource.kubernetes.io/<name>`` (KEP-5004)."""
        implicit = IMPLICIT_EXTENDED_RESOURCE_PREFIX + self.metadata.name
        explicit = self.spec.extended_resource_name
        return (explicit, implicit) if explicit else (implicit,)


# --- ResourceClaim --------------------------------------------------------------------------------


class DeviceToleration(KubeModel):
    """``DeviceToleration``: ``operator`` ``Equal`` (the default; empty is the default too) or ``Exists``;
    ``effect`` empty (every effect), ``NoSchedule``, ``NoExecute`` or ``None`` — the only values the API server
    accepts (``resource/v1`` validation: ``validDeviceTaintEffects``), so a claim with another is refused as
    invalid, not read as ``Equal``."""

    key: str = ""
    operator: Literal["Equal", "Exists", ""] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "NoExecute", "None"] = ""
    toleration_seconds: int | None = None


class CapacityRequirements(KubeModel):
    """``CapacityRequirements``: per-capacity amounts to take from each allocated device."""

    requests: dict[str, Quantity] = Field(default_factory=dict)


class _DeviceRequestFields(KubeModel):
    """The fields ``ExactDeviceRequest`` and ``DeviceSubRequest`` share, with their API defaults."""

    device_class_name: str
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str | None = None
    count: Annotated[int, Strict()] | None = None
    """An ``int64``: a JSON integer, never a string (``"2"``), as Go's decoder reads it."""
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None

    @property
    def mode(self) -> str:
        """``allocationMode`` with its default, ``ExactCount``."""
        return self.allocation_mode or EXACT_COUNT

    @property
    def wanted(self) -> int:
        """``count`` with its default, 1 (meaningful for ``ExactCount`` only)."""
        return 1 if self.count is None else self.count


class DeviceSubRequest(_DeviceRequestFields):
    """``DeviceSubRequest``: one alternative of ``firstAvailable`` (no ``adminAccess``)."""

    name: str


class ExactDeviceRequest(_DeviceRequestFields):
    """``ExactDeviceRequest``: one or more identical devices of a class."""

    admin_access: bool | None = None


class DeviceRequest(KubeModel):
    """``DeviceRequest``: ``name`` and exactly one of ``exactly`` / ``firstAvailable``."""

    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()

    def alternatives(self) -> tuple[tuple[str, ExactDeviceRequest | DeviceSubRequest], ...]:
        """What may satisfy this request, in the order to try, each with the name an allocation
        result uses: ``((name, exactly),)`` or ``(("name/sub", subrequest), ...)``."""
        if self.exactly is not None:
            return ((self.name, self.exactly),)
        return tuple((f"{self.name}/{sub.name}", sub) for sub in self.first_available)


def request_error(request: DeviceRequest) -> str | None:
    """Why a device request is invalid (not exactly one of exactly/firstAvailable, or a
    count < 1 in ExactCount mode, or an unknown allocationMode), else None."""
    if (request.exactly is None) == (not request.first_available):
        return f"request {request.name!r} must set exactly one of exactly, firstAvailable"
    for name, alt in request.alternatives():
        if alt.mode not in (EXACT_COUNT, ALL):
            return f"request {name!r}: unknown allocationMode {alt.mode!r}"
        if alt.mode == EXACT_COUNT and alt.wanted < 1:
            return f"request {name!r}: count must be >= 1"
    return None


class DeviceConstraint(KubeModel):
    """``DeviceConstraint``: one of ``matchAttribute`` / ``distinctAttribute`` (fully qualified
    names) over ``requests`` (all requests of the claim when empty)."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(DeviceClassConfiguration):
    """``DeviceClaimConfiguration``: ``opaque`` config for some ``requests`` (all when empty)."""

    requests: tuple[str, ...] = ()


class DeviceClaim(KubeModel):
    """``DeviceClaim``: the claim's ``requests``, ``constraints`` and ``config``."""

    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()


class ResourceClaimSpec(KubeModel):
    """``ResourceClaimSpec`` (immutable)."""

    devices: DeviceClaim = Field(default_factory=DeviceClaim)


@dataclass(frozen=True, slots=True)
class DeviceUse:
    """How one allocation result uses one device: the value the allocator, the plan and the cache carry, instead
    of a bare device id (a device is not simply taken or free).

    ``device``: ``driver/pool/device``. ``consumed``: (capacity name, amount) pairs the allocation consumes of a
    device several allocations share (``consumedCapacity``, KEP-5075; empty: none stated). ``admin``:
    ``adminAccess`` (KEP-5018): the device is used without being taken, so it stays allocatable to others.
    ``share_id``: the ``shareID`` of one allocation of a device with ``allowMultipleAllocations`` (KEP-5075;
    None: not shared). ``binding_conditions`` / ``binding_failure_conditions``: the device's, copied into the
    allocation (KEP-5007): its pods are bound only once every binding condition is True in the claim's
    ``status.devices``, and not at all once a failure condition is.
    """

    device: str
    consumed: tuple[tuple[str, Decimal], ...] = ()
    admin: bool = False
    share_id: str | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def takes(self) -> bool:
        """Whether the use keeps the device from other exclusive allocations: every use but admin access."""
        return not self.admin

    @property
    def exclusive(self) -> bool:
        """The whole device, for this allocation alone: neither admin access nor one share of it."""
        return not self.admin and self.share_id is None


def taken_devices(uses: Iterable[DeviceUse]) -> set[str]:
    """The ids of the devices ``uses`` keep whole from other allocations (admin access takes none, and a share of
    a device with ``allowMultipleAllocations`` leaves the rest of it to other shares)."""
    return {u.device for u in uses if u.exclusive}


class DeviceRequestAllocationResult(KubeModel):
    """``DeviceRequestAllocationResult``: one allocated device. ``request`` is
    ``<request>/<subrequest>`` for a ``firstAvailable`` alternative."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    share_id: str | None = Field(None, alias="shareID")
    consumed_capacity: dict[str, Quantity] = Field(default_factory=dict)
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def device_id(self) -> str:
        """``<driver>/<pool>/<device>``."""
        return device_id(self.driver, self.pool, self.device)

    @property
    def use(self) -> DeviceUse:
        """The result as a :class:`DeviceUse` (``consumedCapacity`` parsed to exact amounts; a malformed amount,
        which the API server would have refused, is left out)."""
        consumed: list[tuple[str, Decimal]] = []
        for name, q in sorted(self.consumed_capacity.items()):
            try:
                consumed.append((name, parse(q)))
            except QuantityError:
                continue
        return DeviceUse(self.device_id, tuple(consumed), bool(self.admin_access), self.share_id,
                         self.binding_conditions, self.binding_failure_conditions)


class DeviceAllocationConfiguration(DeviceClaimConfiguration):
    """``DeviceAllocationConfiguration``: config copied at allocation, ``source`` FromClass |
    FromClaim."""

    source: str


class DeviceAllocationResult(KubeModel):
    """``DeviceAllocationResult``: ``results`` and the applied ``config``."""

    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()


class AllocationResult(KubeModel):
    """``AllocationResult``: the devices, and where they are usable (``nodeSelector`` unset:
    everywhere)."""

    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: Time | None = None


class ResourceClaimConsumerReference(KubeModel):
    """``ResourceClaimConsumerReference``: a pod (``resource: pods``) or a PodGroup
    (``apiGroup: scheduling.k8s.io, resource: podgroups``)."""

    api_group: str | None = None
    resource: str
    name: str
    uid: str


class AllocatedDeviceStatus(KubeModel):
    """``AllocatedDeviceStatus``: what the driver reports of one allocated device; its ``conditions`` are where
    binding conditions become True (KEP-5007)."""

    driver: str
    pool: str
    device: str
    share_id: str | None = Field(None, alias="shareID")
    conditions: tuple[Condition, ...] = ()

    @property
    def device_id(self) -> str:
        return device_id(self.driver, self.pool, self.device)


class ResourceClaimStatus(KubeModel):
    """``ResourceClaimStatus``: ``allocation``, ``reservedFor`` and the drivers' ``devices``."""

    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()
    devices: tuple[AllocatedDeviceStatus, ...] = ()


class ResourceClaim(KubeModel):
    """``resource.k8s.io/v1 ResourceClaim`` (namespaced)."""

    api_version: str = API_VERSION
    kind: str = "ResourceClaim"
    metadata: OwnedObjectMeta = Field(default_factory=OwnedObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def is_allocated(self) -> bool:
        """``status.allocation`` is set."""
        return self.status.allocation is not None

    @property
    def allocated_device_ids(self) -> tuple[str, ...]:
        """``<driver>/<pool>/<device>`` of every allocated device (empty when unallocated)."""
        alloc = self.status.allocation
        return tuple(r.device_id for r in alloc.devices.results) if alloc else ()

    @property
    def allocated_uses(self) -> tuple[DeviceUse, ...]:
        """How the allocation uses each of its devices (empty when unallocated)."""
        alloc = self.status.allocation
        return tuple(r.use for r in alloc.devices.results) if alloc else ()

    def is_reserved_for(self, uid: str) -> bool:
        """``status.reservedFor`` names a consumer with that uid."""
        return any(ref.uid == uid for ref in self.status.reserved_for)


class ResourceClaimTemplateSpec(KubeModel):
    """``ResourceClaimTemplateSpec``: labels/annotations for the generated claim, and its spec."""

    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(KubeModel):
    """``resource.k8s.io/v1 ResourceClaimTemplate`` (namespaced)."""

    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"
