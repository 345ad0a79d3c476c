"""A LeaderWorkerSet given to ``simulate`` is scheduled as the pods its StatefulSets and the groups the operator would
make of it (``scheduler.offline.leaderworkersets``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.offline import jobs, leaderworkersets
from tests.unit.offline.test_jobs import job_notes, run
from tests.unit.offline.test_pytorchjobs import _set, refused

LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: llm, namespace: ml, labels: {gang-scheduler.io/gang: "true"}}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 3
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        containers: [{name: leader, image: x, resources: {requests: {cpu: "1"}}}]
    workerTemplate:
      metadata: {annotations: {note: kept}}
      spec:
        containers: [{name: worker, image: x, resources: {requests: {cpu: "1"}}}]
"""
TREE_NOTE = ("leaderworkerset.x-k8s.io/v1 LeaderWorkerSet ml/llm: 6 pod(s) of 2 group(s) of 3 made as the "
             "LeaderWorkerSet and StatefulSet controllers would, in a CompositePodGroup per group, llm-<group>, over "
             "its leader's PodGroup and its workers', as the operator makes them for gang-scheduler.io/gang")


def key(leader: str) -> str:
    return hashlib.sha1(f"ml/{leader}".encode()).hexdigest()


def test_a_labelled_leaderworkerset_is_made_into_its_pods_and_a_tree_per_group(tmp_path: Path) -> None:
    sim = run(tmp_path, LWS)
    groups = {g.key.name: (g.key.kind, g.status, g.policy, len(g.placements)) for g in sim.groups}
    assert groups == {
        "llm-0": ("CompositePodGroup", "Scheduled", "gang minGroupCount 2", 3),
        "llm-0-leader": ("PodGroup", "Scheduled", "gang minCount 1", 1),
        "llm-0-workers": ("PodGroup", "Scheduled", "gang minCount 2", 2),
        "llm-1": ("CompositePodGroup", "Scheduled", "gang minGroupCount 2", 3),
        "llm-1-leader": ("PodGroup", "Scheduled", "gang minCount 1", 1),
        "llm-1-workers": ("PodGroup", "Scheduled", "gang minCount 2", 2)}
    pods = {p.pod.metadata.name: p.pod for p in sim.pods}
    assert sorted(pods) == ["llm-0", "llm-0-1", "llm-0-2", "llm-1", "llm-1-1", "llm-1-2"]
    assert all(p.node in ("n1", "n2") for p in sim.pods)
    for group in range(2):
        leader = pods[f"llm-{group}"]
        assert leader.metadata.labels == {
            "role": "leader", "leaderworkerset.sigs.k8s.io/name": "llm",
            "leaderworkerset.sigs.k8s.io/worker-index": "0",
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/group-key": key(f"llm-{group}"),
            "statefulset.kubernetes.io/pod-name": f"llm-{group}", "apps.kubernetes.io/pod-index": str(group),
            "gang-scheduler.io/gang": "true"}
        assert leader.metadata.annotations == {"leaderworkerset.sigs.k8s.io/size": "3"}
        assert leader.spec.containers[0].name == "leader"
        assert leader.spec.scheduling_group is not None
        assert leader.spec.scheduling_group.pod_group_name == f"llm-{group}-leader"
        for index in (1, 2):
            worker = pods[f"llm-{group}-{index}"]
            assert worker.metadata.labels == {
                "leaderworkerset.sigs.k8s.io/name": "llm", "leaderworkerset.sigs.k8s.io/group-index": str(group),
                "leaderworkerset.sigs.k8s.io/group-key": key(f"llm-{group}"),
                "leaderworkerset.sigs.k8s.io/worker-index": str(index),
                "statefulset.kubernetes.io/pod-name": f"llm-{group}-{index}",
                "apps.kubernetes.io/pod-index": str(index), "gang-scheduler.io/gang": "true"}
            assert worker.metadata.annotations == {"note": "kept", "leaderworkerset.sigs.k8s.io/size": "3",
                                                   "leaderworkerset.sigs.k8s.io/leader-name": f"llm-{group}"}
            assert worker.spec.containers[0].name == "worker"
            assert worker.spec.scheduling_group is not None
            assert worker.spec.scheduling_group.pod_group_name == f"llm-{group}-workers"
        assert all(p.spec.scheduler_name == "gang-scheduler" for p in pods.values())
    assert job_notes(sim) == [TREE_NOTE]
    assert [p.pod.metadata.name for p in run(tmp_path, LWS).pods] == [p.pod.metadata.name for p in sim.pods]


