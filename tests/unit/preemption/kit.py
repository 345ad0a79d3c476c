"""Builders for preemption tests: a small cluster of API objects in a real ClusterCache, and one decision.

Objects are built from API-shaped dicts with the models (``tests.unit.solver.builders``,
``tests.unit.groups.builders``), loaded into the :class:`~scheduler.cache.cluster.ClusterCache` the
scheduler uses, and decided by the one cycle function (``schedule_one``) with the
:class:`~scheduler.preemption.DefaultPreemption` PostFilter over the cache's view — the path ``run``
and ``simulate`` take.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import schedule_one
from scheduler.framework import Decision, SolverConfig
from scheduler.groups import GroupTree
from scheduler.model import CompositePodGroup, Node, Pod, PodGroup, PriorityClass
from scheduler.model.dra import DeviceClass, ResourceSlice
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from tests.unit.groups.builders import NS, pg_dict
from tests.unit.solver.builders import node, pod

OURS = "gang-scheduler"


def group(name: str, min_count: int | None = None, priority: int | None = None, mode: str | None = None,
          parent: str | None = None, policy: str | None = None, priority_class: str | None = None) -> PodGroup:
    """A PodGroup (gang of ``min_count``, else basic) with ``disruptionMode`` ``mode`` and ``preemptionPolicy``."""
    body = pg_dict(name, min_count, parent=parent, priority=priority, priority_class=priority_class)
    if mode:
        body["spec"]["disruptionMode"] = {mode: {}}
    if policy:
        body["spec"]["preemptionPolicy"] = policy
    return PodGroup.model_validate(body)


def composite(name: str, min_group_count: int | None = None, priority: int | None = None, mode: str | None = None,
              policy: str | None = None) -> CompositePodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minGroupCount": min_group_count}} if min_group_count
                            else {"basic": {}}, "workloadRef": {"workloadName": "w", "templateName": name}}
    if priority is not None:
        spec["priority"] = priority
    if mode:
        spec["disruptionMode"] = {mode: {}}
    if policy:
        spec["preemptionPolicy"] = policy
    return CompositePodGroup.model_validate({"metadata": {"name": name, "namespace": NS,
                                                          "creationTimestamp": "2026-01-01T00:00:00Z"},
                                             "spec": spec})


def running(name: str, node_name: str, group_name: str | None = None, cpu: str = "1", priority: int | None = None,
            scheduler: str = OURS, started: str | None = None, labels: dict[str, str] | None = None,
            terminating: bool = False, conditions: Iterable[dict[str, Any]] = (), gpu: int = 0) -> Pod:
    """A Running pod bound to ``node_name`` (``status.startTime`` ``started``)."""
    p = pod(name, cpu=cpu, memory="1Gi", gpu=gpu, namespace=NS, node_name=node_name, scheduler=scheduler,
            group=group_name, phase="Running", priority=priority)
    raw = p.model_dump(by_alias=True, exclude_none=True, mode="json")
    if started:
        raw["status"]["startTime"] = started
    if labels:
        raw["metadata"]["labels"] = labels
    if terminating:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    raw["status"]["conditions"] = list(conditions)
    return Pod.model_validate(raw)


def pending(name: str, group_name: str | None = None, cpu: str = "1", priority: int | None = None,
            policy: str | None = None, nominated: str | None = None, gpu: int = 0) -> Pod:
    p = pod(name, cpu=cpu, memory="1Gi", gpu=gpu, namespace=NS, group=group_name, priority=priority)
    raw = p.model_dump(by_alias=True, exclude_none=True, mode="json")
    if policy:
        raw["spec"]["preemptionPolicy"] = policy
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return Pod.model_validate(raw)


def budget(name: str, selector: dict[str, Any] | None, allowed: int, disrupted: Iterable[str] = (),
           namespace: str = NS) -> PodDisruptionBudget:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return PodDisruptionBudget.model_validate({
        "metadata": {"name": name, "namespace": namespace}, "spec": spec,
        "status": {"disruptionsAllowed": allowed,
                   "disruptedPods": {d: "2026-01-01T00:00:00Z" for d in disrupted}}})


def nodes(n: int, cpu: str = "4", **kw: Any) -> list[Node]:
    return [node(f"n{i}", cpu=cpu, memory="64Gi", **kw) for i in range(n)]


@dataclass
class Cluster:
    """Objects of one test; :meth:`decide` schedules one root the way a cycle does."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)
    composites: list[CompositePodGroup] = field(default_factory=list)
    classes: list[PriorityClass] = field(default_factory=list)
    budgets: list[PodDisruptionBudget] = field(default_factory=list)
    awaiting: dict[GroupKey, tuple[str, ...]] = field(default_factory=dict)
    """Root → the victims chosen for it earlier still in the cluster (pod keys), as the live preemptor says."""
    dra: bool = False
    """A device view in the snapshot, as ``run`` always has (the DRA API served) and ``simulate`` with DRA objects."""
    device_classes: list[DeviceClass] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)

    def cache(self) -> ClusterCache:
        cache = ClusterCache(OURS, dra=self.dra)
        for kind, items in (("Node", self.nodes), ("PriorityClass", self.classes), ("PodGroup", self.groups),
                            ("CompositePodGroup", self.composites), ("DeviceClass", self.device_classes),
                            ("ResourceSlice", self.slices), ("Pod", self.pods),
                            ("PodDisruptionBudget", self.budgets)):
            cache.load(kind, items)
        return cache

    def decide(self, root: GroupKey | str, config: SolverConfig | None = None) -> tuple[GroupTree, Decision]:
        """The tree of ``root`` (a PodGroup name, or a key) and the cycle's decision for it."""
        key = root if isinstance(root, GroupKey) else GroupKey("PodGroup", NS, root)
        cache = self.cache()
        tree = cache.tree(key)
        assert tree is not None, f"no tree {key}"
        plugin = DefaultPreemption(CacheGroupView(cache, lambda k: self.awaiting.get(k, ())))
        return tree, schedule_one(tree, cache.snapshot(), config or SolverConfig(), [plugin])


def names(pods: Iterable[Pod]) -> list[str]:
    return sorted(p.metadata.name for p in pods)
