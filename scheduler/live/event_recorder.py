"""Events as kube-scheduler's recorder writes them: created once, repeats counted into a series.

:class:`EventRecorder` records ``events.k8s.io/v1`` Events regarding a pod, a group or any object we
hold a reference to (client-go ``tools/events``: ``event_recorder.go`` ``makeEvent``,
``event_broadcaster.go`` ``recordToSink`` / ``recordEvent``), because the API server validates
``events.k8s.io/v1`` strictly (``pkg/apis/core/validation/events.go`` ``ValidateEventCreate``: a
``generateName: "<pod>."`` name is refused with 422):

* the name is ``<object name>.<hex wall-clock nanoseconds>`` (:func:`event_name`), strictly increasing per
  recorder so two Events of one object never collide;
* ``eventTime`` (MicroTime), ``reportingController`` (our scheduler name), ``reportingInstance``,
  ``action``, ``reason``, ``type``, ``note`` and ``regarding`` (apiVersion, kind, namespace, name, uid) are
  always set; nothing deprecated is; an Event about a cluster-scoped object goes to ``default``;
* repeats are a *series*, not new Events: the first observation of (object, type, reason, action, note)
  creates the Event; later ones count into ``series: {count, lastObservedTime}``, written at most once per
  ``event_interval_s`` (one strategic merge PATCH of ``series``, client-go's first-repeat PATCH). A series
  ends ``max(SERIES_WINDOW_S, event_interval_s)`` after its last observation (client-go's 6-minute
  ``finishTime``); a later repeat creates a new Event. An Event the server no longer has (404) is created
  again with its series, as ``recordEvent`` does.

It decides nothing and never raises on API errors (each is logged as one warning line): an Event is a
report. What to report and how often is the caller's (:class:`~scheduler.live.status_writer.StatusWriter`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler.client.kube import EVENTS, JSON, STRATEGIC_PATCH, ApiError, KubeClient, Lane, NotFound, NotLeading
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, PodGroup

logger = logging.getLogger(__name__)

NAME_MAX = 253
"""``metadata.name`` limit of a DNS-subdomain name (apimachinery ``DNS1123SubdomainMaxLength``)."""

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""apimachinery ``dns1123SubdomainFmt``."""

SERIES_WINDOW_S = 360.0
"""A series ends this long after its last observation, seconds: client-go's ``finishTime`` (6 minutes,
tools/events/event_broadcaster.go), after which its recorder forgets the Event and a repeat is new."""

MAX_REMEMBERED_EVENTS = 65536
"""Cap on the series remembered: they expire after their window anyway; this bounds a burst of distinct
Events (about 10 MB of keys at worst)."""


@dataclass(slots=True)
class _Recorded:
    """An Event this recorder created and its series as counted here.

    ``body``: the Event as created (created again from it if the server lost it). ``count``: observations so
    far, ≥ 1. ``last_observed``: MicroTime of the latest. ``observed_at`` / ``written_at``: event-loop time of
    the latest observation / of the latest write (create or series PATCH), seconds.
    """

    body: JSON
    count: int
    last_observed: str
    observed_at: float
    written_at: float


Regarding = Pod | PodGroup | CompositePodGroup
"""What an Event of ours is about: a pod, or a group (a preemptor's ``Preempting`` Event)."""


@dataclass(frozen=True, slots=True)
class ReferenceMeta:
    """The metadata of an :class:`ObjectReference`: namespace ('' when cluster-scoped), name, uid."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """An object an Event is about that we hold no model of (one the cache refused): ``api_version`` as
    ``group/version`` (``v1`` for the core group), ``kind`` the API's kind."""

    api_version: str
    kind: str
    metadata: ReferenceMeta


Subject = Regarding | ObjectReference
"""Anything an Event can be about."""

EVENTS_NAMESPACE_OF_CLUSTER_OBJECTS = "default"
"""Where an Event about a cluster-scoped object (a Node) is created, as the kubelet and kubectl do."""

