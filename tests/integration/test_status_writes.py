"""Pod reports under a failing API server: a PodScheduled=False write refused with a retryable error is
written again after a short jittered backoff (not lost until the next report an event interval later), and
the status queue metrics go back to zero once everything is written; a throttled PodGroup condition waits what the
server's Retry-After asks."""

from __future__ import annotations

import asyncio
import itertools
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


REFUSALS = {429: ("TooManyRequests", "too many requests, please try again later"),
            503: ("ServiceUnavailable", "try again")}


def refusing_podgroup_status(k8s: ApiServer, times: int, retry_after_s: int | None,
                             status: int = 503) -> list[float]:
    """Answer the first ``times`` PATCHes of a PodGroup's status with ``status`` (429 as API Priority and Fairness,
    503), with ``Retry-After`` when given; later ones go through. Returns the loop time of every PATCH, filled in as
    they come."""
    attempts: list[float] = []
    loop = asyncio.get_running_loop()
    headers = {} if retry_after_s is None else {"Retry-After": str(retry_after_s)}
    reason, message = REFUSALS[status]

    async def react(request: kmock.Request) -> Any:
        attempts.append(loop.time())
        if len(attempts) <= times:
            return kmock.Response(status=status, headers=headers, payload={
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status, "reason": reason,
                "message": message})
        # a kmock Response's status stays on its route: the writes that go through say 200 again
        return kmock.Response(status=200, payload=await k8s._serve_update(request))

    k8s["patch", kmock.resource("scheduling.k8s.io/v1beta1/podgroups"), kmock.subresource("status")] << react
    return attempts


async def condition_message(kube: KubeClient, name: str) -> str:
    conditions = (await kube.get(PODGROUPS, NS, name)).get("status", {}).get("conditions") or []
    return next((c["message"] for c in conditions if c["type"] == "PodGroupInitiallyScheduled"), "")


@pytest.mark.looptime
async def test_a_throttled_group_condition_waits_what_retry_after_asks(k8s: ApiServer, kube: KubeClient) -> None:
    """The first PodGroup status PATCH is answered 429 with ``Retry-After: 5`` (API Priority and Fairness); the
    condition is written again 5 s after the refusal, not after the 0.5–1.5 s of the writer's first backoff."""
    attempts = refusing_podgroup_status(k8s, 1, 5, status=429)
    loop = asyncio.get_running_loop()
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "big", 3, cpu="1")  # does not fit: its PodGroup gets PodGroupInitiallyScheduled=False
    async with running(kube):
        await until(lambda: condition_message(kube, "big"), timeout_s=60, what="the PodGroup's condition written")
        landed = loop.time()
    assert len(attempts) >= 2 and landed - attempts[0] >= 5


@pytest.mark.looptime
async def test_a_failing_group_condition_is_retried_after_a_doubling_jittered_backoff(
        k8s: ApiServer, kube: KubeClient) -> None:
    """The first three PodGroup status PATCHes fail with 503: each retry comes after the writer's backoff timed
    from the failure, 1 s, then 2 s, then 4 s, each times a factor in [0.5, 1.5); the fourth lands, and nothing
    is written after it."""
    attempts = refusing_podgroup_status(k8s, 3, None)
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "big", 3, cpu="1")  # does not fit: its PodGroup gets PodGroupInitiallyScheduled=False
    async with running(kube):
        await until(lambda: condition_message(kube, "big"), timeout_s=60, what="the condition written")
        await asyncio.sleep(60)
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert len(gaps) == 3, attempts
    for gap, delay in zip(gaps, (1.0, 2.0, 4.0), strict=True):
        assert 0.5 * delay <= gap < 1.5 * delay + 0.1, gaps


def podgroup_attempts(sched, result: str) -> float:  # type: ignore[no-untyped-def]
    return sum(sample.value for metric in sched.metrics.registry.collect()
               if metric.name == "scheduler_podgroup_schedule_attempts" for sample in metric.samples
               if sample.name.endswith("_total") and sample.labels["result"] == result)


@pytest.mark.looptime
async def test_a_group_decided_again_while_its_condition_backs_off_is_not_written_sooner(
        k8s: ApiServer, kube: KubeClient) -> None:
    """The first three PodGroup status PATCHes fail with 503 and ``Retry-After: 10``. Nodes too small for any
    member keep arriving meanwhile, so the gang is decided again (each time with a new message) and its PodGroup
    marked again; none of these decisions brings a write forward — the retries stay 10 s apart — and the
    condition that finally lands is the latest decision's."""
    attempts = refusing_podgroup_status(k8s, 3, 10)
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "big", 3, cpu="1")
    async with running(kube) as sched:
        await until(lambda: len(attempts) == 1, timeout_s=30, what="the first condition PATCH")
        decided = podgroup_attempts(sched, "unschedulable")
        for i in range(16):  # one node every 2 s, none with room for a member
            await create_node(kube, f"tiny-{i}", cpu="500m")
            await asyncio.sleep(2)
        await until(lambda: len(attempts) >= 4, timeout_s=60, what="the condition written")
        assert podgroup_attempts(sched, "unschedulable") >= decided + 3  # decided again while it backed off
        await asyncio.sleep(30)
        assert "0/17 nodes are available" in await condition_message(kube, "big")
    gaps = [b - a for a, b in itertools.pairwise(attempts[:4])]
    assert all(gap >= 10 for gap in gaps), gaps
