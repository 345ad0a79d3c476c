"""Prometheus metrics: every name, its meaning and unit, and the registry they live in.

Design §8: the live scheduler serves these on ``/metrics`` (``GET``, same address as
``/healthz``). Names follow kube-scheduler's where the meaning is the same, so dashboards and
alerts written for it keep working (``pkg/scheduler/metrics/metrics.go``, v1.37 — the PodGroup
metrics are the ``GenericWorkload`` ones); the rest carry the ``gang_scheduler_`` prefix.

Kube-scheduler compatible (``profile`` is the scheduler name, ``--scheduler-name``):

- ``scheduler_schedule_attempts_total{result, profile}`` counter (pods);
- ``scheduler_scheduling_attempt_duration_seconds{result, profile}`` histogram;
- ``scheduler_scheduling_algorithm_duration_seconds`` histogram (lone pods);
- ``scheduler_podgroup_schedule_attempts_total{result, profile}`` counter;
- ``scheduler_podgroup_scheduling_attempt_duration_seconds{result, profile}`` histogram;
- ``scheduler_podgroup_scheduling_algorithm_duration_seconds`` histogram;
- ``scheduler_pending_pods{queue}`` gauge;
- ``scheduler_queued_entities{queue, type}`` gauge.

Preemption (named after KEP-5710; kube-scheduler's code calls its own
``scheduler_workload_preemption_attempts_total{result}``, ``scheduler_workload_preemption_victims``,
``scheduler_preemption_evaluation_duration_seconds{preemptor,result}`` and has no reprieve counter):

- ``scheduler_podgroup_preemption_attempts_total{result}`` counter (one per PostFilter call);
- ``scheduler_podgroup_preemption_attempt_duration_seconds{result}`` histogram (victim selection);
- ``scheduler_podgroup_preemption_victims`` histogram (victim pods per preemption);
- ``scheduler_podgroup_preemption_reprieved_total`` counter (candidate units the reprieve kept).

Our own: ``gang_scheduler_gangs_below_min`` (partial roots now), ``gang_scheduler_gang_repairs_total{result}``
``gang_scheduler_preemption_evictions_total{result}``, ``gang_scheduler_reservations_active``,
``gang_scheduler_reservations_total{event}``, ``gang_scheduler_podgroup_creation_to_bound_seconds``,
``gang_scheduler_gang_size_pods``, ``gang_scheduler_objects_refused_total{kind, reason}``,
``gang_scheduler_status_queue_depth{queue}``, ``gang_scheduler_status_queue_oldest_age_seconds{queue}``,
``gang_scheduler_bind_failures_total{reason}``, ``gang_scheduler_solver_attempts{result}``,
``gang_scheduler_informer_synced{group, resource}``, ``gang_scheduler_informer_relists_total{group, resource}``,
``gang_scheduler_is_leader``; plus the client library's ``process_*`` and ``python_*`` series.

**Label values are closed sets** (:data:`RESULTS`, :data:`QUEUES`, :data:`ENTITY_TYPES`,
:data:`BIND_FAILURE_REASONS`; ``group`` and ``resource`` name one of the APIs watched — the API group, ``""``
for the core group, and the plural, as kube-apiserver's own metrics label a resource — and ``profile`` the one
scheduler name), so cardinality is bounded: no pod, group, node or namespace name is
ever a label. Every combination is created at zero up front, so ``rate()`` and absence alerts
work from the first scrape.

**What counts as an attempt** (upstream semantics, ``schedule_one.go``): pods count as
``scheduled`` when their bind succeeded, ``unschedulable`` when the solver could not place them
(the pending members of a root that did not fit, and members a plan left pending), ``error``
when their plan's binding failed (the member that failed and every member not bound with it).
A root's attempt (``scheduler_podgroup_*``) ends when the solver rejects it, or when its plan's
binds have all finished: ``scheduled`` if every bind succeeded, else ``error``. Lone pods of ours
(no PodGroup) count in the pod metrics only, as in kube-scheduler.

Each instance has its own :class:`~prometheus_client.CollectorRegistry` (never the global
default), so two schedulers in one process — and tests — do not share series. Counters and histograms
export no ``*_created`` series (prometheus-client's ``disable_created_metrics``, process-wide): Prometheus'
text format has no use for them, kube-scheduler exports none, and they would double the series. The caller
records; the solver stays pure (style guide §5). This module does no scheduling and no I/O
beyond serving the registry.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

from aiohttp.typedefs import Handler
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.aiohttp import make_aiohttp_handler
from prometheus_client.core import CounterMetricFamily, Metric

from scheduler.cache.cluster import KINDS, REFUSAL_REASONS, RefusalReason
from scheduler.framework.plan import Plan, Preemption, Unschedulable
from scheduler.groups.tree import GroupTree, Leaf, TreeState
from scheduler.live.binder import BindOutcome
from scheduler.model.base import true_condition
from scheduler.model.kinds import POD
from scheduler.model.scheduling import (
    COMPOSITE_INITIALLY_SCHEDULED,
    INITIALLY_SCHEDULED,
    CompositePodGroup,
    PodGroup,
)

Result = Literal["scheduled", "unschedulable", "error"]
RESULTS: tuple[Result, ...] = ("scheduled", "unschedulable", "error")
"""``result`` of an attempt, as kube-scheduler's ``profile_metrics.go``."""

