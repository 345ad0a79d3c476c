"""Values the API server refuses are refused by the models, with the field named.

Each case is an object the API server would not store — a negative request, limit, overhead or
node allocatable/capacity (core ``ValidateResourceQuantityValue``, "must be greater than or equal
to 0"), a boolean quantity, an int32 field written as a string or a boolean or out of range, a
group priority above 1e9, a container resource name without a domain that is not a standard one
(core ``validateContainerResourceName``, "must be a standard resource for containers") — and the exact
one-line reason :func:`scheduler.model.base.describe` gives for it. The accepted cases next to them pin
where the line is: 0, ``"-0"``, surrounding white space (``Quantity.UnmarshalJSON`` trims it), a
``minCount`` of 0 (left to ``policy_error``).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from scheduler.model import CompositePodGroup, Node, Pod, PodGroup, PriorityClass, ResourceSlice
from scheduler.model.base import describe
from scheduler.model.dra import DeviceClass, ResourceClaim
from scheduler.model.scheduling import policy_error
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass


def pod_with(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": status or {}}


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}}


def node_with(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n1"}, "status": status}


def podgroup_with(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ml"}, "spec": spec}


GANG_2 = {"schedulingPolicy": {"gang": {"minCount": 2}}}

REJECTED = [
    pytest.param(Pod, pod_with({"containers": [container({"nvidia.com/gpu": "-6"})]}),
                 'spec.containers[0].resources.requests.nvidia.com/gpu: must be greater than or equal to 0 (got "-6")',
                 id="negative-gpu-request"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": "1"}), container({"cpu": "-1"})]}),
                 'spec.containers[1].resources.requests.cpu: must be greater than or equal to 0 (got "-1")',
                 id="negative-cpu-request-names-the-container-index"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": -1})]}),
                 "spec.containers[0].resources.requests.cpu: must be greater than or equal to 0 (got -1)",
                 id="negative-number-request"),
    pytest.param(Pod, pod_with({"containers": [container({"memory": "-1Ki"})]}),
                 'spec.containers[0].resources.requests.memory: must be greater than or equal to 0 (got "-1Ki")',
                 id="negative-binary-suffix"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": "-1n"})]}),
                 'spec.containers[0].resources.requests.cpu: must be greater than or equal to 0 (got "-1n")',
                 id="negative-below-a-milli-core-still-negative"),
    pytest.param(Pod, pod_with({"containers": [container(limits={"memroy": "1Gi"})]}),
                 "spec.containers[0].resources.limits.memroy: must be a standard resource for containers"
                 ' (got "memroy")',
                 id="misspelt-resource-name-is-not-an-extended-resource"),
    pytest.param(Pod, pod_with({"initContainers": [container({"gpu": "1"})], "containers": [container()]}),
                 "spec.initContainers[0].resources.requests.gpu: must be a standard resource for containers"
                 ' (got "gpu")',
                 id="resource-name-without-a-domain-in-an-init-container"),
    pytest.param(Pod, pod_with({"containers": [container(limits={"nvidia.com/gpu": "-2"})]}),
                 'spec.containers[0].resources.limits.nvidia.com/gpu: must be greater than or equal to 0 (got "-2")',
                 id="negative-limit"),
    pytest.param(Pod, pod_with({"initContainers": [container({"cpu": "-500m"})]}),
                 'spec.initContainers[0].resources.requests.cpu: must be greater than or equal to 0 (got "-500m")',
                 id="negative-init-container-request"),
    pytest.param(Pod, pod_with({"resources": {"requests": {"memory": "-1Gi"}}}),
                 'spec.resources.requests.memory: must be greater than or equal to 0 (got "-1Gi")',
                 id="negative-pod-level-request"),
    pytest.param(Pod, pod_with({"overhead": {"cpu": "-250m"}}),
                 'spec.overhead.cpu: must be greater than or equal to 0 (got "-250m")', id="negative-overhead"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": True})]}),
                 "spec.containers[0].resources.requests.cpu: must be a quantity (a string or a number) (got true)",
                 id="boolean-quantity"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": ["1"]})]}),
                 "spec.containers[0].resources.requests.cpu: must be a quantity (a string or a number)",
                 id="list-quantity"),
    pytest.param(Pod, pod_with({"containers": [container()]}, {"containerStatuses": [
                     {"name": "c", "allocatedResources": {"cpu": False}}]}),
                 "status.containerStatuses[0].allocatedResources.cpu: must be a quantity (a string or a number) "
                 "(got false)", id="boolean-quantity-in-a-container-status"),
    pytest.param(Pod, pod_with({"priority": "1000"}), 'spec.priority: must be a valid integer (got "1000")',
                 id="pod-priority-string"),
    pytest.param(Node, node_with({"allocatable": {"cpu": "-4", "memory": "8Gi"}}),
                 'status.allocatable.cpu: must be greater than or equal to 0 (got "-4")', id="negative-allocatable"),
    pytest.param(Node, node_with({"capacity": {"nvidia.com/gpu": -8}}),
                 "status.capacity.nvidia.com/gpu: must be greater than or equal to 0 (got -8)", id="negative-capacity"),
    pytest.param(Node, node_with({"allocatable": {"pods": True}}),
                 "status.allocatable.pods: must be a quantity (a string or a number) (got true)",
                 id="boolean-allocatable"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": "2"}}}),
                 'spec.schedulingPolicy.gang.minCount: must be a valid integer (got "2")',
                 id="min-count-string"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": True}}}),
                 "spec.schedulingPolicy.gang.minCount: must be a valid integer (got true)",
                 id="min-count-boolean"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": 10**30}}}),
                 "spec.schedulingPolicy.gang.minCount: must be less than or equal to 2147483647 "
                 "(got 1000000000000000000000000000000)", id="min-count-beyond-int32"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": 2.5}}}),
                 "spec.schedulingPolicy.gang.minCount: must be a valid integer (got 2.5)",
                 id="min-count-fraction"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "priority": 1_000_000_001}),
                 "spec.priority: must be less than or equal to 1000000000 (got 1000000001)",
                 id="group-priority-above-1e9"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "priority": "10"}),
                 'spec.priority: must be a valid integer (got "10")', id="group-priority-string"),
    pytest.param(CompositePodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minGroupCount": "2"}}}),
                 'spec.schedulingPolicy.gang.minGroupCount: must be a valid integer (got "2")',
                 id="min-group-count-string"),
    pytest.param(CompositePodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minGroupCount": -(2**31) - 1}}}),
                 "spec.schedulingPolicy.gang.minGroupCount: must be greater than or equal to -2147483648 "
                 "(got -2147483649)", id="min-group-count-below-int32"),
    pytest.param(PriorityClass, {"metadata": {"name": "high"}, "value": "1000"},
                 'value: must be a valid integer (got "1000")', id="priority-class-value-string"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {
                     "driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1"},
                     "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": True}}}]}},
                 "spec.devices[0].capacity.memory.value: must be a quantity (a string or a number) (got true)",
                 id="boolean-device-capacity"),
    pytest.param(PersistentVolumeClaim, {"metadata": {"name": "data", "namespace": "ml"}, "spec": {
                     "resources": {"requests": {"storage": "-1Gi"}}}},
                 'spec.resources.requests.storage: must be greater than or equal to 0 (got "-1Gi")',
                 id="negative-claim-size"),
    pytest.param(PersistentVolumeClaim, {"metadata": {"name": "data", "namespace": "ml"}, "spec": {
                     "accessModes": ["ReadWriteSometimes"]}},
                 "spec.accessModes[0]: must be 'ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany' or "
                 "'ReadWriteOncePod' (got \"ReadWriteSometimes\")", id="unknown-access-mode"),
    pytest.param(PersistentVolume, {"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "-10Gi"}}},
                 'spec.capacity.storage: must be greater than or equal to 0 (got "-10Gi")', id="negative-pv-capacity"),
    pytest.param(PersistentVolume, {"metadata": {"name": "pv"}, "spec": {"volumeMode": "Raw"}},
                 "spec.volumeMode: must be 'Filesystem' or 'Block' (got \"Raw\")", id="unknown-volume-mode"),
    pytest.param(StorageClass, {"metadata": {"name": "fast"}, "provisioner": "ebs.csi.aws.com",
                                "volumeBindingMode": "Later"},
                 "volumeBindingMode: must be 'Immediate' or 'WaitForFirstConsumer' (got \"Later\")",
                 id="unknown-binding-mode"),
    pytest.param(CSINode, {"metadata": {"name": "n1"}, "spec": {"drivers": [
                     {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": -1}}]}},
                 "spec.drivers[0].allocatable.count: must be greater than or equal to 0 (got -1)",
                 id="negative-attach-count"),
    pytest.param(CSINode, {"metadata": {"name": "n1"}, "spec": {"drivers": [
                     {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": "25"}}]}},
                 'spec.drivers[0].allocatable.count: must be a valid integer (got "25")',
                 id="attach-count-string"),
    pytest.param(Pod, pod_with({"containers": [container()], "resourceClaims": [
                     {"name": "gpu", "resourceClaimTemplateName": "t"}, {"name": "gpu", "resourceClaimName": "c"}]}),
                 "spec.resourceClaims: entry name 'gpu' is used more than once",
                 id="claim-entry-name-twice"),
    pytest.param(Pod, pod_with({"containers": [container()]}) | {"metadata": {
                     "name": "p", "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00"}},
                 'metadata.creationTimestamp: must have timezone info (got "2026-01-01T00:00:00")',
                 id="time-without-a-zone"),
    pytest.param(Pod, pod_with({"containers": [container({"nvidia.com/gpu": "500m"})]}),
                 "spec.containers[0].resources.requests: nvidia.com/gpu: must be an integer (got '500m')",
                 id="fractional-extended-resource"),
    pytest.param(Pod, pod_with({"containers": [container()], "affinity": {"podAntiAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}}),
                 "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
                 "Required value", id="affinity-term-without-topology-key"),
    pytest.param(Pod, pod_with({"containers": [container()], "topologySpreadConstraints": [
                     {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
                 "spec.topologySpreadConstraints[0].maxSkew: must be greater than or equal to 1 (got 0)",
                 id="spread-max-skew-zero"),
    pytest.param(Pod, pod_with({"containers": [container()], "topologySpreadConstraints": [
                     {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]}),
                 "spec.topologySpreadConstraints[0]: minDomains can only be set when whenUnsatisfiable "
                 "is DoNotSchedule", id="spread-min-domains-with-schedule-anyway"),
    pytest.param(Pod, pod_with({"containers": [container()], "preemptionPolicy": "Sometimes"}),
                 "spec.preemptionPolicy: must be 'PreemptLowerPriority' or 'Never' (got \"Sometimes\")",
                 id="unknown-preemption-policy"),
    pytest.param(Pod, pod_with({"containers": [container()], "schedulingGroup": {}}),
                 "spec.schedulingGroup.podGroupName: Required value", id="empty-scheduling-group"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "schedulingConstraints": {"topology": [{"key": ""}]}}),
                 'spec.schedulingConstraints.topology[0].key: String should have at least 1 character (got "")',
                 id="empty-topology-key"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "schedulingConstraints": {"topology": [
                     {"key": "topology.kubernetes.io/zone"}, {"key": "kubernetes.io/hostname"}]}}),
                 "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
                 id="two-topology-levels-on-one-group"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "disruptionMode": {"single": {}, "all": {}}}),
                 "spec.disruptionMode: must set at most one of single, all",
                 id="both-disruption-modes"),
    pytest.param(DeviceClass, {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": None}]}},
                 "spec.selectors[0].cel: must be an object (got "
                 "null)", id="device-selector-without-cel"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {"driver": "", "pool": {"name": "p"},
                                                                     "allNodes": True}},
                 "spec.driver: must be a DNS subdomain (lower-case letters, digits, '-', '.'), at most 63 "
                 'characters (got "")', id="slice-without-a-driver"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p//q"},
                                                                     "allNodes": True}},
                 "spec.pool.name: must be DNS subdomains (lower-case letters, digits, '-', '.') joined by "
                 "'/', at most 253 characters (got \"p//q\")", id="slice-pool-name-not-dns-subdomains"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p"},
                                                                     "allNodes": True, "devices": [{"name": "a/b"}]}},
                 "spec.devices[0].name: must be a DNS label (lower-case letters, digits, '-'), at most 63 "
                 'characters (got "a/b")', id="device-name-with-a-slash"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p"},
                                                                     "allNodes": True, "devices": [{"name": "g\n"}]}},
                 "spec.devices[0].name: must be a DNS label (lower-case letters, digits, '-'), at most 63 "
                 'characters (got "g\\n")', id="device-name-with-a-trailing-newline"),
    pytest.param(ResourceSlice, {"metadata": {"name": "s"}, "spec": {
                     "driver": "d", "pool": {"name": "p", "resourceSliceCount": 0}, "allNodes": True}},
                 "spec.pool.resourceSliceCount: must be greater than or equal to 1 (got 0)",
                 id="pool-of-no-slice"),
    pytest.param(ResourceClaim, {"metadata": {"name": "c", "namespace": "ml"}, "spec": {"devices": {"requests": [
                     {"name": "r", "exactly": {"deviceClassName": "gpu", "count": "2"}}]}}},
                 'spec.devices.requests[0].exactly.count: must be a valid integer (got "2")',
                 id="device-count-string"),
]


@pytest.mark.parametrize(("model", "raw", "reason"), REJECTED)
def test_values_the_api_server_refuses_are_refused_naming_the_field(model: type[BaseModel], raw: dict[str, Any],
                                                                    reason: str) -> None:
    with pytest.raises(ValidationError) as err:
        model.model_validate(raw)
    assert describe(err.value) == reason


ACCEPTED = [
    pytest.param(Pod, pod_with({"containers": [container({"cpu": "0", "nvidia.com/gpu": 0})]}),
                 lambda p: p.requests == {"pods": 1}, id="zero-requests"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": "-0"})]}), lambda p: p.requests == {"pods": 1},
                 id="minus-zero-is-zero"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi",
                                                          "hugepages-2Mi": "4Mi", "nvidia.com/gpu": "1"})]}),
                 lambda p: p.requests == {"cpu": 1000, "memory": 2**30, "ephemeral-storage": 2**30,
                                          "hugepages-2Mi": 4 * 2**20, "nvidia.com/gpu": 1, "pods": 1},
                 id="standard-container-resources-and-a-domain-name"),
    pytest.param(Pod, pod_with({"containers": [container({"cpu": " 2 "})]}),
                 lambda p: p.requests == {"cpu": 2000, "pods": 1}, id="surrounding-space-trimmed-like-UnmarshalJSON"),
    pytest.param(Pod, pod_with({"containers": [container()]}, {"containerStatuses": [
                     {"name": "c", "allocatedResources": {"cpu": "-1"}}]}),
                 lambda p: p.requests == {"pods": 1}, id="status-quantities-are-not-sign-checked-and-never-count"),
    pytest.param(Pod, pod_with({"priority": 2_000_001_000}), lambda p: p.spec.priority == 2_000_001_000,
                 id="pod-priority-of-a-system-class-above-1e9"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": 0}}}),
                 lambda g: policy_error(g.spec.scheduling_policy) == "spec.schedulingPolicy.gang.minCount must be >= 1",
                 id="min-count-zero-is-a-policy-error-not-a-parse-error"),
    pytest.param(PodGroup, podgroup_with({**GANG_2, "priority": -5}), lambda g: g.spec.priority == -5,
                 id="negative-group-priority"),
    pytest.param(PodGroup, podgroup_with({"schedulingPolicy": {"gang": {"minCount": 2**31 - 1}}}),
                 lambda g: g.spec.scheduling_policy.gang.min_count == 2**31 - 1, id="min-count-int32-max"),
    pytest.param(StorageClass, {"metadata": {"name": "standard"}, "provisioner": "ebs.csi.aws.com"},
                 lambda c: c.volume_binding_mode == "Immediate", id="binding-mode-defaults-to-immediate-as-the-api"),
    pytest.param(PersistentVolumeClaim, {"metadata": {"name": "d", "namespace": "ml", "annotations": {
                     "volume.beta.kubernetes.io/storage-class": "old"}}, "spec": {"storageClassName": "new"}},
                 lambda c: c.storage_class == "old", id="beta-class-annotation-wins-over-the-spec"),
]


@pytest.mark.parametrize(("model", "raw", "check"), ACCEPTED)
def test_values_the_api_server_stores_are_accepted(model: type[BaseModel], raw: dict[str, Any],
                                                   check: Any) -> None:
    assert check(model.model_validate(raw))
