"""The live scheduler's background tasks: each named, its failure logged at once (kopf's guarded tasks,
``kopf/_cogs/aiokits/aiotasks.py``), all kept so shutdown can wait for the writes in flight."""

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