Queue = Literal["active", "backoff", "unschedulable", "gated", "incomplete"]
QUEUES: tuple[Queue, ...] = ("active", "backoff", "unschedulable", "gated", "incomplete")
"""``queue`` of a pending pod (kube-scheduler's names; ours has no ``pending`` sub-queue):

- ``active``: its root is ready to be tried;
- ``backoff``: its root failed an attempt and waits for its backoff to end or for an event that
  can help (our queue has no separate event-only wait: a backoff always ends, by default within
  60 s);
- ``unschedulable``: its tree is Invalid (cycle, malformed policy, mixed schedulerNames…) and is
  not tried until one of its objects changes;
- ``gated``: never tried because the pod has ``schedulingGates``, or because its tree is
  Waiting (a gang with fewer members than ``minCount``: kube-scheduler's GangScheduling
  PreEnqueue gates those too; or a parent CompositePodGroup that does not exist yet). Gated lone pods and gated
  pods whose PodGroup is missing are not in any tree and not counted;
- ``incomplete``: the pod names a PodGroup that does not exist (yet).
"""

SolveResult = Literal["scheduled", "unschedulable"]
SOLVE_RESULTS: tuple[SolveResult, ...] = ("scheduled", "unschedulable")
"""``result`` of one solve (``gang_scheduler_solver_attempts``): a Plan or Unschedulable."""

EntityQueue = Literal["active", "backoff", "unschedulable", "gated"]
ENTITY_QUEUES: tuple[EntityQueue, ...] = ("active", "backoff", "unschedulable", "gated")
"""``queue`` of a queued entity: :data:`QUEUES` without ``incomplete`` (pods, not entities)."""

EntityType = Literal["pod", "podgroup"]
ENTITY_TYPES: tuple[EntityType, ...] = ("pod", "podgroup")
"""``type`` of a queued entity: ``podgroup`` for a root PodGroup or CompositePodGroup (one
entity per tree, as the queue holds roots), ``pod`` for a lone pod of ours with no group."""

BindFailureReason = Literal["conflict", "not_found", "server_error", "other"]
BIND_FAILURE_REASONS: tuple[BindFailureReason, ...] = ("conflict", "not_found", "server_error", "other")
"""``reason`` of a failed plan bind, from the HTTP status of the member that failed: 409
``conflict`` (bound elsewhere, gated, being deleted), 404 ``not_found`` (pod deleted), 5xx
``server_error`` (after the binder's retries), anything else ``other`` (429 after retries,
transport failures, other 4xx)."""

PreemptionResult = Literal["preempting", "waiting", "not_helpful", "no_victims", "not_eligible", "fits"]
PREEMPTION_RESULTS: tuple[PreemptionResult, ...] = ("preempting", "waiting", "not_helpful", "no_victims",
                                                    "not_eligible", "fits")
"""``result`` of one preemption attempt (``scheduler.preemption.Outcome``): victims chosen; waiting for the
victims of an earlier one; not helpful (no fit even with every lower-priority pod gone); no lower-priority
pod to evict; not eligible (``preemptionPolicy: Never``); fits (a plan needing no victim, bound as is). Upstream
labels the status code instead."""

