"""What users see of a scheduling decision: group conditions, pod conditions and Events.

The binder and the cycle driver call :class:`StatusWriter` after a decision is made; this
module only reports it. It writes three things, the way kube-scheduler does (reference
``k8s-workload-apis.md`` §3, §4, §8.6):

* ``PodGroupInitiallyScheduled`` / ``CompositePodGroupInitiallyScheduled`` on group status
  (terminal once True, no-op writes skipped);
* ``Scheduled`` (Normal) and ``FailedScheduling`` (Warning) ``events.k8s.io/v1`` Events on pods;
* ``PodScheduled=False`` on pods that could not be placed.

What it must not do: decide anything, or stop scheduling. Every API failure is logged as one
warning line and swallowed, because a lost status write is repaired by the next cycle while
a raised one would abort a bind that already happened. Repeated identical failures are
written at most once per ``event_interval_s`` so a stuck gang does not flood the API server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pydantic import ValidationError

from scheduler.live.kube import (
    COMPOSITES,
    EVENTS,
    JSON,
    PODGROUPS,
    PODS,
    STRATEGIC_PATCH,
    ApiError,
    Conflict,
    KubeClient,
    Resource,
)
from scheduler.model.base import Condition, ConditionFields
from scheduler.model.pod import Pod, PodCondition
from scheduler.model.scheduling import (
    COMPOSITE_INITIALLY_SCHEDULED,
    INITIALLY_SCHEDULED,
    CompositePodGroup,
    PodGroup,
)

logger = logging.getLogger(__name__)

# Condition reasons (k8s-workload-apis.md §1.2, §3, §4). ``Scheduled`` is the constant in
# kube-scheduler's PodGroup code; the failure reasons are the API doc's.
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_INVALID = "Invalid"

POD_SCHEDULED = "PodScheduled"

# Event reasons and actions, as kube-scheduler records them (pkg/scheduler/schedule_one.go, v1.37).
EVENT_SCHEDULED = "Scheduled"
EVENT_FAILED_SCHEDULING = "FailedScheduling"
ACTION_BINDING = "Binding"
ACTION_SCHEDULING = "Scheduling"

NOTE_MAX_BYTES = 1024
"""``events.k8s.io/v1`` Event ``note`` limit (apimachinery ``NoteLengthLimit``)."""

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


class StatusWriter:
    """Writes group conditions, pod conditions and pod Events; never raises on API errors.

    ``kube``: the API seam. ``scheduler_name``: our ``spec.schedulerName``, sent as the Events'
    ``reportingController`` (kube-scheduler reports its profile name the same way).
    ``instance``: this replica's identity (e.g. the pod name), the Events' ``reportingInstance``.
    ``event_interval_s``: the same failure (pod uid, reason, message) is written at most once per
    this many seconds of event-loop time. 60 s keeps a stuck gang retried every 1–10 s by
    backoff (§8.3) down to one Event per pod per minute, while a changed message shows at once.
    """

    def __init__(self, kube: KubeClient, scheduler_name: str, *, instance: str,
                 event_interval_s: float = 60.0) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.event_interval_s = event_interval_s
        self._recent: dict[tuple[str, str, str], float] = {}  # key -> loop time written; oldest first

    async def group_condition(self, group: PodGroup | CompositePodGroup, scheduled: bool, reason: str,
                              message: str) -> bool:
        """Set ``(Composite)PodGroupInitiallyScheduled`` on ``group``; True if a PATCH was accepted.

        ``scheduled``: True → status True (``reason`` should be ``Scheduled``); False → status False
        with ``reason`` ``Unschedulable`` | ``SchedulerError`` | ``Invalid``. ``message`` is cut to
        32768 bytes. ``group`` is the cached object: its conditions, ``generation`` and
        ``resourceVersion`` decide what is written.

        Rules (reference §3/§4; ``apimeta.SetStatusCondition``, which kube-scheduler uses):
        nothing is written when the condition is already True (terminal) or already has the same
        status, reason, message and observedGeneration; ``lastTransitionTime`` changes only with
        the status; ``observedGeneration`` is ``metadata.generation``.

        The write is a merge PATCH of ``status`` carrying the whole ``conditions`` list (a merge
        patch replaces lists) with ``metadata.resourceVersion`` as a precondition, so a stale cache
        can neither drop a condition another writer added nor overwrite a True. On 409 the object
        is read again and the rules re-applied once. Any other API error is logged, returns False.
        """
        res, ctype = (COMPOSITES, COMPOSITE_INITIALLY_SCHEDULED) if isinstance(group, CompositePodGroup) \
            else (PODGROUPS, INITIALLY_SCHEDULED)
        new = _Condition(ctype, "True" if scheduled else "False", reason,
                         truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        what = f"{res.kind} {group.metadata.namespace}/{group.metadata.name}"
        try:
            return await self._patch_group(res, group, new)
        except Conflict:
            pass  # our copy is stale: judge again against the server's
        except ApiError as exc:
            _warn(what, exc)
            return False
        try:
            fresh = await self.kube.get(res, group.metadata.namespace, group.metadata.name)
            return await self._patch_group(res, type(group).model_validate(fresh), new)
        except (ApiError, ValidationError) as exc:
            _warn(what, exc)
            return False

    async def _patch_group(self, res: Resource, group: PodGroup | CompositePodGroup, new: _Condition) -> bool:
        """PATCH ``new`` into ``group``'s status unless it changes nothing; True if written. Raises ApiError."""
        conditions = _with_condition(group.status.conditions, new, group.metadata.generation, terminal=True)
        if conditions is None:
            return False
        body: JSON = {"status": {"conditions": conditions}}
        if group.metadata.resource_version:
            body["metadata"] = {"resourceVersion": group.metadata.resource_version}
        await self.kube.patch(res, group.metadata.namespace, group.metadata.name, body, sub="status")
        return True

    async def pod_scheduled(self, pod: Pod, node: str) -> None:
        """Record a ``Scheduled`` Normal Event (action ``Binding``) on ``pod``, bound to ``node``.

        Note wording is kube-scheduler's: "Successfully assigned NS/NAME to NODE"
        (schedule_one.go ``finishBinding``). Call after the bind succeeded (design §6 step 3).
        API errors are logged and swallowed.
        """
        note = f"Successfully assigned {pod.key} to {node}"
        await self._event(pod, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note)

    async def pod_unschedulable(self, pod: Pod, reason: str, message: str) -> None:
        """Report a failed attempt on ``pod``: a ``FailedScheduling`` Warning Event and ``PodScheduled=False``.

        ``reason``: the condition reason, ``Unschedulable`` or ``SchedulerError`` (reference §1.2).
        ``message``: the aggregated failure text; the Event note is cut to 1024 bytes ending in "…",
        the condition message to 32768 bytes.

        Flood control: the same (pod uid, reason, message) is written at most once per
        ``event_interval_s`` of event-loop time; within it the call does nothing. Otherwise the
        Event is always created, and the condition is patched only when the pod's current
        ``PodScheduled`` differs in status, reason, message or observedGeneration (kube-scheduler's
        ``updatePod`` skips equal conditions). The condition patch is a strategic merge PATCH of
        ``pods/{name}/status`` with the pod's whole ``conditions`` list, ours replaced: the API
        server merges by ``type``, a list-replacing server gets the same result.
        API errors are logged and swallowed; a failed Event does not stop the condition patch.
        """
        uid = pod.metadata.uid or pod.key
        if not self._first_in_interval((uid, reason, message)):
            return
        new = _Condition(POD_SCHEDULED, "False", reason, truncate_utf8(message, CONDITION_MESSAGE_MAX_BYTES))
        conditions = _with_condition(pod.status.conditions, new, pod.metadata.generation, terminal=False)
        if conditions is not None:
            body: dict[str, Any] = {"status": {"conditions": conditions}}
            if pod.metadata.resource_version:  # the report is about this version: a pod bound since is left alone
                body["metadata"] = {"resourceVersion": pod.metadata.resource_version}
            try:
                await self.kube.patch(PODS, pod.metadata.namespace, pod.metadata.name, body, sub="status",
                                      content_type=STRATEGIC_PATCH)
            except Conflict:
                return  # the pod changed (bound, or a newer attempt): this report is stale; no event either
            except ApiError as exc:
                _warn(f"Pod {pod.key} condition {POD_SCHEDULED}", exc)
        note = truncate_utf8(message, NOTE_MAX_BYTES)
        await self._event(pod, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, note)

    def _first_in_interval(self, key: tuple[str, str, str]) -> bool:
        """True (and remember ``key`` as written now) unless ``key`` was written within the interval.

        The memory is a dict in write order: expired entries are dropped from its front on every
        call, and the oldest beyond :data:`MAX_REMEMBERED_FAILURES`.
        """
        now = asyncio.get_running_loop().time()
        recent = self._recent
        while recent:
            oldest, stamp = next(iter(recent.items()))
            if now - stamp < self.event_interval_s and len(recent) < MAX_REMEMBERED_FAILURES:
                break
            del recent[oldest]
        if key in recent:
            return False
        recent[key] = now
        return True

    async def _event(self, pod: Pod, type_: str, reason: str, action: str, note: str) -> None:
        """Create one ``events.k8s.io/v1`` Event regarding ``pod``; log and swallow API errors."""
        md = pod.metadata
        body: JSON = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": f"{md.name}.", "namespace": md.namespace},
            "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),  # MicroTime
            "reportingController": self.scheduler_name,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": md.namespace, "name": md.name,
                          "uid": md.uid},
        }
        try:
            await self.kube.create(EVENTS, md.namespace, body)
        except ApiError as exc:
            _warn(f"Pod {pod.key} event {reason}", exc)


