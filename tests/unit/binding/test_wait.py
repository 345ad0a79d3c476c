"""The binding cycle's wait for a condition: re-read on changes of the kinds it names, bounded by its timeout
(on the fake loop clock)."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.binding.wait import Changes, wait_for
from scheduler.framework.binding_cycle import Failure
from scheduler.framework.events import Action, ClusterEvent

pytestmark = pytest.mark.looptime

CLAIMS = frozenset({"ResourceClaim"})


async def test_the_condition_is_read_again_only_when_a_kind_it_waits_on_changes() -> None:
    changes = Changes()
    reads: list[float] = []
    state = {"ready": False}
    loop = asyncio.get_running_loop()

    def ready() -> bool:
        reads.append(loop.time())
        return state["ready"]

    async def driver() -> None:
        await asyncio.sleep(5)
        changes.notify([ClusterEvent("Pod", Action.UPDATE)])  # not a kind it waits on: no read
        await asyncio.sleep(5)
        state["ready"] = True
        changes.notify([ClusterEvent("ResourceClaim", Action.UPDATE)])

    start = loop.time()
    helper = asyncio.create_task(driver())
    assert await wait_for(ready, changes, CLAIMS, 600) is True
    await helper
    assert [t - start for t in reads] == [0, 10]


async def test_a_failure_ends_the_wait_and_a_condition_never_met_times_out_at_its_bound() -> None:
    changes = Changes()
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await wait_for(lambda: False, changes, CLAIMS, 600) is False
    assert loop.time() - start == 600
    failure = Failure("ml/c", "bindingFailureConditions: Unhealthy")
    assert await wait_for(lambda: failure, changes, CLAIMS, 600) is failure
    assert changes._waiters == []  # nothing left subscribed


@pytest.mark.looptime
@pytest.mark.timeout(10)
async def test_a_deadline_between_two_ticks_of_the_clock_ends_the_wait() -> None:
    """The deadline falls 0.5 ns after a whole microsecond, the step of a fast-forwarded clock; asyncio runs a timer
    due within its clock resolution (1 ns), so the wait ends just before the deadline — it is over then, not waited
    for again and again with the clock standing still."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await wait_for(lambda: False, Changes(), CLAIMS, 1.2341270005) is False
    assert loop.time() - start == pytest.approx(1.234127, abs=1e-6)