EvictionResult = Literal["deleted", "gone", "replaced", "error"]
EVICTION_RESULTS: tuple[EvictionResult, ...] = ("deleted", "gone", "replaced", "error")
"""``result`` of one victim's eviction: the DELETE was accepted (its grace period runs); the pod was already
gone (404) or already terminating; a pod of the same name but another uid is there (409 on the uid
precondition: not deleted); any other API error."""

RepairResult = Literal["completed", "torn_down", "reported"]
REPAIR_RESULTS: tuple[RepairResult, ...] = ("completed", "torn_down", "reported")
"""How a partial gang ended (gang repair): satisfied again; torn down after the repair timeout
(``disruptionMode: all``: its bound members evicted); reported after the timeout (``single``)."""

ReservationEvent = Literal["granted", "fitted", "expired", "dropped"]
RESERVATION_EVENTS: tuple[ReservationEvent, ...] = ("granted", "fitted", "expired", "dropped")
"""What happened to a starvation reservation: made; ended because the root fitted; timed out; the root is
gone."""

# -- buckets -------------------------------------------------------------------------------
ATTEMPT_BUCKETS_S = tuple(0.001 * 2**i for i in range(15))
"""1 ms … 16.4 s, doubling: kube-scheduler's ``ExponentialBuckets(0.001, 2, 15)`` for attempt and
algorithm latencies, kept so upstream dashboards' quantiles compare like with like."""
CREATION_TO_BOUND_BUCKETS_S = tuple(0.1 * 2**i for i in range(20))
"""0.1 s … 14.6 h, doubling: a gang that fits binds in well under a second, one waiting for
capacity can wait hours; 20 buckets cover both ends (upstream's pod SLI histogram uses 20
doubling buckets from 10 ms, which tops out at 1.5 h — too short for gangs)."""
GANG_SIZE_BUCKETS = tuple(float(2**i) for i in range(12))
"""1 … 2048 pods, doubling: from a lone-member gang to the largest training jobs."""
SOLVER_ATTEMPT_BUCKETS = tuple(float(2**i) for i in range(12))
"""1 … 2048 subtree placements, doubling: one attempt is the common case; the default
``--search-budget`` (256) lands in its own bucket, so budget exhaustion is visible."""

PREEMPTION_BUCKETS_S = tuple(0.001 * 2**i for i in range(16))
"""1 ms … 32.8 s, doubling: kube-scheduler's ``ExponentialBuckets(0.001, 2, 16)`` for preemption evaluation."""
VICTIM_BUCKETS = tuple(float(2**i) for i in range(11))
"""1 … 1024 pods, doubling: kube-scheduler's ``ExponentialBuckets(1, 2, 11)`` for workload preemption victims."""

GROUP_KINDS = frozenset({"PodGroup", "CompositePodGroup"})


StatusQueueName = Literal["pods", "groups"]
STATUS_QUEUES: tuple[StatusQueueName, ...] = ("pods", "groups")
"""``queue`` of the status queue metrics."""


def _oldest_age(state: StatusQueueState) -> Callable[[], float]:
    """``state.oldest_age_s`` for a scrape, which may run outside the event loop (then: 0)."""
    def read() -> float:
        try:
            return state.oldest_age_s()
        except RuntimeError:  # no running loop
            return 0.0
    return read


class StatusQueueState(Protocol):
    """What the status queue metrics read of a queue of status writes (at scrape time)."""

    @property
    def depth(self) -> int: ...

    def oldest_age_s(self, now: float | None = None) -> float: ...


class InformerState(Protocol):
    """What the metrics read from an informer (``scheduler.live.informers.Informer``) at scrape time."""

    synced: asyncio.Event
    relists: int
    """Successful lists so far, the initial one included."""


@dataclass(slots=True)
class QueueCounts:
    """Pending pods per queue and queued entities per (queue, type); see :data:`QUEUES`."""

    pods: dict[Queue, int] = field(default_factory=lambda: dict.fromkeys(QUEUES, 0))
    entities: dict[tuple[EntityQueue, EntityType], int] = field(
        default_factory=lambda: {(q, t): 0 for q in ENTITY_QUEUES for t in ENTITY_TYPES})

    def add_tree(self, tree: GroupTree, queue: EntityQueue) -> None:
        """Count ``tree`` as one entity in ``queue``: its ungated pending pods go to ``queue``,
        its scheduling-gated members to ``gated``."""
        self.entities[(queue, entity_type(tree))] += 1
        for leaf in _leaves(tree):
            self.pods[queue] += len(leaf.pending)
            self.pods["gated"] += leaf.gated


