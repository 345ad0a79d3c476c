"""Hypothesis strategies: small random clusters and random group trees, as API objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from scheduler.model import CompositePodGroup, Node, Pod, PodGroup

NS = "prop"
TOPOLOGY_KEYS = (None, "topology.kubernetes.io/zone", "topology.example.com/rack")


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    composites: list[CompositePodGroup] = field(default_factory=list)


def _node(i: int, cpu: int, mem_gi: int, gpu: int, tainted: bool, cordoned: bool) -> Node:
    alloc: dict[str, Any] = {"cpu": str(cpu), "memory": f"{mem_gi}Gi", "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"unschedulable": cordoned}
    if tainted:
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 2}",
              "topology.example.com/rack": f"r{i % 4}"}
    return Node.model_validate({"metadata": {"name": f"n{i}", "labels": labels}, "spec": spec,
                                "status": {"allocatable": alloc}})


def _pod(name: str, cpu: int, gpu: int, group: str | None, node: str | None = None, seconds: int = 0) -> Pod:
    req: dict[str, str] = {"cpu": str(cpu), "memory": f"{cpu}Gi"}
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {
        "schedulerName": "gang-scheduler" if node is None or group else "default-scheduler",
        "containers": [{"name": "c", "resources": {"requests": req}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}] if gpu else [],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    ts = f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "creationTimestamp": ts},
                               "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


def _policy(draw: st.DrawFn, size: int, key: str) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"gang": {key: draw(st.integers(1, size))}}
    return {"basic": {}}


@st.composite
def clusters(draw: st.DrawFn, max_nodes: int = 8, max_roots: int = 4) -> Cluster:
    """A random cluster: nodes (some GPU, some tainted or cordoned), background pods, and gang trees."""
    c = Cluster()
    n_nodes = draw(st.integers(1, max_nodes))
    for i in range(n_nodes):
        gpu = draw(st.sampled_from([0, 0, 2, 4, 8]))
        c.nodes.append(_node(i, draw(st.sampled_from([2, 4, 8, 16])), draw(st.sampled_from([4, 8, 16, 32])), gpu,
                             tainted=bool(gpu) and draw(st.booleans()), cordoned=draw(st.integers(0, 9)) == 0))
    for j in range(draw(st.integers(0, 3))):  # background usage from another scheduler, within capacity
        c.pods.append(_pod(f"bg-{j}", 1, 0, None, node=f"n{draw(st.integers(0, n_nodes - 1))}"))
    seq = 0
    for r in range(draw(st.integers(1, max_roots))):
        composite = draw(st.booleans())
        leaves = draw(st.integers(1, 3)) if composite else 1
        root = f"root{r}"
        if composite:
            c.composites.append(CompositePodGroup.model_validate({
                "metadata": {"name": root, "namespace": NS, "creationTimestamp": f"2026-01-01T00:00:{r:02d}Z"},
                "spec": {"workloadRef": {"workloadName": "w", "templateName": root},
                         "schedulingPolicy": _policy(draw, leaves, "minGroupCount"),
                         **_topology(draw)}}))
        for leaf_i in range(leaves):
            name = f"{root}-leaf{leaf_i}" if composite else root
            n_pods = draw(st.integers(1, 5))
            spec: dict[str, Any] = {"schedulingPolicy": _policy(draw, n_pods, "minCount"), **_topology(draw)}
            if composite:
                spec["parentCompositePodGroupName"] = root
                spec["workloadRef"] = {"workloadName": "w", "templateName": name}
            c.podgroups.append(PodGroup.model_validate({
                "metadata": {"name": name, "namespace": NS, "creationTimestamp": f"2026-01-01T00:00:{r:02d}Z"},
                "spec": spec}))
            shapes = draw(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([0, 0, 1, 2])), min_size=1,
                                   max_size=2))
            for k in range(n_pods):
                cpu, gpu = shapes[k % len(shapes)]
                seq += 1
                c.pods.append(_pod(f"{name}-p{k}", cpu, gpu, name, seconds=seq))
    return c


def _topology(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(TOPOLOGY_KEYS))
    return {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the JSON value ``value`` (dict keys and list indexes), the empty one included."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += json_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += json_paths(v, (*prefix, i))
    return out
