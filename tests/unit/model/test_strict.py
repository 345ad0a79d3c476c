"""Unknown fields and kinds (``scheduler.model.strict``): the tables are the v1.37 schema's, and what is found.

1. Every :class:`Shape` reachable from ``SHAPES`` lists exactly the properties of its v1.37 definition
   (``kubernetes-validate==1.37.0``), and each child is the definition the property refers to; ``KINDS`` is
   the schema's group-version-kinds. A new Kubernetes version: regenerate the tables from its schema.
2. Typos are named with the closest known field (``kubectl apply --validate=strict`` would refuse them).
3. No real object (``tests/data``, the built-in example) has a finding.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.examples import __file__ as EXAMPLES
from scheduler.model.strict import (
    BUILT_IN_KINDS,
    KINDS,
    SHAPES,
    Shape,
    UnknownField,
    known_only,
    unknown_fields,
    unknown_kind,
)
from tests.unit.model.example_data import DATA, documents

NOT_KINDS = ("APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "DeleteOptions", "Status", "WatchEvent")
"""Group-version-kinds of the schema that are not objects a manifest holds."""


@cache
def definitions() -> dict[str, Any]:
    path = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema", "v1.37.0-local",
                                                           "_definitions.json")
    return json.loads(path.read_text())["$defs"]  # type: ignore[no-any-return]


def definition_of(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    (name,) = [name for name, d in definitions().items()
               if {"group": group, "version": version, "kind": kind} in d.get("x-kubernetes-group-version-kind", [])]
    return name


def referred(prop: dict[str, Any]) -> str:
    """The definition a property holds (an object or the items of a list)."""
    ref = prop.get("$ref") or prop.get("items", {}).get("$ref") or prop["allOf"][0]["$ref"]
    return str(ref).rsplit("/", 1)[1]


def walk(shape: Shape, name: str, path: str) -> list[str]:
    """Where ``shape`` and definition ``name`` disagree, for every level below."""
    props = definitions()[name].get("properties", {})
    problems = [f"{path or '<root>'} ({name}): schema has {sorted(set(props) - shape.fields)}, table has "
                f"{sorted(shape.fields - set(props))}"] if shape.fields != set(props) else []
    for field, child in shape.children:
        if field in props:
            problems += walk(child, referred(props[field]), f"{path}.{field}".lstrip("."))
    return problems


@pytest.mark.parametrize("key", SHAPES, ids=[f"{v} {k}" for v, k in SHAPES])
def test_every_table_is_the_v1_37_schema(key: tuple[str, str]) -> None:
    assert walk(SHAPES[key], definition_of(*key), "") == []


def test_the_kinds_are_the_v1_37_kinds() -> None:
    served: dict[str, set[str]] = defaultdict(set)
    for d in definitions().values():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            if not gvk["kind"].endswith("List") and gvk["kind"] not in NOT_KINDS:
                served[gvk["group"]].add(gvk["kind"])
    assert {group: set(kinds) for group, kinds in KINDS.items()} == served


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0", "namespace": "ml"},
       "spec": {"schedulerName": "gang-scheduler", "containers": [{"name": "c", "resources": {"requests": {}}}]}}


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with ``value`` set at the dotted ``path`` (``spec.containers.0.resoures``)."""
    doc = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[last] = value
    return doc


GROUP = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
         "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
COMPOSITE = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": {"name": "t"},
             "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}}}}


