"""Pipelining: no scheduling cycle waits on an earlier plan's round trips, and binds in flight are bounded by
``--bind-concurrency`` alone.

kube-scheduler assumes a placed pod and binds it in a goroutine, starting the next pod's cycle at once
(``pkg/scheduler/schedule_one.go``: ``assume`` then ``go sched.bindingCycle``). Here the emulator answers every
binding, every Event and every PodGroup write only after :data:`DELAY_S` of loop time (looptime: the loop's
clock is fake, so the delays cost no wall time and the assertions read it exactly): if a cycle waited on one
of them, deciding the next root would take at least that long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import kmock
import pytest

from scheduler.client.kube import NODES, PODS, KubeClient
from scheduler.live.driver import Scheduler
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, create_gang, node, pod, running, until

DELAY_S = 5.0
"""How long the emulator holds each delayed request, seconds of loop time (below the client's 30 s request
timeout, so no request is retried)."""


@dataclass
class Held:
    """Requests of one kind the emulator holds for :data:`DELAY_S`: how many entered, are in flight now, at most."""

    entered: int = 0
    in_flight: int = 0
    peak: int = 0


def hold(k8s: ApiServer, criteria: Any, serve: Callable[[kmock.Request], Awaitable[Any]]) -> Held:
    """Answer the requests matching ``criteria`` with ``serve`` (the emulator's own handler), each after
    :data:`DELAY_S` of loop time; returns the live counts."""
    held = Held()

    async def react(request: kmock.Request) -> Any:
        held.entered += 1
        held.in_flight += 1
        held.peak = max(held.peak, held.in_flight)
        try:
            await asyncio.sleep(DELAY_S)
            return await serve(request)
        finally:
            held.in_flight -= 1

    k8s[criteria] << react
    return held


def bound_in_cache(sched: Scheduler) -> int:
    """Pods the scheduler's watch shows bound (polled without a request: under looptime a request per poll
    would be thousands of requests, each walking the emulator's request history)."""
    return sum(1 for p in sched.cache.objects["Pod"].values() if p.is_bound)


def binding(k8s: ApiServer) -> Held:
    return hold(k8s, ("post", kmock.resource("", "v1", "pods"), kmock.subresource("binding")), k8s._serve_binding)


@pytest.mark.looptime
@pytest.mark.parametrize("concurrency", [2, 5], ids=["two-binds-in-flight", "five-binds-in-flight"])
async def test_every_plain_pod_is_decided_while_the_first_binds_are_still_held(
        k8s: ApiServer, kube: KubeClient, concurrency: int) -> None:
    binds = binding(k8s)
    events = hold(k8s, ("post", kmock.resource("events.k8s.io", "v1", "events")), k8s._serve_create)
    await kube.create(NODES, None, node("n1", cpu="64", memory="256Gi"))
    pods = 12
    for i in range(pods):
        await kube.create(PODS, NS, pod(f"p-{i:02d}", None, cpu="1"))
    loop = asyncio.get_running_loop()
    async with running(kube, bind_concurrency=concurrency) as sched:
        start = loop.time()
        await until(lambda: len(sched.cache.assumed) + binds.entered >= pods and sched.cycles >= pods,
                    what="every pod decided")
        decided = loop.time() - start
        assert binds.entered == concurrency and binds.in_flight == concurrency  # the rest wait for a slot
        assert sched.cycles == pods and len(sched.cache.assumed) == pods  # every cycle ran; none waited
        await until(lambda: bound_in_cache(sched) == pods, 300, "every pod bound")  # polls no request
        took = loop.time() - start
    placed = await bound_at_least(kube, "p-", pods)
    assert placed is not None
    assert decided < DELAY_S  # all twelve decided before the first bind's answer came back
    assert binds.peak == concurrency  # never more binds in flight than --bind-concurrency, and no fewer
    waves = -(-pods // concurrency)  # the binds go out in waves of `concurrency`, each held DELAY_S
    assert waves * DELAY_S <= took < (waves + 1) * DELAY_S
    assert sorted(placed) == [f"p-{i:02d}" for i in range(pods)] and set(placed.values()) == {"n1"}
    assert events.entered == pods  # one Scheduled Event per pod, written beside the binds, not before the next


@pytest.mark.looptime
async def test_a_gang_is_decided_while_the_previous_gangs_status_writes_and_binds_are_held(
        k8s: ApiServer, kube: KubeClient) -> None:
    binds = binding(k8s)
    podgroups = kmock.resource("scheduling.k8s.io", "v1beta1", "podgroups")
    writes = hold(k8s, ("patch", podgroups), k8s._serve_update)  # the conditions
    await kube.create(NODES, None, node("n1", cpu="64", memory="256Gi"))
    for g in range(3):
        await create_gang(kube, f"g{g}", 2)
    loop = asyncio.get_running_loop()
    async with running(kube, bind_concurrency=16) as sched:
        start = loop.time()
        await until(lambda: sched.cycles >= 3, what="every gang decided")
        decided = loop.time() - start
        await until(lambda: binds.entered == 6, what="every bind sent")
        sent = loop.time() - start
        assert binds.in_flight == 6  # no bind has answered yet: each plan's two went out side by side, at once
        await until(lambda: bound_in_cache(sched) == 6, 300, "every gang bound")
    assert decided < DELAY_S and sent < DELAY_S  # no plan waited for a write of its own before its binds
    assert len(await bound_at_least(kube, "g", 6) or {}) == 6
    assert binds.peak == 6 and writes.entered >= 1  # the three plans bound side by side; conditions written, held
