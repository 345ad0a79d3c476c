"""``gang-scheduler simulate --from-cluster --kubeconfig … --add job.yaml`` against the emulator.

The cluster is seeded through the API; the command runs as a subprocess, as a user runs it, and its JSON
report answers "would this job fit now, where, and what would it preempt". It must only read: every
request it sends is a GET, and the cluster is as it was afterwards.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from tests.chaos.process import write_kubeconfig
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, create_gang, create_node, pod, podgroup

CLI = Path(sys.executable).parent / "gang-scheduler"


def running(name: str, node: str, cpu: str, priority: int) -> dict[str, Any]:
    """A running pod of another scheduler on ``node``."""
    body = pod(name, None, cpu=cpu, scheduler="default-scheduler", node_name=node)
    body["spec"]["priority"] = priority
    return body


def job(name: str, n: int, cpu: str, priority: int) -> list[dict[str, Any]]:
    """The workload to ask about: a PodGroup (minCount ``n``) and its ``n`` pending pods, as a user writes them."""
    return [podgroup(name, n, priority=priority), *(pod(f"{name}-{i}", name, cpu=cpu) for i in range(n))]


async def simulate(k8s: ApiServer, tmp_path: Path, *args: str, stdin: bytes | None = None) -> dict[str, Any]:
    """Run the command with ``args`` and the emulator's kubeconfig; its JSON report. Asserts exit 0 and that
    every request it made was a GET."""
    before = len(list(k8s))
    config = write_kubeconfig(tmp_path / "kubeconfig", str(k8s.url))
    proc = await asyncio.create_subprocess_exec(
        str(CLI), "simulate", "--from-cluster", "--kubeconfig", str(config), "-o", "json", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 120)
    assert proc.returncode == 0, err.decode()
    sent = list(k8s)[before:]
    assert sent, "the command listed nothing"
    assert {r.method for r in sent} == {"GET"}, [(r.method, r.url) for r in sent if r.method != "GET"]
    report: dict[str, Any] = json.loads(out)
    return report


async def test_from_cluster_answers_where_the_added_job_fits_and_what_it_preempts(
        k8s: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    # n0 (2 cpu) runs two 1-cpu pods of priority 0; n1 (1 cpu) runs one of priority 1000 that nothing here may
    # preempt. The 2 x 1-cpu gang of priority 100 fits only on n0, once both low pods are gone.
    await create_node(kube, "n0", cpu="2")
    await create_node(kube, "n1", cpu="1")
    for i in range(2):
        await kube.create(PODS, NS, running(f"low-{i}", "n0", "1", 0))
    await kube.create(PODS, NS, running("busy", "n1", "1", 1000))
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump_all(job("train", 2, "1", 100)))
    report = await simulate(k8s, tmp_path, "--add", str(path))
    [group] = [g for g in report["groups"] if g["name"] == "train"]
    assert group["status"] == "Scheduled", group
    assert group["placements"] == {"train-0": "n0", "train-1": "n0"}
    [preemption] = report["preemptions"]
    assert preemption["preemptor"]["name"] == "train"
    assert sorted((v["name"], v["node"]) for v in preemption["victims"]) == [("low-0", "n0"), ("low-1", "n0")]
    assert report["invalid"] == []
    # Nothing was written: the job does not exist in the cluster, the would-be victims still run.
    pods, _ = await kube.list(PODS)
    assert sorted(p["metadata"]["name"] for p in pods) == ["busy", "low-0", "low-1"]
    assert all(p["spec"]["nodeName"] for p in pods)
    groups, _ = await kube.list(PODGROUPS)
    assert groups == []


async def test_from_cluster_schedules_the_cluster_own_pending_gangs_first_and_reads_the_job_from_stdin(
        k8s: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    # A pending gang already in the cluster (older, same priority) is decided first and takes n1, the only node
    # that holds it, as the live scheduler would; the added job (a JSON List on stdin, stamped as created now)
    # then fits on n0, and nothing is preempted (preemption off).
    await create_node(kube, "n0", cpu="4")
    await create_node(kube, "n1", cpu="8")
    await create_gang(kube, "queued", 4, cpu="2")  # 8 cpu: only n1 holds it
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": job("tune", 2, "2", 0)})
    report = await simulate(k8s, tmp_path, "--add", "-", "--no-preemption", stdin=body.encode())
    status = {g["name"]: (g["status"], g["placements"]) for g in report["groups"]}
    assert status["queued"] == ("Scheduled", {f"queued-{i}": "n1" for i in range(4)})
    assert status["tune"] == ("Scheduled", {"tune-0": "n0", "tune-1": "n0"})
    assert report["preemptions"] == []
    pods, _ = await kube.list(PODS)
    assert not any(p["spec"].get("nodeName") for p in pods)


async def test_from_cluster_schedules_an_added_job_as_the_pods_and_podgroup_it_would_make(
        k8s: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    # The quickstart's Job, labelled for the operator: simulate makes its 4 pods and its PodGroup (minCount 4) as
    # the Job controller and the operator would, and places them all; nothing is created in the cluster.
    await create_node(kube, "n0", cpu="1")
    job_body = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "train-job", "namespace": NS, "labels": {"gang-scheduler.io/gang": "true"}},
                "spec": {"parallelism": 4, "completions": 4, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": "100m"}}}]}}}}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job_body))
    report = await simulate(k8s, tmp_path, "--add", str(path))
    [group] = report["groups"]
    assert (group["name"], group["status"], group["policy"]) == ("train-job", "Scheduled", "gang minCount 4")
    assert sorted(group["placements"].values()) == ["n0"] * 4
    assert [w["kind"] for w in report["warnings"]] == ["job-expanded"]
    pods, _ = await kube.list(PODS)
    groups, _ = await kube.list(PODGROUPS)
    assert pods == [] and groups == []


async def test_from_cluster_schedules_an_added_pytorchjob_and_leaderworkerset_as_their_controllers_would(
        k8s: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    # A labelled PyTorchJob (a master and a worker) and a labelled LeaderWorkerSet (one group of a leader and a
    # worker) added to a cluster of one 4-cpu node: simulate makes their pods and the operator's trees and places
    # both whole; nothing is created in the cluster.
    await create_node(kube, "n0", cpu="4")
    opted_in = {"gang-scheduler.io/gang": "true"}
    template = {"spec": {"containers": [{"name": "pytorch", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    pytorchjob = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                  "metadata": {"name": "pt", "namespace": NS, "labels": opted_in},
                  "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template},
                                                   "Worker": {"replicas": 1, "template": template}}}}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": NS, "labels": opted_in},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}}
    path = tmp_path / "workloads.yaml"
    path.write_text(yaml.safe_dump_all([pytorchjob, lws]))
    report = await simulate(k8s, tmp_path, "--add", str(path))
    status = {g["name"]: (g["kind"], g["status"], sorted(g["placements"])) for g in report["groups"]}
    assert status == {
        "pt": ("CompositePodGroup", "Scheduled", ["pt-master-0", "pt-worker-0"]),
        "pt-master": ("PodGroup", "Scheduled", ["pt-master-0"]),
        "pt-worker": ("PodGroup", "Scheduled", ["pt-worker-0"]),
        "serve-0": ("CompositePodGroup", "Scheduled", ["serve-0", "serve-0-1"]),
        "serve-0-leader": ("PodGroup", "Scheduled", ["serve-0"]),
        "serve-0-workers": ("PodGroup", "Scheduled", ["serve-0-1"])}
    assert [w["kind"] for w in report["warnings"]] == ["job-expanded", "job-expanded"]
    assert report["invalid"] == []
    pods, _ = await kube.list(PODS)
    groups, _ = await kube.list(PODGROUPS)
    assert pods == [] and groups == []


@pytest.mark.kubernetes("1.36")
async def test_from_cluster_without_composite_pod_groups_makes_the_single_podgroups_the_operator_makes(
        k8s: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    # Kubernetes 1.36 serves no CompositePodGroup: the operator makes a labelled PyTorchJob or JobSet one PodGroup of
    # all its pods, and each LeaderWorkerSet group one PodGroup (desired(composite=False)), and its pod webhook
    # points each pod at it. simulate --from-cluster makes what the operator makes on that cluster, not a tree the
    # cluster cannot hold.
    await create_node(kube, "n0", cpu="8")
    opted_in = {"gang-scheduler.io/gang": "true"}
    template = {"spec": {"containers": [{"name": "pytorch", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    pytorchjob = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                  "metadata": {"name": "pt", "namespace": NS, "labels": opted_in},
                  "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template},
                                                   "Worker": {"replicas": 2, "template": template}}}}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": NS, "labels": opted_in},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "js", "namespace": NS, "labels": opted_in},
              "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
                  "template": {"spec": {**template["spec"], "restartPolicy": "Never"}}}}}]}}
    path = tmp_path / "workloads.yaml"
    path.write_text(yaml.safe_dump_all([pytorchjob, lws, jobset]))
    report = await simulate(k8s, tmp_path, "--add", str(path))
    status = {g["name"]: (g["kind"], g["status"], len(g["placements"])) for g in report["groups"]}
    assert status == {"pt": ("PodGroup", "Scheduled", 3), "serve-0": ("PodGroup", "Scheduled", 2),
                      "js": ("PodGroup", "Scheduled", 2)}
    assert report["invalid"] == []
