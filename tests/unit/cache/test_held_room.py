"""The room a partial gang holds, read from the durable intent on its bound members (``cache.cluster.held_room``):
from any member still carrying it when another is lost, from the latest plan naming each pod."""

from __future__ import annotations

from scheduler.cache.cluster import ClusterCache
from tests.unit.cache.test_quiet_rebuilds import ROOT, bound_member, intent, member, podgroup

LATER = "2026-01-01T00:05:00.000000+00:00"


def gang(*pods: dict[str, object], min_count: int = 4) -> ClusterCache:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [{"metadata": {"name": n}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
                           for n in ("n0", "n1")])
    group = podgroup("1")
    group["spec"]["schedulingPolicy"]["gang"]["minCount"] = min_count
    cache.replace("PodGroup", [group])
    cache.replace("Pod", list(pods))
    return cache


def held(cache: ClusterCache) -> list[tuple[str, str]]:
    cache.tree(ROOT)
    return sorted((pod.key, node) for pod, node, _ in cache.holds.get(ROOT, ()))


def test_a_carrier_lost_leaves_the_plan_on_the_others() -> None:
    plan = intent("g-0", "g-1", "g-2", "g-3")
    cache = gang(bound_member("g-0", plan), bound_member("g-1", plan), bound_member("g-2", None), member("g-3"))
    assert held(cache) == [("ml/g-3", "n0")]
    failed = bound_member("g-0", plan)
    failed["status"]["phase"] = "Failed"
    failed["metadata"]["resourceVersion"] = "3"
    cache.apply("Pod", "MODIFIED", failed)
    tree = cache.tree(ROOT)
    assert tree is not None and tree.partial
    assert held(cache) == [("ml/g-3", "n0")]


def test_the_latest_plan_holds_the_pods_it_names() -> None:
    """A first plan bound g-0 and g-1, then failed; the next put g-2 on n1 and bound it: g-3 is held where the next
    plan put it."""
    first, second = intent("g-0", "g-1", "g-2", "g-3"), intent("g-2", "g-3", at=LATER, node="n1")
    cache = gang(bound_member("g-0", first), bound_member("g-1", first), bound_member("g-2", second, node="n1"),
                 member("g-3"))
    assert held(cache) == [("ml/g-3", "n1")]
