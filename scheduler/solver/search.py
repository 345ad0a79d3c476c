"""The all-or-nothing search over a group tree, on the scheduling framework.

``solve(tree, snapshot, config)`` places the whole tree against one
:class:`~scheduler.framework.cycle_state.CycleState` (scratch free capacity plus the plugins'
state, one undo journal), so siblings can never double-book, and returns a
:class:`~scheduler.framework.plan.Plan` only when every gang leaf has ≥ minCount members placed
(bound members count) and every gang composite ≥ minGroupCount children satisfied, all at once;
otherwise :class:`~scheduler.framework.plan.Unschedulable` and nothing.

How (docs/architecture.md, "The solver"):

* **Signatures.** A leaf's pending pods are grouped by scheduling signature (static-filter
  inputs, requests, and what each PreFilter plugin reads); for each signature the Filter plugins
  say how many copies fit per node in one vectorised pass instead of trying pods one by one.
* **Choosing nodes.** Score plugins' weighted sum, then the packing order
  (:mod:`scheduler.solver.plugins.scoring`); every placement goes through the Reserve plugins and
  the journal, so later members and siblings see it.
* **Topology.** A group with a topology key is placed inside one domain (node label value)
  chosen among those inside its parent's domain; domains whose free capacity, summed over the
  nodes that pass the static filters for some member, cannot hold the group's minimum are
  pruned, the rest are tried tightest-first (``pack``) or emptiest-first (``spread``), equal fits the busier
  first for ``pack`` and the idler for ``spread`` (the share of capacity already allocated: kube ranks by
  allocation against capacity), then by name; when all are
  pruned, the one with the most room is tried alone, so that the reason comes from its per-node
  verdicts (:mod:`scheduler.solver.diagnosis`). Bound members pin their domain.
* **Backtracking.** Each group yields its feasible placements one at a time (a generator that
  keeps its placement applied while suspended); a composite searches its children depth-first,
  so a child that cannot fit makes the search revisit an earlier sibling's domain. The search
  is bounded by ``SolverConfig.search_budget`` subtree placements.

Pure: no I/O, no clock, no module state; the same input gives the same plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin, Quota, QuotaFilterPlugin, Signature
from scheduler.framework.node_table import BoolArray, IntArray, static_key
from scheduler.framework.plan import Plan, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.groups.tree import Composite, Group, GroupTree, Leaf
from scheduler.model.pod import Pod
from scheduler.model.quantity import is_extended
from scheduler.model.scheduling import GroupKey
from scheduler.solver.diagnosis import Diagnosis, Domain, describe, diagnose, leaf_message, phrase, room_short
from scheduler.solver.plugins import DEFAULT_PROFILE, TOPOLOGY, Profile, dynamic_resources
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.scoring import NodeOrder


class _BudgetExhausted(Exception):
    """Raised inside the search when ``search_budget`` attempts were used."""


@dataclass(slots=True)
class _Failure:
    """The best failed attempt seen for a group: most pods placed, why it stopped, which plugins said so."""

    placed: int
    message: str
    resource_limited: bool
    rejectors: frozenset[str] = frozenset()
    explained: bool = True
    """False for a group whose every domain was skipped for room without the closest being tried: the message
    then lacks the per-node verdicts (the first pass of :func:`solve`)."""


class _Search:
    """One solver run: the cycle state, the profile's plugins and the failure record."""

    def __init__(self, snapshot: Snapshot, config: SolverConfig, tree: GroupTree, profile: Profile,
                 explain: bool = False) -> None:
        pending = tuple(p for leaf in tree.root.leaves() for p in leaf.pending)
        own = frozenset(p.key for p in pending) if snapshot.nominated else frozenset()  # only then does it matter
        profile = profile.for_pods(snapshot, pending)  # without the plugins no pod of this root needs
        self.profile = profile
        self.state = CycleState(snapshot, config, tree.priority, profile.reservers, own, pending)
        self.table = snapshot.table
        self.config = config
        self.attempts = 0
        self.failures: dict[GroupKey, _Failure] = {}
        self.satisfied: set[GroupKey] = set()
        self.leftover: dict[GroupKey, str] = {}
        """Per satisfied leaf whose placement is applied now: why its remaining members were not placed."""
        self._sigs: dict[GroupKey, list[Signature]] = {}
        self._need: dict[GroupKey, IntArray] = {}
        self._usable: dict[GroupKey, BoolArray] = {}
        self.explain = explain
        """Whether a group whose every domain is pruned for room has the closest one tried anyway, for the
        per-node verdicts of its reason (the second pass of a failed :func:`solve`)."""
        self.exhausted = False
        """The search stopped at ``search_budget`` attempts."""
        self.pruned: dict[GroupKey, tuple[Group, set[int]]] = {}
        """Per group, the domains of its key skipped for want of room (in any parent domain)."""

    # -- state ---------------------------------------------------------------------
    def mark(self) -> int:
        return self.state.mark()

    def undo(self, mark: int) -> None:
        self.state.undo(mark)

    def tick(self) -> None:
        self.attempts += 1
        if self.attempts > self.config.search_budget:
            raise _BudgetExhausted

    def fail(self, group: Group, placed: int, message: str, resource_limited: bool,
             rejectors: frozenset[str] = frozenset(), explained: bool = True) -> None:
        """Record a failed attempt of ``group`` if it placed more members than the best so far (an explained one
        replaces an unexplained one that placed as many)."""
        best = self.failures.get(group.key)
        if best is None or placed > best.placed or (placed == best.placed and explained and not best.explained):
            self.failures[group.key] = _Failure(placed, message, resource_limited, rejectors, explained)

    def unexplained(self, keys: Iterable[GroupKey]) -> bool:
        """Whether the failure recorded for one of ``keys`` lacks the per-node verdicts (see :class:`_Failure`)."""
        return any(not f.explained for k in keys if (f := self.failures.get(k)) is not None)

    # -- signatures ----------------------------------------------------------------
    def signatures(self, leaf: Leaf) -> list[Signature]:
        """The leaf's pending pods grouped by signature, largest requests first (bin-packing order); each
        signature went through every PreFilter plugin."""
        hit = self._sigs.get(leaf.key)
        if hit is not None:
            return hit
        groups: dict[tuple[object, ...], list[Pod]] = {}
        pre_filters = self.profile.pre_filters
        for pod in leaf.pending:
            key: tuple[object, ...] = (static_key(pod.spec), tuple(sorted(pod.requests.items())))
            if pre_filters:
                key += tuple(p.signature_key(self.state, pod) for p in pre_filters)
            groups.setdefault(key, []).append(pod)
        sigs: list[Signature] = []
        for pods in groups.values():
            first = pods[0]
            vec, unknown = self.table.request_vector(first.requests)
            accel = any(is_extended(r) and v > 0 for r, v in first.requests.items())
            sig = Signature(tuple(pods), vec, unknown, self.table.static_fit(first.spec, self.profile.static_check),
                            accel)
            for plugin in self.profile.pre_filters:
                nodes = plugin.pre_filter(self.state, sig)
                if nodes is not None:
                    sig.nodes = nodes if sig.nodes is None else sig.nodes & nodes
            sigs.append(sig)
        share = self.table.max_allocatable
        sigs.sort(key=lambda s: -float((s.request / share).sum()))
        self._sigs[leaf.key] = sigs
        return sigs

    def need(self, group: Group) -> IntArray:
        """A lower bound of the requests the group needs placed to be satisfied, ``(R,)``."""
        hit = self._need.get(group.key)
        if hit is not None:
            return hit
        if isinstance(group, Leaf):
            sigs = self.signatures(group)
            smallest = np.min([s.request for s in sigs], axis=0) if sigs else np.zeros(len(self.table.resources))
            vec = (smallest * group.need).astype(np.int64)
        else:
            kids = np.array([self.need(c) for c in group.children], dtype=np.int64)
            k = min(group.need, len(group.children))
            vec = np.sort(kids, axis=0)[:k].sum(axis=0) if k else np.zeros(len(self.table.resources), np.int64)
        self._need[group.key] = vec
        return vec

    def usable(self, group: Group) -> BoolArray:
        """Nodes some pending member of the group could use: passing the static filters for at least
        one signature of its leaves, ``(N,)``. Capacity elsewhere can never hold a member, so the
        domain pruning sums free capacity over these nodes only."""
        hit = self._usable.get(group.key)
        if hit is not None:
            return hit
        mask = np.zeros(len(self.table), dtype=bool)
        for leaf in group.leaves():
            for sig in self.signatures(leaf):
                mask |= sig.static.ok
        self._usable[group.key] = mask
        return mask

    # -- leaves --------------------------------------------------------------------
    def caps(self, sig: Signature, rows: IntArray, plugins: tuple[FilterPlugin, ...]) -> IntArray:
        """Copies of ``sig`` each of ``rows`` can take now: the minimum over ``plugins`` (no limit if none)."""
        caps: IntArray | None = None
        for plugin in plugins:
            got = plugin.filter(self.state, sig, rows)
            if got is not None:
                caps = got if caps is None else np.minimum(caps, got)
        return caps if caps is not None else np.full(len(rows), UNLIMITED, dtype=np.int64)

    def preference(self, sig: Signature, rows: IntArray) -> IntArray | None:
        """The Score plugins' weighted sum per row, or None when no plugin has a preference."""
        total: IntArray | None = None
        for plugin in self.profile.scorers:
            scores = plugin.score(self.state, sig, rows)
            if scores is not None and scores.any():
                weighted = scores.astype(np.int64) * plugin.weight
                total = weighted if total is None else total + weighted
        return total

    def choose(self, rows: IntArray, count: int, sig: Signature) -> int:
        """Place up to ``count`` copies of ``sig`` on candidate ``rows``; returns how many were placed.

        Each choice is reserved at once (journaled); a node that takes fewer than chosen (its devices
        ran short) is dropped and the choice made again. The Filter plugins that say they *interact*
        (a rule between members over a domain wider than a node: zone anti-affinity, spread) are asked
        again after each placement, so they see the copies placed before; the others' answers are
        counted down on the node used, which is all a placement changes for them. An interacting
        plugin that can state its rule as a :class:`~scheduler.framework.interface.Quota` for the
        batch (per-domain budgets: topology spread) is counted down like the others instead; if the
        batch then falls short of its quota, it is undone and placed again copy by copy. Scores are
        asked again when a Score plugin interacts.
        """
        mark = self.mark()
        done = self._choose(rows, count, sig, quotas=True)
        if done < 0:  # a quota batch fell short: its partial state may be one no order reaches
            self.undo(mark)
            done = self._choose(rows, count, sig, quotas=False)
        return done

    def _choose(self, rows: IntArray, count: int, sig: Signature, quotas: bool) -> int:
        """:meth:`choose`'s loop; −1 when a quota batch placed fewer copies than its quota promised."""
        order = NodeOrder(self.state, sig, rows)
        filters = self.profile.filters
        interacting = tuple(p for p in filters if p.interacts(self.state, sig))
        steady = np.minimum(self.caps(sig, rows, tuple(p for p in filters if p not in interacting)), count)
        budgets: list[Quota] = []
        if quotas:
            asked_each_time: list[FilterPlugin] = []
            for plugin in interacting:
                quota = cast(QuotaFilterPlugin, plugin).quota(self.state, sig, rows, steady, count) if (
                    plugin.name in self.profile.quota_filters) else None  # Profile checked the protocol once
                if quota is None:
                    asked_each_time.append(plugin)
                else:
                    budgets.append(quota)
                    steady = np.minimum(steady, quota.caps)
            interacting = tuple(asked_each_time)
        promised = min([count] + [int(q.budget.sum()) for q in budgets])
        # per quota, once: each row's index into its budget, and which rows have none (−1)
        lookups = [(q, np.maximum(q.domain, 0), None if bool((q.domain >= 0).all()) else q.domain < 0)
                   for q in budgets]

        def current(remaining: int) -> IntArray:
            caps = steady
            for q, index, unbudgeted in lookups:
                per_row = q.budget.take(index)
                if unbudgeted is not None:
                    per_row[unbudgeted] = UNLIMITED
                caps = np.minimum(caps, per_row)
            if interacting:
                caps = np.minimum(caps, self.caps(sig, rows, interacting))
            return np.asarray(np.minimum(caps, remaining), dtype=np.int64)

        between = bool(budgets or interacting)
        caps = current(count) if between else steady  # without rules between members: one array, counted down
        preference = self.preference(sig, rows)
        rescore = any(p.interacts(self.state, sig) for p in self.profile.scorers)
        done = 0
        remaining = count
        valid = caps > 0
        if not between and preference is None and not rescore and self.config.scoring == "pack":
            # nothing changes between picks but the nodes used: make them all at once
            for j, take in order.run(np.flatnonzero(valid), caps, remaining):
                got = self.state.reserve(int(rows[j]), sig, sig.pods[done:done + take])
                done += got
                remaining -= got
                caps[j] -= got
                valid[j] = caps[j] > 0
                if got < take:  # its devices ran short: never offer it again; the loop below goes on
                    valid[j] = False
                    caps[j] = 0
                    break
        while remaining > 0 and valid.any():
            j, take = order.pick(np.flatnonzero(valid), caps, remaining, preference)
            got = self.state.reserve(int(rows[j]), sig, sig.pods[done:done + take])
            done += got
            remaining -= got
            if got < take:  # its devices ran short: never offer it again for this signature
                valid[j] = False
                caps[j] = 0
                steady[j] = 0
                continue
            if between:
                steady[j] -= got
                for q in budgets:
                    if q.domain[j] >= 0:
                        q.budget[q.domain[j]] -= got
            if between and remaining > 0:  # a rule between members: other nodes' answers change
                caps = current(remaining)  # (a spread constraint may open a node again once the others caught up)
                valid = caps > 0
            else:  # ``caps`` is ``steady`` when no rule is between members: counted down once
                caps[j] -= got
                valid[j] = caps[j] > 0
            if rescore and remaining > 0:
                preference = self.preference(sig, rows)
        if budgets and done < promised:
            return -1
        return done

    def place_leaf(self, leaf: Leaf, mask: BoolArray, limit: int | None = None) -> tuple[int, Diagnosis | None]:
        """Place as many pending members as fit inside ``mask`` (at most ``limit`` if given).

        Returns (pods placed, the diagnosis for the first member that did not fit, or None).
        """
        placed = 0
        why: Diagnosis | None = None
        outer, self.state.scope = self.state.scope, mask  # the leaf's domain, for plugins that rule within it
        try:
            placed, why = self._place_signatures(leaf, mask, limit)
        finally:
            self.state.scope = outer
        return placed, why

    def _place_signatures(self, leaf: Leaf, mask: BoolArray, limit: int | None) -> tuple[int, Diagnosis | None]:
        placed = 0
        why: Diagnosis | None = None
        for sig in self.signatures(leaf):
            n = len(sig.pods) if limit is None else min(len(sig.pods), limit - placed)
            if n <= 0:
                continue
            if sig.rejected is not None:
                why = why or Diagnosis(sig.rejected.reasons[0], sig.rejected.code is Code.UNSCHEDULABLE,
                                        frozenset((sig.rejected.plugin,)))
                continue
            done = 0
            allowed = mask & sig.static.ok if sig.nodes is None else mask & sig.static.ok & sig.nodes
            rows = np.flatnonzero(allowed)
            if rows.size:
                done = self.choose(rows, n, sig)
            placed += done
            if done < n and why is None:
                why = diagnose(self.state, self.profile, sig, mask)
        return placed, why

    def leaf_satisfied(self, leaf: Leaf, placed: int) -> bool:
        if leaf.min_count is None:
            return placed + len(leaf.bound) >= 1
        return placed + len(leaf.bound) >= leaf.min_count

    # -- groups --------------------------------------------------------------------
    def alternatives(self, group: Group, mask: BoolArray, where: Domain | None = None) -> Iterator[None]:
        """Yield once per feasible placement of ``group`` within ``mask``, holding it applied while suspended.

        ``where``: the domain ``mask`` lies in (the parent's), named by the reasons of a group without a key.
        """
        if group.topology_key is None:
            yield from self.within(group, mask, where)
            return
        for domain, dmask in self.domain_masks(group, mask):
            yield from self.within(group, dmask, domain)

    def _domain_room(self, count: int, ids: npt.NDArray[np.int32], counted: BoolArray, cols: IntArray,
                     room: IntArray) -> IntArray:
        """``room`` (``(N, R)``: free capacity, or allocatable) in columns ``cols`` of the ``counted`` nodes of
        each of the ``count`` domains (node ``n`` is in domain ``ids[n]``), ``(count, len(cols))``; an
        overcommitted node has no room, not negative room. One pass over all domains, summed exactly in
        integers."""
        have = np.zeros((count, len(cols)), dtype=np.int64)
        rows = np.flatnonzero(counted)
        if rows.size:
            rows = rows[np.argsort(ids[rows], kind="stable")]  # grouped by domain
            dom = ids[rows]
            starts = np.flatnonzero(np.concatenate(([True], dom[1:] != dom[:-1])))
            for j, col in enumerate(cols):
                have[dom[starts], j] = np.add.reduceat(np.maximum(room[rows, col], 0), starts)
        return have

    def domain_masks(self, group: Group, mask: BoolArray) -> list[tuple[Domain, BoolArray]]:
        """Candidate domains of the group's topology key inside ``mask``, in try order, pruned by capacity.

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
                self.fail(group, 0, f"{describe(group)}: bound members are not all in one {key} domain", False,
                          frozenset((TOPOLOGY,)))
                return []
            present = present[np.isin(present, list(pinned))]
        if not present.size:
            if not len(self.table):
                message = f"{describe(group)}: no nodes available to schedule pods"  # kube's ErrNoNodesAvailable
            else:
                message = f"{describe(group)}: no node has the label {key}"
            self.fail(group, 0, message, False, frozenset((TOPOLOGY,)))
            return []
        ratios = np.zeros(len(doms.values))
        short: BoolArray = np.zeros(len(doms.values), dtype=bool)
        need = self.need(group)
        cols = np.flatnonzero(need > 0)
        counted = mask & self.usable(group) & (ids >= 0)
        if cols.size:
            # A necessary condition: every member placed lands on a node passing its static
            # filters, so what the group needs must fit in the free capacity of those nodes.
            have = self._domain_room(len(doms.values), ids, counted, cols, self.state.free)
            ratios = (need[cols] / np.maximum(have, 1)).max(axis=1)  # the largest share of its room it needs
            short = np.any(have < need[cols], axis=1)
        if short.any():
            self.pruned.setdefault(group.key, (group, set()))[1].update(int(d) for d in present if short[d])
        kept = [int(d) for d in present if not short[d]]
        if kept:
            reverse = self.config.scoring == "pack"
            busy = np.zeros(len(doms.values))  # share of capacity allocated: ties go to the busier (pack) or idler
            if cols.size and len(kept) > 1:
                capacity = self._domain_room(len(doms.values), ids, counted, cols, self.table.allocatable)
                busy = ((capacity - have) / np.maximum(capacity, 1)).sum(axis=1)
            kept.sort(key=lambda d: (-ratios[d], -busy[d], doms.values[d]) if reverse
                      else (ratios[d], busy[d], doms.values[d]))
            return [(Domain(key, doms.values[d], len(present)), mask & (ids == d)) for d in kept]
        if not self.explain:
            self.fail(group, 0, f"{describe(group)}: no {key} domain has room for its minimum on the nodes its "
                      f"members may use ({len(present)} checked)", True, frozenset((TOPOLOGY,)), explained=False)
            return []
        # Every domain is short of room: the closest is the one with the most room for the need, then the one
        # with the most room were its nodes emptied (where evictions would help most).
        capacity = self._domain_room(len(doms.values), ids, counted, cols, self.table.allocatable)
        emptied = (need[cols] / np.maximum(capacity, 1)).max(axis=1)
        closest = min(map(int, present), key=lambda d: (float(ratios[d]), float(emptied[d]), doms.values[d]))
        return [(Domain(key, doms.values[closest], len(present)), mask & (ids == closest))]

    def within(self, group: Group, mask: BoolArray, where: Domain | None) -> Iterator[None]:
        """Yield the feasible placements of ``group`` inside ``mask`` (no further domain choice at this level);
        ``where``: the domain ``mask`` is, for the reasons."""
        if isinstance(group, Leaf):
            devices = self.profile.devices
            shared = devices.shared_claims(self.state, group.pending)
            if not shared:
                yield from self.leaf_within(group, mask, where)
                return
            found = False
            for _ in devices.shared(self.state, group.name, shared, mask):
                found = True
                yield from self.leaf_within(group, mask, where)
            if not found:
                keys = ", ".join(c.key for c in shared)
                errors = "; ".join(dynamic_resources.selector_errors(self.state))
                self.fail(group, 0, f"{describe(group)}: cannot allocate shared claim(s) {keys} on any reachable "
                          f"devices{phrase(where, closest=True)}{'; ' + errors if errors else ''}", True,
                          frozenset((devices.name,)))
            return
        yield from self.children(group, 0, 0, mask, where)

    def leaf_within(self, group: Leaf, mask: BoolArray, where: Domain | None) -> Iterator[None]:
        """Place a leaf's members inside ``mask``; yield if the leaf is satisfied (held while suspended).

        Two alternatives: first every pending member that fits (as many as fit, at least minCount); then, if
        that placed more than the minimum, exactly the minimum — so extra members of one gang never starve a
        sibling the parent needs (a gang already satisfied by its bound members may then place nothing). The
        first attempt's shortfall is recorded as the leaf's failure (:meth:`fail` keeps the best); inside a
        topology domain ``where`` it names the domain and, when the leaf is not satisfied for want of room alone,
        the room the domain lacked (measured once the attempt is undone).
        """
        minimum = group.need
        first: int | None = None
        for limit in (None, minimum):
            if limit is not None and (first is None or first <= limit):
                return
            self.tick()
            start = self.mark()
            placed, why = self.place_leaf(group, mask, limit)
            satisfied = self.leaf_satisfied(group, placed)
            if not satisfied:
                self.undo(start)
            reason = why.message if why is not None else ""
            if limit is None:
                first = placed
                if placed < len(group.pending):
                    context = phrase(where, closest=True)
                    if where is not None and not satisfied and why is not None:
                        context += room_short(self.table, self.state.free, why.short_of_room, self.need(group))
                    self.fail(group, placed, leaf_message(group, placed, reason, "placeable", context),
                              why is not None and why.limited, why.rejectors if why is not None else frozenset())
            if not satisfied:
                return
            self.satisfied.add(group.key)
            if placed < len(group.pending):
                self.leftover[group.key] = leaf_message(group, placed, reason or "left pending so that sibling "
                                                        "groups fit", "placed", phrase(where, closest=False))
            yield
            self.leftover.pop(group.key, None)
            self.satisfied.discard(group.key)
            self.undo(start)

    def children(self, comp: Composite, i: int, ok: int, mask: BoolArray, where: Domain | None) -> Iterator[None]:
        """Depth-first over children ``i…``: each child placed (every alternative) or skipped; ``where``: the
        domain ``mask`` is (the composite's, or its parent's).

        Prunes as soon as fewer than ``need`` satisfied children remain reachable.
        """
        n = len(comp.children)
        if ok + (n - i) < comp.need:
            if comp.min_group_count is None:
                message = f"{describe(comp)}: no child group fits{phrase(where, closest=True)}"
            else:
                message = (f"{describe(comp)}: {ok}/{n} child groups satisfied (minGroupCount {comp.need})"
                           f"{phrase(where, closest=True)}")
            self.fail(comp, ok, message, any(f.resource_limited for f in self.failures.values()),
                      frozenset(r for f in self.failures.values() for r in f.rejectors))
            return
        if i == n:
            self.satisfied.add(comp.key)
            yield
            self.satisfied.discard(comp.key)
            return
        for _ in self.alternatives(comp.children[i], mask, where):
            yield from self.children(comp, i + 1, ok + 1, mask, where)
        yield from self.children(comp, i + 1, ok, mask, where)

    # -- results -------------------------------------------------------------------
    def plan(self, tree: GroupTree) -> Plan:
        placements: list[tuple[Pod, str]] = []
        placed_keys: set[str] = set()
        for entry in self.state.journal:
            name = self.table.nodes[entry.row].name
            for pod in entry.pods:
                placements.append((pod, name))
                placed_keys.add(pod.key)
        unplaced: dict[str, str] = {}
        reasons: dict[GroupKey, str] = {}
        for leaf in tree.root.leaves():
            if leaf.key in self.satisfied:  # placed; members left over say how many this plan placed
                message = self.leftover.get(leaf.key, "")
            else:  # left out whole: the best attempt's count and reason
                failure = self.failures.get(leaf.key)
                message = failure.message if failure else f"{describe(leaf)}: not needed by its parent group"
                reasons[leaf.key] = message
            for pod in leaf.pending:
                if pod.key not in placed_keys:
                    unplaced[pod.key] = message
        return Plan(tree.key, tuple(placements), frozenset(self.satisfied), unplaced, reasons, self.attempts,
                    self.profile.devices.claim_allocations(self.state),
                    tuple(dynamic_resources.selector_errors(self.state)),
                    self.profile.volumes.bindings(self.state))

    def unschedulable(self, tree: GroupTree, budget: bool) -> Unschedulable:
        reasons = {k: f.message for k, f in self.failures.items()}
        root = self.failures.get(tree.key)
        parts: list[str] = []
        if budget:
            parts.append(f"search budget of {self.config.search_budget} attempts exhausted")
        if root is not None:
            parts.append(root.message)
        for key in tree.groups:
            if key != tree.key and key in reasons and isinstance(self._group(tree, key), Leaf):
                parts.append(reasons[key])
        limited = budget or any(f.resource_limited for f in self.failures.values()) or self.room_may_free()
        code = Code.UNSCHEDULABLE if limited else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        message = "; ".join(dict.fromkeys(parts)) or f"{describe(tree.root)}: does not fit"
        for key in tree.groups:
            reasons.setdefault(key, message)
        rejectors = frozenset(r for f in self.failures.values() for r in f.rejectors)
        if self.pruned:  # room freed, or a node added, in a domain skipped for room may let the tree in
            rejectors |= {TOPOLOGY}
        return Unschedulable(tree.key, code, message, reasons, self.attempts, rejectors,
                             tuple(dynamic_resources.selector_errors(self.state)))

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
            capacity = self._domain_room(len(doms.values), doms.of_node, self.usable(group) & (doms.of_node >= 0),
                                         cols, self.table.allocatable)
            if bool((capacity[sorted(skipped)] >= need[cols]).all(axis=1).any()):
                return True
        return False

    def run(self, tree: GroupTree) -> Plan | Unschedulable:
        """The first yielded placement of ``tree``'s root as a :class:`Plan`, or the :class:`Unschedulable`."""
        everything = np.ones(len(self.table), dtype=bool)
        try:
            for _ in self.alternatives(tree.root, everything):
                plan = self.plan(tree)
                if plan.placements or not any(leaf.pending for leaf in tree.root.leaves()):
                    return plan
                break
        except _BudgetExhausted:
            self.exhausted = True
            return self.unschedulable(tree, budget=True)
        return self.unschedulable(tree, budget=False)

    @staticmethod
    def _group(tree: GroupTree, key: GroupKey) -> Group | None:
        stack: list[Group] = [tree.root]
        while stack:
            g = stack.pop()
            if g.key == key:
                return g
            if isinstance(g, Composite):
                stack.extend(g.children)
        return None


