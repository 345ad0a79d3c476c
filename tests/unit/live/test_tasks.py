"""Guarded background tasks: kept while they run, a failure logged at once with the task's name."""

from __future__ import annotations

import asyncio
import logging

import pytest

from scheduler.live.tasks import Tasks


async def test_a_failed_task_is_logged_by_name_and_finished_tasks_are_dropped(caplog: pytest.LogCaptureFixture
                                                                               ) -> None:
    tasks = Tasks()
    release = asyncio.Event()

    async def fails() -> None:
        raise RuntimeError("boom")

    async def waits() -> None:
        await release.wait()

    waiting = tasks.spawn(waits(), "status/ml/g")
    with caplog.at_level(logging.ERROR, logger="scheduler.live.tasks"):
        failing = tasks.spawn(fails(), "bind/ml/g")
        await asyncio.gather(failing, return_exceptions=True)
        await asyncio.sleep(0)
    assert [r.getMessage() for r in caplog.records] == ["task bind/ml/g failed"]
    assert list(tasks) == [waiting]
    release.set()
    await waiting
    await asyncio.sleep(0)
    assert list(tasks) == []
