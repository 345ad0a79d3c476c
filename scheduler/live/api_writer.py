"""The binding cycle's writer in ``run``: each write sent to the API server through the one client.

:class:`KubeWriter` implements :class:`~scheduler.framework.interface.ApiWriter` for the PreBind and Bind
plugins (``scheduler.binding``):

* every request goes in the client's URGENT lane (a plan in flight holds room other roots wait for);
* 429, 5xx and transport failures are retried after :class:`~scheduler.live.backoff.Backoff` (``retry_initial_s``
  doubling up to ``retry_max_s``, jittered, longer when the reply's ``Retry-After`` asks it; at most
  ``max_attempts`` tries); anything else is raised at once;
* :meth:`KubeWriter.slot` bounds the writes in flight (``concurrency``; client QPS is the client's rate
  limiter); :meth:`KubeWriter.leading` is the leadership fence, checked by the plugins before each write so a
  replica that stopped leading never writes next to the new leader (architecture §14);
* :meth:`KubeWriter.wait` waits on the cache through :class:`~scheduler.binding.wait.Changes`, which the
  driver feeds with every batch of cache events.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from scheduler.binding.wait import Changes, wait_for
from scheduler.client.kube import JSON, ApiError, KubeClient, Lane, Resource
from scheduler.framework.binding_cycle import Failure
from scheduler.framework.interface import Condition
from scheduler.live.backoff import Backoff
from scheduler.model.kinds import Kind
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)

T = TypeVar("T")


class KubeWriter:
    """See the module docstring. ``fence``: whether this replica leads;
    ``changes``: what wakes :meth:`wait` (None: a wait reads its condition once)."""

    def __init__(self, kube: KubeClient, *, concurrency: int = 16, max_attempts: int = 5,
                 retry_initial_s: float = 0.2, retry_max_s: float = 5.0, rng: random.Random | None = None,
                 fence: Callable[[], bool] | None = None, changes: Changes | None = None) -> None:
        self.kube = kube
        self.fence = fence or (lambda: True)
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_attempts = max_attempts
        self.backoff = Backoff(retry_initial_s, retry_max_s, rng or random.Random())
        self.changes = changes

    def leading(self) -> bool:
        return self.fence()

    def slot(self) -> AbstractAsyncContextManager[Any]:
        return self.semaphore

    def resource(self, kind: Kind[Any]) -> Resource:
        return Resource.of(kind)

    async def get(self, kind: Kind[Any], namespace: str | None, name: str) -> JSON:
        return await self.retry(f"read {kind.name} {namespace}/{name}", lambda: self.kube.get(
            self.resource(kind), namespace, name, lane=Lane.URGENT))

    async def create(self, kind: Kind[Any], namespace: str | None, body: JSON) -> JSON:
        return await self.retry(f"create {kind.name} in {namespace}", lambda: self.kube.create(
            self.resource(kind), namespace, body, lane=Lane.URGENT))

    async def patch(self, kind: Kind[Any], namespace: str | None, name: str, body: JSON, *,
                    sub: str | None = None, reply: bool = True) -> JSON:
        if sub is None:
            return await self._patch(kind, namespace, name, body, reply)
        if sub != "status":
            raise ValueError(f"the binding cycle writes no {sub!r} subresource")
        return await self._patch_status(kind, namespace, name, body)

    async def _patch(self, kind: Kind[Any], namespace: str | None, name: str, body: JSON, reply: bool) -> JSON:
        return await self.retry(f"patch {kind.name} {namespace}/{name}", lambda: self.kube.patch(
            self.resource(kind), namespace, name, body, lane=Lane.URGENT, reply=reply))

    async def _patch_status(self, kind: Kind[Any], namespace: str | None, name: str, body: JSON) -> JSON:
        return await self.retry(f"patch {kind.name} {namespace}/{name}/status", lambda: self.kube.patch(
            self.resource(kind), namespace, name, body, sub="status", lane=Lane.URGENT))

    async def delete(self, kind: Kind[Any], namespace: str | None, name: str) -> None:
        await self.retry(f"delete {kind.name} {namespace}/{name}", lambda: self.kube.delete(
            self.resource(kind), namespace, name, lane=Lane.URGENT))

    async def bind(self, pod: Pod, node: str, annotations: Mapping[str, str] | None = None,
                   check: Callable[[], str | None] | None = None) -> None:
        await self.retry(f"bind {pod.key} -> {node}", lambda: self.kube.bind(
            pod.metadata.namespace, pod.metadata.name, node, uid=pod.metadata.uid or None, annotations=annotations,
            check=check))

    def waits(self) -> bool:
        return self.changes is not None

    async def wait(self, condition: Condition, kinds: frozenset[str], timeout_s: float) -> bool | Failure:
        if self.changes is None:
            return condition()
        return await wait_for(condition, self.changes, kinds, timeout_s)

    async def retry(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``await call()``, retried after :attr:`backoff` while it fails with a retryable error."""
        for attempt in range(1, self.max_attempts + 1):
            try:
                return await call()
            except ApiError as exc:
                if not exc.retryable or attempt == self.max_attempts:
                    raise
                wait = self.backoff.wait_s(attempt, exc)
                log.info("%s failed (%s), retry %d in %.2f s", what, exc, attempt, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")