EventKey = tuple[str, str, str, str, str]
"""What makes two Events the same one: (pod uid, type, reason, action, note)."""

class EventRecorder:
    """Records Events (see the module docstring). ``kube``: the API seam; ``scheduler_name``: the Events'
    ``reportingController``; ``instance``: their ``reportingInstance`` (at most 128 characters);
    ``event_interval_s``: a series is written at most once per this many seconds of event-loop time."""

    def __init__(self, kube: KubeClient, scheduler_name: str, instance: str, event_interval_s: float) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.event_interval_s = event_interval_s
        self._events: dict[EventKey, _Recorded] = {}  # least recently observed first
        self._last_ns = 0

    async def record(self, pod: Subject, type_: str, reason: str, action: str, note: str,
                     related: Regarding | None = None) -> None:
        """Record one observation of an Event regarding ``pod`` (or a group): create it, or count it into its series.

        The first observation of (pod uid, ``type_``, ``reason``, ``action``, ``note``), or the first after its
        series ended, creates an ``events.k8s.io/v1`` Event (:meth:`_new_event`). A repeat is counted and, when
        ``event_interval_s`` has passed since the Event was last written, its series is written
        (:meth:`_write_series`). API errors are logged and swallowed; a failed create is forgotten, so the next
        observation tries again. ``related``: the Event's secondary object (a preemptor, for a victim).
        """
        now = asyncio.get_running_loop().time()
        key: EventKey = (pod.metadata.uid or _key(pod), type_, reason, action, note)
        rec = self.count(key, now)
        if rec is None:
            stamp, unix_ns = self.wall_clock()
            body = self._new_event(pod, type_, reason, action, note, stamp, unix_ns, related)
            rec = _Recorded(body, count=1, last_observed=stamp, observed_at=now, written_at=now)
            self._events[key] = rec  # before the await: a concurrent repeat counts into it instead of creating a twin
            try:
                await self.kube.create(EVENTS, body["metadata"]["namespace"], body, lane=Lane.REPORT, reply=False)
            except ApiError as exc:
                if self._events.get(key) is rec:
                    del self._events[key]
                warn(f"{pod.kind} {_key(pod)} event {reason}", exc)
        elif now - rec.written_at >= self.event_interval_s:
            await self._write_series(pod, rec, now)

    def count(self, key: EventKey, now: float) -> _Recorded | None:
        """Count an observation of ``key`` into its live series and return it; None if there is none.

        Series whose last observation is ``max(SERIES_WINDOW_S, event_interval_s)`` old are dropped first
        (from the front of the dict, which is in observation order), and the oldest beyond
        :data:`MAX_REMEMBERED_EVENTS`.
        """
        window = max(SERIES_WINDOW_S, self.event_interval_s)
        events = self._events
        while events:
            oldest, first = next(iter(events.items()))
            if now - first.observed_at < window and len(events) < MAX_REMEMBERED_EVENTS:
                break
            del events[oldest]
        rec = events.pop(key, None)
        if rec is None:
            return None
        rec.count += 1
        rec.last_observed = self.wall_clock()[0]
        rec.observed_at = now
        events[key] = rec  # now the most recently observed
        return rec

    async def _write_series(self, pod: Subject, rec: _Recorded, now: float) -> None:
        """Write ``rec``'s series: a strategic merge PATCH of ``{series: {count, lastObservedTime}}``.

        This is the patch client-go's ``createPatchBytesForSeries`` computes (only ``series`` differs). On 404
        the Event is created again with the same name and its series (``recordEvent`` does the same when the
        Event "may have been removed"). Other API errors are logged; the next write comes an interval later.
        """
        rec.written_at = now  # before the await: concurrent repeats do not patch twice
        series: JSON = {"count": rec.count, "lastObservedTime": rec.last_observed}
        md = rec.body["metadata"]
        try:
            try:
                await self.kube.patch(EVENTS, md["namespace"], md["name"], {"series": series},
                                      content_type=STRATEGIC_PATCH, lane=Lane.REPORT, reply=False)
            except NotFound:
                await self.kube.create(EVENTS, md["namespace"], {**rec.body, "series": series}, lane=Lane.REPORT,
                                       reply=False)
        except ApiError as exc:
            warn(f"{pod.kind} {_key(pod)} event {rec.body['reason']} series", exc)

    def _new_event(self, pod: Subject, type_: str, reason: str, action: str, note: str, stamp: str,
                   unix_ns: int, related: Regarding | None = None) -> JSON:
        """An ``events.k8s.io/v1`` Event regarding ``pod`` (or a group), as client-go's ``makeEvent`` builds it.

        ``stamp``: ``eventTime`` (MicroTime); ``unix_ns``: the same instant, naming the Event (:func:`event_name`).
        ``regarding`` carries no ``resourceVersion`` (client-go's ``GetReference`` copies it): the field is
        optional, and our own PodScheduled patch changes it, so a repeat would not look like the same Event.
        ``related``: an optional second object reference, built the same way.
        """
        md = pod.metadata
        body: JSON = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": event_name(md.name, unix_ns),
                         "namespace": md.namespace or EVENTS_NAMESPACE_OF_CLUSTER_OBJECTS},
            "eventTime": stamp,
            "reportingController": self.scheduler_name,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": _reference(pod),
        }
        if related is not None:
            body["related"] = _reference(related)
        return body

    def wall_clock(self) -> tuple[str, int]:
        """Wall-clock now as (MicroTime, Unix nanoseconds); the nanoseconds strictly increase per writer."""
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return micro_time(self._last_ns), self._last_ns


