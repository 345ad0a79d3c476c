"""Starvation reservations, live: acting on the starvation guard's books (:mod:`scheduler.preemption.starvation`).

A root that failed without preempting gives up the room nominated to its pods — unless the guard says it is
starving (it waited ``--starvation-after-s`` while roots of its priority were placed): then the nodes of its best
plan (:meth:`~scheduler.preemption.plugin.DefaultPreemption.reservation`) are held for it by nominating its pods
there (:meth:`~scheduler.live.preemptor.Preemptor.reserve`), for ``--reservation-s``. Each reservation is shown
on the root's group (``NodesReserved``: True ``Starving``; False ``Fitted`` or ``Expired``) and counted
(``gang_scheduler_reservations_total{event}``); a root that is gone drops its reservation silently.
"""

from __future__ import annotations

import logging

from scheduler.cache.cluster import ClusterCache
from scheduler.config import Settings
from scheduler.cycle import Attempt
from scheduler.groups.tree import GroupTree
from scheduler.live.metrics import Metrics, ReservationEvent
from scheduler.live.preemptor import Preemptor
from scheduler.live.status_writer import StatusWriter
from scheduler.live.tasks import Spawn
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from scheduler.preemption.starvation import Reservation, StarvationGuard

log = logging.getLogger(__name__)


class Reservations:
    """The guard's books (:attr:`guard`) and what each reservation does in the cluster (see the module docstring)."""

    def __init__(self, settings: Settings, cache: ClusterCache, status: StatusWriter, metrics: Metrics,
                 preemptor: Preemptor, preemption: DefaultPreemption, spawn: Spawn) -> None:
        self.settings = settings
        self.cache = cache
        self.status = status
        self.metrics = metrics
        self.preemptor = preemptor
        self.preemption = preemption
        self.spawn = spawn
        self.guard = StarvationGuard(settings.starvation_after_s, settings.reservation_s)

    def failed(self, tree: GroupTree, now: float) -> None:
        """The root failed at ``now`` (loop time) and preempts: it waits on, with no reservation decided here."""
        self.guard.failed(tree.key, tree.priority, now)

    def unschedulable(self, attempt: Attempt, now: float) -> None:
        """A root failed without preempting: its pods give up the room nominated to them — unless it is starving,
        then the nodes of its best plan are reserved for it."""
        tree, guard = attempt.tree, self.guard
        guard.failed(tree.key, tree.priority, now)
        if tree.key in guard.reservations:
            return
        entry = guard.starving(tree.key, now)
        plan = None if entry is None else self.preemption.reservation(tree, attempt.snapshot, self.settings.solver())
        if entry is None or plan is None:
            self.preemptor.release_tree(tree)
            return
        reservation = guard.reserve(tree.key, self.preemptor.reserve(tree, plan), now)
        nodes = ",".join(sorted({n for _, n in reservation.nominations}))
        log.info("root=%s result=Reserved nodes=%s overtaken=%d hold_s=%.0f", tree.key, nodes, entry.overtaken,
                 guard.hold_s)
        self.metrics.reservation("granted", len(guard.reservations))
        self._condition(tree.key, True, "Starving", f"unschedulable for {now - entry.since:.0f} s while "
                        f"{entry.overtaken} root(s) of priority {tree.priority} were placed; nodes "
                        f"{nodes} are held for it for {guard.hold_s:.0f} s")

    def placed(self, tree: GroupTree) -> None:
        """The root has a plan: its reservation, if any, ends (``Fitted``); roots of its priority waiting are
        overtaken."""
        ended = self.guard.placed(tree.key, tree.priority)
        if ended is not None:
            self.metrics.reservation("fitted", len(self.guard.reservations))
            self._condition(tree.key, False, "Fitted", "the group fitted; the nodes are no longer held")

    def expire(self, now: float) -> None:
        """End the reservations past their hold (``Expired``)."""
        for ended in self.guard.expired(now):
            self._end(ended, "expired", "Expired", "the reservation expired; the nodes are no longer held")

    def forget(self, key: GroupKey) -> None:
        """Root ``key`` is gone: its reservation, if any, is dropped."""
        ended = self.guard.forget(key)
        if ended is not None:
            self._end(ended, "dropped", None, "")

    def _end(self, ended: Reservation, event: ReservationEvent, reason: str | None,
             message: str) -> None:
        self.preemptor.release(key for key, _ in ended.nominations)
        self.metrics.reservation(event, len(self.guard.reservations))
        if reason is not None:
            self._condition(ended.root, False, reason, message)

    def _condition(self, key: GroupKey, held: bool, reason: str, message: str) -> None:
        obj = self.cache.group(key.kind, key.namespace, key.name) if key.kind != "Pod" else None
        if obj is not None:
            self.spawn(self.status.group_reservation(obj, held, reason, message), f"status/{key}")
