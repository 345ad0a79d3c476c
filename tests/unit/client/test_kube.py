"""The client rate limiter's lanes: a bind never waits behind reports, a lease renewal behind nothing."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.client.kube import Lane, RateLimiter


async def served(first: list[tuple[str, Lane]], late: tuple[str, Lane]) -> list[str]:
    """``name@second`` in the order a rate limiter of 1 per second (burst 1) serves ``first``, asked for at once, and
    ``late``, asked for once the first of them took the one saved token."""
    limiter = RateLimiter(qps=1.0, burst=1)
    order: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def request(name: str, lane: Lane) -> None:
        await limiter.acquire(lane)
        order.append(f"{name}@{loop.time() - start:.0f}")

    waiting = [asyncio.create_task(request(name, lane)) for name, lane in first]
    await asyncio.sleep(0)
    await asyncio.gather(*waiting, request(*late))
    return order


@pytest.mark.looptime
async def test_an_urgent_request_goes_before_every_waiting_report() -> None:
    order = await served([(f"report-{i}", Lane.REPORT) for i in range(5)], ("bind", Lane.URGENT))
    assert order == ["report-0@0", "bind@1", "report-1@2", "report-2@3", "report-3@4", "report-4@5"]


@pytest.mark.looptime
async def test_a_lease_renewal_goes_before_every_waiting_bind() -> None:
    """A gang's binds queued at a low client QPS: the leader's renewal, asked for after them, takes the next token."""
    order = await served([(f"bind-{i}", Lane.URGENT) for i in range(4)], ("renewal", Lane.LEASE))
    assert order == ["bind-0@0", "renewal@1", "bind-1@2", "bind-2@3", "bind-3@4"]


@pytest.mark.looptime
async def test_a_cancelled_waiter_uses_no_token() -> None:
    limiter = RateLimiter(qps=1.0, burst=1)
    await limiter.acquire(Lane.REPORT)
    loop = asyncio.get_running_loop()
    start = loop.time()
    gone = asyncio.create_task(limiter.acquire(Lane.REPORT))
    await asyncio.sleep(0.5)
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    await limiter.acquire(Lane.NORMAL)
    assert loop.time() - start == pytest.approx(1.0)  # the next token, not the one after


@pytest.mark.looptime
async def test_no_limit_means_no_wait() -> None:
    """``qps <= 0``: 100 requests in a row, far past the burst of 1, each goes at once (loop time does not move)."""
    limiter = RateLimiter(qps=0, burst=1)
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def hundred() -> None:
        for _ in range(100):
            await limiter.acquire(Lane.REPORT)

    await asyncio.wait_for(hundred(), timeout=1)  # a limited one would wait ~99 s; raises TimeoutError then
    assert loop.time() == start