def entity_type(tree: GroupTree) -> EntityType:
    """``podgroup`` for a PodGroup/CompositePodGroup root, ``pod`` for a lone pod."""
    return "podgroup" if tree.key.kind in GROUP_KINDS else "pod"


def queue_counts(active: Iterable[GroupTree], backoff: Iterable[GroupTree], blocked: Iterable[GroupTree],
                 incomplete_pods: int, parked: Iterable[GroupTree] = ()) -> QueueCounts:
    """Tally the queues: ``active``/``backoff``/``parked`` roots from the scheduling queue (parked: waiting for an
    event that may help, ``unschedulable`` as kube-scheduler's ``unschedulablePods``), ``blocked`` trees (Waiting,
    and roots whose pods are not ready for scheduling → ``gated``, Invalid → ``unschedulable``), and pods waiting for
    their PodGroup."""
    counts = QueueCounts()
    for tree in active:
        counts.add_tree(tree, "active")
    for tree in backoff:
        counts.add_tree(tree, "backoff")
    for tree in parked:
        counts.add_tree(tree, "unschedulable")
    for tree in blocked:
        counts.add_tree(tree, "unschedulable" if tree.state is TreeState.INVALID else "gated")
    counts.pods["incomplete"] += incomplete_pods
    return counts


def bind_failure_reason(status: int) -> BindFailureReason:
    """The ``reason`` label for a bind that failed with HTTP ``status`` (0: transport failure)."""
    if status == 409:
        return "conflict"
    if status == 404:
        return "not_found"
    if status >= 500:
        return "server_error"
    return "other"


def initially_scheduled(group: PodGroup | CompositePodGroup) -> bool:
    """Whether ``group`` already has ``(Composite)PodGroupInitiallyScheduled=True`` (terminal)."""
    ctype = COMPOSITE_INITIALLY_SCHEDULED if isinstance(group, CompositePodGroup) else INITIALLY_SCHEDULED
    return true_condition(group.status.conditions, ctype) is not None


def _leaves(tree: GroupTree) -> Iterator[Leaf]:
    yield from tree.root.leaves()


class _Relists:
    """``gang_scheduler_informer_relists_total{group, resource}``, read from the informers at scrape time.

    The informer already counts its lists; reading them here keeps ``informers.py`` free of
    metrics. A counter: the count never goes down for the life of the informer.
    """

    NAME = "gang_scheduler_informer_relists"
    HELP = ("Re-lists per watched resource after the initial list (a watch that failed or whose "
            "resourceVersion expired with 410 Gone); each re-list replaces that kind in the cache.")

    def __init__(self) -> None:
        self.informers: dict[tuple[str, str], InformerState] = {}
        """The informers reported, by (API group, plural)."""

    def describe(self) -> Iterable[Metric]:
        return [CounterMetricFamily(self.NAME, self.HELP, labels=["group", "resource"])]

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self.NAME, self.HELP, labels=["group", "resource"])
        for (group, resource), informer in sorted(self.informers.items()):
            family.add_metric([group, resource], float(max(0, informer.relists - 1)))
        return [family]


