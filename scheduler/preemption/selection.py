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
     upstream's Filter-based reprieve); if it no longer holds, the whole tree is solved again (the
     simple correct check), and a new plan, if found, replaces it.

   So no victim can be put back while the tree still fits (each unit was tried with every unit
   before it already back, and later units only take room away), given a solver for which more free
   room never turns a fit into a misfit.

Snapshots for the what-ifs are built by :class:`WhatIf` from the cycle's snapshot: a node whose pods
all go is emptied at once (its row of ``used`` zeroed), otherwise the smaller side is summed, so a
what-if costs O(N·R) plus O(pods on the touched nodes). Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import IntArray
from scheduler.framework.plan import Plan, SolverConfig
from scheduler.framework.snapshot import Snapshot, pod_vector
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.policy import PodDisruptionBudget
from scheduler.preemption.budgets import violations
from scheduler.preemption.units import Unit, importance
from scheduler.solver.plugins import DEFAULT_PROFILE, Profile
from scheduler.solver.search import node_local, placements_hold, solve

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
    """Snapshots of ``base`` with some of ``units`` gone (see the module docstring)."""

    def __init__(self, base: Snapshot, units: Sequence[Unit]) -> None:
        self.base = base
        self.units = units
        self._vectors: dict[str, IntArray] = {}

    def _vector(self, pod: Pod) -> IntArray:
        vec = self._vectors.get(pod.key)
        if vec is None:
            vec = self._vectors[pod.key] = pod_vector(self.base.table, pod)
        return vec

    def snapshot(self, gone: Iterable[int]) -> Snapshot:
        """``base`` without the pods of the units indexed by ``gone``."""
        by_row: dict[int, set[str]] = {}
        for i in gone:
            unit = self.units[i]
            for pod, row in zip(unit.pods, unit.rows, strict=True):
                by_row.setdefault(row, set()).add(pod.key)
        base = self.base
        used = base.used.copy()
        infos = list(base.infos)
        for row, keys in by_row.items():
            pods = base.infos[row].pods
            keys &= pods.keys()
            if not keys:
                continue
            if len(keys) == len(pods):
                used[row] = 0
                infos[row] = NodeInfo(base.infos[row].name)
                continue
            if 2 * len(keys) <= len(pods):
                for key in keys:
                    used[row] -= self._vector(pods[key])
            else:
                used[row] = 0
                for key, pod in pods.items():
                    if key not in keys:
                        used[row] += self._vector(pod)
            infos[row] = base.infos[row].without_pods(keys)
        return Snapshot(base.table, used, tuple(infos), base.dra, base.nominated)


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


def cost_scores(rows: int, units: Sequence[Unit], gone: Iterable[int], position: Sequence[int]) -> IntArray:
    """:class:`PreemptionCost` scores for a what-if with ``gone`` removed; ``position[i]``: unit i's place
    in importance order counted from the least important (0) up."""
    top = np.full(rows, -1, dtype=np.int64)
    for i in gone:
        for row in units[i].rows:
            if position[i] > top[row]:
                top[row] = position[i]
    span = max(1, len(units) - 1)
    return np.where(top < 0, 100, 99 - (99 * top) // span).astype(np.int64)


def select(tree: GroupTree, snapshot: Snapshot, units: Sequence[Unit], budgets: Sequence[PodDisruptionBudget],
           config: SolverConfig, profile: Profile = DEFAULT_PROFILE) -> Selection | None:
    """Choose the victims among ``units`` for ``tree`` on ``snapshot`` (see the module docstring).

    ``units``: the candidate units (``units.candidates``); ``budgets``: the PodDisruptionBudgets.
    Returns the :class:`Selection`, or None when the tree does not fit even with every candidate gone.
    """
    ordered = sorted(units, key=importance)
    counts = violations(ordered, budgets)
    order = [i for i, c in enumerate(counts) if c] + [i for i, c in enumerate(counts) if not c]
    position = [0] * len(ordered)
    for rank, i in enumerate(order):
        position[i] = len(order) - 1 - rank
    whatif = WhatIf(snapshot, ordered)
    gone = set(range(len(ordered)))

    def attempt(removed: set[int]) -> tuple[Snapshot, Plan | None]:
        snap = whatif.snapshot(removed)
        scorer = PreemptionCost(cost_scores(len(snapshot.table), ordered, removed, position))
        steered = dataclasses.replace(profile, scorers=(*profile.scorers, scorer))
        result = solve(tree, snap, config, steered)
        return snap, result if isinstance(result, Plan) else None

    everything, plan = attempt(gone)
    if plan is None:
        return None
    local = node_local(tree, everything, config, profile)
    index = snapshot.table.index
    plan_rows = {index[node] for _, node in plan.placements}
    reprieved = 0
    for i in order:
        unit = ordered[i]
        trial = gone - {i}
        if local and plan_rows.isdisjoint(unit.rows):
            gone = trial
            reprieved += 1
            continue
        snap = whatif.snapshot(trial)
        if placements_hold(tree, snap, plan, config, profile):
            gone = trial
            reprieved += 1
            continue
        _, alternative = attempt(trial)
        if alternative is not None:
            plan = alternative
            plan_rows = {index[node] for _, node in plan.placements}
            gone = trial
            reprieved += 1
    victims = tuple(ordered[i] for i in sorted(gone, key=lambda i: importance(ordered[i])))
    pdb = sum(counts[i] for i in gone)
    return Selection(victims, plan, reprieved, pdb)
