"""APIs served after the scheduler started: looked for again every ``--api-discovery-interval-s`` and watched from
then on, without a restart — scheduler-plugins' PodGroup CRD installed later, the workload PodGroup API enabled where
only the CRD was served, CompositePodGroups enabled later. Until then a pod that links to a PodGroup of an API not
served says so, and that it is looked for again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import kmock
import pytest

from scheduler.client import podgroup_api
from scheduler.client.kube import (
    COMPOSITES,
    COSCHEDULING_PODGROUPS,
    DEVICE_CLASSES,
    EVENTS,
    PODGROUPS,
    PODGROUPS_V1ALPHA2,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    KubeClient,
    Resource,
)
from scheduler.model.coscheduling import POD_GROUP_LABEL
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import RESOURCES, RESOURCES_1_36, VERBS
from tests.integration.livekit import NS, bound, bound_at_least, composite, create_node, pod, podgroup, running, until
from tests.integration.test_dra import allocate, create_claim, device_class, devices, dra_pod, gpu_slice, template
from tests.integration.test_kubernetes_136 import podgroup as podgroup_136
from tests.integration.test_metrics import scrape

CRD_PATH = "scheduling.x-k8s.io/v1alpha1/podgroups"
PODGROUPS_PATH = "scheduling.k8s.io/v1beta1/podgroups"
COMPOSITES_PATH = "scheduling.k8s.io/v1alpha3/compositepodgroups"
V1ALPHA2_PATH = "scheduling.k8s.io/v1alpha2/podgroups"
INTERVAL_S = 30.0
"""``--api-discovery-interval-s``'s default."""


def serve(k8s: ApiServer, path: str) -> None:
    """``k8s`` serves ``path`` from now on, as it does in :data:`RESOURCES`."""
    kind, namespaced, subresources = RESOURCES[path]
    k8s.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced, verbs=VERBS,
                                             subresources=subresources)


async def note(kube: KubeClient, pod_name: str) -> str | None:
    """The note of the latest Event about pod ``pod_name`` (a repeated one counts at its series' last time), if any."""
    items, _ = await kube.list(EVENTS)
    about = [e for e in items if e["regarding"]["name"] == pod_name]
    return max(about, key=lambda e: (e.get("series") or {}).get("lastObservedTime") or e["eventTime"])["note"] \
        if about else None


