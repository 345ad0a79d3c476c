"""Pods of a Waiting gang (fewer members than minCount) get a ``NotReadyForScheduling`` Event and PodScheduled=False,
once it has waited :data:`~scheduler.live.reporter.NOT_READY_DELAY_S` (KEP-5501), and no FailedScheduling: it was
not tried. A gang whose members all arrive within that delay gets no report at all.

The live scheduler against the strict emulator: the Events must be ones a real API server accepts
(``apivalidation.py`` rejects anything else), and they are rate-limited like every failure report.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import kmock
import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, PODS, KubeClient
from scheduler.live.reporter import NOT_READY_DELAY_S
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, create_gang, create_node, pod, podgroup, running, until

WAITING = "gang workers: 3/8 pods exist (minCount 8)"


async def not_ready(kube: KubeClient, pod_name: str, reason: str = "NotReadyForScheduling") -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS, NS)
    return [e for e in items if e["reason"] == reason and e["regarding"]["name"] == pod_name]


async def pod_scheduled(kube: KubeClient, name: str) -> dict[str, Any] | None:
    obj = await kube.get(PODS, NS, name)
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None)


def event_patches(k8s: ApiServer) -> list[kmock.Request]:
    return [r for r in k8s if r.method == "PATCH" and r.resource == kmock.resource("events.k8s.io/v1/events")]


async def each_pod_has_an_event(kube: KubeClient, names: list[str]) -> bool:
    return all([await not_ready(kube, n) for n in names])


@pytest.mark.looptime
async def test_waiting_gang_pods_get_an_event_and_condition_once(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "workers", 3, min_count=8)
    names = [f"workers-{i}" for i in range(3)]
    async with running(kube, identity="gang-scheduler-0") as sched:
        await until(lambda: each_pod_has_an_event(kube, names), what="a NotReadyForScheduling event on every pod")
        await create_node(kube, "n1", cpu="8")  # a capacity change: the trees are rebuilt, the gang still waits
        await until(lambda: "n1" in sched.cache.objects["Node"], what="the new node in the cache")
        await asyncio.sleep(5)

        for name in names:
            uid = (await kube.get(PODS, NS, name))["metadata"]["uid"]
            [event] = await not_ready(kube, name)  # one, though the trees were refreshed again
            assert await not_ready(kube, name, "FailedScheduling") == []
            assert re.fullmatch(rf"{name}\.[0-9a-f]{{16}}", event["metadata"]["name"])
            assert {k: event[k] for k in ("apiVersion", "kind", "reportingController", "reportingInstance",
                                          "action", "reason", "type", "note", "regarding")} == {
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "reportingController": "gang-scheduler",
                "reportingInstance": "gang-scheduler-0", "action": "Scheduling", "reason": "NotReadyForScheduling",
                "type": "Normal", "note": WAITING,
                "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": name, "uid": uid}}
            assert "series" not in event
            cond = await pod_scheduled(kube, name)
            assert cond is not None
            assert (cond["status"], cond["reason"], cond["message"]) == ("False", "NotReadyForScheduling", WAITING)
        assert event_patches(k8s) == []


@pytest.mark.looptime
async def test_waiting_again_within_the_interval_rewrites_the_condition_not_the_event(k8s: ApiServer,
                                                                                      kube: KubeClient) -> None:
    waiting = "gang workers: 3/4 pods exist (minCount 4)"
    await create_node(kube, "n0", cpu="1")  # one 1-cpu pod fits: a complete gang of 4 is Unschedulable
    await create_gang(kube, "workers", 3, min_count=4)
    async with running(kube):
        await until(lambda: each_pod_has_an_event(kube, [f"workers-{i}" for i in range(3)]), what="waiting events")
        await kube.create(PODS, NS, pod("workers-3", "workers"))
        await until(lambda: _message_of(kube, "workers-0", "placeable"), what="the Unschedulable report")
        await kube.delete(PODS, NS, "workers-3")  # waiting again, with the first message, well inside 60 s
        await until(lambda: _message_of(kube, "workers-0", waiting), what="the condition back to waiting")
        await asyncio.sleep(3)

        notes = [e["note"] for e in await not_ready(kube, "workers-0")]
        assert notes == [waiting]  # no second waiting Event
        assert len(await not_ready(kube, "workers-0", "FailedScheduling")) == 1  # the Unschedulable attempt
        assert event_patches(k8s) == []  # the repeat is counted into the series, not written within the interval


async def _message_of(kube: KubeClient, name: str, text: str) -> bool:
    cond = await pod_scheduled(kube, name)
    return cond is not None and text in cond["message"]


@pytest.mark.looptime
async def test_a_gang_whose_members_arrive_within_the_delay_gets_no_waiting_report(k8s: ApiServer,
                                                                                 kube: KubeClient) -> None:
    """Members created one by one, each within :data:`NOT_READY_DELAY_S` of the last (a controller creating a
    gang): the gang waits, then is bound, and none of its pods or its PodGroup was ever told it waits."""
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "workers", 1, min_count=4)
    async with running(kube):
        for i in range(1, 4):
            await asyncio.sleep(NOT_READY_DELAY_S * 0.8)
            await kube.create(PODS, NS, pod(f"workers-{i}", "workers"))
        await until(lambda: all_bound(kube, [f"workers-{i}" for i in range(4)]), what="the gang bound")
        await asyncio.sleep(NOT_READY_DELAY_S * 2)
        for i in range(4):
            assert await not_ready(kube, f"workers-{i}") == []
            assert (await pod_scheduled(kube, f"workers-{i}") or {}).get("reason") is None  # True: no reason
    writes = [r for r in k8s if r.method == "PATCH" and r.subresource == "status"]
    assert not [r for r in writes if "NotReadyForScheduling" in str(r.data) or "pods exist" in str(r.data)]


@pytest.mark.looptime
async def test_pods_created_just_before_their_podgroup_get_no_waiting_report(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    names = [f"late-{i}" for i in range(2)]
    async with running(kube):
        for name in names:
            await kube.create(PODS, NS, pod(name, "late"))
        await asyncio.sleep(NOT_READY_DELAY_S / 2)
        await kube.create(PODGROUPS, NS, podgroup("late", 2))
        await until(lambda: all_bound(kube, names), what="the pods bound")
        await asyncio.sleep(NOT_READY_DELAY_S * 2)
        for name in names:
            assert await not_ready(kube, name) == []


async def all_bound(kube: KubeClient, names: list[str]) -> bool:
    return all([(await kube.get(PODS, NS, n))["spec"].get("nodeName") for n in names])
