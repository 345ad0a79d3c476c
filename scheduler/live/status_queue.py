"""Status reports waiting to be written: one entry per object, the latest report wins.

A scheduling decision that places nothing reports it on every pending pod (``PodScheduled=False`` and a
``FailedScheduling`` Event). Spawned as one task per report, a busy cluster with a slow or failing API server grows
a task — and a copy of every pod it names — per decision, without bound, and a failed write is lost. Instead each
report is *submitted* here under its object's key; a report submitted while an older one for the same object is
still waiting replaces it (only the latest state is worth writing) — all but its *kept* part: a report may carry
writes of its own that a newer one does not replace (a decision's ``FailedScheduling`` Event: kube-scheduler records
one per attempt, each with its own message, while the pod's condition shows only the latest). They run once, in the
order submitted, before the object's next write, and are not retried (an Event write logs and swallows its errors). A
kept write equal to the one submitted just before it (the same ``keep_id``: a decision repeated while the object's
reports wait) is held once and run as many times as it was submitted, so a repeated Event counts into its series
without a copy per decision.
:data:`DEFAULT_WORKERS` tasks write them, oldest first. A write that fails with a retryable error (429, 5xx,
transport) is submitted again after :class:`~scheduler.live.backoff.Backoff` (``retry_initial_s`` doubling to
``retry_max_s``, jittered, longer when the reply's ``Retry-After`` asks it), at most ``max_attempts`` times, unless
a newer report replaced it meanwhile (the newer one is written at once — unless the failure carried ``Retry-After``:
then it waits for the server's wait). At most ``max_pending`` reports wait: beyond that the oldest is dropped
(counted, logged) — a report is repeated by the next decision about its pod, so dropping one loses nothing lasting —
and at most :data:`MAX_KEPT` kept writes per object.

:attr:`StatusQueue.depth` and :meth:`StatusQueue.oldest_age_s` are exported as metrics
(``gang_scheduler_status_queue_depth{queue}``, ``gang_scheduler_status_queue_oldest_age_seconds{queue}``).
The level-triggered group conditions have their own writer (:mod:`scheduler.live.group_conditions`),
coalesced per group the same way.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from scheduler.client.kube import ApiError
from scheduler.errors import Conflict, NotLeading
from scheduler.live.backoff import Backoff
from scheduler.live.tasks import woken_or_due

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 4
"""Reports written at once: enough to keep the REPORT lane of the client's rate limiter busy, few enough
that binds (URGENT lane) are never starved of connections."""
DEFAULT_MAX_PENDING = 20_000
"""Reports waiting at most (one per pod: a cluster's pending pods, generously)."""
MAX_KEPT = 32
"""Kept writes (:meth:`StatusQueue.submit`'s ``keep``) waiting at most per object: beyond that the oldest is dropped
(a pod decided on every second while the API server does not answer keeps its latest decisions' Events)."""

Write = Callable[[], Awaitable[None]]
"""One report's write: reads what it needs when it runs (the object as the cache has it then); raises
:class:`ApiError` when the API refused it."""


@dataclass(slots=True)
class _Entry:
    write: Write
    queued_at: float
    """Loop time the object's oldest unwritten report was submitted (kept when a newer one replaces it)."""
    attempt: int = 0
    due: float = 0.0
    """Loop time before which it is not tried (a retry's backoff)."""
    held: bool = False
    """The server's ``Retry-After`` set :attr:`due`: a newer report of the object waits for it too."""
    kept: list[_Kept] = field(default_factory=list)
    """The writes of this report and of those it replaced that a newer report does not replace, oldest first:
    run before :attr:`write`."""


@dataclass(slots=True)
class _Kept:
    """A kept write, submitted ``times`` times in a row under ``id`` (None: never merged)."""

    write: Write
    id: object = None
    times: int = 1


class StatusQueue:
    """See the module docstring. ``name``: for logs and task names. Run it with :meth:`run`."""

    def __init__(self, name: str, *, workers: int = DEFAULT_WORKERS, max_pending: int = DEFAULT_MAX_PENDING,
                 retry_initial_s: float = 1.0, retry_max_s: float = 60.0, max_attempts: int = 6,
                 rng: random.Random | None = None, retry_conflicts: bool = False) -> None:
        self.name = name
        self.retry_conflicts = retry_conflicts
        """A write refused with 409 (:class:`~scheduler.errors.Conflict`) is retried like a 5xx: for writes that read
        the object again when they run (a pod's report against the pod as the cache has it then)."""
        self.workers = workers
        self.max_pending = max_pending
        self.max_attempts = max_attempts
        self.backoff = Backoff(retry_initial_s, retry_max_s, rng or random.Random())
        self._pending: dict[str, _Entry] = {}
        """Key → its report ready to be written, oldest first."""
        self._delayed: dict[str, _Entry] = {}
        """Key → its report waiting for its retry's backoff to end (:attr:`_Entry.due`)."""
        self._next_due = float("inf")
        """The earliest :attr:`_Entry.due` in :attr:`_delayed` (inf: none), so a take does not walk them all."""
        self._inflight: set[str] = set()
        self._wake = asyncio.Event()
        self.written = 0
        self.failed = 0
        self.dropped = 0

    @property
    def depth(self) -> int:
        """Reports waiting (ready or backing off) or being written."""
        return len(self._pending) + len(self._delayed) + len(self._inflight)

    def oldest_age_s(self, now: float | None = None) -> float:
        """Seconds the oldest waiting report has waited (0 when none waits)."""
        if not self._pending and not self._delayed:
            return 0.0
        now = asyncio.get_running_loop().time() if now is None else now
        oldest = min(e.queued_at for queue in (self._pending, self._delayed) for e in queue.values())
        return max(0.0, now - oldest)

    def submit(self, key: str, write: Write, keep: Write | None = None, keep_id: object = None) -> None:
        """Write ``write`` soon; it replaces a report still waiting for ``key`` (its age is kept). Soon is at once,
        or, when the report it replaces waits for what the server's ``Retry-After`` asked, when that wait ends.
        ``keep``: a write of this report that a newer one does not replace (see the module docstring): run once,
        after the kept writes of the reports before it, before the key's next write; ``keep_id`` (hashable, None:
        none): what makes it equal to the kept write submitted just before it, which then runs once more instead."""
        now = asyncio.get_running_loop().time()
        held = self._delayed.get(key)
        if held is not None and held.held and held.due > now:
            held.write, held.attempt = write, 0
            self._keep(held, keep, keep_id)
            return
        entry = self._pending.get(key) or self._delayed.pop(key, None)
        if entry is not None:
            entry.write, entry.attempt, entry.due, entry.held = write, 0, 0.0, False
            self._pending[key] = entry
        else:
            self._pending[key] = entry = _Entry(write, now)
            if len(self._pending) > self.max_pending:
                oldest = next(iter(self._pending))
                del self._pending[oldest]
                self.dropped += 1
                log.warning("%s: more than %d reports waiting; dropped the oldest (%s)", self.name,
                            self.max_pending, oldest)
        self._keep(entry, keep, keep_id)
        self._wake.set()

    @staticmethod
    def _keep(entry: _Entry, keep: Write | None, keep_id: object) -> None:
        if keep is None:
            return
        last = entry.kept[-1] if entry.kept else None
        if last is not None and keep_id is not None and last.id == keep_id:
            last.times += 1
            return
        entry.kept.append(_Kept(keep, keep_id))
        if len(entry.kept) > MAX_KEPT:
            del entry.kept[0]

    async def run(self) -> None:
        """Write reports forever with :attr:`workers` tasks. Cancel to stop (waiting reports are dropped)."""
        async with asyncio.TaskGroup() as group:
            for i in range(self.workers):
                group.create_task(self._work(), name=f"{self.name}/{i}")

    def _take(self, now: float) -> tuple[str, _Entry] | float | None:
        """The oldest ready report not being written (removed from the queue); else the loop time the next
        retry is due, or None when nothing waits but what is being written."""
        if self._next_due <= now:
            for key in [k for k, e in self._delayed.items() if e.due <= now]:
                self._pending[key] = self._delayed.pop(key)
            self._next_due = min((e.due for e in self._delayed.values()), default=float("inf"))
        for key, entry in self._pending.items():
            if key not in self._inflight:  # a newer report of an object being written waits for that write
                del self._pending[key]
                return key, entry
        return None if not self._delayed else self._next_due

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        reached = 0.0  # the due time a wait last ran out at, taken as reached (:func:`woken_or_due`)
        while True:
            taken = self._take(max(loop.time(), reached))
            if not isinstance(taken, tuple):
                if (ran_out := await woken_or_due(self._wake, taken)) is not None:
                    reached = ran_out
                continue
            key, entry = taken
            self._inflight.add(key)
            try:
                kept, entry.kept = entry.kept, []
                for item in kept:  # even if the report's own write then fails
                    for _ in range(item.times):
                        try:
                            await item.write()
                        except NotLeading:
                            raise
                        except ApiError as exc:
                            log.warning("%s: a kept write on %s failed: %s", self.name, key, exc)
                await entry.write()
                self.written += 1
            except NotLeading:  # the next leader reports what still stands: nothing is owed, nothing failed
                log.debug("%s: report on %s not written: no longer leading", self.name, key)
            except ApiError as exc:
                self.failed += 1
                self._retry(key, entry, exc, loop.time())
            finally:
                self._inflight.discard(key)
                self._wake.set()  # a newer report for this key may wait for the write to end

    def _retry(self, key: str, entry: _Entry, exc: ApiError, now: float) -> None:
        """Put ``entry`` back with its backoff, unless a newer report replaced it, the error is permanent or it
        has had its attempts."""
        entry.attempt += 1
        retryable = exc.retryable or (self.retry_conflicts and isinstance(exc, Conflict))
        if key in self._pending or not retryable or entry.attempt >= self.max_attempts:
            if key not in self._pending:
                self.dropped += 1
                log.warning("%s: report on %s not written after %d attempt(s): %s", self.name, key, entry.attempt,
                            exc)
            return
        entry.due = now + self.backoff.wait_s(entry.attempt, exc)
        entry.held = exc.retry_after_s is not None
        self._delayed[key] = entry
        self._next_due = min(self._next_due, entry.due)
        log.info("%s: report on %s failed (%s), retry %d in %.1f s", self.name, key, exc, entry.attempt,
                 entry.due - now)
