"""Variant (d): leader failover mid-gang — two replicas with leader election, the leader SIGKILLed during binds.

Both replicas run ``--leader-elect`` on the emulator's Lease with a 4 s lease (3 s renew deadline,
1 s retry period: the smallest values that stay well clear of a loaded CI machine's hiccups). Each
round waits for a live leader, creates a gang of 8 and kills the leader after the gang's kth bind
(k seeded, 1–7); the killed replica is restarted as the new standby. The other replica must take
the Lease over and finish the gang: at rest every gang is fully bound.
"""

from __future__ import annotations

import asyncio

import pytest

from scheduler.client.kube import LEASES, ApiError
from tests.chaos.harness import Harness, OpenVariant
from tests.chaos.process import SchedulerProcess
from tests.chaos.server import KillSwitch, binds_of
from tests.chaos.workload import GangSpec, create_gang, create_nodes

pytestmark = pytest.mark.chaos

ROUNDS = 4
BUDGET_S = 150.0
LEASE_NS, LEASE_NAME = "kube-system", "gang-scheduler"
LEASE_FLAGS = ("--leader-elect", "--lease-namespace", LEASE_NS, "--lease-duration-s", "4", "--renew-deadline-s", "3",
               "--retry-period-s", "1")


async def live_leader(h: Harness, replicas: list[SchedulerProcess], timeout_s: float = 30.0) -> SchedulerProcess:
    """The replica the Lease names, once it names a live one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            holder = (await h.kube.get(LEASES, LEASE_NS, LEASE_NAME)).get("spec", {}).get("holderIdentity")
        except ApiError:
            holder = None
        leader = next((p for p in replicas if p.alive and holder and p.identity() == holder), None)
        if leader is not None:
            return leader
        if loop.time() > deadline:
            raise AssertionError(f"no live replica holds the Lease after {timeout_s} s (holder {holder!r})")
        await asyncio.sleep(0.2)


async def test_leader_killed_mid_gang_the_standby_finishes_it(chaos: OpenVariant) -> None:
    async with chaos("failover") as h, asyncio.timeout(BUDGET_S):
        await create_nodes(h.kube, "fo", 4, cpu="16")
        replicas = [h.process(name, LEASE_FLAGS) for name in ("replica-a", "replica-b")]
        for replica in replicas:
            await h.start(replica)
        gangs = []
        for r in range(ROUNDS):
            leader = await live_leader(h, replicas)
            gang = GangSpec(f"fo-{r}", 8)
            gangs.append(gang)
            k = h.rng.randint(1, gang.size - 1)
            switch = h.server.arm(KillSwitch(f"bind #{k} of {gang.name} by {leader.name}", binds_of(f"{gang.name}-"),
                                             k, leader.kill))
            await create_gang(h.kube, gang)
            if await h.killed(switch, leader):
                await h.start(leader)  # back as the standby
        await live_leader(h, replicas)
        await h.finish(expect_full=[g.key for g in gangs])
    h.report.assert_passed()