def _reference(obj: Subject) -> JSON:
    """An ``ObjectReference`` to ``obj``: apiVersion, kind, namespace, name, uid."""
    md = obj.metadata
    return {"apiVersion": obj.api_version, "kind": obj.kind, "namespace": md.namespace, "name": md.name,
            "uid": md.uid}


def _key(obj: Subject) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


def event_name(regarding: str, unix_ns: int) -> str:
    """The ``metadata.name`` of an Event about the object named ``regarding``, recorded at ``unix_ns``.

    ``<regarding>.<unix_ns in hex>``, as client-go names Events (``GenerateEventName``,
    tools/record/util/util.go): a valid DNS subdomain for every valid object name. Only when the
    17-character suffix pushes a long name over 253 characters (a pod name may be 253 itself) is it
    invalid; then, as client-go does (issues.k8s.io/127594), a random UUID (36 characters, lowercase
    hex and '-') names the Event instead. Nothing finds Events by name: ``kubectl describe`` selects
    them by the regarding object.
    """
    name = f"{regarding}.{unix_ns:x}"
    if len(name) <= NAME_MAX and _DNS_SUBDOMAIN.fullmatch(name):
        return name
    return str(uuid.uuid4())


def micro_time(unix_ns: int) -> str:
    """``metav1.MicroTime`` JSON for ``unix_ns`` (UTC, six fractional digits: ``2026-11-29T10:00:00.123456Z``)."""
    seconds, rest = divmod(unix_ns, 1_000_000_000)
    return f"{_second_text(seconds)}.{rest // 1000:06d}Z"


@functools.lru_cache(maxsize=4)
def _second_text(seconds: int) -> str:
    """A whole second as ``2026-11-29T10:00:00`` (UTC), formatted once while Events of that second are written."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def warn(what: str, exc: Exception) -> None:
    """One warning line for a failed status or Event write; a debug line for one not sent because this replica no
    longer leads (a failover: the next leader writes what still stands)."""
    if isinstance(exc, NotLeading):
        logger.debug("status write not sent: %s: %s", what, exc)
        return
    logger.warning("status write failed: %s: %s", what, exc)