@pytest.mark.parametrize(("raw", "expected"), [
    pytest.param(edited(POD, "spec.containers.0.resoures", {"requests": {"cpu": "8"}}),
                 [UnknownField("spec.containers[0].resoures", "resources")], id="container-resources-typo"),
    pytest.param(edited(POD, "spec.containers.0.resources.requets", {"cpu": "8"}),
                 [UnknownField("spec.containers[0].resources.requets", "requests")], id="requests-typo"),
    pytest.param(edited(POD, "sepc", {}), [UnknownField("sepc", "spec")], id="top-level-typo"),
    pytest.param(edited(POD, "metadata.lables", {"app": "w"}), [UnknownField("metadata.lables", "labels")],
                 id="metadata-typo"),
    pytest.param(edited(POD, "spec.tolerations", [{"key": "gpu"}, {"key": "gpu", "efect": "NoSchedule"}]),
                 [UnknownField("spec.tolerations[1].efect", "effect")], id="second-item-of-a-list"),
    pytest.param(edited(POD, "spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabel": {"app": "w"}}}]}}),
                 [UnknownField("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
                               ".labelSelector.matchLabel", "matchLabels")], id="nested-selector-typo"),
    pytest.param(edited(POD, "spec.gpuCount", 8), [UnknownField("spec.gpuCount", None)], id="nothing-close"),
    pytest.param(edited(edited(POD, "spec.zz", 1), "spec.aa", 2),
                 [UnknownField("spec.aa", None), UnknownField("spec.zz", None)], id="sorted-within-a-level"),
    pytest.param(edited(POD, "spec.nodeSelector", {"resoures": "x"}), [], id="free-map-keys-not-checked"),
    pytest.param(edited(POD, "status.anything", 1), [], id="status-not-checked"),
    pytest.param(edited(GROUP, "spec.schedulingPolicy.gang", {"minCont": 2}),
                 [UnknownField("spec.schedulingPolicy.gang.minCont", "minCount")], id="podgroup-min-count-typo"),
    pytest.param(edited(COMPOSITE, "spec.schedulingConstraints", {"topology": [{"kye": "zone"}]}),
                 [UnknownField("spec.schedulingConstraints.topology[0].kye", "key")], id="composite-topology-typo"),
    pytest.param(edited(edited(POD, "apiVersion", "v2"), "spec.resoures", 1), [], id="other-version-not-checked"),
    pytest.param(edited(POD, "spec.containers", "not a list"), [], id="wrong-type-left-to-the-model"),
])
def test_unknown_fields_are_named_with_the_closest_known_one(raw: dict[str, Any],
                                                              expected: list[UnknownField]) -> None:
    assert unknown_fields(raw) == expected


def test_a_finding_reads_as_a_warning() -> None:
    assert str(UnknownField("spec.containers[0].resoures", "resources")) == \
        "spec.containers[0].resoures: unknown field (did you mean resources?); ignored"
    assert str(UnknownField("spec.gpuCount", None)) == "spec.gpuCount: unknown field; ignored"


READ = frozenset({"Pod", "Node", "PodGroup", "CompositePodGroup", "Workload", "ResourceSlice"})


@pytest.mark.parametrize(("api_version", "kind", "expected"), [
    pytest.param("scheduling.k8s.io/v1beta1", "PodGrup", "no such kind in the scheduling.k8s.io API group of "
                 "Kubernetes v1.37 (did you mean PodGroup?); skipped", id="typo-in-a-built-in-group"),
    pytest.param("v1", "Pods", "no such kind in the core API group of Kubernetes v1.37 (did you mean Pod?); "
                 "skipped", id="typo-in-the-core-group"),
    pytest.param("scheduling.k8s.io/v1beta1", "Gang", "no such kind in the scheduling.k8s.io API group of "
                 "Kubernetes v1.37; skipped", id="nothing-close-in-a-built-in-group"),
    pytest.param("scheduling.x-k8s.io/v1alpha1", "PodGrup", "not a kind the scheduler reads (did you mean "
                 "PodGroup?); skipped", id="custom-group-like-a-kind-we-read"),
    pytest.param("batch/v1", "Job", None, id="a-kind-we-do-not-read"),
    pytest.param("jobset.x-k8s.io/v1alpha2", "JobSet", None, id="a-custom-resource"),
    pytest.param("scheduling.k8s.io/v1beta1", "PodGroup", None, id="a-kind-we-read"),
])
def test_unknown_kinds_are_named(api_version: str, kind: str, expected: str | None) -> None:
    assert unknown_kind(api_version, kind, READ) == expected


