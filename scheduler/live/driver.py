"""The live scheduler: informers → cache → queue → cycle → binder, one root at a time.

``Scheduler.run(stop)`` does, in order (docs/architecture.md, "Live data flow"):

1. serve ``/healthz``, ``/readyz`` and ``/metrics`` (``scheduler.live.metrics``);
2. discover the APIs — PodGroups as ``scheduling.k8s.io/v1beta1`` (Kubernetes 1.37), else as 1.36's
   ``v1alpha2`` (``scheduler.client.podgroup_api``), and, where the CRD is served, scheduler-plugins'
   ``scheduling.x-k8s.io/v1alpha1`` (both when both are: the two kinds are kept apart,
   ``model/coscheduling.py``); with none it logs one line naming the APIs and the feature gates,
   reports not-ready and retries instead of crashing;
3. start one informer per resource and wait for the caches to sync; every ``--api-discovery-interval-s``
   look again for the APIs not served, and watch those served since (:class:`~scheduler.live.watches.Watches`);
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
import logging
import socket
import time

from scheduler.binding.volumes import ClaimSource
from scheduler.binding.wait import Changes
from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.client.kube import KubeClient
from scheduler.config import Settings, own_namespace
from scheduler.cycle import Attempt, CycleRunner, handle
from scheduler.framework.binding_cycle import BindingCycle, BindOutcome, BindResult, Failure
from scheduler.framework.events import ClusterEvent
from scheduler.framework.plan import Plan, Preemption, Unschedulable
from scheduler.groups.tree import GroupTree, TreeState
from scheduler.live.binder import Binder
from scheduler.live.group_conditions import GroupConditions
from scheduler.live.health import HealthServer
from scheduler.live.leader import LeaderElector
from scheduler.live.metrics import Metrics
from scheduler.live.preemptor import Preemptor, TimedPreemption
from scheduler.live.refusals import RefusalReporter
from scheduler.live.repair import GangRepairer
from scheduler.live.reporter import Reporter
from scheduler.live.reservations import Reservations
from scheduler.live.status_writer import StatusWriter
from scheduler.live.tasks import Tasks
from scheduler.live.unhonoured import UnhonouredFields
from scheduler.live.watches import Watches
from scheduler.model.base import named_within
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup
from scheduler.preemption import DefaultPreemption
from scheduler.queue import SchedulingQueue
from scheduler.solver.plugins import QUEUEING_HINTS

log = logging.getLogger(__name__)

LOGGED_VICTIMS = 5
"""How many victims a ``result=WaitingForVictims`` line names (the rest are counted)."""

SHUTDOWN_GRACE_S = 10.0
"""How long in-flight binds may finish after SIGTERM, seconds (well inside a pod's 30 s grace)."""


class Scheduler:
    """One scheduler process. ``identity`` names it in the Lease and in events.

    Longer than our ~300-line rule, on purpose: it is the wiring (``__init__`` builds every part and says what
    each holds) and the order the parts run in — startup, the loop, routing what changed, acting on a decision,
    the end of a bind — which one place should show. What each part does lives in its own module: gang repair
    (:class:`~scheduler.live.repair.GangRepairer`), starvation reservations
    (:class:`~scheduler.live.reservations.Reservations`), reasons and gauges
    (:class:`~scheduler.live.reporter.Reporter`), warnings for what is not honoured
    (:class:`~scheduler.live.unhonoured.UnhonouredFields`), background tasks (:class:`~scheduler.live.tasks.Tasks`),
    preemption (:class:`~scheduler.live.preemptor.Preemptor`), binding (:class:`~scheduler.live.binder.Binder`),
    conditions and Events (:class:`~scheduler.live.group_conditions.GroupConditions`,
    :class:`~scheduler.live.status_writer.StatusWriter`).
    """

    def __init__(self, settings: Settings, kube: KubeClient, *, identity: str | None = None) -> None:
        self.settings = settings
        lease_kube = kube
        if settings.leader_elect:  # a write queued while leading is not sent once the lease is lost
            kube = kube.fenced(lambda: self.leading)
        self.kube = kube
        self.identity = identity or f"{socket.gethostname()}-{id(self):x}"
        self.cache = ClusterCache(settings.scheduler_name, dra=True)  # without the DRA API no claim exists
        self.queue = SchedulingQueue(settings.backoff_initial_s, settings.backoff_max_s, QUEUEING_HINTS,
                                     settings.unschedulable_retry_s)
        self.changes = Changes()
        """Wakes PreBind steps waiting for a condition on the cache (fed in :meth:`on_change`)."""
        cache = self.cache  # looked up per call: a re-list may replace a kind's mapping (nodes do)
        claims = ClaimSource(claims=lambda key: cache.volume_claims.get(key),
                             volumes=lambda name: cache.volumes.get(name),
                             nodes=lambda name: cache.nodes.get(name))
        self.binder = Binder(kube, concurrency=settings.bind_concurrency, fence=lambda: self.leading, cache=cache,
                             volumes=claims, changes=self.changes, volume_timeout_s=settings.volume_binding_timeout_s,
                             binding_timeout_s=settings.binding_conditions_timeout_s)
        self.status = StatusWriter(kube, settings.scheduler_name, instance=self.identity,
                                   event_interval_s=settings.event_interval_s)
        lease_namespace = settings.lease_namespace or own_namespace()
        self.elector = (LeaderElector(lease_kube, lease_namespace, settings.lease_name, self.identity,
                                      lease_duration_s=settings.lease_duration_s,
                                      renew_deadline_s=settings.renew_deadline_s,
                                      retry_period_s=settings.retry_period_s)
                        if settings.leader_elect else None)
        self.wake = asyncio.Event()
        self.events: list[ClusterEvent] = []
        """Cluster events not routed yet."""
        self.tasks = Tasks()
        self.spawn = self.tasks.spawn
        """Start a named background task whose failure is logged at once (kopf's guarded tasks)."""
        self._binding: set[GroupKey] = set()
        """Roots whose plan is being bound now."""
        self.conditions = GroupConditions(self.cache, self.status, lambda key: key in self._binding,
                                          fence=lambda: self.leading,
                                          evicting=lambda groups: self.preemptor.evicting(groups))
        """The level-triggered group conditions, written by the task ``group-status``."""
        self._resync = True
        """Route every tree again on the next refresh (a new term as leader starts from the cache)."""
        self.cycles = 0
        self._started = 0.0
        """perf_counter() when the decision being handled began (its cycle's start)."""
        # -- metrics (scheduler.live.metrics): recorded here, the solver stays pure ----------
        self.metrics = Metrics(settings.scheduler_name)
        self.metrics.track_leader(lambda: self.leading)
        # -- preemption: the pure plugin in the cycle, its actuation in scheduler.live.preemptor ----
        self.preemptor = Preemptor(kube, self.cache, self.status, self.metrics, settings.scheduler_name,
                                   self.spawn, fence=lambda: self.leading, on_change=self.on_change)
        self.preemption = DefaultPreemption(CacheGroupView(self.cache, self.preemptor.awaiting))
        """Victim selection; also finds a starving root's best plan (the starvation guard works without
        ``--preemption``)."""
        self.reservations = Reservations(settings, self.cache, self.status, self.metrics, self.preemptor,
                                         self.preemption, self.spawn)
        """Starvation reservations: the guard's books and the nodes held for a starving root."""
        self.cycle = CycleRunner(self.cache, settings.solver(),
                           (TimedPreemption(self.preemption, self.metrics),) if settings.preemption else ())
        self.health_port: int | None = None
        """The port /healthz, /readyz and /metrics are served on, once started (``--bind-address`` may say 0)."""
        self.repair = GangRepairer(settings, self.cache, self.status, self.metrics, self.preemptor, self.spawn,
                                   lambda key: key in self._binding, wake=self.wake.set)
        """Partial roots, since when, and the timeout's action (gang repair)."""
        self.reporter = Reporter(self.cache, self.status, self.conditions, self.metrics, self.spawn, self._allowed,
                                 fence=lambda: self.leading)
        """Reasons on the pods and groups of roots not placed; the queue gauges."""
        self.unhonoured = UnhonouredFields(settings.scheduler_name, self.cache, self.status, self.spawn)
        """Warning Events for what the scheduler does not honour, once per object."""
        self.watches = Watches(settings, kube, self.cache, self.metrics, self.unhonoured, self.spawn, self.on_change,
                               self.wake.set)
        """The informers and the APIs they read, found at start and looked for again."""
        self.metrics.track_status_queue("pods", self.reporter.writes)
        self.metrics.track_status_queue("groups", self.conditions)
        self.metrics.track_partial_gangs(lambda: len(self.repair.partial) if self.leading else 0)
        self.cache.on_refused = RefusalReporter(self.metrics, self.status, self.spawn, lambda: self.leading)
        self.cache.on_group = self._group_shown  # a group's own watch events: its GangBelowMin judged again

    # -- health --------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """Ready = APIs served, caches synced and leader state known."""
        if self.watches.api_problem:
            return False, self.watches.api_problem
        if not self.watches.informers:
            return False, "caches not synced"
        if unsynced := self.watches.unsynced():
            return False, f"caches not synced: {', '.join(unsynced)}"
        if self.elector is not None and not self.elector.state_known:
            return False, "leader state unknown"
        return True, "ok"

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    # -- routing -------------------------------------------------------------------
    def on_change(self, events: list[ClusterEvent]) -> None:
        """Informer callback: remember what changed and wake the loop (and PreBind steps waiting on the cache)."""
        if events:
            self.events.extend(events)
            self.wake.set()
            self.changes.notify(events)


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
            if not await self.watches.discover(stop):
                return
            await self.watches.start()
            self.spawn(self.watches.rediscover(), "api-discovery")
            self.spawn(self.conditions.run(), "group-status")
            self.spawn(self.reporter.writes.run(), "pod-status")
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
            # a follower waits for a wake-up, and so does a leader whose caches are listing (discover_more wakes it)
            wakeup = min(wakeups) if wakeups and self.leading and self.watches.synced() else None
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
        if not self.watches.synced():
            return  # an informer added since start is listing (Watches.discover_more wakes the loop once it has synced)
        loop = asyncio.get_running_loop()
        self._refresh(loop.time())
        self.reservations.expire(loop.time())
        self.repair.act_due(loop.time())
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
        self.reporter.record_queues(self.queue)

    def _group_shown(self, group: PodGroup | CompositePodGroup) -> None:
        """A group's own watch event: its ``GangBelowMin`` judged again, in the namespaces this scheduler serves."""
        if self._allowed(group.metadata.namespace):
            self.conditions.shown(group)

    def _allowed(self, namespace: str) -> bool:
        return not self.settings.namespaces or namespace in self.settings.namespaces

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
            if tree is not None or (found is None and self._allowed(key.namespace)):  # judged again from the cache
                self.conditions.observe(key)
                self.repair.observe(key, tree, now)
            self.reporter.tree_changed(key, tree)
            if tree is None:
                self._gone(key)
        for key in self.cache.take_quiet_roots():
            if (found := trees.get(key)) is not None:
                self.queue.retree(found)
        events, self.events = self.events, []
        self.queue.on_events(events, now)
        if self.cache.take_room_released():
            self.queue.activate(self.queue.parked(), now)
        self.reporter.orphans()

    def _gone(self, key: GroupKey) -> None:
        """Root ``key`` is gone (or no longer ours): what the parts keep for it is dropped."""
        self.preemptor.forget(key)
        self.unhonoured.forget(key)
        self.reservations.forget(key)

    # -- one decision ---------------------------------------------------------------
    def _decided(self, attempt: Attempt, started: float) -> None:
        """Act on one decision (the live :class:`~scheduler.cycle.DecisionHandler`: :meth:`on_plan`,
        :meth:`on_preemption`, :meth:`on_unschedulable`): bind a plan in the background, or report and back off."""
        self._started = started
        self.events.extend(attempt.events)  # routed with the watch's at the next _refresh, right after this root
        decision = attempt.decision
        if not (isinstance(decision, Unschedulable) and decision.not_ready):  # not tried: no attempt to count
            self.metrics.solved(attempt.tree, decision, time.perf_counter() - started)
        self.unhonoured.warn(attempt.tree)
        handle(attempt, self)

    def on_plan(self, attempt: Attempt, plan: Plan) -> None:
        tree, started = attempt.tree, self._started
        nodes = sorted({n for _, n in plan.placements})
        log.info("root=%s result=Scheduled pods=%d nodes=%s attempts=%d duration_ms=%.1f", tree.key,
                 len(plan.placements), ",".join(nodes), plan.attempts, (time.perf_counter() - started) * 1000)
        groups = self.cycle.group_uids(plan)
        cycle = self.binder.start(BindingCycle(
            plan, attempt.token, attempt.snapshot,
            precheck=lambda pod, node: self.cycle.target_problem(plan, pod, node, groups)))
        self.reporter.scheduled(tree.key)
        self._binding.add(tree.key)
        self.reservations.placed(tree)
        self.spawn(self.bind(attempt, started, cycle), f"bind/{tree.key}")

    def on_preemption(self, attempt: Attempt, preemption: Preemption) -> None:
        delay = self.queue.backoff(attempt.tree, asyncio.get_running_loop().time(), preemption.rejectors)
        self._preempting(attempt.tree, preemption, (time.perf_counter() - self._started) * 1000, delay)

    def on_unschedulable(self, attempt: Attempt, failure: Unschedulable) -> None:
        tree, now = attempt.tree, asyncio.get_running_loop().time()
        delay = self.queue.backoff(tree, now, failure.rejectors, unschedulable=True)
        if failure.not_ready:  # not tried: reported as Waiting, after the delay, by the reporter (which logs it)
            log.debug("root=%s pods not ready for scheduling: %s", tree.key, failure.message)
            self.reporter.root_not_ready(tree, failure)
            return
        retry = "event" if self.queue.backing_off[tree.key].parked else "backoff"
        log.info("root=%s result=Unschedulable code=%s attempts=%d duration_ms=%.1f backoff_s=%.0f retry=%s reason=%r",
                 tree.key, failure.code.value, failure.attempts, (time.perf_counter() - self._started) * 1000, delay,
                 retry, failure.message)
        self.reporter.unschedulable(tree, failure)
        self.reservations.unschedulable(attempt, now)

    # -- preemption; acting is scheduler.live.preemptor's, reservations scheduler.live.reservations' ----
    def _preempting(self, tree: GroupTree, result: Preemption, elapsed_ms: float, delay: float) -> None:
        """A root preempts (or waits for its victims): nominate and evict in the background, report, back off.
        Logged with what was chosen (``victims=``, ``units=``, …), or, waiting, with the victims still awaited
        (``awaiting=`` their count, ``victims=`` those of the root's namespace by name, the others counted)."""
        self.reservations.failed(tree, asyncio.get_running_loop().time())
        nodes = ",".join(sorted({n for _, n in result.nominations}))
        if result.waiting:
            awaited = named_within([(k, k) for k in result.awaited], tree.key.namespace, LOGGED_VICTIMS)
            log.info("root=%s result=WaitingForVictims awaiting=%d victims=%r nodes=%s duration_ms=%.1f "
                     "backoff_s=%.0f", tree.key, len(result.awaited), awaited, nodes, elapsed_ms, delay)
        else:
            self.preemptor.start(tree, result)
            log.info("root=%s result=Preempting victims=%d units=%d reprieved=%d pdb_violations=%d nodes=%s "
                     "duration_ms=%.1f backoff_s=%.0f", tree.key, len(result.victims), result.units,
                     result.reprieved, result.pdb_violations, nodes, elapsed_ms, delay)
        self.reporter.unschedulable(tree, result.failure.with_postfilter(result.message))

    async def bind(self, attempt: Attempt, started: float, cycle: BindingCycle) -> None:
        """Run the plan's binding cycle (started at decision time); on success mark its groups scheduled, on
        failure requeue the root; then write the bound pods' ``Scheduled`` Events (reports: API errors are
        logged, never raised).

        Guarded: an unexpected error forgets the members not bound and requeues the root instead of
        leaking their assumptions (capacity and devices held forever) and losing the root. Members
        already bound are never forgotten — the server has them, and forgetting them would free room
        another plan would then take twice.
        """
        plan = attempt.plan
        assert plan is not None
        outcome = cycle.outcome
        try:
            result = await self.binder.commit(cycle)
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
        if result.bound:  # the Scheduled Events, in this task: after the bind, outside its slot
            await self.status.pods_scheduled(result.bound)

    def _finish(self, attempt: Attempt, result: BindResult, outcome: BindOutcome, started: float) -> None:
        """The one place a plan ends: settle the cache, record, report, and requeue a failed root."""
        tree, plan = attempt.tree, attempt.plan
        assert plan is not None
        self.cycle.settle(attempt, result)
        self._binding.discard(tree.key)
        self.repair.observe(tree.key, self.cache.tree(tree.key), asyncio.get_running_loop().time())
        if result.bound:
            self.conditions.bound(tree.key)  # the groups it satisfied show True now, from the cache
        else:
            self.conditions.observe(tree.key)
        self.metrics.bound(tree, plan, outcome, time.perf_counter() - started,
                           root=self.cache.group(tree.key.kind, tree.key.namespace, tree.key.name))
        self.preemptor.settled(plan, result.bound)
        if result.ok:
            self.queue.scheduled(tree.key)  # its backoff starts over, unless it was decided again since the plan
            return
        # The plan's assumptions — pods, devices, volume decisions — are given back without a watch event: what waits
        # for room is tried again (as kube-scheduler moves its unschedulable pods when an assumed pod is forgotten).
        self.queue.activate(self.queue.parked(), asyncio.get_running_loop().time())
        message = result.failure.message if result.failure is not None else "the plan's binder failed"
        log.warning("root=%s result=BindFailed %s", tree.key, message)
        self.reporter.pods(tree, "SchedulerError", message, frozenset(result.forget))
        current = self.cache.tree(tree.key) or tree
        self.queue.backoff(current, asyncio.get_running_loop().time())
        self.wake.set()

    async def shutdown(self) -> None:
        """Stop scheduling, let binds finish within the grace period, release the lease, stop informers; logged at
        its start and its end."""
        self.reporter.close()  # the reports still waiting for their delay are not written
        binds = [t for t in self.tasks if t.get_name().startswith(("bind/", "status/", "preempt/"))]
        log.info("stopping: %d bind, status and preemption task(s) get %.0f s to finish", len(binds),
                 SHUTDOWN_GRACE_S)
        if binds:
            _, pending = await asyncio.wait(binds, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                task.cancel()
            if pending:
                log.warning("abandoned %d bind, status and preemption task(s) at shutdown", len(pending))
        if self.elector is not None:
            await self.elector.release()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        log.info("stopped")
