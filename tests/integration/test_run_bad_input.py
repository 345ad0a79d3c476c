"""Bad input never stops the live scheduler: missing APIs, invalid trees."""

from __future__ import annotations

import asyncio

import kmock
import pytest

from scheduler.client.kube import COMPOSITES, EVENTS, PODGROUPS, PODS, KubeClient
from scheduler.config import Settings
from scheduler.live.driver import Scheduler
from tests.integration import livekit
from tests.integration.conftest import RESOURCES, VERBS
from tests.integration.livekit import NS, bound, bound_at_least, create_gang, create_node, pod, podgroup, running, until

PODGROUPS_PATH = "scheduling.k8s.io/v1beta1/podgroups"
CRD_PATH = "scheduling.x-k8s.io/v1alpha1/podgroups"


@pytest.mark.looptime
async def test_missing_podgroup_api_is_reported_not_ready_and_retried(k8s, kube: KubeClient) -> None:
    del k8s.resources[PODGROUPS_PATH]
    del k8s.resources[CRD_PATH]  # neither the workload API nor scheduler-plugins' CRD
    settings = Settings.model_validate({"leader_elect": False, "bind_address": "127.0.0.1:0"})
    sched = Scheduler(settings, kube)
    stop = asyncio.Event()
    task = asyncio.create_task(sched.run(stop))
    try:
        await asyncio.sleep(25)
        ready, reason = sched.ready()
        assert not ready and not task.done()
        assert reason == ("API scheduling.k8s.io/v1beta1 podgroups is not served (nor scheduling.k8s.io/v1alpha2): "
                          "enable the feature gate GenericWorkload (and --runtime-config=scheduling.k8s.io/v1beta1="
                          "true), or GenericWorkload (and --runtime-config=scheduling.k8s.io/v1alpha2=true) on "
                          "Kubernetes 1.36, or install scheduler-plugins' PodGroup CRD (scheduling.x-k8s.io/v1alpha1, "
                          "chart value crds.install)")
        kind, namespaced, subs = RESOURCES[PODGROUPS_PATH]
        k8s.resources[PODGROUPS_PATH] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                           verbs=VERBS, subresources=subs)
        await until(lambda: sched.ready()[0], timeout_s=30, what="ready once the API is served")
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def _conditions(kube: KubeClient, res, name: str) -> list[dict]:  # type: ignore[no-untyped-def]
    obj = await kube.get(res, NS, name)
    return list((obj.get("status") or {}).get("conditions") or [])


@pytest.mark.looptime
async def test_invalid_trees_are_reported_and_the_rest_is_scheduled(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    # mixed scheduler names in one tree
    await kube.create(PODGROUPS, NS, podgroup("mixed", 2))
    await kube.create(PODS, NS, pod("mixed-0", "mixed"))
    await kube.create(PODS, NS, pod("mixed-1", "mixed", scheduler="default-scheduler"))
    # a cycle of CompositePodGroups with a leaf under it
    for name, parent in (("c1", "c2"), ("c2", "c1")):
        await kube.create(COMPOSITES, NS, {"metadata": {"name": name, "namespace": NS}, "spec": {
            "schedulingPolicy": {"gang": {"minGroupCount": 1}}, "parentCompositePodGroupName": parent,
            "workloadRef": {"workloadName": "w", "templateName": name}}})
    await kube.create(PODGROUPS, NS, podgroup("under-cycle", 1, parent="c1"))
    await kube.create(PODS, NS, pod("under-cycle-0", "under-cycle"))
    # a malformed PodGroup (a policy with neither variant: the emulator does not check one-of unions)
    await kube.create(PODGROUPS, NS, {"metadata": {"name": "nopolicy", "namespace": NS},
                                      "spec": {"schedulingPolicy": {}}})
    await kube.create(PODS, NS, pod("nopolicy-0", "nopolicy"))
    await create_gang(kube, "fine", 3)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "fine-", 3), what="the valid gang is scheduled")
        mixed = await until(lambda: _conditions(kube, PODGROUPS, "mixed"), what="mixed condition")
        assert (mixed[0]["status"], mixed[0]["reason"]) == ("False", "SchedulerError")
        assert "must share one schedulerName" in mixed[0]["message"]
        cyc = await until(lambda: _conditions(kube, COMPOSITES, "c1"), what="cycle condition")
        assert (cyc[0]["type"], cyc[0]["reason"]) == ("CompositePodGroupInitiallyScheduled", "Invalid")
        assert cyc[0]["message"].startswith("cycle in parentCompositePodGroupName")
        nopolicy = await until(lambda: _conditions(kube, PODGROUPS, "nopolicy"), what="malformed condition")
        assert "must set exactly one of basic, gang" in nopolicy[0]["message"]
        await asyncio.sleep(5)
        assert set(await bound(kube, "")) == {"fine-0", "fine-1", "fine-2"}
        # the mixed tree is reported on our member only: the other is default-scheduler's to write on
        events, _ = await kube.list(EVENTS)
        regarding = {e["regarding"]["name"] for e in events if e["reason"] == "FailedScheduling"}
        assert "mixed-0" in regarding and "mixed-1" not in regarding
        assert not ((await kube.get(PODS, NS, "mixed-1")).get("status") or {}).get("conditions")


async def test_podgroups_created_before_their_parent_wait_for_it_and_are_then_placed(k8s, kube: KubeClient) -> None:
    """Objects applied together arrive in any order: children whose CompositePodGroup does not exist yet wait for
    it (Unschedulable, as pods wait for their PodGroup), not a SchedulerError, and are placed once it exists."""
    await create_node(kube, "n0", cpu="8")
    for child in ("a", "b"):
        await kube.create(PODGROUPS, NS, podgroup(child, 2, parent="job"))
        for i in range(2):
            await kube.create(PODS, NS, pod(f"{child}-{i}", child, cpu="1"))
    async with running(kube):
        a = await until(lambda: _conditions(kube, PODGROUPS, "a"), what="the child's condition")
        assert (a[0]["status"], a[0]["reason"], a[0]["message"]) == (
            "False", "Unschedulable", f"waiting for CompositePodGroup {NS}/job to appear")
        assert await bound(kube, "") == {}
        await kube.create(COMPOSITES, NS, livekit.composite("job", 2))
        await until(lambda: bound_at_least(kube, "", 4), what="all four bound once the parent exists")
