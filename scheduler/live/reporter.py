"""What the live scheduler tells users about roots it has not placed: reasons on pods and groups, queue gauges.

A root tried and not placed — Unschedulable (the search's reason), Invalid (a layout problem), a bind that
failed — gets ``PodScheduled=False`` with a ``FailedScheduling`` Warning Event on its pending pods (kube-scheduler's
``handleSchedulingFailure``) and its reason in the group conditions
(:class:`~scheduler.live.group_conditions.GroupConditions`). A root not tried yet — Waiting (fewer members than
its minimum, gated members, a group missing; members whose ResourceClaim is not created yet) — and an orphan pod
(naming a group that does not exist) are what kube-scheduler holds at PreEnqueue: their pods get
``PodScheduled=False`` with reason ``NotReadyForScheduling`` and a ``Normal`` Event of that reason (KEP-5501), and
only once the state has lasted :data:`NOT_READY_DELAY_S` (the
KEP's delay): a gang whose pods are still being created, or a pod created just before its PodGroup, gets no report
at all. One report waits per root or pod, started over when the message changes and dropped when the state ends; one
falling due on a replica that no longer leads is not written (the next term routes every tree again). A Waiting or
Invalid tree is reported once per change of its message; an orphan pod once per message. The writes are
:class:`~scheduler.live.status_writer.StatusWriter`'s; each pod's report waits in
:attr:`Reporter.writes` (:class:`~scheduler.live.status_queue.StatusQueue`: one per pod, the latest condition wins,
retried with backoff; every attempt's Event is kept and recorded, as kube-scheduler records one per attempt).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from scheduler.cache.cluster import ClusterCache
from scheduler.framework.plan import Unschedulable
from scheduler.groups.tree import GroupTree, OrphanPod, TreeState
from scheduler.live.group_conditions import GroupConditions
from scheduler.live.metrics import Metrics
from scheduler.live.status_queue import StatusQueue
from scheduler.live.status_writer import REASON_NOT_READY, StatusWriter
from scheduler.live.tasks import Spawn
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)

NOT_READY_DELAY_S = 5.0
"""Seconds a root stays Waiting (or a pod an orphan) with the same message before it is reported: KEP-5501's delay
before kube-scheduler reports a PreEnqueue rejection, so transient states (members still being created, objects
created in any order) write nothing."""


K = TypeVar("K", GroupKey, str)


class _Delayed(Generic[K]):
    """The reports due after :data:`NOT_READY_DELAY_S`, one per key (a root, an orphan pod): the message each is for
    and its timer; starting one for a key cancels the key's earlier one (the delay starts over)."""

    def __init__(self) -> None:
        self._due: dict[K, tuple[str, asyncio.TimerHandle]] = {}

    def start(self, key: K, message: str, report: Callable[[K, str], None]) -> None:
        """``report(key, message)`` after the delay, unless cancelled or started again before."""
        self.cancel(key)
        self._due[key] = (message, asyncio.get_running_loop().call_later(NOT_READY_DELAY_S, report, key, message))

    def cancel(self, key: K) -> str | None:
        """Cancel ``key``'s pending report; the message it was for (None: none pending)."""
        pending = self._due.pop(key, None)
        if pending is None:
            return None
        pending[1].cancel()
        return pending[0]

    def fired(self, key: K) -> None:
        """``key``'s report is being made (its timer ran)."""
        self._due.pop(key, None)

    def close(self) -> None:
        """Cancel every pending report."""
        for _, timer in self._due.values():
            timer.cancel()
        self._due.clear()


