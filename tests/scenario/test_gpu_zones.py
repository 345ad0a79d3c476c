"""A new user's snapshot (``tests/data/clusters/gpu-zones-cluster.yaml``): what ``simulate`` tells them must be true.

Two zones of four tainted 8-GPU nodes; three zone-pinned gangs of 8: one that preempts a low-priority gang, one
with one-pod-per-node anti-affinity, one whose pods lack the taint's toleration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import render_text, to_json
from scheduler.offline.simulate import Simulation, example_path, simulate
from tests.scenario.conftest import DATA

CLUSTER = DATA / "clusters" / "gpu-zones-cluster.yaml"
ZONE = "topology.kubernetes.io/zone"


def run() -> Simulation:
    return simulate(load([CLUSTER]), "gang-scheduler", SolverConfig())


def pod_reasons(sim: Simulation, group: str) -> set[str | None]:
    return {p.reason for p in sim.pods if p.pod.group_name == group}


def test_a_gang_lacking_the_taints_toleration_is_told_so_not_that_the_zone_lacks_memory() -> None:
    assert pod_reasons(run(), "eval-notol") == {
        f"gang eval-notol: 0/8 placeable (minCount 8) in {ZONE} us-west-2a (one of 2 domains); "
        "0/4 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: true}."}  # no preemption tried


def test_one_pod_per_node_is_the_reason_and_the_preemption_verdict_follows_it() -> None:
    """The zone also lacks GPUs for the whole gang (24 free, 32 needed), but the members stop at one per node; the
    notebook (priority 1) is the one pod preemption could evict, and evicting it would not help."""
    assert pod_reasons(run(), "sweep") == {
        f"gang sweep: 4/8 placeable (minCount 8) in {ZONE} us-west-2a (best of 2 domains); 0/4 nodes are "
        "available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match pod anti-affinity rules. Its own required "
        "pod anti-affinity allows one of these pods per kubernetes.io/hostname: at most 4 on the 4 node(s) it may use "
        "here, 8 needed. pod group "
        "preemption: Preemption is not helpful for scheduling (no fit even with the one lower-priority pod evicted: "
        "ml/notebook)"}


def group_status(sim: Simulation) -> dict[str, tuple[str, str | None]]:
    return {g.key.name: (g.status, g.reason) for g in sim.groups}


def test_a_gang_whose_pods_were_preempted_has_its_own_status_in_text_and_json() -> None:
    sim = run()
    assert group_status(sim) == {
        "pretrain": ("Scheduled", None),
        "sweep": ("Unschedulable", next(iter(pod_reasons(sim, "sweep")))),
        "eval-notol": ("Unschedulable", next(iter(pod_reasons(sim, "eval-notol")))),
        "batch-low": ("Preempted", "4 running pod(s) preempted by PodGroup ml/pretrain"),
        "serving": ("Scheduled", None),
    }
    doc = to_json(sim)
    assert [g["status"] for g in doc["groups"] if g["status"] != "Scheduled"] == [
        "Unschedulable", "Unschedulable", "Preempted"]  # what the README's jq filter keeps
    text = render_text(sim).splitlines()
    assert text[0] == "Groups: 2/5 scheduled, 1 preempted; pods: 8/24 placed"
    at = text.index("  [PREEMPTED] PodGroup ml/batch-low  (gang minCount 4, priority 10)")
    assert text[at + 1] == "         Preempted: 4 running pod(s) preempted by PodGroup ml/pretrain"
    at = text.index("  [OK  ] PodGroup ml/serving  (gang minCount 1, priority 2000)")  # serving-0 runs: no pod pending
    assert text[at + 1] == "         nothing to place: its bound members satisfy it"


def test_node_table_shows_what_was_added_and_what_was_evicted() -> None:
    """pretrain's 2 pods (8 cpu, 64Gi, 4 GPUs each) replaced batch-low's one (32 cpu, 256Gi, 8 GPUs) on each
    node of us-west-2b: the net change hides both (GPUs 8/8 before and after)."""
    sim = run()
    text = render_text(sim).splitlines()
    start = text.index("Node utilisation (used/allocatable after placement; +N = added by this run, "
                       "−N = evicted by its preemptions):")
    rows = {line.split()[0]: line.split()[1:] for line in text[start + 2:start + 10]}
    assert rows["gpu-b0"] == ["16/96", "+16", "−32", "17%", "128Gi/1Ti", "+128Gi", "−256Gi", "12%",
                              "8/8", "+8", "−8", "100%"]
    assert rows["gpu-a0"] == ["8/96", "8%", "64Gi/1Ti", "6%", "4/8", "50%"]  # serving-0, untouched
    (b0,) = [n for n in to_json(sim)["nodes"] if n["name"] == "gpu-b0"]
    assert b0["resources"]["nvidia.com/gpu"] == {"allocatable": 8, "used_before": 8, "used": 8, "added": 8,
                                                 "evicted": 8}


def test_pods_left_pending_give_each_gangs_reason_once_with_its_pod_names() -> None:
    sim = run()
    text = render_text(sim).splitlines()
    start = text.index("Pods left pending (16):")
    (sweep,), (notol,) = pod_reasons(sim, "sweep"), pod_reasons(sim, "eval-notol")
    assert text[start + 1:start + 5] == [
        "  PodGroup ml/sweep, 8 pod(s): " + ", ".join(f"sweep-{i}" for i in range(8)),
        f"    {sweep}",
        "  PodGroup ml/eval-notol, 8 pod(s): " + ", ".join(f"eval-notol-{i}" for i in range(8)),
        f"    {notol}",
    ]
    doc = to_json(sim)
    assert sum(p["node"] is None for p in doc["pods"]) == 16  # per-pod entries stay
    assert doc["pending"] == [
        {"namespace": "ml", "group": "sweep", "pods": [f"sweep-{i}" for i in range(8)], "reason": sweep},
        {"namespace": "ml", "group": "eval-notol", "pods": [f"eval-notol-{i}" for i in range(8)], "reason": notol},
    ]


@pytest.mark.parametrize("files", [
    pytest.param([CLUSTER], id="preemption-swaps-pods"),
    pytest.param([example_path()], id="builtin-example"),
    pytest.param([DATA / "clusters" / "small-gpu-cluster.yaml", DATA / "workloads" / "c-podgroup-shared-claims.yaml"],
                 id="dra-extended-resources"),
    pytest.param([DATA / "clusters" / "inter-pod-cluster.yaml"], id="inter-pod-rules"),
])
def test_what_was_added_and_evicted_accounts_for_the_change_of_every_node(files: list[Path]) -> None:
    doc = to_json(simulate(load(files), "gang-scheduler", SolverConfig()))
    for node in doc["nodes"]:
        for resource, n in node["resources"].items():
            assert n["used"] == n["used_before"] + n["added"] - n["evicted"], (node["name"], resource, n)
