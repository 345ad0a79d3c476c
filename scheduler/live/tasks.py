"""The live scheduler's background tasks: each named, its failure logged at once (kopf's guarded tasks,
``kopf/_cogs/aiokits/aiotasks.py``), all kept so shutdown can wait for the writes in flight; and the wait the
worker loops share (:func:`woken_or_due`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]]
"""Starts a guarded task: a coroutine and the task's name (``bind/<root>``, ``status/<root>``, …)."""


class Tasks:
    """The running background tasks (iterate for them); :meth:`spawn` starts one."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start a named background task whose failure is logged at once."""
        task = asyncio.create_task(coro, name=name)
        self.running.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.running.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("task %s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(self.running)


async def woken_or_due(wake: asyncio.Event, due: float | None) -> float | None:
    """Wait until ``wake`` is set (it is cleared first) or, when given, loop time ``due`` comes; returns ``due`` when
    its wait ran out, else None. The caller takes the ``due`` returned as reached: asyncio runs a timer once its time
    is below the clock's plus ``clock_resolution`` (``BaseEventLoop._run_once``), so the wait may end before
    ``loop.time()`` reaches ``due``, and waiting for it again would spin while a fast-forwarded clock (moved only while
    the loop is idle) stands still."""
    wake.clear()
    if due is None:
        await wake.wait()
        return None
    try:
        await asyncio.wait_for(wake.wait(), max(0.0, due - asyncio.get_running_loop().time()))
    except TimeoutError:
        return due
    return None
