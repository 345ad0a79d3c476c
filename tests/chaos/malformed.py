"""Hypothesis strategies for malformed objects: valid templates with fields replaced by garbage or removed.

A *batch* (:func:`batches`) is 1–4 units, each a few related objects — a node, a ResourceSlice, a
PodGroup with members, a CompositePodGroup over a leaf, a CompositePodGroup cycle, a lone pod —
whose fields at chosen paths (:data:`PATHS`) are replaced by garbage (:data:`garbage`: wrong types,
quantities the API server would refuse, huge numbers, nested junk), by a reference to another
object of the batch or to nothing, or removed. The feeder stores them past the emulator's validation
(``apiserver.UNCHECKED_HEADER``), as an older or laxer server (a CRD's schema) would, so this is what
the scheduler's informers get.

Names stay RFC 1123 (a store keys objects by name): objects are named
``@@node-0``, ``@@pg-1``… and :func:`materialize` replaces ``@@`` with the example's own prefix.
Malformed pods select the ``bad`` pool (unless that field is mutated too), so they do not crowd
the good gangs' nodes; no template sets ``spec.nodeName``.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from scheduler.client.kube import COMPOSITES, NODES, PODGROUPS, PODS, RESOURCE_SLICES, Resource
from tests.chaos.workload import POOL_LABEL
from tests.integration.livekit import composite, node, pod, podgroup
from tests.integration.test_dra import gpu_slice

TOKEN = "@@"
BAD_POOL = "bad"

Path = tuple[str | int, ...]
Unit = list[tuple[Resource, dict[str, Any]]]


class _Delete:
    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()
"""A mutation that removes the field."""

QUANTITY_JUNK = ("", "abc", "-1", "-500m", "1e400", "1E-400", "0.0000000001", "9" * 40, "1Ei", "99999Ei",
                 "1.5.2", "1i", " 1", "1 ", "NaN", "Infinity", "0x10", "1_000", "+", ".", "1e", "5Zi")

_text = st.text(alphabet=st.characters(exclude_characters="@", exclude_categories=["Cs"]), max_size=10)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                     st.floats(allow_nan=False, allow_infinity=False), _text, st.sampled_from(QUANTITY_JUNK))
garbage = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(_text, inner, max_size=3)), max_leaves=6)
"""Any JSON value, mostly wrong where it lands."""

REFERENCES = ("@@pg-0", "@@pg-1", "@@cpg-0", "@@cpg-1-a", "@@node-0", "good-0", "ghost", "", "@@pod-0")
"""Names a reference field may be pointed at: objects of the batch (of the right kind or not), a good
node, nothing."""

_values = st.one_of(garbage, st.sampled_from(REFERENCES), st.just(DELETE))

PATHS: dict[str, tuple[Path, ...]] = {
    "node": (("status", "allocatable"), ("status", "allocatable", "cpu"), ("status", "allocatable", "memory"),
             ("status", "allocatable", "pods"), ("status", "allocatable", "nvidia.com/gpu"), ("status", "capacity"),
             ("status",), ("spec",), ("spec", "taints"), ("spec", "taints", 0), ("spec", "taints", 0, "effect"),
             ("spec", "unschedulable"), ("metadata", "labels"), ("metadata", "labels", "topology.kubernetes.io/zone"),
             ("status", "conditions")),
    "slice": (("spec", "devices"), ("spec", "devices", 0), ("spec", "devices", 0, "name"),
              ("spec", "devices", 0, "attributes"), ("spec", "devices", 0, "attributes", "model"),
              ("spec", "devices", 0, "capacity"), ("spec", "devices", 0, "capacity", "memory", "value"),
              ("spec", "devices", 0, "consumesCounters"), ("spec", "devices", 0, "taints"),
              ("spec", "devices", 0, "bindingConditions"), ("spec", "pool"), ("spec", "pool", "generation"),
              ("spec", "pool", "resourceSliceCount"), ("spec", "nodeName"), ("spec", "driver"), ("spec", "allNodes"),
              ("spec", "nodeSelector"), ("spec", "perDeviceNodeSelection"), ("spec", "sharedCounters"), ("spec",)),
    "podgroup": (("spec", "schedulingPolicy"), ("spec", "schedulingPolicy", "gang"),
                 ("spec", "schedulingPolicy", "gang", "minCount"), ("spec", "schedulingPolicy", "basic"),
                 ("spec", "parentCompositePodGroupName"), ("spec", "schedulingConstraints"),
                 ("spec", "schedulingConstraints", "topology"), ("spec", "schedulingConstraints", "topology", 0, "key"),
                 ("spec", "priority"), ("spec", "priorityClassName"), ("spec", "disruptionMode"),
                 ("spec", "preemptionPolicy"), ("spec", "resourceClaims"), ("spec", "workloadRef"), ("spec",),
                 ("status",), ("status", "conditions"), ("status", "conditions", 0), ("metadata", "annotations")),
    "composite": (("spec", "schedulingPolicy"), ("spec", "schedulingPolicy", "gang", "minGroupCount"),
                  ("spec", "schedulingPolicy", "basic"), ("spec", "parentCompositePodGroupName"),
                  ("spec", "schedulingConstraints"), ("spec", "priority"), ("spec", "workloadRef"), ("spec",),
                  ("status",), ("status", "conditions")),
    "pod": (("spec", "containers"), ("spec", "containers", 0), ("spec", "containers", 0, "resources"),
            ("spec", "containers", 0, "resources", "requests"),
            ("spec", "containers", 0, "resources", "requests", "cpu"),
            ("spec", "containers", 0, "resources", "requests", "memory"),
            ("spec", "containers", 0, "resources", "requests", "nvidia.com/gpu"),
            ("spec", "containers", 0, "resources", "limits"), ("spec", "initContainers"), ("spec", "overhead"),
            ("spec", "schedulingGroup"), ("spec", "schedulingGroup", "podGroupName"), ("spec", "tolerations"),
            ("spec", "tolerations", 0, "operator"), ("spec", "nodeSelector"), ("spec", "affinity"),
            ("spec", "affinity", "nodeAffinity"), ("spec", "priority"), ("spec", "priorityClassName"),
            ("spec", "schedulingGates"), ("spec", "resourceClaims"), ("spec", "topologySpreadConstraints"),
            ("spec", "schedulerName"), ("spec",), ("status",), ("status", "phase"),
            ("status", "resourceClaimStatuses"), ("status", "nominatedNodeName"), ("metadata", "annotations"),
            ("metadata", "annotations", "gang-scheduler.io/intent"), ("metadata", "ownerReferences"),
            ("metadata", "labels")),
}


def put(value: Any, path: Path, new: Any) -> Any:
    """``value`` with ``path`` set to ``new`` (removed for :data:`DELETE`); containers on the way are created,
    or replaced when they are of the wrong type; an index past a list's end appends."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(value) if isinstance(value, list) else []
        if head < len(items):
            if rest or new is not DELETE:
                items[head] = put(items[head], rest, new)
            else:
                del items[head]
        elif new is not DELETE:
            items.append(put(None, rest, new))
        return items
    fields = dict(value) if isinstance(value, dict) else {}
    if not rest and new is DELETE:
        fields.pop(head, None)
    else:
        fields[head] = put(fields.get(head), rest, new)
    return fields


