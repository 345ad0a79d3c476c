"""DRA models (resource.k8s.io/v1): schema reach, constructed objects for the fields the shared
examples do not use, and the helpers (device ids, attribute lookup by either spelling, capacities
as exact Decimals, request alternatives, one-of checks).

The example files themselves are round-tripped by ``test_schema.py`` (``EXAMPLES``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from pydantic import Field, ValidationError

from scheduler.model import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    device_id,
    qualified_name,
)
from scheduler.model.dra import (
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceRequest,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaimSpec,
    counter_quantities,
    request_error,
    slice_error,
    split_name,
)
from scheduler.model.quantity import QuantityError
from tests.unit.model.example_data import differences, load_one
from tests.unit.model.test_schema import check

MI, GI = 2**20, 2**30

H100 = ("resourceslices/nvidia-gpu-h100-p5.yaml", "gpu-node-1-gpu.nvidia.com-7cbz2")
DRANET = ("resourceslices/dranet-efa-p4d.yaml", "gpu-a100-p4d-1-dra.net-zskw8")


def h100_slice() -> ResourceSlice:
    return load_one(H100[0], ResourceSlice, H100[1])  # type: ignore[no-any-return]


# --- the schema walker reaches the DRA fields -------------------------------------------------------

DEEP = [
    pytest.param(ResourceSlice, "io.k8s.api.resource.v1.ResourceSlice", [
        "ResourceSlice.spec.pool.resourceSliceCount",
        "ResourceSlice.spec.nodeSelector.nodeSelectorTerms[].matchExpressions[].values",
        "ResourceSlice.spec.perDeviceNodeSelection",
        "ResourceSlice.spec.devices[].attributes{}.int",
        "ResourceSlice.spec.devices[].attributes{}.version",
        "ResourceSlice.spec.devices[].capacity{}.value",
        "ResourceSlice.spec.devices[].consumesCounters[].counters{}.value",
        "ResourceSlice.spec.devices[].nodeSelector.nodeSelectorTerms[].matchFields[].key",
        "ResourceSlice.spec.devices[].taints[].effect",
        "ResourceSlice.spec.devices[].bindsToNode",
        "ResourceSlice.spec.sharedCounters[].counters{}.value",
    ], id="ResourceSlice"),
    pytest.param(DeviceClass, "io.k8s.api.resource.v1.DeviceClass", [
        "DeviceClass.spec.selectors[].cel.expression",
        "DeviceClass.spec.config[].opaque.parameters",
        "DeviceClass.spec.extendedResourceName",
    ], id="DeviceClass"),
    pytest.param(ResourceClaim, "io.k8s.api.resource.v1.ResourceClaim", [
        "ResourceClaim.metadata.annotations",
        "ResourceClaim.metadata.ownerReferences[].uid",
        "ResourceClaim.spec.devices.requests[].exactly.adminAccess",
        "ResourceClaim.spec.devices.requests[].exactly.capacity.requests",
        "ResourceClaim.spec.devices.requests[].firstAvailable[].tolerations[].tolerationSeconds",
        "ResourceClaim.spec.devices.constraints[].distinctAttribute",
        "ResourceClaim.spec.devices.config[].requests",
        "ResourceClaim.status.allocation.devices.results[].shareID",
        "ResourceClaim.status.allocation.devices.results[].consumedCapacity",
        "ResourceClaim.status.allocation.devices.config[].source",
        "ResourceClaim.status.allocation.nodeSelector.nodeSelectorTerms[].matchFields[].values",
        "ResourceClaim.status.allocation.allocationTimestamp",
        "ResourceClaim.status.reservedFor[].apiGroup",
    ], id="ResourceClaim"),
    pytest.param(ResourceClaimTemplate, "io.k8s.api.resource.v1.ResourceClaimTemplate", [
        "ResourceClaimTemplate.spec.metadata.labels",
        "ResourceClaimTemplate.spec.spec.devices.constraints[].matchAttribute",
        "ResourceClaimTemplate.spec.spec.devices.requests[].exactly.deviceClassName",
    ], id="ResourceClaimTemplate"),
]


@pytest.mark.parametrize(("model", "definition", "paths"), DEEP)
def test_walker_reaches_nested_dra_fields(model: Any, definition: str, paths: list[str]) -> None:
    walk = check(model, definition)
    assert walk.missing == []
    assert set(paths) <= set(walk.checked)


class SubRequestWithAdminAccess(DeviceSubRequest):
    admin_access: bool | None = None  # only ExactDeviceRequest has adminAccess


class RequestWithAdminSub(DeviceRequest):
    first_available: tuple[SubRequestWithAdminAccess, ...] = ()


class ClaimDevicesWithAdminSub(DeviceClaim):
    requests: tuple[RequestWithAdminSub, ...] = ()


class ClaimSpecWithAdminSub(ResourceClaimSpec):
    devices: ClaimDevicesWithAdminSub = Field(default_factory=ClaimDevicesWithAdminSub)


class ClaimWithAdminSub(ResourceClaim):
    spec: ClaimSpecWithAdminSub = Field(default_factory=ClaimSpecWithAdminSub)


def test_walker_reports_admin_access_on_a_subrequest() -> None:
    # The v1.37 schema has no DeviceSubRequest.adminAccess (admin access needs a specific device).
    assert check(ClaimWithAdminSub, "io.k8s.api.resource.v1.ResourceClaim").missing == [
        "ResourceClaim.spec.devices.requests[].firstAvailable[].adminAccess"
    ]


# --- constructed objects: fields the shared examples do not use ------------------------------------

# A partitionable GPU as v1.37 requires it: counters and devices in *separate* slices of one pool
# ("Only one of Devices and SharedCounters can be set in a ResourceSlice").
PARTITIONABLE = """
apiVersion: resource.k8s.io/v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node-1-gpu.example.com-counters}
  spec:
    driver: gpu.example.com
    nodeName: node-1
    pool: {name: node-1, generation: 3, resourceSliceCount: 2}
    sharedCounters:
    - name: gpu-0-counter-set
      counters:
        memory: {value: 40Gi}
        multiprocessors: {value: "98"}
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node-1-gpu.example.com-devices}
  spec:
    driver: gpu.example.com
    nodeName: node-1
    pool: {name: node-1, generation: 3, resourceSliceCount: 2}
    devices:
    - name: gpu-0
      attributes: {type: {string: gpu}, index: {int: 0}, healthy: {bool: true}, driverVersion: {version: 1.2.3}}
      capacity: {memory: {value: 40Gi}}
      consumesCounters:
      - counterSet: gpu-0-counter-set
        counters: {memory: {value: 40Gi}, multiprocessors: {value: "98"}}
    - name: gpu-0-half-0
      attributes: {type: {string: half}, gpu.example.com/index: {int: 0}}
      capacity: {memory: {value: 20Gi}, gpu.example.com/bandwidth: {value: 1500M}}
      consumesCounters:
      - counterSet: gpu-0-counter-set
        counters: {memory: {value: 20Gi}, multiprocessors: {value: "49"}}
      taints: [{key: example.com/unhealthy, value: ecc, effect: NoSchedule}]
      allowMultipleAllocations: true
      bindsToNode: true
