"""Our models against the Kubernetes v1.37 OpenAPI schema, and against real example objects.

1. Every alias a model declares must exist as a property at the same place in the v1.37
   schema (``kubernetes-validate==1.37.0``, ``v1.37.0-local/_definitions.json``). The walker
   follows the pydantic model (nested models inside ``tuple``/``Optional``/unions/``dict``) and
   the schema (``$ref``, ``items``, ``additionalProperties``) side by side.
2. Every object of a modelled kind in ``tests/data`` parses, and what we model survives:
   ``model_dump(by_alias=True, exclude_unset=True)`` is a sub-structure of the raw document.
"""

from __future__ import annotations

import json
import types
import typing
from collections import Counter, abc
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

import pytest
from pydantic import BaseModel, Field

from scheduler.model import (
    CompositePodGroup,
    DeviceClass,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    Workload,
)
from scheduler.model.node import NodeSpec, NodeStatus, Taint
from scheduler.model.pod import Affinity, PodSpec, Toleration
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.scheduling import PodGroupSpec, WorkloadReference
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from tests.unit.model.example_data import DATA, differences, documents, is_subset, modelled_objects

SCHEMA_VERSION = "v1.37.0-local"


@cache
def definitions() -> dict[str, Any]:
    """``$defs`` of the v1.37 schema shipped in the kubernetes-validate package."""
    package = resources.files("kubernetes_validate")
    path = package.joinpath("kubernetes-json-schema", SCHEMA_VERSION, "_definitions.json")
    return json.loads(path.read_text())["$defs"]  # type: ignore[no-any-return]


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` until a definition body."""
    while "$ref" in schema:
        schema = definitions()[schema["$ref"].removeprefix("#/$defs/")]
    return schema


@dataclass
class Walk:
    """What the walker saw: every alias path it checked, and the ones the schema lacks."""

    checked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def walk_model(model: type[BaseModel], schema: dict[str, Any], path: str, out: Walk) -> None:
    props = resolve(schema).get("properties", {})
    for name, info in model.model_fields.items():
        alias = info.alias or name
        here = f"{path}.{alias}"
        out.checked.append(here)
        if alias not in props:
            out.missing.append(here)
            continue
        walk_annotation(info.annotation, props[alias], here, out)


def walk_annotation(annotation: Any, schema: dict[str, Any], path: str, out: Walk) -> None:
    """Descend into ``annotation`` and ``schema`` together; scalars end the walk."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        walk_model(annotation, schema, path, out)
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            walk_annotation(arg, schema, path, out)
    elif origin in (tuple, list, set, frozenset, abc.Sequence):
        body = resolve(schema)
        if "items" not in body:
            out.missing.append(f"{path}: not an array in the schema")
            return
        for arg in args:
            if arg is not Ellipsis:
                walk_annotation(arg, body["items"], f"{path}[]", out)
    elif origin in (dict, abc.Mapping):
        body = resolve(schema)
        if "additionalProperties" not in body:
            out.missing.append(f"{path}: not a map in the schema")
            return
        walk_annotation(args[1], body["additionalProperties"], f"{path}{{}}", out)
    elif any(isinstance(arg, type) and issubclass(arg, BaseModel) for arg in args):
        out.missing.append(f"{path}: the walker does not understand {annotation}")


def check(model: type[BaseModel], definition: str) -> Walk:
    """Walk ``model`` against schema ``definition``; paths start with the definition's short name."""
    out = Walk()
    walk_model(model, ref(definition), definition.rsplit(".", 1)[-1], out)
    return out


def test_schema_file_is_found_through_the_package() -> None:
    defs = definitions()
    assert "io.k8s.api.core.v1.PodSpec" in defs
    assert "schedulingGroup" in defs["io.k8s.api.core.v1.PodSpec"]["properties"]


MODELS = [
    pytest.param(Pod, "io.k8s.api.core.v1.Pod", id="Pod-core-v1"),
    pytest.param(Node, "io.k8s.api.core.v1.Node", id="Node-core-v1"),
    pytest.param(PodGroup, "io.k8s.api.scheduling.v1beta1.PodGroup", id="PodGroup-v1beta1"),
    pytest.param(CompositePodGroup, "io.k8s.api.scheduling.v1alpha3.CompositePodGroup",
                 id="CompositePodGroup-v1alpha3"),
    pytest.param(Workload, "io.k8s.api.scheduling.v1beta1.Workload", id="Workload-v1beta1"),
    pytest.param(PriorityClass, "io.k8s.api.scheduling.v1.PriorityClass", id="PriorityClass-v1"),
    # The loader also reads these served versions with the same models.
    pytest.param(PodGroup, "io.k8s.api.scheduling.v1alpha3.PodGroup", id="PodGroup-v1alpha3"),
    pytest.param(Workload, "io.k8s.api.scheduling.v1alpha3.Workload", id="Workload-v1alpha3"),
    pytest.param(ResourceSlice, "io.k8s.api.resource.v1.ResourceSlice", id="ResourceSlice-resource-v1"),
    pytest.param(DeviceClass, "io.k8s.api.resource.v1.DeviceClass", id="DeviceClass-resource-v1"),
    pytest.param(ResourceClaim, "io.k8s.api.resource.v1.ResourceClaim", id="ResourceClaim-resource-v1"),
    pytest.param(ResourceClaimTemplate, "io.k8s.api.resource.v1.ResourceClaimTemplate",
                 id="ResourceClaimTemplate-resource-v1"),
    pytest.param(PersistentVolumeClaim, "io.k8s.api.core.v1.PersistentVolumeClaim", id="PersistentVolumeClaim-v1"),
    pytest.param(PersistentVolume, "io.k8s.api.core.v1.PersistentVolume", id="PersistentVolume-v1"),
    pytest.param(StorageClass, "io.k8s.api.storage.v1.StorageClass", id="StorageClass-storage-v1"),
    pytest.param(CSINode, "io.k8s.api.storage.v1.CSINode", id="CSINode-storage-v1"),
    pytest.param(PodDisruptionBudget, "io.k8s.api.policy.v1.PodDisruptionBudget", id="PodDisruptionBudget-policy-v1"),
]


@pytest.mark.parametrize(("model", "definition"), MODELS)
def test_every_alias_exists_in_the_v1_37_schema(model: type[BaseModel], definition: str) -> None:
    assert check(model, definition).missing == []


@pytest.mark.parametrize(
    "deep_path",
    [
        "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[].matchExpressions[].values",
        "Pod.spec.initContainers[].restartPolicy",
        "Pod.spec.containers[].resources.limits",
        "Pod.spec.schedulingGroup.podGroupName",
        "Pod.status.resourceClaimStatuses[].resourceClaimName",
        "Pod.status.containerStatuses[].allocatedResources",
        "Pod.spec.volumes[].ephemeral.volumeClaimTemplate.spec.resources.requests",
        "Pod.spec.volumes[].awsElasticBlockStore.volumeID",
        "Pod.spec.volumes[].rbd.monitors",
    ],
)
def test_walker_reaches_nested_fields(deep_path: str) -> None:
    assert deep_path in check(Pod, "io.k8s.api.core.v1.Pod").checked


def test_walker_reaches_nested_scheduling_fields() -> None:
    checked = check(PodGroup, "io.k8s.api.scheduling.v1beta1.PodGroup").checked
    assert {
        "PodGroup.spec.schedulingPolicy.gang.minCount",
        "PodGroup.spec.schedulingConstraints.topology[].key",
        "PodGroup.spec.disruptionMode.all",
        "PodGroup.spec.workloadRef.templateName",
        "PodGroup.status.conditions[].observedGeneration",
    } <= set(checked)


# --- negative tests: throwaway models with wrong names must be reported -----------------------


class TaintWithTypo(Taint):
    time_add: str | None = None  # the API field is timeAdded


class NodeSpecWithTypo(NodeSpec):
    taints: tuple[TaintWithTypo, ...] = ()


class NodeWithTaintTypo(Node):
    spec: NodeSpecWithTypo = Field(default_factory=NodeSpecWithTypo)


class PodSpecWithBadAlias(PodSpec):
    scheduler_name: str = Field("default-scheduler", alias="schedulerNmae")


class PodWithBadAlias(Pod):
    spec: PodSpecWithBadAlias = Field(default_factory=PodSpecWithBadAlias)


class WorkloadRefWithTypo(WorkloadReference):
    template: str = ""  # the API field is templateName


class PodGroupSpecWithTypo(PodGroupSpec):
    workload_ref: WorkloadRefWithTypo | None = None


class PodGroupWithTypo(PodGroup):
    spec: PodGroupSpecWithTypo = Field(default_factory=PodGroupSpecWithTypo)


class NodeStatusWithModelValues(NodeStatus):
    capacity: dict[str, Taint] = {}  # capacity values are Quantities, which have no properties


class NodeWithModelValues(Node):
    status: NodeStatusWithModelValues = Field(default_factory=NodeStatusWithModelValues)


class PodSpecWithListAffinity(PodSpec):
    affinity: tuple[Affinity, ...] = ()  # affinity is an object, not an array


class PodWithListAffinity(Pod):
    spec: PodSpecWithListAffinity = Field(default_factory=PodSpecWithListAffinity)


class PodSpecWithIterableTolerations(PodSpec):
    tolerations: abc.Iterable[Toleration] = ()  # an origin the walker does not map onto the schema


class PodWithIterableTolerations(Pod):
    spec: PodSpecWithIterableTolerations = Field(default_factory=PodSpecWithIterableTolerations)


NEGATIVE = [
    pytest.param(
        NodeWithTaintTypo, "io.k8s.api.core.v1.Node", ["Node.spec.taints[].timeAdd"],
        id="misspelled-generated-alias-inside-a-tuple",
    ),
    pytest.param(
        PodWithBadAlias, "io.k8s.api.core.v1.Pod", ["Pod.spec.schedulerNmae"],
        id="misspelled-explicit-alias",
    ),
    pytest.param(
        PodGroupWithTypo, "io.k8s.api.scheduling.v1beta1.PodGroup", ["PodGroup.spec.workloadRef.template"],
        id="misspelled-alias-inside-an-optional",
    ),
    pytest.param(
        NodeWithModelValues, "io.k8s.api.core.v1.Node",
        ["Node.status.capacity{}.key", "Node.status.capacity{}.value", "Node.status.capacity{}.effect"],
        id="model-under-additionalProperties-is-checked",
    ),
    pytest.param(
        PodWithListAffinity, "io.k8s.api.core.v1.Pod", ["Pod.spec.affinity: not an array in the schema"],
        id="tuple-where-the-schema-has-an-object",
    ),
    pytest.param(
        PodWithIterableTolerations, "io.k8s.api.core.v1.Pod",
        [
            "Pod.spec.tolerations: the walker does not understand "
            "collections.abc.Iterable[scheduler.model.pod.Toleration]"
        ],
        id="unknown-container-of-models-is-reported-not-skipped",
    ),
]


@pytest.mark.parametrize(("model", "definition", "expected"), NEGATIVE)
def test_walker_reports_wrong_names(model: type[BaseModel], definition: str, expected: list[str]) -> None:
    assert check(model, definition).missing == expected


def test_walker_reports_a_model_checked_against_the_wrong_kind() -> None:
    # apiVersion, kind and metadata exist on a Node too; PriorityClass's own top-level fields do not.
    assert check(PriorityClass, "io.k8s.api.core.v1.Node").missing == [
        "Node.value",
        "Node.globalDefault",
        "Node.preemptionPolicy",
    ]


# --- the sub-structure helper -------------------------------------------------------------------

T0 = datetime(2026, 11, 29, 9, 50, tzinfo=UTC)

SUBSET = [
    pytest.param({"a": 1}, {"a": 1, "b": 2}, [], id="extra-keys-in-the-document-are-fine"),
    pytest.param({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2], "c": 3}}, [], id="nested"),
    pytest.param((1, 2), [1, 2], [], id="tuple-equals-list"),
    pytest.param({"t": T0}, {"t": "2026-11-29T09:50:00Z"}, [], id="datetime-vs-rfc3339-string"),
    pytest.param({"a": 1}, {"b": 1}, [".a: missing"], id="missing-key"),
    pytest.param({"a": [1]}, {"a": [1, 2]}, [".a: 1 items vs 2"], id="list-length-differs"),
    pytest.param({"a": 8}, {"a": "8"}, [".a: 8 vs '8'"], id="coerced-type-differs"),
    pytest.param({"a": True}, {"a": 1}, [".a: True vs 1"], id="bool-is-not-int"),
    pytest.param(
        {"t": T0}, {"t": "2026-11-29T09:50:01Z"},
        [".t: datetime.datetime(2026, 11, 29, 9, 50, tzinfo=datetime.timezone.utc) vs '2026-11-29T09:50:01Z'"],
        id="different-time",
    ),
    pytest.param({"a": {"b": 1}}, {"a": [1]}, [".a: mapping vs list"], id="mapping-vs-list"),
    pytest.param([{"x": 1}, {"x": 2}], [{"x": 1}, {"x": 3}], ["[1].x: 2 vs 3"], id="list-element-differs"),
]


@pytest.mark.parametrize(("sub", "sup", "expected"), SUBSET)
def test_subset_helper(sub: Any, sup: Any, expected: list[str]) -> None:
    assert differences(sub, sup) == expected
    assert is_subset(sub, sup) is (expected == [])


# --- round trip of the example objects ----------------------------------------------------------

EXAMPLES = [
    pytest.param("nodes/a100-40gb-mig-single-openshift.yaml", {"Node": 1}, id="node-a100-mig-openshift"),
    pytest.param("nodes/a100-8gpu-dgx-kwok.yaml", {"Node": 1}, id="node-a100-dgx-kwok"),
    pytest.param("nodes/a100-8gpu-eks-p4d-dra.yaml", {"Node": 1}, id="node-a100-p4d-dra"),
    pytest.param("nodes/cpu-only-eks-m5.yaml", {"Node": 1}, id="node-cpu-m5"),
    pytest.param("nodes/h100-8gpu-eks-p5.yaml", {"Node": 1}, id="node-h100-p5"),
    pytest.param(
        "workloads/a-job-gang-8-workers.yaml", {"Workload": 1, "PodGroup": 1, "Pod": 8}, id="workload-a-job-gang"
    ),
    pytest.param(
        "workloads/b-workload-composite-train-llm.yaml",
        {"Workload": 1, "CompositePodGroup": 1, "PodGroup": 2, "Pod": 5, "ResourceClaimTemplate": 1,
         "ResourceClaim": 4},
        id="workload-b-composite",
    ),
    pytest.param(
        "workloads/c-podgroup-shared-claims.yaml",
        {"PodGroup": 1, "Pod": 4, "ResourceClaimTemplate": 2, "ResourceClaim": 5},
        id="workload-c-shared-claims",
    ),
    pytest.param(
        "clusters/fragmented-cluster.yaml",
        {"PriorityClass": 5, "Node": 16, "Pod": 47, "PodGroup": 2},
        id="cluster-fragmented",
    ),
    pytest.param(
        "clusters/small-gpu-cluster.yaml",
        {"PriorityClass": 5, "Node": 9, "Pod": 21, "Workload": 2, "CompositePodGroup": 1, "PodGroup": 3,
         "DeviceClass": 2, "ResourceSlice": 12, "ResourceClaimTemplate": 1, "ResourceClaim": 11},
        id="cluster-small-gpu",
    ),
    pytest.param(
        "workloads/d-statefulset-wffc-pvcs.yaml",
        {"Node": 4, "CSINode": 4, "StorageClass": 2, "PersistentVolume": 4, "PodGroup": 5,
         "PersistentVolumeClaim": 6, "Pod": 10},
        id="workload-statefulset-pvcs",
    ),
    pytest.param("resourceslices/deviceclasses.yaml", {"DeviceClass": 9}, id="dra-deviceclasses"),
    pytest.param("resourceslices/dra-example-driver-gpu.yaml", {"ResourceSlice": 1}, id="dra-example-driver-gpu"),
    pytest.param("resourceslices/dranet-efa-p4d.yaml", {"ResourceSlice": 1}, id="dra-dranet-efa-p4d"),
    pytest.param(
        "resourceslices/dranet-gpu-efa-claimtemplates.yaml", {"ResourceClaimTemplate": 2}, id="dra-gpu-efa-templates"
    ),
    pytest.param(
        "resourceslices/interconnect-example-per-rack.yaml", {"ResourceSlice": 4}, id="dra-interconnect-per-rack"
    ),
    pytest.param("resourceslices/nvidia-gpu-a100-p4d.yaml", {"ResourceSlice": 1}, id="dra-nvidia-a100-p4d"),
    pytest.param("resourceslices/nvidia-gpu-h100-p5.yaml", {"ResourceSlice": 2}, id="dra-nvidia-h100-p5"),
    pytest.param("resourceslices/nvidia-mig-a100-static.yaml", {"ResourceSlice": 1}, id="dra-nvidia-mig-a100"),
    pytest.param("resourceslices/nvidia-vgpu-a100-10c-vks.yaml", {"ResourceSlice": 2}, id="dra-nvidia-vgpu-vks"),
]


@pytest.mark.parametrize(("relative", "expected_counts"), EXAMPLES)
def test_example_objects_parse_and_keep_every_modelled_value(relative: str, expected_counts: dict[str, int]) -> None:
    objects = modelled_objects(DATA / relative)
    assert Counter(raw["kind"] for _, raw in objects) == Counter(expected_counts)
    problems: dict[str, list[str]] = {}
    for model, raw in objects:
        parsed = model.model_validate(raw)
        assert isinstance(parsed, model)
        assert parsed.metadata.name == raw["metadata"]["name"]  # type: ignore[attr-defined]
        dumped = parsed.model_dump(by_alias=True, exclude_unset=True)
        found = differences(dumped, raw)
        if found:
            problems[f"{raw['kind']} {raw['metadata']['name']}"] = found
    assert problems == {}


def test_round_trip_keeps_nested_values() -> None:
    """One object checked field by field, so the round trip is known to compare real content."""
    (pg,) = [raw for model, raw in modelled_objects(DATA / "workloads/a-job-gang-8-workers.yaml") if model is PodGroup]
    dumped = PodGroup.model_validate(pg).model_dump(by_alias=True, exclude_unset=True)
    assert dumped["spec"] == {
        "workloadRef": {"workloadName": "llm-pretrain-6f7c9", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 8}},
        "schedulingConstraints": {"topology": ({"key": "topology.kubernetes.io/zone"},)},
        "disruptionMode": {"all": {}},
        "priorityClassName": "training-high",
        "priority": 100000,
    }
    assert dumped["metadata"]["creationTimestamp"] == datetime(2026, 11, 29, 9, 50, tzinfo=UTC)
    assert [o["kind"] for o in dumped["metadata"]["ownerReferences"]] == ["Job", "Workload"]


def test_documents_reads_kind_list_and_multi_document_streams() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n"
        "---\n"
        "# comment-only document\n"
        "---\n"
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
    )
    assert [(d["kind"], d["metadata"]["name"]) for d in documents(text)] == [
        ("Node", "n1"),
        ("Node", "n2"),
        ("PriorityClass", "high"),
    ]
