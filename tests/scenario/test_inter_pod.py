"""Scenarios for inter-pod rules from realistic manifests: a PyTorchJob-like gang with one worker
per node and a rendezvous host port, a LeaderWorkerSet-like workload with exclusive zones, a gang held near
a running cache of another namespace (namespaceSelector) with a preferred node — on a cluster whose running
pods (a DaemonSet, another job's rendezvous port, an exclusive ETL pod) count for every rule."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import render_json, render_text
from scheduler.offline.simulate import Simulation, simulate
from tests.scenario.conftest import DATA

CLUSTER = DATA / "clusters" / "inter-pod-cluster.yaml"
PYTORCH = DATA / "workloads" / "d-pytorchjob-rendezvous.yaml"
LWS = DATA / "workloads" / "e-leaderworkerset-exclusive-zone.yaml"
NEAR_CACHE = DATA / "workloads" / "f-gang-near-feature-cache.yaml"


def run(*workloads: str | object, scoring: str = "pack") -> Simulation:
    return simulate(load([CLUSTER, *workloads]), "gang-scheduler", SolverConfig(scoring=scoring))  # type: ignore[arg-type]


def placements(sim: Simulation, group: str) -> dict[str, str]:
    return next(g.placements for g in sim.groups if g.key.name == group)


def zone(node: str) -> str:
    return "us-east-1a" if node.startswith("cpu-a") else "us-east-1b"


def test_pytorchjob_gang_gets_one_member_per_node_on_nodes_with_the_rendezvous_port_free() -> None:
    sim = run(PYTORCH)
    where = placements(sim, "bert-pretrain")
    assert len(where) == 4 and len(set(where.values())) == 4
    assert set(where.values()) == {"cpu-a-2", "cpu-b-1", "cpu-b-2", "cpu-b-3"}  # not cpu-a-1 (ETL), cpu-a-3 (29500)


def test_pytorchjob_gang_waits_whole_when_too_few_nodes_have_the_port_free(tmp_path: Path) -> None:
    """One more running pod holding 29500 (on cpu-b-1) leaves three nodes for four members: nothing is placed,
    and each node is counted under the first filter that refuses it (NodePorts runs before InterPodAffinity)."""
    taken = tmp_path / "another-rendezvous.yaml"
    taken.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ray-head-1", "namespace": "batch"},
        "spec": {"schedulerName": "default-scheduler", "nodeName": "cpu-b-1", "hostNetwork": True,
                 "containers": [{"name": "main", "ports": [{"containerPort": 29500}]}]},
        "status": {"phase": "Running"}}))
    sim = simulate(load([CLUSTER, taken, PYTORCH]), "gang-scheduler", SolverConfig())
    group = next(g for g in sim.groups if g.key.name == "bert-pretrain")
    assert group.status == "Unschedulable" and group.placements == {}
    assert group.reason == ("gang bert-pretrain: 3/4 placeable (minCount 4); 0/6 nodes are available: "
                            "1 node(s) didn't satisfy existing pods anti-affinity rules, "
                            "5 node(s) didn't have free ports for the requested pod ports. pod group preemption: "
                            "No preemption victims found for incoming pod.")


def test_leaderworkerset_groups_each_get_a_zone_of_their_own() -> None:
    sim = run(LWS)
    first, second = placements(sim, "llama-70b-0"), placements(sim, "llama-70b-1")
    assert len(first) == 3 and len(second) == 3
    zones_first, zones_second = {zone(n) for n in first.values()}, {zone(n) for n in second.values()}
    assert len(zones_first) == 1 and len(zones_second) == 1 and zones_first != zones_second


def test_gang_near_the_feature_cache_lands_in_its_zone_on_the_preferred_node() -> None:
    sim = run(NEAR_CACHE)
    assert set(placements(sim, "embed-batch").values()) == {"cpu-b-3"}


def test_all_three_together_and_nothing_is_reported_unhonoured() -> None:
    sim = run(PYTORCH, LWS, NEAR_CACHE)
    assert Counter(g.status for g in sim.groups) == Counter({"Scheduled": 4})
    doc = json.loads(render_json(sim))
    assert [w for w in doc["warnings"] if w["kind"] == "unhonoured-field"] == []
    assert "not honoured" not in render_text(sim)


def test_without_the_namespaces_the_cache_namespace_selector_matches_nothing_and_says_so(tmp_path: Path) -> None:
    """A snapshot without the Namespace objects (``kubectl get pods,nodes`` only): the gang stays pending as
    kube-scheduler would leave it, and simulate warns that the namespaceSelector could not be resolved."""
    stripped = tmp_path / "no-namespaces.yaml"
    stripped.write_text("\n---\n".join(d for d in CLUSTER.read_text().split("\n---\n") if "kind: Namespace" not in d))
    sim = simulate(load([stripped, NEAR_CACHE]), "gang-scheduler", SolverConfig())
    assert {g.key.name: g.status for g in sim.groups} == {"embed-batch": "Unschedulable"}
    text = render_text(sim)
    assert ("warning: pods ml-team/embed-batch-0, ml-team/embed-batch-1, ml-team/embed-batch-2: spec.affinity."
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector: no Namespace objects are "
            "known, so it matches no namespace (add namespaces to the snapshot: kubectl get namespaces -o yaml) (not "
            "honoured)") in text.splitlines()
    warnings = [w for w in json.loads(render_json(sim))["warnings"] if w["kind"] == "unhonoured-field"]
    assert [w["pod"] for w in warnings] == [f"ml-team/embed-batch-{i}" for i in range(3)]
    assert warnings[0]["field"].endswith(".namespaceSelector") and warnings[0]["level"] == "warning"


ISSUE_10 = """
apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0, topology.kubernetes.io/zone: za}}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: za}}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: zb}}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {kubernetes.io/hostname: n3, topology.kubernetes.io/zone: zb, pool: fast}}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
"""


def issue_pods(name: str, n: int, labels: dict[str, str], spec: dict[str, object]) -> str:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
             "spec": {"schedulingPolicy": {"gang": {"minCount": n}}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-{i}", "labels": labels},
             "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": name},
                      "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec}}
            for i in range(n)]
    return yaml.safe_dump_all([group, *pods])


def test_issue_10_as_a_new_user_reported_it(tmp_path: Path) -> None:
    """The five cases of the issue, each of which used to be placed ignoring the field."""
    hostname_anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "anti"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    zone_spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": "spread"}}}]}
    lonely = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "nobody"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    ports = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}},
                             "ports": [{"containerPort": 29500, "hostPort": 29500}]}]}
    preferred = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["fast"]}]}}]}}}
    files = {"nodes.yaml": ISSUE_10, "anti.yaml": issue_pods("anti", 4, {"app": "anti"}, hostname_anti),
             "spread.yaml": issue_pods("spread", 4, {"app": "spread"}, zone_spread),
             "lonely.yaml": issue_pods("lonely", 1, {"app": "lonely"}, lonely),
             "ports.yaml": issue_pods("ports", 3, {"app": "ports"}, ports),
             "preferred.yaml": issue_pods("preferred", 1, {"app": "preferred"}, preferred)}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    sim = simulate(load(sorted(tmp_path.iterdir())), "gang-scheduler", SolverConfig())
    zone_of = {"n0": "za", "n1": "za", "n2": "zb", "n3": "zb"}
    assert len(set(placements(sim, "anti").values())) == 4
    assert Counter(zone_of[n] for n in placements(sim, "spread").values()) == Counter({"za": 2, "zb": 2})
    lonely_group = next(g for g in sim.groups if g.key.name == "lonely")
    assert lonely_group.status == "Unschedulable" and "didn't match pod affinity rules" in (lonely_group.reason or "")
    assert len(set(placements(sim, "ports").values())) == 3
    assert placements(sim, "preferred") == {"preferred-0": "n3"}
