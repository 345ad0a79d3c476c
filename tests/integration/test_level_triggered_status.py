"""Group status is level-triggered — derived from what is observed, written where the object
differs, retried when a write fails — and reports are not re-sent or self-waking.

Problem 2: a failed status patch was never retried; a crash right after the last bind left no condition;
a gang completed by someone else's bind kept ``False/Unschedulable``. Problem 3: every restart re-sent
every failure report. Problem 5: a failing gang was woken by its own status writes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kmock
import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, KubeClient
from scheduler.model.scheduling import GroupKey
from tests.integration.livekit import NS, bound_at_least, create_gang, create_node, running, until


async def condition(kube: KubeClient, group: str) -> dict[str, Any] | None:
    obj = await kube.get(PODGROUPS, NS, group)
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c["type"] == "PodGroupInitiallyScheduled"), None)


async def is_true(kube: KubeClient, group: str) -> bool:
    cond = await condition(kube, group)
    return cond is not None and cond["status"] == "True"


def status_patches(k8s: Any, plural: str) -> list[Any]:
    return [r for r in k8s if r.method == "PATCH" and r.resource is not None and r.resource.plural == plural
            and r.subresource == "status"]


@pytest.mark.looptime
async def test_a_failed_condition_write_is_retried_until_it_lands(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 2, cpu="1")
    patches = k8s['patch', kmock.resource('scheduling.k8s.io/v1beta1/podgroups'), kmock.subresource('status')]
    n = len(patches)
    patches[n:n + 3] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "injected"}
    async with running(kube) as sched:
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
        await until(lambda: is_true(kube, "g"), timeout_s=60, what="the condition written after 3 failures")
        assert sched.conditions.failures == 3


@pytest.mark.looptime
async def test_a_gang_bound_while_no_scheduler_ran_is_shown_scheduled(k8s, kube: KubeClient) -> None:
    """The crash right after the last bind, as the restarted scheduler finds it: every member bound, no
    condition. (The same holds for a gang another client bound.)"""
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 3, cpu="1")
    for i in range(3):
        await kube.bind(NS, f"g-{i}", "n0")
    async with running(kube):
        await until(lambda: is_true(kube, "g"), what="the condition of a gang bound before the start")


@pytest.mark.looptime
async def test_a_gang_completed_by_another_clients_bind_turns_scheduled(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "g", 3, cpu="1")  # 3 × 1 cpu on 2 cpu: Unschedulable
    async with running(kube):
        await until(lambda: condition(kube, "g"), what="the Unschedulable condition")
        assert (await condition(kube, "g"))["reason"] == "Unschedulable"
        for i in range(3):  # someone else binds the whole gang (it overcommits: not our business)
            await kube.bind(NS, f"g-{i}", "n0")
        await until(lambda: is_true(kube, "g"), what="True once every member is bound, by anyone")


@pytest.mark.looptime
async def test_a_restart_does_not_resend_what_the_objects_already_show(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "g", 3, cpu="1")  # stays Unschedulable
    async with running(kube):
        await until(lambda: condition(kube, "g"), what="the Unschedulable condition")
        await asyncio.sleep(5)
    events_before, _ = await kube.list(EVENTS, NS)
    pods_before, groups_before = len(status_patches(k8s, "pods")), len(status_patches(k8s, "podgroups"))
    async with running(kube):
        await asyncio.sleep(10)  # the restarted scheduler tries the gang again (same failure)
    events_after, _ = await kube.list(EVENTS, NS)
    assert len(events_after) == len(events_before)
    assert len(status_patches(k8s, "pods")) == pods_before
    assert len(status_patches(k8s, "podgroups")) == groups_before


@pytest.mark.looptime
async def test_a_failing_gangs_backoff_is_not_cut_short_by_its_own_status_writes(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "g", 3, cpu="1")
    async with running(kube, backoff_initial_s=1.0, backoff_max_s=60.0) as sched:
        await until(lambda: condition(kube, "g"), what="the first failure reported")
        await asyncio.sleep(30)
        # tries at 0, 1, 3, 7, 15, 31 s of backoff: 5 or 6 by now, however many status writes came back
        assert sched.queue.attempts[GroupKey("PodGroup", NS, "g")] <= 6
