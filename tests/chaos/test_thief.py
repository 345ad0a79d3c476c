"""Variant (c): a thief gang during each downtime on a nearly full cluster — the first way a gang was left half-bound.

Each round has its own two nodes of 8 CPUs and a victim gang of 8 pods × 2 CPUs that fills them
exactly. The scheduler is SIGKILLed after the victim's kth bind (k seeded, 1–7); while it is down a
thief that fits in the victim's unbound room appears:

* rounds 0, 3: **same priority, older**: the thief's PodGroup was created *before* the victim (so
  first in queue order) with one member short, and its last member arrives during the downtime;
* rounds 1, 4: **higher priority**: a new thief of PriorityClass ``chaos-high``; the victim has
  ``disruptionMode: all``, so a scheduler that lets the higher priority take the room can tear the
  victim down whole (the gang repair; its timeout, 8 s in ``process.CHAOS_FLAGS``, must be
  below ``CHAOS_SETTLE_S``);
* rounds 2, 5: **same priority, newer**: a whole new thief of the victim's PriorityClass. Queue order
  is priority, then creationTimestamp — whole seconds, as on a real server — then name, so a thief
  created in the victim's second comes first ("thief-…" < "victim-…").

At rest no victim may be left with 0 < bound < 8. Nothing is required to be fully bound (the
room fits one of the two gangs, and which one depends on the priorities), but the kills themselves
need the victims to bind, so a scheduler that binds nothing fails here too.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.chaos.harness import Harness, OpenVariant
from tests.chaos.process import SchedulerProcess
from tests.chaos.server import KillSwitch, binds_of
from tests.chaos.workload import HIGH, NORMAL, GangSpec, create_gang, create_nodes, create_pods, create_priority_classes

pytestmark = pytest.mark.chaos

ROUNDS = 6
BUDGET_S = 150.0
VICTIM_SIZE = 8


OLDER, HIGHER, NEWER = "same-priority older", "higher-priority", "same-priority newer"
KINDS = (OLDER, HIGHER, NEWER)


async def thief_round(h: Harness, proc: SchedulerProcess, r: int) -> None:
    pool = f"th{r}"
    kind = KINDS[r % len(KINDS)]
    higher = kind is HIGHER
    await create_nodes(h.kube, pool, 2, cpu="8", pool=pool)
    k = h.rng.randint(1, VICTIM_SIZE - 1)
    size = h.rng.randint(1, VICTIM_SIZE - k)
    thief = GangSpec(f"thief-{r}", size, cpu="2", pool=pool, priority_class=HIGH if higher else NORMAL)
    if kind is OLDER:  # older than the victim, one member short until the downtime
        await create_gang(h.kube, thief, range(size - 1))
    victim = GangSpec(f"victim-{r}", VICTIM_SIZE, cpu="2", pool=pool, priority_class=NORMAL, disruption_all=higher)
    await create_gang(h.kube, victim)
    switch = h.server.arm(KillSwitch(f"bind #{k} of {victim.name}", binds_of(f"{victim.name}-"), k, proc.kill))
    if not proc.alive:
        await h.start(proc)
    if not await h.killed(switch, proc):
        return
    if kind is OLDER:
        await create_pods(h.kube, thief, range(size - 1, size))
    else:
        await create_gang(h.kube, thief)
    h.report.notes.append(f"round {r}: victim killed after bind #{k}, {kind} thief of {size} in the downtime")
    await asyncio.sleep(h.rng.uniform(0.0, 0.5))


async def test_thief_gang_during_each_downtime(chaos: OpenVariant) -> None:
    async with chaos("thief") as h, asyncio.timeout(BUDGET_S):
        await create_priority_classes(h.kube)
        proc = h.process()
        for r in range(ROUNDS):
            await thief_round(h, proc, r)
        if not proc.alive:
            await h.start(proc)
        await h.finish()
    h.report.assert_passed()
