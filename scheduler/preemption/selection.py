"""Choosing victims: one pass with every candidate gone, reprieve the most important while the tree fits, then
consolidate the gangs broken.

Upstream's single-pass-then-reprieve (kube-scheduler ``podgrouppreemption.go``, v1.37, and the per-node
``SelectVictimsOnNode`` of ``plugins/defaultpreemption/default_preemption.go``: reprieve in priority order), on
our snapshots, and a consolidation step of ours after it:

1. **One pass.** With every candidate unit (:mod:`scheduler.preemption.units`) removed the whole tree
   must fit; if it does not, nothing is evicted (:func:`select` returns None): preemption cannot help,
   so nothing is evicted in vain. The solver is steered by :class:`PreemptionCost`, a Score plugin that
   prefers nodes whose removed pods are the least important (a node with room and no victim first), so
   the plan lands where the victims will be the ones evicted anyway.
2. **Reprieve.** Units are put back — those whose eviction would exceed a PodDisruptionBudget first,
   then the rest, each list most important first (so what stays evicted is what matters least: fewest
   budget violations, then lowest priority, then the order of
   :func:`~scheduler.preemption.units.importance`) — and a unit stays back if the whole tree still fits
   without it:

   * a unit with no pod on a node of the current plan is put back unchecked when every Filter is
     node-local (:func:`~scheduler.solver.search.node_local`): its pods cannot affect the plan;
   * a unit without which the room on the tree's usable nodes falls short of its minimum need stays a
     victim without a solve (:class:`RoomBound`);
   * otherwise the current plan is re-checked on its nodes (:func:`~scheduler.solver.search.placements_hold`,
     upstream's Filter-based reprieve; with node-local Filters only its placements on the unit's nodes,
     the only ones the unit's pods can break); if it no longer holds, the whole tree is solved again (the
     simple correct check), and a new plan, if found, replaces it.

   So no victim can be put back while the tree still fits (each unit was tried with every unit
   before it already back, and later units only take room away), given a solver for which more free
   room never turns a fit into a misfit.

   **In bulk, with the same result.** Under that monotonicity a set of units put back together passes the
   check only if each of them would have passed its own check in the one-at-a-time order (each such check
   has at most those units back, so at least as much room), and a unit that fails alone fails the same.
   So the units are put back in batches that grow while they pass (1, 2, 4, …) and halve when one fails,
   down to the single unit that then stays a victim: O(victims · log units) checks instead of one per
   unit. Before that, the fewest least important units whose removal is enough are found: first by the
   room bound alone (no solve: below that count nothing can fit), then by solves from that count (then
   every unit, then a bisection) — the units above that count pass the loop's checks by the same argument.
   A what-if's solve is steered by :class:`PreemptionCost`; the search being a heuristic, steering can lose
   a fit the plain search finds, so a what-if fits when either finds one.
   In ``bench_preemption`` a decision has 50 to 4,000 candidate units and evicts 1 to 64 of them.
3. **Consolidation** (beyond kube-scheduler, whose greedy reprieve stops at step 2). A gang is *broken* when the
   victims take it below ``minCount`` — a single-mode PodGroup that loses more members than it has spare ones
   (:attr:`~scheduler.preemption.units.Unit.spare`; counted, not read off ``essential``: the reprieve may evict an
   essential member and keep a spare one, which leaves the gang whole) — or when it is an ``all`` unit, evicted
   whole (:func:`broken_gangs`). The reprieve breaks gangs greedily: in its order the least important members of
   several gangs can stay victims where the members of one gang would have done, and once a gang is below
   ``minCount`` its other members are of little use — evicting them instead of breaking a second gang costs no
   further job. So, when the victims break at least two gangs, for each broken gang G, most important first
   (by its most important victim): put G's victims back, and evict instead, least important first (the reprieve
   order read backwards), the fewest of the candidate units that are not victims, whose eviction breaks no gang
   not broken already (members of the other gangs broken now, pods without a group, members of groups that could
   lose every candidate and stay at ``minCount``) and that count at G's priority or below, as long as they add
   up to no more pods than G's victims and no more budget violations (each unit's count, as step 2 orders by);
   G is kept whole if the tree fits with them gone (the check of step 2: the room bound, the plan re-checked on
   the units' nodes, a solve, a new plan kept), else everything is as before. Each swap keeps the victim pods
   and the budget violations from growing and breaks exactly one gang fewer, and no pod is evicted for a gang of
   lower priority than its own. The units a swap would evict are first weighed against the room bound's sum
   without touching the what-if (:meth:`RoomBound.taken`: G's victims put back take at most each node's free
   room, the units evicted free at most their requests), which refuses most hopeless swaps for O(columns);
   then they are checked all gone, and if the tree fits, the fewest of the first of them that still fit are
   found by a bisection — fits only grow with the units evicted, by the monotonicity step 2 assumes. When some
   G was kept whole, step 2's reprieve runs once more over every victim (the units evicted instead may leave
   room for others to come back), so the guarantee above holds for the final victims. Cost: O(victims) when
   fewer than two gangs are broken; else O(pods) once for the bound's figures, the units that may be evicted
   instead read lazily, only as far as the swaps take (:class:`_Instead`; O(units) at most in all), and per
   broken gang a scan of those read (up to its victims' pods and budget violations, skipping its own members)
   and at most 1 + O(log pods of its victims) checks, none when the bound refuses; after a swap, O(pods) to
   bring the bound's figures up to date, and in the end one more reprieve (O(victims · log units) checks).
   Deterministic: every order above is the reprieve's.

What-ifs are kept by :class:`WhatIf`, in place: it holds one usage matrix and the NodeInfos, and when
units are removed or put back it applies only those: their pods' request vectors (remembered across
decisions by :class:`PodVectors`) are subtracted or added, their nodes' NodeInfos rebuilt (remembered per
node and removed set) — exactly what :meth:`Snapshot.without` on the cycle's snapshot gives (a property
test holds them equal). The room bound reads the matrix without making a snapshot; a snapshot for a solve
copies the matrix (O(N·R), in C) and shares the base's NodeInfos but those of the candidates' nodes
(:class:`~scheduler.framework.node_rows.NodeRows`, O(N / 64 + rows changed)). Everything else is the base's:
its devices, nominated pods, storage view and namespace labels, and its inter-pod index with the removed pods
branched off (an overlay, so a what-if does not re-index every running pod; the base's index is built at most
once). Pure: no I/O, no clock.
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
from scheduler.framework.node_rows import NodeRows
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import Plan, SolverConfig
from scheduler.framework.snapshot import Snapshot, pod_vector
from scheduler.groups.tree import GroupTree
from scheduler.model.pod import Pod
from scheduler.model.policy import PodDisruptionBudget
from scheduler.preemption.budgets import violations
from scheduler.preemption.units import RANK_ALL, RANK_MEMBER, Unit, importance
from scheduler.solver.plugins import DEFAULT_PROFILE, Profile
from scheduler.solver.search import minimum_need, node_local, placements_hold, solve

COST_NAME = "PreemptionCost"
COST_WEIGHT = 100
"""Weight of :class:`PreemptionCost`: it outranks every preference of the default profile's Score
plugins (weights ≤ 10 in kube's default profile), because evicting less beats a preferred node."""


@dataclass(frozen=True, slots=True)
class Selection:
    """What :func:`select` chose: the ``victims`` units, the ``plan`` the tree gets once they are gone,
    the candidate units ``reprieved``, the victim pods that exceed a budget (``pdb_violations``), the gangs the
    victims break (``broken``) and those the consolidation kept whole (``consolidated``)."""

    victims: tuple[Unit, ...]
    plan: Plan
    reprieved: int
    pdb_violations: int
    broken: int = 0
    """Gangs the victims break (:func:`broken_gangs`)."""
    consolidated: int = 0
    """Gangs the consolidation kept whole (each by evicting, instead, pods of gangs broken anyway)."""

    @property
    def pods(self) -> tuple[Pod, ...]:
        return tuple(p for u in self.victims for p in u.pods)


MAX_REMEMBERED_VECTORS = 200_000
"""Pods :class:`PodVectors` remembers before starting afresh."""


class PodVectors:
    """Request vectors of candidate pods over a node table's columns (:func:`~scheduler.framework.snapshot.pod_vector`),
    memoised per pod object across decisions while the table is the same, so a decision does not re-read the
    requests of victims it saw before. Keyed by the pod object's identity and checked against its requests
    mapping (:attr:`Pod.requests`, computed once per pod object), which the memo keeps alive — so a new object at
    a freed address never matches — without keeping the pod itself."""

    def __init__(self) -> None:
        self._table: object = None
        self._memo: dict[int, tuple[object, IntArray]] = {}

    def matrix(self, snapshot: Snapshot, pods: Sequence[Pod]) -> IntArray:
        """``(len(pods), R)`` int64: each pod's requests over ``snapshot``'s columns."""
        table = snapshot.table
        if self._table is not table or len(self._memo) >= MAX_REMEMBERED_VECTORS:
            self._table, self._memo = table, {}
        memo = self._memo
        rows: list[IntArray] = []
        for pod in pods:
            hit = memo.get(id(pod))
            if hit is None or hit[0] is not pod.requests:
                hit = memo[id(pod)] = (pod.requests, pod_vector(table, pod))
            rows.append(hit[1])
        if not rows:
            return np.zeros((0, len(table.resources)), dtype=np.int64)
        return np.array(rows)  # one C pass over the rows (np.stack adds an axis to each in Python: 4x slower)


class WhatIf:
    """Snapshots of ``base`` with some of ``units`` gone, kept up to date in place (see the module docstring).

    ``gone``: ``(len(units),)`` bool, which units are removed now; the caller flips entries, then asks for
    :meth:`room` (the usage of the changed nodes only) or :meth:`snapshot`. Only the units flipped since the last
    call are applied: their pods' request vectors are subtracted from (or added back to) the usage of the nodes
    the candidates run on (a ``(nodes with candidates, R)`` matrix), and the NodeInfos of their nodes are rebuilt
    when a snapshot is asked for (a NodeInfo per node and removed set is remembered, so a batch tried and put
    back costs no rebuild). So a what-if costs O(pods of the flipped units) plus, for a snapshot, the copy of
    the usage matrix (O(N·R), in C) and O(N / 64) for the NodeInfos, which share the base's other rows.
    """

    def __init__(self, base: Snapshot, units: Sequence[Unit], vectors: PodVectors | None = None) -> None:
        self.base = base
        self.units = units
        self.gone: BoolArray = np.ones(len(units), dtype=bool)
        sizes = np.fromiter((len(u.pods) for u in units), dtype=np.int64, count=len(units))
        self._unit = np.repeat(np.arange(len(units), dtype=np.int64), sizes)
        self._rows_list = list(itertools.chain.from_iterable(u.rows for u in units))
        self._nodes, self._local = np.unique(np.array(self._rows_list, dtype=np.int64), return_inverse=True)
        """The node rows candidates run on, and per candidate pod the index of its node among them."""
        self._pods = list(itertools.chain.from_iterable(u.pods for u in units))
        self._vec = (vectors or PodVectors()).matrix(base, self._pods)
        self._used = base.used[self._nodes]  # the usage of ``_nodes``, units of ``_in_used`` removed
        self._in_used = np.zeros(len(units), dtype=bool)  # which units ``_used`` has removed
        self._unreported: list[IntArray] = []  # entries of ``_nodes`` changed that :meth:`room` has not returned yet
        self._in_infos = np.zeros(len(units), dtype=bool)  # which units ``_infos`` and ``_removed`` have removed
        self._infos: NodeRows = base.infos  # ``base.infos`` with the removed pods of ``_in_infos`` left out
        self._removed: dict[str, None] = {}
        self._on_row: dict[int, dict[str, None]] = {}
        self._dirty: set[int] = set()
        self._memo: dict[tuple[int, frozenset[str]], NodeInfo] = {}

    def _changed_pods(self, applied: BoolArray) -> tuple[IntArray, BoolArray]:
        """The candidate pods whose unit's state differs from ``applied``, and whether each is gone now."""
        flipped = (self.gone != applied)[self._unit]
        pods = np.flatnonzero(flipped)
        return pods, self.gone[self._unit[pods]]

    def _sync_used(self) -> None:
        pods, now_gone = self._changed_pods(self._in_used)
        if pods.size:
            local = self._local[pods]
            sign = np.where(now_gone, -1, 1).astype(np.int64)
            np.add.at(self._used, local, self._vec[pods] * sign[:, None])
            self._in_used[:] = self.gone
            self._unreported.append(local)

    @property
    def used(self) -> IntArray:
        """``(N, R)``: the usage with the units of :attr:`gone` removed, as of the last :meth:`room` or
        :meth:`snapshot` (a fresh matrix)."""
        used = self.base.used.copy()
        used[self._nodes] = self._used
        return used

    def room(self) -> tuple[IntArray, IntArray]:
        """Bring the usage up to date with :attr:`gone`; returns the node rows whose usage changed since the last
        call (no repeats) and their usage now (``(rows, R)``), for a :class:`RoomBound` to follow."""
        self._sync_used()
        if not self._unreported:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self._used.shape[1]), dtype=np.int64)
        local = np.unique(np.concatenate(self._unreported))
        self._unreported.clear()
        return self._nodes[local], self._used[local]

    def requests(self, cols: IntArray) -> IntArray:
        """``(len(units), len(cols))``: each unit's pods' requests summed, in the columns ``cols``."""
        out = np.zeros((len(self.units), len(cols)), dtype=np.int64)
        np.add.at(out, self._unit, self._vec[:, cols])
        return out

    def placed(self, units: Sequence[int]) -> tuple[IntArray, IntArray, IntArray]:
        """The pods of ``units`` (indices into :attr:`units`): per pod, the index in ``units`` of its unit, its node
        row, and its request vector (``(pods, R)``)."""
        where = np.full(len(self.units), -1, dtype=np.int64)
        where[np.asarray(units, dtype=np.int64)] = np.arange(len(units), dtype=np.int64)
        of = where[self._unit]
        pods = np.flatnonzero(of >= 0)
        return of[pods], self._nodes[self._local[pods]], self._vec[pods]

    def flat_gone(self) -> BoolArray:
        """Per candidate pod (in unit order), whether its unit is removed now."""
        return self.gone[self._unit]

    def snapshot(self) -> Snapshot:
        """``base`` without the pods of the units ``gone`` marks (as :meth:`Snapshot.without` would make it)."""
        base = self.base
        self._sync_used()
        used = self.used
        pods, now_gone = self._changed_pods(self._in_infos)
        if pods.size:
            removed, on_row, every, rows = self._removed, self._on_row, self._pods, self._rows_list
            for k, out in zip(pods.tolist(), now_gone.tolist(), strict=True):
                key, row = every[k].key, rows[k]
                if out:
                    removed[key] = None
                    on_row.setdefault(row, {})[key] = None
                else:
                    removed.pop(key, None)
                    on_row[row].pop(key, None)
                self._dirty.add(row)
            self._in_infos[:] = self.gone
        changes: dict[int, NodeInfo] = {}
        for row in self._dirty:
            gone_here = self._on_row.get(row)
            if not gone_here:
                changes[row] = base.infos[row]
                continue
            memo_key = (row, frozenset(gone_here))
            info = self._memo.get(memo_key)
            if info is None:
                info = self._memo[memo_key] = base.infos[row].without_pods(gone_here)
            changes[row] = info
        self._dirty.clear()
        self._infos = self._infos.replaced(changes)
        return dataclasses.replace(base, used=used, infos=self._infos,
                                   index_view=base.pod_index.branched(dict(self._removed)))

    def cost(self, position: IntArray) -> IntArray:
        """:class:`PreemptionCost` scores for the what-if as it is now; ``position[i]``: unit i's place in the
        reprieve order counted from the last (0, the least important) up."""
        flat = self.flat_gone()
        top = np.full(len(self.base.infos), -1, dtype=np.int64)
        np.maximum.at(top, self._nodes[self._local[flat]], position[self._unit[flat]])
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


