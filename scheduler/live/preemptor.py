"""Acting on preemption decisions in a live cluster: nominations, DisruptionTarget, deletes, Events.

The cycle decides (``scheduler.preemption``); this module acts, off the bind path and off the
scheduling loop, in one guarded background task per preemption (``preempt/<root>``). In order, as
kube-scheduler's executor does (``pkg/scheduler/framework/preemption/executor.go``, v1.37):

1. **Nominations first, in memory at once.** Before the task starts, the cache shows the
   preemptor's pods nominated to their planned nodes (:meth:`ClusterCache.nominate`), so from this
   cycle on the room the victims free is held for the root against every root of lower or equal
   priority (the one held-room mechanism, :class:`~scheduler.framework.snapshot.Nominated`); the
   task then writes ``status.nominatedNodeName`` on each pod (``pods/status``), the durable form.
2. **Each victim**, concurrently (at most :data:`CONCURRENCY`): skipped if already terminating;
   ``DisruptionTarget=True`` (reason ``PreemptionByScheduler``) on its status — 404 means it is gone
   already, and nothing more is done for it; then ``DELETE`` with a uid precondition (a pod recreated
   under the same name is not touched; upstream sends no precondition) and no grace-period override
   (its own ``terminationGracePeriodSeconds`` applies); then a ``Preempted`` Event naming the preemptor.
3. **Victim groups**: ``DisruptionTarget`` on every group the preemption evicts as a whole — each
   ``disruptionMode: all`` unit, and each PodGroup all of whose running members are victims; a group that only
   loses some members keeps running and gets none (its evicted pods have theirs).
4. **The preemptor's group** gets a ``Preempting`` Event naming the victims.

While the victims terminate, :meth:`Preemptor.awaiting` tells the PostFilter this root waits (no
second preemption). The root binds in a later cycle once the watch shows the room free. Nominations
are cleared when the root binds (kube-apiserver does it on Binding with
``ClearingNominatedNodeNameAfterBinding``; we clear what is still shown, for servers without it),
when a plan leaves the pod pending, when the root no longer needs them (it fails without
preempting), and vanish with the pod when it is deleted. Nothing is rolled back: victims deleted for
a preemptor that is deleted meanwhile stay deleted, as upstream.

:class:`TimedPreemption` wraps the pure PostFilter plugin to time it and record its metrics.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Iterable, Sequence
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import PODS, ApiError, Conflict, KubeClient, Lane, NotFound, NotLeading
from scheduler.framework.events import ClusterEvent
from scheduler.framework.plan import Decision, Plan, Preemption, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.groups.tree import GroupTree
from scheduler.live.event_recorder import Regarding
from scheduler.live.metrics import EvictionResult, Metrics
from scheduler.live.status_writer import StatusWriter
from scheduler.model.pod import REASON_PREEMPTION_BY_SCHEDULER, Pod
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption

log = logging.getLogger(__name__)

CONCURRENCY = 16
"""Victims acted on at once (kube-scheduler's preemption parallelism, ``prepareCandidate``)."""

DELETE_ATTEMPTS = 3
"""DELETEs of one victim answered 409 while a fresh read shows the same pod (same uid, not terminating) before
it counts as an error: a 409 on a uid-preconditioned DELETE normally means the pod was replaced, but the
server may answer one for a write that raced ours."""

DEFAULT_GRACE_S = 30
"""A pod's ``terminationGracePeriodSeconds`` when it sets none (the API's default)."""

VICTIM_WAIT_MARGIN_S = 30.0
"""How long past its victims' longest grace period a root waits for them before it plans again (seconds):
room for the kubelet to confirm and the watch to show the deletion. A victim that outlives it (a stuck
finalizer, a DELETE that never took effect) no longer holds the root: the next cycle decides afresh."""

REASON_GANG_TORN_DOWN = "GangTornDown"
"""``DisruptionTarget`` reason on the members of a partial gang torn down after the repair timeout (ours)."""

DISRUPTION_MESSAGE = "{scheduler}: preempting to accommodate a higher priority {kind}"
"""``DisruptionTarget`` message (``executor.go`` v1.37: ``"<schedulerName>: preempting to accommodate a
higher priority podgroup"``); ``kind`` is ``podgroup``, ``compositepodgroup`` or ``pod``."""


class TimedPreemption:
    """The PostFilter plugin as the live cycle runs it: :class:`DefaultPreemption`, timed, its outcome recorded
    in ``metrics`` (``scheduler_podgroup_preemption_*``). The plugin stays pure; the clock is here."""

    def __init__(self, plugin: DefaultPreemption, metrics: Metrics) -> None:
        self.plugin = plugin
        self.metrics = metrics
        self.name = plugin.name

    def post_filter(self, tree: GroupTree, snapshot: Snapshot, result: Unschedulable,
                    config: SolverConfig) -> Decision | None:
        started = time.perf_counter()
        outcome, decision = self.plugin.evaluate(tree, snapshot, result, config)
        self.metrics.preemption_attempt(outcome.value, time.perf_counter() - started,
                                        decision if isinstance(decision, Preemption) else None)
        return decision


class Preemptor:
    """See the module docstring.

    ``spawn``: the driver's guarded task starter; ``fence``: whether this replica may still write (it
    leads); ``scheduler_name``: ours, in the DisruptionTarget message; ``on_change``: told the cluster events of
    the nominations it shows or withdraws in memory (the driver routes them to the queueing hints).
    """

    def __init__(self, kube: KubeClient, cache: ClusterCache, status: StatusWriter, metrics: Metrics,
                 scheduler_name: str, spawn: Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]],
                 fence: Callable[[], bool] = lambda: True,
                 on_change: Callable[[list[ClusterEvent]], None] = lambda events: None) -> None:
        self.kube = kube
        self.cache = cache
        self.on_change = on_change
        self.status = status
        self.metrics = metrics
        self.scheduler_name = scheduler_name
        self.spawn = spawn
        self.fence = fence
        self._victims: dict[GroupKey, dict[str, str]] = {}
        """Root → its victims still to go: pod key → uid."""
        self._deadline: dict[GroupKey, float] = {}
        """Root → loop time after which it stops waiting for its victims (:data:`VICTIM_WAIT_MARGIN_S`)."""

    # -- what the PostFilter asks -------------------------------------------------------------------
    def awaiting(self, root: GroupKey) -> tuple[str, ...]:
        """The victims chosen for ``root`` still in the cluster (the same pod, by uid), by key, sorted; empty once
        they are gone, or once the root has waited for them longer than their grace period plus
        :data:`VICTIM_WAIT_MARGIN_S`.

        Past that deadline this memory no longer holds the root, and the PostFilter decides afresh: it still waits,
        as kube-scheduler does, while victims terminating by preemption run on the nodes the root's pods are
        nominated to (``PodTerminatingByPreemption``; KEP-5710 starts no new preemption while victims terminate) —
        the kubelet has not confirmed their deletion (a node down, a finalizer no one removes); for the others (a
        DELETE that did not take effect, a victim elsewhere) it no longer waits, and may preempt again. Logged once
        at the deadline (:meth:`_overdue`)."""
        victims = self._victims.get(root)
        if not victims:
            return ()
        still = {key: uid for key, uid in victims.items() if self._still_there(key, uid) is not None}
        deadline = self._deadline.get(root)
        if still and deadline is not None and asyncio.get_running_loop().time() > deadline:
            self._overdue(root, sorted(still))
            still = {}
        if still:
            self._victims[root] = still
            return tuple(sorted(still))
        self.forget(root)
        return ()

    def evicting(self, groups: Collection[GroupKey]) -> bool:
        """Whether a victim of a preemption in progress (chosen, still running in the cluster as the same pod: its
        deletion not yet taken) is a member of one of ``groups`` (a tree's group keys): such a tree loses members by our
        own eviction, so until each is terminating — which changes the tree, and has it judged again — it is not
        reported as a partial gang (gang repair, ``GangBelowMin``). O(victims in flight)."""
        if not self._victims:
            return False
        for victims in self._victims.values():
            for key, uid in victims.items():
                pod = self._still_there(key, uid)
                if (pod is not None and not pod.is_terminating and pod.group_name is not None
                        and GroupKey("PodGroup", pod.metadata.namespace, pod.group_name) in groups):
                    return True
        return False

    def _still_there(self, key: str, uid: str) -> Pod | None:
        """Victim ``key`` (chosen as the pod of ``uid``) as the cache has it, when it is still that pod; else None."""
        pod = self.cache.pod(key)
        return pod if pod is not None and (pod.metadata.uid or key) == uid else None

    def _overdue(self, root: GroupKey, victims: Sequence[str]) -> None:
        """Log what becomes of ``root``, whose ``victims`` (keys) are still there past their grace period plus the
        margin: it waits for those terminating by preemption on its nominated nodes (the PostFilter's rule); the
        others no longer hold it."""
        tree = self.cache.tree(root)
        nominated = {node for leaf in (tree.root.leaves() if tree is not None else ())
                     for p in leaf.pending if (node := self.cache.nominated_node(p.key))}
        held: dict[str, str] = {}
        for key in victims:
            pod = self.cache.pod(key)
            if pod is not None and pod.terminating_by_preemption and pod.spec.node_name in nominated:
                held[key] = pod.spec.node_name
        rest = [key for key in victims if key not in held]
        if held:
            log.warning("%s: victims %s still terminating past their grace period; waiting for them, as no new "
                        "preemption starts while victims terminate on the nominated nodes (check the kubelet on %s "
                        "and the pods' finalizers)", root, ", ".join(held), ", ".join(sorted(set(held.values()))))
        if rest:
            log.warning("%s: victims %s still there past their grace period, not terminating on a nominated node; "
                        "%s", root, ", ".join(rest), "no longer waiting for them" if held else "planning again")

    def _wait_for(self, root: GroupKey, victims: Sequence[Pod]) -> None:
        """Wait for ``victims`` on behalf of ``root``, until their longest grace period plus the margin."""
        self._victims[root] = {p.key: p.metadata.uid or p.key for p in victims}
        grace = max((DEFAULT_GRACE_S if p.spec.termination_grace_period_seconds is None
                     else p.spec.termination_grace_period_seconds for p in victims), default=0)
        self._deadline[root] = asyncio.get_running_loop().time() + grace + VICTIM_WAIT_MARGIN_S

    # -- what the driver calls ----------------------------------------------------------------------
    def start(self, tree: GroupTree, decision: Preemption) -> None:
        """Act on ``decision`` (not a waiting one): nominate in memory now, then write everything in the
        background (see the module docstring)."""
        nominations = [(pod.key, node) for pod, node in decision.nominations]
        self._nominating(nominations)
        self.on_change(self.cache.nominate(nominations))
        self._wait_for(tree.key, decision.victims)
        self.spawn(self._actuate(tree, decision), f"preempt/{tree.key}")

    def reserve(self, tree: GroupTree, plan: Plan) -> tuple[tuple[str, str], ...]:
        """Hold the nodes of ``plan`` for a starving root without evicting anything: its pods are nominated
        there (memory now, the API in the background). Returns the nominations."""
        nominations = tuple((pod.key, node) for pod, node in plan.placements)
        self._nominating(nominations)
        self.on_change(self.cache.nominate(nominations))
        self.spawn(self._write_nominations(nominations), f"status/nominate/{tree.key}")
        return nominations

    def release(self, pod_keys: Iterable[str]) -> None:
        """The pods no longer need the room they are nominated to: clear it in memory now, on the API soon."""
        cleared = [(key, None) for key in pod_keys if self.cache.nominated_node(key)]
        if not cleared:
            return
        api = [(key, None) for key, _ in cleared if (pod := self.cache.pod(key)) is not None
               and pod.status.nominated_node_name]
        self._nominating(api)
        self.on_change(self.cache.nominate(cleared))
        if api:
            self.spawn(self._write_nominations(api), f"status/nominate/{api[0][0]}")

    def release_tree(self, tree: GroupTree) -> None:
        """:meth:`release` for every pending pod of ``tree`` (it failed without preempting)."""
        self.release(p.key for leaf in tree.root.leaves() for p in leaf.pending)

    def settled(self, plan: Plan, bound: Iterable[tuple[Pod, str]]) -> None:
        """A plan's binds ended: clear the nominations still shown on its bound pods (servers without
        ``ClearingNominatedNodeNameAfterBinding``) and on the members it left pending."""
        done = [pod.key for pod, _ in bound]
        shown = [(key, None) for key in done if (pod := self.cache.pod(key)) is not None
                 and pod.status.nominated_node_name]
        if shown:
            self._nominating(shown)
            self.spawn(self._write_nominations(shown), f"status/nominate/{shown[0][0]}")
        self.release(plan.unplaced)

    def tear_down(self, root: GroupKey, unit: Regarding | None, victims: Sequence[Pod], message: str,
                  on_failed: Callable[[], None] = lambda: None) -> None:
        """Evict a partial gang's bound members (gang repair, ``disruptionMode: all``) the way victims
        are evicted — DisruptionTarget (reason ``GangTornDown``), DELETE with a uid precondition — so it can be
        placed again whole. Until they are gone :meth:`awaiting` holds for ``root``, and the driver does not
        try it (its pending members would join members about to go)."""
        self._wait_for(root, victims)
        self.spawn(self._tear_down(root, unit, victims, message, on_failed), f"preempt/teardown/{root}")

    async def _tear_down(self, root: GroupKey, unit: Regarding | None, victims: Sequence[Pod], message: str,
                         on_failed: Callable[[], None]) -> None:
        gate = asyncio.Semaphore(CONCURRENCY)
        failed: list[str] = []

        async def one(victim: Pod) -> None:
            async with gate:
                result = await self._evict(victim, message, None, REASON_GANG_TORN_DOWN)
            self.metrics.evicted(result)
            if result == "error":
                failed.append(victim.key)

        try:
            await asyncio.gather(*(one(v) for v in victims))
            if unit is not None and self.fence():
                await self.status.disruption_target(unit, message, REASON_GANG_TORN_DOWN)
        finally:
            waiting = self._victims.get(root)
            if waiting is not None:
                for key in failed:
                    waiting.pop(key, None)
            if failed:
                on_failed()

    def forget(self, root: GroupKey) -> None:
        """``root`` is gone: stop waiting for its victims (their deletion, once sent, is not undone)."""
        self._victims.pop(root, None)
        self._deadline.pop(root, None)

    # -- the background work ------------------------------------------------------------------------
    async def _actuate(self, tree: GroupTree, decision: Preemption) -> None:
        """The background half of :meth:`start`. A victim whose eviction failed is no longer waited for (the root
        tries afresh next cycle, as upstream re-activates the preemptor); so is every victim if this fails."""
        failed: list[str] = []
        try:
            await self._act(tree, decision, failed)
        except BaseException:
            failed.extend(v.key for v in decision.victims)
            raise
        finally:
            waiting = self._victims.get(tree.key)
            if waiting is not None:
                for key in failed:
                    waiting.pop(key, None)

    async def _act(self, tree: GroupTree, decision: Preemption, failed: list[str]) -> None:
        preemptor = self._object(tree.key)
        await self._write_nominations([(pod.key, node) for pod, node in decision.nominations])
        kind = tree.key.kind.lower()
        message = DISRUPTION_MESSAGE.format(scheduler=self.scheduler_name, kind=kind)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(victim: Pod) -> None:
            async with gate:
                result = await self._evict(victim, message, preemptor)
            self.metrics.evicted(result)
            if result == "error":
                failed.append(victim.key)

        await asyncio.gather(*(one(v) for v in decision.victims))
        for group in self._victim_groups(decision.victims):
            if self.fence():
                await self.status.disruption_target(group, message)
        if preemptor is not None and self.fence():
            await self.status.preempting(preemptor, [(v.key, v.spec.node_name) for v in decision.victims])

    async def _evict(self, victim: Pod, message: str, preemptor: Regarding | None,
                     reason: str = REASON_PREEMPTION_BY_SCHEDULER) -> EvictionResult:
        """DisruptionTarget (``reason``), DELETE with the uid precondition, ``Preempted`` Event (when there is a
        ``preemptor``); the outcome for the metrics."""
        if not self.fence():
            return "error"
        current = self.cache.pod(victim.key)
        if current is None or current.is_terminating:
            return "gone"
        if current.metadata.uid != victim.metadata.uid:
            return "replaced"
        try:
            await self.status.disruption_target(current, message, reason)
            result = await self._delete(victim)
        except NotFound:
            return "gone"
        except NotLeading:
            return "error"  # as when not leading before it: the next leader decides afresh
        except ApiError as exc:
            log.warning("preemption victim %s not deleted: %s", victim.key, exc)
            return "error"
        if result == "deleted" and preemptor is not None:
            await self.status.preempted(current, preemptor)
        return result

    async def _delete(self, victim: Pod) -> EvictionResult:
        """DELETE ``victim`` with its uid as precondition. On 409 the pod is read again: another uid is a
        replacement (``replaced``: not ours to delete), a deletion already under way is ``gone``, the same pod
        is deleted again — up to :data:`DELETE_ATTEMPTS` times, then ``error``. Raises :class:`ApiError`
        (:class:`NotFound` when it is gone) for other failures."""
        ns, name = victim.metadata.namespace, victim.metadata.name
        for attempt in range(1, DELETE_ATTEMPTS + 1):
            try:
                await self.kube.delete(PODS, ns, name, uid=victim.metadata.uid or None, lane=Lane.URGENT)
                return "deleted"
            except Conflict as exc:
                now = await self.kube.get(PODS, ns, name, lane=Lane.URGENT)
                meta = now.get("metadata") or {}
                if meta.get("uid") != victim.metadata.uid:
                    log.info("preemption victim %s not deleted: %s; it was replaced", victim.key, exc)
                    return "replaced"
                if meta.get("deletionTimestamp"):
                    return "gone"
                log.info("preemption victim %s not deleted (attempt %d of %d): %s; still the same pod",
                         victim.key, attempt, DELETE_ATTEMPTS, exc)
        log.warning("preemption victim %s not deleted after %d attempts answered 409", victim.key, DELETE_ATTEMPTS)
        return "error"

    def _nominating(self, nominations: Iterable[tuple[str, str | None]]) -> None:
        """The nominations about to be written (:meth:`_write_nominations`), told to the status writer now, before any
        report on those pods is queued: a report made against a pod's copy from before the write waits for it and is
        sent against the version it produced (:meth:`StatusWriter.nominating`), instead of being refused with 409."""
        self.status.nominating(pod for key, _ in nominations if (pod := self.cache.pod(key)) is not None)

    async def _write_nominations(self, nominations: Iterable[tuple[str, str | None]]) -> None:
        """``status.nominatedNodeName`` (None: removed) on each pod whose API copy differs
        (:meth:`StatusWriter.pod_nomination`); a pod gone or bound meanwhile is skipped, other errors logged."""
        for key, node in nominations:
            try:
                pod = self.cache.pod(key)
                if pod is None or pod.status.nominated_node_name == node or (node is not None and pod.is_bound):
                    continue
                if not self.fence():
                    continue  # not leading: nothing more is written
                await self.status.pod_nomination(pod, node)
            except NotFound:
                continue
            except ApiError as exc:
                log.warning("nominatedNodeName of %s not written: %s", key, exc)
            finally:
                self.status.nomination_ended(key)

    def _object(self, key: GroupKey) -> Regarding | None:
        """The cached object a root stands for: its group, or its pod."""
        if key.kind == "Pod":
            return self.cache.pod(f"{key.namespace}/{key.name}")
        found: Regarding | None = self.cache.group(key.kind, key.namespace, key.name)
        return found

    def _victim_groups(self, victims: Sequence[Pod]) -> list[Regarding]:
        """The groups the preemption evicts as a whole, once each: every ``disruptionMode: all`` unit of a victim (its
        running pods go together), and every PodGroup all of whose running members are victims. A group that loses
        only some members (a ``single``-mode gang's spare members) keeps running and is not marked:
        ``DisruptionTarget=True`` says the object is about to be terminated (its evicted pods carry their own)."""
        evicted = {p.key for p in victims}
        members = self.cache.groups.members
        keys: dict[GroupKey, None] = {}
        for pod in victims:
            if pod.group_name is None:
                continue
            membership = self.cache.groups.chains.membership(pod)
            if membership.unit is not None:
                keys[membership.unit] = None
            leaf = membership.leaf
            if leaf is not None and leaf not in keys and all(
                    p.key in evicted for p in members.of(leaf.namespace, leaf.name).values() if p.is_bound):
                keys[leaf] = None
        found = [self.cache.group(k.kind, k.namespace, k.name) for k in keys]
        return [g for g in found if g is not None]