@st.composite
def mutated(draw: st.DrawFn, template: dict[str, Any], kind: str, at_least: int = 1) -> dict[str, Any]:
    """``template`` with ``at_least``–3 of its :data:`PATHS` fields replaced or removed."""
    body = copy.deepcopy(template)
    for _ in range(draw(st.integers(at_least, 3))):
        body = put(body, draw(st.sampled_from(PATHS[kind])), draw(_values))
    return body


def _bad_pod(name: str, group: str | None) -> dict[str, Any]:
    body = pod(name, group, cpu="500m")
    body["spec"]["nodeSelector"] = {POOL_LABEL: BAD_POOL}
    return body


@st.composite
def node_unit(draw: st.DrawFn, i: int) -> Unit:
    return [(NODES, draw(mutated(node(f"@@node-{i}", cpu="4", labels={POOL_LABEL: BAD_POOL}), "node")))]


@st.composite
def slice_unit(draw: st.DrawFn, i: int) -> Unit:
    template = gpu_slice(f"@@node-{i}", 2)
    template["spec"]["pool"]["name"] = f"@@pool-{i}"
    template["spec"]["nodeName"] = draw(st.sampled_from([f"@@node-{i}", "good-0", "ghost"]))
    return [(RESOURCE_SLICES, draw(mutated(template, "slice")))]


