"""An API emulator whose watches lag behind its writes, as a real API server's watch cache does.

:class:`LaggingApiServer` answers every write at once but shows it to watches only ``lag_s`` (a range)
later, FIFO per resource. Tests use it to replay the server's event order: a bind's response first, its
MODIFIED event later, while the scheduler keeps working. :func:`lagging_server` is the fixture body.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import attrs
import kmock

from tests.integration.apiserver import ApiServer
from tests.integration.conftest import KUBELET_AFTER_S, RESOURCES, VERBS


@attrs.define(kw_only=True)
class LaggingApiServer(ApiServer):
    """An :class:`ApiServer` whose watch events reach watchers ``lag_s`` (min, max seconds, uniform) after the
    write, FIFO per resource."""

    lag_s: tuple[float, float] = (0.005, 0.06)
    lagged: frozenset[str] | None = None
    """The plurals whose watches lag (None: every resource's); may be changed while serving."""
    rng: random.Random = attrs.field(factory=lambda: random.Random(7))
    _queues: dict[Any, collections.deque] = attrs.field(factory=dict)
    _pumps: dict[Any, asyncio.Task] = attrs.field(factory=dict)

    async def _publish(self, resource, event):  # type: ignore[no-untyped-def]
        if self.lagged is not None and resource.plural not in self.lagged and not self._queues.get(resource):
            await super()._publish(resource, event)
            return
        self.log.append((int(event['object']['metadata']['resourceVersion']), resource, event))
        due = asyncio.get_running_loop().time() + self.rng.uniform(*self.lag_s)
        self._queues.setdefault(resource, collections.deque()).append((due, event))
        if resource not in self._pumps or self._pumps[resource].done():
            self._pumps[resource] = asyncio.create_task(self._pump(resource))

    async def _pump(self, resource: Any) -> None:
        queue = self._queues[resource]
        while queue:
            due, event = queue[0]
            delay = due - asyncio.get_running_loop().time()
            if delay > 0:
                await asyncio.sleep(delay)
            queue.popleft()
            await self._buses[resource].put(event)


@contextlib.asynccontextmanager
async def lagging_server(lag_s: tuple[float, float] = (0.005, 0.06)) -> AsyncIterator[LaggingApiServer]:
    """A running :class:`LaggingApiServer` with the integration tests' kinds registered."""
    async with LaggingApiServer(lag_s=lag_s, kubelet_after_s=KUBELET_AFTER_S) as srv, kmock.Server(srv):
        for path, (kind, namespaced, subresources) in RESOURCES.items():
            srv.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                     verbs=VERBS, subresources=subresources)
        yield srv
