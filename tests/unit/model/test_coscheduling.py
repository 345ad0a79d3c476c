"""The scheduler-plugins adapter (``scheduler/model/coscheduling.py``): the CRD's shape, the one conversion to a
PodGroup, the pod label link, what is reported, and the status scheduler-plugins' controller would compute."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from scheduler.cache.cluster import ClusterCache
from scheduler.groups.tree import TreeState
from scheduler.model.coscheduling import (
    CACHE_KIND,
    CoscheduledPodGroup,
    CoschedulingPodGroup,
    CoschedulingPodGroupStatus,
    MemberCounts,
    desired_status,
    label_link,
    status_patch,
    to_podgroup,
    unhonoured_fields,
)
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def crd(name: str = "g", min_member: int | None = 2, namespace: str = "ml", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if min_member is not None:
        body["minMember"] = min_member
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"}, "spec": body}


def pod(name: str, *, label: str | None = "g", key: str = "scheduling.x-k8s.io/pod-group",
        scheduling_group: str | None = None, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if scheduling_group:
        spec["schedulingGroup"] = {"podGroupName": scheduling_group}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}",
                         "labels": {key: label} if label else {}},
            "spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(("min_member", "policy"), [
    pytest.param(3, {"gang": {"minCount": 3}}, id="minMember-is-the-gang-minCount"),
    pytest.param(1, {"gang": {"minCount": 1}}, id="minMember-1-is-a-gang-of-one"),
    pytest.param(0, {"basic": {}}, id="minMember-0-lets-members-through-one-by-one-as-Permit-does"),
    pytest.param(None, {"basic": {}}, id="minMember-unset-is-0"),
])
def test_to_podgroup_maps_min_member(min_member: int | None, policy: dict[str, Any]) -> None:
    pg = to_podgroup(CoschedulingPodGroup.model_validate(crd(min_member=min_member)))
    assert isinstance(pg, CoscheduledPodGroup)
    assert pg.spec.scheduling_policy.model_dump(by_alias=True, exclude_none=True) == policy
    assert (pg.api_version, pg.kind, pg.metadata.name, pg.metadata.uid) == (
        "scheduling.x-k8s.io/v1alpha1", "PodGroup", "g", "uid-g")


@pytest.mark.parametrize("bad", [
    pytest.param({"minMember": "2"}, id="minMember-string"),
    pytest.param({"minMember": 2**31}, id="minMember-beyond-int32"),
    pytest.param({"scheduleTimeoutSeconds": True}, id="timeout-boolean"),
])
def test_crd_values_the_server_refuses_are_refused(bad: dict[str, Any]) -> None:
    raw = crd(min_member=None, **bad)
    with pytest.raises(ValidationError):
        CoschedulingPodGroup.model_validate(raw)


@pytest.mark.parametrize(("labels", "link"), [
    pytest.param({"scheduling.x-k8s.io/pod-group": "a"}, "a", id="label"),
    pytest.param({"pod-group.scheduling.sigs.k8s.io": "b"}, "b", id="older-label"),
    pytest.param({"scheduling.x-k8s.io/pod-group": "a", "pod-group.scheduling.sigs.k8s.io": "b"}, "a",
                 id="label-before-older-label"),
    pytest.param({"scheduling.x-k8s.io/pod-group": ""}, None, id="empty-label-is-no-link"),
    pytest.param({}, None, id="no-label"),
])
def test_label_link(labels: dict[str, str], link: str | None) -> None:
    assert label_link(labels) == link


def test_scheduling_group_wins_over_the_label() -> None:
    p = Pod.model_validate(pod("p", label="x", scheduling_group="y"))
    assert (p.group_name, p.group_api) == ("y", "scheduling.k8s.io")
    p = Pod.model_validate(pod("p", label="x"))
    assert (p.group_name, p.group_api) == ("x", "scheduling.x-k8s.io")


def test_unhonoured_fields_name_each_field_set() -> None:
    plain = to_podgroup(CoschedulingPodGroup.model_validate(crd()))
    assert unhonoured_fields(plain) == []
    both = to_podgroup(CoschedulingPodGroup.model_validate(
        crd(minResources={"cpu": "4", "memory": "1Gi"}, scheduleTimeoutSeconds=30)))
    assert [path for path, _ in unhonoured_fields(both)] == ["spec.minResources", "spec.scheduleTimeoutSeconds"]
    assert "cpu=4, memory=1Gi" in unhonoured_fields(both)[0][1]


def status(**kw: Any) -> CoschedulingPodGroupStatus:
    return CoschedulingPodGroupStatus(**kw)


@pytest.mark.parametrize(("counts", "phase", "scheduled"), [
    pytest.param(MemberCounts(), "Pending", 0, id="no-members-Pending"),
    pytest.param(MemberCounts(pods=2), "Pending", 0, id="fewer-than-minMember-Pending"),
    pytest.param(MemberCounts(pods=3), "PreScheduling", 0, id="all-members-none-bound-PreScheduling"),
    pytest.param(MemberCounts(pods=3, bound=1), "Scheduling", 1, id="partly-bound-Scheduling"),
    pytest.param(MemberCounts(pods=3, bound=3), "Scheduled", 3, id="minMember-bound-Scheduled"),
    pytest.param(MemberCounts(pods=3, bound=3, running=3), "Running", 3, id="minMember-running-Running"),
    pytest.param(MemberCounts(pods=3, bound=3, running=2, failed=1), "Failed", 3, id="a-failed-member-Failed"),
    pytest.param(MemberCounts(pods=3, bound=3, succeeded=3), "Finished", 3, id="minMember-succeeded-Finished"),
])
def test_desired_status_phases(counts: MemberCounts, phase: str, scheduled: int) -> None:
    got = desired_status(status(), 3, counts, "ml/job-a", NOW)
    assert (got.phase, got.scheduled) == (phase, scheduled)
    assert got.occupied_by == ("" if phase == "Pending" else "ml/job-a")
    assert got.schedule_start_time == (NOW if counts.bound else None)


def test_desired_status_keeps_what_is_set_once() -> None:
    earlier = datetime(2026, 11, 1, tzinfo=UTC)
    current = status(phase="Scheduled", occupied_by="ml/old", schedule_start_time=earlier, scheduled=3)
    got = desired_status(current, 3, MemberCounts(pods=3, bound=3, running=3), "ml/new", NOW)
    assert (got.phase, got.occupied_by, got.schedule_start_time) == ("Running", "ml/old", earlier)


@pytest.mark.parametrize("phase", ["Finished", "Failed"])
def test_desired_status_leaves_a_terminal_phase(phase: str) -> None:
    current = status(phase=phase, succeeded=3)
    assert desired_status(current, 3, MemberCounts(), "", NOW) == current


def test_status_patch_is_the_crd_status_shape() -> None:
    got = status_patch(status(phase="Scheduled", scheduled=2, occupied_by="ml/j", schedule_start_time=NOW))
    assert got == {"phase": "Scheduled", "occupiedBy": "ml/j", "scheduled": 2, "running": 0, "succeeded": 0,
                   "failed": 0, "scheduleStartTime": "2026-12-01T15:00:00Z"}


def _cache(*objects: tuple[str, dict[str, Any]]) -> ClusterCache:
    cache = ClusterCache("gang-scheduler")
    for kind, raw in objects:
        cache.apply(kind, "ADDED", raw)
    cache.groups.refresh()
    return cache


def test_labelled_pods_are_a_gang_of_the_crd_group() -> None:
    cache = _cache((CACHE_KIND, crd(min_member=2)), ("Pod", pod("a")), ("Pod", pod("b")))
    tree = cache.groups.trees[GroupKey("PodGroup", "ml", "g")]
    assert tree.state is TreeState.READY
    pending = sorted(p.metadata.name for leaf in tree.root.leaves() for p in leaf.pending)
    assert (tree.root.min_count, pending) == (2, ["a", "b"])
    assert isinstance(cache.group("PodGroup", "ml", "g"), CoscheduledPodGroup)


def test_a_labelled_pod_without_its_group_waits_with_the_api_named() -> None:
    cache = _cache(("Pod", pod("a", label="missing")))
    assert [o.message for o in cache.groups.orphans.values()] == [
        "waiting for scheduling.x-k8s.io PodGroup ml/missing to appear"]


@pytest.mark.parametrize(("pods", "state"), [
    pytest.param([pod("a", label=None, scheduling_group="g"), pod("b", label=None, scheduling_group="g")],
                 TreeState.READY, id="workload-api-pods-join-the-workload-api-group"),
    pytest.param([pod("a"), pod("b")], TreeState.INVALID, id="labelled-pods-never-join-the-workload-api-group"),
    pytest.param([pod("a", label=None, scheduling_group="g"), pod("b")], TreeState.INVALID,
                 id="mixed-links-never-merge"),
])
def test_a_name_in_both_apis_is_never_merged(pods: list[dict[str, Any]], state: TreeState) -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ml", "uid": "w"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    cache = _cache((CACHE_KIND, crd(min_member=2)), ("PodGroup", workload), *[("Pod", p) for p in pods])
    tree = cache.groups.trees[GroupKey("PodGroup", "ml", "g")]
    assert tree.state is state
    if state is TreeState.INVALID:
        assert "the two kinds are never merged" in tree.message
    assert cache.group("PodGroup", "ml", "g").metadata.uid == "w"


def test_deleting_the_workload_api_group_hands_the_name_to_the_crd_group() -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ml", "uid": "w"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    cache = _cache((CACHE_KIND, crd(min_member=2)), ("PodGroup", workload), ("Pod", pod("a")), ("Pod", pod("b")))
    cache.apply("PodGroup", "DELETED", workload)
    cache.groups.refresh()
    assert cache.groups.trees[GroupKey("PodGroup", "ml", "g")].state is TreeState.READY


def test_member_counts_count_existing_pods_by_phase() -> None:
    cache = _cache((CACHE_KIND, crd(min_member=2)), ("Pod", pod("a", node="n1", phase="Running")),
                   ("Pod", pod("b", node="n1", phase="Succeeded")), ("Pod", pod("c", node="n2", phase="Failed")),
                   ("Pod", pod("d")))
    assert cache.groups.members.counts("ml", "g") == MemberCounts(pods=4, bound=3, running=1, succeeded=1, failed=1)
    cache.apply("Pod", "DELETED", pod("c", node="n2", phase="Failed"))
    assert cache.groups.members.counts("ml", "g") == MemberCounts(pods=3, bound=2, running=1, succeeded=1, failed=0)
