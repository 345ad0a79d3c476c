"""The live scheduler: informers → cache → queue → cycle → binder, one root at a time.

``Scheduler.run(stop)`` does, in order (docs/architecture.md, "Live data flow"):

1. serve ``/healthz``, ``/readyz`` and ``/metrics`` (``scheduler.live.metrics``);
2. discover the APIs — PodGroups as ``scheduling.k8s.io/v1beta1`` (Kubernetes 1.37), else as 1.36's
   ``v1alpha2`` (``scheduler.client.podgroup_api``), and, where the CRD is served, scheduler-plugins'
   ``scheduling.x-k8s.io/v1alpha1`` (both when both are: the two kinds are kept apart,
   ``model/coscheduling.py``); with none it logs one line naming the APIs and the feature gates,
   reports not-ready and retries instead of crashing;
3. start one informer per resource and wait for the caches to sync;
4. run leader election (if enabled) — only the leader schedules, and losing the lease stops
   popping at once;
5. loop: route what changed — the roots whose trees changed go to the queue (ready ones queued,
   backing-off ones moved back when their own tree changed), every other cluster event to the
   queueing hints of the plugins that rejected each backing-off root — then pop roots one at a
   time through the one :class:`~scheduler.cycle.CycleRunner`: a plan is assumed and handed to the
   binder's transaction (a guarded background task, so binding overlaps the next cycles); a root
   that did not fit gets its reason written (PodGroup condition, pod events) and backs off.

On ``stop`` (SIGTERM): stop popping, let in-flight binds finish within a grace period, release
the lease, stop informers and the health server.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.client.discovery import GroupApis, discover_group_apis, watched_resources
from scheduler.client.kube import ApiError, KubeClient, Resource
from scheduler.client.podgroup_api import V1BETA1, PodGroupApi
from scheduler.config import Settings, own_namespace
from scheduler.cycle import Attempt, BindResult, CycleRunner, Failure
from scheduler.dra.writes import ClaimWrite
from scheduler.framework.events import ClusterEvent
from scheduler.framework.plan import Plan, Preemption, Unschedulable
from scheduler.groups.intent import parse_intent
from scheduler.groups.tree import GroupTree, Leaf, TreeState, walk
from scheduler.live.binder import Binder, BindOutcome
from scheduler.live.group_conditions import GroupConditions
from scheduler.live.health import HealthServer
from scheduler.live.informers import Informer
from scheduler.live.leader import LeaderElector
from scheduler.live.metrics import Metrics
from scheduler.live.preemptor import Preemptor, TimedPreemption
from scheduler.live.repair import GANG_BELOW_MIN, GangRepair, below_min_message, teardown_unit
from scheduler.live.status_writer import EVENT_GANG_BELOW_MIN, EVENT_GANG_TORN_DOWN, EVENT_UNHONOURED, StatusWriter
from scheduler.live.volume_binder import ClaimChanges, ClaimSource
from scheduler.model.coscheduling import CoscheduledPodGroup, unhonoured_fields
from scheduler.model.scheduling import GroupKey, PodGroup
from scheduler.model.strict import SHAPES, unknown_fields
from scheduler.preemption import DefaultPreemption
from scheduler.preemption.starvation import Reservation, StarvationGuard
from scheduler.queue import SchedulingQueue
from scheduler.solver.plugins import QUEUEING_HINTS
from scheduler.solver.unsupported import Context, unhonoured

log = logging.getLogger(__name__)

DISCOVERY_RETRY_S = 10.0
"""Pause between API discovery attempts while the PodGroup API is missing, seconds."""
SHUTDOWN_GRACE_S = 10.0
"""How long in-flight binds may finish after SIGTERM, seconds (well inside a pod's 30 s grace)."""
Decode = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""What an informer applies to each object it receives before the cache sees it."""
MAX_WARNED_PODS = 65536
"""Pods remembered as warned about unhonoured fields (oldest forgotten first; a forgotten pod is warned again)."""



class Scheduler:
    """One scheduler process. ``identity`` names it in the Lease and in events."""

    def __init__(self, settings: Settings, kube: KubeClient, *, identity: str | None = None) -> None:
        self.settings = settings
        self.kube = kube
        self.identity = identity or f"{socket.gethostname()}-{id(self):x}"
        self.cache = ClusterCache(settings.scheduler_name, dra=True)  # without the DRA API no claim exists
        self.queue = SchedulingQueue(settings.backoff_initial_s, settings.backoff_max_s, QUEUEING_HINTS)
        self.claim_changes = ClaimChanges()
        """Wakes bind transactions waiting for their PersistentVolumeClaims (fed in :meth:`on_change`)."""
        cache = self.cache  # looked up per call: a re-list may replace a kind's mapping (nodes do)
        claims = ClaimSource(claims=lambda key: cache.volume_claims.get(key),
                             volumes=lambda name: cache.volumes.get(name),
                             nodes=lambda name: cache.nodes.get(name), changes=self.claim_changes)
        self.binder = Binder(kube, concurrency=settings.bind_concurrency, fence=lambda: self.leading, volumes=claims,
                             volume_timeout_s=settings.volume_binding_timeout_s)
        self.status = StatusWriter(kube, settings.scheduler_name, instance=self.identity,
                                   event_interval_s=settings.event_interval_s)
        lease_namespace = settings.lease_namespace or own_namespace()
        self.elector = (LeaderElector(kube, lease_namespace, settings.lease_name, self.identity,
                                      lease_duration_s=settings.lease_duration_s,
                                      renew_deadline_s=settings.renew_deadline_s,
                                      retry_period_s=settings.retry_period_s)
                        if settings.leader_elect else None)
        self.informers: list[Informer] = []
        self.wake = asyncio.Event()
        self.events: list[ClusterEvent] = []
        """Cluster events not routed yet."""
        self.tasks: set[asyncio.Task[Any]] = set()
        self.api_problem: str | None = "API discovery has not run yet"
        self.groups = GroupApis(None, False)
        """The PodGroup APIs served (:meth:`discover`): the workload API's (:attr:`podgroups`), scheduler-plugins'."""
        self._reported: dict[GroupKey, str] = {}
        """Root → the message last reported for it (Waiting, Invalid, Unschedulable): a Waiting or Invalid
        tree is logged and reported on its pods once per change."""
        self._binding: set[GroupKey] = set()
        """Roots whose plan is being bound now."""
        self.repair = GangRepair(settings.gang_repair_timeout_s)
        """Partial roots and since when (gang repair)."""
        self.conditions = GroupConditions(self.cache, self.status, lambda key: key in self._binding,
                                          fence=lambda: self.leading)
        """The level-triggered group conditions, written by the task ``group-status``."""
        self._orphans_reported: dict[str, str] = {}
        self._resync = True
        """Route every tree again on the next refresh (a new term as leader starts from the cache)."""
        self.cycles = 0
        # -- metrics (scheduler.live.metrics): recorded here, the solver stays pure ----------
        self.metrics = Metrics(settings.scheduler_name)
        self.metrics.track_leader(lambda: self.leading)
        # -- preemption: the pure plugin in the cycle, its actuation in scheduler.live.preemptor ----
        self.preemptor = Preemptor(kube, self.cache, self.status, self.metrics, settings.scheduler_name,
                                   self.spawn, fence=lambda: self.leading)
        self.preemption = DefaultPreemption(CacheGroupView(self.cache, self.preemptor.awaiting))
        """Victim selection; also finds a starving root's best plan (the starvation guard works without
        ``--preemption``)."""
        self.starvation = StarvationGuard(settings.starvation_after_s, settings.reservation_s)
        self.cycle = CycleRunner(self.cache, settings.solver(),
                           (TimedPreemption(self.preemption, self.metrics),) if settings.preemption else ())
        self.health_port: int | None = None
        """The port /healthz, /readyz and /metrics are served on, once started (``--bind-address`` may say 0)."""
        self._blocked: dict[GroupKey, GroupTree] = {}
        """Waiting and Invalid trees of ours, for the queue gauges."""
        self._warned: dict[str, None] = {}
        """Uids of pods (and PodGroups) warned about fields no plugin honours (once per object), oldest first."""
        self._not_honoured: dict[GroupKey, str] = {}
        """PodGroups whose spec holds something not honoured (a v1.36 ``disruptionMode`` we do not know) → what."""
        self._unknown: dict[str, str] = {}
        """Uid → the fields the v1.37 API does not know in a pod of ours, a PodGroup or a CompositePodGroup, as the
        watch delivered it (:meth:`_checked`); the newest :data:`MAX_WARNED_PODS`."""

    @property
    def podgroups(self) -> PodGroupApi:
        """The workload API's PodGroup version served (v1beta1, else v1.36's v1alpha2; v1beta1 until
        :meth:`discover` found it, or where only scheduler-plugins' CRD is served)."""
        return self.groups.podgroups or V1BETA1

    # -- health --------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """Ready = APIs served, caches synced and leader state known."""
        if self.api_problem:
            return False, self.api_problem
        if not self.informers or not all(i.synced.is_set() for i in self.informers):
            return False, "caches not synced"
        if self.elector is not None and not self.elector.state_known:
            return False, "leader state unknown"
        return True, "ok"

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    # -- tasks ---------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start a named background task whose failure is logged at once (kopf's guarded tasks)."""
        task = asyncio.create_task(coro, name=name)
        self.tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("task %s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    def on_change(self, events: list[ClusterEvent]) -> None:
        """Informer callback: remember what changed and wake the loop (and binds waiting for their claims)."""
        if events:
            self.events.extend(events)
            self.wake.set()
            self.claim_changes.notify(events)

    # -- startup -------------------------------------------------------------------
    async def discover(self, stop: asyncio.Event) -> bool:
        """Wait until a PodGroup API is served — the workload API's (v1beta1 preferred, else v1.36's v1alpha2:
        ``podgroup_api``) or scheduler-plugins' CRD (:attr:`groups` says which are); returns False if stopped
        first."""
        logged = False
        while not stop.is_set():
            try:
                groups = await discover_group_apis(self.kube)
            except ApiError as exc:
                groups = GroupApis(None, False, f"API discovery failed: {exc}")
            if groups.resources:
                self.groups = groups
                self.binder.podgroups = self.podgroups.resource
                log.info("reading PodGroups as %s", ", ".join(r.group_version for r in groups.resources))
                self.api_problem = None
                return True
            self.api_problem = groups.problem
            if not logged:
                log.error("%s; not ready, retrying every %.0f s", groups.problem, DISCOVERY_RETRY_S)
                logged = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), DISCOVERY_RETRY_S)
        return False

    async def start_informers(self) -> None:
        resources = await watched_resources(self.kube, self.settings.preemption, self.groups)
        for res in resources:
            decode = self.podgroups.informer_decode(self._podgroup_problems) if res is self.podgroups.resource else None
            informer = Informer(self.kube, res, self.cache, self.on_change, decode=self._checked(res, decode))
            self.informers.append(informer)
            self.metrics.track_informer(res.plural, informer)
            self.spawn(informer.run(), f"informer/{res.plural}")
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        # The synced cache lives as long as the process: moved out of the collector's generations, a full
        # collection no longer walks every object of the cluster (CPython's gc.freeze, O(1); no collection
        # first, which takes ~0.6 s at 5,000 nodes / 24,000 pods), so the cost per event does not grow with it.
        gc.freeze()
        log.info("caches synced: %d nodes, %d pods, %d podgroups", len(self.cache.nodes),
                 len(self.cache.pods), sum(len(self.cache.objects[r.kind]) for r in self.groups.resources))

    # -- main loop -----------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; see the module docstring."""
        s = self.settings
        log.info("starting %s as %s: %s", s.scheduler_name, self.identity,
                 s.model_dump_json(exclude={"kubeconfig"}))
        health = HealthServer(*s.bind_host_port, self.ready)
        health.add_route("GET", "/metrics", self.metrics.handler())
        await health.start()
        self.health_port = health.port
        try:
            if not await self.discover(stop):
                return
            await self.start_informers()
            self.spawn(self.conditions.run(), "group-status")
            if self.elector is not None:
                self.spawn(self.elector.run(), "leader-election")
                self.spawn(self._watch_leadership(), "leader-wake")
            self.wake.set()
            await self._loop(stop)
        finally:
            await self.shutdown()
            await health.stop()

    async def _watch_leadership(self) -> None:
        assert self.elector is not None
        while True:
            await self.elector.leading.wait()
            self._resync = True  # a new leader starts from the cache, not from a stale queue
            self.wake.set()
            await self.elector.wait_until_not_leading()
            log.warning("not leading: scheduling stopped")
            self.metrics.clear_queues()  # a follower's queue is not scheduled: report it empty

    async def _loop(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            wakeups = [w for w in (self.queue.next_wakeup(), self.repair.next_deadline()) if w is not None]
            wakeup = min(wakeups) if wakeups and self.leading else None  # a follower waits for a wake-up
            timeout = None if wakeup is None else max(0.0, wakeup - loop.time())
            waiter = asyncio.ensure_future(self.wake.wait())
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
            self.wake.clear()
            if stop.is_set():
                break
            if self.leading:
                await self.schedule_ready(stop)

    async def schedule_ready(self, stop: asyncio.Event) -> None:
        """Route what changed, then pop and decide ready roots until none is ready (yielding to the loop
        between roots, so watch events and binds keep flowing)."""
        loop = asyncio.get_running_loop()
        self._refresh(loop.time())
        self._expire_reservations(loop.time())
        self._repair_due(loop.time())
        while not stop.is_set() and self.leading:
            key = self.queue.pop(loop.time())
            if key is None:
                break
            if self.preemptor.awaiting(key) and key in self.repair.partial:
                continue  # being torn down: tried again once its members are gone (the tree changes then)
            started = time.perf_counter()
            attempt = self.cycle.attempt(key)
            if attempt is None:
                continue  # bound, gone or not ready since it was queued
            self._decided(attempt, started)
            self.cycles += 1
            await asyncio.sleep(0)
            self._refresh(loop.time())
        self._record_queues()

    # -- gang repair (scheduler.live.repair) ----------------------------------------------------------
    def _observe_partial(self, key: GroupKey, tree: GroupTree | None, now: float) -> None:
        """Track root ``key`` as partial or not; count a partial gang satisfied again as repaired. A root whose
        plan is being bound is judged when its binder ends (its assumed members are not bound yet)."""
        if key in self._binding:
            return
        since: datetime | None = None
        if tree is not None and tree.partial and key not in self.repair.partial and key.kind != "Pod":
            obj = self.cache.group(key.kind, key.namespace, key.name)
            cond = next((c for c in obj.status.conditions if c.type == GANG_BELOW_MIN and c.is_true), None) \
                if obj is not None else None
            since = cond.last_transition_time if cond is not None else None
            log.warning("root=%s result=Partial %s", key, below_min_message(tree))
        if self.repair.observe(key, tree, now, since):
            log.info("root=%s result=Repaired the gang is satisfied again", key)
            self.metrics.gang_repair("completed")
        self.metrics.gangs_below_min.set(len(self.repair.partial))

    def _repair_due(self, now: float) -> None:
        """Act on the partial roots past ``--gang-repair-timeout-s``: tear down a ``disruptionMode: all`` gang
        whole (its bound members evicted), report a ``single`` one."""
        for key in self.repair.expired(now):
            tree = self.cache.tree(key)
            if tree is None or not tree.partial:
                self.repair.observe(key, tree, now)
                continue
            if key in self._binding:
                continue  # a plan is being bound: judged when it ends
            self.repair.acted(key)
            obj = self.cache.group(key.kind, key.namespace, key.name)
            what = below_min_message(tree)
            after = f"for {self.settings.gang_repair_timeout_s:.0f} s"
            unit = teardown_unit(tree, lambda k: self.cache.group(k.kind, k.namespace, k.name))
            if unit is None:
                message = (f"{what} {after}; disruptionMode single: left as it is (its members keep running; "
                           "it is completed when room appears)")
                log.warning("root=%s result=BelowMin %s", key, message)
                self.metrics.gang_repair("reported")
                if obj is not None:
                    self.spawn(self.status.group_warning(obj, EVENT_GANG_BELOW_MIN, message), f"status/{key}")
                continue
            victims = [p for leaf in unit.leaves() for b in leaf.bound
                       if b.key not in self.cache.assumed and (p := self.cache.pod(b.key)) is not None]
            message = (f"{self.settings.scheduler_name}: tearing down {unit.key.kind} {unit.key.namespace}/"
                       f"{unit.key.name}: {what} {after}; its {len(victims)} bound member(s) are evicted so that "
                       "it can be placed again whole (disruptionMode all)")
            log.warning("root=%s result=TornDown %s", key, message)
            self.metrics.gang_repair("torn_down")
            unit_obj = self.cache.group(unit.key.kind, unit.key.namespace, unit.key.name)
            self.preemptor.tear_down(key, unit_obj, victims, message)
            if obj is not None:
                self.spawn(self.status.group_warning(obj, EVENT_GANG_TORN_DOWN, message), f"status/{key}")

    def _record_queues(self) -> None:
        """Set the pending-pods / queued-entities gauges from the queue and the trees."""
        trees = self.cache.groups.trees
        active = [t for k in self.queue.ready.queued() if (t := trees.get(k)) is not None]
        backoff = [t for k in self.queue.backing_off if (t := trees.get(k)) is not None]
        self.metrics.set_queues(active, backoff, self._blocked.values(), len(self._allowed_orphans()))

    def _allowed(self, namespace: str) -> bool:
        return not self.settings.namespaces or namespace in self.settings.namespaces

    def _allowed_orphans(self) -> list[Any]:
        return [o for o in self.cache.groups.orphans.values() if self._allowed(o.pod.metadata.namespace)]

    def _refresh(self, now: float) -> None:
        """Route the roots whose trees changed and the cluster events since the last call; report new
        Waiting / Invalid trees and orphan pods."""
        changed = self.cache.take_changed_roots()
        if self._resync:
            self._resync = False
            changed |= set(self.cache.groups.trees)
        trees = self.cache.groups.trees
        for key in changed:
            found = trees.get(key)
            tree = found if found is not None and self._allowed(key.namespace) else None
            self.queue.update(tree, key, ready=tree is not None and tree.state is TreeState.READY)
            if tree is not None or found is None:  # judged again from the cache (a root gone: its report dropped)
                self.conditions.observe(key)
                self._observe_partial(key, tree, now)
            if tree is not None and tree.state in (TreeState.WAITING, TreeState.INVALID):
                self._blocked[key] = tree
                self._report_blocked(tree)
            else:
                self._blocked.pop(key, None)
                if tree is None:
                    self._reported.pop(key, None)  # a root that is gone: forget its message
                    self._gone(key)
        events, self.events = self.events, []
        self.queue.on_events(events, now)
        self._report_orphans()

    def _report_orphans(self) -> None:
        orphans = {o.pod.key: o for o in self._allowed_orphans()}
        for key in [k for k in self._orphans_reported if k not in orphans]:
            del self._orphans_reported[key]
        for key, orphan in orphans.items():
            if self._orphans_reported.get(key) != orphan.message:
                self._orphans_reported[key] = orphan.message
                self.spawn(self.status.pod_unschedulable(orphan.pod, "Unschedulable", orphan.message),
                           f"status/{key}")

    def _report_blocked(self, tree: GroupTree) -> None:
        if self._reported.get(tree.key) == tree.message:
            return
        self._reported[tree.key] = tree.message
        log.info("root=%s result=%s reason=%r", tree.key, tree.state.value, tree.message)
        reason = "Unschedulable" if tree.state is TreeState.WAITING else "SchedulerError"
        self.conditions.failed(tree, reason, tree.message)
        self._report_pods(tree, reason, tree.message)  # Waiting pods too: FailedScheduling + PodScheduled=False

    def _report_pods(self, tree: GroupTree, reason: str, message: str, keys: frozenset[str] | None = None) -> None:
        """``PodScheduled=False`` and a FailedScheduling event on the tree's pending pods (``keys``: only those),
        each read from the cache now so the write carries the pod's current resourceVersion; one task writes them."""
        pods = [pod for leaf in tree.root.leaves() for member in leaf.pending
                if (keys is None or member.key in keys)
                and (pod := self.cache.pod(member.key)) is not None and not pod.is_bound]
        if pods:
            self.spawn(self.status.pods_unschedulable(pods, reason, message), f"status/{tree.key}")

    # -- one decision ---------------------------------------------------------------
    def _decided(self, attempt: Attempt, started: float) -> None:
        """Act on one decision: bind a plan in the background, or report and back off."""
        loop = asyncio.get_running_loop()
        tree, result = attempt.tree, attempt.decision
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.metrics.solved(tree, result, elapsed_ms / 1000)
        self._warn_unhonoured(tree)
        if isinstance(result, Plan):
            nodes = sorted({n for _, n in result.placements})
            log.info("root=%s result=Scheduled pods=%d nodes=%s attempts=%d duration_ms=%.1f", tree.key,
                     len(result.placements), ",".join(nodes), result.attempts, elapsed_ms)
            writes = self.cycle.claim_writes(attempt)
            self._reported.pop(tree.key, None)
            self._binding.add(tree.key)
            self._placed(tree)
            self.spawn(self.bind(attempt, started, writes), f"bind/{tree.key}")
            return
        delay = self.queue.backoff(tree, loop.time(), result.rejectors)
        if isinstance(result, Preemption):
            self._preempting(tree, result, elapsed_ms, delay)
            return
        log.info("root=%s result=Unschedulable code=%s attempts=%d duration_ms=%.1f backoff_s=%.0f reason=%r",
                 tree.key, result.code.value, result.attempts, elapsed_ms, delay, result.message)
        self._report_unschedulable(tree, result)
        self._unschedulable(attempt, loop.time())

    # -- preemption and the starvation guard; acting is scheduler.live.preemptor's ------------
    def _preempting(self, tree: GroupTree, result: Preemption, elapsed_ms: float, delay: float) -> None:
        """A root preempts (or waits for its victims): nominate and evict in the background, report, back off."""
        self.starvation.failed(tree.key, tree.priority, asyncio.get_running_loop().time())
        if not result.waiting:
            self.preemptor.start(tree, result)
        nodes = sorted({n for _, n in result.nominations})
        log.info("root=%s result=%s victims=%d units=%d reprieved=%d pdb_violations=%d nodes=%s duration_ms=%.1f "
                 "backoff_s=%.0f", tree.key, "WaitingForVictims" if result.waiting else "Preempting",
                 len(result.victims), result.units, result.reprieved, result.pdb_violations, ",".join(nodes),
                 elapsed_ms, delay)
        failure = result.failure
        self._report_unschedulable(tree, dataclasses.replace(failure, message=f"{failure.message}; {result.message}"))

    def _unschedulable(self, attempt: Attempt, now: float) -> None:
        """A root failed without preempting: its pods give up the room nominated to them — unless it is starving,
        then the nodes of its best plan are reserved for it."""
        tree = attempt.tree
        self.starvation.failed(tree.key, tree.priority, now)
        if tree.key in self.starvation.reservations:
            return
        entry = self.starvation.starving(tree.key, now)
        plan = None if entry is None else self.preemption.reservation(tree, attempt.snapshot, self.settings.solver())
        if entry is None or plan is None:
            self.preemptor.release_tree(tree)
            return
        reservation = self.starvation.reserve(tree.key, self.preemptor.reserve(tree, plan), now)
        nodes = ",".join(sorted({n for _, n in reservation.nominations}))
        log.info("root=%s result=Reserved nodes=%s overtaken=%d hold_s=%.0f", tree.key, nodes, entry.overtaken,
                 self.starvation.hold_s)
        self.metrics.reservation("granted", len(self.starvation.reservations))
        self._reservation_condition(tree.key, True, "Starving", f"unschedulable for {now - entry.since:.0f} s while "
                                    f"{entry.overtaken} root(s) of priority {tree.priority} were placed; nodes "
                                    f"{nodes} are held for it for {self.starvation.hold_s:.0f} s")

    def _placed(self, tree: GroupTree) -> None:
        ended = self.starvation.placed(tree.key, tree.priority)
        if ended is not None:
            self.metrics.reservation("fitted", len(self.starvation.reservations))
            self._reservation_condition(tree.key, False, "Fitted", "the group fitted; the nodes are no longer held")

    def _expire_reservations(self, now: float) -> None:
        for ended in self.starvation.expired(now):
            self._end_reservation(ended, "expired", "Expired", "the reservation expired; the nodes are no longer held")

    def _gone(self, key: GroupKey) -> None:
        self.preemptor.forget(key)
        self._not_honoured.pop(key, None)
        ended = self.starvation.forget(key)
        if ended is not None:
            self._end_reservation(ended, "dropped", None, "")

    def _end_reservation(self, ended: Reservation, event: Any, reason: str | None, message: str) -> None:
        self.preemptor.release(key for key, _ in ended.nominations)
        self.metrics.reservation(event, len(self.starvation.reservations))
        if reason is not None:
            self._reservation_condition(ended.root, False, reason, message)

    def _reservation_condition(self, key: GroupKey, held: bool, reason: str, message: str) -> None:
        obj = self.cache.group(key.kind, key.namespace, key.name) if key.kind != "Pod" else None
        if obj is not None:
            self.spawn(self.status.group_reservation(obj, held, reason, message), f"status/{key}")

    def _checked(self, res: Resource, decode: Decode | None) -> Decode | None:
        """``decode`` (None: none), after noting the fields the v1.37 API does not know in each object the informer
        of ``res`` receives — a Pod of ours, a v1beta1 PodGroup, a v1alpha3 CompositePodGroup
        (:data:`~scheduler.model.strict.SHAPES`; other resources are not checked) — for
        :meth:`_warn_unhonoured`. The API server has dropped what its own version does not know, so what is
        found is a field of a newer version, which no plugin here honours."""
        shape = SHAPES.get((res.group_version, res.kind))
        if shape is None:
            return decode
        pods, ours = res.kind == "Pod", self.settings.scheduler_name

        def check(raw: Mapping[str, Any]) -> Mapping[str, Any]:
            spec = raw.get("spec")
            if not pods or (isinstance(spec, dict) and spec.get("schedulerName") == ours):
                meta = raw.get("metadata") or {}
                uid = str(meta.get("uid") or f"{res.kind}/{meta.get('namespace')}/{meta.get('name')}")
                if pods and isinstance(spec, dict) and spec.get("nodeName"):  # bound: warnings are for pending pods
                    self._unknown.pop(uid, None)
                    return raw if decode is None else decode(raw)
                found = unknown_fields(raw, shape)
                if found:
                    self._unknown[uid] = "; ".join(map(str, found))
                    if len(self._unknown) > MAX_WARNED_PODS:
                        del self._unknown[next(iter(self._unknown))]
                else:
                    self._unknown.pop(uid, None)
            return raw if decode is None else decode(raw)

        return check

    def _warn_unhonoured(self, tree: GroupTree) -> None:
        """A Warning Event, once per pod, on the tree's pending pods that set fields no plugin honours or the v1.37
        API does not know (:meth:`_checked`) — and once per group on its PodGroups and CompositePodGroups whose
        spec holds such a field, or something not honoured: a v1.36 one's (:meth:`_podgroup_problems`), a
        scheduler-plugins one's (:func:`~scheduler.model.coscheduling.unhonoured_fields`)."""
        context: Context | None = None
        for node in walk(tree.root):
            if isinstance(node, Leaf):
                for pod in node.pending:
                    if not self._first_warning(pod.metadata.uid or pod.key):
                        continue
                    if context is None:
                        context = Context(storage=self.cache.storage.view())  # not a whole snapshot
                    findings = [str(f) for f in unhonoured(pod, context)]
                    findings += filter(None, [self._unknown.get(pod.metadata.uid)])
                    if findings:
                        note = "not honoured: " + "; ".join(findings)
                        self.spawn(self.status.pod_warning(pod, EVENT_UNHONOURED, note), f"status/{pod.key}")
            key = node.key
            group = None if key.kind == "Pod" else self.cache.group(key.kind, key.namespace, key.name)
            problems = [self._not_honoured.get(key)]
            if isinstance(group, CoscheduledPodGroup) and (fields := unhonoured_fields(group)):
                problems = ["; ".join(f"{path}: {why}" for path, why in fields)]
            if group is not None:
                problems.append(self._unknown.get(group.metadata.uid))
            note = "; ".join(filter(None, problems))
            if note and group is not None and self._first_warning(group.metadata.uid or str(key)):
                self.spawn(self.status.group_warning(group, EVENT_UNHONOURED, f"not honoured: {note}"),
                           f"status/{key}")

    def _first_warning(self, uid: str) -> bool:
        """True the first time ``uid`` (a pod's, a PodGroup's) is warned about fields not honoured (remembered:
        the newest :data:`MAX_WARNED_PODS`)."""
        if uid in self._warned:
            return False
        self._warned[uid] = None
        if len(self._warned) > MAX_WARNED_PODS:
            del self._warned[next(iter(self._warned))]
        return True

    def _podgroup_problems(self, group: PodGroup, problems: str) -> None:
        """The PodGroup informer's report of what of a (v1.36) PodGroup's spec is not honoured: kept until the
        leader decides its tree (:meth:`_warn_unhonoured` writes the Event, as for pods), logged once here."""
        key = GroupKey("PodGroup", group.metadata.namespace, group.metadata.name)
        if self._not_honoured.get(key) != problems:
            log.warning("%s: not honoured: %s", key, problems)
            self._not_honoured[key] = problems

    def _report_unschedulable(self, tree: GroupTree, result: Unschedulable) -> None:
        self._reported[tree.key] = result.message  # a Waiting report after it is a change again
        self.conditions.failed(tree, "Unschedulable", result.message, result.group_reasons)
        self._report_pods(tree, "Unschedulable", result.message)

    async def bind(self, attempt: Attempt, started: float, writes: Sequence[ClaimWrite] = ()) -> None:
        """Run the plan's bind transaction; on success mark its groups scheduled, on failure requeue the root.

        Guarded: an unexpected error forgets the members not bound and requeues the root instead of
        leaking their assumptions (capacity and devices held forever) and losing the root. Members
        already bound are never forgotten — the server has them, and forgetting them would free room
        another plan would then take twice.
        """
        plan = attempt.plan
        assert plan is not None
        outcome = BindOutcome()
        try:
            result, _ = await self.binder.commit(
                plan, writes, outcome, intent=attempt.token,
                precheck=lambda pod, node: self.cycle.target_problem(plan, pod, node), recorded=self._intent_of)
        except Exception as exc:
            log.exception("root=%s result=BindError: members not bound forgotten and requeued", attempt.tree.key)
            bound = {p.key for p, _ in outcome.bound}
            unbound = [p.key for p, _ in plan.placements if p.key not in bound]
            result = BindResult(bound=list(outcome.bound), forget=unbound, release=[] if bound else None,
                                failure=Failure(unbound[0] if unbound else attempt.tree.key.name,
                                                f"internal error while binding: {exc!r}; {len(bound)}/"
                                                f"{len(plan.placements)} members bound, the rest forgotten and "
                                                "the group requeued"))
            outcome.skipped = [k for k in unbound if k not in outcome.skipped] + outcome.skipped
        self._finish(attempt, result, outcome, started)

    def _intent_of(self, namespace: str, name: str) -> Mapping[str, tuple[str, str]]:
        """The durable intent PodGroup ``namespace/name`` shows in the cache (empty: none, or not known)."""
        group = self.cache.group("PodGroup", namespace, name)
        return parse_intent(group) if group is not None else {}

    def _finish(self, attempt: Attempt, result: BindResult, outcome: BindOutcome, started: float) -> None:
        """The one place a plan ends: settle the cache, record, report, and requeue a failed root."""
        tree, plan = attempt.tree, attempt.plan
        assert plan is not None
        self.cycle.settle(attempt, result)
        self._binding.discard(tree.key)
        self._observe_partial(tree.key, self.cache.tree(tree.key), asyncio.get_running_loop().time())
        if result.bound:
            self.conditions.bound(tree.key)  # the groups it satisfied show True now, from the cache
        else:
            self.conditions.observe(tree.key)
        self.metrics.bound(tree, plan, outcome, time.perf_counter() - started,
                           root=self.cache.group(tree.key.kind, tree.key.namespace, tree.key.name))
        if result.bound:
            self.spawn(self.status.pods_scheduled(result.bound), f"status/{tree.key}")
        self.preemptor.settled(plan, result.bound)
        if result.ok:
            self.queue.done(tree.key)  # scheduled: its backoff starts over
            return
        message = result.failure.message if result.failure is not None else "the plan's binder failed"
        log.warning("root=%s result=BindFailed %s", tree.key, message)
        self._report_pods(tree, "SchedulerError", message, frozenset(result.forget))
        current = self.cache.tree(tree.key) or tree
        self.queue.backoff(current, asyncio.get_running_loop().time())
        self.wake.set()

    async def shutdown(self) -> None:
        """Stop scheduling, let binds finish within the grace period, release the lease, stop informers."""
        binds = [t for t in self.tasks if t.get_name().startswith(("bind/", "status/", "preempt/"))]
        if binds:
            _, pending = await asyncio.wait(binds, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                task.cancel()
            if pending:
                log.warning("abandoned %d in-flight writes at shutdown", len(pending))
        if self.elector is not None:
            await self.elector.release()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
