"""The scheduling queue: ready roots in order, per-root exponential backoff, and queueing hints.

Order: *partial* roots first (members bound below minCount: they hold nodes they cannot use until
they are completed), then kube-scheduler's ``PrioritySort`` for pod groups: higher priority
first, then older (creation time of the root), then kind, namespace and name, so the same input always
gives the same order (as coscheduling's ``Less`` breaks every tie).

The queue holds root *keys*, never trees: whoever pops a key looks up the root's current tree, so
a tree queued before its pods were bound can never be planned again.

Backoff (kube-scheduler's pod backoff, 1 s initial): a root that failed waits
``initial × 2^(attempts−1)`` seconds, capped at ``max``, before it is tried again. Which cluster events
can help it is decided by the **queueing hints** of the plugins that rejected it (``Unschedulable.rejectors``;
kube's ``QueueingHintFn``): a node added wakes only roots that failed for lack of capacity or of a
matching node, a claim created only roots that waited for claims.

A root found unschedulable by plugins that all have hints is *parked* (kube's ``unschedulablePods``): it is
tried again only when a hinted event may help — once its backoff has ended, so a stream of events tries it
at most once per backoff (kube moves it to ``backoffQ`` then) — or, failing any, after ``unschedulable_retry``
seconds (kube's ``podMaxInUnschedulablePodsDuration``, 5 min). Nothing that cannot change the answer makes a
parked root cost a solve. A root that failed otherwise (a bind that failed, a preemption under way, a
rejection without a hint) is tried again when its backoff ends, as before, and a hinted event moves it back
at once. Changes scoped to one root (a member pod or a group of its tree changed) move that root at once
(:meth:`SchedulingQueue.update`). Time is passed in by the caller (the event loop's clock), so tests
fast-forward it.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduler.framework.events import ClusterEvent
from scheduler.groups.tree import GroupTree
from scheduler.model.scheduling import GroupKey

QueueKey = tuple[bool, int, datetime, str, str, str]
QueueingHint = Callable[[ClusterEvent], bool]
"""Whether an event may make a root rejected by the hint's plugin schedulable (True: Queue; False: Skip)."""

WAKES_ALL = frozenset({"PriorityClass"})
"""Kinds whose events wake every backing-off root (priorities reorder the queue and move nominated room)."""
CLOCK_SLACK_S = 1e-6
"""A backoff ending within this many seconds of the loop's time counts as ended, as asyncio runs the timers due
within its clock's resolution: on a clock coarser than a backoff's float end (a loop that keeps time in
microseconds, as looptime's does in the tests) the end would otherwise never be reached and the loop re-arm a
timer of nothing, again and again."""


def queue_key(tree: GroupTree) -> QueueKey:
    """Sort key of a root: (not partial, −priority, created, kind, namespace, name)."""
    k = tree.key
    return (not tree.partial, -tree.priority, tree.created, k.kind, k.namespace, k.name)


class GroupQueue:
    """A priority queue of root keys; one entry per key.

    A re-push of a key moves it only when its order key changed, so repeated refreshes neither grow
    the heap nor reorder ties. Stale heap entries are skipped on pop and compacted when they pile up.
    """

    def __init__(self, trees: Iterable[GroupTree] = ()) -> None:
        self._heap: list[tuple[QueueKey, int, GroupKey]] = []
        self._seq = itertools.count()
        self._live: dict[GroupKey, tuple[QueueKey, int]] = {}
        for tree in trees:
            self.push(tree)

    def push(self, tree: GroupTree) -> None:
        """Add the entry of ``tree.key`` (re-positioned only if its order changed)."""
        order = queue_key(tree)
        current = self._live.get(tree.key)
        if current is not None and current[0] == order:
            return
        seq = next(self._seq)
        self._live[tree.key] = (order, seq)
        heapq.heappush(self._heap, (order, seq, tree.key))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = [(o, q, k) for k, (o, q) in self._live.items()]
            heapq.heapify(self._heap)

    def discard(self, key: GroupKey) -> None:
        """Remove the entry of ``key`` if present."""
        self._live.pop(key, None)

    def pop(self) -> GroupKey:
        """The next root key in order. Raises IndexError when empty."""
        while self._heap:
            _, seq, key = heapq.heappop(self._heap)
            current = self._live.get(key)
            if current is not None and current[1] == seq:
                del self._live[key]
                return key
        raise IndexError("pop from an empty GroupQueue")

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def queued(self) -> list[GroupKey]:
        """The queued root keys, in no particular order."""
        return list(self._live)


