"""Scenarios from realistic snapshots (tests/data)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import render_text
from scheduler.offline.simulate import Simulation, example_path, simulate
from tests.scenario.conftest import DATA

FRAGMENTED = DATA / "clusters" / "fragmented-cluster.yaml"
EVAL_REASON = ("gang eval-16x4: 1/4 placeable (minCount 4) in topology.kubernetes.io/zone us-east-1b (best of 2 "
               "domains): 4 nvidia.com/gpu free on the 3 node(s) passing every other filter (at most 4 on one), 16 "
               "needed; 0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient nvidia.com/gpu.")
"""The built-in example's gang that fits in no zone: us-east-1b comes closest, short of GPUs alone."""
EVAL_PREEMPTION = ("pod group preemption: Preemption is not helpful for scheduling (no fit even with all 3 "
                   "lower-priority pods evicted: research/finetune-lora-7-5rq2w, research/nb-research-0, "
                   "batch/eval-suite-4-0-xk5mb; 17 pod(s) of its priority or higher hold room on the nodes it may use "
                   "and are not preempted)")
"""What preemption found for it: the root's reason, on its pods and on the group (as ``run``'s condition says)."""


def run(*paths: Path, scoring: str = "pack", preemption: bool = True) -> Simulation:
    return simulate(load(paths), "gang-scheduler", SolverConfig(scoring=scoring),  # type: ignore[arg-type]
                    preemption)


def status(sim: Simulation) -> dict[str, str]:
    return {g.key.name: g.status for g in sim.groups}


def placements(sim: Simulation, group: str) -> dict[str, str]:
    return next(g.placements for g in sim.groups if g.key.name == group)


def zone_of(node: str) -> str:
    return "dc1-hall-a" if int(node.split("-")[1]) <= 8 else "dc1-hall-b"


def test_builtin_example_places_both_gangs_in_different_zones_and_rejects_the_third() -> None:
    sim = run(example_path())
    assert status(sim) == {
        "llm-pretrain-6f7c9-workers-2rl42": "Scheduled",
        "train-llm-workload-root": "Scheduled",
        "train-llm-workers": "Scheduled",
        "train-llm-driver": "Scheduled",
        "eval-16x4": "Unschedulable",
    }
    pretrain = placements(sim, "llm-pretrain-6f7c9-workers-2rl42")
    assert len(pretrain) == 8 and all(n.startswith("gpu-a") for n in pretrain.values())
    workers = placements(sim, "train-llm-workers")
    assert len(workers) == 4 and all(n.startswith("gpu-b1-") for n in workers.values())
    assert all(n.startswith(("gpu-b1-", "gpu-b2-1")) for n in placements(sim, "train-llm-driver").values())
    assert placements(sim, "eval-16x4") == {}
    pods = {p.pod.metadata.name: p for p in sim.pods}
    assert pods["notebook-prep"].node == "cpu-m5-1"
    reason = next(g.reason for g in sim.groups if g.key.name == "eval-16x4")
    assert reason == f"{EVAL_REASON} {EVAL_PREEMPTION}"


def test_fragmented_cluster_gang_found_by_slot_counting_not_first_fit() -> None:
    sim = run(FRAGMENTED)
    ddp = placements(sim, "ddp-8x2")
    assert sorted(ddp.values()) == [f"dgx-{i:02d}" for i in range(9, 17)]  # one member per hall-b node
    sweep = placements(sim, "sweep-4x3")
    assert len(sweep) == 4 and set(sweep.values()) <= {"dgx-01", "dgx-02", "dgx-03", "dgx-05", "dgx-06"}


EXTRA_NO_PACKING = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: big-6x4, namespace: ml-team, creationTimestamp: "2026-11-29T09:00:00Z"}
spec:
  schedulingPolicy: {gang: {minCount: 6}}
  priority: 200000
