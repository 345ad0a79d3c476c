"""StatusQueue: one report per object (the latest wins), bounded, retried with jittered backoff."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections.abc import AsyncIterator

import pytest

from scheduler.client.kube import ApiError
from scheduler.errors import Conflict, NotLeading
from scheduler.live.status_queue import StatusQueue


@contextlib.asynccontextmanager
async def running(queue: StatusQueue) -> AsyncIterator[None]:
    task = asyncio.create_task(queue.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def recorder(log: list[tuple[str, float]], name: str, errors: list[ApiError] | None = None):  # type: ignore[no-untyped-def]
    async def write() -> None:
        log.append((name, asyncio.get_running_loop().time()))
        if errors:
            raise errors.pop(0)
    return write


@pytest.mark.looptime
async def test_only_the_latest_report_of_an_object_is_written() -> None:
    queue, log = StatusQueue("t", workers=1), []
    for i in range(3):
        queue.submit("ml/p", recorder(log, f"report-{i}"))
    queue.submit("ml/q", recorder(log, "other"))
    assert queue.depth == 2
    async with running(queue):
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["report-2", "other"]
    assert (queue.depth, queue.written) == (0, 2)


@pytest.mark.looptime
async def test_beyond_the_bound_the_oldest_report_is_dropped() -> None:
    queue, log = StatusQueue("t", workers=1, max_pending=2), []
    for name in ("a", "b", "c"):
        queue.submit(name, recorder(log, name))
    assert (queue.depth, queue.dropped) == (2, 1)
    async with running(queue):
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["b", "c"]


@pytest.mark.looptime
async def test_a_retryable_failure_is_retried_with_jittered_backoff_until_it_lands() -> None:
    queue, log = StatusQueue("t", workers=1, retry_initial_s=1.0, retry_max_s=60.0), []
    errors = [ApiError(503, "ServiceUnavailable", "x") for _ in range(3)]
    start = asyncio.get_running_loop().time()
    queue.submit("ml/p", recorder(log, "p", errors))
    async with running(queue):
        await asyncio.sleep(30)
    times = [t - start for _, t in log]
    assert len(times) == 4 and queue.written == 1 and queue.failed == 3
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for gap, delay in zip(gaps, (1.0, 2.0, 4.0), strict=True):  # doubling, times a factor in [0.5, 1.5)
        assert 0.5 * delay <= gap < 1.5 * delay + 0.01


@pytest.mark.looptime
async def test_a_retry_waits_at_least_what_the_servers_retry_after_asks_up_to_retry_max_s() -> None:
    queue, log = StatusQueue("t", workers=1, retry_initial_s=1.0, retry_max_s=20.0), []
    errors = [ApiError(429, "TooManyRequests", "x", retry_after_s=7.0), ApiError(429, "TooManyRequests", "x",
                                                                              retry_after_s=300.0)]
    start = asyncio.get_running_loop().time()
    queue.submit("ml/p", recorder(log, "p", errors))
    async with running(queue):
        await asyncio.sleep(60)
    times = [t - start for _, t in log]
    assert len(times) == 3 and queue.written == 1
    assert [b - a for a, b in itertools.pairwise(times)] == pytest.approx([7.0, 20.0], abs=0.01)


@pytest.mark.looptime
async def test_a_permanent_failure_or_the_last_attempt_drops_the_report() -> None:
    queue, log = StatusQueue("t", workers=1, max_attempts=2), []
    queue.submit("a", recorder(log, "a", [ApiError(422, "Invalid", "x")]))
    queue.submit("b", recorder(log, "b", [ApiError(500, "InternalError", "x") for _ in range(5)]))
    async with running(queue):
        await asyncio.sleep(30)
    assert [name for name, _ in log] == ["a", "b", "b"]
    assert (queue.depth, queue.dropped, queue.oldest_age_s()) == (0, 2, 0.0)


@pytest.mark.looptime
async def test_a_newer_report_replaces_a_retry_waiting_for_its_backoff() -> None:
    queue, log = StatusQueue("t", workers=1, retry_initial_s=10.0), []
    queue.submit("p", recorder(log, "old", [ApiError(503, "ServiceUnavailable", "x")]))
    async with running(queue):
        await asyncio.sleep(1)
        assert queue.depth == 1 and queue.oldest_age_s() >= 1  # the failed one waits for its retry
        queue.submit("p", recorder(log, "new"))
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["old", "new"]


@pytest.mark.looptime
async def test_a_newer_report_waits_for_what_the_servers_retry_after_asked() -> None:
    queue, log = StatusQueue("t", workers=1, retry_initial_s=1.0, retry_max_s=60.0), []
    start = asyncio.get_running_loop().time()
    queue.submit("p", recorder(log, "old", [ApiError(429, "TooManyRequests", "x", retry_after_s=10.0)]))
    async with running(queue):
        await asyncio.sleep(1)
        queue.submit("p", recorder(log, "new"))
        assert queue.depth == 1
        await asyncio.sleep(20)
    assert [(name, round(t - start, 2)) for name, t in log] == [("old", 0.0), ("new", 10.0)]
    assert (queue.written, queue.failed) == (1, 1)


@pytest.mark.looptime
@pytest.mark.parametrize("retry_conflicts", [True, False])
async def test_a_409_is_retried_only_by_a_queue_told_to(retry_conflicts: bool) -> None:
    queue, log = StatusQueue("t", workers=1, retry_conflicts=retry_conflicts), []
    queue.submit("p", recorder(log, "p", [Conflict(409, "Conflict", "the object has been modified")]))
    async with running(queue):
        await asyncio.sleep(30)
    assert [name for name, _ in log] == (["p", "p"] if retry_conflicts else ["p"])
    assert queue.written == (1 if retry_conflicts else 0)


@pytest.mark.looptime
async def test_the_kept_writes_of_replaced_reports_run_once_each_in_order_before_the_latest_write() -> None:
    """A pod decided on three times before its report is written: one condition (the latest), three Events."""
    queue, log = StatusQueue("t", workers=1), []
    for i in range(3):
        queue.submit("ml/p", recorder(log, f"condition-{i}"), keep=recorder(log, f"event-{i}"))
    async with running(queue):
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["event-0", "event-1", "event-2", "condition-2"]


@pytest.mark.looptime
async def test_a_kept_write_is_not_lost_when_its_reports_write_fails_and_a_newer_report_replaces_the_retry() -> None:
    """The condition refused (409: the pod changed) and replaced by a newer decision's before its retry: the first
    decision's Event was recorded all the same, once; the second decision's too."""
    queue, log = StatusQueue("t", workers=1, retry_conflicts=True, retry_initial_s=10.0), []
    queue.submit("ml/p", recorder(log, "condition-0", [Conflict(409, "Conflict", "the object has been modified")]),
                 keep=recorder(log, "event-0"))
    async with running(queue):
        await asyncio.sleep(1)
        queue.submit("ml/p", recorder(log, "condition-1"), keep=recorder(log, "event-1"))
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["event-0", "condition-0", "event-1", "condition-1"]
    assert queue.depth == 0


@pytest.mark.looptime
async def test_kept_writes_repeated_in_a_row_are_held_once_and_run_as_often_as_submitted() -> None:
    """A root decided the same way 32 times while its pods' reports wait: one kept write is held per pod, not 32,
    and it runs 32 times (an Event's repeats count into its series); a different one in between is not merged."""
    queue, log = StatusQueue("t", workers=1), []
    for i in range(32):
        queue.submit("ml/p", recorder(log, f"condition-{i}"), keep=recorder(log, "event-a"), keep_id="a")
    queue.submit("ml/p", recorder(log, "condition-b"), keep=recorder(log, "event-b"), keep_id="b")
    queue.submit("ml/p", recorder(log, "condition-a"), keep=recorder(log, "event-a"), keep_id="a")
    assert [(k.id, k.times) for k in queue._pending["ml/p"].kept] == [("a", 32), ("b", 1), ("a", 1)]
    async with running(queue):
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["event-a"] * 32 + ["event-b", "event-a", "condition-a"]


@pytest.mark.looptime
async def test_a_failed_kept_write_does_not_stop_the_report() -> None:
    queue, log = StatusQueue("t", workers=1), []
    queue.submit("ml/p", recorder(log, "condition"), keep=recorder(log, "event", [ApiError(500, "InternalError", "x")]))
    async with running(queue):
        await asyncio.sleep(1)
    assert [name for name, _ in log] == ["event", "condition"] and queue.written == 1


class _Jitter(random.Random):
    """A backoff's jitter source that always draws ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.looptime
@pytest.mark.timeout(10)
async def test_a_retry_due_within_the_clocks_resolution_of_a_tick_is_written() -> None:
    """The retry is due at 1.2341270005 s: looptime's clock moves in whole microseconds, and asyncio runs a timer
    once it is due within ``clock_resolution`` (1 ns) of the clock, so the worker's wait for the retry ends at
    1.234127 s, before it is due; the retry is written then, not waited for again and again with the clock still."""
    queue, log = StatusQueue("t", workers=1, retry_initial_s=1.0, rng=_Jitter(0.7341270005)), []
    start = asyncio.get_running_loop().time()
    queue.submit("ml/p", recorder(log, "p", [ApiError(503, "ServiceUnavailable", "x")]))
    async with running(queue):
        await asyncio.sleep(30)
    assert [(name, round(t - start, 6)) for name, t in log] == [("p", 0.0), ("p", 1.234127)]
    assert (queue.written, queue.failed) == (1, 1)


@pytest.mark.looptime
async def test_reports_refused_because_the_replica_no_longer_leads_are_dropped_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    """A failover: each write is refused before it is sent (``NotLeading``); the next leader reports what still
    stands, so nothing is retried, counted failed or warned about, and a repeated kept write stops at the first."""
    queue, log = StatusQueue("pod-status", workers=1), []
    for i in range(3):
        for _ in range(2):
            queue.submit(f"ml/p{i}", recorder(log, f"condition-{i}", [NotLeading("not sent")]),
                         keep=recorder(log, f"event-{i}", [NotLeading("not sent")] * 2), keep_id="x")
    with caplog.at_level(logging.DEBUG, logger="scheduler.live.status_queue"):
        async with running(queue):
            await asyncio.sleep(30)
    assert [name for name, _ in log] == ["event-0", "event-1", "event-2"]
    assert (queue.written, queue.failed, queue.dropped, queue.depth) == (0, 0, 0, 0)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
