"""Pod reports under a failing API server: a PodScheduled=False write refused with a retryable error is
written again after a short jittered backoff (not lost until the next report an event interval later), and
the status queue metrics go back to zero once everything is written; a throttled PodGroup condition waits what the
server's Retry-After asks."""

from __future__ import annotations

import asyncio
from typing import Any

import kmock
import pytest

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, create_gang, create_node, refusing_first, running, until


def failing_pod_status(k8s: ApiServer, times: int) -> dict[str, int]:
    """Answer the first ``times`` PATCHes of each pod's status with 503; later ones go through."""
    return refusing_first(k8s, times, 503, k8s._serve_update, "patch", kmock.resource("v1/pods"),
                          kmock.subresource("status"))


async def unschedulable(kube: KubeClient, names: list[str]) -> bool:
    for name in names:
        conditions = (await kube.get(PODS, NS, name)).get("status", {}).get("conditions") or []
        if not any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions):
            return False
    return True


def gauge(sched, name: str, queue: str) -> float:  # type: ignore[no-untyped-def]
    return float(sched.metrics.registry.get_sample_value(name, {"queue": queue}) or 0.0)


@pytest.mark.looptime
async def test_a_failed_pod_report_is_written_again_soon(k8s: ApiServer, kube: KubeClient) -> None:
    failed = failing_pod_status(k8s, 2)
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "big", 3, cpu="1")  # does not fit: each pod gets PodScheduled=False
    names = [f"big-{i}" for i in range(3)]
    async with running(kube, event_interval_s=600) as sched:  # the next report of the same failure: 10 min
        await until(lambda: unschedulable(kube, names), timeout_s=30, what="every pod shows PodScheduled=False")
        assert failed == {name: 2 for name in names}
        await until(lambda: gauge(sched, "gang_scheduler_status_queue_depth", "pods") == 0, what="queue empty")
        assert gauge(sched, "gang_scheduler_status_queue_oldest_age_seconds", "pods") == 0


@pytest.mark.looptime
async def test_a_throttled_group_condition_waits_what_retry_after_asks(k8s: ApiServer, kube: KubeClient) -> None:
    """The first PodGroup status PATCH is answered 429 with ``Retry-After: 5`` (API Priority and Fairness); the
    condition is written again 5 s after the refusal, not after the 0.5–1.5 s of the writer's first backoff."""
    refused: list[float] = []
    loop = asyncio.get_running_loop()

    async def react(request: kmock.Request) -> Any:
        if not refused:
            refused.append(loop.time())
            return kmock.Response(status=429, headers={"Retry-After": "5"}, payload={
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 429, "reason": "TooManyRequests",
                "message": "too many requests, please try again later"})
        return await k8s._serve_update(request)

    k8s["patch", kmock.resource("scheduling.k8s.io/v1beta1/podgroups"), kmock.subresource("status")] << react
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "big", 3, cpu="1")  # does not fit: its PodGroup gets PodGroupInitiallyScheduled=False

    async def written() -> bool:
        conditions = (await kube.get(PODGROUPS, NS, "big")).get("status", {}).get("conditions") or []
        return any(c["type"] == "PodGroupInitiallyScheduled" for c in conditions)

    async with running(kube):
        await until(written, timeout_s=60, what="the PodGroup's condition written")
        landed = loop.time()
    assert len(refused) == 1 and landed - refused[0] >= 5