def test_what_the_statefulsets_set_on_each_pod() -> None:
    """Each pod is its StatefulSet's (the leaders' ``llm``, each group's workers' ``llm-<group>``): owned by it, named
    and given a host name by it, in its service's subdomain (the leader's own with ``UniquePerReplica``); the
    LeaderWorkerSet is left as it was."""
    lws = yaml.safe_load(LWS)
    lws["metadata"]["uid"] = "u1"
    assert leaderworkersets.problem(lws) is None
    made = {p["metadata"]["name"]: p for p in leaderworkersets.pods(lws)}
    owners = {name: [(r["kind"], r["name"], r["controller"]) for r in p["metadata"]["ownerReferences"]]
              for name, p in made.items()}
    assert owners == {"llm-0": [("StatefulSet", "llm", True)], "llm-1": [("StatefulSet", "llm", True)],
                      "llm-0-1": [("StatefulSet", "llm-0", True)], "llm-0-2": [("StatefulSet", "llm-0", True)],
                      "llm-1-1": [("StatefulSet", "llm-1", True)], "llm-1-2": [("StatefulSet", "llm-1", True)]}
    assert {(p["spec"]["hostname"], p["spec"]["subdomain"]) for p in made.values()} == {
        (name, "llm") for name in made}
    lws["spec"]["networkConfig"] = {"subdomainPolicy": "UniquePerReplica"}
    made = {p["metadata"]["name"]: p for p in leaderworkersets.pods(lws)}
    assert made["llm-1"]["spec"]["subdomain"] == "llm-1" and made["llm-1-2"]["spec"]["subdomain"] == "llm-1"
    assert made["llm-1"]["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/subdomainPolicy"] == "UniquePerReplica"
    assert "hostname" not in lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]


def test_a_group_of_one_is_its_leader_alone_made_from_the_worker_template(tmp_path: Path) -> None:
    lws = yaml.safe_load(LWS)
    template = lws["spec"]["leaderWorkerTemplate"]
    del template["leaderTemplate"], template["size"]
    sim = run(tmp_path, "\n" + yaml.safe_dump(lws))
    assert {g.key.name: g.policy for g in sim.groups} == {
        "llm-0": "gang minGroupCount 1", "llm-0-leader": "gang minCount 1",
        "llm-1": "gang minGroupCount 1", "llm-1-leader": "gang minCount 1"}
    assert sorted(p.pod.metadata.name for p in sim.pods) == ["llm-0", "llm-1"]
    assert all(p.pod.spec.containers[0].name == "worker" for p in sim.pods)
    assert job_notes(sim)[0].split(", in ")[1].startswith("a CompositePodGroup per group, llm-<group>, over its "
                                                          "leader's PodGroup, as the operator")


def test_a_leaderworkerset_naming_our_scheduler_without_the_label_makes_lone_pods(tmp_path: Path) -> None:
    lws = LWS.replace('labels: {gang-scheduler.io/gang: "true"}', "labels: {}").replace(
        "        containers: [{name: worker",
        "        schedulerName: gang-scheduler\n        containers: [{name: worker")
    sim = run(tmp_path, lws)
    assert sim.groups == []
    ours = {p.pod.metadata.name for p in sim.pods}
    assert ours == {"llm-0-1", "llm-0-2", "llm-1-1", "llm-1-2"}  # the leaders' template names no scheduler
    assert all(p.pod.spec.scheduling_group is None and p.node is not None for p in sim.pods)
    assert job_notes(sim) == ["leaderworkerset.x-k8s.io/v1 LeaderWorkerSet ml/llm: 6 pod(s) of 2 group(s) of 3 made "
                              "as the LeaderWorkerSet and StatefulSet controllers would, without a group"]


def test_a_group_too_large_for_the_cluster_places_none_of_its_pods(tmp_path: Path) -> None:
    sim = run(tmp_path, LWS.replace("replicas: 2", "replicas: 3").replace('cpu: "1"}}}]\n"""', 'cpu: "2"}}}]\n"""'))
    status = {g.key.name: g.status for g in sim.groups if g.key.kind == "CompositePodGroup"}
    assert sorted(status.values()) == ["Scheduled", "Scheduled", "Unschedulable"]  # 1 + 2 x 2 cpu a group; 8 cpu
    placed = {p.pod.metadata.name for p in sim.pods if p.node is not None}
    failed = next(name for name, s in status.items() if s == "Unschedulable")
    assert not {failed, f"{failed}-1", f"{failed}-2"} & placed and len(placed) == 6