class Metrics:
    """One scheduler's metrics in its own registry; ``profile`` is the scheduler name.

    Record with the domain methods (:meth:`solved`, :meth:`bound`, :meth:`set_queues`) or the
    primitive ones they use; serve with :meth:`handler`. Not thread-safe beyond what
    prometheus-client guarantees; used from the event loop.
    """

    def __init__(self, profile: str, *, process_metrics: bool = True) -> None:
        self.profile = profile
        disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated in prometheus-client
        self.registry = CollectorRegistry()
        r = self.registry

        # -- kube-scheduler's names ---------------------------------------------------------
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts", "Number of attempts to schedule pods, by the result. 'unschedulable' "
            "means a pod could not be scheduled, while 'error' means an internal scheduler problem (here: its "
            "plan's binding failed). Counts pods; 'scheduled' when the pod's bind succeeded.",
            ["result", "profile"], registry=r)
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds", "Scheduling attempt latency in seconds (scheduling "
            "algorithm + binding), one observation per pod attempt: from the start of its root's solve to the "
            "end of the plan's binds (scheduled, error) or of the solve (unschedulable).",
            ["result", "profile"], buckets=ATTEMPT_BUCKETS_S, registry=r)
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds", "Scheduling algorithm latency in seconds, for "
            "lone pods (no PodGroup): the solve only.", buckets=ATTEMPT_BUCKETS_S, registry=r)
        self.podgroup_attempts = Counter(
            "scheduler_podgroup_schedule_attempts", "Number of attempts to schedule pod group, by the result. "
            "'unschedulable' means a pod group could not be scheduled, while 'error' means an internal scheduler "
            "problem (here: its plan's binding failed). One per root PodGroup or CompositePodGroup attempt.",
            ["result", "profile"], registry=r)
        self.podgroup_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds", "Pod group scheduling attempt latency in "
            "seconds: from the start of the root's solve to the end of its plan's binds (scheduled, error) or "
            "of the solve (unschedulable).", ["result", "profile"], buckets=ATTEMPT_BUCKETS_S, registry=r)
        self.podgroup_algorithm_duration = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds", "Pod group scheduling algorithm latency "
            "in seconds: one solve of a whole tree, no I/O.", buckets=ATTEMPT_BUCKETS_S, registry=r)
        self.pending_pods = Gauge(
            "scheduler_pending_pods", "Number of pending pods of ours, by the queue type. 'active': its root is "
            "ready to be tried; 'backoff': its root failed and waits out its backoff; 'unschedulable': its root "
            "found no placement and waits for a cluster event that may help, or its tree is invalid and waits for "
            "a change; 'gated': never tried because of schedulingGates or because its "
            "gang has fewer members than minCount; 'incomplete': its PodGroup does not exist yet. As of the "
            "leader's last scheduling cycle.", ["queue"], registry=r)
        self.queued_entities = Gauge(
            "scheduler_queued_entities", "Number of queued scheduling entities ('podgroup': a root PodGroup or "
            "CompositePodGroup; 'pod': a lone pod of ours with no group) by the queue type, as "
            "scheduler_pending_pods. As of the leader's last scheduling cycle.",
            ["queue", "type"], registry=r)

        # -- ours -----------------------------------------------------------------------------
        self.creation_to_bound = Histogram(
            "gang_scheduler_podgroup_creation_to_bound_seconds", "Seconds from a root group's "
            "metadata.creationTimestamp to the moment every member of its plan is bound, observed once per "
            "root: when it first becomes (Composite)PodGroupInitiallyScheduled=True.",
            buckets=CREATION_TO_BOUND_BUCKETS_S, registry=r)
        self.gang_size = Histogram(
            "gang_scheduler_gang_size_pods", "Pods placed by one plan of a root PodGroup or CompositePodGroup "
            "(members newly placed; members already bound are not counted).",
            buckets=GANG_SIZE_BUCKETS, registry=r)
        self.bind_failures = Counter(
            "gang_scheduler_bind_failures", "Plans whose binding failed, by the HTTP outcome of the member that "
            "failed: 'conflict' (409), 'not_found' (404), 'server_error' (5xx after retries), 'other'. The rest "
            "of such a plan is forgotten and its root requeued.", ["reason"], registry=r)
        self.solver_attempts = Histogram(
            "gang_scheduler_solver_attempts", "Solver search effort per solve: subtree placements tried "
            "(bounded by --search-budget per pass; a failed search "
            "that skipped whole topology domains has a second pass for its reasons), by the solve's result "
            "('scheduled' = a plan was found).", ["result"], buckets=SOLVER_ATTEMPT_BUCKETS, registry=r)
        self.informer_synced = Gauge(
            "gang_scheduler_informer_synced", "1 once the watched resource's first list is in the cache, else 0 "
            "(re-lists replace the kind at once, so it stays 1).", ["group", "resource"], registry=r)
        self.is_leader = Gauge(
            "gang_scheduler_is_leader", "1 while this replica schedules: it holds the leader Lease, or leader "
            "election is off; else 0.", registry=r)
        # -- preemption (KEP-5710's names; see the module docstring for upstream's) ----------------
        self.preemption_attempts = Counter(
            "scheduler_podgroup_preemption_attempts", "Preemption attempts for roots that did not fit, by the "
            "result: 'preempting' (victims chosen), 'waiting' (an earlier preemption's victims still terminate), "
            "'not_helpful' (no fit even with every lower-priority pod gone), 'no_victims', 'not_eligible' "
            "(preemptionPolicy Never), 'fits' (a plan needing no victim was found and bound).", ["result"],
            registry=r)
        self.preemption_duration = Histogram(
            "scheduler_podgroup_preemption_attempt_duration_seconds", "Seconds one preemption attempt took to "
            "choose victims (the PostFilter call: candidate units, the what-if solves, the reprieve), by result.",
            ["result"], buckets=PREEMPTION_BUCKETS_S, registry=r)
        self.preemption_victims = Histogram(
            "scheduler_podgroup_preemption_victims", "Victim pods chosen by one preemption.",
            buckets=VICTIM_BUCKETS, registry=r)
        self.preemption_reprieved = Counter(
            "scheduler_podgroup_preemption_reprieved", "Candidate victim units the reprieve pass put back "
            "(not evicted) because the root fitted without evicting them.", registry=r)
        self.evictions = Counter(
            "gang_scheduler_preemption_evictions", "Victim pods acted on, by the outcome of the DELETE: 'deleted' "
            "(accepted; the pod's grace period runs), 'gone' (already gone or terminating), 'replaced' (another "
            "pod of that name now: not deleted), 'error'.", ["result"], registry=r)
        self.reservations = Gauge(
            "gang_scheduler_reservations_active", "Starving roots whose best plan's nodes are held for them now "
            "(PodGroup condition NodesReserved=True).", registry=r)
        self.reservation_events = Counter(
            "gang_scheduler_reservations", "Starvation reservations by what happened: 'granted', 'fitted' (the "
            "root was placed), 'expired', 'dropped' (the root is gone).", ["event"], registry=r)
        self.gangs_below_min = Gauge(
            "gang_scheduler_gangs_below_min", "Roots with members bound but not satisfied (partial: a bind failed, "
            "the scheduler stopped mid-plan, or members or their node went away); PodGroup condition "
            "GangBelowMin=True.", registry=r)
        self.gang_repairs = Counter(
            "gang_scheduler_gang_repairs", "Partial gangs by how they ended: 'completed' (satisfied again), "
            "'torn_down' (disruptionMode all: bound members evicted after --gang-repair-timeout-s), 'reported' "
            "(disruptionMode single: left as it is after the timeout, a Warning Event written).", ["result"],
            registry=r)
        for repair in REPAIR_RESULTS:
            self.gang_repairs.labels(repair)
        self.objects_refused = Counter(
            "gang_scheduler_objects_refused", "Objects received from the API server that the cache could not take "
            "as they are, by kind and reason: 'invalid' (fails its kind's validation), 'too_deep' (nested too "
            "deeply to decode), 'undecodable' (its decoding failed otherwise) — each left out of the cache; "
            "'invalid_intent' (a pod whose gang-scheduler.io/intent annotation is invalid: kept, read as "
            "having no intent). Counts object versions received: a list and each watch event count again.",
            ["kind", "reason"], registry=r)
        for kind in sorted(KINDS):
            for refusal_reason in REFUSAL_REASONS:
                if refusal_reason != "invalid_intent" or kind == POD.name:  # only a pod carries an intent
                    self.objects_refused.labels(kind, refusal_reason)
        self.status_queue_depth = Gauge(
            "gang_scheduler_status_queue_depth", "Status writes waiting (or being written), by queue: 'pods' "
            "(PodScheduled=False and FailedScheduling reports, one per pod: the latest wins), 'groups' (PodGroup "
            "and CompositePodGroup conditions, one per group).", ["queue"], registry=r)
        self.status_queue_oldest = Gauge(
            "gang_scheduler_status_queue_oldest_age_seconds", "Seconds the oldest waiting status write of the queue "
            "has waited (0 when none waits); a steadily growing value means the API server does not keep up.",
            ["queue"], registry=r)
        self._relists = _Relists()
        r.register(self._relists)
        if process_metrics:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)

        for result in RESULTS:
            self.schedule_attempts.labels(result, profile)
            self.attempt_duration.labels(result, profile)
            self.podgroup_attempts.labels(result, profile)
            self.podgroup_attempt_duration.labels(result, profile)
        for solve_result in SOLVE_RESULTS:
            self.solver_attempts.labels(solve_result)
        for reason in BIND_FAILURE_REASONS:
            self.bind_failures.labels(reason)
        for preemption_result in PREEMPTION_RESULTS:
            self.preemption_attempts.labels(preemption_result)
            self.preemption_duration.labels(preemption_result)
        for eviction in EVICTION_RESULTS:
            self.evictions.labels(eviction)
        for event in RESERVATION_EVENTS:
            self.reservation_events.labels(event)
        self.set_queue_counts(QueueCounts())

    # -- primitives --------------------------------------------------------------------------
    def pod_attempts(self, result: Result, pods: int, duration_s: float) -> None:
        """``pods`` pod attempts ended with ``result`` after ``duration_s`` seconds each."""
        if pods <= 0:
            return
        self.schedule_attempts.labels(result, self.profile).inc(pods)
        child = self.attempt_duration.labels(result, self.profile)
        for _ in range(pods):
            child.observe(duration_s)

    def podgroup_attempt(self, result: Result, duration_s: float) -> None:
        """One root group attempt ended with ``result`` after ``duration_s`` seconds."""
        self.podgroup_attempts.labels(result, self.profile).inc()
        self.podgroup_attempt_duration.labels(result, self.profile).observe(duration_s)

    def bind_failed(self, status: int) -> None:
        """A plan's binding failed; ``status`` is the failing member's HTTP status (0: transport)."""
        self.bind_failures.labels(bind_failure_reason(status)).inc()

    def preemption_attempt(self, result: PreemptionResult, duration_s: float,
                           decision: Preemption | None = None) -> None:
        """One PostFilter call ended with ``result`` after ``duration_s``; ``decision``: its Preemption, whose
        victims and reprieved units are recorded when it chose victims."""
        self.preemption_attempts.labels(result).inc()
        self.preemption_duration.labels(result).observe(duration_s)
        if decision is not None and decision.victims:
            self.preemption_victims.observe(len(decision.victims))
            self.preemption_reprieved.inc(decision.reprieved)

    def evicted(self, result: EvictionResult) -> None:
        """One victim pod acted on."""
        self.evictions.labels(result).inc()

    def refused(self, kind: str, reason: RefusalReason) -> None:
        """One object of ``kind`` (the cache's name for it) refused, or taken with a part ignored, for ``reason``."""
        self.objects_refused.labels(kind, reason).inc()

    def gang_repair(self, result: RepairResult) -> None:
        """A partial gang was completed, torn down or reported."""
        self.gang_repairs.labels(result).inc()

    def reservation(self, event: ReservationEvent, active: int) -> None:
        """A starvation reservation was granted or ended; ``active``: how many hold now."""
        self.reservation_events.labels(event).inc()
        self.reservations.set(active)

    def set_queue_counts(self, counts: QueueCounts) -> None:
        """Set both queue gauges to ``counts`` (every label combination, zeros included)."""
        for queue, pods in counts.pods.items():
            self.pending_pods.labels(queue).set(pods)
        for (queue, type_), n in counts.entities.items():
            self.queued_entities.labels(queue, type_).set(n)

    def clear_queues(self) -> None:
        """Set both queue gauges to zero (this replica stopped scheduling)."""
        self.set_queue_counts(QueueCounts())

    def track_partial_gangs(self, count: Callable[[], int]) -> None:
        """Report ``count()`` (the partial roots now; 0 on a replica that does not lead) as
        ``gang_scheduler_gangs_below_min``, read at scrape time — so a replica that stopped leading, whose binds
        still in flight may find a gang partial, does not keep reporting it."""
        self.gangs_below_min.set_function(lambda: float(count()))

    def track_informer(self, group: str, resource: str, informer: InformerState) -> None:
        """Report ``informer``'s sync state and re-lists under ``group`` (an API group, ``""`` for the core group) and
        ``resource`` (a plural), read at scrape time: two APIs of one plural (``podgroups`` of scheduling.k8s.io and
        of scheduler-plugins' scheduling.x-k8s.io) are reported apart."""
        self.informer_synced.labels(group, resource).set_function(lambda: float(informer.synced.is_set()))
        self._relists.informers[group, resource] = informer

    def untrack_informer(self, group: str, resource: str, informer: InformerState) -> None:
        """Stop reporting ``informer`` (stopped before it synced) under ``group`` and ``resource``, unless another took
        its place."""
        if self._relists.informers.get((group, resource)) is informer:
            del self._relists.informers[group, resource]
            self.informer_synced.remove(group, resource)

    def track_status_queue(self, queue: StatusQueueName, state: StatusQueueState) -> None:
        """Report ``state``'s depth and oldest age under ``queue`` (read at scrape time)."""
        self.status_queue_depth.labels(queue).set_function(lambda: float(state.depth))
        self.status_queue_oldest.labels(queue).set_function(_oldest_age(state))

    def track_leader(self, leading: Callable[[], bool]) -> None:
        """Report ``leading()`` (read at scrape time) as ``gang_scheduler_is_leader``."""
        self.is_leader.set_function(lambda: float(leading()))

    # -- what the driver calls ---------------------------------------------------------------
    def solved(self, tree: GroupTree, result: Plan | Unschedulable | Preemption, solve_s: float) -> None:
        """Record one solve of ``tree`` that took ``solve_s`` seconds.

        Always: the algorithm latency (pod or podgroup histogram) and the search effort. A Plan:
        the gang size (group roots) and the members it left pending as unschedulable; the rest of
        the attempt is recorded by :meth:`bound`. Unschedulable, or a Preemption (the root waits for
        its victims; upstream counts it as waiting on preemption): the attempt ends here — every
        pending member counts ``unschedulable``, and so does the root group.
        """
        group = tree.key.kind in GROUP_KINDS
        (self.podgroup_algorithm_duration if group else self.algorithm_duration).observe(solve_s)
        if isinstance(result, Plan):
            self.solver_attempts.labels("scheduled").observe(result.attempts)
            if group:
                self.gang_size.observe(len(result.placements))
            self.pod_attempts("unschedulable", len(result.unplaced), solve_s)
            return
        self.solver_attempts.labels("unschedulable").observe(result.attempts)
        self.pod_attempts("unschedulable", sum(len(leaf.pending) for leaf in _leaves(tree)), solve_s)
        if group:
            self.podgroup_attempt("unschedulable", solve_s)

    def bound(self, tree: GroupTree, plan: Plan, outcome: BindOutcome, attempt_s: float,
              root: PodGroup | CompositePodGroup | None = None, now: datetime | None = None) -> None:
        """Record the end of a plan's binding, ``attempt_s`` seconds after its solve started.

        Bound members count ``scheduled``, the others ``error``; the root group ``scheduled`` if
        ``outcome.ok``, else ``error`` plus a bind failure. ``root``: the cached root object; when
        the plan bound fully and ``root`` is not yet InitiallyScheduled, the time since its
        creationTimestamp is observed (``now``: wall-clock UTC, for tests).
        """
        self.pod_attempts("scheduled", len(outcome.bound), attempt_s)
        self.pod_attempts("error", len(plan.placements) - len(outcome.bound), attempt_s)
        if outcome.failed is not None:
            self.bind_failed(outcome.failed[1].status)
        if tree.key.kind not in GROUP_KINDS:
            return
        self.podgroup_attempt("scheduled" if outcome.ok else "error", attempt_s)
        if outcome.ok and root is not None and not initially_scheduled(root):
            created = root.metadata.creation_timestamp
            if created is not None:
                if created.tzinfo is None:
                    created = created.replace(tzinfo=UTC)
                elapsed = ((now or datetime.now(UTC)) - created).total_seconds()
                if math.isfinite(elapsed):
                    self.creation_to_bound.observe(max(0.0, elapsed))

    def set_queues(self, active: Iterable[GroupTree], backoff: Iterable[GroupTree], blocked: Iterable[GroupTree],
                   incomplete_pods: int, parked: Iterable[GroupTree] = ()) -> None:
        """Set the queue gauges; see :func:`queue_counts`."""
        self.set_queue_counts(queue_counts(active, backoff, blocked, incomplete_pods, parked))

    # -- serving -------------------------------------------------------------------------------
    def handler(self) -> Handler:
        """An aiohttp handler serving this registry (text format 0.0.4 or OpenMetrics, by ``Accept``)."""
        return make_aiohttp_handler(self.registry)
