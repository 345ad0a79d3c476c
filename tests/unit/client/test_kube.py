"""The client rate limiter's lanes: a bind never waits behind reports, a lease renewal behind nothing."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.client.kube import Lane, RateLimiter


@pytest.mark.looptime
async def test_an_urgent_request_goes_before_every_waiting_report() -> None:
    limiter = RateLimiter(qps=1.0, burst=1)
    order: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def request(name: str, lane: Lane) -> None:
        await limiter.acquire(lane)
        order.append(f"{name}@{loop.time() - start:.0f}")

    reports = [asyncio.create_task(request(f"report-{i}", Lane.REPORT)) for i in range(5)]
    await asyncio.sleep(0)  # the first report takes the one saved token; four wait
    bind = asyncio.create_task(request("bind", Lane.URGENT))
    await asyncio.gather(*reports, bind)
    assert order == ["report-0@0", "bind@1", "report-1@2", "report-2@3", "report-3@4", "report-4@5"]


@pytest.mark.looptime
async def test_a_lease_renewal_goes_before_every_waiting_bind() -> None:
    """A gang's binds queued at a low client QPS: the leader's renewal, asked for after them, takes the next token."""
    limiter = RateLimiter(qps=1.0, burst=1)
    order: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def request(name: str, lane: Lane) -> None:
        await limiter.acquire(lane)
        order.append(f"{name}@{loop.time() - start:.0f}")

    binds = [asyncio.create_task(request(f"bind-{i}", Lane.URGENT)) for i in range(4)]
    await asyncio.sleep(0)
    renewal = asyncio.create_task(request("renewal", Lane.LEASE))
    await asyncio.gather(*binds, renewal)
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
