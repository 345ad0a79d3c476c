"""The scheduling queue: ready roots in order, with per-root exponential backoff.

Order (design §7, kube-scheduler's ``PrioritySort`` for pod groups): higher priority first,
then older (creation time of the root), then kind, namespace and name, so the same input always
gives the same order (as coscheduling's ``Less`` breaks every tie).

Backoff (design §7; kube-scheduler's pod backoff, 1 s initial): a root that failed waits
``initial × 2^(attempts−1)`` seconds, capped at ``max``, before it is tried again — unless an
event that can help (:meth:`SchedulingQueue.activate`) moves it back early. Time is passed in
by the caller (the event loop's clock), so tests fast-forward it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from datetime import datetime

from scheduler.groups.tree import GroupKey, GroupTree

QueueKey = tuple[int, datetime, str, str, str]


def queue_key(tree: GroupTree) -> QueueKey:
    """Sort key of a root: (−priority, created, kind, namespace, name)."""
    k = tree.key
    return (-tree.priority, tree.created, k.kind, k.namespace, k.name)


class GroupQueue:
    """A priority queue of roots; one entry per root key.

    A re-push of a key replaces its tree (the latest tree is the one popped) and moves it only
    when its order key changed, so repeated refreshes neither grow the heap nor hand out a stale
    tree. Stale heap entries are skipped on pop and compacted away when they pile up.
    """

    def __init__(self, trees: Iterable[GroupTree] = ()) -> None:
        self._heap: list[tuple[QueueKey, int, GroupKey]] = []
        self._seq = itertools.count()
        self._live: dict[GroupKey, tuple[QueueKey, int, GroupTree]] = {}
        for tree in trees:
            self.push(tree)

    def push(self, tree: GroupTree) -> None:
        """Add the entry of ``tree.key``, or replace its tree (re-positioned only if its order changed)."""
        order = queue_key(tree)
        current = self._live.get(tree.key)
        if current is not None and current[0] == order:
            self._live[tree.key] = (order, current[1], tree)
            return
        seq = next(self._seq)
        self._live[tree.key] = (order, seq, tree)
        heapq.heappush(self._heap, (order, seq, tree.key))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = [(o, q, k) for k, (o, q, _) in self._live.items()]
            heapq.heapify(self._heap)

    def discard(self, key: GroupKey) -> None:
        """Remove the entry of ``key`` if present."""
        self._live.pop(key, None)

    def pop(self) -> GroupTree:
        """The next root in order (its latest tree). Raises IndexError when empty."""
        while self._heap:
            _, seq, key = heapq.heappop(self._heap)
            current = self._live.get(key)
            if current is not None and current[1] == seq:
                del self._live[key]
                return current[2]
        raise IndexError("pop from an empty GroupQueue")

    def __len__(self) -> int:
        return len(self._live)

    def trees(self) -> list[GroupTree]:
        """The queued roots, one per key (the latest push), in no particular order."""
        return [tree for _, _, tree in self._live.values()]


class SchedulingQueue:
    """Ready roots (a :class:`GroupQueue`) plus roots backing off after a failed attempt.

    ``initial_backoff_s`` / ``max_backoff_s``: the backoff bounds in seconds.
    """

    def __init__(self, initial_backoff_s: float = 1.0, max_backoff_s: float = 60.0) -> None:
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.ready = GroupQueue()
        self.backing_off: dict[GroupKey, tuple[float, GroupTree]] = {}
        self.attempts: dict[GroupKey, int] = {}

    def sync(self, trees: Iterable[GroupTree], now: float) -> None:
        """Make the queue hold exactly ``trees`` (the current ready roots), keeping backoffs."""
        current = {t.key: t for t in trees}
        for key in [k for k in self.backing_off if k not in current]:
            del self.backing_off[key]
        for tree in self.ready.trees():
            if tree.key not in current:
                self.ready.discard(tree.key)
        for key in [k for k in self.attempts if k not in current]:
            del self.attempts[key]
        for key, tree in current.items():
            if key in self.backing_off:
                until, _ = self.backing_off[key]
                self.backing_off[key] = (until, tree)
            else:
                self.ready.push(tree)
        self._release(now)

    def pop(self, now: float) -> GroupTree | None:
        """The next ready root in order, or None."""
        self._release(now)
        if not len(self.ready):
            return None
        return self.ready.pop()

    def backoff(self, tree: GroupTree, now: float) -> float:
        """Park a root that failed; returns the backoff in seconds."""
        attempts = self.attempts.get(tree.key, 0) + 1
        self.attempts[tree.key] = attempts
        delay = float(min(self.initial_backoff_s * 2 ** (attempts - 1), self.max_backoff_s))
        self.ready.discard(tree.key)
        self.backing_off[tree.key] = (now + delay, tree)
        return delay

    def done(self, key: GroupKey) -> None:
        """A root was scheduled: forget its attempts."""
        self.attempts.pop(key, None)
        self.backing_off.pop(key, None)
        self.ready.discard(key)

    def activate(self, keys: Iterable[GroupKey] | None, now: float) -> int:
        """Move backing-off roots back to ready early (``None``: all of them); returns how many moved."""
        chosen = list(self.backing_off) if keys is None else [k for k in keys if k in self.backing_off]
        for key in chosen:
            _, tree = self.backing_off.pop(key)
            self.ready.push(tree)
        return len(chosen)

    def next_wakeup(self) -> float | None:
        """Loop time when the earliest backoff ends, or None."""
        return min((until for until, _ in self.backing_off.values()), default=None)

    def _release(self, now: float) -> None:
        for key in [k for k, (until, _) in self.backing_off.items() if until <= now]:
            _, tree = self.backing_off.pop(key)
            self.ready.push(tree)

    def __len__(self) -> int:
        return len(self.ready) + len(self.backing_off)
