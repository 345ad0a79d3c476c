"""APIs served after the scheduler started: looked for again every ``--api-discovery-interval-s`` and watched from
then on, without a restart — scheduler-plugins' PodGroup CRD installed later, the workload PodGroup API enabled where
only the CRD was served, CompositePodGroups enabled later. Until then a pod that links to a PodGroup of an API not
served says so, and that it is looked for again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kmock
import pytest

from scheduler.client import podgroup_api
from scheduler.client.kube import COMPOSITES, COSCHEDULING_PODGROUPS, EVENTS, PODGROUPS, PODS, KubeClient
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.model.coscheduling import POD_GROUP_LABEL
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import RESOURCES, VERBS
from tests.integration.livekit import NS, bound, bound_at_least, composite, create_node, pod, podgroup, running, until

CRD_PATH = "scheduling.x-k8s.io/v1alpha1/podgroups"
PODGROUPS_PATH = "scheduling.k8s.io/v1beta1/podgroups"
COMPOSITES_PATH = "scheduling.k8s.io/v1alpha3/compositepodgroups"
INTERVAL_S = 30.0
"""``--api-discovery-interval-s``'s default."""


def serve(k8s: ApiServer, path: str) -> None:
    """``k8s`` serves ``path`` from now on, as it does in :data:`RESOURCES`."""
    kind, namespaced, subresources = RESOURCES[path]
    k8s.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced, verbs=VERBS,
                                             subresources=subresources)


async def note(kube: KubeClient, pod_name: str) -> str | None:
    """The note of the latest Event about pod ``pod_name``, if any."""
    items, _ = await kube.list(EVENTS)
    about = [e for e in items if e["regarding"]["name"] == pod_name]
    return about[-1]["note"] if about else None


def crd_podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": {"minMember": min_member}}


@pytest.mark.looptime
async def test_a_crd_installed_after_start_is_watched_and_its_gang_bound(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scheduler.live.driver")
    del k8s.resources[CRD_PATH]
    await create_node(kube, "n0", cpu="4")
    for i in range(2):
        body = pod(f"w-{i}", None, cpu="1")
        body["metadata"]["labels"] = {POD_GROUP_LABEL: "job"}
        await kube.create(PODS, NS, body)
    async with running(kube) as sched:
        said = await until(lambda: note(kube, "w-0"), what="the pod's FailedScheduling Event")
        assert said == (f"scheduling.x-k8s.io PodGroup {NS}/job cannot be read: scheduler-plugins' PodGroup CRD "
                        "(scheduling.x-k8s.io/v1alpha1) is not served (looked for again every 30 s)")
        assert not sched.groups.coscheduling
        serve(k8s, CRD_PATH)
        await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("job", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "w-", 2), what="the gang bound")
        assert placed == {"w-0": "n0", "w-1": "n0"}
        assert sched.groups.coscheduling
        assert sched.cache.groups.unread_apis == {}
    assert "API scheduling.x-k8s.io/v1alpha1 podgroups is served now: watching it" in caplog.messages


@pytest.mark.looptime
async def test_the_workload_api_enabled_after_start_is_watched_and_written(k8s: ApiServer, kube: KubeClient) -> None:
    """Only scheduler-plugins' CRD was served at start: the workload API's PodGroups are read once it is served,
    and the gang's durable intent and conditions are written to that API."""
    del k8s.resources[PODGROUPS_PATH]
    await create_node(kube, "n0", cpu="4")
    for i in range(2):
        await kube.create(PODS, NS, pod(f"g-{i}", "g", cpu="1"))
    async with running(kube) as sched:
        said = await until(lambda: note(kube, "g-0"), what="the pod's FailedScheduling Event")
        assert said == (f"PodGroup {NS}/g cannot be read: the scheduling.k8s.io PodGroup API is not served (looked "
                        "for again every 30 s)")
        assert sched.groups.podgroups is None
        serve(k8s, PODGROUPS_PATH)
        await kube.create(PODGROUPS, NS, podgroup("g", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="the gang bound")
        assert placed == {"g-0": "n0", "g-1": "n0"}
        assert sched.podgroups is podgroup_api.V1BETA1 and sched.binder.podgroups is PODGROUPS
        assert sched.cache.groups.unread_apis == {}

        async def scheduled() -> bool:
            obj = await kube.get(PODGROUPS, NS, "g")
            conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}
            return conditions.get("PodGroupInitiallyScheduled") == "True"

        await until(scheduled, what="the PodGroup's condition")
    intents = [v for v in filter(None, k8s.objects[PODGROUPS_PATH, NS, "g"].history)
               if INTENT_ANNOTATION in (v.get("metadata", {}).get("annotations") or {})]
    assert intents, "the durable intent was written to the workload API's PodGroup"


@pytest.mark.looptime
async def test_composite_podgroups_enabled_after_start_make_the_tree(k8s: ApiServer, kube: KubeClient) -> None:
    del k8s.resources[COMPOSITES_PATH]
    await create_node(kube, "n0", cpu="4")
    await kube.create(PODGROUPS, NS, podgroup("a", 1, parent="root"))
    await kube.create(PODGROUPS, NS, podgroup("b", 1, parent="root"))
    for name in ("a", "b"):
        await kube.create(PODS, NS, pod(f"{name}-0", name, cpu="1"))
    async with running(kube) as sched:
        await until(lambda: note(kube, "a-0"), what="the pod's FailedScheduling Event")
        assert await bound(kube, "") == {}
        assert COMPOSITES not in [i.resource for i in sched.informers]
        serve(k8s, COMPOSITES_PATH)
        await kube.create(COMPOSITES, NS, composite("root", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "", 2), what="the tree bound")
        assert placed == {"a-0": "n0", "b-0": "n0"}


@pytest.mark.looptime
async def test_nothing_new_is_nothing_added(k8s: ApiServer, kube: KubeClient) -> None:
    async with running(kube) as sched:
        before = [i.resource for i in sched.informers]
        assert await sched.discover_more() == []
        assert [i.resource for i in sched.informers] == before