class Steering:
    """The what-ifs' profile: ``profile`` plus a :class:`PreemptionCost` whose scores :func:`select` sets before each
    solve, made once per profile and node count and kept across decisions (making a profile checks its plugins'
    protocols, and a new one starts its gating memo afresh)."""

    def __init__(self) -> None:
        self._made: tuple[Profile, int, Profile, PreemptionCost] | None = None

    def steered(self, profile: Profile, nodes: int) -> tuple[Profile, PreemptionCost]:
        """``profile`` steered by a :class:`PreemptionCost` over ``nodes`` node rows, and that scorer."""
        made = self._made
        if made is None or made[0] is not profile or made[1] != nodes:
            cost = PreemptionCost(np.full(nodes, 100, dtype=np.int64))
            made = self._made = (profile, nodes, dataclasses.replace(profile, scorers=(*profile.scorers, cost)), cost)
        return made[2], made[3]


def select(tree: GroupTree, snapshot: Snapshot, units: Sequence[Unit], budgets: Sequence[PodDisruptionBudget],
           config: SolverConfig, profile: Profile = DEFAULT_PROFILE, usable: BoolArray | None = None,
           want: int = 0, vectors: PodVectors | None = None, need: IntArray | None = None,
           steering: Steering | None = None, *, consolidate: bool = True) -> Selection | None:
    """Choose the victims among ``units`` for ``tree`` on ``snapshot`` (see the module docstring).

    ``units``: the candidate units (``units.candidates``); ``budgets``: the PodDisruptionBudgets;
    ``usable``: the nodes the tree's pods could use at all (None: every node), for the quick capacity
    bound that spares a solve when the room cannot suffice. ``want``: pods a plan must place to count as a fit
    (beyond satisfying the tree: every pending member, when preempting for members above the minimum).
    ``vectors``: the pods' request vectors remembered across calls (the plugin's), else computed here; ``need``:
    the tree's :func:`~scheduler.solver.search.minimum_need` when the caller has it; ``steering``: the steered
    profile kept across calls (the plugin's), else made here. ``consolidate``: run the consolidation after the
    reprieve (step 3 of the module docstring; False: kube-scheduler's greedy reprieve alone).
    Returns the :class:`Selection`, or None when the tree does not fit even with every candidate gone.
    """
    ordered = sorted(units, key=importance)
    counts = violations(ordered, budgets)
    order = np.array([i for i, c in enumerate(counts) if c] + [i for i, c in enumerate(counts) if not c],
                     dtype=np.int64)
    total = len(order)
    if not total:
        return None
    position = np.empty(total, dtype=np.int64)
    position[order] = np.arange(total - 1, -1, -1, dtype=np.int64)
    whatif = WhatIf(snapshot, ordered, vectors)
    gone = whatif.gone
    bound = RoomBound(tree, snapshot, minimum_need(tree, snapshot, config, profile) if need is None else need, usable)

    def room() -> bool:
        bound.update(*whatif.room())
        return bound.may_fit()

    steered, cost = (steering or Steering()).steered(profile, len(snapshot.infos))  # scores set before each solve

    def attempt() -> tuple[Snapshot, Plan] | None:
        if not room():
            return None
        snap = whatif.snapshot()
        cost.scores[:] = whatif.cost(position)
        for chosen in (steered, profile):  # the search is a heuristic: steering it can lose a fit it would find
            result = solve(tree, snap, config, chosen)
            if isinstance(result, Plan) and len(result.placements) >= want:
                return snap, result
        return None

    def keep_least(count: int) -> None:
        gone[:] = False
        gone[order[total - count:]] = True

    # Bulk reprieve: the fewest least important units whose removal is enough. The room bound first (no solve):
    # below its count nothing fits; then solves from there, doubling, and a bisection.
    keep_least(total)
    if not room():
        return None
    low, high = 0, total
    while high - low > 1:
        middle = (low + high) // 2
        keep_least(middle)
        if room():
            high = middle
        else:
            low = middle
    count, fit = high, None
    while fit is None:
        keep_least(count)
        fit = attempt()
        if fit is not None:
            high = count
        elif count == total:
            return None
        else:
            low = count
            count = total if count == high else min(total, count * 2)  # after a miss at the bound: all of them
    while high - low > 1:
        middle = (low + high) // 2
        keep_least(middle)
        found = attempt()
        if found is not None:
            high, fit = middle, found
        else:
            low = middle
    keep_least(high)
    local = node_local(tree, fit[0], config, profile)
    plan = fit[1]
    index = snapshot.table.index
    plan_rows = {index[node] for _, node in plan.placements}

    def holds_back(batch: list[int]) -> bool:
        """Whether the tree still fits with ``batch`` put back (``gone`` already says so)."""
        nonlocal plan, plan_rows
        if local and all(plan_rows.isdisjoint(ordered[i].rows) for i in batch):
            return True
        if not room():
            return False  # too little room without them
        snap = whatif.snapshot()
        rows = [r for i in batch for r in ordered[i].rows]
        if placements_hold(tree, snap, _on_rows(plan, index, rows) if local else plan, config, profile):
            return True  # the plan places the same pods still, so it still places ``want``
        found = attempt()
        if found is None:
            return False
        plan = found[1]
        plan_rows = {index[node] for _, node in plan.placements}
        return True

    def reprieve(rest: list[int]) -> None:
        """Put back what it can of the victims ``rest`` (in reprieve order): batches doubling while the tree fits,
        halving on a miss, down to the single unit that stays a victim."""
        at, step = 0, 1
        while at < len(rest):
            batch = rest[at:at + step]
            gone[batch] = False  # try them back
            if holds_back(batch):
                at += len(batch)
                step *= 2
                continue
            gone[batch] = True
            if len(batch) > 1:
                step = max(1, len(batch) // 2)
                continue
            at += 1  # it stays a victim
            step = 1

    def evicting(adds: IntArray, count: int, batch: list[int]) -> bool:
        """Whether the tree fits with the first ``count`` of ``adds`` gone and the rest back (``batch``: every unit
        whose state may differ from when the current plan was found)."""
        gone[adds] = False
        gone[adds[:count]] = True
        return holds_back(batch)

    def consolidate_gangs(gangs: dict[tuple[int, str], list[int]]) -> int:
        """Step 3 of the module docstring over the broken ``gangs`` (key → their victims, most important gang first);
        returns how many it kept whole."""
        nonlocal plan, plan_rows
        victims = list(gangs.values())
        instead = _Instead(ordered, order[::-1].tolist(), counts.count(0), gone,
                           {key: g for g, key in enumerate(gangs)})
        unit_room = whatif.requests(bound.cols)

        def shortfall() -> IntArray:
            """``(gangs, len(cols))``: per gang, what evicting instead must free at least for the room bound to let
            the tree fit — the room its victims take back (:meth:`RoomBound.taken`) less the bound's slack."""
            room()  # the bound up to date with ``gone``
            owner, rows, vec = whatif.placed([i for members in victims for i in members])
            of = np.repeat(np.arange(len(victims)), [len(members) for members in victims])
            return bound.taken(of[owner], rows, vec, len(victims)) - bound.slack()

        short = shortfall()
        for g, members in enumerate(victims):
            picked = instead.pick(g, ordered[members[0]].priority, sum(len(ordered[i].pods) for i in members),
                                  counts, sum(counts[i] for i in members))
            if not picked or (unit_room[picked].sum(axis=0) < short[g]).any():
                continue  # the room bound refuses it even with all of them gone
            adds = np.array(picked, dtype=np.int64)
            kept = plan, plan_rows
            batch = members + picked  # every unit whose state a check below differs in from ``kept``
            gone[members] = False
            if not evicting(adds, len(adds), batch):
                gone[adds] = False
                gone[members] = True
                plan, plan_rows = kept
                continue
            low, high = -1, len(adds)  # the fewest of ``adds`` that let it fit: a bisection (fits grow with count)
            while high - low > 1:
                middle = (low + high) // 2
                if evicting(adds, middle, batch):
                    high = middle
                else:
                    low = middle
            gone[adds] = False
            gone[adds[:high]] = True  # the last check that passed was this one: ``plan`` holds here
            for i in picked[:high]:  # victims now of the gangs they belong to, which stay broken
                if (h := instead.member_of.get(i)) is not None:
                    victims[h].append(i)
            instead.saved_gang(g)
            short = shortfall()
        return len(instead.saved)

    rest = order[total - high:].tolist()  # most important first
    reprieve(rest)
    chosen = np.flatnonzero(gone).tolist()
    broken = len(gangs := _broken(ordered, chosen))
    consolidated = consolidate_gangs(gangs) if consolidate and broken >= 2 else 0
    if consolidated:  # the units evicted instead may leave room for others: the reprieve once more, over every victim
        reprieve([i for i in order.tolist() if gone[i]])
        chosen = np.flatnonzero(gone).tolist()
        broken = len(_broken(ordered, chosen))
    victims = tuple(ordered[i] for i in chosen)  # ordered is most important first
    pdb = sum(counts[i] for i in chosen)
    return Selection(victims, plan, total - len(chosen), pdb, broken, consolidated)


class _Instead:
    """The units step 3 may evict instead of a broken gang's victims, read lazily: ``ordered`` units not victims
    (``gone``) whose eviction breaks no gang not broken already — pods without a group, members of a group that can
    lose every candidate and stay at ``minCount``, members of the ``broken`` gangs (key → gang) — least important
    first: ``least_first`` is the reprieve order read backwards, its first ``split`` units over no budget, then the
    others, each run by ascending priority. A swap reads only as far as it takes, so a decision whose swaps take a
    few pods each reads a few units, whatever the number of candidates."""

    def __init__(self, ordered: Sequence[Unit], least_first: list[int], split: int, gone: BoolArray,
                 broken: dict[tuple[int, str], int]) -> None:
        self.ordered, self.gone, self.broken = ordered, gone, broken
        self.runs = (least_first[:split], least_first[split:])
        self.read = [0, 0]  # per run, how far it is read
        self.found: tuple[list[int], list[int]] = ([], [])  # per run, the units read that may be evicted instead
        self.member_of: dict[int, int] = {}
        """A unit found → the broken gang it is a member of."""
        self.saved: set[int] = set()
        """The gangs kept whole: their members are no longer evicted instead."""

    def _more(self, run: int, priority: int) -> bool:
        """Read ``run`` on to its next unit that may be evicted instead; False at the end, or at a unit above
        ``priority`` (left unread: the runs ascend in priority)."""
        units, at, ordered = self.runs[run], self.read[run], self.ordered
        while at < len(units):
            i = units[at]
            unit = ordered[i]
            if unit.priority > priority:
                break
            at += 1
            if self.gone[i] or unit.rank == RANK_ALL:
                continue
            if unit.rank == RANK_MEMBER and unit.spare < unit.group_size:  # a gang that could fall below minCount
                gang = self.broken.get((RANK_MEMBER, unit.group))
                if gang is None:
                    continue  # not broken: evicting it could break it
                self.member_of[i] = gang
            self.found[run].append(i)
            self.read[run] = at
            return True
        self.read[run] = at
        return False

    def pick(self, gang: int, priority: int, pods: int, counts: Sequence[int], violations: int) -> list[int]:
        """The first units that may be evicted instead of the victims of ``gang``: of ``priority`` or below, not of the
        gang itself nor of one kept whole, not victims, up to ``pods`` pods and ``violations`` budget violations in all
        (each unit's of ``counts``) — stopping at the first that would exceed either."""
        picked: list[int] = []
        for run in (0, 1):
            found, k = self.found[run], 0
            while k < len(found) or self._more(run, priority):
                i = found[k]
                k += 1
                unit = self.ordered[i]
                if unit.priority > priority:
                    break
                owner = self.member_of.get(i)
                if self.gone[i] or owner == gang or owner in self.saved:
                    continue
                if len(unit.pods) > pods or counts[i] > violations:
                    return picked
                picked.append(i)
                pods -= len(unit.pods)
                violations -= counts[i]
        return picked

    def saved_gang(self, gang: int) -> None:
        """``gang`` is kept whole: its members and the units now evicted leave the lists."""
        self.saved.add(gang)
        for found in self.found:
            found[:] = [i for i in found if not self.gone[i] and self.member_of.get(i) not in self.saved]


def _gang_key(unit: Unit) -> tuple[int, str] | None:
    """The gang ``unit``'s eviction counts against: an ``all`` unit's own group, a single-mode member's PodGroup;
    None for a pod without a group."""
    return (unit.rank, unit.group) if unit.rank in (RANK_ALL, RANK_MEMBER) else None


def _broken(ordered: Sequence[Unit], victims: Sequence[int]) -> dict[tuple[int, str], list[int]]:
    """The gangs the ``victims`` (indices into ``ordered``, ascending) break, most important first, each with its
    victims (see :func:`broken_gangs`)."""
    found: dict[tuple[int, str], list[int]] = {}
    for i in victims:
        key = _gang_key(ordered[i])
        if key is not None:
            found.setdefault(key, []).append(i)
    return {key: members for key, members in found.items()
            if key[0] == RANK_ALL or len(members) > ordered[members[0]].spare}


def broken_gangs(victims: Sequence[Unit]) -> int:
    """How many gangs evicting ``victims`` breaks: each ``all`` unit (its whole group goes), and each single-mode
    PodGroup more of whose members are victims than it has spare members (:attr:`Unit.spare`), so that it falls
    below ``minCount``. A pod without a group, or a member of a group without ``minCount``, breaks none."""
    return len(_broken(victims, range(len(victims))))


def _on_rows(plan: Plan, index: dict[str, int], rows: Sequence[int]) -> Plan:
    """``plan`` cut down to its placements on ``rows``: with node-local Filters only those can be broken by
    pods put back on ``rows``, so only those need checking again."""
    wanted = set(rows)
    return dataclasses.replace(plan, placements=tuple((p, n) for p, n in plan.placements if index[n] in wanted))


class RoomBound:
    """A necessary condition for the tree to fit, checked before a solve: the free room summed over the nodes
    it could use (room held for more important nominated pods taken off, as the search does) covers its
    :func:`~scheduler.solver.search.minimum_need` in every resource. Kept up to date per node changed
    (:meth:`update`), so a check costs O(nodes changed), not O(N)."""

    def __init__(self, tree: GroupTree, snapshot: Snapshot, need: IntArray, usable: BoolArray | None) -> None:
        self.cols = np.flatnonzero(need > 0)
        self.need = need[self.cols]
        self._room = snapshot.table.allocatable[:, self.cols]  # a copy (fancy indexing)
        if snapshot.nominated:
            own = {p.key for p in tree.pods()}
            for entry in snapshot.nominated:
                if entry.priority >= tree.priority and entry.pod not in own:
                    self._room[entry.row] -= entry.request[self.cols]
        if usable is not None:
            self._room[~usable] = 0  # a node the tree cannot use adds no room (clipped below: never negative)
        self._free = np.maximum(self._room - snapshot.used[:, self.cols], 0)
        self.total: IntArray = self._free.sum(axis=0)
        """``(len(cols),)``: the free room summed over the usable nodes, per resource the tree needs."""

    def update(self, rows: IntArray, used: IntArray) -> None:
        """The usage of node ``rows`` (no repeats) changed to ``used`` (``(len(rows), R)``: a what-if's,
        :meth:`WhatIf.room`)."""
        if not rows.size or not self.cols.size:
            return
        free = np.maximum(self._room[rows] - used[:, self.cols], 0)
        self.total += free.sum(axis=0) - self._free[rows].sum(axis=0)
        self._free[rows] = free

    def slack(self) -> IntArray:
        """``(len(cols),)``: by how much the room summed over the usable nodes exceeds the minimum need."""
        return self.total - self.need

    def taken(self, keys: IntArray, rows: IntArray, vectors: IntArray, count: int) -> IntArray:
        """``(count, len(cols))``: per key in ``range(count)``, the room the sum loses when the pods of that key alone
        are put back — pods of requests ``vectors`` (``(P, R)``) on node ``rows`` (``(P,)``), keys ``keys``
        (``(P,)``) — each node giving up at most its free room. Removing pods of requests ``a`` at the same time
        adds at most ``a`` (a node's free room is ``max(room − used, 0)``), so the sum is then at most
        ``total − taken + a``: below the need, the tree cannot fit."""
        out = np.zeros((count, len(self.cols)), dtype=np.int64)
        if not len(rows) or not self.cols.size:
            return out
        pairs, inverse = np.unique(keys * len(self._free) + rows, return_inverse=True)
        back = np.zeros((len(pairs), len(self.cols)), dtype=np.int64)
        np.add.at(back, inverse, vectors[:, self.cols])
        np.add.at(out, pairs // len(self._free), np.minimum(back, self._free[pairs % len(self._free)]))
        return out

    def may_fit(self) -> bool:
        """Whether the room left by the usage last given (at construction, then :meth:`update`) may hold the tree."""
        return bool(np.all(self.total >= self.need))
