"""What users see of a scheduling decision: group conditions, pod conditions and Events.

The binder and the cycle driver call :class:`StatusWriter` after a decision is made; this
module only reports it. It writes three things, the way kube-scheduler does (``schedule_one.go``,
``schedule_one_podgroup.go``; the ``PodGroupStatus`` / ``CompositePodGroupStatus`` condition docs):

* ``PodGroupInitiallyScheduled`` / ``CompositePodGroupInitiallyScheduled`` on group status
  (terminal once True, no-op writes skipped);
* ``Scheduled`` (Normal) and ``FailedScheduling`` (Warning) ``events.k8s.io/v1`` Events on pods;
* ``PodScheduled=False`` on pods that could not be placed.

What it must not do: decide anything, or stop scheduling. Every API failure is logged as one
warning line and swallowed, because a lost status write is repaired by the next cycle while
a raised one would abort a bind that already happened. Repeated identical failures are
written at most once per ``event_interval_s`` so a stuck gang does not flood the API server.

Events are recorded by :class:`~scheduler.live.event_recorder.EventRecorder` (:attr:`StatusWriter.events`),
the way kube-scheduler's recorder writes them: named ``<object>.<hex nanoseconds>``, repeats counted into
a ``series`` (see that module). Its key keeps the note (client-go's leaves it out), so a changed failure
message shows at once as its own Event instead of hiding behind an old note.

A failure report is two writes, as kube-scheduler's ``handleSchedulingFailure`` makes them: the attempt's Event
(:meth:`StatusWriter.failed_scheduling_event`, one per attempt) and ``PodScheduled=False``
(:meth:`StatusWriter.unschedulable_condition`, the latest attempt's); the queued reports of ``run`` make them apart,
so a condition replaced before it is written loses no Event. A condition report made just after our own
``nominatedNodeName`` write on the pod waits for it and is sent against the version it produced
(:meth:`StatusWriter.nominating`), so our own write does not make it 409.

Flood control and series together: a condition that repeats the one last written on the pod within
``event_interval_s`` is not written again, and an Event that repeats the pod's last within it only counts into its
series; a repeated Event within ``event_interval_s`` of its last write is only counted in memory; the first repeat
after it writes the count with one strategic merge PATCH of ``series`` (client-go's first-repeat PATCH). So an Event
is written at most once per interval however often the gang is retried, and its count stays true up to one interval.
A series ends ``max(SERIES_WINDOW_S, event_interval_s)`` after its last observation (client-go's 6-minute
``finishTime``); a later repeat creates a new Event. An Event the server no longer has (404: ``--event-ttl``, 1 h by
default) is created again with its series, as ``recordEvent`` does.
The flood control of failure reports is here; the series are the recorder's.

Known limitations: the observations counted after the last write of a series that then stops
are not written (client-go writes them when its finish timer fires; we have no timer), so a
count can lag by one interval. The memory is per process, but a restart does not re-send what the
objects already show: a failure report equal to the pod's current ``PodScheduled``
condition writes neither the condition nor an Event when this process has no memory of the pod.
``reportingController`` must be a qualified name (≤ 63 characters): a longer ``scheduler_name`` makes
the server refuse every Event (logged, not checked here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pydantic import ValidationError

from scheduler.client import podgroup_api
from scheduler.client.kube import (
    COMPOSITES,
    COSCHEDULING_PODGROUPS,
    JSON,
    MERGE_PATCH,
    PODS,
    STRATEGIC_PATCH,
    ApiError,
    Conflict,
    KubeClient,
    Lane,
    NotFound,
    Resource,
)
from scheduler.live.event_recorder import (
    EventRecorder,
    ObjectReference,
    Regarding,
    event_name,
    micro_time,
)
from scheduler.live.event_recorder import warn as _warn
from scheduler.model.base import Condition, ConditionFields, from_wire, named_within
from scheduler.model.coscheduling import (
    CoscheduledPodGroup,
    CoschedulingPodGroup,
    CoschedulingPodGroupStatus,
    status_patch,
    to_podgroup,
)
from scheduler.model.lean_pod import LeanPod
from scheduler.model.pod import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER, Pod, PodCondition
from scheduler.model.scheduling import (
    COMPOSITE_INITIALLY_SCHEDULED,
    INITIALLY_SCHEDULED,
    CompositePodGroup,
    PodGroup,
)

logger = logging.getLogger(__name__)

# Condition reasons (core/v1 ``PodScheduled``; ``PodGroupStatus`` / ``CompositePodGroupStatus`` ``conditions``).
# ``Scheduled`` is the constant in kube-scheduler's PodGroup code; the failure reasons are the API doc's.
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_NOT_READY = "NotReadyForScheduling"
"""``PodScheduled=False`` reason of a pod not tried yet: its gang has fewer members than its minimum, or its group
does not exist (KEP-5501 ``PodReasonNotReadyForScheduling``: "the scheduler has not yet attempted to schedule the pod
because it has failed one or more preliminary checks" — kube-scheduler's PreEnqueue). Not ``Unschedulable``, which
the Cluster Autoscaler reads as "no node has room"; its Event is of the same reason, ``Normal``."""
REASON_INVALID = "Invalid"

POD_SCHEDULED = "PodScheduled"
NODES_RESERVED = "NodesReserved"
"""Our PodGroup condition while the starvation guard holds the nodes of a root's best plan for it (no
upstream equivalent: kube-scheduler has no starvation protection, and KEP-5710 specifies none)."""
OWN_WRITE_KEEP_S = 60.0
"""How long the version our own ``nominatedNodeName`` write produced is kept for the reports on the pod after the write
ended (seconds): they are queued before it ends and written within seconds; later the cache's copy shows it."""
OWN_WRITE_WAIT_S = 10.0
"""How long a pod's report waits at most for our own ``nominatedNodeName`` write on the pod to end (seconds): that
write is in the URGENT lane, and ends in a round trip; a report that waits longer goes against its copy's version."""
CONFLICT_ATTEMPTS = 4
"""Writes of one group condition before a 409 is given up (each after reading the group again)."""