NOT_MADE = "1 workload(s) of ours not made into pods: LeaderWorkerSet ml/llm "


@pytest.mark.parametrize(("change", "note"), [
    pytest.param(("replicas: 2", "replicas: 0"), NOT_MADE + "(nothing to run: replicas 0)", id="replicas-0"),
    pytest.param(("spec:\n  replicas: 2", "spec:\n  scheduling: {}\n  replicas: 2"), NOT_MADE + "(it sets "
                 "spec.scheduling: LeaderWorkerSet's own Workload and PodGroups are not simulated)", id="scheduling"),
    pytest.param(("spec:\n  replicas: 2", "spec:\n  groupIdentity: Hash\n  replicas: 2"), NOT_MADE + "(spec."
                 "groupIdentity Hash: its hash-named groups, whose leaders a Deployment makes, are not simulated)",
                 id="hash-identity"),
    pytest.param(('labels: {gang-scheduler.io/gang: "true"}', "labels: {}"), None, id="not-ours"),
    pytest.param(("      spec:\n        containers", "      spec:\n        schedulerName: volcano\n        containers"),
                 None, id="every-template-names-another-scheduler"),
])
def test_leaderworkersets_not_made_into_pods(tmp_path: Path, change: tuple[str, str], note: str | None) -> None:
    assert change[0] in LWS
    sim = run(tmp_path, LWS.replace(*change))
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == ([note] if note else [])


def test_a_leaderworkerset_larger_than_the_cap_or_with_a_pod_name_taken_is_named_not_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    squatter = """
apiVersion: v1
kind: Pod
metadata: {name: llm-1-2, namespace: ml}
spec: {nodeName: n2, containers: [{name: c}]}
status: {phase: Running}
"""
    sim = run(tmp_path, LWS, squatter)
    assert sim.pods == [] and job_notes(sim) == [NOT_MADE + "(its pod llm-1-2 exists already)"]
    monkeypatch.setattr(jobs, "MAX_PODS_PER_JOB", 5)
    sim = run(tmp_path, LWS)
    assert sim.pods == [] and job_notes(sim) == [NOT_MADE + "(6 pods at once, more than simulate makes of one "
                                                            "workload (5))"]


def test_a_leaderworkerset_whose_pods_the_snapshot_holds_is_not_made_again(tmp_path: Path) -> None:
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: llm-0, namespace: ml, labels: {leaderworkerset.sigs.k8s.io/name: llm}}
spec: {schedulerName: gang-scheduler, containers: [{name: leader, image: x}]}
"""
    sim = run(tmp_path, LWS, pod)
    assert [p.pod.metadata.name for p in sim.pods] == ["llm-0"] and job_notes(sim) == []


@pytest.mark.parametrize(("change", "why"), [
    pytest.param(("spec:\n  replicas: 2", "spec:\n  startupPolicy: LeaderReady\n  replicas: 2"),
                 "startupPolicy LeaderReady: a group's workers are made once its leader is ready", id="leader-ready"),
    pytest.param(('labels: {gang-scheduler.io/gang: "true"}', 'labels: {gang-scheduler.io/gang: "true"}, '
                  'annotations: {leaderworkerset.sigs.k8s.io/exclusive-topology: topology.kubernetes.io/zone}'),
                 "annotation leaderworkerset.sigs.k8s.io/exclusive-topology=topology.kubernetes.io/zone: a group's "
                 "workers are made once its leader is scheduled, with a node selector for the leader's domain",
                 id="exclusive-topology"),
])
def test_workers_made_only_after_their_leader_leave_the_operators_groups_waiting(
        tmp_path: Path, change: tuple[str, str], why: str) -> None:
    """Before any pod is scheduled the cluster holds the leaders alone: the operator's gang of each group waits for
    workers that come only once its leader is ready or scheduled, so no group starts, as live."""
    assert change[0] in LWS
    sim = run(tmp_path, LWS.replace(*change))
    assert sorted(p.pod.metadata.name for p in sim.pods) == ["llm-0", "llm-1"]
    assert all(p.node is None for p in sim.pods)
    assert {g.key.name: g.status for g in sim.groups} == {
        name: "Waiting" for name in ("llm-0", "llm-0-leader", "llm-0-workers", "llm-1", "llm-1-leader",
                                     "llm-1-workers")}
    assert job_notes(sim) == [TREE_NOTE.replace("6 pod(s)", "2 pod(s)") + f"; only the leaders are made ({why}); the "
                              "operator's gang of each group waits for its workers, so no group would start"]


def test_an_exclusive_topology_leader_gets_lws_exclusive_affinity() -> None:
    lws = yaml.safe_load(LWS)
    lws["metadata"].update(uid="u1", annotations={"leaderworkerset.sigs.k8s.io/exclusive-topology": "zone"})
    (leader, _) = leaderworkersets.pods(lws)
    affinity = leader["spec"]["affinity"]
    group = key("llm-0")
    assert affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {"labelSelector": {"matchExpressions": [
            {"key": "leaderworkerset.sigs.k8s.io/group-key", "operator": "In", "values": [group]}]},
         "topologyKey": "zone"}]
    assert affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {"labelSelector": {"matchExpressions": [
            {"key": "leaderworkerset.sigs.k8s.io/group-key", "operator": "Exists"},
            {"key": "leaderworkerset.sigs.k8s.io/group-key", "operator": "NotIn", "values": [group]}]},
         "topologyKey": "zone"}]
    assert leader["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "zone"


def test_the_snapshots_groups_are_used_and_what_is_not_honoured_is_said(tmp_path: Path) -> None:
    composite = """
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: llm-1, namespace: ml}
spec:
  schedulingPolicy: {gang: {minGroupCount: 2}}
  workloadRef: {workloadName: llm, templateName: gang}