async def condition_true(kube: KubeClient, res: Resource, name: str, type_: str) -> bool:
    """Whether PodGroup ``name`` of ``res`` has condition ``type_`` True."""
    obj = await kube.get(res, NS, name)
    return any(c["type"] == type_ and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def crd_podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": {"minMember": min_member}}


@pytest.mark.looptime
async def test_a_crd_installed_after_start_is_watched_and_its_gang_bound(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scheduler.live.watches")
    del k8s.resources[CRD_PATH]
    await create_node(kube, "n0", cpu="4")
    for i in range(2):
        await kube.create(PODS, NS, labelled(f"w-{i}", "job"))
    async with running(kube) as sched:
        said = await until(lambda: note(kube, "w-0"), what="the pod's FailedScheduling Event")
        assert said == (f"scheduling.x-k8s.io PodGroup {NS}/job cannot be read: scheduler-plugins' PodGroup CRD "
                        "(scheduling.x-k8s.io/v1alpha1) is not served (looked for again every 30 s)")
        assert not sched.watches.groups.coscheduling
        serve(k8s, CRD_PATH)
        await kube.create(COSCHEDULING_PODGROUPS, NS, crd_podgroup("job", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "w-", 2), what="the gang bound")
        assert placed == {"w-0": "n0", "w-1": "n0"}
        assert sched.watches.groups.coscheduling
        assert sched.cache.groups.unread_apis == {}
    assert "API scheduling.x-k8s.io/v1alpha1 podgroups is served now: watching it" in caplog.messages


@pytest.mark.looptime
async def test_the_workload_api_enabled_after_start_is_watched_and_written(k8s: ApiServer, kube: KubeClient) -> None:
    """Only scheduler-plugins' CRD was served at start: the workload API's PodGroups are read once it is served,
    and the gang's conditions are written to that API."""
    del k8s.resources[PODGROUPS_PATH]
    await create_node(kube, "n0", cpu="4")
    for i in range(2):
        await kube.create(PODS, NS, pod(f"g-{i}", "g", cpu="1"))
    async with running(kube) as sched:
        said = await until(lambda: note(kube, "g-0"), what="the pod's FailedScheduling Event")
        assert said == (f"PodGroup {NS}/g cannot be read: the scheduling.k8s.io PodGroup API is not served (looked "
                        "for again every 30 s)")
        assert sched.watches.groups.podgroups is None
        serve(k8s, PODGROUPS_PATH)
        await kube.create(PODGROUPS, NS, podgroup("g", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="the gang bound")
        assert placed == {"g-0": "n0", "g-1": "n0"}
        assert sched.watches.podgroups is podgroup_api.V1BETA1
        assert sched.cache.groups.unread_apis == {}
        await until(lambda: condition_true(kube, PODGROUPS, "g", "PodGroupInitiallyScheduled"),
                    what="the PodGroup's condition")


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
        assert COMPOSITES not in [i.resource for i in sched.watches.informers]
        serve(k8s, COMPOSITES_PATH)
        await kube.create(COMPOSITES, NS, composite("root", 2))
        await asyncio.sleep(INTERVAL_S)  # loop time: the next discovery
        placed = await until(lambda: bound_at_least(kube, "", 2), what="the tree bound")
        assert placed == {"a-0": "n0", "b-0": "n0"}


@pytest.mark.looptime
async def test_nothing_new_is_nothing_added(k8s: ApiServer, kube: KubeClient) -> None:
    async with running(kube) as sched:
        before = [i.resource for i in sched.watches.informers]
        assert await sched.watches.discover_more() == []
        assert [i.resource for i in sched.watches.informers] == before


@pytest.mark.looptime
async def test_looking_again_asks_only_about_what_is_not_watched(k8s: ApiServer, kube: KubeClient) -> None:
    """Every API this server serves is watched from the start except the CRD: looking again asks its group/version
    alone; once it is watched too, looking again asks nothing."""
    del k8s.resources[CRD_PATH]
    asked: list[str] = []

    async def discovery(request: kmock.Request) -> Any:
        asked.append(request.url.path)
        return await k8s._serve_version(request)

    async with running(kube) as sched:
        k8s["get", kmock.path(re.compile(r"^/apis/[^/]+/[^/]+$"))] << discovery
        assert await sched.watches.discover_more() == []
        assert asked == ["/apis/scheduling.x-k8s.io/v1alpha1"]
        asked.clear()
        serve(k8s, CRD_PATH)
        assert await sched.watches.discover_more() == [COSCHEDULING_PODGROUPS]
        assert asked == ["/apis/scheduling.x-k8s.io/v1alpha1"]
        asked.clear()
        assert await sched.watches.discover_more() == []
        assert asked == []


@pytest.mark.looptime
async def test_a_crd_served_before_its_podgroup_exists_turns_the_reason_into_waiting(
        k8s: ApiServer, kube: KubeClient) -> None:
    del k8s.resources[CRD_PATH]
    await create_node(kube, "n0", cpu="4")
    await kube.create(PODS, NS, labelled("w-0", "job"))
    async with running(kube):
        said = await until(lambda: note(kube, "w-0"), what="the pod's FailedScheduling Event")
        assert "is not served (looked for again every 30 s)" in said
        serve(k8s, CRD_PATH)  # the CRD lists nothing: no watch event wakes the scheduler, discovery does
        await asyncio.sleep(INTERVAL_S)
        waiting = f"waiting for scheduling.x-k8s.io PodGroup {NS}/job to appear"
        assert await until(lambda: _said(kube, "w-0", waiting), what="the new reason") == waiting


@pytest.mark.kubernetes("1.36")
@pytest.mark.looptime
async def test_v136_podgroups_served_after_the_crd_are_written_in_their_own_version(
        k8s: ApiServer, kube: KubeClient) -> None:
    """Only scheduler-plugins' CRD at start, then v1.36's v1alpha2 PodGroups: the gang's condition goes to
    v1alpha2, the version found, and carries v1.36's name."""
    kind, namespaced, subresources = RESOURCES_1_36[V1ALPHA2_PATH]
    del k8s.resources[V1ALPHA2_PATH]
    serve(k8s, CRD_PATH)
    await create_node(kube, "n0", cpu="4")
    for i in range(2):
        await kube.create(PODS, NS, pod(f"g-{i}", "g", cpu="1"))
    async with running(kube) as sched:
        await until(lambda: note(kube, "g-0"), what="the pod's FailedScheduling Event")
        assert sched.watches.groups.podgroups is None
        k8s.resources[V1ALPHA2_PATH] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                          verbs=VERBS, subresources=subresources)
        await kube.create(PODGROUPS_V1ALPHA2, NS, podgroup_136("g", 2))
        await asyncio.sleep(INTERVAL_S)
        assert await until(lambda: bound_at_least(kube, "g-", 2), what="the gang bound") == {"g-0": "n0", "g-1": "n0"}
        assert sched.watches.podgroups is podgroup_api.V1ALPHA2
        await until(lambda: condition_true(kube, PODGROUPS_V1ALPHA2, "g", "PodGroupScheduled"),
                    what="the v1alpha2 PodGroup's condition")


@pytest.mark.looptime
async def test_nothing_is_scheduled_while_a_kind_found_later_is_listed(k8s: ApiServer, kube: KubeClient) -> None:
    """A kind found later is listed before anything more is scheduled, as at start (half of DRA's claims listed
    would let a device be given twice): /readyz names it meanwhile. A root whose retry falls due meanwhile does not
    make the loop spin (loop time, frozen by a spin, would never reach the end of the list)."""
    del k8s.resources[COMPOSITES_PATH]
    listed = asyncio.Event()

    async def slow_list(request: kmock.Request) -> Any:
        await asyncio.sleep(20)
        listed.set()
        return await k8s._serve_list(request)

    await create_node(kube, "n0", cpu="4")
    await kube.create(PODS, NS, pod("big", None, cpu="64"))  # never fits: retried every 2 s
    async with running(kube, unschedulable_retry_s=2.0) as sched:
        serve(k8s, COMPOSITES_PATH)
        k8s["list", kmock.resource(COMPOSITES_PATH)] << slow_list  # a kind in a reaction is served too
        await asyncio.sleep(INTERVAL_S + 1)  # discovery found it; its list is under way
        assert not listed.is_set()
        await kube.create(PODS, NS, pod("lone", None, cpu="1"))
        await asyncio.sleep(5)
        assert sched.ready() == (False, "caches not synced: scheduling.k8s.io/v1alpha3/compositepodgroups")
        assert await bound(kube, "lone") == {}
        assert await until(lambda: bound(kube, "lone"), what="the pod bound once listed") == {"lone": "n0"}
        assert listed.is_set() and sched.ready() == (True, "ok")


@pytest.mark.looptime
async def test_a_kind_found_later_that_cannot_be_listed_never_stops_scheduling(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    """A kind served but not listable (RBAC refuses it, its CRD deleted again): its informer is stopped after its
    first failure, scheduling goes on without it, and it is tried again at the next discovery."""
    del k8s.resources[COMPOSITES_PATH]
    forbidden = True

    async def listing(request: kmock.Request) -> Any:
        if forbidden:
            return kmock.KubernetesError(status=403, reason="Forbidden", message="compositepodgroups is forbidden")
        return await k8s._serve_list(request)

    await create_node(kube, "n0", cpu="4")
    async with running(kube) as sched:
        serve(k8s, COMPOSITES_PATH)
        k8s["list", kmock.resource(COMPOSITES_PATH)] << listing
        await asyncio.sleep(INTERVAL_S + 1)
        assert sched.ready() == (True, "ok") and COMPOSITES not in [i.resource for i in sched.watches.informers]
        assert "API scheduling.k8s.io/v1alpha3 compositepodgroups is served but could not be watched (403 Forbidden: " \
               "compositepodgroups is forbidden): tried again in 30 s" in caplog.messages
        scraped = await scrape(sched)  # not reported as an informer that never syncs
        assert not any(name == "gang_scheduler_informer_synced" and ("resource", "compositepodgroups") in labels
                       for name, labels in scraped)
        await kube.create(PODS, NS, pod("lone", None, cpu="1"))
        assert await until(lambda: bound(kube, "lone"), what="the pod bound") == {"lone": "n0"}
        forbidden = False
        await asyncio.sleep(INTERVAL_S)
        assert COMPOSITES in [i.resource for i in sched.watches.informers] and sched.ready() == (True, "ok")


DRA_PATHS = [f"resource.k8s.io/v1/{p}" for p in ("resourceslices", "deviceclasses", "resourceclaims",
                                                  "resourceclaimtemplates")]


@pytest.mark.looptime
async def test_dra_found_later_is_watched_all_or_none_so_no_device_is_given_twice(
        k8s: ApiServer, kube: KubeClient) -> None:
    """DRA served after start with the claims' list refused at first: none of DRA's four kinds is watched (slices
    without the claims would show the claimed devices free), the pod asking for devices waits, and nothing is
    given twice once all four are watched."""
    for path in DRA_PATHS:
        del k8s.resources[path]
    refusals: list[str] = []

    async def claims_list(request: kmock.Request) -> Any:
        if not refusals:
            refusals.append(str(request.url))
            return kmock.KubernetesError(status=403, reason="Forbidden", message="resourceclaims is forbidden")
        return await k8s._serve_list(request)

    await create_node(kube, "n0", cpu="8")
    async with running(kube) as sched:
        for path in DRA_PATHS:
            serve(k8s, path)
        k8s["list", kmock.resource(DRA_PATHS[2])] << claims_list
        await kube.create(RESOURCE_SLICES, None, gpu_slice("n0", 4))
        await kube.create(DEVICE_CLASSES, None, device_class("example.com/gpu"))
        await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, template())
        old = dra_pod("old", None, {"gpu": "old-gpu"})
        old["spec"] |= {"nodeName": "n0", "schedulerName": "other"}
        old = await kube.create(PODS, NS, old)
        await create_claim(kube, "old-gpu", count=3, owner=old)
        await allocate(kube, "old-gpu", "n0", ["gpu-0", "gpu-1", "gpu-2"], old)
        await kube.create(PODS, NS, dra_pod("x", None, limits={"example.com/gpu": "2"}))
        await asyncio.sleep(INTERVAL_S + 5)
        assert refusals and [i.resource.group for i in sched.watches.informers].count("resource.k8s.io") == 0
        assert sched.ready() == (True, "ok") and await bound(kube, "x") == {}
        await asyncio.sleep(INTERVAL_S)  # tried again: all four listed now
        assert [i.resource.group for i in sched.watches.informers].count("resource.k8s.io") == 4
        await asyncio.sleep(5)
        assert await bound(kube, "x") == {}  # one GPU is free, two are asked for
        items, _ = await kube.list(RESOURCE_CLAIMS, NS)
        assert [d for c in items if c["metadata"]["name"] != "old-gpu" for d in devices(c)] == []


@pytest.mark.looptime
async def test_a_crd_served_but_not_listable_is_the_reason_its_pods_give(k8s: ApiServer, kube: KubeClient) -> None:
    """The CRD's list is refused at every try: its pods say so, also in the rounds its retry is backed off (the CRD
    is not read then either); once the CRD is gone, they say it is not served."""
    del k8s.resources[CRD_PATH]
    gone = False

    async def forbidden(request: kmock.Request) -> Any:
        return kmock.KubernetesError(status=403, reason="Forbidden", message="podgroups is forbidden")

    async def discovery(request: kmock.Request) -> Any:
        if gone:
            return kmock.KubernetesError(status=404, reason="NotFound", message="the server could not find it")
        return await k8s._serve_version(request)

    await create_node(kube, "n0", cpu="4")
    await kube.create(PODS, NS, labelled("w-0", "job"))
    async with running(kube) as sched:
        await until(lambda: note(kube, "w-0"), what="the first note")
        serve(k8s, CRD_PATH)
        k8s["list", kmock.resource(CRD_PATH)] << forbidden
        k8s["get", kmock.path("/apis/scheduling.x-k8s.io/v1alpha1")] << discovery
        await asyncio.sleep(INTERVAL_S + 1)
        said = (f"scheduling.x-k8s.io PodGroup {NS}/job cannot be read: scheduler-plugins' PodGroup CRD "
                "(scheduling.x-k8s.io/v1alpha1) is served but could not be listed (403 Forbidden: podgroups is "
                "forbidden; tried again later)")
        assert await until(lambda: _said(kube, "w-0", said), what="the new note") == said
        await asyncio.sleep(4 * INTERVAL_S)  # refused at 30, 60 and 120 s; the round at 150 s backs off
        assert not sched.watches.groups.coscheduling and "could not be listed" in sched.cache.groups.unread_apis[
            "scheduling.x-k8s.io"]
        assert await note(kube, "w-0") == said
        gone = True
        await asyncio.sleep(INTERVAL_S)
        unserved = (f"scheduling.x-k8s.io PodGroup {NS}/job cannot be read: scheduler-plugins' PodGroup CRD "
                    "(scheduling.x-k8s.io/v1alpha1) is not served (looked for again every 30 s)")
        assert await until(lambda: _said(kube, "w-0", unserved), what="the note once it is gone") == unserved


@pytest.mark.looptime
async def test_a_failed_discovery_is_logged_and_tried_again(k8s: ApiServer, kube: KubeClient,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    del k8s.resources[CRD_PATH]
    failures: list[str] = []

    async def discovery(request: kmock.Request) -> Any:
        if len(failures) < 1:
            failures.append(str(request.url))
            return kmock.KubernetesError(status=500, reason="InternalError", message="etcd timed out")
        return await k8s._serve_version(request)

    async with running(kube) as sched:
        serve(k8s, CRD_PATH)
        k8s["get", kmock.path("/apis/scheduling.x-k8s.io/v1alpha1")] << discovery
        await asyncio.sleep(INTERVAL_S)
        assert failures and not sched.watches.groups.coscheduling
        assert any(m.startswith("API discovery failed: ") and m.endswith("; trying again in 30 s")
                   for m in caplog.messages)
        await asyncio.sleep(INTERVAL_S)
        assert sched.watches.groups.coscheduling
        assert COSCHEDULING_PODGROUPS in [i.resource for i in sched.watches.informers]


async def _said(kube: KubeClient, pod_name: str, text: str) -> str | None:
    return text if await note(kube, pod_name) == text else None


def labelled(name: str, group: str) -> dict[str, Any]:
    """A pod of ours labelled for scheduler-plugins' PodGroup ``group``."""
    body = pod(name, None, cpu="1")
    body["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    return body


@pytest.mark.looptime
async def test_a_podgroup_api_dropped_leaves_the_other_reported_as_synced(k8s: ApiServer, kube: KubeClient) -> None:
    """Both PodGroup APIs' plural is ``podgroups``: when the workload API found later cannot be listed, the metric
    of that name goes on reporting scheduler-plugins' CRD, read since start."""
    del k8s.resources[PODGROUPS_PATH]

    async def forbidden(request: kmock.Request) -> Any:
        return kmock.KubernetesError(status=403, reason="Forbidden", message="podgroups is forbidden")

    async with running(kube) as sched:
        serve(k8s, PODGROUPS_PATH)
        k8s["list", kmock.resource(PODGROUPS_PATH)] << forbidden
        await asyncio.sleep(INTERVAL_S + 1)
        assert sched.watches.groups.podgroups is None and sched.watches.groups.coscheduling
        scraped = await scrape(sched)
        assert scraped[("gang_scheduler_informer_synced",
                        frozenset({("group", "scheduling.x-k8s.io"), ("resource", "podgroups")}))] == 1