# Event reasons and actions, as kube-scheduler records them (pkg/scheduler/schedule_one.go, v1.37).
EVENT_SCHEDULED = "Scheduled"
EVENT_FAILED_SCHEDULING = "FailedScheduling"
EVENT_GANG_TORN_DOWN = "GangTornDown"
EVENT_GANG_BELOW_MIN = "GangBelowMin"
"""Our Event reasons (kube-scheduler has none) on a partial gang's group after the repair timeout:
torn down (``disruptionMode: all``), or left below its minimum (``single``)."""
EVENT_UNHONOURED = "UnhonouredField"
"""Our Event reason (kube-scheduler has none) for a pod field no plugin honours."""
EVENT_OBJECT_REFUSED = "ObjectRefused"
"""Our Event reason (kube-scheduler has none) on an object the scheduler's cache refused or read in part."""
ACTION_BINDING = "Binding"
ACTION_SCHEDULING = "Scheduling"
# Preemption (pkg/scheduler/framework/preemption/executor.go, v1.37): the victim's Event reason and action.
EVENT_PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"
EVENT_PREEMPTING = "Preempting"
"""Reason of our Event on the preemptor's group naming its victims (upstream records none)."""
# Event types: the only two the API server accepts (core/v1 EventTypeNormal / EventTypeWarning).
EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"

NOTE_MAX_BYTES = 1024
"""``events.k8s.io/v1`` Event ``note`` limit (pkg/apis/core/validation/events.go ``NoteLengthLimit``; bytes)."""

REPORTING_INSTANCE_MAX = 128
"""``reportingInstance`` limit (same file, ``ReportingInstanceLengthLimit``); a longer identity is cut."""

CONDITION_MESSAGE_MAX_BYTES = 32768
"""``metav1.Condition.message`` limit (maxLength 32768; Go validation counts bytes)."""

MAX_REMEMBERED_FAILURES = 65536
"""Cap on the flood-control memory: entries expire after ``event_interval_s`` anyway; this bounds
a burst of distinct failures (about 10 MB of keys at worst)."""

_ELLIPSIS = "…"