def solve(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
          profile: Profile = DEFAULT_PROFILE) -> Plan | Unschedulable:
    """Find an all-or-nothing placement for ``tree`` on ``snapshot``.

    ``tree``: a READY tree from :mod:`scheduler.groups`. ``snapshot``: the cycle's view (not
    modified). ``profile``: the plugins to run (the default profile unless a test says otherwise).
    Returns a :class:`Plan` whose placements satisfy every gang in the tree at once, or
    :class:`Unschedulable` with per-group reasons and the plugins that rejected. A plan that would
    place no pod at all is reported as Unschedulable. Never raises for unschedulable input.

    The search skips topology domains too short of room to hold a group. When a group it reports on (the
    failure's, or one a plan leaves out) had every domain skipped, it is run once more trying the closest of
    those domains, so the reasons are built from real per-node verdicts (:mod:`scheduler.solver.diagnosis`);
    a plan that leaves no such group out never pays for that. ``attempts`` then counts both passes, each
    bounded by ``search_budget``; the second finds the same plan, if any (the domains it adds cannot hold
    their group), and if it runs out of budget the first pass's answer is returned as it was.
    """
    config = config or SolverConfig()
    first = _Search(snapshot, config, tree, profile)
    result = first.run(tree)
    reported = result.group_reasons.keys() if isinstance(result, Plan) else first.failures.keys()
    if first.exhausted or not first.unexplained(reported):
        return result
    second = _Search(snapshot, config, tree, profile, explain=True)
    explained = second.run(tree)
    if second.exhausted or isinstance(explained, Plan) != isinstance(result, Plan):
        return result  # the second pass ran out of budget: the first's complete answer stands
    return dataclasses.replace(explained, attempts=first.attempts + second.attempts)


