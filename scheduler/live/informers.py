"""Informers: list, then watch from the list's resourceVersion, feeding the cache (client-go's reflector).

Each :class:`Informer` owns one resource, cluster-wide. A list is read in pages (``limit`` /
``continue``) fed to the cache one by one, and when it is complete it *replaces* that kind in the
cache (whatever the list did not contain is deleted); then it applies watch events, resuming from
the last resourceVersion seen when a stream ends. An expired resourceVersion (410 Gone) or any other
API failure leads to a fresh list after a short backoff (longer when the reply's ``Retry-After`` asks it) — a
re-list replaces, so nothing is counted twice. The informer
never writes to the API (we only watch: no annotations, no finalizers).

No single object can stop an informer: whatever decoding one object raises — the optional ``decode``
here, the model in :meth:`ClusterCache.parse` — is caught for that object, which is reported through
:attr:`ClusterCache.on_refused` and left out, and the stream goes on.

With a ``model`` (pods and nodes, the kinds counted in tens of thousands), list pages and watch events are decoded
straight from their bytes into models (``scheduler.client.decoding``), and the plain way only when that fails; the
optional ``see`` is then shown each model with its object as sent, decoded again only when ``see`` asks for it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from scheduler.cache.cluster import ClusterCache, refusal_of
from scheduler.client import decoding
from scheduler.client.decoding import TypedPage
from scheduler.client.kube import ApiError, Gone, KubeClient, Resource
from scheduler.framework.events import ClusterEvent
from scheduler.model.kinds import NODE, POD

log = logging.getLogger(__name__)

DECODED_AS_MODELS: Mapping[str, type[BaseModel]] = MappingProxyType({POD.name: POD.model, NODE.name: NODE.model})
"""The kinds whose informers decode straight into their cache model (``Informer.model``), by the cache's name: the
ones a cluster holds by the tens of thousands, whose objects as served are mostly fields the scheduler never reads
(``managedFields``, a pod's container details, a node's images). Their rows convert nothing (``Kind.convert``)."""

MIN_WATCH_TIMEOUT_S = 300
"""client-go's reflector ``minWatchTimeout``: each watch's ``timeoutSeconds`` is drawn from [5, 10] minutes."""

REFUSED = frozenset({401, 403, 404})
"""Statuses that refuse a list until something outside the scheduler changes (its credentials, its RBAC, the CRD)."""

RETRY_AFTER_MAX_S = 60.0
"""The longest a failed list or watch waits for the server's ``Retry-After`` before listing again, in seconds."""


