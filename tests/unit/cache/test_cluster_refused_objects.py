"""ClusterCache with objects the API server would refuse: each is left out with a
warning naming the field, the informer call does not raise, and the rest of the cluster is cached."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey

GPU = "nvidia.com/gpu"


def node(name: str, cpu: Any = "8", gpus: Any = "2") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "110", GPU: gpus}}}


def pod(name: str, gpus: Any, node_name: str = "n0") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": node_name,
                     "containers": [{"name": "main", "resources": {"requests": {GPU: gpus}}}]},
            "status": {"phase": "Running"}}


def podgroup(name: str, min_count: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


@pytest.mark.parametrize(
    ("kind", "good", "bad", "warning"),
    [
        pytest.param("Pod", pod("ok", "1"), pod("hog", "-6"),
                     'ignoring malformed Pod ml/hog: spec.containers[0].resources.requests.nvidia.com/gpu: must be '
                     'greater than or equal to 0 (got "-6")', id="bound-pod-with-a-negative-request"),
        pytest.param("Node", node("n0"), node("n1", cpu="-4"),
                     'ignoring malformed Node /n1: status.allocatable.cpu: must be greater than or equal to 0 '
                     '(got "-4")', id="node-with-negative-allocatable"),
        pytest.param("PodGroup", podgroup("g", 2), podgroup("h", "2"),
                     'ignoring malformed PodGroup ml/h: spec.schedulingPolicy.gang.minCount: must be a valid '
                     'integer (got "2")', id="podgroup-with-a-string-min-count"),
    ],
)
def test_a_refused_object_is_logged_by_field_and_left_out(kind: str, good: dict[str, Any], bad: dict[str, Any],
                                                          warning: str, caplog: pytest.LogCaptureFixture) -> None:
    cache = ClusterCache("gang-scheduler")
    with caplog.at_level(logging.WARNING, logger="scheduler.cache.cluster"):
        cache.replace(kind, [good])
        cache.apply(kind, "ADDED", bad)  # runs inside an informer: must not raise
    assert [r.getMessage() for r in caplog.records] == [warning]
    assert [obj.metadata.name for obj in cache.objects[kind].values()] == [good["metadata"]["name"]]


def test_a_negative_request_frees_no_capacity_on_its_node() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [node("n0", gpus="2")])
    cache.replace("Pod", [pod("ok", "1"), pod("hog", "-6")])
    snapshot = cache.snapshot()
    assert int(snapshot.free()[0, snapshot.table.column[GPU]]) == 1


def member(name: str, group: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}}


def test_the_pods_of_a_refused_podgroup_are_told_it_is_invalid_until_it_is_fixed_or_deleted() -> None:
    """The API server refused nothing (a newer or laxer one), the cache refused the PodGroup: its pods wait for it,
    and say it is invalid, not that it does not exist; deleted, it is awaited again; fixed, they are its members."""
    cache = ClusterCache("gang-scheduler")
    cache.replace("Pod", [member("w-0", "g")])
    cache.apply("PodGroup", "ADDED", podgroup("g", "2"))

    def orphan() -> str | None:
        cache.take_changed_roots()
        found = cache.groups.orphans.get("ml/w-0")
        return found.message if found is not None else None

    assert orphan() == ('PodGroup ml/g is invalid: spec.schedulingPolicy.gang.minCount: must be a valid '
                        'integer (got "2")')
    cache.apply("PodGroup", "DELETED", podgroup("g", "2"))
    assert orphan() == "waiting for PodGroup ml/g to appear"
    cache.apply("PodGroup", "ADDED", podgroup("g", "2"))
    cache.apply("PodGroup", "MODIFIED", podgroup("g", 1))
    assert orphan() is None
    assert cache.groups.absent == {}


def test_a_gang_short_of_a_member_the_cache_refused_names_it_until_it_is_fixed_or_deleted() -> None:
    """A member refused as invalid (a request the API server would refuse) leaves its gang short: the gang's reason
    names it, not only how many pods exist; fixed, it is a member; deleted, the gang is merely short."""
    bad = member("w-0", "g")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-1"
    cache = ClusterCache("gang-scheduler")
    cache.replace("PodGroup", [podgroup("g", 2)])
    cache.replace("Pod", [member("w-1", "g")])
    cache.apply("Pod", "ADDED", bad)

    def reason() -> str:
        tree = cache.tree(GroupKey("PodGroup", "ml", "g"))
        assert tree is not None
        return tree.message

    assert reason() == ('gang g: 1/2 pods exist (minCount 2); pod ml/w-0 is invalid: spec.containers[0].resources.'
                        'requests.cpu: must be greater than or equal to 0 (got "-1")')
    cache.apply("Pod", "DELETED", bad)
    assert reason() == "gang g: 1/2 pods exist (minCount 2)"
    cache.apply("Pod", "ADDED", bad)
    cache.apply("Pod", "MODIFIED", member("w-0", "g"))
    assert cache.groups.refused_members == {}
    assert reason() == ""


def test_a_member_decoded_before_its_bad_quantity_is_found_is_named_with_its_field() -> None:
    """The live client decodes a pod into its model, whose quantities are read later: a request that is no quantity
    is found then, and the refusal still names the field and the gang it leaves short."""
    bad = member("w-0", "g")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1e3m"
    cache = ClusterCache("gang-scheduler")
    cache.replace("PodGroup", [podgroup("g", 2)])
    cache.replace("Pod", [member("w-1", "g")])
    cache.apply("Pod", "ADDED", Pod.model_validate(bad))
    tree = cache.tree(GroupKey("PodGroup", "ml", "g"))
    assert tree is not None
    assert tree.message == ("gang g: 1/2 pods exist (minCount 2); pod ml/w-0 is invalid: spec.containers[0].resources."
                            "requests.cpu: invalid quantity '1e3m': does not match <signedNumber><suffix>")


def test_a_relist_ends_what_it_no_longer_holds_and_keeps_what_it_refuses_again() -> None:
    """Objects refused, then deleted while the watch was down, leave nothing behind after the re-list; a PodGroup the
    re-list finds gone bad has its stored copy deleted and its pods told it is invalid."""
    bad_pod = member("w-0", "g")
    bad_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-1"
    cache = ClusterCache("gang-scheduler")
    cache.replace("PodGroup", [podgroup("g", 2), podgroup("h", "2"), podgroup("k", 1)])
    cache.replace("Pod", [bad_pod, member("w-1", "g"), member("h-0", "h"), member("k-0", "k")])
    assert cache.groups.refused_members and cache.groups.absent
    cache.replace("Pod", [member("w-1", "g"), member("h-0", "h"), member("k-0", "k")])
    cache.replace("PodGroup", [podgroup("g", 2), podgroup("k", "1")])
    cache.take_changed_roots()
    assert cache.groups.refused_members == {}
    assert cache.groups.orphans["ml/h-0"].message == "waiting for PodGroup ml/h to appear"
    assert cache.groups.orphans["ml/k-0"].message == ('PodGroup ml/k is invalid: spec.schedulingPolicy.gang.minCount: '
                                                      'must be a valid integer (got "1")')
    assert "ml/k" not in cache.objects["PodGroup"]


def test_a_group_deleted_after_it_went_bad_leaves_no_copy_behind() -> None:
    """A PodGroup stored, then changed into something the cache refuses (the stored copy stays), then deleted: the
    DELETED event, which carries the bad object, still deletes the stored copy; its pod waits for it to appear."""
    cache = ClusterCache("gang-scheduler")
    cache.replace("Pod", [member("w-0", "g")])
    cache.apply("PodGroup", "ADDED", podgroup("g", 1))
    cache.apply("PodGroup", "MODIFIED", podgroup("g", "1"))
    assert "ml/g" in cache.objects["PodGroup"]
    cache.apply("PodGroup", "DELETED", podgroup("g", "1"))
    cache.take_changed_roots()
    assert "ml/g" not in cache.objects["PodGroup"]
    assert cache.groups.orphans["ml/w-0"].message == "waiting for PodGroup ml/g to appear"
