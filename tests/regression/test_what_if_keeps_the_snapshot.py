"""Preemption's what-if snapshots keep everything of the cycle's snapshot but the removed pods.

``WhatIf.snapshot`` was written before the storage view, namespace labels and the inter-pod index were
part of a snapshot, and built its what-ifs without them: a preemptor that mounts a claim found its
claim missing in every what-if, and one whose affinity selects namespaces by label matched no
namespace, so neither could ever make room. (It also re-indexed every running pod per what-if, which
made victim selection 3× slower: docs/benchmarks.md.)
"""

from __future__ import annotations

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import CycleRunner
from scheduler.framework import Preemption, SolverConfig
from scheduler.model import Namespace, Pod
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import pvc, storage_class, with_volumes


def full_node_cache(preemptor: Pod, *others: Pod) -> ClusterCache:
    """One 4-cpu node filled by a low-priority 2-pod gang (``low``), the 1-pod high-priority gang ``high``
    of ``preemptor`` and the pods ``others``."""
    cache = ClusterCache("gang-scheduler")
    cache.load("Node", [node("n0", cpu="4", memory="64Gi", labels={"kubernetes.io/hostname": "n0"})])
    cache.load("PodGroup", [pg("low", 2, namespace="ml"), pg("high", 1, namespace="ml", priority=100)])
    cache.load("Pod", [pod(f"low-{i}", cpu="2", group="low", namespace="ml", node_name="n0", phase="Running")
                       for i in range(2)] + [preemptor, *others])
    return cache


def decide(cache: ClusterCache) -> Preemption:
    attempt = CycleRunner(cache, SolverConfig(), (DefaultPreemption(CacheGroupView(cache)),)).attempt(
        GroupKey("PodGroup", "ml", "high"))
    assert attempt is not None and isinstance(attempt.decision, Preemption), attempt
    return attempt.decision


def test_a_preemptor_with_a_claim_makes_room() -> None:
    cache = full_node_cache(with_volumes(pod("high-0", cpu="2", group="high", namespace="ml"), "data"))
    cache.load("StorageClass", [storage_class()])
    cache.load("PersistentVolumeClaim", [pvc("data", namespace="ml")])
    decision = decide(cache)
    assert decision.plan is not None and [n for _, n in decision.plan.placements] == ["n0"]
    assert [p.metadata.name for p in decision.victims] == ["low-1"]  # one pod of low (disruptionMode single)


def test_a_preemptor_whose_affinity_selects_namespaces_by_label_makes_room() -> None:
    anchor = pod("cache-0", cpu="0", memory=None, namespace="data", node_name="n0", phase="Running",
                 scheduler="default-scheduler", labels={"app": "cache"}, priority=1000)  # not a candidate victim
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "cache"}}, "namespaceSelector": {"matchLabels": {"team": "a"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    cache = full_node_cache(pod("high-0", cpu="2", group="high", namespace="ml", affinity=affinity), anchor)
    cache.load("Namespace", [Namespace.model_validate({"metadata": {"name": "data", "labels": {"team": "a"}}})])
    decision = decide(cache)
    assert decision.plan is not None and [n for _, n in decision.plan.placements] == ["n0"]
    assert [p.metadata.name for p in decision.victims] == ["low-1"]  # never the anchor