class Informer:
    """List+watch of one resource into the cache; ``synced`` is set after the first successful list."""

    def __init__(self, kube: KubeClient, resource: Resource, cache: ClusterCache,
                 on_change: Callable[[list[ClusterEvent]], None], *, watch_timeout_s: int = MIN_WATCH_TIMEOUT_S,
                 retry_s: float = 1.0, decode: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
                 model: type[BaseModel] | None = None, see: See | None = None) -> None:
        self.kube = kube
        self.resource = resource
        self.cache = cache
        self.on_change = on_change
        self.watch_timeout_s = watch_timeout_s
        """Shortest server-side watch timeout (seconds): each watch asks for a random one between it and twice it,
        as client-go's reflector does (``minWatchTimeout`` 5 min, ``reflector.go``), so the watches of many
        clients do not all end at once; the stream is then resumed from the last resourceVersion. A watch
        silent for longer than ``scheduler.client.kube.WATCH_SILENCE_S`` is resumed the same way."""
        self.retry_s = retry_s
        """Pause before re-listing after an API failure (seconds); short, the list is the recovery."""
        self.decode = decode
        """Applied to every object received before the cache sees it (a v1.36 PodGroup into the internal shape:
        ``scheduler.client.podgroup_api``); None: objects are cached as the server sends them."""
        self.model = model
        """Decode pages and events straight into this model (the resource's cache model; only for a resource whose
        ``decode`` converts nothing, as the model goes to the cache as it is); None: the plain way."""
        self.see = see
        """Shown each object decoded into :attr:`model`, with a function returning it as sent (plain JSON, decoded
        again on the call): what ``decode`` would have seen of it."""
        self.synced = asyncio.Event()
        self.refused = asyncio.Event()
        """Set when the first list is refused for good before it was read — 401, 403 or 404 (:data:`REFUSED`: not
        allowed, or not there); :attr:`failure` says why. Other failures are retried as ever."""
        self.failure = ""
        """Why the last list or watch failed (kept after a later success)."""
        self.relists = 0

    async def run(self) -> None:
        """Forever: list, then watch; re-list on 410 or failure. Cancel the task to stop."""
        kind = self.resource.kind
        while True:
            try:
                relist = self.cache.relist(kind)
                rv = ""
                async for items, page_rv in self.kube.list_pages(self.resource, model=self.model):
                    self.on_change(relist.add(self._page(items)))
                    rv = page_rv  # every page carries the list's resourceVersion
                self.on_change(relist.finish())
                self.synced.set()
                self.relists += 1
                loop = asyncio.get_running_loop()
                while True:
                    opened, events = loop.time(), 0
                    timeout_s = round(self.watch_timeout_s * (1 + random.random()))
                    async for event in self.kube.watch(self.resource, rv, timeout_s=timeout_s, model=self.model):
                        events += 1
                        obj = event.get("object")
                        if isinstance(obj, decoding.DECODED):
                            rv = obj.metadata.resource_version or rv  # type: ignore[union-attr]
                        else:
                            meta = obj.get("metadata") if isinstance(obj, dict) else None
                            if isinstance(meta, dict) and isinstance(meta.get("resourceVersion"), str):
                                rv = meta["resourceVersion"] or rv
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):  # decode only what the cache takes
                            for taken in self._event(event):
                                self.on_change(self.cache.apply(kind, event["type"], taken))
                    if not events and loop.time() - opened < 1.0:
                        await asyncio.sleep(self.retry_s)  # a stream that ends at once: do not spin
            except Gone:
                log.info("watch %s: resourceVersion expired (410), re-listing", self.resource.plural)
            except ApiError as exc:
                self._failed(exc, exc.status in REFUSED)
                wait = exc.retry_wait_s(self.retry_s, RETRY_AFTER_MAX_S)
                log.warning("watch %s failed: %s; re-listing in %.0f s", self.resource.plural, exc, wait)
                await asyncio.sleep(wait)
            except Exception as exc:  # a bug must not freeze the cache for good
                self._failed(exc, refused=False)
                log.exception("informer %s failed; re-listing in %.0f s", self.resource.plural, self.retry_s)
                await asyncio.sleep(self.retry_s)

    def _failed(self, exc: Exception, refused: bool) -> None:
        text = str(exc).rstrip(": ")  # a timeout says nothing more than its name
        self.failure = text if isinstance(exc, ApiError) else f"{type(exc).__name__}: {text}".rstrip(": ")
        if refused and not self.synced.is_set():
            self.refused.set()

    def _page(self, items: Sequence[Any]) -> Iterable[Any]:
        """What the cache takes of one list page: the models of a :class:`TypedPage` (each shown to :attr:`see`), else
        the page's plain objects through ``decode``."""
        if not isinstance(items, TypedPage):
            return items if self.decode is None else self._decoded(items)
        if self.see is not None:
            for index, obj in enumerate(items):
                self._show(obj, functools.partial(items.raw, index))
        return items

    def _event(self, event: Mapping[str, Any]) -> Iterable[Any]:
        """What the cache takes of one watch event: its model (shown to :attr:`see`), else its plain object through
        ``decode``."""
        obj = event.get("object")
        if not isinstance(obj, decoding.DECODED):
            return [obj] if self.decode is None else self._decoded([obj])
        if self.see is not None:
            line = event.get("line", b"")
            self._show(obj, lambda: _object_of(line))
        return [obj]

    def _show(self, obj: Any, raw: Callable[[], Any]) -> None:
        """:attr:`see` of one object; what it raises is logged and the object still goes to the cache (the model is
        valid: only what ``see`` notes of it is lost), so no object can stop the informer."""
        assert self.see is not None
        try:
            self.see(obj, raw)
        except Exception:  # the decoding boundary, per object
            meta = obj.metadata
            log.exception("%s %s/%s: checking it as sent failed", self.resource.kind, meta.namespace, meta.name)

    def _decoded(self, raws: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
        """``decode`` of each of ``raws``; one whose decoding raises is reported as refused and left out."""
        assert self.decode is not None
        for raw in raws:
            try:
                yield self.decode(raw)
            except Exception as exc:  # the decoding boundary, per object
                self.cache.on_refused(refusal_of(self.resource.kind, raw, exc))


See = Callable[[Any, Callable[[], Any]], None]
"""An informer's observer of the objects it decodes into models: (the model, a function returning the object as
sent)."""


def _object_of(line: bytes) -> Any:
    """The ``object`` of a watch event's line, as plain JSON (None when the line is not an event)."""
    event = decoding.loads(line)
    return event.get("object") if isinstance(event, dict) else None
