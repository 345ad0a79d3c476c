"""The binding cycle's general "wait for a condition": re-read a condition from the cache whenever the cache
applied an object of the kinds it depends on, until it holds, fails, or the time is up.

A PreBind step that must see something happen before the first bind — its PersistentVolumeClaims bound by
the PV controller or a provisioner (VolumeBinding), its ResourceClaims' binding conditions set by a driver
(DynamicResources, KEP-5007) — waits here. Nothing polls the API: the driver hands every batch of cache events
to :meth:`Changes.notify`, which wakes the waiters whose kinds changed; between events they sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from scheduler.framework.binding_cycle import Failure
from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import Condition


class Changes:
    """Wakes the waiters of :func:`wait_for` when the cache applied a change of a kind they wait on.

    A waiter subscribes *before* it reads the cache and waits after: a change in between sets its event, so
    none is missed. Cost per :meth:`notify` is one pass over the waiters (the plans waiting now).
    """

    def __init__(self) -> None:
        self._waiters: list[tuple[frozenset[str], asyncio.Event]] = []

    def subscribe(self, kinds: frozenset[str]) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters.append((kinds, event))
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        self._waiters = [(k, e) for k, e in self._waiters if e is not event]

    def notify(self, events: Iterable[ClusterEvent]) -> None:
        if not self._waiters:
            return
        changed = {e.kind for e in events}
        keep: list[tuple[frozenset[str], asyncio.Event]] = []
        for kinds, event in self._waiters:
            if kinds & changed:
                event.set()
            else:
                keep.append((kinds, event))
        self._waiters = keep


async def wait_for(condition: Condition, changes: Changes, kinds: frozenset[str], timeout_s: float
                   ) -> bool | Failure:
    """Read ``condition`` now and after each change of one of ``kinds`` (cache kind names) until it is not
    False; returns that answer, or False once ``timeout_s`` seconds (on the loop's clock) have passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        wake = changes.subscribe(kinds)
        try:
            state = condition()
            if state is not False:
                return state
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(wake.wait(), remaining)
            except TimeoutError:  # the deadline, even if the loop woke up to its clock resolution (1 ns) before it
                return condition()
        finally:
            changes.unsubscribe(wake)
