"""Variant (a): SIGKILL at exact, seeded points — after the Nth bind (the first one, whose Binding puts the plan's
durable intent on record, every fourth round), between claim writes and binds, during status writes — then restart;
20 kills in all. Capacity is ample, so every gang must end fully bound.

Each round creates a wave of gangs, arms a :class:`~tests.chaos.server.KillSwitch` on the next
Nth write of a kind, (re)starts the scheduler and waits for the kill; after a short downtime the
next round begins. The writes of the killed process still in flight are refused (see
``server.BLACKOUT_S``), so the cluster is left exactly as the crash left it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from scheduler.client.kube import KubeClient
from tests.chaos.harness import Harness, OpenVariant
from tests.chaos.process import SchedulerProcess
from tests.chaos.server import STATUS_KINDS, KillSwitch, Kind, kinds_of
from tests.chaos.workload import GangSpec, create_dra_basics, create_dra_gang, create_gang, create_nodes

pytestmark = pytest.mark.chaos

BUDGET_S = 150.0
"""Wall-clock bound of one variant (the at-rest poll included)."""

Wave = Callable[[int], Awaitable[list[GangSpec]]]
Arm = Callable[[int, SchedulerProcess], KillSwitch]


async def kill_rounds(h: Harness, rounds: int, wave: Wave, arm: Arm) -> list[GangSpec]:
    """``rounds`` times: create a wave, arm a switch, (re)start the scheduler, wait for the kill, pause.
    Then start it once more for the at-rest poll; returns every gang created."""
    proc = h.process()
    gangs: list[GangSpec] = []
    for i in range(rounds):
        gangs += await wave(i)
        switch = h.server.arm(arm(i, proc))
        if not proc.alive:
            await h.start(proc)
        await h.killed(switch, proc)
        await asyncio.sleep(h.rng.uniform(0.0, 0.5))  # downtime
    if not proc.alive:
        await h.start(proc)
    return gangs


def waves(h: Harness, prefix: str, size: int, create: Callable[[KubeClient, GangSpec], Awaitable[None]]) -> Wave:
    """Each round, two new gangs ``prefix-<round>-<j>`` of ``size`` pods made by ``create``."""
    async def wave(i: int) -> list[GangSpec]:
        gangs = [GangSpec(f"{prefix}-{i}-{j}", size) for j in range(2)]
        for gang in gangs:
            await create(h.kube, gang)
        return gangs

    return wave


async def run_variant(h: Harness, rounds: int, wave: Wave, arm: Arm) -> None:
    async with asyncio.timeout(BUDGET_S):
        gangs = await kill_rounds(h, rounds, wave, arm)
        await h.finish(expect_full=[g.key for g in gangs])


async def test_kill_after_the_nth_bind(chaos: OpenVariant) -> None:
    async with chaos("kill-bind") as h:
        await create_nodes(h.kube, "kb", 10, cpu="16")

        def arm(i: int, proc: SchedulerProcess) -> KillSwitch:
            if i % 4 == 3:  # the first bind of a run: the first member on record with the plan's durable intent
                return KillSwitch("bind #1", kinds_of(Kind.BIND), 1, proc.kill)
            n = h.rng.randint(1, 15)
            return KillSwitch(f"bind #{n}", kinds_of(Kind.BIND), n, proc.kill)

        await run_variant(h, 8, waves(h, "kb", 8, create_gang), arm)
    h.report.assert_passed()


async def test_kill_between_claim_writes_and_binds(chaos: OpenVariant) -> None:
    async with chaos("kill-claims") as h:
        await create_dra_basics(h.kube)
        await create_nodes(h.kube, "kc", 8, cpu="16", gpu_devices=8)

        def arm(i: int, proc: SchedulerProcess) -> KillSwitch:
            n = h.rng.randint(1, 8)
            return KillSwitch(f"resourceclaims/status write #{n}", kinds_of(Kind.CLAIM_STATUS), n, proc.kill)

        await run_variant(h, 6, waves(h, "kc", 4, create_dra_gang), arm)
    h.report.assert_passed()


async def test_kill_during_status_writes(chaos: OpenVariant) -> None:
    async with chaos("kill-status") as h:
        await create_nodes(h.kube, "ks", 6, cpu="16")

        def arm(i: int, proc: SchedulerProcess) -> KillSwitch:
            if h.rng.random() < 0.5:  # right after a gang's last bind: its condition is the next write
                return KillSwitch("first podgroups/status write", kinds_of(Kind.PODGROUP_STATUS), 1, proc.kill)
            n = h.rng.randint(1, 10)
            return KillSwitch(f"status write #{n}", kinds_of(*STATUS_KINDS), n, proc.kill)

        await run_variant(h, 6, waves(h, "ks", 4, create_gang), arm)
    h.report.assert_passed()
