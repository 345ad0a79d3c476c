"""Topology domain pruning: which domains of a group's topology key the search tries, and in which order.

A group with a topology key is placed inside one domain (node label value) of its parent's. Before trying one,
the search asks whether it *could* hold the group: :meth:`DomainPruning.need` is a lower bound of the requests
the group needs placed (per gang leaf ``minCount ×`` its smallest request; per composite the ``minGroupCount``
smallest children), and the domain's room is the free capacity of its :meth:`DomainPruning.usable` nodes (those
passing the static filters for some member). A domain whose room is below the need in some resource is pruned
(a necessary condition, so no plan is lost); the rest are tried tightest-first (``pack``) or emptiest-first
(``spread``), equal fits the busier first for ``pack`` and the idler first for ``spread`` (the share of the
domain's capacity already allocated: kube-scheduler ranks by allocation against capacity), then by name.
Bound members pin their domain. When every domain is pruned, the closest is still tried alone on
the search's second pass, so the reason comes from real per-node verdicts (:mod:`scheduler.solver.diagnosis`).

Pure: reads the cycle state; changes only its own memo, :attr:`DomainPruning.pruned` and the failure record.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import SolverConfig
from scheduler.groups.tree import Group, Leaf
from scheduler.model.scheduling import GroupKey
from scheduler.solver.diagnosis import Domain, describe
from scheduler.solver.failures import Failures
from scheduler.solver.plugins import TOPOLOGY
from scheduler.solver.plugins.resources_fit import copies
from scheduler.solver.signatures import Signatures


def room_per_domain(count: int, ids: npt.NDArray[np.int32], counted: BoolArray, cols: IntArray,
                    room: IntArray) -> IntArray:
    """``room`` (``(N, R)``: free capacity, or allocatable) in columns ``cols`` of the ``counted`` nodes of each of
    the ``count`` domains (node ``n`` is in domain ``ids[n]``), ``(count, len(cols))``; an overcommitted node has
    no room, not negative room. One pass over all domains, summed exactly in integers."""
    have = np.zeros((count, len(cols)), dtype=np.int64)
    rows = np.flatnonzero(counted)
    if rows.size:
        rows = rows[np.argsort(ids[rows], kind="stable")]  # grouped by domain
        dom = ids[rows]
        starts = np.flatnonzero(np.concatenate(([True], dom[1:] != dom[:-1])))
        for j, col in enumerate(cols):
            have[dom[starts], j] = np.add.reduceat(np.maximum(room[rows, col], 0), starts)
    return have


class DomainPruning:
    """The domains one pass of the search tries per group, and those it skipped for want of room (:attr:`pruned`).

    ``explain``: whether a group whose every domain is pruned has the closest one tried anyway, for the per-node
    verdicts of its reason (the second pass of a failed :func:`~scheduler.solver.search.solve`). Failures
    (pinned members apart, no domain, no room) are recorded into ``failures``.
    """

    def __init__(self, state: CycleState, config: SolverConfig, signatures: Signatures, failures: Failures,
                 explain: bool = False) -> None:
        self.state = state
        self.table = state.table
        self.config = config
        self.signatures = signatures
        self.failures = failures
        self.explain = explain
        self.pruned: dict[GroupKey, tuple[Group, set[int]]] = {}
        """Per group, the domains of its key skipped for want of room (in any parent domain)."""
        self._need: dict[GroupKey, IntArray] = {}
        self._usable: dict[GroupKey, BoolArray] = {}

    def need(self, group: Group) -> IntArray:
        """A lower bound of the requests the group needs placed to be satisfied, ``(R,)``."""
        hit = self._need.get(group.key)
        if hit is not None:
            return hit
        if isinstance(group, Leaf):
            sigs = self.signatures.of(group)
            smallest = np.min([s.request for s in sigs], axis=0) if sigs else np.zeros(len(self.table.resources))
            vec = (smallest * group.need).astype(np.int64)
        else:
            kids = np.array([self.need(c) for c in group.children], dtype=np.int64)
            k = min(group.need, len(group.children))
            vec = np.sort(kids, axis=0)[:k].sum(axis=0) if k else np.zeros(len(self.table.resources), np.int64)
        self._need[group.key] = vec
        return vec

    def usable(self, group: Group) -> BoolArray:
        """Nodes some pending member of the group could use: passing the static filters for at least one signature
        of its leaves, ``(N,)``. Capacity elsewhere can never hold a member, so the pruning sums free capacity over
        these nodes only."""
        hit = self._usable.get(group.key)
        if hit is not None:
            return hit
        mask = np.zeros(len(self.table), dtype=bool)
        for leaf in group.leaves():
            for sig in self.signatures.of(leaf):
                mask |= sig.static.ok
        self._usable[group.key] = mask
        return mask

    def to_try(self, group: Group, mask: BoolArray) -> list[tuple[Domain, BoolArray]]:
        """Candidate domains of the group's topology key inside ``mask``, in try order, pruned by room: each with
        its nodes, ``(N,)``.

        A domain is pruned when the free capacity of its :meth:`usable` nodes is below :meth:`need` for some
        resource (a necessary condition: it cannot hold the group). When every domain is pruned and the search
        is to :attr:`explain`, the one with the most room for the need is still tried, alone: its attempt gives the
        per-node verdicts the reason is built from (:mod:`~scheduler.solver.diagnosis`), so a taint or a rule
        between pods is reported as such, not as the shortage of room it causes. Otherwise nothing is tried and
        the group's failure is recorded as not explained.
        """
        key = group.topology_key
        assert key is not None
        doms = self.table.domains(key)
        ids = doms.of_node
        pinned = {int(ids[self.table.index[p.spec.node_name]]) for leaf in group.leaves() for p in leaf.bound
                  if p.spec.node_name in self.table.index}
        present = np.unique(ids[mask & (ids >= 0)])
        if pinned:
            if len(pinned) > 1 or -1 in pinned:
                self.failures.record(group, 0, f"{describe(group)}: bound members are not all in one {key} domain",
                                     False, frozenset((TOPOLOGY,)))
                return []
            present = present[np.isin(present, list(pinned))]
        if not present.size:
            if not len(self.table):
                message = f"{describe(group)}: no nodes available to schedule pods"  # kube's ErrNoNodesAvailable
            else:
                message = f"{describe(group)}: no node has the label {key}"
            self.failures.record(group, 0, message, False, frozenset((TOPOLOGY,)))
            return []
        ratios = np.zeros(len(doms.values))
        short: BoolArray = np.zeros(len(doms.values), dtype=bool)
        need = self.need(group)
        cols = np.flatnonzero(need > 0)
        counted = mask & self.usable(group) & (ids >= 0)
        if cols.size:
            # A necessary condition: every member placed lands on a node passing its static
            # filters, so what the group needs must fit in the free capacity of those nodes.
            have = room_per_domain(len(doms.values), ids, counted, cols, self.state.free)
            ratios = (need[cols] / np.maximum(have, 1)).max(axis=1)  # the largest share of its room it needs
            short = np.any(have < need[cols], axis=1)
        if short.any():
            self.pruned.setdefault(group.key, (group, set()))[1].update(int(d) for d in present if short[d])
        kept = [int(d) for d in present if not short[d]]
        if kept:
            reverse = self.config.scoring == "pack"
            busy = np.zeros(len(doms.values))  # share of capacity allocated: ties go to the busier (pack) or idler
            if cols.size and len(kept) > 1:
                capacity = room_per_domain(len(doms.values), ids, counted, cols, self.table.allocatable)
                busy = ((capacity - have) / np.maximum(capacity, 1)).sum(axis=1)
            kept.sort(key=lambda d: (-ratios[d], -busy[d], doms.values[d]) if reverse
                      else (ratios[d], busy[d], doms.values[d]))
            return [(Domain(key, doms.values[d], len(present)), mask & (ids == d)) for d in kept]
        if not self.explain:
            self.failures.record(group, 0, f"{describe(group)}: no {key} domain has room for its minimum on the nodes "
                                 f"its members may use ({len(present)} checked)", True, frozenset((TOPOLOGY,)),
                                 explained=False)
            return []
        # Every domain is short of room: the closest is the one with the most room for the need, then the one
        # with the most room were its nodes emptied (where evictions would help most).
        capacity = room_per_domain(len(doms.values), ids, counted, cols, self.table.allocatable)
        emptied = (need[cols] / np.maximum(capacity, 1)).max(axis=1)
        def room(d: int) -> tuple[float, float]:
            return float(ratios[d]), float(emptied[d])

        closest = min(map(int, present), key=lambda d: (*room(d), doms.values[d]))
        by_room = any(room(int(d)) != room(closest) for d in present)  # else merely the first by name
        together = bool(cols.size) and bool((have[present].sum(axis=0) >= need[cols]).all())
        if together and isinstance(group, Leaf) and group.need:  # and their nodes hold that many members, whole
            smallest = need // group.need  # the members' smallest requests per resource (need is that × the count)
            rows = np.flatnonzero(counted & np.isin(ids, present))
            together = int(copies(self.state.free, smallest, rows).sum()) >= group.need
        return [(Domain(key, doms.values[closest], len(present), by_room=by_room, together=together),
                 mask & (ids == closest))]

    def room_may_free(self) -> bool:
        """Whether some domain skipped for room could hold its group were the nodes its members may use emptied:
        then evicting pods there might help, and the failure is one preemption may try (UNSCHEDULABLE) even
        where every node the search did try refused for good. Computed only for a failed search."""
        for group, skipped in self.pruned.values():
            need = self.need(group)
            cols = np.flatnonzero(need > 0)
            key = group.topology_key
            assert key is not None
            doms = self.table.domains(key)
            capacity = room_per_domain(len(doms.values), doms.of_node, self.usable(group) & (doms.of_node >= 0),
                                       cols, self.table.allocatable)
            if bool((capacity[sorted(skipped)] >= need[cols]).all(axis=1).any()):
                return True
        return False
