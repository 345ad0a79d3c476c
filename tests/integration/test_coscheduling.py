"""scheduler-plugins (Coscheduling) clusters against the emulator: ``scheduling.x-k8s.io/v1alpha1`` PodGroups (the
chart's vendored CRD, its schema enforced by ``crds.py``) and pods labelled ``scheduling.x-k8s.io/pod-group``.

A user migrating from Coscheduling changes only ``schedulerName``: the pods below are scheduler-plugins pods
otherwise. Their gangs are bound all or nothing, their status is scheduler-plugins' (phase, counters,
occupiedBy, scheduleStartTime), a labelled pod whose PodGroup does not exist waits with an Event, and a
scheduler-plugins PodGroup sharing a name with a workload-API one is never merged with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.client.kube import COSCHEDULING_PODGROUPS, EVENTS, PODGROUPS, PODS, ApiError, KubeClient
from scheduler.live.status_writer import StatusWriter
from scheduler.model.coscheduling import (
    POD_GROUP_LABEL,
    CoschedulingPodGroup,
    CoschedulingPodGroupStatus,
    to_podgroup,
)
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import (
    NS,
    bound,
    bound_at_least,
    conflicting,
    create_node,
    pod,
    podgroup,
    running,
    until,
)


def crd_podgroup(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": {"minMember": min_member, **spec}}


def labelled(name: str, group: str, cpu: str = "1", owner: str | None = None) -> dict[str, Any]:
    body = pod(name, None, cpu=cpu)
    body["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    if owner:
        body["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                                                "uid": f"uid-{owner}", "controller": True}]
    return body


async def create_labelled_gang(kube: KubeClient, name: str, n: int, min_member: int, cpu: str = "1",
                               **spec: Any) -> None:
    await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup(name, min_member, **spec))
    for i in range(n):
        await kube.create(PODS, NS, labelled(f"{name}-{i}", name, cpu=cpu, owner=f"{name}-job"))


async def crd_status(kube: KubeClient, name: str) -> dict[str, Any]:
    return dict((await kube.get(COSCHEDULING_PODGROUPS, NS, name)).get("status") or {})


async def events(kube: KubeClient, reason: str) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS)
    return [e for e in items if e.get("reason") == reason]


@pytest.mark.looptime
async def test_labelled_gang_is_bound_whole_and_its_status_is_scheduler_plugins(k8s: ApiServer,
                                                                                kube: KubeClient) -> None:
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="4")
    await create_labelled_gang(kube, "g", 6, 6)
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound")
        assert set(placed.values()) == {"n0", "n1"}
        status = await until(lambda: with_phase(kube, "g", "Scheduled"), what="phase Scheduled")
        assert (status["scheduled"], status["running"], status["succeeded"], status["failed"]) == (6, 0, 0, 0)
        assert status["occupiedBy"] == f"{NS}/g-job"
        assert status["scheduleStartTime"].endswith("Z")
        assert "conditions" not in status
        for i in range(6):  # the kubelet: the members run
            await kube.patch(PODS, NS, f"g-{i}", {"status": {"phase": "Running"}}, sub="status")
        status = await until(lambda: with_phase(kube, "g", "Running"), what="phase Running")
        assert (status["scheduled"], status["running"]) == (6, 6)
        for i in range(6):
            await kube.patch(PODS, NS, f"g-{i}", {"status": {"phase": "Succeeded"}}, sub="status")
        status = await until(lambda: with_phase(kube, "g", "Finished"), what="phase Finished")
        assert status["succeeded"] == 6


async def with_phase(kube: KubeClient, name: str, phase: str) -> dict[str, Any] | None:
    status = await crd_status(kube, name)
    return status if status.get("phase") == phase else None


@pytest.mark.looptime
async def test_labelled_gang_that_does_not_fit_binds_nothing_and_says_so(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_labelled_gang(kube, "g", 6, 6)
    async with running(kube):
        status = await until(lambda: with_phase(kube, "g", "PreScheduling"), what="phase PreScheduling")
        assert status["scheduled"] == 0
        failed = await until(lambda: regarding(events(kube, "FailedScheduling"), "PodGroup", "g"),
                             what="FailedScheduling on the PodGroup")
        assert failed["type"] == "Warning"
        assert "gang g: 4/6 placeable (minCount 6)" in failed["note"]
        assert failed["regarding"]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
        await asyncio.sleep(5)
        assert await bound(kube, "g-") == {}
        await create_node(kube, "n1", cpu="4")
        await until(lambda: bound_at_least(kube, "g-", 6), what="bound once a node is added")
        await until(lambda: with_phase(kube, "g", "Scheduled"), what="phase Scheduled")


async def regarding(coro: Any, kind: str, name: str) -> dict[str, Any] | None:
    return next((e for e in await coro if (e["regarding"]["kind"], e["regarding"]["name"]) == (kind, name)), None)


@pytest.mark.looptime
async def test_labelled_pod_whose_podgroup_does_not_exist_waits_with_an_event(k8s: ApiServer,
                                                                             kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    for i in range(2):
        await kube.create(PODS, NS, labelled(f"late-{i}", "late"))
    async with running(kube):
        event = await until(lambda: regarding(events(kube, "NotReadyForScheduling"), "Pod", "late-0"), what="event")
        assert event["note"] == f"waiting for scheduling.x-k8s.io PodGroup {NS}/late to appear"
        assert event["type"] == "Normal"
        await asyncio.sleep(3)
        assert await bound(kube, "late-") == {}
        await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("late", 2))
        await until(lambda: bound_at_least(kube, "late-", 2), what="bound once the PodGroup appears")


@pytest.mark.looptime
async def test_unhonoured_fields_are_an_event_on_the_podgroup(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_labelled_gang(kube, "g", 2, 2, minResources={"cpu": "2"}, scheduleTimeoutSeconds=30)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
        event = await until(lambda: regarding(events(kube, "UnhonouredField"), "PodGroup", "g"), what="event")
        assert "spec.minResources: cpu=2" in event["note"]
        assert "spec.scheduleTimeoutSeconds: 30" in event["note"]


@pytest.mark.looptime
async def test_a_name_in_both_apis_is_two_groups_never_merged(k8s: ApiServer, kube: KubeClient) -> None:
    """Both APIs served: the workload API's PodGroup ``g`` takes the pods linking it by ``spec.schedulingGroup``;
    the scheduler-plugins ``g``'s labelled pods are not folded into it (its tree is Invalid, nothing bound)."""
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("g", 2))
    for i in range(2):
        await kube.create(PODS, NS, pod(f"w-{i}", "g"))
    await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("g", 2))
    for i in range(2):
        await kube.create(PODS, NS, labelled(f"x-{i}", "g"))
    async with running(kube):
        await until(lambda: regarding(events(kube, "FailedScheduling"), "Pod", "x-0"), what="labelled pods refused")
        await asyncio.sleep(3)
        assert await bound(kube, "x-") == {}
        assert await bound(kube, "w-") == {}  # one tree of that name, Invalid while pods of both links join it
        for i in range(2):
            await kube.request("DELETE", PODS.path(NS, f"x-{i}"))
        await until(lambda: bound_at_least(kube, "w-", 2), what="the workload-API gang, alone again")