def real_objects() -> list[tuple[str, dict[str, Any]]]:
    paths = sorted(DATA.rglob("*.yaml")) + [Path(EXAMPLES).parent / "default-cluster.yaml"]
    return [(f"{path.name}: {raw.get('kind')} {raw.get('metadata', {}).get('name')}", raw)
            for path in paths for raw in documents(path.read_text()) if isinstance(raw, dict)]


def test_no_real_object_has_an_unknown_field_or_kind() -> None:
    """The example clusters and workloads are real v1.37 objects: nothing is reported on them."""
    objects = real_objects()
    assert sum((raw.get("apiVersion"), raw.get("kind")) in SHAPES for _, raw in objects) > 50
    assert {where: [str(f) for f in unknown_fields(raw)] for where, raw in objects if unknown_fields(raw)} == {}
    kinds = {(str(raw.get("apiVersion")), str(raw.get("kind"))) for _, raw in objects}
    assert {k: unknown_kind(*k, READ) for k in kinds if unknown_kind(*k, READ)} == {}
    assert "Job" in BUILT_IN_KINDS


def _as_json(raw: dict[str, Any]) -> bytes:
    return json.dumps(raw, default=str).encode()


@pytest.mark.parametrize(("raw", "expected"), [
    pytest.param(raw, expected, id=param_id) for param_id, (raw, expected) in {
        "pod": (POD, True), "group": (GROUP, True), "composite": (COMPOSITE, True),
        "container-resources-typo": (edited(POD, "spec.containers.0.resoures", {}), False),
        "second-item-of-a-list": (edited(POD, "spec.tolerations", [{"key": "gpu"}, {"efect": "NoSchedule"}]), False),
        "top-level-typo": (edited(POD, "sepc", {}), False),
        "podgroup-min-count-typo": (edited(GROUP, "spec.schedulingPolicy.gang", {"minCont": 2}), False),
        "free-map-keys-not-checked": (edited(POD, "spec.nodeSelector", {"resoures": "x"}), True),
        "status-not-checked": (edited(POD, "status.anything", 1), True),
        "null-children": (edited(POD, "spec.affinity", None), True),
        "wrong-type-cannot-tell": (edited(POD, "spec.containers", "not a list"), False),
    }.items()])
def test_known_only_says_no_field_is_unknown_only_when_there_is_none(raw: dict[str, Any], expected: bool) -> None:
    """True means :func:`unknown_fields` finds nothing; False means it may (or the bytes cannot tell)."""
    assert known_only(SHAPES[raw["apiVersion"], raw["kind"]])(_as_json(raw)) is expected
    if expected:
        assert unknown_fields(raw) == []


@cache
def shaped_objects() -> tuple[tuple[str, dict[str, Any]], ...]:
    """The real objects whose kind :data:`SHAPES` checks, as JSON values."""
    return tuple((where, json.loads(_as_json(raw))) for where, raw in real_objects()
                 if (raw.get("apiVersion"), raw.get("kind")) in SHAPES)


def _places(value: Any) -> list[dict[str, Any]]:
    """Every object in ``value``, ``value`` first."""
    if isinstance(value, dict):
        return [value, *(p for v in value.values() for p in _places(v))]
    if isinstance(value, list):
        return [p for v in value for p in _places(v)]
    return []


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0), st.integers(min_value=0),
       st.text(alphabet="abcdefghijklmnopqrstuvwxyzAZ", min_size=1, max_size=12))
def test_known_only_agrees_with_unknown_fields(which: int, at: int, name: str) -> None:
    """A field added anywhere in a real object: :func:`known_only` is True exactly when :func:`unknown_fields` finds
    nothing. The name starts with ``zz`` so that it is never a field the API knows there (``resources: 1`` added to
    a pod's spec is a known field of the wrong type, which neither function is about)."""
    objects = shaped_objects()
    where, raw = objects[which % len(objects)]
    doc = json.loads(json.dumps(raw))
    places = _places(doc)
    places[at % len(places)][f"zz{name}"] = 1
    assert known_only(SHAPES[doc["apiVersion"], doc["kind"]])(_as_json(doc)) == (unknown_fields(doc) == []), where
