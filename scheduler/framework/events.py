"""Cluster events: what changed in the cache, typed, for queueing hints (kube's ``ClusterEvent``).

The cache turns every watch event it applies into zero or more :class:`ClusterEvent` values
(nothing for a change the scheduler does not read, such as a node heartbeat or a status condition
it wrote itself). The driver routes them: group-scoped ones to the root they touch, the others
to each backing-off root's rejecting plugins, whose hints say whether the event may help
(kube-scheduler's ``QueueingHintFn``: ``Queue`` or ``Skip``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Action(enum.Enum):
    """What happened to the object (kube's ``ActionType``)."""

    ADD = "Add"
    UPDATE = "Update"
    DELETE = "Delete"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """One change: ``kind`` (``Node``, ``Pod``, ``PodGroup``, ``ResourceSlice``…), ``action``, and the
    object before (``old``, None for an add) and after (``new``, None for a delete), as cached models."""

    kind: str
    action: Action
    old: Any = None
    new: Any = None

    @property
    def obj(self) -> Any:
        """The object as it is now, or as it was when deleted."""
        return self.new if self.new is not None else self.old