def truncate_utf8(text: str, limit_bytes: int) -> str:
    """``text`` if its UTF-8 encoding fits ``limit_bytes``, else the longest prefix that fits with "…" appended.

    Never splits a character. API length limits on ``note`` and ``message`` are checked in bytes.
    """
    raw = text.encode()
    if len(raw) <= limit_bytes:
        return text
    keep = raw[:max(0, limit_bytes - len(_ELLIPSIS.encode()))]
    return keep.decode(errors="ignore") + _ELLIPSIS


def _now() -> str:
    """Wall-clock now as ``metav1.Time`` (RFC 3339, seconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dump(cond: ConditionFields) -> JSON:
    """A condition as API JSON, leaving out unset and empty fields."""
    return {k: v for k, v in cond.model_dump(by_alias=True, mode="json").items() if v not in (None, "")}


def _with_condition(conditions: Sequence[Condition | PodCondition], new: _Condition, generation: int | None, *,
                    terminal: bool) -> list[JSON] | None:
    """``conditions`` as API JSON with ``new`` in place of the same type, or None when nothing would change.

    Mirrors ``apimeta.SetStatusCondition`` (and the pod's ``UpdatePodCondition``): unchanged when
    status, reason, message and observedGeneration are equal; ``lastTransitionTime`` is kept
    unless the status changes. ``terminal``: an existing True is never replaced
    (``*InitiallyScheduled``, reference §3). ``observedGeneration`` is ``generation`` when known
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


def _warn(what: str, exc: Exception) -> None:
    """One warning line for a failed status write."""
    logger.warning("status write failed: %s: %s", what, exc)


__all__ = [
    "REASON_INVALID",
    "REASON_SCHEDULED",
    "REASON_SCHEDULER_ERROR",
    "REASON_UNSCHEDULABLE",
    "StatusWriter",
    "truncate_utf8",
]
