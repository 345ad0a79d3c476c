"""Reporting the objects the cache refused: a metric for each, a Warning Event on each object.

No single object may stop scheduling (:meth:`ClusterCache.parse` catches, per object, whatever its
decoding raises); this module makes the refusal visible to whoever can fix the object. Every refusal
counts in ``gang_scheduler_objects_refused_total{kind, reason}``; the leader posts one Warning Event
(reason :data:`~scheduler.live.status_writer.EVENT_OBJECT_REFUSED`) per object and reason, on the
object itself (in ``default`` for a cluster-scoped one), naming what was wrong. An object with no
readable name gets no Event, only the count and the log line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from scheduler.cache.cluster import KINDS, Refusal
from scheduler.live.event_recorder import ObjectReference, ReferenceMeta
from scheduler.live.metrics import Metrics
from scheduler.live.status_writer import EVENT_OBJECT_REFUSED, StatusWriter

MAX_REMEMBERED = 4096
"""Objects remembered as reported (oldest forgotten first; a forgotten one is reported again)."""

MESSAGES = {
    "invalid": "left out of the scheduler's cache: {message}",
    "too_deep": "left out of the scheduler's cache: {message}",
    "undecodable": "left out of the scheduler's cache: {message}",
    "invalid_intent": "read as having no durable intent: {message}",
}
"""The Event's note per reason (``message``: the refusal's own)."""


class RefusalReporter:
    """Counts every refusal and posts a Warning Event on the object, once per (object, reason, message).

    ``spawn``: the driver's guarded task starter; ``leading``: whether this replica writes (only the
    leader posts Events; every replica counts).
    """

    def __init__(self, metrics: Metrics, status: StatusWriter,
                 spawn: Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]],
                 leading: Callable[[], bool]) -> None:
        self.metrics = metrics
        self.status = status
        self.spawn = spawn
        self.leading = leading
        self._reported: dict[tuple[str, str, str, str], None] = {}

    def __call__(self, refused: Refusal) -> None:
        """Report ``refused`` (the cache's :attr:`~scheduler.cache.cluster.ClusterCache.on_refused`)."""
        self.metrics.refused(refused.kind, refused.reason)
        if not refused.name or not self.leading():
            return
        key = (refused.kind, f"{refused.namespace}/{refused.name}/{refused.uid}", refused.reason, refused.message)
        if key in self._reported:
            return
        self._reported[key] = None
        if len(self._reported) > MAX_REMEMBERED:
            del self._reported[next(iter(self._reported))]
        kind = KINDS[refused.kind]
        meta = ReferenceMeta(refused.namespace, refused.name, refused.uid)
        ref = ObjectReference(kind.api_version(), kind.kind, meta)
        note = MESSAGES[refused.reason].format(message=refused.message)
        self.spawn(self.status.object_warning(ref, EVENT_OBJECT_REFUSED, note),
                   f"status/refused/{refused.namespace}/{refused.name}")
