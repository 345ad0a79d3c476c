"""Fields the v1.37 API does not know, in ``run``: one Warning Event per object, naming the field and the closest
known one, on a pod of ours and on a PodGroup / CompositePodGroup; a pod of another scheduler is left alone.

The objects are stored past the emulator's strict decoding (``apiserver.UNCHECKED_HEADER``), as an API server newer
than v1.37 keeps a field of its own version that this scheduler does not know (a v1.37 server drops or refuses unknown
fields before anyone reads them).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.client.kube import COMPOSITES, EVENTS, PODGROUPS, PODS, KubeClient
from tests.integration.apiserver import UNCHECKED_HEADER
from tests.integration.livekit import NS, bound, composite, create_node, pod, podgroup, running, until


async def warnings_by_object(kube: KubeClient) -> dict[str, list[str]]:
    items, _ = await kube.list(EVENTS)
    out: dict[str, list[str]] = {}
    for e in items:
        if e.get("reason") == "UnhonouredField":
            out.setdefault(f"{e['regarding']['kind']} {e['regarding']['name']}", []).append(e["note"])
    return out


def with_field(body: dict[str, Any], *path: str | int, value: Any) -> dict[str, Any]:
    node = body
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value  # type: ignore[index]
    return body


@pytest.mark.looptime
async def test_unknown_fields_get_one_warning_event_per_object(k8s: Any, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="1")
    newer = KubeClient.for_host(str(k8s.url))  # writes what a newer server would keep
    newer.api.default_headers[UNCHECKED_HEADER] = "newer-server"
    try:
        await _create_unknown(newer)
    finally:
        await newer.close()
    async with running(kube):
        await until(lambda: _count(kube, 4), what="warning events")
        await asyncio.sleep(20)  # retried with backoff: still one Event each
        assert await bound(kube, "g-") == {}
        warned = await warnings_by_object(kube)
    pod_note = "not honoured: spec.containers[0].resoures: unknown field (did you mean resources?); ignored"
    assert warned == {
        "Pod g-0": [pod_note], "Pod g-1": [pod_note],
        "PodGroup g": ["not honoured: spec.schedulingPolicy.gang.minCont: unknown field (did you mean minCount?); "
                       "ignored"],
        "CompositePodGroup job": ["not honoured: spec.schedulingPolicy.gang.minGroupCont: unknown field (did you "
                                  "mean minGroupCount?); ignored"],
    }


async def _create_unknown(kube: KubeClient) -> None:
    """A CompositePodGroup, a PodGroup and two pods of ours with a misspelt field each, and a pod of another
    scheduler with one."""
    await kube.create(COMPOSITES, NS, with_field(composite("job", 1), "spec", "schedulingPolicy", "gang",
                                                 "minGroupCont", value=1))
    group = podgroup("g", 2, parent="job")
    group["spec"]["schedulingPolicy"]["gang"]["minCont"] = 2
    await kube.create(PODGROUPS, NS, group)
    for i in range(2):  # 2 cpu in all on a 1-cpu node: the gang does not fit and is retried
        worker = pod(f"g-{i}", "g")
        worker["spec"]["containers"][0]["resoures"] = worker["spec"]["containers"][0]["resources"]
        await kube.create(PODS, NS, worker)
    other = pod("theirs", None, scheduler="default-scheduler")
    other["spec"]["containers"][0]["resoures"] = {}
    await kube.create(PODS, NS, other)


async def _count(kube: KubeClient, n: int) -> bool:
    return sum(map(len, (await warnings_by_object(kube)).values())) >= n


@pytest.mark.looptime
async def test_an_unknown_field_of_a_pod_seen_by_the_watch_is_warned(k8s: Any, kube: KubeClient) -> None:
    """The pod comes after the first list, as a watch event (decoded into the model, then again as sent for its
    unknown fields): the same one Warning Event."""
    await create_node(kube, "n0", cpu="1")
    newer = KubeClient.for_host(str(k8s.url))
    newer.api.default_headers[UNCHECKED_HEADER] = "newer-server"
    try:
        async with running(kube):
            worker = pod("late", None, cpu="2")  # does not fit: stays pending, retried
            worker["spec"]["containers"][0]["resoures"] = worker["spec"]["containers"][0]["resources"]
            await newer.create(PODS, NS, worker)
            await until(lambda: _count(kube, 1), what="a warning event")
            await asyncio.sleep(20)
            warned = await warnings_by_object(kube)
    finally:
        await newer.close()
    assert warned == {"Pod late": ["not honoured: spec.containers[0].resoures: unknown field (did you mean "
                                   "resources?); ignored"]}