"""
POD = """
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml-team, creationTimestamp: "2026-11-29T09:00:00Z"}}
spec:
  schedulerName: gang-scheduler
  {group}
  tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
  containers:
  - name: main
    image: example.com/train:1
    resources:
      requests: {{cpu: "4", memory: 16Gi, nvidia.com/gpu: "{gpu}"}}
      limits: {{nvidia.com/gpu: "{gpu}"}}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_fragmented_free_gpus_sum_to_enough_but_no_packing_exists(tmp_path: Path) -> None:
    """34 GPUs free, a 6x4 gang needs 24, but no node has 4 free: nothing of it is placed; small pods still are."""
    text = EXTRA_NO_PACKING + "".join(
        POD.format(name=f"big-{i}", group="schedulingGroup: {podGroupName: big-6x4}", gpu=4) for i in range(6))
    text += "".join(POD.format(name=f"nb-extra-{i}", group="", gpu=1) for i in range(2))
    sim = run(FRAGMENTED, _write(tmp_path, "extra.yaml", text), preemption=False)  # packing alone
    assert status(sim)["big-6x4"] == "Unschedulable"
    assert placements(sim, "big-6x4") == {}
    pods = {p.pod.metadata.name: p for p in sim.pods}
    assert all(pods[f"big-{i}"].node is None for i in range(6))
    assert pods["big-0"].reason == (
        "gang big-6x4: 0/6 placeable (minCount 6); 0/16 nodes are available: 16 Insufficient nvidia.com/gpu.")
    assert pods["nb-extra-0"].node is not None and pods["nb-extra-1"].node is not None


TWO_GANGS = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: ml-team, creationTimestamp: "{created}"}}
spec:
  schedulingPolicy: {{gang: {{minCount: 8}}}}
  schedulingConstraints: {{topology: [{{key: topology.kubernetes.io/zone}}]}}
  priority: 300000
"""


def test_two_gangs_that_fit_alone_but_not_together_exactly_one_is_placed_whole(tmp_path: Path) -> None:
    text = ""
    for gang, created in (("first", "2026-11-29T08:00:00Z"), ("second", "2026-11-29T08:00:01Z")):
        text += TWO_GANGS.format(name=gang, created=created)
        text += "".join(POD.format(name=f"{gang}-{i}", group=f"schedulingGroup: {{podGroupName: {gang}}}", gpu=2)
                        for i in range(8))
        text += "\n---\n"
    path = _write(tmp_path, "two.yaml", text)
    for alone in ("first", "second"):  # each fits alone: drop the other's objects
        kept = "---".join(d for d in text.split("---") if f"name: {alone}" in d or f"podGroupName: {alone}" in d)
        solo = run(FRAGMENTED, _write(tmp_path, f"{alone}.yaml", kept))
        assert status(solo)[alone] == "Scheduled"
    sim = run(FRAGMENTED, path, preemption=False)  # all or nothing between two gangs, no evictions
    assert status(sim)["first"] == "Scheduled" and len(placements(sim, "first")) == 8
    assert status(sim)["second"] == "Unschedulable" and placements(sim, "second") == {}
    assert {zone_of(n) for n in placements(sim, "first").values()} == {"dc1-hall-b"}


@pytest.mark.parametrize("scoring", ["pack", "spread"])
def test_scoring_strategies_both_respect_all_or_nothing(scoring: str) -> None:
    sim = run(FRAGMENTED, scoring=scoring)
    for g in sim.groups:
        assert (g.status == "Scheduled") == bool(g.placements)


def test_builtin_example_text_report_lists_the_pods_left_pending() -> None:
    text = render_text(run(example_path(), preemption=False)).splitlines()  # the reason without preemption's
    start = text.index("Pods left pending (4):")
    assert text[start + 1:start + 3] == [  # the reason once for the gang
        "  PodGroup ml-team/eval-16x4, 4 pod(s): eval-16x4-0, eval-16x4-1, eval-16x4-2, eval-16x4-3",
        f"    {EVAL_REASON}"]
    assert not any(line.startswith(("note:", "warning:")) for line in text)


def test_dra_objects_are_read_and_claims_decide_the_devices() -> None:
    """The DRA-only p4d node and gang (c): every resource.k8s.io/v1 object is read, none skipped, and the
    gang is judged with its claims (here it needs a rack label the node lacks)."""
    sim = run(DATA / "nodes" / "a100-8gpu-eks-p4d-dra.yaml", DATA / "workloads" / "c-podgroup-shared-claims.yaml")
    assert not any(kind.startswith("resource.k8s.io/") for kind in sim.skipped)
    assert sim.allocations == [] and sim.dra_problems == []
    text = render_text(sim).splitlines()
    assert not any(line.startswith("warning:") for line in text)
    assert "  [FAIL] PodGroup ml-team/allreduce-bench  (gang minCount 4, priority 50000)" in text