"""

PER_DEVICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric-0}
spec:
  driver: fabric.example.com
  pool: {name: fabric/zone-a, generation: 1, resourceSliceCount: 1}
  perDeviceNodeSelection: true
  devices:
  - {name: port-0, nodeName: node-1}
  - name: switch-0
    nodeSelector:
      nodeSelectorTerms:
      - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]
  - {name: anywhere-0, allNodes: true}
"""

CLASS_WITH_CONFIG = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
  config:
  - opaque:
      driver: gpu.example.com
      parameters:
        apiVersion: gpu.resource.example.com/v1alpha1
        kind: GpuConfig
        sharing: {strategy: TimeSlicing, timeSlicingConfig: {interval: Long}}
"""

ALLOCATED_CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gang-fabric-x7k2p
  namespace: ml-team
  uid: 0f8b7e32-0000-0000-0000-000000000001
  annotations: {resource.kubernetes.io/pod-claim-name: fabric}
  ownerReferences:
  - {apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, name: gang, uid: pg-uid, controller: true}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: whole
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: "device.attributes['gpu.example.com'].type == 'gpu'"}}]
      - name: halves
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        count: 2
        tolerations: [{key: example.com/unhealthy, operator: Exists, effect: NoSchedule, tolerationSeconds: 30}]
        capacity: {requests: {memory: 10Gi}}
    - name: monitor
      exactly: {deviceClassName: gpu.example.com, allocationMode: All, adminAccess: true}
    constraints:
    - {requests: [gpu], matchAttribute: gpu.example.com/index}
    - {requests: [gpu], distinctAttribute: gpu.example.com/type}
    config:
    - requests: [gpu/halves]
      opaque: {driver: gpu.example.com, parameters: {sharing: shared}}
status:
  allocation:
    allocationTimestamp: "2026-11-29T10:00:00Z"
    devices:
      results:
      - {request: gpu/halves, driver: gpu.example.com, pool: node-1, device: gpu-0-half-0,
         shareID: 4c0f5c1e-0000-0000-0000-000000000002, consumedCapacity: {memory: 10Gi}}
      - {request: monitor, driver: gpu.example.com, pool: node-1, device: gpu-0, adminAccess: true}
      config:
      - source: FromClaim
        requests: [gpu/halves]
        opaque: {driver: gpu.example.com, parameters: {sharing: shared}}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
  reservedFor:
  - {apiGroup: scheduling.k8s.io, resource: podgroups, name: gang, uid: pg-uid}
"""

