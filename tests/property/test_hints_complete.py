"""Queueing hints never miss: a change after which a parked root is placeable fires a hint of a plugin that rejected it.

A root that found no placement, rejected only by plugins with hints, is parked until one of their hints says an event
may help (``scheduler/queue.py``); a hint that stays silent for an event that did help leaves the root waiting for
``--unschedulable-retry-s``. On random clusters (``tests/property/strategies.py``: nodes with GPUs, taints and
cordons, pods of another scheduler, gang trees with topology), every root is decided once in queue order — plans
assumed, as the driver does — then one change is made to a node or to another scheduler's pod, and every parked
root is decided again. Each one that is now placed must have been moved by the events since it was parked: the
change's and those of the plans assumed after it (their pods placed), as the driver routes them. A hint may fire
where nothing helped (it is kube's ``Queue`` answer, a superset); it must not stay silent where something did.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import CycleRunner
from scheduler.framework import Plan, SolverConfig, Unschedulable
from scheduler.framework.events import ClusterEvent
from scheduler.groups import TreeState
from scheduler.model import Node, Pod, PodGroup
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue
from scheduler.solver.plugins import QUEUEING_HINTS
from tests.property.inter_pod_strategies import APPS, inter_pod_clusters
from tests.property.strategies import Cluster, clusters

SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OURS = "gang-scheduler"


@st.composite
def changes(draw: st.DrawFn, c: Cluster) -> tuple[str, str, Any]:
    """One change to the cluster: ``(kind, watch event type, the object after, or before for a delete)``."""
    nodes = c.nodes
    background = [p for p in c.pods if p.spec.node_name]
    gangs = [g for g in c.podgroups
             if (gang := g.spec.scheduling_policy.gang) is not None and (gang.min_count or 0) > 1]
    ours = [p for p in c.pods if not p.spec.node_name]
    what = draw(st.sampled_from(["uncordon", "untaint", "taint", "relabel", "grow", "shrink", "add", "delete",
                                 *(["pod-gone", "pod-done", "pod-relabel"] if background else []),
                                 *(["gang-smaller"] if gangs else []), *(["pending-gone"] if ours else [])]))
    if what == "gang-smaller":  # minCount is mutable (v1beta1); kube requeues a group on a lower one
        raw = draw(st.sampled_from(gangs)).model_dump(by_alias=True, exclude_none=True, mode="json")
        gang = raw["spec"]["schedulingPolicy"]["gang"]
        gang["minCount"] = draw(st.integers(1, gang["minCount"] - 1))
        return "PodGroup", "MODIFIED", PodGroup.model_validate(raw)
    if what == "pending-gone":  # a pending pod of ours deleted: the room its gang would have needed is not needed
        return "Pod", "DELETED", draw(st.sampled_from(ours))
    if what.startswith("pod-"):
        pod = draw(st.sampled_from(background))
        if what == "pod-gone":
            return "Pod", "DELETED", pod
        raw = pod.model_dump(by_alias=True, exclude_none=True, mode="json")
        if what == "pod-done":
            raw["status"]["phase"] = "Succeeded"
        else:
            raw["metadata"]["labels"] = {"app": draw(st.sampled_from(APPS))}
        return "Pod", "MODIFIED", Pod.model_validate(raw)
    node = draw(st.sampled_from(nodes))
    if what == "delete":
        return "Node", "DELETED", node
    raw = node.model_dump(by_alias=True, exclude_none=True, mode="json")
    spec, labels, allocatable = raw.setdefault("spec", {}), raw["metadata"].setdefault("labels", {}), \
        raw["status"]["allocatable"]
    if what == "add":
        raw["metadata"]["name"] = labels["kubernetes.io/hostname"] = f"n{len(nodes)}"
        return "Node", "ADDED", Node.model_validate(raw)
    if what == "uncordon":
        spec["unschedulable"] = False
    elif what == "untaint":
        spec["taints"] = []
    elif what == "taint":
        spec["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    elif what == "relabel":
        labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(["z0", "z1", "z2"]))
        labels["topology.example.com/rack"] = draw(st.sampled_from(["r0", "r1", "r4"]))
        if draw(st.booleans()):
            del labels["topology.example.com/rack"]
    else:
        cpu = int(allocatable["cpu"])
        allocatable["cpu"] = str(cpu * 2 if what == "grow" else max(1, cpu // 2))
    return "Node", "MODIFIED", Node.model_validate(raw)


def load(c: Cluster) -> ClusterCache:
    cache = ClusterCache(OURS)
    cache.load("Node", c.nodes)
    cache.load("CompositePodGroup", c.composites)
    cache.load("PodGroup", c.podgroups)
    cache.load("Pod", c.pods)
    return cache


def roots(cache: ClusterCache) -> list[GroupKey]:
    """The READY roots, in queue order (priority, then age: all share one priority here)."""
    trees = [t for t in cache.forest().trees if t.state is TreeState.READY]
    return [t.key for t in sorted(trees, key=lambda t: (t.created, t.key.kind, t.key.namespace, t.key.name))]


@SETTINGS
@given(data=st.data(), c=clusters(max_nodes=5, max_roots=5))
def test_a_change_that_makes_a_parked_root_placeable_moves_it(data: st.DataObject, c: Cluster) -> None:
    """Nodes with GPUs, taints and cordons; gangs with topology."""
    check(data, load(c), changes(c))


@SETTINGS
@given(data=st.data(), c=inter_pod_clusters(max_nodes=5, max_roots=4))
def test_a_change_that_makes_a_parked_root_placeable_by_its_inter_pod_rules_moves_it(data: st.DataObject,
                                                                                    c: Cluster) -> None:
    """Pods of another scheduler and gangs with pod affinity and anti-affinity, topology spread and host ports."""
    check(data, load(c), changes(c))


def check(data: st.DataObject, cache: ClusterCache, change: st.SearchStrategy[tuple[str, str, Any]]) -> None:
    """Decide every root of ``cache`` in queue order, park those that found no placement, make one ``change``
    (kind, watch event type, object), decide the parked roots again and check each one now placed was moved."""
    runner = CycleRunner(cache, SolverConfig())
    queue = SchedulingQueue(hints=QUEUEING_HINTS)
    since: dict[GroupKey, list[ClusterEvent]] = {}  # parked root → the events routed since it was parked
    for key in roots(cache):
        attempt = runner.attempt(key)
        assert attempt is not None
        for seen in since.values():
            seen.extend(attempt.events)
        decision = attempt.decision
        if isinstance(decision, Unschedulable) and decision.rejectors and decision.rejectors <= QUEUEING_HINTS.keys():
            queue.backoff(attempt.tree, 0.0, decision.rejectors, unschedulable=True)
            since[key] = []
    cache.take_changed_roots()
    kind, event_type, obj = data.draw(change)
    events = cache.apply(kind, event_type, obj)
    rejected = {key: queue.backing_off[key].rejectors for key in since}
    moved = set()
    for key in cache.take_changed_roots() & since.keys():  # a change scoped to a root (its group or member), routed
        tree = cache.groups.trees.get(key)  # as the driver routes it: SchedulingQueue.update moves it back at once
        queue.update(tree, key, ready=tree is not None and tree.state is TreeState.READY)
        if key not in queue.backing_off:
            moved.add(key)
            event(f"a parked root moved by its own tree changing after {kind} {event_type}")
    for key in list(since):
        since[key].extend(events)
        if key in moved:
            continue
        again = runner.attempt(key)
        if again is None or not isinstance(again.decision, Plan):
            continue
        for seen in since.values():
            seen.extend(again.events)
        rejectors = rejected[key]
        event(f"a parked root placeable after {kind} {event_type}")
        fired = sorted(r for r in rejectors for e in since[key] if QUEUEING_HINTS[r](e))
        name = obj["metadata"]["name"] if isinstance(obj, dict) else getattr(obj, "key", obj.metadata.name)
        assert fired, (f"{key} is placeable after {kind} {event_type} {name}, "
                       f"but no hint of {sorted(rejectors)} fired on {[(e.kind, e.action.value) for e in since[key]]}")