"""
    lws = LWS.replace('labels: {gang-scheduler.io/gang: "true"}', 'labels: {gang-scheduler.io/gang: "true"}, '
                      'annotations: {gang-scheduler.io/min-count: "3"}').replace(
        "    size: 3\n", "    size: 3\n    subGroupPolicy: {subGroupSize: 2}\n")
    sim = run(tmp_path, lws, composite)
    assert len(sim.groups) == 6 and all(g.status == "Scheduled" for g in sim.groups)
    assert job_notes(sim) == [
        TREE_NOTE + "; the snapshot's llm-1 used; annotation gang-scheduler.io/min-count='3' is not applied: this "
        "LeaderWorkerSet is a tree of 6 groups, each with the minimum of its role; spec.leaderWorkerTemplate."
        "subGroupPolicy is not honoured: each group is one gang, and the subgroups' labels and affinities are not "
        "made"]


TEMPLATE = "spec.leaderWorkerTemplate"


@pytest.mark.parametrize(("edit", "why"), [
    pytest.param(_set("metadata.name", "llm.v2"), "metadata.name must be a DNS-1035 label (lower-case letters, "
                 "digits and '-', starting with a letter)", id="name"),
    pytest.param(_set("spec.replicas", -1), "spec.replicas must be a non-negative integer (got -1)", id="replicas"),
    pytest.param(_set(f"{TEMPLATE}.size", 0), f"{TEMPLATE}.size must be an integer of at least 1 (got 0)", id="size"),
    pytest.param(_set("spec.replicas", 2**30), f"the product of spec.replicas and {TEMPLATE}.size must not exceed "
                 "2147483647", id="product"),
    pytest.param(_set(TEMPLATE, None), f"{TEMPLATE} is required", id="no-template"),
    pytest.param(_set(f"{TEMPLATE}.workerTemplate.spec.containers", []),
                 f"{TEMPLATE}.workerTemplate.spec.containers is required", id="worker-containers"),
    pytest.param(_set(f"{TEMPLATE}.leaderTemplate.spec", {}), f"{TEMPLATE}.leaderTemplate.spec.containers is "
                 "required", id="leader-containers"),
    pytest.param(_set("spec.startupPolicy", "Eager"), "spec.startupPolicy must be LeaderCreated or LeaderReady (got "
                 "'Eager')", id="startup-policy"),
    pytest.param(_set("spec.networkConfig", {"subdomainPolicy": "Own"}), "spec.networkConfig.subdomainPolicy must be "
                 "Shared or UniquePerReplica (got 'Own')", id="subdomain-policy"),
    pytest.param(_set(f"{TEMPLATE}.subGroupPolicy", {"subGroupSize": 4}), f"{TEMPLATE}.subGroupPolicy.subGroupSize "
                 "must be at most size and divide size or size - 1", id="subgroup-size"),
    pytest.param(_set(f"{TEMPLATE}.volumeClaimTemplates", [{"spec": {}}]), f"{TEMPLATE}.volumeClaimTemplates must be "
                 "a list of claims, each with a metadata.name", id="claim-template-name"),
])
def test_a_leaderworkerset_the_api_server_would_refuse_is_invalid(tmp_path: Path, edit: Any, why: str) -> None:
    sim = run(tmp_path, refused(LWS, edit))
    assert sim.pods == [] and sim.groups == []
    assert [(p.kind, p.message) for p in sim.problems] == [("LeaderWorkerSet", why)]


CLAIMS = """
    volumeClaimTemplates:
    - metadata: {name: cache, labels: {tier: fast}}
      spec:
        accessModes: [ReadWriteOnce]
        storageClassName: gp3
        resources: {requests: {storage: 10Gi}}
