"""GroupQueue: roots in scheduling order.

Order (design §7, kube-scheduler's ``PrioritySort`` for pod groups): higher priority first,
then older (creation time of the root), then kind, namespace and name so the same input
always gives the same order (as coscheduling's ``Less`` breaks every tie).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from datetime import datetime

from scheduler.groups.tree import GroupTree

QueueKey = tuple[int, datetime, str, str, str]


def queue_key(tree: GroupTree) -> QueueKey:
    """Sort key of a root: (−priority, created, kind, namespace, name)."""
    k = tree.key
    return (-tree.priority, tree.created, k.kind, k.namespace, k.name)


class GroupQueue:
    """A priority queue of ready roots; one entry per root key (a re-push replaces the entry)."""

    def __init__(self, trees: Iterable[GroupTree] = ()) -> None:
        self._heap: list[tuple[QueueKey, int, GroupTree]] = []
        self._seq = itertools.count()
        self._live: dict[tuple[str, str, str], QueueKey] = {}
        for tree in trees:
            self.push(tree)

    def push(self, tree: GroupTree) -> None:
        """Add or replace the entry of ``tree.key``."""
        key = queue_key(tree)
        self._live[tuple(tree.key)] = key  # type: ignore[index]
        heapq.heappush(self._heap, (key, next(self._seq), tree))

    def pop(self) -> GroupTree:
        """The next root in order. Raises IndexError when empty."""
        while self._heap:
            key, _, tree = heapq.heappop(self._heap)
            if self._live.get(tuple(tree.key)) == key:  # type: ignore[arg-type]
                del self._live[tuple(tree.key)]  # type: ignore[arg-type]
                return tree
        raise IndexError("pop from an empty GroupQueue")

    def __len__(self) -> int:
        return len(self._live)