@st.composite
def members(draw: st.DrawFn, group: str, pods: int) -> Unit:
    """``pods`` member pods of ``group``, each valid or malformed."""
    out: Unit = []
    for j in range(pods):
        body = _bad_pod(f"{group}-{j}", group)
        out.append((PODS, draw(st.one_of(st.just(body), mutated(body, "pod")))))
    return out


@st.composite
def podgroup_unit(draw: st.DrawFn, i: int) -> Unit:
    name = f"@@pg-{i}"
    size = draw(st.integers(1, 3))
    group = draw(mutated(podgroup(name, size), "podgroup", at_least=draw(st.integers(0, 1))))
    return [(PODGROUPS, group), *draw(members(name, size))]


@st.composite
def composite_unit(draw: st.DrawFn, i: int) -> Unit:
    name = f"@@cpg-{i}"
    leaf = f"{name}-leaf"
    parent = draw(mutated(composite(name, 1), "composite"))
    return [(COMPOSITES, parent), (PODGROUPS, podgroup(leaf, 1, parent=name)), *draw(members(leaf, 1))]


@st.composite
def cycle_unit(draw: st.DrawFn, i: int) -> Unit:
    """Two CompositePodGroups that are each other's parent, a leaf under one of them."""
    a, b = f"@@cpg-{i}-a", f"@@cpg-{i}-b"
    out: Unit = []
    for name, parent in ((a, b), (b, a)):
        body = composite(name, draw(st.integers(1, 2)))
        body["spec"]["parentCompositePodGroupName"] = parent
        out.append((COMPOSITES, body))
    out.append((PODGROUPS, podgroup(f"{a}-leaf", 1, parent=a)))
    return out + draw(members(f"{a}-leaf", 1))


@st.composite
def pod_unit(draw: st.DrawFn, i: int) -> Unit:
    group = draw(st.sampled_from([None, "@@pg-0", "ghost"]))
    return [(PODS, draw(mutated(_bad_pod(f"@@pod-{i}", group), "pod")))]


UNITS = (node_unit, slice_unit, podgroup_unit, composite_unit, cycle_unit, pod_unit)


@st.composite
def batches(draw: st.DrawFn) -> Unit:
    """1–4 units; creation order: nodes, slices, composites, PodGroups, pods (as controllers would)."""
    objects: Unit = []
    for i in range(draw(st.integers(1, 4))):
        objects += draw(draw(st.sampled_from(UNITS))(i))
    order = {NODES: 0, RESOURCE_SLICES: 1, COMPOSITES: 2, PODGROUPS: 3, PODS: 4}
    return sorted(objects, key=lambda o: order[o[0]])


def materialize(value: Any, prefix: str) -> Any:
    """``value`` with every ``@@`` in its strings (keys included) replaced by ``prefix``."""
    if isinstance(value, str):
        return value.replace(TOKEN, prefix)
    if isinstance(value, list):
        return [materialize(v, prefix) for v in value]
    if isinstance(value, dict):
        return {materialize(k, prefix): materialize(v, prefix) for k, v in value.items()}
    return value