"""
GP3 = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
"""


def test_the_statefulsets_make_a_claim_per_pod_of_the_volume_claim_templates(tmp_path: Path) -> None:
    """Each pod's claim ``<template>-<pod>`` is made (its StatefulSet's selector among its labels) and provisioned
    where the pod goes; one the snapshot holds already is used, as the StatefulSet controller uses it."""
    held = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: cache-llm-1-2, namespace: ml}
spec: {accessModes: [ReadWriteOnce], storageClassName: gp3, resources: {requests: {storage: 10Gi}}}
"""
    lws = LWS.replace("    size: 3\n", "    size: 3\n" + CLAIMS.lstrip("\n"))
    sim = run(tmp_path, lws, GP3, held)
    assert sim.problems == [] and all(p.node is not None for p in sim.pods)
    pods = {p.pod.metadata.name: p for p in sim.pods}
    for name, placed in pods.items():
        (volume,) = placed.pod.spec.volumes
        assert volume.name == "cache" and volume.persistent_volume_claim is not None
        assert volume.persistent_volume_claim.claim_name == f"cache-{name}"
    bound = {o.binding.claim: o.binding.node for o in sim.volumes}
    assert bound == {f"ml/cache-{name}": placed.node for name, placed in pods.items()}
    assert job_notes(sim) == [TREE_NOTE + "; 6 PersistentVolumeClaim(s) of its volumeClaimTemplates, as the "
                                          "StatefulSets make them (1 of them the snapshot's, used)"]
    lws_body = yaml.safe_load(lws)
    lws_body["metadata"]["uid"] = "u1"
    made = leaderworkersets.claims(lws_body, leaderworkersets.pods(lws_body))
    assert {c["spec"]["storageClassName"] for c in made} == {"gp3"}
    assert {c["metadata"]["name"]: c["metadata"]["labels"] for c in made if c["metadata"]["name"].startswith(
        "cache-llm-1")} == {
        "cache-llm-1": {"tier": "fast", "leaderworkerset.sigs.k8s.io/name": "llm",
                        "leaderworkerset.sigs.k8s.io/worker-index": "0"},
        **{f"cache-llm-1-{i}": {"tier": "fast", "leaderworkerset.sigs.k8s.io/name": "llm",
                                "leaderworkerset.sigs.k8s.io/group-index": "1",
                                "leaderworkerset.sigs.k8s.io/group-key": key("llm-1")} for i in (1, 2)}}


def test_a_claim_template_without_a_class_gets_the_default_one_as_the_api_server_gives_it(tmp_path: Path) -> None:
    """The newest StorageClass annotated default (then by name), as the DefaultStorageClass admission picks it: here
    the one that provisions (the older default has no provisioner and no volume, and would leave the pods waiting);
    an explicit ``""`` is no class, left as written."""
    default = "annotations: {storageclass.kubernetes.io/is-default-class: 'true'}"
    older = GP3.replace("metadata: {name: gp3}", f"metadata: {{name: local, creationTimestamp: '2026-01-01T00:00:00Z', "
                        f"{default}}}").replace("ebs.csi.aws.com", "kubernetes.io/no-provisioner")
    newer = GP3.replace("metadata: {name: gp3}", f"metadata: {{name: gp3, creationTimestamp: '2026-06-01T00:00:00Z', "
                        f"{default}}}")
    classless = CLAIMS.lstrip("\n").replace("        storageClassName: gp3\n", "")
    lws = LWS.replace("    size: 3\n", "    size: 3\n" + classless)
    sim = run(tmp_path, lws, older, newer)
    assert sim.problems == [] and all(p.node is not None for p in sim.pods)
    assert {o.binding.claim for o in sim.volumes} == {f"ml/cache-{p.pod.metadata.name}" for p in sim.pods}
    sim = run(tmp_path, lws.replace("        accessModes:", "        storageClassName: ''\n        accessModes:"),
              newer)
    assert all(p.node is None for p in sim.pods)  # no class, no volume to bind: the pods wait