def placements_hold(tree: GroupTree, snapshot: Snapshot, plan: Plan, config: SolverConfig | None = None,
                    profile: Profile = DEFAULT_PROFILE) -> bool:
    """Whether ``plan`` — made for ``tree`` on another snapshot — still holds on ``snapshot`` as it is.

    Each of the plan's placements, in plan order, must pass the static filters and every Filter
    plugin on its node with the placements before it reserved (kube-scheduler 1.37's reprieve check,
    ``podgrouppreemption.go``: Filter for every planned preemptor pod on its proposed node, the earlier
    ones assumed). The placement is not searched again, so this is much cheaper than :func:`solve` —
    and stricter: False may mean only that *this* placement no longer works. Plans whose leaves use
    shared claims (DRA) are never confirmed here (False: solve again). Pure; never raises.
    """
    search = _Search(snapshot, config or SolverConfig(), tree, profile)
    sig_of: dict[str, Signature] = {}
    for leaf in tree.root.leaves():
        if profile.devices.shared_claims(search.state, leaf.pending):
            return False
        for sig in search.signatures(leaf):
            for pod in sig.pods:
                sig_of[pod.key] = sig
    index = snapshot.table.index
    runs: list[tuple[int, Signature, list[Pod]]] = []
    for pod, node in plan.placements:
        found, where = sig_of.get(pod.key), index.get(node)
        if found is None or where is None:
            return False
        if runs and runs[-1][0] == where and runs[-1][1] is found:
            runs[-1][2].append(pod)
        else:
            runs.append((where, found, [pod]))
    for row, sig, pods in runs:
        if sig.rejected is not None or not sig.static.ok[row] or (sig.nodes is not None and not sig.nodes[row]):
            return False
        if int(search.caps(sig, np.array([row], dtype=np.int64), search.profile.filters)[0]) < len(pods):
            return False
        if search.state.reserve(row, sig, tuple(pods)) < len(pods):
            return False
    return True


def node_local(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
               profile: Profile = DEFAULT_PROFILE) -> bool:
    """Whether every Filter plugin judges each of ``tree``'s pending pods by its node alone (no plugin
    ``interacts`` for any of its signatures): then pods on nodes a plan does not use cannot affect
    whether the plan holds, and preemption may reprieve them without a check. Pure."""
    search = _Search(snapshot, config or SolverConfig(), tree, profile)
    for leaf in tree.root.leaves():
        for sig in search.signatures(leaf):
            if any(p.interacts(search.state, sig) for p in search.profile.filters):
                return False
    return True


def minimum_need(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
                 profile: Profile = DEFAULT_PROFILE) -> IntArray:
    """A lower bound of what ``tree`` needs placed to be satisfied, ``(R,)`` over the snapshot's columns: per
    gang leaf ``need × the smallest request`` of its pending pods, per composite the ``minGroupCount``
    smallest children summed — the bound the search prunes topology domains with. Pure."""
    return _Search(snapshot, config or SolverConfig(), tree, profile).need(tree.root)
