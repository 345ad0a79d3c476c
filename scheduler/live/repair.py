"""Gang repair: a partial gang is completed on the room it holds, or, after a timeout, torn down or reported.

A tree is *partial* (:attr:`~scheduler.groups.tree.GroupTree.partial`) when some members are bound but the
root is not satisfied by them: a bind failed half-way, the scheduler stopped mid-plan, or a running gang
lost members (a pod deleted or failed, its node gone) — not while members are being evicted by a preemption
of ours (:meth:`~scheduler.live.preemptor.Preemptor.evicting`): it is judged once they are gone. While partial it
holds the room its durable intent names (``cache.cluster.held_room``), is queued before every other root, and is
retried like any root —
completed on its held room, or elsewhere inside its topology domain (bound members pin the domain). A
replacement member never goes back to a node that is not ready (NodeLifecycle).

:class:`GangRepair` keeps, per partial root, since when it has been partial (loop time; after a restart
taken from the root group's ``GangBelowMin`` condition, so a restart does not reset the clock). After
``timeout_s`` the driver acts once (:meth:`GangRepair.expired`): the highest group of the tree with
``disruptionMode: all`` that is not satisfied (:func:`teardown_unit`) is torn down — its bound members
evicted through the preemption path (``DisruptionTarget``, DELETE with a uid precondition), so it can be
placed again as a whole; without one (``single``, the default) the gang is only reported (a Warning Event,
the metric). :class:`GangRepair` is pure bookkeeping (time is passed in); :class:`GangRepairer` feeds it and
takes the timeout's action on the cluster.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler.cache.cluster import ClusterCache
from scheduler.config import Settings
from scheduler.groups.tree import Group, GroupTree, Leaf, walk
from scheduler.live.metrics import Metrics
from scheduler.live.preemptor import Preemptor
from scheduler.live.status_writer import EVENT_GANG_BELOW_MIN, EVENT_GANG_TORN_DOWN, StatusWriter
from scheduler.live.tasks import Spawn
from scheduler.model.base import true_condition
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup
from scheduler.queue import CLOCK_SLACK_S

log = logging.getLogger(__name__)

TEARDOWN_RETRY_S = 10.0
"""Seconds before a gang whose teardown had an eviction fail is torn down again."""

GANG_BELOW_MIN = "GangBelowMin"
"""Our condition on a partial root's group (upstream has none): True while members are bound below the
gang's minimum, with the count; False once it is satisfied again or holds no member."""


@dataclass(slots=True)
class Partial:
    """A partial root: partial ``since`` (loop time); ``acted``: the timeout's action was taken; ``due``: when to act
    (loop time; None: ``since`` plus the timeout), moved by :meth:`GangRepair.retry` while ``since`` stays."""

    since: float
    acted: bool = False
    due: float | None = None


