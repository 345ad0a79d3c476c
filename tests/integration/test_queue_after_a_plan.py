"""A root whose plan left members pending: decided once more right after the plan, then left to its backoff.

The plan's own binds coming back through the watch (the pods bound, their nominations cleared by the server or
by us) change nothing that could place the members left pending — as kube-scheduler's queueing hints skip an
assigned pod's update for a pod rejected for room (``NodeResourcesFit``'s ``isSchedulableAfterPodEvent``) —
so they do not decide the root again; and the end of the binds does not drop the root from the queue nor
start its backoff over, so each decision logs the backoff the root then waits.
"""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from scheduler.model.scheduling import GroupKey
from tests.integration.livekit import NS, bound_at_least, create_node, pod, podgroup, running, until

BIG = GroupKey("PodGroup", NS, "big")


async def create_gang(kube: KubeClient, name: str, n: int, min_count: int, priority: int, mode: str | None = None
                      ) -> None:
    group = podgroup(name, min_count, priority=priority)
    if mode is not None:
        group["spec"]["disruptionMode"] = {mode: {}}
    await kube.create(PODGROUPS, NS, group)
    for i in range(n):
        await kube.create(PODS, NS, pod(f"{name}-{i}", name, cpu="3"))


@pytest.mark.looptime
async def test_a_preemptor_placed_in_part_is_decided_once_more_and_keeps_its_backoff(
        k8s, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scheduler.live.driver")
    for i in range(3):
        await create_node(kube, f"n{i}", cpu="4")
    await create_gang(kube, "allg", 3, 3, priority=100, mode="all")
    async with running(kube) as sched:
        await until(lambda: bound_at_least(kube, "allg-", 3), what="allg bound")
        await create_gang(kube, "big", 4, 3, priority=1000)  # 3 of its 4 fit, once allg is preempted
        await until(lambda: bound_at_least(kube, "big-", 3), timeout_s=60, what="3 of big bound")
        await until(lambda: not sched._binding, what="the binds ended")
        await asyncio.sleep(5)
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"root={BIG} ")]
        after = lines[next(i for i, line in enumerate(lines) if "result=Scheduled" in line) + 1:]
        assert len(after) == 1, after  # big-3 tried once on the room left, not again for each bind
        assert "result=Unschedulable" in after[0]
        logged = float(re.search(r"backoff_s=(\d+)", after[0]).group(1))
        entry = sched.queue.backing_off.get(BIG)
        assert entry is not None, "the root left pending is still queued after its binds ended"
        queue = sched.queue  # the backoff it waits
        assert logged == min(queue.initial_backoff_s * 2 ** (queue.attempts[BIG] - 1), queue.max_backoff_s)
