"""A pod update the scheduler does not read (its own ``PodScheduled=False`` write) rebuilds the pod's tree with the new
pod object without reporting the root as changed; :meth:`ClusterCache.take_quiet_roots` names it, so what holds the
old tree (a root parked in the queue) can take the new one and the replaced pod objects are let go."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.framework.plan import Plan
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.model.coscheduling import CACHE_KIND, POD_GROUP_LABEL
from scheduler.model.scheduling import GroupKey

ROOT = GroupKey("PodGroup", "ml", "g")


def member(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": "g"},
                     "containers": [{"name": "main", "resources": {"requests": {"cpu": "100"}}}]},
            "status": {"phase": "Pending"}}


def test_a_status_the_scheduler_wrote_rebuilds_the_tree_quietly() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}])
    cache.replace("PodGroup", [{"metadata": {"name": "g", "namespace": "ml"},
                                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}])
    cache.replace("Pod", [member("g-0"), member("g-1")])
    assert ROOT in cache.take_changed_roots()
    cache.take_quiet_roots()
    before = cache.tree(ROOT)
    assert before is not None

    reported = copy.deepcopy(member("g-0"))
    reported["metadata"]["resourceVersion"] = "2"
    reported["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": "gang g: 0/2 placeable (minCount 2)"}]
    cache.apply("Pod", "MODIFIED", reported)

    assert cache.take_changed_roots() == set()
    assert cache.take_quiet_roots() == {ROOT}
    after = cache.tree(ROOT)
    assert after is not None and after is not before
    assert {p.metadata.resource_version for p in after.pods()} == {"1", "2"}
    assert cache.take_quiet_roots() == set()


def gang(pods: list[str]) -> ClusterCache:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}])
    cache.replace("PodGroup", [podgroup("1")])
    cache.replace("Pod", [member(name) for name in pods])
    cache.take_changed_roots()
    cache.take_quiet_roots()
    return cache


def podgroup(rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ml", "uid": "uid-g", "resourceVersion": rv},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


def intent(*names: str, at: str = "2026-01-01T00:00:00.000000+00:00", node: str = "n0") -> str:
    """The durable intent a Binding carries (``scheduler.groups.intent``) naming ``node`` for each of ``names``."""
    return json.dumps({"plan": "t1", "at": at,
                       "pods": {name: {"node": node, "uid": f"uid-{name}"[:8]} for name in names}})


def bound_member(name: str, value: str | None, node: str = "n0") -> dict[str, Any]:
    """``member(name)`` bound to ``node`` by a Binding carrying the intent ``value`` (None: none)."""
    pod = member(name)
    pod["spec"]["nodeName"] = node
    pod["metadata"]["resourceVersion"] = "2"
    if value is not None:
        pod["metadata"]["annotations"] = {INTENT_ANNOTATION: value}
    return pod


def assume(cache: ClusterCache, *names: str) -> None:
    placements = []
    for name in names:
        pod = cache.pod(f"ml/{name}")
        assert pod is not None
        placements.append((pod, "n0"))
    cache.assume(Plan(ROOT, tuple(placements), frozenset({ROOT})), token="t1")


def test_members_forgotten_after_a_bind_are_held_the_nodes_its_intent_names() -> None:
    """The bind's watch event brings the plan the Binding carried: members pending again later (their plan
    forgotten after one bind) are held the nodes it names."""
    cache = gang(["g-0", "g-1", "g-2"])
    assume(cache, "g-0", "g-1", "g-2")
    cache.take_changed_roots()

    cache.apply("Pod", "MODIFIED", bound_member("g-0", intent("g-0", "g-1", "g-2")))
    cache.forget(["ml/g-1", "ml/g-2"])

    tree = cache.tree(ROOT)
    assert tree is not None and tree.partial
    assert sorted((p.key, node) for p, node, _ in cache.holds[ROOT]) == [("ml/g-1", "n0"), ("ml/g-2", "n0")]


def test_a_member_bound_without_an_intent_holds_nothing() -> None:
    """A gang bound below its minimum by someone else (no intent on its bound member) holds no room."""
    cache = gang(["g-0", "g-1"])
    cache.apply("Pod", "MODIFIED", bound_member("g-0", None))
    tree = cache.tree(ROOT)
    assert tree is not None and tree.partial and ROOT not in cache.holds


def running(name: str, phase: str, rv: str, *, coscheduling: bool = False, both: bool = False) -> dict[str, Any]:
    """Member ``name`` bound to n0 in ``phase``; ``coscheduling``: linked to scheduler-plugins' PodGroup ``g`` by its
    label instead of ``spec.schedulingGroup``; ``both``: by both."""
    pod = member(name)
    pod["metadata"]["resourceVersion"] = rv
    pod["spec"]["nodeName"] = "n0"
    pod["status"]["phase"] = phase
    if coscheduling or both:
        pod["metadata"]["labels"] = {POD_GROUP_LABEL: "g"}
    if coscheduling and not both:
        del pod["spec"]["schedulingGroup"]
    return pod


def started_gang(*, coscheduling: bool = False) -> ClusterCache:
    """A gang of two members, both bound to n0 and being started by their kubelet (``Pending``)."""
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}])
    if coscheduling:
        cache.replace(CACHE_KIND, [{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                    "metadata": {"name": "g", "namespace": "ml", "uid": "uid-g"},
                                    "spec": {"minMember": 2}}])
    else:
        cache.replace("PodGroup", [podgroup("1")])
    cache.replace("Pod", [running(n, "Pending", "1", coscheduling=coscheduling) for n in ("g-0", "g-1")])
    cache.take_changed_roots()
    cache.take_quiet_roots()
    return cache


def test_a_member_the_kubelet_starts_changes_nothing_the_scheduler_reads() -> None:
    """``Pending`` → ``Running`` is read by nothing but the running count of a scheduler-plugins PodGroup's status:
    for a ``scheduling.k8s.io`` PodGroup's member the tree is rebuilt quietly, and no cluster event is made."""
    cache = started_gang()

    assert cache.apply("Pod", "MODIFIED", running("g-0", "Running", "2")) == []

    assert cache.take_changed_roots() == set()
    assert cache.take_quiet_roots() == {ROOT}
    tree = cache.tree(ROOT)
    assert tree is not None and {p.metadata.name: p.status.phase for p in tree.pods()}["g-0"] == "Running"