class _Condition(NamedTuple):
    """The condition to write: ``type``, ``status`` ("True" / "False"), ``reason``, ``message``."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(slots=True)
class _OwnWrite:
    """Our ``status.nominatedNodeName`` write on a pod: ``base``, the ``resourceVersion`` of the cached copy it was
    decided against; ``produced``, the one it produced (None: not written, failed, or the pod was bound since)."""

    base: str | None
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    produced: str | None = None
    ended_at: float | None = None
    """Loop time it ended (None: not yet)."""


class StatusWriter:
    """Writes group conditions, pod conditions, pods' nominations and pod Events; never raises on API errors, but
    where a method says so (:meth:`pod_nomination`, and ``raise_errors`` for the writers that retry).

    Longer than our ~300-line rule, on purpose: every status the scheduler writes goes through here, so that
    one place holds the rules the API server enforces on them (``metav1.Condition``'s required fields, the
    status subresource, a victim's ``DisruptionTarget``, scheduler-plugins' status) and the flood control of
    failure reports. The Events themselves are :class:`~scheduler.live.event_recorder.EventRecorder`'s, and
    the queue of pod reports is :class:`~scheduler.live.reporter.Reporter`'s.

    ``kube``: the API seam. ``scheduler_name``: our ``spec.schedulerName``, sent as the Events'
    ``reportingController`` (kube-scheduler reports its profile name the same way).
    ``instance``: this replica's identity (e.g. the pod name), the Events' ``reportingInstance``,
    cut to 128 characters. ``event_interval_s``: the same failure (pod uid, reason, message) is
    written at most once per this many seconds of event-loop time, and so is an Event's series.
    60 s keeps a stuck gang retried every 1–10 s by backoff (kube-scheduler's ``podInitialBackoffSeconds`` /
    ``podMaxBackoffSeconds`` defaults) down to one write per pod per minute, while a changed message shows at once.
    """

    def __init__(self, kube: KubeClient, scheduler_name: str, *, instance: str,
                 event_interval_s: float = 60.0) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.instance = instance[:REPORTING_INSTANCE_MAX]
        self.event_interval_s = event_interval_s
        self._recent: dict[str, tuple[tuple[str, str], float]] = {}
        """Pod uid → the last (reason, message) whose failure Event was recorded, and the loop time."""
        self._written: dict[str, tuple[tuple[str, str], float]] = {}
        """Pod uid → the last (reason, message) written as its ``PodScheduled=False``, and the loop time."""
        self._own: dict[str, _OwnWrite] = {}
        """Pod key → our latest ``nominatedNodeName`` write on it (:meth:`nominating`)."""
        self.events = EventRecorder(kube, scheduler_name, self.instance, event_interval_s)
        """The Events (created once, repeats counted into their series)."""

    async def group_condition(self, group: PodGroup | CompositePodGroup, scheduled: bool, reason: str,
                              message: str, *, raise_errors: bool = False) -> bool:
        """Set ``(Composite)PodGroupInitiallyScheduled`` on ``group``; True if a PATCH was accepted.

        ``scheduled``: True → status True (``reason`` should be ``Scheduled``); False → status False
        with ``reason`` ``Unschedulable`` | ``SchedulerError`` | ``Invalid``. ``message`` is cut to
        32768 bytes. ``group`` is the cached object: its conditions, ``generation`` and
        ``resourceVersion`` decide what is written.

        Rules (``PodGroupStatus`` / ``CompositePodGroupStatus`` ``conditions``; ``apimeta.SetStatusCondition``,
        which kube-scheduler uses): nothing is written when the condition is already True (terminal) or
        already has the same status, reason, message and observedGeneration; ``lastTransitionTime`` changes
        only with the status; ``observedGeneration`` is ``metadata.generation``.

        The write is a merge PATCH of ``status`` carrying the whole ``conditions`` list (a merge
        patch replaces lists) with ``metadata.resourceVersion`` as a precondition, so a stale cache
        can neither drop a condition another writer added nor overwrite a True. On 409 the object
        is read again and the rules re-applied once. Any other API error is logged and returns False —
        or, with ``raise_errors`` (the level-triggered writer, which retries), is raised as ApiError.
        """
        ctype = COMPOSITE_INITIALLY_SCHEDULED if isinstance(group, CompositePodGroup) else INITIALLY_SCHEDULED
        new = _Condition(ctype, "True" if scheduled else "False", reason,
                         truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        return await self._set_group_condition(group, new, terminal=True, raise_errors=raise_errors)

    async def set_group_condition(self, group: PodGroup | CompositePodGroup, ctype: str, status: bool, reason: str,
                                  message: str, *, terminal: bool = False, raise_errors: bool = False) -> bool:
        """Set condition ``ctype`` on ``group`` (True/False with ``reason`` and ``message``, cut to 32768 bytes),
        written as :meth:`group_condition` writes it (``terminal``: an existing True is kept); True if a PATCH
        was accepted. For the conditions ours alone (``GangBelowMin``)."""
        new = _Condition(ctype, "True" if status else "False", reason,
                         truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        return await self._set_group_condition(group, new, terminal=terminal, raise_errors=raise_errors)

    async def group_reservation(self, group: PodGroup | CompositePodGroup, held: bool, reason: str,
                                message: str) -> bool:
        """Set ``NodesReserved`` on a starving root's group: True while the nodes of its best plan are held for
        it (reason ``Starving``), False when the reservation ends (``Fitted``, ``Expired``). Written as
        :meth:`group_condition` writes, not terminal; True if a PATCH was accepted."""
        new = _Condition(NODES_RESERVED, "True" if held else "False", reason,
                         truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        return await self._set_group_condition(group, new, terminal=False)

    async def _set_group_condition(self, group: PodGroup | CompositePodGroup, new: _Condition, *,
                                   terminal: bool, raise_errors: bool = False) -> bool:
        """PATCH ``new`` into ``group``'s conditions (see :meth:`group_condition`): on 409 the group is read
        again and judged once more, up to :data:`CONFLICT_ATTEMPTS` writes in all (another writer of the same
        group — the level-triggered conditions, a reservation ending — may land in between); a group deleted
        meanwhile (404) gives False quietly (nothing to retry); other API errors are logged and give False
        (``raise_errors``: raised)."""
        if isinstance(group, CoscheduledPodGroup):
            return False  # the CRD's status has no conditions: its phase says it (coscheduling_status), Events the rest
        api = None if isinstance(group, CompositePodGroup) else podgroup_api.of(group)  # the version it came from
        res = COMPOSITES if api is None else api.resource
        what = f"{res.kind} {group.metadata.namespace}/{group.metadata.name}"
        current = group
        try:
            for _ in range(CONFLICT_ATTEMPTS - 1):
                try:
                    return await self._patch_group(res, current, new, terminal, api)
                except Conflict:  # our copy is stale: judge again against the server's
                    fresh = await self.kube.get(res, group.metadata.namespace, group.metadata.name,
                                                lane=Lane.REPORT)
                    current = from_wire(CompositePodGroup, fresh) if api is None else api.parse(fresh)
            return await self._patch_group(res, current, new, terminal, api)
        except NotFound:  # deleted meanwhile (its owner tearing the workload down): nothing left to report on
            logger.debug("%s is gone: condition %s not written", what, new.type)
            return False
        except ApiError as exc:
            _warn(what, exc)
            if raise_errors:
                raise
            return False
        except ValidationError as exc:
            _warn(what, exc)
            return False

    async def coscheduling_status(self, group: CoscheduledPodGroup,
                                  judge: Callable[[CoschedulingPodGroupStatus], CoschedulingPodGroupStatus | None],
                                  *, raise_errors: bool = False) -> bool:
        """Write scheduler-plugins' status on ``group`` (the cached object); True if a PATCH was accepted.

        ``judge``: given the status the object shows, the status it should show, or None when it shows it
        already (``model/coscheduling.py`` :func:`~scheduler.model.coscheduling.desired_status`). Written as
        scheduler-plugins' controller writes it — a merge PATCH of the status subresource
        (``r.Status().Patch(ctx, new, client.MergeFrom(old))``) — with ``metadata.resourceVersion`` as a
        precondition; on 409 the group is read again and judged again, up to :data:`CONFLICT_ATTEMPTS` writes.
        API errors are logged and give False (``raise_errors``: raised as ApiError).
        """
        what = f"{COSCHEDULING_PODGROUPS.kind} {group.metadata.namespace}/{group.metadata.name}"
        current = group
        try:
            for attempt in range(CONFLICT_ATTEMPTS):
                wanted = judge(current.source.status)
                if wanted is None:
                    return False
                body: JSON = {"status": status_patch(wanted)}
                if current.metadata.resource_version:
                    body["metadata"] = {"resourceVersion": current.metadata.resource_version}
                try:
                    await self.kube.patch(COSCHEDULING_PODGROUPS, group.metadata.namespace, group.metadata.name, body,
                                          sub="status", lane=Lane.REPORT, reply=False)
                    return True
                except Conflict:
                    if attempt == CONFLICT_ATTEMPTS - 1:
                        raise
                    fresh = await self.kube.get(COSCHEDULING_PODGROUPS, group.metadata.namespace,
                                                group.metadata.name, lane=Lane.REPORT)
                    current = to_podgroup(from_wire(CoschedulingPodGroup, fresh))
        except ApiError as exc:
            _warn(what, exc)
            if raise_errors:
                raise
        except ValidationError as exc:
            _warn(what, exc)
        return False

    async def _patch_group(self, res: Resource, group: PodGroup | CompositePodGroup, new: _Condition,
                           terminal: bool = True, api: podgroup_api.PodGroupApi | None = None) -> bool:
        """PATCH ``new`` into ``group``'s status unless it changes nothing; True if written. Raises ApiError.
        ``terminal``: an existing True of that type is never replaced. ``api``: the PodGroup API the
        conditions are written in (its names: ``PodGroupScheduled`` on v1.36); None for a CompositePodGroup."""
        conditions = _with_condition(group.status.conditions, new, group.metadata.generation, terminal=terminal)
        if conditions is None:
            return False
        body: JSON = {"status": {"conditions": conditions if api is None else api.conditions(conditions)}}
        if group.metadata.resource_version:
            body["metadata"] = {"resourceVersion": group.metadata.resource_version}
        await self.kube.patch(res, group.metadata.namespace, group.metadata.name, body, sub="status", lane=Lane.REPORT,
                              reply=False)  # the cache takes the object from the watch
        return True

    async def disruption_target(self, obj: Regarding, message: str, reason: str = REASON_PREEMPTION_BY_SCHEDULER
                                ) -> bool:
        """Set ``DisruptionTarget=True`` (``reason``: ``PreemptionByScheduler``, or ``GangTornDown`` for a partial
        gang's teardown) on a victim: a pod, or a PodGroup / CompositePodGroup whose pods are evicted.
        True if a PATCH was accepted.

        As kube-scheduler's ``PreemptPod`` (``preemption/executor.go``, v1.37): written only when the condition
        changes, through the status subresource — a strategic merge PATCH of the pod's ``conditions`` (merged
        by ``type`` on a real server), a merge PATCH of the group's with its ``resourceVersion``. A pod that is
        gone raises :class:`NotFound` (the victim is already gone: the caller deletes nothing and records no
        Event, as upstream); every other API error is logged and gives False.
        """
        new = _Condition(DISRUPTION_TARGET, "True", reason, truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        if not isinstance(obj, (Pod, LeanPod)):
            return await self._set_group_condition(obj, new, terminal=False)
        conditions = _with_condition(obj.status.conditions, new, obj.metadata.generation, terminal=False)
        if conditions is None:
            return False
        try:
            await self.kube.patch(PODS, obj.metadata.namespace, obj.metadata.name,
                                  {"status": {"conditions": conditions}}, sub="status", content_type=STRATEGIC_PATCH,
                                  lane=Lane.URGENT, reply=False)  # a victim's condition goes with its eviction
        except NotFound:
            raise
        except ApiError as exc:
            _warn(f"Pod {obj.key} condition {DISRUPTION_TARGET}", exc)
            return False
        return True

    async def preempted(self, victim: Pod, preemptor: Regarding) -> None:
        """A ``Preempted`` Normal Event (action ``Preempting``) on ``victim``, related to ``preemptor``.

        Upstream's note is ``Preempted by podgroup <uid> on node cluster`` (``executor.go``); ours names the
        preemptor by kind, namespace/name and uid. API errors are logged and swallowed.
        """
        md = preemptor.metadata
        note = f"Preempted by {preemptor.kind} {md.namespace}/{md.name} (uid {md.uid or 'unknown'})"
        await self.events.record(victim, EVENT_NORMAL, EVENT_PREEMPTED, ACTION_PREEMPTING, note, related=preemptor)

    async def preempting(self, preemptor: Regarding, victims: Sequence[tuple[str, str]]) -> None:
        """A ``Preempting`` Normal Event on the preemptor's group naming its ``victims`` (pod key, node) — those of its
        own namespace only: the others are counted, as whoever reads the preemptor's Events may not read theirs
        (kube-scheduler names no victim to the preemptor at all). The note is cut to 1024 bytes. API errors are
        logged and swallowed."""
        listed = named_within([(key, f"{key} on {node}") for key, node in victims], preemptor.metadata.namespace)
        note = truncate_utf8(f"Preempting {len(victims)} pod(s) of lower priority to make room: {listed}",
                             NOTE_MAX_BYTES)
        await self.events.record(preemptor, EVENT_NORMAL, EVENT_PREEMPTING, ACTION_PREEMPTING, note)

    async def pod_scheduled(self, pod: Pod, node: str) -> None:
        """Record a ``Scheduled`` Normal Event (action ``Binding``) on ``pod``, bound to ``node``.

        Note wording is kube-scheduler's: "Successfully assigned NS/NAME to NODE"
        (schedule_one.go ``finishBinding``). Call after the bind succeeded (architecture §6 step 3).
        API errors are logged and swallowed.
        """
        note = f"Successfully assigned {pod.key} to {node}"
        await self.events.record(pod, EVENT_NORMAL, EVENT_SCHEDULED, ACTION_BINDING, note)

    async def pods_scheduled(self, bound: Sequence[tuple[Pod, str]]) -> None:
        """:meth:`pod_scheduled` for each (pod, node) of a plan's binds, one after another: one task per plan
        reports it, instead of one per pod competing with the binds of the next plan (Events are reports,
        ``Lane.REPORT``). API errors are logged and swallowed, each pod on its own."""
        for pod, node in bound:
            await self.pod_scheduled(pod, node)

    async def pods_unschedulable(self, pods: Sequence[Pod], reason: str, message: str) -> None:
        """:meth:`pod_unschedulable` for each of a tree's pending ``pods``, one after another (one task per
        report, as :meth:`pods_scheduled`)."""
        for pod in pods:
            await self.pod_unschedulable(pod, reason, message)

    async def pod_unschedulable(self, pod: Pod, reason: str, message: str) -> None:
        """Report a failed attempt on ``pod``: ``PodScheduled=False`` (:meth:`unschedulable_condition`), then its
        Event (:meth:`failed_scheduling_event`) — no Event when the server refused the condition because the pod
        changed since this copy (409: bound since, the report is stale). API errors are logged and swallowed; a
        failed Event does not stop the condition patch. The queued reports of ``run`` call the two halves on their
        own (:class:`~scheduler.live.reporter.Reporter`): each attempt's Event, the latest attempt's condition.
        """
        if await self.unschedulable_condition(pod, reason, message):
            await self.failed_scheduling_event(pod, reason, message)

    async def failed_scheduling_event(self, pod: Pod, reason: str, message: str) -> None:
        """The Event of one failed attempt on ``pod``: a ``FailedScheduling`` Warning (action ``Scheduling``), or for
        :data:`REASON_NOT_READY` (a pod not tried yet) a ``Normal`` Event of that reason; the note is ``message`` cut
        to 1024 bytes ending in "…". kube-scheduler records one per attempt (``handleSchedulingFailure``), apart from
        the condition: a later attempt's condition may replace this one's before it is written, its Event does not.

        Flood control: a report equal (reason, message) to the last one whose Event was recorded for this pod within
        ``event_interval_s`` of event-loop time only counts into that Event's series (written at most once per
        interval: see the module docstring); with no memory of the pod (a restart, another leader), a report the
        pod's ``PodScheduled`` already shows records nothing — it was reported before, by the object's word. A
        changed message is a new Event at once. API errors are logged and swallowed.
        """
        uid = pod.metadata.uid or pod.key
        note = truncate_utf8(message, NOTE_MAX_BYTES)
        kind, event = (EVENT_NORMAL, REASON_NOT_READY) if reason == REASON_NOT_READY else \
            (EVENT_WARNING, EVENT_FAILED_SCHEDULING)
        shown = uid not in self._recent and _shows(pod.status.conditions, _unschedulable(reason, message))
        if not _first_in_interval(self._recent, uid, (reason, message), self.event_interval_s) or shown:
            if not shown:
                self.events.count((uid, kind, event, ACTION_SCHEDULING, note), asyncio.get_running_loop().time())
            return
        await self.events.record(pod, kind, event, ACTION_SCHEDULING, note)

    async def unschedulable_condition(self, pod: Pod, reason: str, message: str, *,
                                      raise_errors: bool = False) -> bool:
        """``PodScheduled=False`` with ``reason`` (``Unschedulable``, ``SchedulerError``, :data:`REASON_NOT_READY`:
        core/v1 ``PodReasonUnschedulable`` / ``PodReasonSchedulerError``, KEP-5501) and ``message`` (cut to 32768
        bytes) on ``pod``. False when the server refused it because the pod changed since this copy (409) and
        ``raise_errors`` is not set; else True.

        Written only when the pod's current ``PodScheduled`` differs in status, reason, message or
        observedGeneration (kube-scheduler's ``updatePod`` skips equal conditions), and not again within
        ``event_interval_s`` when it is the condition this writer last wrote on the pod, nor, with no memory of the
        pod (a restart), when the pod already shows it. The patch is a strategic merge PATCH of
        ``pods/{name}/status`` with the pod's whole ``conditions`` list, ours replaced (the API server merges by
        ``type``, a list-replacing server gets the same result), with ``metadata.resourceVersion`` as precondition:
        the report is about this version, so a pod bound since is left alone. When our own
        ``status.nominatedNodeName`` write on the pod (:meth:`nominating`) is not in this copy yet, the report waits
        for that write (at most :data:`OWN_WRITE_WAIT_S`) and is sent against the version it produced: our own write
        does not make it 409, while any other change since this copy still does.

        API errors are logged and swallowed; with ``raise_errors`` they are raised (:class:`ApiError`, a 409 too: the
        caller reads the pod again and retries) and the condition is not remembered as written.
        """
        uid = pod.metadata.uid or pod.key
        new = _unschedulable(reason, message)
        if uid not in self._written and _shows(pod.status.conditions, new):
            _first_in_interval(self._written, uid, (reason, message), self.event_interval_s)
            return True  # nothing in memory (a restart) but the pod shows this very report: written before
        if not _first_in_interval(self._written, uid, (reason, message), self.event_interval_s):
            return True
        conditions = _with_condition(pod.status.conditions, new, pod.metadata.generation, terminal=False)
        if conditions is None:
            return True
        body: dict[str, Any] = {"status": {"conditions": conditions}}
        version = await self._report_version(pod)
        if version:
            body["metadata"] = {"resourceVersion": version}
        try:
            await self.kube.patch(PODS, pod.metadata.namespace, pod.metadata.name, body, sub="status",
                                  content_type=STRATEGIC_PATCH, lane=Lane.REPORT, reply=False)
        except Conflict:
            if raise_errors:  # the pod changed since this copy: the caller tries again with the pod as it is then
                self._written.pop(uid, None)
                raise
            return False  # the pod changed (bound, or a newer attempt): this report is stale
        except ApiError as exc:
            if raise_errors:
                self._written.pop(uid, None)
                raise
            _warn(f"Pod {pod.key} condition {POD_SCHEDULED}", exc)
        return True

    def nominating(self, pods: Iterable[Pod]) -> None:
        """Our ``status.nominatedNodeName`` writes on ``pods`` (their cached copies) are decided and about to be sent
        (:meth:`pod_nomination`): until each ends (:meth:`nomination_ended`), a report on the pod made against such a
        copy waits for it, and is sent against the version it produced (:meth:`unschedulable_condition`). Call it
        when the nomination is decided, before anything is queued: a report queued after it then never races it."""
        own = self._own
        for pod in pods:
            self._end(own.pop(pod.key, None))
            own[pod.key] = _OwnWrite(pod.metadata.resource_version)
        stale = asyncio.get_running_loop().time() - OWN_WRITE_KEEP_S
        while own:  # in the order decided: those ended long ago, whose reports have come or will not
            first = next(iter(own.values()))
            if len(own) <= MAX_REMEMBERED_FAILURES and (first.ended_at is None or first.ended_at >= stale):
                break
            self._end(own.pop(next(iter(own))))

    async def pod_nomination(self, pod: Pod, node: str | None) -> None:
        """Write ``status.nominatedNodeName`` = ``node`` (None: removed) on ``pod``: a merge PATCH of ``pods/status``
        in the URGENT lane (the durable form of the room held for it). The version it produced is kept for the
        reports on the pod (:meth:`nominating`). Raises :class:`ApiError` (:class:`NotFound`: the pod is gone)."""
        own = self._own.get(pod.key)
        try:
            reply = await self.kube.patch(PODS, pod.metadata.namespace, pod.metadata.name,
                                          {"status": {"nominatedNodeName": node}}, sub="status",
                                          content_type=MERGE_PATCH, lane=Lane.URGENT)
            md, spec = reply.get("metadata") or {}, reply.get("spec") or {}
            if own is not None and not own.ended.is_set() and not spec.get("nodeName"):
                own.produced = md.get("resourceVersion")  # bound since: the report's precondition must refuse it
        finally:
            self._ended(pod.key, own)

    def nomination_ended(self, key: str) -> None:
        """The nomination write decided for pod ``key`` ended, or will not be sent: reports on it stop waiting."""
        self._ended(key, self._own.get(key))

    def _ended(self, key: str, own: _OwnWrite | None) -> None:
        """``own``, the write on pod ``key``, ended; forgotten at once when it produced no version a report could use
        (not written, failed, or the pod bound since)."""
        self._end(own)
        if own is not None and own.produced is None and self._own.get(key) is own:
            del self._own[key]

    @staticmethod
    def _end(own: _OwnWrite | None) -> None:
        if own is not None and not own.ended.is_set():
            own.ended.set()
            own.ended_at = asyncio.get_running_loop().time()

    async def _report_version(self, pod: Pod) -> str | None:
        """The ``resourceVersion`` a report about the copy ``pod`` is sent against: the one our own nomination write
        produced when ``pod`` is the copy that write was decided against (waiting for it to end, at most
        :data:`OWN_WRITE_WAIT_S`), else ``pod``'s."""
        own = self._own.get(pod.key)
        version = pod.metadata.resource_version
        if own is None or own.base != version:
            if own is not None and own.ended.is_set():
                del self._own[pod.key]  # the copy shows a later version than the one the write was decided against
            return version
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(own.ended.wait(), OWN_WRITE_WAIT_S)
        return own.produced or version

    async def pod_warning(self, pod: Pod, reason: str, message: str) -> None:
        """Record a Warning Event (action ``Scheduling``) with ``reason`` and ``message`` (cut to 1024 bytes)
        on ``pod`` — e.g. :data:`EVENT_UNHONOURED`; no condition is written. Repeats count into the Event's
        series (:meth:`_event`); the caller decides how often to report. API errors are logged and swallowed."""
        await self.events.record(pod, EVENT_WARNING, reason, ACTION_SCHEDULING, truncate_utf8(message, NOTE_MAX_BYTES))

    async def group_warning(self, group: PodGroup | CompositePodGroup, reason: str, message: str) -> None:
        """Record a Warning Event (action ``Scheduling``) with ``reason`` and ``message`` (cut to 1024 bytes) on a
        group — e.g. :data:`EVENT_GANG_TORN_DOWN`. API errors are logged and swallowed."""
        await self.events.record(group, EVENT_WARNING, reason, ACTION_SCHEDULING,
                                 truncate_utf8(message, NOTE_MAX_BYTES))

    async def object_warning(self, obj: ObjectReference, reason: str, message: str) -> None:
        """Record a Warning Event (action ``Scheduling``) with ``reason`` and ``message`` (cut to 1024 bytes) on an
        object the cache refused — e.g. :data:`EVENT_OBJECT_REFUSED`; in ``default`` when it is cluster-scoped.
        API errors are logged and swallowed."""
        await self.events.record(obj, EVENT_WARNING, reason, ACTION_SCHEDULING, truncate_utf8(message, NOTE_MAX_BYTES))