@dataclass(slots=True)
class BackingOff:
    """A root waiting after a failed attempt: until when (loop time, seconds), its order, which plugins rejected
    it, when its backoff ends (``backoff_until``; ``until`` unless parked), whether it is parked until an event
    that may help (then ``until`` is the retry after ``unschedulable_retry``), and whether such an event came
    (``woken``: it waits out its backoff, which later events do not cut short)."""

    until: float
    order: GroupTree
    rejectors: frozenset[str]
    backoff_until: float = 0.0
    parked: bool = False
    woken: bool = False


class SchedulingQueue:
    """Ready roots (a :class:`GroupQueue`) plus roots backing off after a failed attempt.

    ``initial_backoff_s`` / ``max_backoff_s``: the backoff bounds in seconds. ``unschedulable_retry_s``: how long
    a parked root waits for an event that may help before it is tried anyway, seconds (see the module docstring).
    ``hints``: plugin name → queueing hint (the solver's registry). The ends of the waits are kept in a heap, so a
    pop releases the roots whose wait ended in O(log n) each rather than looking at every root backing off.
    """

    def __init__(self, initial_backoff_s: float = 1.0, max_backoff_s: float = 60.0,
                 hints: Mapping[str, QueueingHint] | None = None, unschedulable_retry_s: float = 300.0) -> None:
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.unschedulable_retry_s = unschedulable_retry_s
        self.hints: Mapping[str, QueueingHint] = hints or {}
        self.ready = GroupQueue()
        self.backing_off: dict[GroupKey, BackingOff] = {}
        """Roots waiting, by key; changed only through :meth:`_wait` and :meth:`_leave`, which keep
        :attr:`_rejecting`."""
        self._rejecting: Counter[str] = Counter()
        """Plugin name → how many roots in :attr:`backing_off` it rejected (zero counts linger, one per plugin), so
        :meth:`on_events` asks only the hints that can move a root without walking every root waiting."""
        self.attempts: dict[GroupKey, int] = {}
        self._ends: list[tuple[float, int, GroupKey, BackingOff]] = []
        """(until, sequence, key, entry) per backoff begun; an entry no longer in :attr:`backing_off` is skipped."""
        self._seq = itertools.count()

    def update(self, tree: GroupTree | None, key: GroupKey, *, ready: bool) -> None:
        """Root ``key``'s tree appeared or changed (``tree``; None: gone). ``ready``: it can be tried now.

        A ready root that is not backing off is queued. One backing off is moved back early when its
        tree differs from the one it failed with (the change is scoped to it: a member arrived, minCount
        changed, a group of its tree changed), keeping its attempts; its own forgotten plan (the same
        tree) does not move it. A root that is no longer ready leaves the queue but keeps its attempts (a plan
        being bound, members missing): they end with :meth:`done` — the root scheduled — or when it is gone.
        """
        if tree is None:
            self.done(key)
            return
        if not ready:
            self._leave(key)
            self.ready.discard(key)
            return
        entry = self.backing_off.get(key)
        if entry is None:
            self.ready.push(tree)
        elif entry.order != tree:
            self._leave(key)
            self.ready.push(tree)
        else:
            entry.order = tree

    def retree(self, tree: GroupTree) -> None:
        """Root ``tree.key``'s tree was rebuilt with nothing the scheduler reads changed (quiet updates: its own
        status writes): a root waiting keeps the new tree, not the one it failed with, so the pod objects the cache
        replaced are not kept alive beside the new ones while it waits. It is not moved."""
        entry = self.backing_off.get(tree.key)
        if entry is not None:
            entry.order = tree

    def pop(self, now: float) -> GroupKey | None:
        """The next ready root key in order, or None."""
        self._release(now)
        if not len(self.ready):
            return None
        return self.ready.pop()

    def backoff(self, tree: GroupTree, now: float, rejectors: frozenset[str] = frozenset(), *,
                unschedulable: bool = False) -> float:
        """Set aside a root that failed; returns its backoff in seconds. ``rejectors``: the plugins that rejected
        it, whose hints decide which events move it back. ``unschedulable``: the attempt found no placement (no
        bind failed, no preemption under way); with ``rejectors`` that all have hints, the root is parked until
        one of them fires or for ``unschedulable_retry_s`` (see the module docstring)."""
        attempts = self.attempts.get(tree.key, 0) + 1
        self.attempts[tree.key] = attempts
        delay = float(min(self.initial_backoff_s * 2 ** (attempts - 1), self.max_backoff_s))
        parked = unschedulable and bool(rejectors) and all(name in self.hints for name in rejectors)
        until = now + max(delay, self.unschedulable_retry_s) if parked else now + delay
        self._wait(tree.key, BackingOff(until, tree, rejectors, now + delay, parked))
        return delay

    def _wait(self, key: GroupKey, entry: BackingOff) -> None:
        """``key`` waits as ``entry`` says (any earlier wait of it is dropped)."""
        self.ready.discard(key)
        self._leave(key)
        self.backing_off[key] = entry
        self._rejecting.update(entry.rejectors)
        heapq.heappush(self._ends, (entry.until, next(self._seq), key, entry))
        if len(self._ends) > 2 * len(self.backing_off) + 64:  # drop the ends of waits cut short
            self._ends = [e for e in self._ends if self.backing_off.get(e[2]) is e[3]]
            heapq.heapify(self._ends)

    def done(self, key: GroupKey) -> None:
        """A root was scheduled, or is gone or not ready: forget it and its attempts."""
        self.attempts.pop(key, None)
        self._leave(key)
        self.ready.discard(key)

    def scheduled(self, key: GroupKey) -> None:
        """A plan of root ``key`` was bound: its attempts start over (:meth:`done`) — unless the root was queued or
        decided again since the plan (members it left pending, tried on the room left while it was bound): that
        root keeps its place and its attempts, so it is neither dropped from the queue (its pending members would
        wait for a change of their own tree) nor given a backoff that starts over while it fails the same way, as
        kube-scheduler keeps each pending pod's own backoff when other pods of its gang are bound."""
        if key in self.backing_off or key in self.ready:
            return
        self.done(key)

    def activate(self, keys: Iterable[GroupKey] | None, now: float) -> int:
        """Move backing-off roots back (``None``: all of them) because an event may help them; returns how many
        moved. A parked root whose backoff has not ended yet waits for its end instead (kube's move from
        ``unschedulablePods`` to ``backoffQ``), and stays there whatever comes next; every other one is ready at
        once."""
        chosen = list(self.backing_off) if keys is None else [k for k in keys if k in self.backing_off]
        moved = 0
        for key in chosen:
            entry = self.backing_off[key]
            if entry.backoff_until > now and (entry.parked or entry.woken):
                if entry.parked:
                    self._wait(key, BackingOff(entry.backoff_until, entry.order, entry.rejectors, entry.backoff_until,
                                               woken=True))
                    moved += 1
                continue
            self._leave(key)
            self.ready.push(entry.order)
            moved += 1
        return moved

    def on_events(self, events: Sequence[ClusterEvent], now: float) -> int:
        """Move back every backing-off root for which a rejecting plugin's hint says one of ``events`` may
        help; returns how many moved. Each plugin's hint is asked until it fires once (O(events × plugins),
        not × roots), then the roots it rejected are woken."""
        if not events or not self.backing_off:
            return 0
        if any(e.kind in WAKES_ALL for e in events):
            return self.activate(None, now)
        wanted = [name for name, roots in self._rejecting.items() if roots > 0]
        fired = {name for name in wanted if (hint := self.hints.get(name)) is not None and any(map(hint, events))}
        if not fired:
            return 0
        return self.activate([key for key, entry in self.backing_off.items() if entry.rejectors & fired], now)

    def next_wakeup(self) -> float | None:
        """Loop time when the earliest backoff ends, or None."""
        ends = self._ends
        while ends and self.backing_off.get(ends[0][2]) is not ends[0][3]:
            heapq.heappop(ends)
        return ends[0][0] if ends else None

    def _release(self, now: float) -> None:
        ends = self._ends
        now += CLOCK_SLACK_S
        while ends and ends[0][0] <= now:
            _, _, key, entry = heapq.heappop(ends)
            if self.backing_off.get(key) is entry:
                self._leave(key)
                self.ready.push(entry.order)

    def _leave(self, key: GroupKey) -> None:
        """``key`` no longer waits (if it did)."""
        entry = self.backing_off.pop(key, None)
        if entry is not None:
            self._rejecting.subtract(entry.rejectors)

    def parked(self) -> list[GroupKey]:
        """The roots parked until an event may help them (kube's ``unschedulablePods``)."""
        return [key for key, entry in self.backing_off.items() if entry.parked]

    def __len__(self) -> int:
        return len(self.ready) + len(self.backing_off)
