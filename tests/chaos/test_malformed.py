"""Variant (e): hypothesis-generated malformed PodGroups, CompositePodGroups, pods, nodes and ResourceSlices
fed through the API to one live scheduler, with a good gang created alongside each batch.

Each hypothesis example (``CHAOS_EXAMPLES`` of them, seeded from ``CHAOS_SEED``, no shrinking: the
scheduler's state carries over from one example to the next) creates a batch from
:func:`tests.chaos.malformed.batches`, then a good gang on the ``good`` nodes (every fourth a DRA gang),
and requires that gang to be fully bound within 20 s while the scheduler keeps running. Hypothesis
runs in a worker thread; each example's I/O runs on the test's loop, where the emulator serves.
At rest, besides the usual checks (no traceback in the log and no exit among them): every good
gang is fully bound.
"""

from __future__ import annotations

import asyncio
import itertools
import os

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from scheduler.client.kube import ApiError
from tests.chaos.harness import Harness, OpenVariant, harness_client
from tests.chaos.malformed import Unit, batches, materialize
from tests.chaos.observe import GangState, read_cluster
from tests.chaos.process import SchedulerProcess
from tests.chaos.workload import GangSpec, create_dra_basics, create_dra_gang, create_gang, create_nodes
from tests.integration.apiserver import UNCHECKED_HEADER

pytestmark = pytest.mark.chaos

BUDGET_S = 200.0
GOOD_BIND_S = 20.0
KEPT_BINDING = "good gangs created alongside kept binding"


def examples() -> int:
    return int(os.environ.get("CHAOS_EXAMPLES", 30))


class Feeder:
    """Feeds one batch per example and waits for that example's good gang; remembers what it saw."""

    def __init__(self, h: Harness, proc: SchedulerProcess) -> None:
        self.h = h
        self.proc = proc
        self.good: list[GangSpec] = []
        self.refused = 0
        self.created = 0
        self.stuck: list[str] = []
        self.unchecked = harness_client(str(h.server.url))
        self.unchecked.api.default_headers[UNCHECKED_HEADER] = "malformed"

    async def feed(self, n: int, batch: Unit) -> None:
        for resource, body in batch:
            obj = materialize(body, f"m{n}-")
            try:  # stored past the server's validation: what an older or laxer server (a CRD) lets through
                await self.unchecked.create(resource, obj["metadata"].get("namespace"), obj)
                self.created += 1
            except ApiError:  # the emulator refused it (e.g. a body it cannot digest): not the scheduler's doing
                self.refused += 1
        gang = GangSpec(f"good-{n}", 2 if n % 4 == 3 else 3, cpu="100m", pool="good")
        await (create_dra_gang if n % 4 == 3 else create_gang)(self.h.kube, gang)
        self.good.append(gang)
        await self.wait_bound(gang)

    async def wait_bound(self, gang: GangSpec) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GOOD_BIND_S
        while self.proc.alive:
            state = (await read_cluster(self.h.kube)).gangs()[gang.key].state
            if state is GangState.FULL:
                return
            if loop.time() > deadline:
                self.stuck.append(f"{gang.key}: not bound {GOOD_BIND_S:.0f} s after the batch ({state})")
                raise AssertionError(self.stuck[-1])
            await asyncio.sleep(0.1)
        raise AssertionError(f"the scheduler exited ({self.proc.returncode}) after batch {len(self.good) - 1}")


def run_hypothesis(feeder: Feeder, loop: asyncio.AbstractEventLoop) -> str | None:
    """Run the examples (in this worker thread); the falsifying example's message, or None."""
    counter = itertools.count()

    @seed(feeder.h.report.seed)
    @settings(max_examples=examples(), deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(batch=batches())
    def one_batch(batch: Unit) -> None:
        asyncio.run_coroutine_threadsafe(feeder.feed(next(counter), batch), loop).result(timeout=GOOD_BIND_S + 30)

    try:
        one_batch()
    except AssertionError as exc:
        return "".join(str(exc).splitlines()[:1]) + "".join(f" | {note}" for note in getattr(exc, "__notes__", []))
    return None


async def test_malformed_objects_do_not_stop_the_scheduler(chaos: OpenVariant) -> None:
    async with chaos("malformed") as h, asyncio.timeout(BUDGET_S):
        await create_dra_basics(h.kube)
        await create_nodes(h.kube, "good", 4, cpu="64", pool="good", gpu_devices=8)
        proc = h.process()
        await h.start(proc)
        feeder = Feeder(h, proc)
        try:
            falsified = await asyncio.to_thread(run_hypothesis, feeder, asyncio.get_running_loop())
        finally:
            await feeder.unchecked.close()
        h.report.notes.append(f"{feeder.created} malformed objects created ({feeder.refused} refused by the "
                              f"emulator) in {len(feeder.good)} batches")
        await h.finish(expect_full=[g.key for g in feeder.good], extra={KEPT_BINDING: [falsified] if falsified else []})
    h.report.assert_passed()
