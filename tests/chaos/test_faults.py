"""Variant (b): 12 % injected 409/429/500/503 on the scheduler's writes, watch streams cut, histories compacted.

The faulted kinds: binds (which carry the durable intent), ResourceClaim status writes, pod / PodGroup /
CompositePodGroup status patches, Events (create and series patch). Every watch stream is cut (TCP closed)
after 1–5 s; every 2–6 s the server's history is compacted, so a resume from an older resourceVersion gets
ERROR 410 and the informer re-lists. Gangs arrive in waves while this goes on — plain gangs, one DRA gang and
one CompositePodGroup tree per wave — on a cluster with room for all of them, so every gang must end fully
bound. The faults stay on while the at-rest poll waits: retries have to get through them.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tests.chaos.harness import OpenVariant
from tests.chaos.server import STATUS_KINDS, FaultPlan, Kind
from tests.chaos.workload import (
    GangSpec,
    create_composite_tree,
    create_dra_basics,
    create_dra_gang,
    create_gang,
    create_nodes,
)

pytestmark = pytest.mark.chaos

FAULT_RATE = 0.12
FAULTED = frozenset({Kind.BIND, Kind.CLAIM_STATUS}) | STATUS_KINDS
WAVES = 5
WAVE_EVERY_S = 3.0
BUDGET_S = 150.0


async def test_faults_watch_resets_and_410s(chaos: OpenVariant) -> None:
    async with chaos("faults") as h, asyncio.timeout(BUDGET_S):
        await create_dra_basics(h.kube)
        await create_nodes(h.kube, "fc", 8, cpu="16")
        await create_nodes(h.kube, "fg", 4, cpu="16", gpu_devices=8)
        h.server.faults = FaultPlan(FAULTED, FAULT_RATE, h.fault_rng())
        h.server.watch_life_s = (1.0, 5.0)
        compactor = asyncio.create_task(h.server.compactions((2.0, 6.0)), name="chaos/faults/compactor")
        try:
            proc = h.process()
            await h.start(proc)
            gangs: list[GangSpec] = []
            for w in range(WAVES):
                for j in range(4):
                    gang = GangSpec(f"fa-{w}-{j}", h.rng.randint(2, 8))
                    await create_gang(h.kube, gang)
                    gangs.append(gang)
                dra = GangSpec(f"fa-{w}-gpu", 4)
                await create_dra_gang(h.kube, dra)
                gangs.append(dra)
                gangs += await create_composite_tree(h.kube, f"fa-{w}-tree", 2, 2)
                await asyncio.sleep(WAVE_EVERY_S)
            await h.finish(expect_full=[g.key for g in gangs])
        finally:
            compactor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await compactor
    h.report.assert_passed()
