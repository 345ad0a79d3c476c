"""Extended resources a DeviceClass serves, decided node by node (KEP-5004, kube-scheduler's
``extendeddynamicresources.go``), over random clusters mixing device-plugin nodes and DRA nodes.

1. A node offering a non-zero amount in its allocatable serves the resource itself: its pods' requests never
   exceed its allocatable, and none of them gets an extended-resource claim (even where the node also
   publishes devices of the class).
2. Every other node serves it through DRA: each pod placed there has one scheduler-made claim of exactly its
   request in devices of that node, and no device is given twice.
3. All or nothing: a PodGroup has no member placed or at least ``minCount``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.framework import SolverConfig
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import Simulation, simulate

GPU = "example.com/gpu"
DRIVER = "gpu.example.com"
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mixed_clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Objects of a cluster: nodes with ``GPU`` in allocatable (1–4), listed at 0, or absent, each with 0–4
    devices of a class serving ``GPU``; PodGroups of 1–4 members asking for 1–3 each (some through an init
    container). Also returns each node's allocatable amount."""
    objects: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}],
                 "extendedResourceName": GPU}}]
    offered: dict[str, int] = {}
    for i in range(draw(st.integers(2, 5))):
        name = f"n{i}"
        allocatable: dict[str, str] = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        amount = draw(st.sampled_from([None, 0, 1, 2, 3, 4]))
        if amount is not None:
            allocatable[GPU] = str(amount)
        offered[name] = amount or 0
        objects.append({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                        "status": {"allocatable": allocatable}})
        if devices := draw(st.integers(0, 4)):
            objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                            "metadata": {"name": f"{name}-{DRIVER}"},
                            "spec": {"driver": DRIVER, "nodeName": name,
                                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                     "devices": [{"name": f"gpu-{d}"} for d in range(devices)]}})
    for g in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 4))
        objects.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": f"g{g}", "namespace": "ml"},
                        "spec": {"schedulingPolicy": {"gang": {"minCount": draw(st.integers(1, size))}}}})
        amount = draw(st.integers(1, 3))
        init = draw(st.sampled_from([None, 1, 4]))
        for m in range(size):
            spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": f"g{g}"},
                                    "containers": [{"name": "main", "image": "example.com/x:1",
                                                    "resources": {"limits": {GPU: str(amount)}}}]}
            if init is not None:
                spec["initContainers"] = [{"name": "warm", "image": "example.com/x:1",
                                           "resources": {"limits": {GPU: str(init)}}}]
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"g{g}-{m}", "namespace": "ml", "uid": f"uid-g{g}-{m}"},
                            "spec": spec})
    return objects, offered


def run(objects: list[dict[str, Any]]) -> Simulation:
    loaded = Objects()
    for i, raw in enumerate(objects):
        loaded.add("prop.yaml", raw, f"document {i + 1}")
    assert loaded.problems == []
    return simulate(loaded, "gang-scheduler", SolverConfig())


@SETTINGS
@given(mixed_clusters())
def test_each_node_serves_the_resource_by_one_means_and_none_is_given_twice(
        cluster: tuple[list[dict[str, Any]], dict[str, int]]) -> None:
    objects, offered = cluster
    sim = run(objects)
    wants = {f"ml/{o['metadata']['name']}": max(int(c["resources"]["limits"][GPU])  # max(init) vs sum(app)
                                                 for c in (*o["spec"]["containers"],
                                                           *o["spec"].get("initContainers", ())))
             for o in objects if o["kind"] == "Pod"}
    where = {f"ml/{pod}": node for g in sim.groups for pod, node in g.placements.items()}
    used = Counter[str]()
    for pod, node in where.items():
        if offered[node] > 0:
            used[node] += wants[pod]
    assert [n for n, u in used.items() if u > offered[n]] == []
    claims = {a.allocation.pod: a.allocation for a in sim.allocations}
    assert set(claims) == {pod for pod, node in where.items() if offered[node] == 0}
    for pod, a in claims.items():
        assert a.synthetic and a.node == where[pod] and len(a.results) == wants[pod]
        assert {p for _, _, p, _ in a.results} == {a.node}
    given_ = Counter(d for a in claims.values() for d in a.device_ids)
    assert [d for d, n in given_.items() if n > 1] == []
    for g in sim.groups:
        min_count = next(o["spec"]["schedulingPolicy"]["gang"]["minCount"] for o in objects
                         if o["kind"] == "PodGroup" and o["metadata"]["name"] == g.key.name)
        assert not g.placements or len(g.placements) >= min_count
