"""A pod update the scheduler does not read (its own ``PodScheduled=False`` write) rebuilds the pod's tree with the new
pod object without reporting the root as changed; :meth:`ClusterCache.take_quiet_roots` names it, so what holds the
old tree (a root parked in the queue) can take the new one and the replaced pod objects are let go."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.cache.cluster import ClusterCache
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
