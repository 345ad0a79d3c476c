"""A new user's snapshot (``tests/data/clusters/gpu-zones-cluster.yaml``): what ``simulate`` tells them must be true.

Two zones of four tainted 8-GPU nodes; three zone-pinned gangs of 8: one that preempts a low-priority gang, one
with one-pod-per-node anti-affinity, one whose pods lack the taint's toleration.
"""

from __future__ import annotations

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.simulate import Simulation, simulate
from tests.scenario.conftest import DATA

CLUSTER = DATA / "clusters" / "gpu-zones-cluster.yaml"
ZONE = "topology.kubernetes.io/zone"


def run() -> Simulation:
    return simulate(load([CLUSTER]), "gang-scheduler", SolverConfig())


def pod_reasons(sim: Simulation, group: str) -> set[str | None]:
    return {p.reason for p in sim.pods if p.pod.group_name == group}


def test_a_gang_lacking_the_taints_toleration_is_told_so_not_that_the_zone_lacks_memory() -> None:
    assert pod_reasons(run(), "eval-notol") == {
        f"gang eval-notol: 0/8 placeable (minCount 8) in {ZONE} us-west-2a (closest of 2 domains); "
        "0/4 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: true}."}  # no preemption tried


def test_one_pod_per_node_is_the_reason_and_the_preemption_verdict_follows_it() -> None:
    """The zone also lacks GPUs for the whole gang (24 free, 32 needed), but the members stop at one per node; the
    notebook (priority 1) is the one pod preemption could evict, and evicting it would not help."""
    assert pod_reasons(run(), "sweep") == {
        f"gang sweep: 4/8 placeable (minCount 8) in {ZONE} us-west-2a (closest of 2 domains); 0/4 nodes are "
        "available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match pod anti-affinity rules.; pod group "
        "preemption: Preemption is not helpful for scheduling (no fit even with all 1 lower-priority pod(s) evicted)"}
