"""Victim units: which running pods a preemptor may evict, grouped into what must go together, in order.

Who can be a victim (reference §8.4; kube-scheduler ``podgrouppreemption.go``, v1.37): a running
pod — bound to a node, not terminating, not merely assumed — of *strictly* lower priority than the
preemptor, of any scheduler, outside the preemptor's own tree. A grouped pod counts at its group's
priority (:class:`~scheduler.preemption.view.Membership`).

What goes together: a pod whose groups up to the root have no ``disruptionMode: all`` is a unit of
its own; otherwise the unit is the whole group rooted at its highest ancestor with ``all``, and
every running pod of it — on any node — is evicted, or none is.

Only pods on nodes the preemptor could use at all (passing the static filters for one of its pending
pods) are looked at: evicting elsewhere never frees room it can use. An ``all`` unit found there
still brings all of its pods, wherever they run.

Importance (:func:`importance`, most important first — the reprieve order, so the least important
units are the ones left to evict): higher priority; then members a single-mode gang needs to stay
at ``minCount`` before its spare members (the youngest ``running − minCount`` are spare); then a
group before a lone pod (kube 1.38 ``MoreImportantVictim`` ranks: ``all`` unit > member of a group >
pod); then larger units; then the earlier start (``status.startTime``; none yet counts as youngest);
then the group, so members of one single-mode gang stay adjacent and one gang is emptied before the
next is touched (volcano#4607); then the uid (kube 1.38's deterministic tie-break).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from scheduler.framework.node_table import BoolArray
from scheduler.framework.snapshot import Snapshot
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.preemption.view import GroupView, Membership

YOUNGEST = datetime.max.replace(tzinfo=UTC)
"""The start time of a pod without ``status.startTime`` (kube's ``GetPodStartTime`` uses now): youngest."""

RANK_ALL = 2
RANK_MEMBER = 1
RANK_POD = 0
"""Unit ranks, kube 1.38 ``MoreImportantVictim``: compositepodgroup/podgroup unit > member of a group > pod."""


@dataclass(slots=True)
class Unit:
    """Pods that are evicted together. ``key``: the ``all`` group, or the pod's key. ``pods`` and ``rows``
    (each pod's node row) are parallel. ``group``: the group whose members are ordered together (the
    unit's group, a single-mode member's PodGroup, or the pod). ``essential``: a single-mode gang
    member its gang needs to stay at ``minCount``."""

    key: GroupKey | str
    priority: int
    rank: int
    group: str
    pods: list[Pod] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    essential: bool = False
    start: datetime = YOUNGEST
    group_size: int = 1
    group_start: datetime = YOUNGEST

    @property
    def uid(self) -> str:
        return min((p.metadata.uid or p.key) for p in self.pods)


def start_of(pod: Pod) -> datetime:
    """``status.startTime`` (timezone-aware), or :data:`YOUNGEST`."""
    ts = pod.status.start_time
    if ts is None:
        return YOUNGEST
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def importance(unit: Unit) -> tuple[object, ...]:
    """Sort key, most important first (see the module docstring)."""
    return (-unit.priority, not unit.essential, -unit.rank, -unit.group_size, unit.group_start, unit.group,
            -len(unit.pods), unit.start, unit.uid)


def usable_rows(snapshot: Snapshot, tree: GroupTree, static_check: object) -> BoolArray:
    """Nodes that pass the static filters for at least one pending pod of ``tree`` (``static_check``: the
    profile's, memoised per pod template on the node table)."""
    table = snapshot.table
    mask = np.zeros(len(table), dtype=bool)
    for leaf in tree.root.leaves():
        for pod in leaf.pending:
            mask |= table.static_fit(pod.spec, static_check).ok  # type: ignore[arg-type]
    return mask


def candidates(snapshot: Snapshot, tree: GroupTree, view: GroupView, rows: BoolArray, *,
               inclusive: bool = False) -> list[Unit]:
    """The victim units the root of ``tree`` may evict, found on the nodes of ``rows`` (see the module
    docstring), in no particular order. Each unit's pods are every running pod of it (an ``all`` unit's
    on any node); empty when nothing of lower priority runs there. ``inclusive``: units of the root's own
    priority count too — never for eviction, only for the starvation guard's "which pods must finish".
    """
    own = {p.key for p in tree.pods()}
    ceiling = tree.priority
    table = snapshot.table
    members: dict[tuple[str, str], Membership] = {}
    units: dict[GroupKey | str, Unit] = {}
    whole: list[Unit] = []
    for row in np.flatnonzero(rows).tolist():
        for key, pod in snapshot.infos[row].pods.items():
            if key in own or pod.is_terminating or view.is_assumed(key):
                continue
            group = pod.group_name
            if group is None:
                m = view.membership(pod)
            else:
                memo_key = (pod.metadata.namespace, group)
                m = members.get(memo_key)  # type: ignore[assignment]
                if m is None:
                    m = members[memo_key] = view.membership(pod)
            if m.priority > ceiling or (m.priority == ceiling and not inclusive):
                continue
            if m.unit is not None:
                unit = units.get(m.unit)
                if unit is None:
                    unit = units[m.unit] = Unit(m.unit, m.priority, RANK_ALL, str(m.unit))
                    whole.append(unit)
                continue  # an all unit's pods are gathered below, from every node
            if m.leaf is not None:
                unit = Unit(key, m.priority, RANK_MEMBER, str(m.leaf), [pod], [row])
            else:
                unit = Unit(key, m.priority, RANK_POD, key, [pod], [row])
            units[key] = unit
    for unit in whole:
        for pod in view.unit_pods(unit.key):  # type: ignore[arg-type]
            where = table.index.get(pod.spec.node_name)
            if where is None or pod.is_terminating or view.is_assumed(pod.key):
                continue
            unit.pods.append(pod)
            unit.rows.append(where)
    found = [u for u in units.values() if u.pods]
    _order_within_groups(found, members)
    return found


def _order_within_groups(units: Iterable[Unit], members: dict[tuple[str, str], Membership]) -> None:
    """Fill in start times, group sizes and the ``essential`` flag of single-mode gang members."""
    by_group: dict[str, list[Unit]] = {}
    for unit in units:
        unit.start = min(start_of(p) for p in unit.pods)
        by_group.setdefault(unit.group, []).append(unit)
    for group_units in by_group.values():
        size = sum(len(u.pods) for u in group_units)
        start = min(u.start for u in group_units)
        for u in group_units:
            u.group_size, u.group_start = size, start
        first = group_units[0]
        if first.rank != RANK_MEMBER:
            continue
        pod = first.pods[0]
        m = members.get((pod.metadata.namespace, pod.group_name or ""))
        if m is None or m.min_count is None:
            continue
        spare = max(0, m.running - m.min_count)
        youngest_first = sorted(group_units, key=lambda u: (u.start, u.uid), reverse=True)
        for i, u in enumerate(youngest_first):
            u.essential = i >= spare
