"""Regressions of the one-framework rewrite and of per-pod named claims.

Each test names the bug it guards against. They drive the same :class:`~scheduler.cycle.CycleRunner` the live
scheduler runs, on a :class:`~scheduler.cache.cluster.ClusterCache`, so they exercise the cache's
assume/settle and claim bookkeeping rather than a test-only loop.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import CycleRunner
from scheduler.framework import Plan, SolverConfig, Unschedulable
from scheduler.model.scheduling import GroupKey
from scheduler.offline.loader import load
from scheduler.offline.report import render_text, to_json
from scheduler.offline.simulate import simulate

NS = "ml"
DRIVER = "gpu.example.com"


def node(name: str, cpu: str = "16") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}


def gpu_slice(node_name: str, n: int, product: str = "H100") -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "attributes": {"productName": {"string": product}}} for i in range(n)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name, "devices": devices,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}}}


def device_class(name: str = "gpu", expression: str = f"device.driver == '{DRIVER}'") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def claim(name: str, count: int = 1, klass: str = "gpu", product: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": klass, "count": count}
    if product:
        exactly["selectors"] = [{"cel": {"expression": f"device.attributes['{DRIVER}'].productName == '{product}'"}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def pod(name: str, group: str, claim_name: str, cpu: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
            "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": group},
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                     "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu},
                                                                  "claims": [{"name": "gpu"}]}}]},
            "status": {"phase": "Pending"}}


def podgroup(name: str, min_count: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def cache_of(nodes: list[dict[str, Any]], slices: list[dict[str, Any]], classes: list[dict[str, Any]],
             claims: list[dict[str, Any]], groups: list[dict[str, Any]], pods: list[dict[str, Any]]) -> ClusterCache:
    cache = ClusterCache("gang-scheduler", dra=True)
    for kind, items in (("Node", nodes), ("ResourceSlice", slices), ("DeviceClass", classes),
                        ("ResourceClaim", claims), ("PodGroup", groups), ("Pod", pods)):
        cache.replace(kind, items)
    return cache


def decide(cycle: CycleRunner, name: str) -> Plan | Unschedulable:
    attempt = cycle.attempt(GroupKey("PodGroup", NS, name))
    assert attempt is not None, name
    assert isinstance(attempt.decision, Plan | Unschedulable)
    return attempt.decision


# -- a claim named by exactly one pod is that pod's claim -----------------------------


def test_four_pods_each_naming_their_own_claim_are_placed_two_per_node() -> None:
    """Was ``cannot allocate shared claim(s) train/quad-0-gpu, … on any reachable devices``: every named claim
    was treated as shared by the whole leaf, so all four had to reach each other's devices."""
    claims = [claim(f"quad-{i}-gpu", count=2, product="H100") for i in range(4)]
    cache = cache_of([node("n0"), node("n1")], [gpu_slice("n0", 4), gpu_slice("n1", 4)], [device_class()], claims,
                     [podgroup("quad", 4)], [pod(f"quad-{i}", "quad", f"quad-{i}-gpu") for i in range(4)])
    plan = decide(CycleRunner(cache, SolverConfig()), "quad")
    assert isinstance(plan, Plan), plan
    nodes = sorted(n for _, n in plan.placements)
    assert nodes == ["n0", "n0", "n1", "n1"]
    by_pod = {p.metadata.name: n for p, n in plan.placements}
    for a in plan.allocations:  # each claim is allocated on its own pod's node, reserved for that pod
        owner = a.claim.split("/")[1].removesuffix("-gpu")
        assert a.node == by_pod[owner] and a.reserved_for == (("Pod", owner, f"uid-{owner}"),)
        assert len(a.results) == 2 and all(pool == by_pod[owner] for _, _, pool, _ in a.results)


def test_different_shared_claims_of_one_leaf_need_no_common_node() -> None:
    """Two pairs of pods, each pair sharing its own 1-GPU claim, on two 1-GPU nodes: each pair on the node of its
    claim's device. Before, the leaf's mask was the intersection of both claims' reach (empty)."""
    pods = [pod("a-0", "pairs", "claim-a"), pod("a-1", "pairs", "claim-a"),
            pod("b-0", "pairs", "claim-b"), pod("b-1", "pairs", "claim-b")]
    cache = cache_of([node("n0"), node("n1")], [gpu_slice("n0", 1), gpu_slice("n1", 1)], [device_class()],
                     [claim("claim-a"), claim("claim-b")], [podgroup("pairs", 4)], pods)
    plan = decide(CycleRunner(cache, SolverConfig()), "pairs")
    assert isinstance(plan, Plan), plan
    by_pod = {p.metadata.name: n for p, n in plan.placements}
    assert by_pod["a-0"] == by_pod["a-1"] != by_pod["b-0"] == by_pod["b-1"]
    shared = {a.claim: a for a in plan.allocations}
    assert shared[f"{NS}/claim-a"].node is None and len(shared[f"{NS}/claim-a"].reserved_for) == 2


# -- a claim shared by name between roots is allocated once -----------------------


