"""Hypothesis strategies for inter-pod rules: small labelled clusters whose running pods and gangs carry
required pod affinity / anti-affinity (hostname or zone), topology spread (DoNotSchedule) and host ports.

Terms use ``matchLabels`` on ``app`` only and every pod lives in one namespace, so the oracle in
``test_inter_pod_invariants.py`` can judge them from the raw fields without the scheduler's parsing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from scheduler.model import Node, Pod, PodGroup
from tests.property.strategies import NS, Cluster

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
APPS = ("a", "b", "c")
KEYS = (HOSTNAME, ZONE)
PORTS = (29500, 8080)


def _node(i: int, cpu: int) -> Node:
    labels = {HOSTNAME: f"n{i}", ZONE: f"z{i % 3}"}
    return Node.model_validate({"metadata": {"name": f"n{i}", "labels": labels},
                                "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}}})


@st.composite
def _template(draw: st.DrawFn) -> dict[str, Any]:
    """Labels and the inter-pod fields of a pod template."""
    app = draw(st.sampled_from(APPS))
    spec: dict[str, Any] = {}
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
             "topologyKey": draw(st.sampled_from(KEYS))}]}
    if draw(st.integers(0, 4)) == 0:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
             "topologyKey": draw(st.sampled_from(KEYS))}]}
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 3)) == 0:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": draw(st.integers(1, 2)), "topologyKey": draw(st.sampled_from(KEYS)),
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]
    ports = [{"containerPort": p, "hostPort": p} for p in draw(st.sampled_from([(), (), (PORTS[0],), (PORTS[1],)]))]
    return {"app": app, "spec": spec, "ports": ports}


def _pod(name: str, template: dict[str, Any], group: str | None = None, node: str | None = None,
         seconds: int = 0) -> Pod:
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler" if node else "gang-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        "ports": template["ports"]}],
        **template["spec"],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    ts = f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "labels": {"app": template["app"]},
                                            "creationTimestamp": ts},
                               "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


@st.composite
def inter_pod_clusters(draw: st.DrawFn, max_nodes: int = 7, max_roots: int = 3) -> Cluster:
    """Nodes over three zones, running pods of another scheduler, and gangs of one template each."""
    c = Cluster()
    n_nodes = draw(st.integers(1, max_nodes))
    c.nodes = [_node(i, draw(st.sampled_from([2, 4, 8]))) for i in range(n_nodes)]
    for j in range(draw(st.integers(0, 4))):
        c.pods.append(_pod(f"bg-{j}", draw(_template()), node=f"n{draw(st.integers(0, n_nodes - 1))}"))
    seq = 0
    for r in range(draw(st.integers(1, max_roots))):
        name = f"g{r}"
        n = draw(st.integers(1, 5))
        template = draw(_template())
        gang = draw(st.booleans())
        policy = {"gang": {"minCount": draw(st.integers(1, n))}} if gang else {"basic": {}}
        c.podgroups.append(PodGroup.model_validate({
            "metadata": {"name": name, "namespace": NS, "creationTimestamp": f"2026-01-01T00:00:{r:02d}Z"},
            "spec": {"schedulingPolicy": policy}}))
        for k in range(n):
            seq += 1
            c.pods.append(_pod(f"{name}-p{k}", template, group=name, seconds=seq))
    return c