def truncate_utf8(text: str, limit_bytes: int) -> str:
    """``text`` if its UTF-8 encoding fits ``limit_bytes``, else the longest prefix that fits with "…" appended.

    Never splits a character. API length limits on ``note`` and ``message`` are checked in bytes.
    """
    raw = text.encode()
    if len(raw) <= limit_bytes:
        return text
    keep = raw[:max(0, limit_bytes - len(_ELLIPSIS.encode()))]
    return keep.decode(errors="ignore") + _ELLIPSIS


def _first_in_interval(recent: dict[str, tuple[tuple[str, str], float]], uid: str, report: tuple[str, str],
                       interval_s: float) -> bool:
    """True (and remember ``report`` in ``recent`` as pod ``uid``'s last, written now) unless it repeats the report
    last remembered for this pod there, within ``interval_s``.

    Only the *last* report counts, so a message that changes and changes back (a Waiting gang:
    "3/4 pods exist", a fourth pod comes and goes, "3/4 pods exist") rewrites the pod's condition
    at once instead of leaving the middle message on it; its Event is still written at most once
    per interval (the recorder's series). The memory is one entry per pod in write order: expired entries
    are dropped from its front on every call, and the oldest beyond :data:`MAX_REMEMBERED_FAILURES`.
    """
    now = asyncio.get_running_loop().time()
    while recent:
        oldest, (_, stamp) = next(iter(recent.items()))
        if now - stamp < interval_s and len(recent) < MAX_REMEMBERED_FAILURES:
            break
        del recent[oldest]
    last = recent.get(uid)
    if last is not None and last[0] == report:
        return False
    recent.pop(uid, None)  # re-inserted at the end: the dict stays in write order
    recent[uid] = (report, now)
    return True