def test_a_scheduler_plugins_member_the_kubelet_starts_changes_its_root() -> None:
    """A scheduler-plugins PodGroup's status counts its running members: its root is reported changed, so the status
    writer counts them again."""
    cache = started_gang(coscheduling=True)

    assert cache.apply("Pod", "MODIFIED", running("g-0", "Running", "2", coscheduling=True)) != []

    assert cache.take_changed_roots() == {ROOT}
    assert cache.groups.members.counts("ml", "g").running == 1


def test_a_member_linked_both_ways_the_kubelet_starts_changes_its_root() -> None:
    """A pod whose ``spec.schedulingGroup`` and scheduler-plugins label both name ``g`` is counted by that PodGroup's
    status (as scheduler-plugins counts it, by the label) when only the scheduler-plugins PodGroup exists."""
    cache = started_gang(coscheduling=True)
    cache.apply("Pod", "MODIFIED", running("g-1", "Pending", "2", both=True))
    cache.take_changed_roots()

    assert cache.apply("Pod", "MODIFIED", running("g-1", "Running", "3", both=True)) != []

    assert cache.take_changed_roots() == {ROOT}


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_member_that_finished_changes_its_root(phase: str) -> None:
    cache = started_gang()
    cache.apply("Pod", "MODIFIED", running("g-0", "Running", "2"))
    cache.take_changed_roots()

    assert cache.apply("Pod", "MODIFIED", running("g-0", phase, "3")) != []

    assert cache.take_changed_roots() == {ROOT}


def test_a_lone_pod_the_kubelet_starts_makes_no_event() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}])
    lone = running("lone", "Pending", "1")
    del lone["spec"]["schedulingGroup"]
    cache.replace("Pod", [lone])

    lone = copy.deepcopy(lone)
    lone["metadata"]["resourceVersion"] = "2"
    lone["status"]["phase"] = "Running"
    assert cache.apply("Pod", "MODIFIED", lone) == []


def test_a_quiet_pod_update_is_in_the_next_snapshot() -> None:
    """What no tree nor hint reads may still be read from a snapshot's pods — the start time preemption orders victims
    by — so the snapshot after a quiet update holds the new pod."""
    cache = started_gang()
    before = cache.snapshot()
    started = running("g-0", "Pending", "2")
    started["status"]["startTime"] = "2026-01-01T01:00:00Z"

    assert cache.apply("Pod", "MODIFIED", started) == []

    after = cache.snapshot()
    assert after is not before
    [pod] = [p for info in after.infos for p in info.pods.values() if p.metadata.name == "g-0"]
    assert pod.status.start_time is not None and pod.metadata.resource_version == "2"
