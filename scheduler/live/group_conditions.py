"""Level-triggered group conditions: derived from what is observed, written where the object differs.

What each PodGroup and CompositePodGroup of a tree should show is computed from the cache *now*, never
remembered from what this process wrote before:

* ``PodGroupInitiallyScheduled`` / ``CompositePodGroupInitiallyScheduled``
  (``scheduling.k8s.io/v1beta1`` ``PodGroupStatus``, ``v1alpha3`` ``CompositePodGroupStatus``) is
  ``True/Scheduled`` as soon as the group is satisfied by members the server shows bound (or finished
  with phase Succeeded) — whoever bound them: this process, the one before a crash, another replica,
  another client. Otherwise ``False`` with the root's last failure (``Unschedulable`` with the solver's
  message, ``Unschedulable`` for a Waiting tree, ``SchedulerError`` — ``Invalid`` on a CompositePodGroup
  — for an Invalid one), when there is one; otherwise nothing is written. Terminal once True (the writer
  never replaces a True).
* ``GangBelowMin`` (ours; :mod:`scheduler.live.repair`) on the root's group: ``True/BelowMinCount`` with
  the count while the tree is partial (members bound, root not satisfied) — not while members of it are being
  evicted by a preemption of ours (judged once they are gone); once it shows True, ``False``
  with ``Satisfied`` or ``NoMembersBound`` when that is over. Never added to a group that was never partial.
* ``DisruptionTarget`` (written ``True`` by the preemptor and gang repair on a group evicted whole): ``False/
  Rescheduled`` once the group is satisfied again by members bound since and no eviction of ours is under way —
  the condition says the object is about to be terminated, which it no longer is.

:meth:`GroupConditions.observe` is called for every root whose tree changed (and, on start and after a re-list, for
every root), :meth:`GroupConditions.failed` after a decision that placed nothing. Both only mark the tree's groups
*dirty*; one writer task (:meth:`GroupConditions.run`) takes the dirty groups — one entry per group however often it
was marked, so reports are coalesced per group — computes the desired condition, compares it with the cached object
and PATCHes through :class:`~scheduler.live.status_writer.StatusWriter` (REPORT lane; a 409 re-reads the object
once). A write that fails is retried after :class:`~scheduler.live.backoff.Backoff` (``retry_initial_s`` doubling to
``retry_max_s``, jittered so writes that failed together are not retried together, longer when the reply's
``Retry-After`` asks it; timed from the failure) until it lands or is no longer needed. A group marked again while
it backs off is written at once (a new state, as a new request) — unless the failure carried ``Retry-After``: then
nothing of the group is written before that wait ends, when it is judged with what it should show then.
:attr:`GroupConditions.depth` and :meth:`GroupConditions.oldest_age_s` are exported as the ``groups`` status queue
metrics. A root whose plan is still being bound (``binding``) is left alone until its binder has finished: its
members count as bound only once the server has them.

scheduler-plugins' PodGroups (``scheduling.x-k8s.io``, :class:`~scheduler.model.coscheduling.CoscheduledPodGroup`)
have no ``conditions`` in their CRD: they get scheduler-plugins' own status instead — ``phase``, ``scheduled``,
``running``, ``succeeded``, ``failed``, ``occupiedBy``, ``scheduleStartTime`` as its PodGroup controller computes
them (:func:`~scheduler.model.coscheduling.desired_status`, from the members in the cache), written the same
level-triggered way (:meth:`~scheduler.live.status_writer.StatusWriter.coscheduling_status`) — and a root's
failure as a ``FailedScheduling`` Warning Event on the PodGroup (its pods get theirs as for every gang).
``occupiedBy`` needs the first member's owners, which the cache does not keep: that pod is read once, when the
group first leaves Pending.

Our own condition writes come back as watch events that change no tree (a group's status is not what
the scheduler reads), so they neither wake the queue nor mark the tree dirty. A group object that comes in
showing ``GangBelowMin`` True is judged again all the same (:meth:`GroupConditions.shown`), as a controller
reconciles an object on every watch event of it: a PATCH is answered before its watch event arrives (a real API
server's watch lags its writes), so a judgement made in between — the tree emptied by then, its last members
deleted — sees no True to clear, and without this nothing would mark the group again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import PODS, ApiError, Lane, NotFound
from scheduler.groups.tree import Group, GroupTree, walk
from scheduler.live.backoff import Backoff
from scheduler.live.repair import GANG_BELOW_MIN, below_min_message
from scheduler.live.status_writer import (
    EVENT_FAILED_SCHEDULING,
    REASON_INVALID,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    StatusWriter,
)
from scheduler.live.tasks import woken_or_due
from scheduler.model.base import Condition, true_condition
from scheduler.model.coscheduling import (
    PENDING,
    CoscheduledPodGroup,
    CoschedulingPodGroupStatus,
    desired_status,
    occupied_by,
)
from scheduler.model.pod import DISRUPTION_TARGET
from scheduler.model.scheduling import (
    COMPOSITE_INITIALLY_SCHEDULED,
    INITIALLY_SCHEDULED,
    CompositePodGroup,
    GroupKey,
    PodGroup,
)

log = logging.getLogger(__name__)

BELOW_MIN_COUNT = "BelowMinCount"
SATISFIED = "Satisfied"
NONE_BOUND = "NoMembersBound"
"""``GangBelowMin`` reasons: members bound below the minimum; satisfied again; no member bound any more."""
RESCHEDULED = "Rescheduled"
RESCHEDULED_MESSAGE = "the group is scheduled again: members bound since it was disrupted"
"""``DisruptionTarget=False``: a group preempted or torn down whole whose members are bound again."""


@dataclass(frozen=True, slots=True)
class Report:
    """A root's last failure: condition ``reason``, the root's ``message``, and other groups' own messages."""

    reason: str
    message: str
    per_group: Mapping[GroupKey, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Retry:
    """A group whose condition write failed: the loop time of its next try (:attr:`at`), its failed attempts so far,
    its root; :attr:`held`: the server's ``Retry-After`` asked for the wait, so no write of the group goes out before
    :attr:`at` however often it is marked meanwhile (after a failure without one, a group marked again is written at
    once, as a new request is)."""

    at: float
    attempt: int
    root: GroupKey
    held: bool


@dataclass(frozen=True, slots=True)
class Desired:
    """A condition a group should show: its type, status, reason, message; ``terminal``: a True stays."""

    ctype: str
    status: bool
    reason: str
    message: str
    terminal: bool = False

    def shown_by(self, conditions: Sequence[Condition]) -> bool:
        """Whether the object's ``conditions`` already show this (or a terminal True of the type)."""
        current = next((c for c in conditions if c.type == self.ctype), None)
        if current is None:
            return False
        if self.terminal and current.is_true:
            return True
        return (current.is_true == self.status and current.reason == self.reason
                and (current.message or "") == self.message)


class GroupConditions:
    """See the module docstring. ``binding``: whether a root's plan is being bound now; ``fence``: whether
    this replica may write (it leads)."""

    def __init__(self, cache: ClusterCache, writer: StatusWriter, binding: Callable[[GroupKey], bool], *,
                 fence: Callable[[], bool] = lambda: True, retry_initial_s: float = 1.0,
                 retry_max_s: float = 60.0,
                 evicting: Callable[[tuple[GroupKey, ...]], bool] = lambda groups: False) -> None:
        self.cache = cache
        self.writer = writer
        self.binding = binding
        self.fence = fence
        """False (not leading) writes nothing: the next leader judges every group again from its cache."""
        self.evicting = evicting
        """Whether a tree's groups (its keys) lose members to a preemption of ours in progress: its ``GangBelowMin``
        is left as shown until they are going."""
        self.backoff = Backoff(retry_initial_s, retry_max_s)
        self.reports: dict[GroupKey, Report] = {}
        """Root → its last failure (dropped when the root is gone or its plan is bound)."""
        self._dirty: dict[GroupKey, GroupKey] = {}
        """Group → its root, in the order they were marked (one entry per group: coalesced)."""
        self._retry: dict[GroupKey, _Retry] = {}
        """Group → when and for which root to write it again, after a failed write."""
        self._failure_events: set[GroupKey] = set()
        """scheduler-plugins PodGroups whose root's new failure is still to be recorded as an Event on them."""
        self._owners: dict[str, str] = {}
        """scheduler-plugins PodGroup uid → the ``occupiedBy`` read from its first member (read once per group)."""
        self._since: dict[GroupKey, float] = {}
        """Group → loop time it was first marked and has not been written since (the queue's age)."""
        self._wake = asyncio.Event()
        self.writes = 0
        self.failures = 0

    # -- marking -------------------------------------------------------------------------------
    def observe(self, root: GroupKey) -> None:
        """Root ``root``'s tree changed (or may have): its groups are judged again."""
        tree = self.cache.groups.trees.get(root) or self.cache.groups.empty.get(root)
        if tree is None:
            self.reports.pop(root, None)
            return
        self._mark(tree)

    def failed(self, tree: GroupTree, reason: str, message: str,
               per_group: Mapping[GroupKey, str] | None = None) -> None:
        """A decision placed nothing: show ``reason`` / ``message`` on the tree's groups not satisfied."""
        self.reports[tree.key] = Report(reason, message, dict(per_group or {}))
        self._failure_events.update(k for k in tree.groups if isinstance(self.cache.group(k.kind, k.namespace, k.name),
                                                                          CoscheduledPodGroup))
        self._mark(tree)

    def bound(self, root: GroupKey) -> None:
        """A plan of ``root`` was bound (whole or in part): its failure no longer stands; judge it again."""
        self.reports.pop(root, None)
        self.observe(root)

    def shown(self, group: PodGroup | CompositePodGroup) -> None:
        """The cache took ``group`` (a watch event or a list; our own writes included): one that shows
        ``GangBelowMin`` True — the condition of a root group alone — is judged again (see the module docstring).
        O(its conditions); the judgement writes only where the object differs from what it should show."""
        if isinstance(group, CoscheduledPodGroup) or true_condition(group.status.conditions, GANG_BELOW_MIN) is None:
            return
        kind = "CompositePodGroup" if isinstance(group, CompositePodGroup) else "PodGroup"
        key = GroupKey(kind, group.metadata.namespace, group.metadata.name)
        if key in self._dirty or key in self._retry:
            return  # to be judged already, for the root it was marked for
        self._mark_group(key, key, asyncio.get_running_loop().time())
        self._wake.set()

    def _mark(self, tree: GroupTree) -> None:
        now = asyncio.get_running_loop().time()
        for key in tree.groups:
            if key.kind != "Pod":
                self._mark_group(key, tree.key, now)
        self._wake.set()

    def _mark_group(self, key: GroupKey, root: GroupKey, now: float) -> None:
        if (held := self._held(key, now)) is not None:
            held.root = root  # judged when the server's Retry-After ends
        else:
            self._dirty.pop(key, None)
            self._dirty[key] = root
        self._since.setdefault(key, now)

    def _held(self, key: GroupKey, now: float) -> _Retry | None:
        """The retry of group ``key`` while the server's ``Retry-After`` holds its writes back (loop time ``now``),
        else None."""
        retry = self._retry.get(key)
        return retry if retry is not None and retry.held and retry.at > now else None

    @property
    def depth(self) -> int:
        """Groups to be judged and maybe written: marked, or waiting for a retry."""
        return len(self._dirty.keys() | self._retry.keys())

    def oldest_age_s(self, now: float | None = None) -> float:
        """Seconds the group marked longest ago and not judged since has waited (0: none)."""
        if not self._since:
            return 0.0
        now = asyncio.get_running_loop().time() if now is None else now
        return max(0.0, now - min(self._since.values()))

    # -- judging -------------------------------------------------------------------------------
    def desired(self, tree: GroupTree, group: Group, obj: PodGroup | CompositePodGroup) -> list[Desired]:
        """What ``group`` of ``tree`` (its object ``obj``) should show now (see the module docstring)."""
        out: list[Desired] = []
        ctype = COMPOSITE_INITIALLY_SCHEDULED if group.key.kind == "CompositePodGroup" else INITIALLY_SCHEDULED
        report = self.reports.get(tree.key)
        if group.satisfied:
            out.append(Desired(ctype, True, REASON_SCHEDULED, "", terminal=True))
        elif report is not None:
            reason = report.reason
            if reason == REASON_SCHEDULER_ERROR and group.key.kind == "CompositePodGroup":
                reason = REASON_INVALID
            message = report.message if group.key == tree.key else report.per_group.get(group.key, report.message)
            out.append(Desired(ctype, False, reason, message, terminal=True))
        if (group.satisfied and true_condition(obj.status.conditions, DISRUPTION_TARGET) is not None
                and not self.evicting(tree.groups)):
            out.append(Desired(DISRUPTION_TARGET, False, RESCHEDULED, RESCHEDULED_MESSAGE))
        if group.key == tree.key:
            if tree.partial:
                if not self.evicting(tree.groups):  # evicting: left as shown until the victims are going
                    out.append(Desired(GANG_BELOW_MIN, True, BELOW_MIN_COUNT, below_min_message(tree)))
            elif true_condition(obj.status.conditions, GANG_BELOW_MIN) is not None:
                out.append(Desired(GANG_BELOW_MIN, False, SATISFIED if tree.root.satisfied else NONE_BOUND, ""))
        return out

    def _pending_writes(self, key: GroupKey, root: GroupKey) -> tuple[PodGroup | CompositePodGroup | None,
                                                                      list[Desired]]:
        """The object of group ``key`` of ``root`` and the conditions it does not show yet (none to write: [])."""
        if self.binding(root):
            return None, []  # judged again once its binder has finished (GroupConditions.bound)
        tree = self.cache.tree(root) or self.cache.groups.empty.get(root)
        obj = self.cache.group(key.kind, key.namespace, key.name)
        if tree is None or obj is None or obj.metadata.deletion_timestamp is not None:
            return None, []
        group = next((g for g in walk(tree.root) if g.key == key), None)
        if group is None:
            return None, []
        if isinstance(obj, CoscheduledPodGroup):
            return obj, []  # no conditions in its CRD: _write_coscheduling
        return obj, [d for d in self.desired(tree, group, obj) if not d.shown_by(obj.status.conditions)]

    # -- writing -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Write what the dirty groups should show, forever (the driver's task ``group-status``)."""
        loop = asyncio.get_running_loop()
        reached = 0.0  # the retry time a wait last ran out at, taken as reached (:func:`woken_or_due`)
        while True:
            now = max(loop.time(), reached)
            for key, retry in self._retry.items():
                if retry.at <= now:
                    self._dirty.setdefault(key, retry.root)
            if not self._dirty:
                due = min((retry.at for retry in self._retry.values()), default=None)
                if (ran_out := await woken_or_due(self._wake, due)) is not None:
                    reached = ran_out
                continue
            key, root = next(iter(self._dirty.items()))
            del self._dirty[key]
            if (held := self._held(key, now)) is not None:  # marked while its write was in flight, then held
                held.root = root
                continue
            await self._write(key, root)

    async def _write(self, key: GroupKey, root: GroupKey) -> None:
        if not self.fence():
            self._retry.pop(key, None)
            self._since.pop(key, None)
            return
        obj, wanted = self._pending_writes(key, root)
        if obj is None or not (wanted or isinstance(obj, CoscheduledPodGroup)):
            self._retry.pop(key, None)
            self._since.pop(key, None)
            return
        try:
            if isinstance(obj, CoscheduledPodGroup):
                await self._write_coscheduling(key, root, obj)
            for want in wanted:
                if want.ctype in (GANG_BELOW_MIN, DISRUPTION_TARGET):
                    await self.writer.set_group_condition(obj, want.ctype, want.status, want.reason, want.message,
                                                          raise_errors=True)
                else:
                    await self.writer.group_condition(obj, want.status, want.reason, want.message, raise_errors=True)
                obj = self.cache.group(key.kind, key.namespace, key.name) or obj  # the next write's base
        except ApiError as exc:
            self.failures += 1
            attempt = self._retry[key].attempt + 1 if key in self._retry else 1
            wait = self.backoff.wait_s(attempt, exc)
            self._retry[key] = _Retry(asyncio.get_running_loop().time() + wait, attempt, root,  # from the failure
                                      held=exc.retry_after_s is not None)
            log.info("group=%s condition write failed (%s), retry in %.1f s", key, exc, wait)
            self._wake.set()
            return
        self.writes += 1
        self._retry.pop(key, None)
        self._since.pop(key, None)

    async def _write_coscheduling(self, key: GroupKey, root: GroupKey, obj: CoscheduledPodGroup) -> None:
        """The status and failure Event of a scheduler-plugins PodGroup (module docstring). Raises ApiError."""
        report = self.reports.get(root)
        if key in self._failure_events and report is not None:
            self._failure_events.discard(key)
            message = report.message if key == root else report.per_group.get(key, report.message)
            await self.writer.group_warning(obj, EVENT_FAILED_SCHEDULING, message)
        counts = self.cache.groups.members.counts(key.namespace, key.name)
        min_member = obj.source.spec.min_member
        owners = obj.source.status.occupied_by or self._owners.get(obj.metadata.uid, "")
        if (not owners and obj.metadata.uid not in self._owners
                and desired_status(obj.source.status, min_member, counts, "", _now()).phase != PENDING):
            owners = self._owners[obj.metadata.uid] = await self._first_member_owners(key)

        def judge(current: CoschedulingPodGroupStatus) -> CoschedulingPodGroupStatus | None:
            wanted = desired_status(current, min_member, counts, owners, _now())
            return None if wanted == current else wanted

        await self.writer.coscheduling_status(obj, judge, raise_errors=True)

    async def _first_member_owners(self, key: GroupKey) -> str:
        """``occupiedBy`` from the owners of the group's first member by name (the controller takes the first
        pod its list returns, which the API server sorts by name); empty when it has none or is gone."""
        names = sorted(p.metadata.name for p in self.cache.groups.members.of(key.namespace, key.name).values())
        if not names:
            return ""
        try:
            raw = await self.writer.kube.get(PODS, key.namespace, names[0], lane=Lane.REPORT)
        except NotFound:
            return ""
        return occupied_by(key.namespace, (raw.get("metadata") or {}).get("ownerReferences") or [])


def _now() -> datetime:
    """The wall clock, UTC, whole seconds (``metav1.Time`` is written with second precision)."""
    return datetime.now(UTC).replace(microsecond=0)
