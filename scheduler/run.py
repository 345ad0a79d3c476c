"""The live scheduler: informers → cache → queue → solver → binder, one cycle at a time.

``Scheduler.run(stop)`` does, in order (design §2, §6–§8):

1. serve ``/healthz``, ``/readyz`` and ``/metrics`` (``scheduler.metrics``);
2. discover the APIs — without ``scheduling.k8s.io/v1beta1`` podgroups it logs one line naming
   the API and the feature gate, reports not-ready and retries instead of crashing;
3. start one informer per resource and wait for the caches to sync;
4. run leader election (if enabled) — only the leader schedules, and losing the lease stops
   popping at once;
5. loop: rebuild the trees when the cache moved, sync the queue, re-activate roots on events
   that can help, then pop roots one at a time: solve → on success *assume* the plan and hand
   it to the binder (a guarded background task, so binding overlaps the next cycles) → on
   failure write the reason (PodGroup condition, pod events) and back the root off.

On ``stop`` (SIGTERM): stop popping, let in-flight binds finish within a grace period, release
the lease, stop informers and the health server.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from scheduler.binder import Binder, BindOutcome, ClaimOutcome, ClaimWrite, claim_writes
from scheduler.cache import Changes, ClusterCache
from scheduler.config import Settings
from scheduler.dra.view import DraView
from scheduler.groups.tree import GroupKey, GroupTree, TreeState
from scheduler.health import HealthServer
from scheduler.informers import Informer
from scheduler.kube import (
    COMPOSITES,
    DEVICE_CLASSES,
    DRA_RESOURCES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ApiError,
    KubeClient,
)
from scheduler.leader import LeaderElector
from scheduler.metrics import Metrics
from scheduler.queue import SchedulingQueue
from scheduler.solver.plan import Plan, Unschedulable
from scheduler.solver.search import solve
from scheduler.solver.snapshot import Snapshot
from scheduler.status import StatusWriter

log = logging.getLogger(__name__)

DISCOVERY_RETRY_S = 10.0
"""Pause between API discovery attempts while the PodGroup API is missing, seconds."""
SHUTDOWN_GRACE_S = 10.0
"""How long in-flight binds may finish after SIGTERM, seconds (well inside a pod's 30 s grace)."""

REQUIRED = (PODGROUPS, "GenericWorkload (and --runtime-config=scheduling.k8s.io/v1beta1=true)")
OPTIONAL = (COMPOSITES, "CompositePodGroup (and --runtime-config=scheduling.k8s.io/v1alpha3=true)")


class Scheduler:
    """One scheduler process. ``identity`` names it in the Lease and in events."""

    def __init__(self, settings: Settings, kube: KubeClient, *, identity: str | None = None) -> None:
        self.settings = settings
        self.kube = kube
        self.identity = identity or f"{socket.gethostname()}-{id(self):x}"
        self.cache = ClusterCache(dra=True)  # without the DRA API no claim exists: pods that name one wait
        self._plan_ids = itertools.count(1)
        self.queue = SchedulingQueue(settings.backoff_initial_s, settings.backoff_max_s)
        self.binder = Binder(kube, concurrency=settings.bind_concurrency, fence=lambda: self.leading)
        self.status = StatusWriter(kube, settings.scheduler_name, instance=self.identity,
                                   event_interval_s=settings.event_interval_s)
        self.elector = (LeaderElector(kube, settings.lease_namespace, settings.lease_name, self.identity,
                                      lease_duration_s=settings.lease_duration_s,
                                      renew_deadline_s=settings.renew_deadline_s,
                                      retry_period_s=settings.retry_period_s)
                        if settings.leader_elect else None)
        self.informers: list[Informer] = []
        self.wake = asyncio.Event()
        self.changes = Changes()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.api_problem: str | None = "API discovery has not run yet"
        self._seen_version = -1
        self._reported: dict[GroupKey, str] = {}
        self.cycles = 0
        # -- metrics (scheduler.metrics): recorded here, the solver stays pure --------------
        self.metrics = Metrics(settings.scheduler_name)
        self.metrics.track_leader(lambda: self.leading)
        self.health_port: int | None = None
        """The port /healthz, /readyz and /metrics are served on, once started (``--bind-address`` may say 0)."""
        self._blocked: list[GroupTree] = []
        """Waiting and Invalid trees of the last refresh, for the queue gauges."""
        self._incomplete = 0
        """Pods of ours waiting for their PodGroup to appear, at the last refresh."""

    # -- health --------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """Ready = APIs served, caches synced and leader state known (design §8)."""
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

    def on_change(self, changes: Changes) -> None:
        """Informer callback: remember what changed and wake the loop."""
        if changes:
            self.changes.merge(changes)
            self.wake.set()

    # -- startup -------------------------------------------------------------------
    async def discover(self, stop: asyncio.Event) -> bool:
        """Wait until the PodGroup API is served; returns False if stopped first."""
        logged = False
        while not stop.is_set():
            try:
                served = await self.kube.served(PODGROUPS.group_version)
            except ApiError as exc:
                served, reason = set(), f"API discovery failed: {exc}"
            else:
                reason = (f"API {PODGROUPS.group_version} {PODGROUPS.plural} is not served: enable the feature "
                          f"gate {REQUIRED[1]}")
            if PODGROUPS.plural in served:
                self.api_problem = None
                return True
            self.api_problem = reason
            if not logged:
                log.error("%s; not ready, retrying every %.0f s", reason, DISCOVERY_RETRY_S)
                logged = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), DISCOVERY_RETRY_S)
        return False

    async def start_informers(self) -> None:
        resources = [PODS, NODES, PODGROUPS, PRIORITY_CLASSES]
        try:
            if COMPOSITES.plural in await self.kube.served(COMPOSITES.group_version):
                resources.append(COMPOSITES)
            else:
                log.warning("API %s %s is not served (feature gate %s): trees are single PodGroups",
                            COMPOSITES.group_version, COMPOSITES.plural, OPTIONAL[1])
        except ApiError as exc:
            log.warning("could not discover %s: %s", COMPOSITES.group_version, exc)
        dra_api = RESOURCE_CLAIMS.group_version
        try:
            served = await self.kube.served(dra_api)
        except ApiError as exc:
            log.warning("could not discover %s: %s; pods with ResourceClaims wait", dra_api, exc)
        else:
            missing = [r.plural for r in DRA_RESOURCES if r.plural not in served]
            if missing:
                log.warning("API %s %s is not served: pods with ResourceClaims wait, extended resources are not "
                            "served through DRA", dra_api, ", ".join(missing))
            else:
                resources += [RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES]
        for res in resources:
            informer = Informer(self.kube, res, self.cache, self.on_change)
            self.informers.append(informer)
            self.metrics.track_informer(res.plural, informer)
            self.spawn(informer.run(), f"informer/{res.plural}")
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        log.info("caches synced: %d nodes, %d pods, %d podgroups", len(self.cache.objects["Node"]),
                 len(self.cache.objects["Pod"]), len(self.cache.objects["PodGroup"]))

    # -- main loop -----------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; see the module docstring."""
        s = self.settings
        log.info("starting %s as %s: %s", s.scheduler_name, self.identity,
                 s.model_dump_json(exclude={"kubeconfig"}))
        host, _, port = s.bind_address.rpartition(":")
        health = HealthServer(host or "0.0.0.0", int(port), self.ready)
        health.add_route("GET", "/metrics", self.metrics.handler())
        await health.start()
        self.health_port = health.port
        try:
            if not await self.discover(stop):
                return
            await self.start_informers()
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
            self._seen_version = -1  # a new leader starts from the cache, not from a stale queue
            self.wake.set()
            await self.elector.wait_until_not_leading()
            log.warning("not leading: scheduling stopped")
            self.metrics.clear_queues()  # a follower's queue is not scheduled: report it empty

    async def _loop(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            wakeup = self.queue.next_wakeup() if self.leading else None  # a follower waits for a wake-up
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
                await self.cycle(stop)

    async def cycle(self, stop: asyncio.Event) -> None:
        """Pop and schedule ready roots until none is ready (yielding to the loop between roots)."""
        loop = asyncio.get_running_loop()
        changes, self.changes = self.changes, Changes()
        snapshot: Snapshot | None = None
        snap_version = -1
        if self.cache.version != self._seen_version:
            self._refresh(changes, loop.time())
        while not stop.is_set() and self.leading:
            tree = self.queue.pop(loop.time())
            if tree is None:
                break
            if snapshot is None or snap_version != self.cache.version:
                snapshot = self.cache.snapshot()
            snapshot = self.schedule_one(tree, snapshot)
            snap_version = self.cache.version
            self.cycles += 1
            await asyncio.sleep(0)
            if self.cache.version != snap_version:  # watch events arrived meanwhile
                self._refresh(self.changes, loop.time())
                self.changes = Changes()
        self._record_queues()

    def _record_queues(self) -> None:
        """Set the pending-pods / queued-entities gauges from the queue and the last refresh."""
        self.metrics.set_queues(self.queue.ready.trees(), [t for _, t in self.queue.backing_off.values()],
                                self._blocked, self._incomplete)

    def _refresh(self, changes: Changes, now: float) -> None:
        """Rebuild trees from the cache, sync the queue, re-activate roots, report waiting/invalid ones."""
        self._seen_version = self.cache.version
        forest = self.cache.forest(self.settings.scheduler_name)
        allowed = set(self.settings.namespaces)
        trees = [t for t in forest.trees if not allowed or t.key.namespace in allowed]
        self.queue.sync([t for t in trees if t.state is TreeState.READY], now)
        self._blocked = [t for t in trees if t.state in (TreeState.WAITING, TreeState.INVALID)]
        live = {t.key for t in trees}
        for key in [k for k in self._reported if k not in live]:  # roots that are gone: forget their message
            del self._reported[key]
        self._incomplete = sum(1 for o in forest.orphans if not allowed or o.pod.metadata.namespace in allowed)
        if changes.capacity:
            self.queue.activate(None, now)
        elif changes.groups:
            touched = [t.key for t in trees
                       if any((k.namespace, k.name) in changes.groups for k in t.groups)
                       or any((p.metadata.namespace, p.group_name) in changes.groups for p in t.pods())]
            self.queue.activate(touched, now)
        for tree in trees:
            if tree.state in (TreeState.WAITING, TreeState.INVALID):
                self._report_blocked(tree)
        for orphan in forest.orphans:
            if not allowed or orphan.pod.metadata.namespace in allowed:
                self.spawn(self.status.pod_unschedulable(orphan.pod, "Unschedulable", orphan.message),
                           f"status/{orphan.pod.key}")

    def _report_blocked(self, tree: GroupTree) -> None:
        if self._reported.get(tree.key) == tree.message:
            return
        self._reported[tree.key] = tree.message
        log.info("root=%s result=%s reason=%r", tree.key, tree.state.value, tree.message)
        reason = "Unschedulable" if tree.state is TreeState.WAITING else "SchedulerError"
        self._write_groups(tree, False, reason, tree.message)
        for pod in tree.pods():  # Waiting pods too (issue 9): FailedScheduling + PodScheduled=False/Unschedulable
            if not pod.is_bound:
                self.spawn(self.status.pod_unschedulable(pod, reason, tree.message), f"status/{pod.key}")

    def _write_groups(self, tree: GroupTree, scheduled: bool, reason: str, message: str,
                      only: frozenset[GroupKey] | None = None, per_group: Mapping[GroupKey, str] | None = None
                      ) -> None:
        """Set the InitiallyScheduled condition on the tree's groups (``only`` those, if given); a group
        other than the root gets its own message from ``per_group`` when there is one."""
        for key in tree.groups:
            if key.kind == "Pod" or (only is not None and key not in only):
                continue
            obj = self.cache.group(key.kind, key.namespace, key.name)
            if obj is not None:
                group_reason = "Invalid" if reason == "SchedulerError" and key.kind == "CompositePodGroup" else reason
                text = message if key == tree.key or per_group is None else per_group.get(key, message)
                self.spawn(self.status.group_condition(obj, scheduled, group_reason, text), f"status/{key}")

    def schedule_one(self, tree: GroupTree, snapshot: Snapshot) -> Snapshot:
        """Solve one root; assume and bind a plan, or report and back off. Returns the snapshot after it."""
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        result = solve(tree, snapshot, self.settings.solver())
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.metrics.solved(tree, result, elapsed_ms / 1000)
        if isinstance(result, Plan):
            nodes = sorted({n for _, n in result.placements})
            log.info("root=%s result=Scheduled pods=%d nodes=%s attempts=%d duration_ms=%.1f", tree.key,
                     len(result.placements), ",".join(nodes), result.attempts, elapsed_ms)
            self.cache.assume(result.placements)
            writes: list[ClaimWrite] = []
            token: str | None = None
            if snapshot.dra is not None:
                writes = self._claim_writes(result, snapshot.dra)
                if result.allocations:
                    token = f"{tree.key}#{next(self._plan_ids)}"
                    self.cache.assume_devices(token, result.allocations)
            self.queue.done(tree.key)
            self._reported.pop(tree.key, None)
            self.spawn(self.bind(tree, result, started, writes, token), f"bind/{tree.key}")
            return snapshot.assume(result.placements, result.device_ids)
        assert isinstance(result, Unschedulable)
        delay = self.queue.backoff(tree, loop.time())
        log.info("root=%s result=Unschedulable code=%s attempts=%d duration_ms=%.1f backoff_s=%.0f reason=%r",
                 tree.key, result.code.value, result.attempts, elapsed_ms, delay, result.message)
        self._report_unschedulable(tree, result)
        return snapshot

    def _report_unschedulable(self, tree: GroupTree, result: Unschedulable) -> None:
        if self._reported.get(tree.key) != result.message:
            self._reported[tree.key] = result.message
            self._write_groups(tree, False, "Unschedulable", result.message, per_group=result.group_reasons)
        for leaf in tree.root.leaves():
            for pod in leaf.pending:
                self.spawn(self.status.pod_unschedulable(pod, "Unschedulable", result.message), f"status/{pod.key}")

    def _claim_writes(self, plan: Plan, dra: DraView) -> list[ClaimWrite]:
        """The plan's claim writes (DRA), from the cache as the plan saw it (no await since the solve)."""
        cache = self.cache
        uids: dict[tuple[str, str], str] = {}
        for a in plan.allocations:
            ns = a.claim.partition("/")[0]
            for kind, name, _ in a.reserved_for:
                group = cache.group("PodGroup", ns, name) if kind == "PodGroup" else None
                if group is not None:
                    uids[(ns, name)] = group.metadata.uid
        pinned = {p.key: dra.pods[p.key].pinned for p, _ in plan.placements if p.key in dra.pods}
        served: dict[str, str] = {}
        resources: tuple[str, ...] = ()
        if any(a.synthetic for a in plan.allocations):
            index = cache.claim_index()
            served, resources = index.extended_classes(), tuple(index.node_resources)
        return claim_writes(plan, cache.objects["ResourceClaim"], cache.objects["DeviceClass"], uids, pinned=pinned,
                            served=served, node_resources=resources)

    async def bind(self, tree: GroupTree, plan: Plan, started: float, writes: Sequence[ClaimWrite] = (),
                   token: str | None = None) -> None:
        """:meth:`_bind`, guarded: an unexpected error forgets the plan and requeues the root instead of
        leaking its assumptions (capacity and devices held forever) and losing the root."""
        try:
            await self._bind(tree, plan, started, writes, token)
        except Exception:
            log.exception("root=%s result=BindError: plan forgotten and requeued", tree.key)
            self.cache.forget([p.key for p, _ in plan.placements])
            if token is not None:
                self.cache.forget_devices(token)
            self.queue.backoff(tree, asyncio.get_running_loop().time())
            self._seen_version = -1
            self.wake.set()

    async def _bind(self, tree: GroupTree, plan: Plan, started: float, writes: Sequence[ClaimWrite] = (),
                    token: str | None = None) -> None:
        """Write the plan's claims, then bind it; on success mark the groups scheduled, on failure forget
        the rest and requeue.

        ``started``: ``time.perf_counter()`` when the plan's solve began (attempt latency metrics).
        ``writes``: the plan's claim writes (DRA), all made before the first bind; ``token``: the plan's
        device assumption in the cache.
        """
        loop = asyncio.get_running_loop()
        claims: ClaimOutcome | None = None
        if writes:
            claims = await self.binder.write_claims(writes)
            if not claims.ok:
                self._claims_failed(tree, plan, claims, token, started)
                return
        outcome = await self.binder.bind_plan(plan.placements)
        self.metrics.bound(tree, plan, outcome, time.perf_counter() - started,
                           root=self.cache.group(tree.key.kind, tree.key.namespace, tree.key.name))
        for pod, node in outcome.bound:
            self.spawn(self.status.pod_scheduled(pod, node), f"status/{pod.key}")
        if outcome.ok:
            self._write_groups(tree, True, "Scheduled", "", only=plan.satisfied)
            return
        bound = {p.key for p, _ in outcome.bound}
        self.cache.forget([p.key for p, _ in plan.placements if p.key not in bound])
        if claims is not None:
            await self._release_unbound(plan, claims, bound, token)
        assert outcome.failed is not None
        failed_key, error = outcome.failed
        message = (f"binding {failed_key} failed: {error}; {len(bound)}/{len(plan.placements)} members bound, "
                   f"the rest forgotten and the group requeued")
        log.warning("root=%s result=BindFailed %s", tree.key, message)
        for pod, _ in plan.placements:
            if pod.key not in bound:
                self.spawn(self.status.pod_unschedulable(pod, "SchedulerError", message), f"status/{pod.key}")
        self.queue.backoff(tree, loop.time())
        self._seen_version = -1
        self.wake.set()

    def _claims_failed(self, tree: GroupTree, plan: Plan, claims: ClaimOutcome, token: str | None,
                       started: float) -> None:
        """A claim write failed (rolled back by the binder): no member was bound; forget the plan, requeue."""
        assert claims.failed is not None
        loop = asyncio.get_running_loop()
        failed_key, error = claims.failed
        pods = [p.key for p, _ in plan.placements]
        self.metrics.bound(tree, plan, BindOutcome(failed=claims.failed, skipped=pods), time.perf_counter() - started,
                           root=self.cache.group(tree.key.kind, tree.key.namespace, tree.key.name))
        self.cache.forget(pods)
        kept = {r.write.claim for r in claims.written if r.key in claims.not_released}
        if token is not None:
            self.cache.forget_devices(token, [a.claim for a in plan.allocations if a.claim not in kept])
        rolled_back = sum(1 for r in claims.written
                          if (r.created or r.status_written) and r.key not in claims.not_released)
        message = (f"writing ResourceClaim {failed_key} failed: {error}; no member bound, {rolled_back} claim "
                   f"write(s) rolled back, the group requeued")
        if claims.not_released:
            message += f" (could not roll back {', '.join(claims.not_released)})"
        log.warning("root=%s result=ClaimWriteFailed %s", tree.key, message)
        for pod, _ in plan.placements:
            self.spawn(self.status.pod_unschedulable(pod, "SchedulerError", message), f"status/{pod.key}")
        self.queue.backoff(tree, loop.time())
        self._seen_version = -1
        self.wake.set()

    async def _release_unbound(self, plan: Plan, claims: ClaimOutcome, bound: set[str], token: str | None) -> None:
        """After a failed bind, roll back the claims written only for members that were not bound (all of
        them if none was: a PodGroup claim too), so the next plan may choose other devices."""
        unbound = {p.metadata.uid for p, _ in plan.placements if p.key not in bound}
        release = [r for r in claims.written
                   if not bound or (r.write.reserve and all(c.get("uid") in unbound for c in r.write.reserve))]
        if not release:
            return
        not_released = set(await self.binder.release_claims(release))
        log.info("released %d claim(s) of unbound members: %s", len(release) - len(not_released),
                 ", ".join(r.key for r in release if r.key not in not_released))
        if token is not None:
            self.cache.forget_devices(token, [r.write.claim for r in release if r.key not in not_released])

    async def shutdown(self) -> None:
        """Stop scheduling, let binds finish within the grace period, release the lease, stop informers."""
        binds = [t for t in self.tasks if t.get_name().startswith(("bind/", "status/"))]
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
