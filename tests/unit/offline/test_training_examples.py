"""``gang-scheduler simulate CLUSTER WORKLOAD`` on the Kubeflow and LeaderWorkerSet projects' own examples
(tests/data/workloads, copied verbatim) and the small GPU cluster: would it fit, and where.

The examples are given as their projects write them, with the opt-in label added on a copy (and, where said, the
toleration the cluster's GPU nodes need); ``simulate`` makes their pods and the operator's groups and decides them
after the cluster's own pending gangs, which take the GPUs first (their priority is higher).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from scheduler.cli import main

DATA = Path(__file__).resolve().parents[2] / "data"
CLUSTER = DATA / "clusters" / "small-gpu-cluster.yaml"
WORKLOADS = DATA / "workloads"
OPT_IN = '  labels: {gang-scheduler.io/gang: "true"}\n'
GPU_TOLERATION = "tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]"


def example(tmp_path: Path, name: str, *, after: str, tolerate: str | None = None) -> Path:
    """A copy of example ``name`` labelled for the operator (the label put after the line ``after``), with the GPU
    toleration put before each line ``tolerate`` (a template's ``containers:``, indentation included)."""
    text = (WORKLOADS / name).read_text()
    assert after in text
    text = text.replace(after, after + OPT_IN, 1)
    if tolerate is not None:
        assert tolerate in text
        indent = tolerate[:len(tolerate) - len(tolerate.lstrip())]
        text = text.replace(tolerate, f"{indent}{GPU_TOLERATION}\n{tolerate}")
    path = tmp_path / name
    path.write_text(text)
    return path


def report(*files: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", "--output", "json", str(CLUSTER), *map(str, files)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def groups(doc: dict[str, Any], namespace: str = "default") -> dict[str, tuple[str, str, dict[str, str]]]:
    return {g["name"]: (g["kind"], g["status"], g["placements"]) for g in doc["groups"] if g["namespace"] == namespace}


def notes(doc: dict[str, Any]) -> list[str]:
    return [w["message"] for w in doc["warnings"] if w["kind"] == "job-expanded"]


MNIST = "kubeflow-pytorchjob-mnist-nccl.yaml"
MNIST_NOTE = ("kubeflow.org/v1 PyTorchJob default/pytorch-dist-mnist-nccl: 2 pod(s) (Master 1, Worker 1) made as the "
              "training operator would, in CompositePodGroup pytorch-dist-mnist-nccl over 2 PodGroup(s), one per "
              "replica type, as the operator makes them for gang-scheduler.io/gang")


def test_the_mnist_pytorchjob_as_written_fits_nowhere_the_gpu_nodes_are_tainted(tmp_path: Path) -> None:
    doc = report(example(tmp_path, MNIST, after='  name: "pytorch-dist-mnist-nccl"\n'))
    assert {name: status for name, (_, status, _) in groups(doc).items()} == {
        "pytorch-dist-mnist-nccl": "Unschedulable", "pytorch-dist-mnist-nccl-master": "Unschedulable",
        "pytorch-dist-mnist-nccl-worker": "Unschedulable"}
    (root,) = [g for g in doc["groups"] if g["name"] == "pytorch-dist-mnist-nccl"]
    assert "7 node(s) had untolerated taint {nvidia.com/gpu: true}" in root["reason"]
    assert notes(doc) == [MNIST_NOTE]
    assert {g["name"]: g["status"] for g in doc["groups"] if g["namespace"] == "ml-team" and g["root"] == g["name"]
            } == {"llm-pretrain-6f7c9-workers-2rl42": "Scheduled", "train-llm-workload-root": "Scheduled"}
    assert doc["invalid"] == []


def test_the_mnist_pytorchjob_tolerating_the_gpu_taint_is_placed_whole_with_a_gpu_each(tmp_path: Path) -> None:
    doc = report(example(tmp_path, MNIST, after='  name: "pytorch-dist-mnist-nccl"\n',
                         tolerate="          containers:\n"))
    where = {"pytorch-dist-mnist-nccl-master-0": "gpu-a2-2", "pytorch-dist-mnist-nccl-worker-0": "gpu-a2-2"}
    assert groups(doc) == {
        "pytorch-dist-mnist-nccl": ("CompositePodGroup", "Scheduled", where),
        "pytorch-dist-mnist-nccl-master": ("PodGroup", "Scheduled", {"pytorch-dist-mnist-nccl-master-0": "gpu-a2-2"}),
        "pytorch-dist-mnist-nccl-worker": ("PodGroup", "Scheduled", {"pytorch-dist-mnist-nccl-worker-0": "gpu-a2-2"})}
    gpus = sorted((a["pods"], a["node"], [d["driver"] for d in a["devices"]]) for a in doc["allocations"]
                  if a["claim"].startswith("default/"))  # the extended resource's claim, one GPU each
    assert gpus == [(["pytorch-dist-mnist-nccl-master-0"], "gpu-a2-2", ["gpu.nvidia.com"]),
                    (["pytorch-dist-mnist-nccl-worker-0"], "gpu-a2-2", ["gpu.nvidia.com"])]
    assert notes(doc) == [MNIST_NOTE]


def test_the_elastic_pytorchjob_is_one_gang_of_every_worker_and_says_so(tmp_path: Path) -> None:
    doc = report(example(tmp_path, "kubeflow-pytorchjob-elastic-imagenet.yaml",
                         after="  name: elastic-example-imagenet\n"))
    where = {"elastic-example-imagenet-worker-0": "cpu-m5-1", "elastic-example-imagenet-worker-1": "cpu-m5-1"}
    assert groups(doc) == {"elastic-example-imagenet": ("CompositePodGroup", "Scheduled", where),
                           "elastic-example-imagenet-worker": ("PodGroup", "Scheduled", where)}
    assert notes(doc) == [
        "kubeflow.org/v1 PyTorchJob default/elastic-example-imagenet: 2 pod(s) (Worker 2) made as the training "
        "operator would, in CompositePodGroup elastic-example-imagenet over 1 PodGroup(s), one per replica type, as "
        "the operator makes them for gang-scheduler.io/gang; spec.elasticPolicy is not honoured: the operator's gang "
        "is every replica"]


def test_the_vllm_leaderworkerset_does_not_fit_and_the_report_says_why(tmp_path: Path) -> None:
    """Two groups of two 8-GPU pods, each asking for 125 CPUs and 800Gi of ephemeral storage: no node has that room
    once the cluster's own gangs are placed, and nothing of lower priority runs there to preempt."""
    doc = report(example(tmp_path, "lws-vllm-llama405b.yaml", after="  name: vllm\n",
                         tolerate="        containers:\n"))
    assert groups(doc) == {name: (kind, "Unschedulable", {}) for name, kind in (
        ("vllm-0", "CompositePodGroup"), ("vllm-0-leader", "PodGroup"), ("vllm-0-workers", "PodGroup"),
        ("vllm-1", "CompositePodGroup"), ("vllm-1-leader", "PodGroup"), ("vllm-1-workers", "PodGroup"))}
    (leader,) = [g for g in doc["groups"] if g["name"] == "vllm-0-leader"]
    assert "Insufficient ephemeral-storage" in leader["reason"]
    assert sorted(p["name"] for p in doc["pods"] if p["namespace"] == "default") == [
        "vllm-0", "vllm-0-1", "vllm-1", "vllm-1-1"]
    assert notes(doc) == [
        "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet default/vllm: 4 pod(s) of 2 group(s) of 2 made as the "
        "LeaderWorkerSet and StatefulSet controllers would, in a CompositePodGroup per group, vllm-<group>, over its "
        "leader's PodGroup and its workers', as the operator makes them for gang-scheduler.io/gang"]


def test_a_leaderworkerset_for_volcano_is_not_ours_even_labelled(tmp_path: Path) -> None:
    """Its worker template names Volcano: the operator's webhook leaves such pods to it, and simulate makes none."""
    doc = report(example(tmp_path, "lws-volcano-gang.yaml", after="  name: lws-sample-volcano\n"))
    assert groups(doc) == {} and notes(doc) == []
    assert not [p for p in doc["pods"] if p["namespace"] == "default"]
