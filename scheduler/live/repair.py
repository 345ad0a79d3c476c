"""Gang repair: a partial gang is completed on the room it holds, or, after a timeout, torn down or reported.

A tree is *partial* (:attr:`~scheduler.groups.tree.GroupTree.partial`) when some members are bound but the
root is not satisfied by them: a bind failed half-way, the scheduler stopped mid-plan, or a running gang
lost members (a pod deleted or failed, its node gone). While partial it holds the room its durable intent
names (``cache.cluster.held_room``), is queued before every other root, and is retried like any root —
completed on its held room, or elsewhere inside its topology domain (bound members pin the domain). A
replacement member never goes back to a node that is not ready (NodeLifecycle).

:class:`GangRepair` keeps, per partial root, since when it has been partial (loop time; after a restart
taken from the root group's ``GangBelowMin`` condition, so a restart does not reset the clock). After
``timeout_s`` the driver acts once (:meth:`GangRepair.expired`): the highest group of the tree with
``disruptionMode: all`` that is not satisfied (:func:`teardown_unit`) is torn down — its bound members
evicted through the preemption path (``DisruptionTarget``, DELETE with a uid precondition), so it can be
placed again as a whole; without one (``single``, the default) the gang is only reported (a Warning Event,
the metric). Pure bookkeeping: time is passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler.groups.tree import Group, GroupTree, Leaf, walk
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup

GANG_BELOW_MIN = "GangBelowMin"
"""Our condition on a partial root's group (upstream has none): True while members are bound below the
gang's minimum, with the count; False once it is satisfied again or holds no member."""


@dataclass(slots=True)
class Partial:
    """A partial root: partial ``since`` (loop time); ``acted``: the timeout's action was taken."""

    since: float
    acted: bool = False


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
        """Partial roots past the timeout whose action is not taken yet (each is returned once)."""
        return [k for k, p in self.partial.items() if not p.acted and now - p.since >= self.timeout_s]

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
            entry.since = now + after_s - self.timeout_s

    def next_deadline(self) -> float | None:
        """Loop time of the next timeout, or None."""
        return min((p.since + self.timeout_s for p in self.partial.values() if not p.acted), default=None)


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
