"""The all-or-nothing search over a group tree, on the scheduling framework.

``solve(tree, snapshot, config)`` places the whole tree against one
:class:`~scheduler.framework.cycle_state.CycleState` (scratch free capacity plus the plugins'
state, one undo journal), so siblings can never double-book, and returns a
:class:`~scheduler.framework.plan.Plan` only when every gang leaf has ≥ minCount members placed
(bound members count) and every gang composite ≥ minGroupCount children satisfied, all at once;
otherwise :class:`~scheduler.framework.plan.Unschedulable` and nothing.

How (docs/architecture.md, "The solver"):

* **Signatures** (:mod:`scheduler.solver.signatures`). A leaf's pending pods are grouped by scheduling
  signature (static-filter inputs, requests, and what each PreFilter plugin reads); for each signature
  the Filter plugins say how many copies fit per node in one vectorised pass instead of trying pods
  one by one.
* **Choosing nodes** (:mod:`scheduler.solver.node_choice`). Score plugins' weighted sum, then the
  packing order (:mod:`scheduler.solver.plugins.scoring`); every placement goes through the Reserve
  plugins and the journal, so later members and siblings see it.
* **Topology** (:mod:`scheduler.solver.domains`). A group with a topology key is placed inside one
  domain (node label value) chosen among those inside its parent's domain; domains whose free
  capacity, summed over the nodes that pass the static filters for some member, cannot hold the
  group's minimum are pruned, the rest are tried tightest-first (``pack``) or emptiest-first
  (``spread``); when all are pruned, the one with the most room is tried alone, so that the reason
  comes from its per-node verdicts. Bound members pin their domain.
* **What groups hold in common.** A leaf is placed under each way the profile's Shared plugins
  (:class:`~scheduler.framework.interface.SharedResourcePlugin`: DRA's group claims) hold what its
  members share; the plan's other fields come from the Outcome plugins
  (:class:`~scheduler.framework.interface.OutcomePlugin`). The search knows no plugin by its type.
* **Reasons** (:mod:`scheduler.solver.failures`, :mod:`scheduler.solver.diagnosis`). Per group, the
  attempt that placed the most members is kept, with the per-node verdicts for its next member.
* **Backtracking** (this module). Each group yields its feasible placements one at a time (a generator that
  keeps its placement applied while suspended); a composite searches its children depth-first,
  so a child that cannot fit makes the search revisit an earlier sibling's domain. The search
  is bounded by ``SolverConfig.search_budget`` subtree placements.

Pure: no I/O, no clock, no module state; the same input gives the same plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import SharedResourcePlugin, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import Plan, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.groups.tree import Composite, Group, GroupTree, Leaf, walk
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.solver.diagnosis import Domain, clauses, describe, leaf_message, phrase, room_short, room_together
from scheduler.solver.domains import DomainPruning
from scheduler.solver.failures import Failures
from scheduler.solver.lone import place_lone
from scheduler.solver.node_choice import NodeChoice
from scheduler.solver.plugins import DEFAULT_PROFILE, TOPOLOGY, Profile
from scheduler.solver.signatures import Signatures


class _BudgetExhausted(Exception):
    """Raised inside the search when ``search_budget`` attempts were used."""


class _Search:
    """One pass of the search over a tree: the cycle state, the profile's plugins, and its four parts — the
    signatures (:mod:`~scheduler.solver.signatures`), node choice (:mod:`~scheduler.solver.node_choice`), domain
    pruning (:mod:`~scheduler.solver.domains`) and the failure record (:mod:`~scheduler.solver.failures`). This
    class holds the tree recursion (each group's placements, one at a time) and turns its outcome into a
    :class:`Plan` or an :class:`Unschedulable`."""

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
        self.failures = Failures()
        self.signatures = Signatures(self.state, profile)
        self.choice = NodeChoice(self.state, profile, config, self.signatures)
        self.domains = DomainPruning(self.state, config, self.signatures, self.failures, explain)
        self.satisfied: set[GroupKey] = set()
        self.leftover: dict[GroupKey, str] = {}
        """Per satisfied leaf whose placement is applied now: why its remaining members were not placed."""
        self.exhausted = False
        """The search stopped at ``search_budget`` attempts."""

    def count_attempt(self) -> None:
        """One more subtree placement tried; raises :class:`_BudgetExhausted` past ``search_budget``."""
        self.attempts += 1
        if self.attempts > self.config.search_budget:
            raise _BudgetExhausted

    # -- groups --------------------------------------------------------------------
    def placements(self, group: Group, mask: BoolArray, where: Domain | None = None) -> Iterator[None]:
        """Yield once per feasible placement of ``group`` within ``mask``, holding it applied while suspended.

        ``where``: the domain ``mask`` lies in (the parent's), named by the reasons of a group without a key.
        """
        if group.topology_key is None:
            yield from self.placements_within(group, mask, where)
            return
        for domain, domain_mask in self.domains.to_try(group, mask):
            yield from self.placements_within(group, domain_mask, domain)

    def placements_within(self, group: Group, mask: BoolArray, where: Domain | None) -> Iterator[None]:
        """Yield the feasible placements of ``group`` inside ``mask`` (no further domain choice at this level);
        ``where``: the domain ``mask`` is, for the reasons."""
        if isinstance(group, Leaf):
            yield from self.leaf_holding_shared(group, self.profile.shared, mask, where)
            return
        yield from self.child_placements(group, 0, 0, mask, where)

    def leaf_holding_shared(self, leaf: Leaf, plugins: tuple[SharedResourcePlugin, ...], mask: BoolArray,
                            where: Domain | None) -> Iterator[None]:
        """Yield the leaf's placements inside ``mask`` under each way the Shared ``plugins`` hold what its members
        hold in common (one plugin after another); a plugin that finds no way records the leaf's failure."""
        if not plugins:
            yield from self.leaf_placements(leaf, mask, where)
            return
        plugin, rest = plugins[0], plugins[1:]
        held = plugin.held_in_common(self.state, leaf.pending)
        if not held:
            yield from self.leaf_holding_shared(leaf, rest, mask, where)
            return
        found = False
        for _ in plugin.hold(self.state, leaf.name, held, mask, leaf.need):
            found = True
            yield from self.leaf_holding_shared(leaf, rest, mask, where)
        if not found:
            notes = "; ".join(self.profile.notes(self.state))
            self.failures.record(leaf, 0, f"{describe(leaf)}: {plugin.unheld_reason(self.state, held)}"
                                 f"{phrase(where, closest=True, placed=0)}{'; ' + notes if notes else ''}", True,
                                 frozenset((plugin.name,)))

    def leaf_placements(self, group: Leaf, mask: BoolArray, where: Domain | None) -> Iterator[None]:
        """Place a leaf's members inside ``mask``; yield if the leaf is satisfied (held while suspended).

        Up to three alternatives, each yielded while satisfied and undone on resume:

        1. every pending member that fits, largest member shapes first (bin-packing order), at least minCount;
        2. exactly the minimum, largest first, when (1) placed more than the minimum — so extra members of one
           group never starve a sibling the parent needs (a gang already satisfied by its bound members may then
           place nothing);
        3. exactly the minimum of the smallest members, placed largest first, when the members differ in their
           requests and not all of them are needed (when one of them fits nowhere, smallest first, the next
           smallest taking its place) — so a group whose largest member would starve a sibling, or keep the group
           itself below its minimum, can take its smallest. Skipped when it places the same members
           as an alternative yielded before, so no sibling subtree is searched twice for one placement.

        The first attempt's shortfall is recorded as the leaf's failure (:meth:`Failures.record` keeps the best);
        inside a topology domain ``where`` it names the domain and, when the leaf is not satisfied for want of room
        alone, the room the domain lacked (measured once the attempt is undone).
        """
        minimum = group.need
        first = 0
        differ = self.sizes_differ(group)
        yielded: list[frozenset[str]] = []  # the members each alternative placed, kept only when (3) may run
        for limit, smallest in ((None, False), (minimum, False), (minimum, True)):
            if limit is not None and not (differ if smallest else first > minimum):
                continue
            self.count_attempt()
            start = self.state.mark()
            placed, why = self.choice.place_leaf(group, mask, limit, smallest_first=smallest)
            satisfied = self.leaf_satisfied(group, placed)
            members = frozenset(p.key for e in self.state.journal[start:] for p in e.pods) if differ else frozenset()
            if not satisfied or (smallest and members in yielded):
                self.state.undo(start)
            reason = why.message if why is not None else ""
            if limit is None:
                first = placed
                if placed < len(group.pending):
                    context = phrase(where, closest=True, placed=placed)
                    if where is not None and not satisfied and why is not None:
                        short = room_short(self.table, self.state.free, why.short_of_room, self.domains.need(group))
                        context += short + (room_together(where) if short else "")
                    self.failures.record(group, placed, leaf_message(group, placed, reason, "placeable", context),
                              why is not None and why.limited, why.rejectors if why is not None else frozenset())
            if not satisfied or (smallest and members in yielded):
                continue
            yielded.append(members)
            self.satisfied.add(group.key)
            if placed < len(group.pending):
                self.leftover[group.key] = leaf_message(group, placed, reason or "left pending so that sibling "
                                                        "groups fit", "placed", phrase(where, closest=False))
            yield
            self.leftover.pop(group.key, None)
            self.satisfied.discard(group.key)
            self.state.undo(start)

    def sizes_differ(self, leaf: Leaf) -> bool:
        """Whether the leaf needs fewer members than it has pending and they differ in their requests (so the
        smallest-first minimum of :meth:`leaf_placements` may place other members than the largest-first)."""
        if leaf.need >= len(leaf.pending):
            return False
        return len({sig.request.tobytes() for sig in self.signatures.of(leaf)}) > 1

    def leaf_satisfied(self, leaf: Leaf, placed: int) -> bool:
        """Whether ``placed`` pending members and the bound ones satisfy the leaf (minCount; one for a basic group)."""
        if leaf.min_count is None:
            return placed + len(leaf.bound) >= 1
        return placed + len(leaf.bound) >= leaf.min_count

    def child_placements(self, composite: Composite, next_child: int, satisfied: int, mask: BoolArray,
                         where: Domain | None) -> Iterator[None]:
        """Depth-first over the composite's children from index ``next_child`` on, ``satisfied`` of those before it
        placed: each child placed (every alternative) or skipped; ``where``: the domain ``mask`` is (the
        composite's, or its parent's).

        Prunes as soon as fewer than minGroupCount (``need``) satisfied children remain reachable.
        """
        n = len(composite.children)
        if satisfied + (n - next_child) < composite.need:
            if composite.min_group_count is None:
                message = f"{describe(composite)}: no child group fits{phrase(where, closest=True, placed=0)}"
            else:
                message = (f"{describe(composite)}: {satisfied}/{n} child groups placeable (minGroupCount "
                           f"{composite.need}){phrase(where, closest=True, placed=satisfied)}")
            self.failures.record(composite, satisfied, message, self.failures.resource_limited(),
                                 self.failures.rejectors(), satisfied=self.satisfied)
            return
        if next_child == n:
            self.satisfied.add(composite.key)
            yield
            self.satisfied.discard(composite.key)
            return
        for _ in self.placements(composite.children[next_child], mask, where):
            yield from self.child_placements(composite, next_child + 1, satisfied + 1, mask, where)
        yield from self.child_placements(composite, next_child + 1, satisfied, mask, where)

    # -- results -------------------------------------------------------------------
    def to_plan(self, tree: GroupTree) -> Plan:
        """The placement applied now as a :class:`Plan`: its pods' nodes, why members were left pending, the
        Outcome plugins' fields and notes."""
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
                    selector_errors=self.profile.notes(self.state), **self.profile.plan_fields(self.state))

    def unschedulable(self, tree: GroupTree, budget: bool) -> Unschedulable:
        """The failed search as an :class:`Unschedulable`: the root's and each leaf's best failure joined, its
        code (UNSCHEDULABLE when room was short anywhere, or ``budget``: it ran out of attempts), the rejectors.

        A composite root's reason lists the leaves that did not fit, not those its attempt had placed when it
        stopped (a child placed whole in the domain the root names is not listed for what it met elsewhere);
        each of those gets the root's reason, as a group without a failure does."""
        root = self.failures.get(tree.key)
        placed = _under(tree.root, root.satisfied) if root is not None else frozenset()
        reasons = {k: f.message for k, f in self.failures.by_group.items() if k not in placed}
        parts: list[str] = []
        if budget:
            parts.append(f"search budget of {self.config.search_budget} attempts exhausted")
        if root is not None:
            parts.append(root.message)
        parts.extend(reasons[leaf.key] for leaf in tree.root.leaves() if leaf.key != tree.key and leaf.key in reasons)
        limited = budget or self.failures.resource_limited() or self.domains.room_may_free()
        code = Code.UNSCHEDULABLE if limited else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        message = clauses(dict.fromkeys(parts)) or f"{describe(tree.root)}: does not fit"
        for key in tree.groups:
            reasons.setdefault(key, message)
        rejectors = self.failures.rejectors()
        if self.domains.pruned:  # room freed, or a node added, in a domain skipped for room may let the tree in
            rejectors |= {TOPOLOGY}
        return Unschedulable(tree.key, code, message, reasons, self.attempts, rejectors,
                             self.profile.notes(self.state))

    def above_minimum(self, tree: GroupTree, plan: Plan) -> Unschedulable:
        """The root is satisfied by its bound members alone (``plan`` places nothing) and no pending member fits:
        nothing to bind, so an :class:`Unschedulable` (the root backs off, preemption may make room for the
        members), but one whose ``minimum`` is ``plan`` — the groups are scheduled, only members above their
        minimum are pending (kube-scheduler's PodGroup cycle succeeds once minCount is met, KEP-4671) —
        with the plan's reasons: each left-over member's counts what is placed, and only groups the plan leaves
        out have a reason of their own."""
        failure = self.unschedulable(tree, budget=False)
        message = clauses(dict.fromkeys(plan.unplaced.values()))
        return dataclasses.replace(failure, message=message, group_reasons=dict(plan.group_reasons), minimum=plan)

    def run(self, tree: GroupTree) -> Plan | Unschedulable:
        """The first yielded placement of ``tree``'s root as a :class:`Plan`, or the :class:`Unschedulable`."""
        everything = np.ones(len(self.table), dtype=bool)
        try:
            for _ in self.placements(tree.root, everything):
                plan = self.to_plan(tree)
                if plan.placements or not any(leaf.pending for leaf in tree.root.leaves()):
                    return plan
                return self.above_minimum(tree, plan)
        except _BudgetExhausted:
            self.exhausted = True
            return self.unschedulable(tree, budget=True)
        return self.unschedulable(tree, budget=False)


def _under(root: Group, keys: frozenset[GroupKey]) -> frozenset[GroupKey]:
    """The groups of ``keys`` found under ``root`` and every group under them."""
    return frozenset(g.key for top in walk(root) if top.key in keys for g in walk(top))


def solve(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
          profile: Profile = DEFAULT_PROFILE) -> Plan | Unschedulable:
    """Find an all-or-nothing placement for ``tree`` on ``snapshot``: :func:`search`'s answer, given without
    the search for a lone pod that fits and has nothing but resources and static filters to judge
    (:func:`~scheduler.solver.lone.place_lone`, which returns the plan the search would)."""
    config = config or SolverConfig()
    lone = place_lone(tree, snapshot, config, profile)
    if lone is not None:
        return lone
    return search(tree, snapshot, config, profile)


def search(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
           profile: Profile = DEFAULT_PROFILE) -> Plan | Unschedulable:
    """Find an all-or-nothing placement for ``tree`` on ``snapshot`` by the search (the module docstring).

    ``tree``: a READY tree from :mod:`scheduler.groups`. ``snapshot``: the cycle's view (not
    modified). ``profile``: the plugins to run (the default profile unless a test says otherwise).
    Returns a :class:`Plan` whose placements satisfy every gang in the tree at once, or
    :class:`Unschedulable` with per-group reasons and the plugins that rejected. A plan that would
    place no pod at all is reported as Unschedulable — with that plan as its ``minimum`` when the root is
    satisfied by its bound members and only members above the minimum fit nowhere. Never raises for
    unschedulable input.

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
    reported = result.group_reasons.keys() if isinstance(result, Plan) else first.failures.by_group.keys()
    if first.exhausted or not first.failures.unexplained(reported):
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
        if any(p.held_in_common(search.state, leaf.pending) for p in search.profile.shared):
            return False
        for sig in search.signatures.of(leaf):
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
        if int(search.choice.copies_allowed(sig, np.array([row], dtype=np.int64), search.profile.filters)[0]) \
                < len(pods):
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
        for sig in search.signatures.of(leaf):
            if any(p.interacts(search.state, sig) for p in search.profile.filters):
                return False
    return True


def minimum_need(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None,
                 profile: Profile = DEFAULT_PROFILE) -> IntArray:
    """A lower bound of what ``tree`` needs placed to be satisfied, ``(R,)`` over the snapshot's columns: per
    gang leaf ``need × the smallest request`` of its pending pods, per composite the ``minGroupCount``
    smallest children summed — the bound the search prunes topology domains with. Pure."""
    return _Search(snapshot, config or SolverConfig(), tree, profile).domains.need(tree.root)