class Reporter:
    """The reasons reported per root and orphan pod, so each is written once per change (see the module docstring).

    ``allowed``: whether a namespace is one this scheduler serves (``--namespaces``); ``fence``: whether this replica
    may write (it leads) when a delayed report falls due."""

    def __init__(self, cache: ClusterCache, status: StatusWriter, conditions: GroupConditions, metrics: Metrics,
                 spawn: Spawn, allowed: Callable[[str], bool], *, fence: Callable[[], bool] = lambda: True) -> None:
        self.cache = cache
        self.status = status
        self.conditions = conditions
        self.metrics = metrics
        self.spawn = spawn
        self.allowed = allowed
        self.fence = fence
        self.reported: dict[GroupKey, str] = {}
        """Root → the message last reported for it (Waiting, Invalid, Unschedulable): a Waiting or Invalid
        tree is logged and reported on its pods once per change."""
        self.blocked: dict[GroupKey, GroupTree] = {}
        """Waiting and Invalid trees of ours, for the queue gauges."""
        self.not_ready: set[GroupKey] = set()
        """Roots not tried because pods they need are not ready (:meth:`root_not_ready`), until decided otherwise:
        counted with the Waiting trees (``gated``) in the queue gauges, though the queue holds them."""
        self._orphans_reported: dict[str, str] = {}
        self._waiting: _Delayed[GroupKey] = _Delayed()
        """The Waiting roots' reports due after :data:`NOT_READY_DELAY_S`."""
        self._orphan_reports: _Delayed[str] = _Delayed()
        """The orphan pods' reports due after :data:`NOT_READY_DELAY_S`."""
        self.writes = StatusQueue("pod-status", retry_conflicts=True)  # each write reads the pod again
        """The pod reports (PodScheduled=False, FailedScheduling), one waiting per pod; the driver runs it."""

    def tree_changed(self, key: GroupKey, tree: GroupTree | None) -> None:
        """Root ``key``'s tree as routed now (None: gone or not ours): a new Waiting or Invalid tree is reported; a
        root that is gone has its message forgotten."""
        if tree is not None and tree.state in (TreeState.WAITING, TreeState.INVALID):
            self.blocked[key] = tree
            self._report_blocked(tree)
            return
        self.blocked.pop(key, None)
        self._not_waiting(key)
        if tree is None:
            self.not_ready.discard(key)
            self.reported.pop(key, None)  # a root that is gone: forget its message

    def scheduled(self, key: GroupKey) -> None:
        """Root ``key`` has a plan: a later failure is a change again."""
        self._not_waiting(key)
        self.not_ready.discard(key)
        self.reported.pop(key, None)

    def unschedulable(self, tree: GroupTree, result: Unschedulable) -> None:
        """The search's reason on the tree's groups and pending pods."""
        self._not_waiting(tree.key)
        self.not_ready.discard(tree.key)
        self.reported[tree.key] = result.message  # a Waiting report after it is a change again
        self.conditions.failed(tree, "Unschedulable", result.message, result.group_reasons)
        self.pods(tree, "Unschedulable", result.message)

    def root_not_ready(self, tree: GroupTree, result: Unschedulable) -> None:
        """A root not tried because pods it needs are not ready for scheduling (``result.not_ready``: a claim not
        created yet): reported as a Waiting root is, once the state has lasted :data:`NOT_READY_DELAY_S` with the
        same message — a pod whose claim the resourceclaim controller creates just after it gets no report."""
        self.not_ready.add(tree.key)
        if self.reported.get(tree.key) == result.message:
            return
        self._not_waiting(tree.key)
        self.reported[tree.key] = result.message
        self._waiting.start(tree.key, result.message, self._report_waiting)

    def pods(self, tree: GroupTree, reason: str, message: str, keys: frozenset[str] | None = None) -> None:
        """``PodScheduled=False`` with ``reason`` and its Event on the tree's pending pods (``keys``: only those),
        queued per pod (:meth:`pod`). Only on pods of ours: a tree whose pods name several schedulers (Invalid)
        holds pods of another scheduler, whose status is that scheduler's to write (kube-scheduler writes only
        on the pods of its profiles)."""
        ours = self.cache.scheduler_name
        for leaf in tree.root.leaves():
            for member in leaf.pending:
                if (keys is None or member.key in keys) and member.spec.scheduler_name == ours:
                    self.pod(member.key, reason, message)

    def pod(self, key: str, reason: str, message: str) -> None:
        """Queue ``PodScheduled=False`` with ``reason`` and its Event on pod ``key``, written with the pod as the cache
        has it then (its current resourceVersion), unless it is gone or bound by then. The condition replaces one
        still waiting for the pod (only the latest attempt's is worth writing); the Event is kept (each attempt
        records its own, as kube-scheduler's ``handleSchedulingFailure``) and recorded before the pod's next
        condition write, once, even when that write then fails (a 409 is retried against the pod read again)."""

        def current() -> Pod | None:
            pod = self.cache.pod(key)
            return pod if pod is not None and not pod.is_bound else None

        async def event() -> None:
            if (pod := current()) is not None:
                await self.status.failed_scheduling_event(pod, reason, message)

        async def condition() -> None:
            if (pod := current()) is not None:
                await self.status.unschedulable_condition(pod, reason, message, raise_errors=True)

        self.writes.submit(key, condition, keep=event, keep_id=(reason, message))

    def orphans(self) -> None:
        """Each orphan pod of ours (its group does not exist) gets its message once per change."""
        orphans = {o.pod.key: o for o in self.allowed_orphans()}
        for key in [k for k in self._orphans_reported if k not in orphans]:
            del self._orphans_reported[key]
            self._orphan_reports.cancel(key)
        for key, orphan in orphans.items():
            if self._orphans_reported.get(key) != orphan.message:
                self._orphans_reported[key] = orphan.message
                self._orphan_reports.start(key, orphan.message, self._report_orphan)

    def _report_orphan(self, key: str, message: str) -> None:
        """Orphan pod ``key``'s report, if it is still an orphan with ``message`` (:data:`NOT_READY_DELAY_S` on)
        and this replica leads (else forgotten: a later term reports it)."""
        self._orphan_reports.fired(key)
        if self._orphans_reported.get(key) != message:
            return
        if not self.fence():
            del self._orphans_reported[key]
            return
        log.info("pod=%s result=%s reason=%r", key, TreeState.WAITING.value, message)
        self.pod(key, REASON_NOT_READY, message)

    def close(self) -> None:
        """Cancel the reports still waiting for their delay (the scheduler stops)."""
        self._waiting.close()
        self._orphan_reports.close()

    def allowed_orphans(self) -> list[OrphanPod]:
        return [o for o in self.cache.groups.orphans.values() if self.allowed(o.pod.metadata.namespace)]

    def record_queues(self, queue: SchedulingQueue) -> None:
        """Set the pending-pods / queued-entities gauges from the queue and the trees."""
        trees = self.cache.groups.trees
        active = [t for k in queue.ready.queued() if (t := trees.get(k)) is not None]
        backoff: list[GroupTree] = []
        parked: list[GroupTree] = []
        waiting = list(self.blocked.values())
        for key, entry in queue.backing_off.items():
            if (tree := trees.get(key)) is not None:
                (waiting if key in self.not_ready else parked if entry.parked else backoff).append(tree)
        self.metrics.set_queues(active, backoff, waiting, len(self.allowed_orphans()), parked)

    def _report_blocked(self, tree: GroupTree) -> None:
        if self.reported.get(tree.key) == tree.message:
            return
        self._not_waiting(tree.key)
        self.reported[tree.key] = tree.message
        if tree.state is TreeState.WAITING:
            self._waiting.start(tree.key, tree.message, self._report_waiting)
            return
        log.info("root=%s result=%s reason=%r", tree.key, tree.state.value, tree.message)
        self.conditions.failed(tree, "SchedulerError", tree.message)
        self.pods(tree, "SchedulerError", tree.message)

    def _report_waiting(self, key: GroupKey, message: str) -> None:
        """Waiting root ``key``'s report (or one whose pods are not ready, :meth:`root_not_ready`), if it still waits
        with ``message`` (:data:`NOT_READY_DELAY_S` on): its groups' condition (``Unschedulable``, of the reasons the
        API lists for ``PodGroupInitiallyScheduled``) and its pods' (``NotReadyForScheduling``)."""
        self._waiting.fired(key)
        tree = self.blocked.get(key) or self.cache.groups.trees.get(key)  # Waiting, or its pods not ready
        if tree is None or tree.state not in (TreeState.WAITING, TreeState.READY) or self.reported.get(key) != message:
            return
        if not self.fence():
            del self.reported[key]  # not leading: a later term, routing every tree again, reports it
            return
        log.info("root=%s result=%s reason=%r", key, TreeState.WAITING.value, message)
        self.conditions.failed(tree, "Unschedulable", message)
        self.pods(tree, REASON_NOT_READY, message)

    def _not_waiting(self, key: GroupKey) -> None:
        """Root ``key`` no longer waits with the message its pending report is for: the report is cancelled, and
        its message forgotten (it was never written), so the same wait later is reported after its own delay."""
        message = self._waiting.cancel(key)
        if message is not None and self.reported.get(key) == message:
            del self.reported[key]