@pytest.mark.looptime
async def test_the_emulator_prunes_what_the_crd_lacks_and_refuses_bad_values(k8s: ApiServer, kube: KubeClient) -> None:
    """The fixture is as strict as a real server for the CRD: the status writes above can only pass as written."""
    await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("g", 2))
    with k8s.expecting_refusal("status.scheduled"), pytest.raises(ApiError) as refused:
        await kube.patch(COSCHEDULING_PODGROUPS, NS, "g", {"status": {"scheduled": "two"}}, sub="status")
    assert refused.value.status == 422
    assert 'status.scheduled in body must be of type integer: "string"' in str(refused.value)
    await kube.patch(COSCHEDULING_PODGROUPS, NS, "g", {"status": {"conditions": [{"type": "X"}]}}, sub="status")
    assert "conditions" not in await crd_status(kube, "g")
    assert k8s.warnings == ["podgroups.scheduling.x-k8s.io g: unknown field \"status.conditions\""]
    k8s.warnings.clear()  # seen: the fixture fails any other test that makes the server drop a field


@pytest.mark.looptime
async def test_a_cluster_with_only_the_crd_schedules_labelled_gangs(k8s: ApiServer, kube: KubeClient) -> None:
    """No workload API at all (a pre-1.36 cluster, or one without the gates): discovery finds the CRD, the
    scheduler is ready and schedules the scheduler-plugins gangs."""
    del k8s.resources["scheduling.k8s.io/v1beta1/podgroups"]
    del k8s.resources["scheduling.k8s.io/v1alpha3/compositepodgroups"]
    await create_node(kube, "n0", cpu="4")
    await create_labelled_gang(kube, "g", 3, 3)
    async with running(kube) as sched:
        assert sched.watches.groups.resources == (COSCHEDULING_PODGROUPS,)
        await until(lambda: bound_at_least(kube, "g-", 3), what="gang bound")
        await until(lambda: with_phase(kube, "g", "Scheduled"), what="phase Scheduled")


@pytest.mark.parametrize(("conflicts", "written"), [(0, True), (3, True), (4, False)],
                         ids=["no-conflict", "three-conflicts-then-written", "four-conflicts-given-up"])
async def test_status_write_rereads_and_judges_again_after_a_conflict(k8s: ApiServer, kube: KubeClient,
                                                                      conflicts: int, written: bool) -> None:
    """``StatusWriter.coscheduling_status``: a merge PATCH of the status subresource with the object's
    resourceVersion; a 409 reads the group again and judges the fresh status (which keeps an occupiedBy another
    writer set), up to 4 writes in all."""
    await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("g", 2))
    conflicting(k8s, conflicts, "scheduling.x-k8s.io/v1alpha1/podgroups")
    group = to_podgroup(CoschedulingPodGroup.model_validate(await kube.get(COSCHEDULING_PODGROUPS, NS, "g")))
    judged: list[CoschedulingPodGroupStatus] = []

    def judge(current: CoschedulingPodGroupStatus) -> CoschedulingPodGroupStatus | None:
        judged.append(current)
        return CoschedulingPodGroupStatus(phase="PreScheduling", occupied_by=current.occupied_by or "ml/job")

    writer = StatusWriter(kube, "gang-scheduler", instance="test")
    assert await writer.coscheduling_status(group, judge) is written
    assert len(judged) == min(conflicts + 1, 4)
    status = await crd_status(kube, "g")
    assert status.get("phase") == ("PreScheduling" if written else None)
    if written:
        assert status["occupiedBy"] == "ml/job"