def test_claim_named_by_two_roots_is_allocated_by_the_first_and_pins_the_second() -> None:
    """Through the live cache the second root allocated the claim again (gpu-0, then gpu-1). Now the claim is
    in flight for the first plan: the second root waits, and once the allocation is visible it is pinned."""
    cache = cache_of([node("n0")], [gpu_slice("n0", 2)], [device_class()], [claim("shared")],
                     [podgroup("r1", 1), podgroup("r2", 1)], [pod("x", "r1", "shared"), pod("y", "r2", "shared")])
    cycle = CycleRunner(cache, SolverConfig())
    first = decide(cycle, "r1")
    assert isinstance(first, Plan) and [a.claim for a in first.allocations] == [f"{NS}/shared"]
    second = decide(cycle, "r2")
    assert isinstance(second, Unschedulable)
    assert "ResourceClaim ml/shared is being allocated for another group" in second.message
    allocated = claim("shared")
    allocated["metadata"]["resourceVersion"] = "2"
    allocated["status"] = {"allocation": {"devices": {"results": [
        {"request": a[0], "driver": a[1], "pool": a[2], "device": a[3]} for a in first.allocations[0].results]}},
        "reservedFor": [{"resource": "pods", "name": "x", "uid": "uid-x"}]}
    cache.apply("ResourceClaim", "MODIFIED", allocated)  # the first plan's write, as the watch shows it
    again = decide(cycle, "r2")
    assert isinstance(again, Plan), again
    assert again.allocations == ()  # pinned to the allocation, not allocated a second time


def test_claim_named_by_two_roots_is_allocated_once_in_simulate_too(tmp_path: Path) -> None:
    docs = [node("n0"), gpu_slice("n0", 2), device_class(), claim("shared"), podgroup("r1", 1), podgroup("r2", 1),
            pod("x", "r1", "shared"), pod("y", "r2", "shared")]
    path = tmp_path / "snap.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    sim = simulate(load([path]), "gang-scheduler", SolverConfig())
    assert {g.key.name: g.status for g in sim.groups} == {"r1": "Scheduled", "r2": "Scheduled"}
    assert [a.allocation.claim for a in sim.allocations] == [f"{NS}/shared"]


# -- selector errors belong to the solve that met them ------------------------------


def test_a_roots_cel_error_is_not_quoted_by_the_next_roots_failure() -> None:
    """Both roots solved on one snapshot (one cycle loop): the live loop kept the first root's CEL error on the
    shared inventory and quoted it in the second root's message."""
    claims = [claim("bad-claim", klass="broken"), claim("big-claim", count=8)]
    cache = cache_of([node("n0")], [gpu_slice("n0", 2)],
                     [device_class(), device_class("broken", "device.attributes[")], claims,
                     [podgroup("bad", 1), podgroup("big", 1)],
                     [pod("p", "bad", "bad-claim"), pod("q", "big", "big-claim")])
    cycle = CycleRunner(cache, SolverConfig())
    snapshot = cache.snapshot()
    bad = decide(cycle, "bad")
    assert isinstance(bad, Unschedulable) and "DeviceClass broken: selector" in bad.message
    assert bad.selector_errors and cache.snapshot() is snapshot  # the same snapshot serves the next root
    big = decide(cycle, "big")
    assert isinstance(big, Unschedulable)
    assert "selector" not in big.message and big.selector_errors == ()


# -- the JSON carries what the text report warns about ----------------------------


def test_json_carries_the_warnings_and_dra_problems_of_the_text_report(tmp_path: Path) -> None:
    bad_slice = gpu_slice("n0", 1)
    bad_slice["metadata"]["name"] = "badslice"
    bad_slice["spec"]["allNodes"] = True  # and nodeName: two node selections
    old_api = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "old"},
               "spec": {}}
    docs = [node("n0"), bad_slice, old_api, podgroup("g", 1), pod("w", "g", "missing")]
    path = tmp_path / "snap.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    sim = simulate(load([path]), "gang-scheduler", SolverConfig())
    doc = to_json(sim)
    kinds = {w["kind"]: w for w in doc["warnings"]}
    assert kinds["skipped-api-version"]["message"] == ("1 resource.k8s.io object(s) of resource.k8s.io/v1beta1 "
                                                       "skipped (only resource.k8s.io/v1 is read)")
    assert kinds["dra-problems"]["level"] == "warning"
    assert doc["dra_problems"] == ["ResourceSlice badslice: spec must set exactly one of nodeName, nodeSelector, "
                                   "allNodes, perDeviceNodeSelection"]
    text = render_text(sim)
    for w in doc["warnings"]:
        assert f"{w['level']}: {w['message']}" in text
    for problem in doc["dra_problems"]:
        assert problem in text


# -- small ones ----------------------------------------------------------------------


def test_a_snapshot_with_no_nodes_says_so(tmp_path: Path) -> None:
    """Was ``no node has the label topology.kubernetes.io/zone`` for a topology gang on a node-less snapshot."""
    path = tmp_path / "snap.yaml"
    path.write_text(textwrap.dedent("""
        apiVersion: scheduling.k8s.io/v1beta1
        kind: PodGroup
        metadata: {name: g, namespace: ml}
        spec:
          schedulingPolicy: {gang: {minCount: 1}}
          schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: w, namespace: ml}
        spec:
          schedulerName: gang-scheduler
          schedulingGroup: {podGroupName: g}
          containers: [{name: c}]
        """))
    sim = simulate(load([path]), "gang-scheduler", SolverConfig())
    (group,) = sim.groups
    assert group.reason == "gang g: no nodes available to schedule pods"