def _unschedulable(reason: str, message: str) -> _Condition:
    """``PodScheduled=False`` with ``reason`` and ``message`` (cut to 32768 bytes)."""
    return _Condition(POD_SCHEDULED, "False", reason, truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))


def _now() -> str:
    """Wall-clock now as ``metav1.Time`` (RFC 3339, seconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_REQUIRED = frozenset({"type", "status", "reason", "message"})
"""The ``metav1.Condition`` fields without ``omitempty``: a Go client always sends them, ``"message": ""`` included,
and the schema requires them (``status.conditions[0].message: Required value`` when one is left out)."""


def _dump(cond: ConditionFields) -> JSON:
    """A condition as API JSON, as a Go client serialises it: unset fields left out; empty strings left out of a pod
    condition (``PodCondition``: every field ``omitempty``) but kept in a ``metav1.Condition`` (:data:`_REQUIRED`)."""
    keep = _REQUIRED if isinstance(cond, Condition) else frozenset()
    return {k: v for k, v in cond.model_dump(by_alias=True, mode="json").items()
            if v is not None and (v != "" or k in keep)}


def _with_condition(conditions: Sequence[Condition | PodCondition], new: _Condition, generation: int | None, *,
                    terminal: bool) -> list[JSON] | None:
    """``conditions`` as API JSON with ``new`` in place of the same type, or None when nothing would change.

    Mirrors ``apimeta.SetStatusCondition`` (and the pod's ``UpdatePodCondition``): unchanged when
    status, reason, message and observedGeneration are equal; ``lastTransitionTime`` is kept
    unless the status changes. ``terminal``: an existing True is never replaced
    (``*InitiallyScheduled``, per the ``PodGroupStatus`` doc). ``observedGeneration`` is ``generation`` when known
    (for pods: PodObservedGenerationTracking, as kube-scheduler sets it). Fields the models do not
    read (a pod condition's ``lastProbeTime``) are not sent back.
    """
    old = next((c for c in conditions if c.type == new.type), None)
    if old is not None and ((terminal and old.is_true) or (old.status, old.reason, old.message, old.observed_generation)
                            == (new.status, new.reason, new.message, generation)):
        return None
    out: JSON = {"type": new.type, "status": new.status, "reason": new.reason, "message": new.message}
    if old is not None and old.status == new.status and old.last_transition_time is not None:
        out["lastTransitionTime"] = _dump(old)["lastTransitionTime"]
    else:
        out["lastTransitionTime"] = _now()
    if generation is not None:
        out["observedGeneration"] = generation
    dumped = [_dump(c) for c in conditions]
    if old is None:
        return [*dumped, out]
    return [out if c.get("type") == new.type else c for c in dumped]


def _shows(conditions: Sequence[Condition | PodCondition], new: _Condition) -> bool:
    """Whether ``conditions`` already hold ``new``'s type with its status, reason and message."""
    old = next((c for c in conditions if c.type == new.type), None)
    return old is not None and (old.status, old.reason, old.message) == (new.status, new.reason, new.message)


__all__ = [
    "REASON_INVALID",
    "REASON_SCHEDULED",
    "REASON_SCHEDULER_ERROR",
    "REASON_UNSCHEDULABLE",
    "StatusWriter",
    "event_name",
    "micro_time",
    "truncate_utf8",
]
