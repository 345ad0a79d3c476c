"""Choosing victims: one pass with every candidate gone, then reprieve the most important while the tree fits.

Upstream's single-pass-then-reprieve (kube-scheduler ``podgrouppreemption.go``, v1.37; reference
``issue11-preemption.md`` §2.4), on our snapshots:

1. **One pass.** Remove every candidate unit (:mod:`scheduler.preemption.units`) and solve the whole
   tree. If it still does not fit, nothing is evicted (:func:`select` returns None): preemption
   cannot help, so nothing is evicted in vain. The solver is steered by :class:`PreemptionCost`, a
   Score plugin that prefers nodes whose removed pods are the least important (a node with room and
   no victim first), so the plan lands where the victims will be the ones evicted anyway.
2. **Reprieve.** Units are put back one at a time — those whose eviction would exceed a
   PodDisruptionBudget first, then the rest, each list most important first (so what stays
   evicted is what matters least: fewest budget violations, then lowest priority, then the order of
   :func:`~scheduler.preemption.units.importance`) — and a unit stays back if the whole tree still
   fits without it:

   * a unit with no pod on a node of the current plan is put back unchecked when every Filter is
     node-local (:func:`~scheduler.solver.search.node_local`): its pods cannot affect the plan;
   * otherwise the current plan is re-checked on its nodes (:func:`~scheduler.solver.search.placements_hold`,
     upstream's Filter-based reprieve; with node-local Filters only its placements on the unit's nodes,
     the only ones the unit's pods can break); if it no longer holds, the whole tree is solved again (the
     simple correct check), and a new plan, if found, replaces it. A unit without which the room on the
     tree's usable nodes falls short of its minimum need stays a victim without a solve.

   So no victim can be put back while the tree still fits (each unit was tried with every unit
   before it already back, and later units only take room away), given a solver for which more free
   room never turns a fit into a misfit.

   **Bulk reprieve first.** Before that loop, the units are put back in bulk by a doubling search:
   keep only the 1, 2, 4, … least important units removed and solve; the first count that fits
   (else all of them) is where the one-by-one loop starts. Under the same monotonicity every unit
   put back in bulk would have passed its own check in the loop (the tree fits with fewer units
   removed than at that check), so the result is the same — in O(log units) solves instead of one
   check per unit (``bench_preemption``: 1,000 to 8,000 candidate units).
Snapshots for the what-ifs are built by :class:`WhatIf` from the cycle's snapshot: a node whose pods
all go is emptied at once (its row of ``used`` zeroed), a node that loses some is rebuilt from the
pods it loses (memoised while that set stays the same), so a what-if costs O(N·R) plus O(pods on
the nodes partly emptied). Everything else is the base's: its devices, nominated pods, storage view
and namespace labels, and its inter-pod index with the removed pods branched off (an overlay, so a
what-if does not re-index every running pod; the base's index is built at most once). Pure: no I/O,
no clock.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import Plan, SolverConfig
from scheduler.framework.snapshot import Snapshot, pod_vector
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.policy import PodDisruptionBudget
from scheduler.preemption.budgets import violations
from scheduler.preemption.units import Unit, importance
from scheduler.solver.plugins import DEFAULT_PROFILE, Profile
from scheduler.solver.search import minimum_need, node_local, placements_hold, solve

COST_NAME = "PreemptionCost"
COST_WEIGHT = 100
"""Weight of :class:`PreemptionCost`: it outranks every preference of the default profile's Score
plugins (weights ≤ 10 in kube's default profile), because evicting less beats a preferred node."""


@dataclass(frozen=True, slots=True)
class Selection:
    """What :func:`select` chose: the ``victims`` units, the ``plan`` the tree gets once they are gone,
    the candidate units ``reprieved``, and the victim pods that exceed a budget (``pdb_violations``)."""

    victims: tuple[Unit, ...]
    plan: Plan
    reprieved: int
    pdb_violations: int

    @property
    def pods(self) -> tuple[Pod, ...]:
        return tuple(p for u in self.victims for p in u.pods)


class WhatIf:
    """Snapshots of ``base`` with some of ``units`` gone (see the module docstring).

    ``gone``: ``(len(units),)`` bool, which units are removed now; the caller flips entries and asks for
    :meth:`snapshot`. Per node the removed pods are counted vectorised; a node whose pods all go is
    emptied without touching its pods, and the others (fewer, as units are put back) are rebuilt from
    their removed pods, memoised per node while its removed set stays the same.
    """

    def __init__(self, base: Snapshot, units: Sequence[Unit]) -> None:
        self.base = base
        self.units = units
        self.gone: BoolArray = np.ones(len(units), dtype=bool)
        sizes = np.fromiter((len(u.pods) for u in units), dtype=np.int64, count=len(units))
        self._unit = np.repeat(np.arange(len(units), dtype=np.int64), sizes)
        self._row = np.fromiter(itertools.chain.from_iterable(u.rows for u in units), dtype=np.int64,
                                count=int(sizes.sum()))
        self._pods = list(itertools.chain.from_iterable(u.pods for u in units))
        by_row = np.argsort(self._row, kind="stable")
        self._by_row = by_row
        self._row_start = np.searchsorted(self._row[by_row], np.arange(len(base.infos) + 1))
        self._count = np.zeros(len(base.infos), dtype=np.int64)  # pods per node, read on the candidates' nodes only
        for row in np.unique(self._row).tolist():
            self._count[row] = len(base.infos[row].pods)
        self._memo: dict[int, tuple[frozenset[str], IntArray, NodeInfo]] = {}
        self._vectors: dict[int, IntArray] = {}

    def _vector(self, k: int) -> IntArray:
        vec = self._vectors.get(k)
        if vec is None:
            vec = self._vectors[k] = pod_vector(self.base.table, self._pods[k])
        return vec

    def flat_gone(self) -> BoolArray:
        """Per candidate pod (in unit order), whether its unit is removed now."""
        return self.gone[self._unit]

    def snapshot(self) -> Snapshot:
        """``base`` without the pods of the units ``gone`` marks (as :meth:`Snapshot.without` would make it)."""
        base = self.base
        flat = self.flat_gone()
        removed = np.bincount(self._row[flat], minlength=len(base.infos))
        used = base.used.copy()
        infos = list(base.infos)
        full = np.flatnonzero((removed > 0) & (removed >= self._count))
        used[full] = 0
        for row in full.tolist():
            infos[row] = NodeInfo(base.infos[row].name)
        for row in np.flatnonzero((removed > 0) & (removed < self._count)).tolist():
            on_row = self._by_row[self._row_start[row]:self._row_start[row + 1]]
            ks = on_row[flat[on_row]].tolist()
            keys = frozenset(self._pods[k].key for k in ks)
            hit = self._memo.get(row)
            if hit is None or hit[0] != keys:
                gone_vec = np.zeros_like(used[row])
                for k in ks:
                    gone_vec += self._vector(k)
                hit = self._memo[row] = (keys, base.used[row] - gone_vec, base.infos[row].without_pods(keys))
            used[row] = hit[1]
            infos[row] = hit[2]
        removed_keys = {self._pods[k].key: None for k in np.flatnonzero(flat).tolist()}
        return dataclasses.replace(base, used=used, infos=tuple(infos),
                                   index_view=base.pod_index.branched(removed_keys))

    def cost(self, position: IntArray) -> IntArray:
        """:class:`PreemptionCost` scores for the what-if as it is now; ``position[i]``: unit i's place in the
        reprieve order counted from the last (0, the least important) up."""
        flat = self.flat_gone()
        top = np.full(len(self.base.infos), -1, dtype=np.int64)
        np.maximum.at(top, self._row[flat], position[self._unit[flat]])
        span = max(1, len(self.units) - 1)
        return np.where(top < 0, 100, 99 - (99 * top) // span).astype(np.int64)


@dataclass(frozen=True, slots=True)
class PreemptionCost:
    """A Score plugin for preemption's what-ifs: 100 on nodes where nothing is removed, else lower the
    more important the most important removed unit on the node is (0 for the most important).

    ``scores``: the score per node row, ``(N,)`` int64 in 0–100.
    """

    scores: IntArray
    name: str = COST_NAME
    weight: int = COST_WEIGHT

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        return self.scores[rows]

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False


def select(tree: GroupTree, snapshot: Snapshot, units: Sequence[Unit], budgets: Sequence[PodDisruptionBudget],
           config: SolverConfig, profile: Profile = DEFAULT_PROFILE, usable: BoolArray | None = None,
           want: int = 0) -> Selection | None:
    """Choose the victims among ``units`` for ``tree`` on ``snapshot`` (see the module docstring).

    ``units``: the candidate units (``units.candidates``); ``budgets``: the PodDisruptionBudgets;
    ``usable``: the nodes the tree's pods could use at all (None: every node), for the quick capacity
    bound that spares a solve when the room cannot suffice. ``want``: pods a plan must place to count as a fit
    (beyond satisfying the tree: every pending member, when preempting for members above the minimum).
    Returns the :class:`Selection`, or None when the tree does not fit even with every candidate gone.
    """
    ordered = sorted(units, key=importance)
    counts = violations(ordered, budgets)
    order = np.array([i for i, c in enumerate(counts) if c] + [i for i, c in enumerate(counts) if not c],
                     dtype=np.int64)
    total = len(order)
    position = np.empty(total, dtype=np.int64)
    position[order] = np.arange(total - 1, -1, -1, dtype=np.int64)
    whatif = WhatIf(snapshot, ordered)
    gone = whatif.gone
    bound = _RoomBound(tree, snapshot, minimum_need(tree, snapshot, config, profile), usable)

    def attempt(built: Snapshot | None = None) -> tuple[Snapshot, Plan | None]:
        snap = built if built is not None else whatif.snapshot()
        if not bound.may_fit(snap):
            return snap, None
        steered = dataclasses.replace(profile, scorers=(*profile.scorers, PreemptionCost(whatif.cost(position))))
        result = solve(tree, snap, config, steered)
        return snap, result if isinstance(result, Plan) and len(result.placements) >= want else None

    def keep_least(count: int) -> None:
        gone[:] = False
        gone[order[total - count:]] = True

    everything, plan = attempt()
    if plan is None:
        return None
    low, high = 0, total  # bulk reprieve: the fewest least important units whose removal is enough
    count = 1
    while count < total:
        keep_least(count)
        _, found = attempt()
        if found is not None:
            high, plan = count, found
            break
        low, count = count, count * 2
    while high - low > 1:
        middle = (low + high) // 2
        keep_least(middle)
        _, found = attempt()
        if found is not None:
            high, plan = middle, found
        else:
            low = middle
    keep_least(high)
    reprieved = total - high
    local = node_local(tree, everything, config, profile)
    index = snapshot.table.index
    plan_rows = {index[node] for _, node in plan.placements}
    for i in order[total - high:].tolist():
        gone[i] = False  # try it back
        if local and plan_rows.isdisjoint(ordered[i].rows):
            reprieved += 1
            continue
        snap = whatif.snapshot()
        if not bound.may_fit(snap):
            gone[i] = True  # too little room without it: it stays a victim
            continue
        if placements_hold(tree, snap, _on_rows(plan, index, ordered[i].rows) if local else plan, config, profile):
            # the plan places the same pods still, so it still places ``want``
            reprieved += 1
            continue
        _, alternative = attempt(snap)
        if alternative is not None:
            plan = alternative
            plan_rows = {index[node] for _, node in plan.placements}
            reprieved += 1
            continue
        gone[i] = True  # it stays a victim
    chosen = np.flatnonzero(gone).tolist()
    victims = tuple(ordered[i] for i in chosen)  # ordered is most important first
    pdb = sum(counts[i] for i in chosen)
    return Selection(victims, plan, reprieved, pdb)


def _on_rows(plan: Plan, index: dict[str, int], rows: Sequence[int]) -> Plan:
    """``plan`` cut down to its placements on ``rows``: with node-local Filters only those can be broken by
    pods put back on ``rows``, so only those need checking again."""
    wanted = set(rows)
    return dataclasses.replace(plan, placements=tuple((p, n) for p, n in plan.placements if index[n] in wanted))


class _RoomBound:
    """A necessary condition for the tree to fit, checked before a solve: the free room summed over the nodes
    it could use (room held for more important nominated pods taken off, as the search does) covers its
    :func:`~scheduler.solver.search.minimum_need` in every resource."""

    def __init__(self, tree: GroupTree, snapshot: Snapshot, need: IntArray, usable: BoolArray | None) -> None:
        own = {p.key for p in tree.pods()}
        self.held = np.zeros_like(snapshot.used)
        for entry in snapshot.nominated:
            if entry.priority >= tree.priority and entry.pod not in own:
                self.held[entry.row] += entry.request
        self.cols = np.flatnonzero(need > 0)
        self.need = need[self.cols]
        self.rows = np.flatnonzero(usable) if usable is not None else np.arange(len(snapshot.table))
        rows, cols = np.ix_(self.rows, self.cols)
        self._room = snapshot.table.allocatable[rows, cols] - self.held[rows, cols]
        self._ix = (rows, cols)

    def may_fit(self, snap: Snapshot) -> bool:
        if not self.cols.size:
            return True
        free = self._room - snap.used[self._ix]
        return bool(np.all(np.maximum(free, 0).sum(axis=0) >= self.need))