TEMPLATE_WITH_METADATA = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-x2, namespace: ml-team}
spec:
  metadata:
    labels: {team: ml}
    annotations: {example.com/note: generated}
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com, count: 2}
"""

CONSTRUCTED = [
    pytest.param(PARTITIONABLE, id="partitionable-counters-taints"),
    pytest.param(PER_DEVICE, id="per-device-node-selection"),
    pytest.param(CLASS_WITH_CONFIG, id="class-with-opaque-config"),
    pytest.param(ALLOCATED_CLAIM, id="claim-firstAvailable-allocated-for-podgroup"),
    pytest.param(TEMPLATE_WITH_METADATA, id="template-with-metadata"),
]

KINDS: dict[str, Any] = {
    "ResourceSlice": ResourceSlice,
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
}


def constructed(text: str) -> list[dict[str, Any]]:
    doc = yaml.safe_load(text)
    return doc["items"] if doc["kind"] == "List" else [doc]


@pytest.mark.parametrize("text", CONSTRUCTED)
def test_constructed_objects_are_valid_v1_37_and_round_trip(text: str) -> None:
    for raw in constructed(text):
        kubernetes_validate.validate(raw, "1.37.0", strict=True)  # our test data is a real v1.37 shape
        parsed = KINDS[raw["kind"]].model_validate(raw)
        assert differences(parsed.model_dump(by_alias=True, exclude_unset=True), raw) == []


def test_partitionable_pool_reads_counters_and_consumption() -> None:
    counters, devices = (ResourceSlice.model_validate(raw) for raw in constructed(PARTITIONABLE))
    assert counters.spec.devices == () and devices.spec.shared_counters == ()
    assert counters.pool_key == devices.pool_key == ("gpu.example.com", "node-1")
    (counter_set,) = counters.spec.shared_counters
    assert counter_quantities(counter_set.counters) == {"memory": Decimal(40 * GI), "multiprocessors": Decimal(98)}
    half = devices.device("gpu-0-half-0")
    assert half is not None
    (use,) = half.consumes_counters
    assert use.counter_set == "gpu-0-counter-set"
    assert counter_quantities(use.counters) == {"memory": Decimal(20 * GI), "multiprocessors": Decimal(49)}
    assert half.taints[0].effect == "NoSchedule" and half.allow_multiple_allocations and half.binds_to_node
    assert devices.device("missing") is None


def test_per_device_node_selection() -> None:
    s = ResourceSlice.model_validate(constructed(PER_DEVICE)[0])
    port, switch, anywhere = s.spec.devices
    assert (port.node_name, port.node_selector, port.all_nodes) == ("node-1", None, None)
    assert switch.node_selector is not None
    assert switch.node_selector.node_selector_terms[0].match_expressions[0].values == ("zone-a",)
    assert anywhere.all_nodes is True
    assert slice_error(s.spec) is None
    assert s.device_id(port) == "fabric.example.com/fabric/zone-a/port-0"  # pool names may hold slashes


def test_allocated_claim_for_a_podgroup() -> None:
    claim = ResourceClaim.model_validate(constructed(ALLOCATED_CLAIM)[0])
    assert claim.key == "ml-team/gang-fabric-x7k2p"
    assert claim.is_allocated
    assert claim.allocated_device_ids == ("gpu.example.com/node-1/gpu-0-half-0", "gpu.example.com/node-1/gpu-0")
    alloc = claim.status.allocation
    assert alloc is not None
    assert alloc.allocation_timestamp == datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    first = alloc.devices.results[0]
    assert first.share_id == "4c0f5c1e-0000-0000-0000-000000000002"
    assert first.consumed_capacity == {"memory": "10Gi"}
    assert alloc.devices.config[0].source == "FromClaim"
    assert alloc.devices.config[0].opaque is not None
    assert alloc.devices.config[0].opaque.parameters == {"sharing": "shared"}
    (ref,) = claim.status.reserved_for
    assert (ref.api_group, ref.resource, ref.name) == ("scheduling.k8s.io", "podgroups", "gang")
    assert claim.is_reserved_for("pg-uid") and not claim.is_reserved_for("other")
    assert claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "fabric"
    assert claim.metadata.owner_references[0].kind == "PodGroup"


def test_class_config_keeps_opaque_parameters_verbatim() -> None:
    raw = constructed(CLASS_WITH_CONFIG)[0]
    cls = DeviceClass.model_validate(raw)
    opaque = cls.spec.config[0].opaque
    assert opaque is not None and opaque.driver == "gpu.example.com"
    assert opaque.parameters == raw["spec"]["config"][0]["opaque"]["parameters"]


def test_template_carries_claim_metadata_and_spec() -> None:
    tpl = ResourceClaimTemplate.model_validate(constructed(TEMPLATE_WITH_METADATA)[0])
    assert tpl.key == "ml-team/gpu-x2"
    assert tpl.spec.metadata is not None and tpl.spec.metadata.labels == {"team": "ml"}
    (req,) = tpl.spec.spec.devices.requests
    assert req.exactly is not None and req.exactly.wanted == 2 and req.exactly.mode == "ExactCount"


def test_models_are_frozen_and_required_names_enforced() -> None:
    s = h100_slice()
    with pytest.raises(ValidationError):
        s.spec.devices[0].name = "x"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ResourceSlice.model_validate({"spec": {"pool": {"name": "p"}}})  # no driver
    with pytest.raises(ValidationError):
        ExactDeviceRequest.model_validate({"count": 1})  # no deviceClassName


# --- helpers --------------------------------------------------------------------------------------


def test_device_id() -> None:
    assert device_id("gpu.nvidia.com", "gpu-node-1", "gpu-3") == "gpu.nvidia.com/gpu-node-1/gpu-3"
    s = h100_slice()
    assert s.device_id("gpu-3") == s.device_id(s.spec.devices[0].model_copy(update={"name": "gpu-3"}))
    assert s.device_id("gpu-3") == "gpu.nvidia.com/gpu-node-1/gpu-3"
    extended_claim = "llama3-70b-7c9d4b6f5-k2x8p-extended-resources-jjxlf"
    claim = load_one("clusters/small-gpu-cluster.yaml", ResourceClaim, extended_claim)
    assert claim.allocated_device_ids == tuple(f"gpu.nvidia.com/gpu-a1-1/gpu-{i}" for i in range(8))
    unallocated = load_one("workloads/c-podgroup-shared-claims.yaml", ResourceClaim, "allreduce-bench-0-gpus-hd7lp")
    assert not unallocated.is_allocated and unallocated.allocated_device_ids == ()


def test_qualified_and_split_names() -> None:
    assert qualified_name("gpu.nvidia.com", "productName") == "gpu.nvidia.com/productName"
    assert qualified_name("gpu.nvidia.com", "resource.kubernetes.io/pcieRoot") == "resource.kubernetes.io/pcieRoot"
    assert split_name("gpu.nvidia.com", "productName") == ("gpu.nvidia.com", "productName")
    assert split_name("dra.net", "dra.net/numaNode") == ("dra.net", "numaNode")


ATTRIBUTE_LOOKUP = [
    pytest.param(H100, "productName", "NVIDIA H100 80GB HBM3", id="short-name-stored-short"),
    pytest.param(H100, "gpu.nvidia.com/productName", "NVIDIA H100 80GB HBM3", id="driver-domain-stored-short"),
    pytest.param(H100, "resource.kubernetes.io/pcieRoot", "pci0000:55", id="foreign-domain-exact"),
    pytest.param(H100, "pcieRoot", None, id="short-name-is-the-driver-domain-not-any-domain"),
    pytest.param(H100, "gpu.example.com/productName", None, id="other-driver-domain"),
    pytest.param(H100, "cudaComputeCapability", "9.0.0", id="version-as-string"),
    pytest.param(H100, "noSuchAttribute", None, id="missing"),
    pytest.param(DRANET, "numaNode", 0, id="short-name-stored-qualified"),
    pytest.param(DRANET, "dra.net/numaNode", 0, id="qualified-stored-qualified"),
    pytest.param(DRANET, "rdma", True, id="bool"),
]


@pytest.mark.parametrize(("where", "name", "expected"), ATTRIBUTE_LOOKUP)
def test_attribute_value_with_or_without_domain(where: tuple[str, str], name: str, expected: Any) -> None:
    s: ResourceSlice = load_one(where[0], ResourceSlice, where[1])
    device = s.spec.devices[0]
    value = device.attribute_value(s.spec.driver, name)
    assert value == expected and type(value) is type(expected)
    assert (device.attribute(s.spec.driver, name) is None) is (expected is None)


def test_attribute_value_and_type_per_kind() -> None:
    cases = [({"int": 7}, 7, "int"), ({"bool": False}, False, "bool"), ({"string": "a"}, "a", "string"),
             ({"version": "1.2.3"}, "1.2.3", "version"), ({"strings": ["a", "b"]}, ("a", "b"), "strings"),
             ({"ints": [0, 1]}, (0, 1), "ints"), ({"bools": [True]}, (True,), "bools"),
             ({"versions": ["1.0.0"]}, ("1.0.0",), "versions"), ({}, None, None)]
    for raw, value, kind in cases:
        attr = DeviceAttribute.model_validate(raw)
        assert (attr.value, attr.type) == (value, kind)
        assert type(attr.value) is type(value)
    assert DeviceAttribute(int_value=3).model_dump(by_alias=True, exclude_unset=True) == {"int": 3}


def test_attributes_by_domain_is_the_cel_view() -> None:
    s = h100_slice()
    view = s.spec.devices[0].attributes_by_domain(s.spec.driver)
    assert set(view) == {"gpu.nvidia.com", "resource.kubernetes.io"}
    assert view["gpu.nvidia.com"]["productName"] == "NVIDIA H100 80GB HBM3"
    assert view["resource.kubernetes.io"]["pcieRoot"] == "pci0000:55"


def test_capacity_parsed_exactly() -> None:
    s = h100_slice()
    gpu = s.spec.devices[0]
    assert gpu.capacity["memory"].value == "81559Mi"
    assert gpu.capacity["memory"].quantity == Decimal(81559 * MI) == Decimal(85_520_809_984)
    assert gpu.capacity_quantity("gpu.nvidia.com", "memory") == Decimal(81559 * MI)
    assert gpu.capacity_quantity("gpu.nvidia.com", "gpu.nvidia.com/memory") == Decimal(81559 * MI)
    assert gpu.capacity_quantity("gpu.nvidia.com", "cores") is None
    assert gpu.capacity_by_domain("gpu.nvidia.com") == {"gpu.nvidia.com": {"memory": Decimal(81559 * MI)}}
    _, devices = (ResourceSlice.model_validate(raw) for raw in constructed(PARTITIONABLE))
    half = devices.spec.devices[1]
    assert half.capacity_quantity("gpu.example.com", "bandwidth") == Decimal(1_500_000_000)
    assert DeviceCapacity(value="0.5").quantity == Decimal("0.5")  # exact, no float
    assert DeviceCapacity(value=2).quantity == Decimal(2)
    with pytest.raises(QuantityError):
        _ = DeviceCapacity(value="12 GiB").quantity


def test_mig_capacity_of_the_static_mig_slice() -> None:
    s: ResourceSlice = load_one("resourceslices/nvidia-mig-a100-static.yaml", ResourceSlice,
                                "gpu-a100-mig-1-gpu.nvidia.com-7x2kq")
    by_name = {d.name: d for d in s.spec.devices}
    assert by_name["gpu-0-mig-3g20gb-9-4"].capacity_quantity(s.spec.driver, "memory") == Decimal(19968 * MI)
    assert by_name["gpu-0-mig-3g20gb-9-4"].attribute_value(s.spec.driver, "profile") == "3g.20gb"
    assert by_name["gpu-1"].capacity_quantity(s.spec.driver, "memory") == Decimal(40 * GI)


def test_request_alternatives_and_defaults() -> None:
    claim = ResourceClaim.model_validate(constructed(ALLOCATED_CLAIM)[0])
    gpu, monitor = claim.spec.devices.requests
    assert [(name, alt.mode, alt.wanted) for name, alt in gpu.alternatives()] == [
        ("gpu/whole", "ExactCount", 1),
        ("gpu/halves", "ExactCount", 2),
    ]
    ((name, exact),) = monitor.alternatives()
    assert name == "monitor" and isinstance(exact, ExactDeviceRequest)
    assert exact.mode == "All" and exact.admin_access is True
    assert all(request_error(r) is None for r in claim.spec.devices.requests)


REQUEST_ERRORS = [
    pytest.param({"name": "r"}, "request 'r' must set exactly one of exactly, firstAvailable", id="neither"),
    pytest.param(
        {"name": "r", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "s", "deviceClassName": "c"}]},
        "request 'r' must set exactly one of exactly, firstAvailable", id="both",
    ),
    pytest.param({"name": "r", "exactly": {"deviceClassName": "c", "count": 0}}, "request 'r': count must be >= 1",
                 id="zero-count"),
    pytest.param(
        {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "c", "allocationMode": "Some"}]},
        "request 'r/s': unknown allocationMode 'Some'", id="bad-mode-in-subrequest",
    ),
    pytest.param({"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 0}}, None,
                 id="count-ignored-for-All"),
]


@pytest.mark.parametrize(("raw", "expected"), REQUEST_ERRORS)
def test_request_error(raw: dict[str, Any], expected: str | None) -> None:
    assert request_error(DeviceRequest.model_validate(raw)) == expected


SLICE_ERRORS = [
    pytest.param({"nodeName": "n"}, None, id="node-name"),
    pytest.param({"allNodes": True}, None, id="all-nodes"),
    pytest.param({}, "spec must set exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection",
                 id="none"),
    pytest.param({"nodeName": "n", "allNodes": True},
                 "spec must set exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection", id="two"),
    pytest.param({"perDeviceNodeSelection": True, "devices": [{"name": "d"}]},
                 "device 'd' must set exactly one of nodeName, nodeSelector, allNodes", id="device-without-selection"),
    pytest.param({"nodeName": "n", "devices": [{"name": "d", "allNodes": True}]},
                 "device 'd' sets its own node selection without spec.perDeviceNodeSelection",
                 id="device-selection-without-per-device"),
]


@pytest.mark.parametrize(("extra", "expected"), SLICE_ERRORS)
def test_slice_error(extra: dict[str, Any], expected: str | None) -> None:
    s = ResourceSlice.model_validate({"spec": {"driver": "d.example.com", "pool": {"name": "p"}, **extra}})
    assert slice_error(s.spec) == expected


def test_every_example_slice_has_a_valid_node_selection() -> None:
    from tests.unit.model.example_data import DATA, modelled_objects

    slices = [
        ResourceSlice.model_validate(raw)
        for path in [*sorted((DATA / "resourceslices").glob("*.yaml")), DATA / "clusters/small-gpu-cluster.yaml"]
        for model, raw in modelled_objects(path)
        if model is ResourceSlice
    ]
    assert len(slices) == 25
    assert {s.name: slice_error(s.spec) for s in slices if slice_error(s.spec)} == {}


def test_device_class_extended_resource_names() -> None:
    gpu = load_one("resourceslices/deviceclasses.yaml", DeviceClass, "gpu.nvidia.com")
    assert gpu.extended_resource_names == ("nvidia.com/gpu", "deviceclass.resource.kubernetes.io/gpu.nvidia.com")
    mig = load_one("resourceslices/deviceclasses.yaml", DeviceClass, "mig.nvidia.com")
    assert mig.extended_resource_names == ("deviceclass.resource.kubernetes.io/mig.nvidia.com",)
    assert mig.spec.selectors[0].cel is not None
    assert "type == 'mig'" in mig.spec.selectors[0].cel.expression


def test_matchattribute_constraint_of_the_aligned_template() -> None:
    tpl = load_one("resourceslices/dranet-gpu-efa-claimtemplates.yaml", ResourceClaimTemplate, "gpu-efa-aligned")
    (constraint,) = tpl.spec.spec.devices.constraints
    assert constraint.requests == ("gpu", "efa")
    assert constraint.match_attribute == "resource.kubernetes.io/pcieRoot"
    assert constraint.distinct_attribute is None