class GangRepair:
    """The partial roots and their clocks (see the module docstring). ``timeout_s``: seconds before acting."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.partial: dict[GroupKey, Partial] = {}

    def observe(self, key: GroupKey, tree: GroupTree | None, now: float, since_wall: datetime | None = None) -> bool:
        """Root ``key``'s tree as it is now (None: gone). ``since_wall``: when its group says it became partial
        (``GangBelowMin``'s lastTransitionTime), for a root first seen partial. Returns True when a root
        tracked as partial is satisfied again (repaired)."""
        if tree is not None and tree.partial:
            if key not in self.partial:
                since = now
                if since_wall is not None:
                    since = now - max(0.0, (datetime.now(UTC) - since_wall).total_seconds())
                self.partial[key] = Partial(since)
            return False
        entry = self.partial.pop(key, None)
        return entry is not None and tree is not None and tree.root.satisfied

    def expired(self, now: float) -> list[GroupKey]:
        """Partial roots past the timeout whose action is not taken yet (each is returned once); a deadline within
        :data:`~scheduler.queue.CLOCK_SLACK_S` of ``now`` has passed (so ``now`` = :meth:`next_deadline`, rounded
        either way, expires it)."""
        now += CLOCK_SLACK_S
        return [k for k, p in self.partial.items() if not p.acted and now >= self._due(p)]

    def _due(self, entry: Partial) -> float:
        return entry.since + self.timeout_s if entry.due is None else entry.due

    def below_min_s(self, key: GroupKey, now: float) -> float:
        """Seconds root ``key`` has been partial at loop time ``now`` (0: it is not): since it was first seen so —
        after a restart, since its ``GangBelowMin`` condition's lastTransitionTime."""
        entry = self.partial.get(key)
        return max(0.0, now - entry.since) if entry is not None else 0.0

    def acted(self, key: GroupKey) -> None:
        entry = self.partial.get(key)
        if entry is not None:
            entry.acted = True

    def retry(self, key: GroupKey, now: float, after_s: float) -> None:
        """The action on ``key`` did not take (a teardown whose evictions failed): act again ``after_s`` seconds
        from ``now`` if it is still partial then."""
        entry = self.partial.get(key)
        if entry is not None:
            entry.acted = False
            entry.due = now + after_s

    def next_deadline(self) -> float | None:
        """Loop time of the next timeout, or None."""
        return min((self._due(p) for p in self.partial.values() if not p.acted), default=None)


def teardown_unit(tree: GroupTree, group_of: Callable[[GroupKey], PodGroup | CompositePodGroup | None]
                  ) -> Group | None:
    """The group to tear down: the highest of ``tree`` whose ``disruptionMode`` is ``all``, that is not
    satisfied and has members bound (None: every such group is ``single``, only reported). ``group_of``:
    the API object of a group key."""
    for group in walk(tree.root):
        obj = group_of(group.key) if group.key.kind != "Pod" else None
        mode = obj.spec.disruption_mode if obj is not None else None
        if mode is None or mode.all is None or group.satisfied:
            continue
        if any(leaf.bound for leaf in group.leaves()):
            return group
    return None


def below_min_message(tree: GroupTree) -> str:
    """Why the root is below its minimum, per short gang: ``gang workers: 7/8 members bound (minCount 8)``."""
    parts: list[str] = []
    for group in walk(tree.root):
        if group.satisfied:
            continue
        if isinstance(group, Leaf):
            if group.min_count is not None and group.bound:
                parts.append(f"gang {group.name}: {len(group.bound) + group.succeeded}/{group.min_count} members "
                             f"bound (minCount {group.min_count})")
        elif any(leaf.bound for leaf in group.leaves()):
            done = sum(c.satisfied for c in group.children)
            parts.append(f"composite {group.name}: {done}/{group.need} child groups satisfied "
                         f"(minGroupCount {group.need})")
    return "; ".join(parts)


class GangRepairer:
    """Gang repair, live: :class:`GangRepair`'s books (:attr:`books`) fed from the routed trees, and the timeout's
    action taken on the cluster — a ``disruptionMode: all`` unit torn down through the preemptor, a ``single``
    gang reported (a Warning Event). The driver's loop calls :meth:`observe` for each root it routes or whose
    bind ended, :meth:`act_due` on every pass, and wakes at :meth:`next_deadline`. ``binding``: whether a
    root's plan is being bound now (it is judged when its binder ends: its assumed members are not bound yet).
    ``wake``: wakes the driver's loop (a teardown to be tried again has a new deadline).
    """

    def __init__(self, settings: Settings, cache: ClusterCache, status: StatusWriter, metrics: Metrics,
                 preemptor: Preemptor, spawn: Spawn, binding: Callable[[GroupKey], bool],
                 wake: Callable[[], None] = lambda: None) -> None:
        self.settings = settings
        self.cache = cache
        self.status = status
        self.metrics = metrics
        self.preemptor = preemptor
        self.spawn = spawn
        self.binding = binding
        self.wake = wake
        self.books = GangRepair(settings.gang_repair_timeout_s)

    @property
    def partial(self) -> dict[GroupKey, Partial]:
        """The partial roots now, and since when."""
        return self.books.partial

    def next_deadline(self) -> float | None:
        """Loop time of the next timeout, or None."""
        return self.books.next_deadline()

    def observe(self, key: GroupKey, tree: GroupTree | None, now: float) -> None:
        """Track root ``key`` as partial or not; count a partial gang satisfied again as repaired. A root whose
        plan is being bound is judged when its binder ends (its assumed members are not bound yet)."""
        if self.binding(key):
            return
        if tree is not None and tree.partial and self.preemptor.evicting(tree.groups):
            return  # members going by our own preemption: judged once they are gone
        since: datetime | None = None
        if tree is not None and tree.partial and key not in self.books.partial and key.kind != "Pod":
            obj = self.cache.group(key.kind, key.namespace, key.name)
            cond = true_condition(obj.status.conditions, GANG_BELOW_MIN) if obj is not None else None
            since = cond.last_transition_time if cond is not None else None
            log.warning("root=%s result=Partial %s", key, below_min_message(tree))
        if self.books.observe(key, tree, now, since):
            log.info("root=%s result=Repaired the gang is satisfied again", key)
            self.metrics.gang_repair("completed")

    def act_due(self, now: float) -> None:
        """Act on the partial roots past ``--gang-repair-timeout-s``: tear down a ``disruptionMode: all`` gang
        whole (its bound members evicted), report a ``single`` one. The Event and the log line say how long the gang
        has been below its minimum (:meth:`GangRepair.below_min_s`: from its ``GangBelowMin`` condition after a
        restart), not the timeout."""
        for key in self.books.expired(now):
            tree = self.cache.tree(key)
            if tree is None or not tree.partial:
                self.books.observe(key, tree, now)
                continue
            if self.binding(key) or self.preemptor.evicting(tree.groups):
                continue  # a plan is being bound, or our preemption is evicting members: judged when it ends
            self.books.acted(key)
            obj = self.cache.group(key.kind, key.namespace, key.name)
            what = below_min_message(tree)
            after = f"for {self.books.below_min_s(key, now):.0f} s"
            unit = teardown_unit(tree, lambda k: self.cache.group(k.kind, k.namespace, k.name))
            if unit is None:
                missing = sum(max(0, leaf.min_count - len(leaf.bound) - leaf.succeeded - len(leaf.pending))
                              for leaf in tree.root.leaves() if leaf.min_count is not None and not leaf.satisfied)
                when = (f"{missing} member(s) do not exist: it is completed once they are created and fit"
                        if missing else "it is completed when room appears")
                message = (f"{what} {after}; disruptionMode single: left as it is (its members keep running; "
                           f"{when})")
                log.warning("root=%s result=BelowMin %s", key, message)
                self.metrics.gang_repair("reported")
                if obj is not None:
                    self.spawn(self.status.group_warning(obj, EVENT_GANG_BELOW_MIN, message), f"status/{key}")
                continue
            victims = [p for leaf in unit.leaves() for b in leaf.bound
                       if b.key not in self.cache.assumed and (p := self.cache.pod(b.key)) is not None]
            message = (f"{self.settings.scheduler_name}: tearing down {unit.key}: {what} {after}; its {len(victims)} "
                       "bound member(s) are evicted so that it can be placed again whole (disruptionMode all)")
            log.warning("root=%s result=TornDown %s", key, message)
            self.metrics.gang_repair("torn_down")
            unit_obj = self.cache.group(unit.key.kind, unit.key.namespace, unit.key.name)
            self.preemptor.tear_down(key, unit_obj, victims, message, functools.partial(self._teardown_failed, key))
            if obj is not None:
                self.spawn(self.status.group_warning(obj, EVENT_GANG_TORN_DOWN, message), f"status/{key}")

    def _teardown_failed(self, key: GroupKey) -> None:
        """A teardown's eviction failed: the gang is torn down again after :data:`TEARDOWN_RETRY_S`, if still
        partial (without this it would stay below its minimum for good, its action taken once)."""
        log.warning("root=%s teardown incomplete: an eviction failed; trying again in %.0f s", key, TEARDOWN_RETRY_S)
        self.books.retry(key, asyncio.get_running_loop().time(), TEARDOWN_RETRY_S)
        self.wake()
