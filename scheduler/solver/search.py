"""The all-or-nothing search over a group tree.

``solve(tree, snapshot, config)`` places the whole tree against one scratch copy of free
capacity, so siblings can never double-book, and returns a :class:`~scheduler.solver.plan.Plan`
only when every gang leaf has ≥ minCount members placed (bound members count) and every gang
composite ≥ minGroupCount children satisfied, all at once; otherwise
:class:`~scheduler.solver.plan.Unschedulable` and nothing.

How (design §5):

* **Signatures.** A leaf's pending pods are grouped by scheduling signature (static-filter
  inputs + requests); for each signature the solver counts how many copies fit per node with
  one vectorised pass (:func:`~scheduler.solver.fit.copies`) instead of trying pods one by one.
* **Scoring.** ``pack``: if one node can take every remaining copy, take the tightest such
  node, else the node that takes the most; penalise accelerator nodes for pods that need no
  accelerator; break ties toward partly used nodes, then by node name. ``spread``: one copy at
  a time onto the node with the most room.
* **Topology.** A group with a topology key is placed inside one domain (node label value)
  chosen among those inside its parent's domain; domains whose free capacity, summed over the
  nodes that pass the static filters for some member, cannot hold the group's minimum are
  pruned, the rest are tried tightest-first (``pack``) or emptiest-first (``spread``). Bound
  members pin their domain.
* **Backtracking.** Each group yields its feasible placements one at a time (a generator that
  keeps its placement applied while suspended); a composite searches its children depth-first,
  so a child that cannot fit makes the search revisit an earlier sibling's domain. The search
  is bounded by ``SolverConfig.search_budget`` subtree placements.

Pure: no I/O, no clock, no module state; the same input gives the same plan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from scheduler.dra.allocator import ClaimSpec, Result
from scheduler.dra.claims import NeededClaim, PodClaims
from scheduler.groups.tree import Composite, Group, GroupKey, GroupTree, Leaf
from scheduler.model.pod import Pod
from scheduler.model.quantity import PODS, format_units, is_extended
from scheduler.solver import devices, fit
from scheduler.solver.devices import DevicePlacer
from scheduler.solver.plan import ClaimAllocation, Plan, SolverConfig, Unschedulable
from scheduler.solver.snapshot import BoolArray, IntArray, NodeTable, Snapshot, StaticFit, static_key
from scheduler.solver.status import Code, format_histogram

_BIG = np.int64(1) << 40


class _BudgetExhausted(Exception):
    """Raised inside the search when ``search_budget`` attempts were used."""


@dataclass(frozen=True, slots=True)
class _Signature:
    """Pending pods of one leaf that schedule alike: same static-filter inputs, same requests."""

    pods: tuple[Pod, ...]
    request: IntArray
    unknown: tuple[str, ...]
    static: StaticFit
    needs_accelerator: bool
    specs: tuple[ClaimSpec, ...] = ()
    """Per-pod claims each member needs allocated on its node (DRA)."""
    dra_mask: BoolArray | None = None
    """Nodes allowed by the members' allocated claims and able to reach matching devices."""
    waiting: str | None = None
    """Why these members cannot be placed yet (a claim not created yet, a malformed claim)."""


@dataclass(slots=True)
class _Failure:
    """The best failed attempt seen for a group: most pods placed, and why it stopped."""

    placed: int
    message: str
    resource_limited: bool


def _describe(group: Group) -> str:
    if isinstance(group, Composite):
        return f"composite {group.name}"
    if group.key.kind == "Pod":
        return f"pod {group.name}"
    return f"gang {group.name}" if group.min_count is not None else f"group {group.name}"


class _Search:
    """One solver run: scratch free capacity, an undo journal and the failure record."""

    def __init__(self, snapshot: Snapshot, config: SolverConfig, priority: int = 0) -> None:
        self.table: NodeTable = snapshot.table
        self.config = config
        self.free: IntArray = snapshot.free()
        for row, vec, pod_priority in snapshot.nominated:
            if pod_priority >= priority:  # room preempted for a more important pod is not ours to take
                self.free[row] -= vec
        self.pods_col = self.table.column[PODS]
        self.journal: list[tuple[int, IntArray, tuple[Pod, ...]]] = []
        self.placer = DevicePlacer(snapshot.dra) if snapshot.dra is not None else None
        self.dev_marks: list[int] = []
        """Device-state mark before each journal step (parallel to ``journal``)."""
        self.allocs: list[list[list[list[Result]]] | None] = []
        """Per journal step: per pod, per claim, the devices given (parallel to ``journal``)."""
        self.attempts = 0
        self.failures: dict[GroupKey, _Failure] = {}
        self.satisfied: set[GroupKey] = set()
        self.leftover: dict[GroupKey, str] = {}
        """Per satisfied leaf whose placement is applied now: why its remaining members were not placed."""
        self._sigs: dict[GroupKey, list[_Signature]] = {}
        self._need: dict[GroupKey, IntArray] = {}
        self._usable: dict[GroupKey, BoolArray] = {}

    # -- state ---------------------------------------------------------------------
    def mark(self) -> int:
        return len(self.journal)

    def undo(self, mark: int) -> None:
        while len(self.journal) > mark:
            row, used, _ = self.journal.pop()
            self.free[row] += used
            self.allocs.pop()
            dev_mark = self.dev_marks.pop()
            if self.placer is not None:
                self.placer.state.undo(dev_mark)

    def apply(self, row: int, sig: _Signature, pods: tuple[Pod, ...], dev_mark: int = 0,
              allocs: list[list[list[Result]]] | None = None) -> None:
        used = sig.request * len(pods)
        self.free[row] -= used
        self.journal.append((row, used, pods))
        self.dev_marks.append(dev_mark)
        self.allocs.append(allocs)

    def commit(self, row: int, take: int, sig: _Signature, pods: tuple[Pod, ...]) -> int:
        """Place up to ``take`` of ``pods`` on ``row``; with claims, only as many as get their devices."""
        if not sig.specs or self.placer is None:
            self.apply(row, sig, pods[:take])
            return take
        dev_mark = self.placer.state.mark()
        copies = self.placer.realize(row, take, sig.specs)
        if copies:
            self.apply(row, sig, pods[:len(copies)], dev_mark, copies)
        return len(copies)

    def tick(self) -> None:
        self.attempts += 1
        if self.attempts > self.config.search_budget:
            raise _BudgetExhausted

    def fail(self, group: Group, placed: int, message: str, resource_limited: bool) -> None:
        best = self.failures.get(group.key)
        if best is None or placed > best.placed:
            self.failures[group.key] = _Failure(placed, message, resource_limited)

    # -- signatures ----------------------------------------------------------------
    def signatures(self, leaf: Leaf) -> list[_Signature]:
        """The leaf's pending pods grouped by signature, largest requests first (bin-packing order)."""
        hit = self._sigs.get(leaf.key)
        if hit is not None:
            return hit
        groups: dict[tuple[object, ...], list[Pod]] = {}
        claims_of: dict[str, PodClaims] = {}
        for pod in leaf.pending:
            claims = self.placer.claims_of(pod.key) if self.placer is not None else None
            dra_key: tuple[object, ...] = ()
            if claims is not None:
                claims_of[pod.key] = claims
                dra_key = (tuple(n.spec for n in claims.allocate), claims.pinned, claims.waiting, claims.extended)
            key = (static_key(pod.spec), tuple(sorted(pod.requests.items())), dra_key)
            groups.setdefault(key, []).append(pod)
        sigs: list[_Signature] = []
        for pods in groups.values():
            spec = pods[0].spec
            claims = claims_of.get(pods[0].key)
            requests = pods[0].requests
            if claims is not None and claims.extended:  # served through DRA, not by node allocatable
                requests = {r: v for r, v in requests.items() if r not in claims.extended}
            vec, unknown = self.table.request_vector(requests)
            accel = any(is_extended(r) and v > 0 for r, v in pods[0].requests.items())
            specs: tuple[ClaimSpec, ...] = ()
            dra_mask = None
            waiting = None
            if claims is not None and self.placer is not None:
                specs = tuple(n.spec for n in claims.allocate)
                dra_mask = self.placer.node_mask(claims, specs)
                waiting = claims.waiting
            sigs.append(_Signature(tuple(pods), vec, unknown, self.table.static_fit(spec), accel or bool(specs),
                                   specs, dra_mask, waiting))
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
    def choose(self, rows: IntArray, caps: IntArray, count: int, sig: _Signature) -> int:
        """Place up to ``count`` copies of ``sig`` on candidate ``rows`` (``caps`` copies fit by resources);
        returns how many were placed. Each choice is committed at once (:meth:`commit`); a node that
        takes fewer than chosen (its devices ran short) is dropped and the choice is made again."""
        caps = np.minimum(caps, count)
        alloc_pods = self.table.allocatable[rows, self.pods_col]
        idle = (self.free[rows, self.pods_col] >= alloc_pods).astype(np.int64)
        penalty = np.zeros(len(rows), dtype=np.int64)
        if not sig.needs_accelerator:
            penalty = self.table.accelerator[rows].astype(np.int64) * (1 + idle)
        done = 0
        remaining = count
        valid = caps > 0
        spread = self.config.scoring == "spread"
        while remaining > 0 and valid.any():
            sub = np.flatnonzero(valid)
            c = caps[sub]
            if spread:
                j = sub[np.argmin(penalty[sub] * _BIG - c * 2 - idle[sub])]
                take = 1
            else:
                fits = c >= remaining
                if fits.any():
                    cand = sub[fits]
                    j = cand[np.argmin(penalty[cand] * _BIG + caps[cand] * 2 + idle[cand])]
                    take = remaining
                else:
                    j = sub[np.argmin(penalty[sub] * _BIG - c * 2 + idle[sub])]
                    take = int(caps[j])
            got = self.commit(int(rows[j]), take, sig, sig.pods[done:done + take])
            done += got
            remaining -= got
            caps[j] = caps[j] - take if got == take else 0
            valid[j] = caps[j] > 0
        return done

    def diagnose(self, sig: _Signature, mask: BoolArray) -> tuple[str, bool]:
        """kube-style node histogram for the next copy of ``sig`` within ``mask``, and whether capacity was short.

        Static rejections count their reasons; every node passing them counts one
        ``Insufficient <r>`` per short resource (vectorised over the nodes).
        """
        counts: Counter[str] = Counter()
        for row, status in sig.static.rejected.items():
            if mask[row]:
                counts.update(status.reasons)
        rows = np.flatnonzero(mask & sig.static.ok)
        needed = np.flatnonzero(sig.request > 0)
        short = (self.free[np.ix_(rows, needed)] < sig.request[needed]).sum(axis=0)
        for j, n in zip(needed, short, strict=True):
            counts[fit.insufficient(self.table.resources[j])] += int(n)
        for resource in sig.unknown:
            counts[fit.insufficient(resource)] += len(rows)
        limited = bool(short.any()) or (bool(sig.unknown) and len(rows) > 0)
        if sig.dra_mask is not None or sig.specs:
            resources_fit = rows[(self.free[np.ix_(rows, needed)] >= sig.request[needed]).all(axis=1)]
            if resources_fit.size:
                counts[devices.REASON] += int(resources_fit.size)
                limited = True
        message = format_histogram(int(mask.sum()), counts)
        if self.placer is not None and (errors := self.placer.selector_errors()):
            message += " " + "; ".join(errors)
        return message, limited

    def place_leaf(self, leaf: Leaf, mask: BoolArray, limit: int | None = None) -> tuple[int, str, bool]:
        """Place as many pending members as fit inside ``mask`` (at most ``limit`` if given).

        Returns (pods placed, node histogram for the first member that did not fit, whether
        capacity rather than a static filter stopped it).
        """
        placed = 0
        reason = ""
        limited = False
        for sig in self.signatures(leaf):
            n = len(sig.pods) if limit is None else min(len(sig.pods), limit - placed)
            if n <= 0:
                continue
            done = 0
            if sig.waiting is not None:
                reason = reason or sig.waiting
                continue
            if not sig.unknown:
                allowed = mask & sig.static.ok if sig.dra_mask is None else mask & sig.static.ok & sig.dra_mask
                rows = np.flatnonzero(allowed)
                if rows.size:
                    caps = fit.copies(self.free[rows], sig.request)
                    done = self.choose(rows, caps, n, sig)
            placed += done
            if done < n and not reason:
                reason, limited = self.diagnose(sig, mask)
        return placed, reason, limited

    def leaf_satisfied(self, leaf: Leaf, placed: int) -> bool:
        if leaf.min_count is None:
            return placed + len(leaf.bound) >= 1
        return placed + len(leaf.bound) >= leaf.min_count

    # -- groups --------------------------------------------------------------------
    def alternatives(self, group: Group, mask: BoolArray) -> Iterator[None]:
        """Yield once per feasible placement of ``group`` within ``mask``, holding it applied while suspended."""
        if group.topology_key is None:
            yield from self.within(group, mask)
            return
        domains = self.domain_masks(group, mask)
        for _value, dmask in domains:
            yield from self.within(group, dmask)

    def domain_masks(self, group: Group, mask: BoolArray) -> list[tuple[str, BoolArray]]:
        """Candidate domains of the group's topology key inside ``mask``, in try order, pruned by capacity.

        A domain is pruned when the free capacity of its :meth:`usable` nodes is below
        :meth:`need` for some resource; the nearest miss is quoted in the failure message.
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
                self.fail(group, 0, f"{_describe(group)}: bound members are not all in one {key} domain", False)
                return []
            present = present[np.isin(present, list(pinned))]
        need = self.need(group)
        cols = np.flatnonzero(need > 0)
        usable = self.usable(group)
        scored: list[tuple[float, str, BoolArray]] = []
        closest: tuple[float, str, str] | None = None  # (ratio, resource, text) of the nearest miss
        for d in present:
            dmask = mask & (ids == d)
            if cols.size:
                # A necessary condition: every member placed lands on a node passing its static
                # filters, so what the group needs must fit in the free capacity of those nodes.
                have = np.maximum(self.free[dmask & usable][:, cols], 0).sum(axis=0)  # overcommitted ≠ negative room
                ratio = float(np.max(need[cols] / np.maximum(have, 1)))
                if np.any(have < need[cols]):
                    j = int(np.argmax(need[cols] / np.maximum(have, 1)))
                    res = self.table.resources[cols[j]]
                    text = (f"{doms.values[int(d)]} has {format_units(res, int(have[j]))} free, "
                            f"needs {format_units(res, int(need[cols[j]]))}")
                    if closest is None or ratio < closest[0]:
                        closest = (ratio, res, text)
                    continue
            else:
                ratio = 0.0
            scored.append((ratio, doms.values[int(d)], dmask))
        if not scored:
            if closest is None:
                message = f"{_describe(group)}: no node has the label {key}"
            else:
                message = (f"{_describe(group)}: no {key} domain has enough free {closest[1]} "
                           f"({len(present)} checked; closest: {closest[2]})")
            self.fail(group, 0, message, closest is not None)
            return []
        reverse = self.config.scoring == "pack"
        scored.sort(key=lambda t: (-t[0] if reverse else t[0], t[1]))
        return [(v, m) for _, v, m in scored]

    def within(self, group: Group, mask: BoolArray) -> Iterator[None]:
        """Yield the feasible placements of ``group`` inside ``mask`` (no further domain choice at this level)."""
        if isinstance(group, Leaf):
            shared = self.shared_claims(group)
            if not shared or self.placer is None:
                yield from self.leaf_within(group, mask)
                return
            found = False
            for reach in self.placer.shared(group.name, shared, mask):
                found = True
                yield from self.leaf_within(group, mask & reach)
            if not found:
                keys = ", ".join(c.key for c in shared)
                errors = "; ".join(self.placer.selector_errors())
                self.fail(group, 0, f"{_describe(group)}: cannot allocate shared claim(s) {keys} on any reachable "
                          f"devices{'; ' + errors if errors else ''}", True)
            return
        yield from self.children(group, 0, 0, mask)

    def shared_claims(self, leaf: Leaf) -> list[NeededClaim]:
        """The leaf's claims allocated once for all members (PodGroup claims, claims shared by name)."""
        if self.placer is None:
            return []
        out: dict[str, NeededClaim] = {}
        for pod in leaf.pending:
            claims = self.placer.claims_of(pod.key)
            for needed in claims.shared if claims is not None else ():
                out.setdefault(needed.key, needed)
        return [out[k] for k in sorted(out)]

    def leaf_within(self, group: Leaf, mask: BoolArray) -> Iterator[None]:
        """Place a leaf's members inside ``mask``; yield if the leaf is satisfied (held while suspended).

        Two alternatives: first every pending member that fits (issue #2: as many as fit, at least
        minCount); then, if that placed more than the minimum, exactly the minimum — so extra
        members of one gang never starve a sibling the parent needs (a gang already satisfied by
        its bound members may then place nothing).
        """
        minimum = group.need
        first: int | None = None
        for limit in (None, minimum):
            if limit is not None and (first is None or first <= limit):
                return
            self.tick()
            start = self.mark()
            placed, reason, limited = self.place_leaf(group, mask, limit)
            if limit is None:
                first = placed
                if placed < len(group.pending):
                    self.fail(group, placed, self.leaf_message(group, placed, reason, "placeable"), limited)
            if not self.leaf_satisfied(group, placed):
                self.undo(start)
                return
            self.satisfied.add(group.key)
            if placed < len(group.pending):
                why = reason or "left pending so that sibling groups fit"
                self.leftover[group.key] = self.leaf_message(group, placed, why, "placed")
            yield
            self.leftover.pop(group.key, None)
            self.satisfied.discard(group.key)
            self.undo(start)

    def children(self, comp: Composite, i: int, ok: int, mask: BoolArray) -> Iterator[None]:
        """Depth-first over children ``i…``: each child placed (every alternative) or skipped.

        Prunes as soon as fewer than ``need`` satisfied children remain reachable.
        """
        n = len(comp.children)
        if ok + (n - i) < comp.need:
            if comp.min_group_count is None:
                message = f"{_describe(comp)}: no child group fits"
            else:
                message = f"{_describe(comp)}: {ok}/{n} child groups satisfied (minGroupCount {comp.need})"
            self.fail(comp, ok, message, any(f.resource_limited for f in self.failures.values()))
            return
        if i == n:
            self.satisfied.add(comp.key)
            yield
            self.satisfied.discard(comp.key)
            return
        for _ in self.alternatives(comp.children[i], mask):
            yield from self.children(comp, i + 1, ok + 1, mask)
        yield from self.children(comp, i + 1, ok, mask)

    def leaf_message(self, leaf: Leaf, placed: int, nodes: str, verb: str) -> str:
        """``gang g: 3/8 placeable (minCount 8); 0/12 nodes are available: …``.

        ``placed``: pending members placed by the attempt (bound members are added); ``nodes``:
        the node histogram for the first member that did not fit; ``verb``: ``placeable`` for
        the best failed attempt, ``placed`` for the leaf's placement in the final plan.
        """
        if leaf.key.kind == "Pod":
            return nodes
        total, members = placed + len(leaf.bound), len(leaf.pending) + len(leaf.bound)
        head = f"{_describe(leaf)}: {total}/{members} {verb}"
        if leaf.min_count is not None:
            head += f" (minCount {leaf.min_count})"
        return f"{head}; {nodes}" if nodes else head

    # -- results -------------------------------------------------------------------
    def plan(self, tree: GroupTree) -> Plan:
        placements: list[tuple[Pod, str]] = []
        placed_keys: set[str] = set()
        for row, _used, pods in self.journal:
            name = self.table.nodes[row].name
            for pod in pods:
                placements.append((pod, name))
                placed_keys.add(pod.key)
        unplaced: dict[str, str] = {}
        reasons: dict[GroupKey, str] = {}
        for leaf in tree.root.leaves():
            if leaf.key in self.satisfied:  # placed; members left over say how many this plan placed
                message = self.leftover.get(leaf.key, "")
            else:  # left out whole: the best attempt's count and reason
                failure = self.failures.get(leaf.key)
                message = failure.message if failure else f"{_describe(leaf)}: not needed by its parent group"
                reasons[leaf.key] = message
            for pod in leaf.pending:
                if pod.key not in placed_keys:
                    unplaced[pod.key] = message
        return Plan(tree.key, tuple(placements), frozenset(self.satisfied), unplaced, reasons, self.attempts,
                    self.claim_allocations())

    def claim_allocations(self) -> tuple[ClaimAllocation, ...]:
        """Every claim the plan allocates: per-pod claims from the journal, shared claims of placed leaves."""
        if self.placer is None:
            return ()
        out: list[ClaimAllocation] = []
        users: dict[str, list[Pod]] = {}
        for (row, _used, pods), allocs in zip(self.journal, self.allocs, strict=True):
            node = self.table.nodes[row].name
            for pod in pods:
                claims = self.placer.claims_of(pod.key)
                for needed in claims.shared if claims is not None else ():
                    users.setdefault(needed.key, []).append(pod)
            if allocs is None:
                continue
            for pod, per_claim in zip(pods, allocs, strict=True):
                claims = self.placer.claims_of(pod.key)
                assert claims is not None
                for needed, results in zip(claims.allocate, per_claim, strict=True):
                    out.append(ClaimAllocation(
                        claim=needed.key, reserved_for=(("Pod", pod.metadata.name, pod.metadata.uid),), node=node,
                        results=tuple((r, d.driver, d.pool, d.name) for r, d in results),
                        node_selector=self.placer.node_selector(results, node), synthetic=needed.synthetic,
                        pod=pod.key))
        for leaf_name, shared in self.placer.allocations_in_force():
            for alloc in shared:
                if alloc.reused:
                    continue  # written once, by the leaf that allocated it; its consumers are all gathered
                consumers = users.get(alloc.claim.key, [])
                if alloc.claim.entry and any(self._is_group_claim(p, alloc.claim.key) for p in consumers):
                    reserved: tuple[tuple[str, str, str], ...] = (("PodGroup", leaf_name, ""),)
                else:
                    reserved = tuple(("Pod", p.metadata.name, p.metadata.uid) for p in consumers)
                out.append(ClaimAllocation(
                    claim=alloc.claim.key, reserved_for=reserved, node=None,
                    results=tuple((r, d.driver, d.pool, d.name) for r, d in alloc.results),
                    node_selector=self.placer.node_selector(alloc.results, None)))
        return tuple(out)

    def _is_group_claim(self, pod: Pod, key: str) -> bool:
        """Whether ``key`` is the pod's PodGroup claim (reserved for the group) rather than one shared by name."""
        return not any(e.resource_claim_name and f"{pod.metadata.namespace}/{e.resource_claim_name}" == key
                       for e in pod.spec.resource_claims)

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
        limited = budget or any(f.resource_limited for f in self.failures.values())
        code = Code.UNSCHEDULABLE if limited else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        message = "; ".join(dict.fromkeys(parts)) or f"{_describe(tree.root)}: does not fit"
        for key in tree.groups:
            reasons.setdefault(key, message)
        return Unschedulable(tree.key, code, message, reasons, self.attempts)

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


def solve(tree: GroupTree, snapshot: Snapshot, config: SolverConfig | None = None) -> Plan | Unschedulable:
    """Find an all-or-nothing placement for ``tree`` on ``snapshot``.

    ``tree``: a READY tree from :func:`scheduler.groups.build_trees`. ``snapshot``: free
    capacity (not modified). Returns a :class:`Plan` whose placements satisfy every gang in
    the tree at once, or :class:`Unschedulable` with per-group reasons. A plan that would
    place no pod at all is reported as Unschedulable. Never raises for unschedulable input.
    """
    search = _Search(snapshot, config or SolverConfig(), tree.priority)
    everything = np.ones(len(snapshot.table), dtype=bool)
    try:
        for _ in search.alternatives(tree.root, everything):
            plan = search.plan(tree)
            if plan.placements or not any(leaf.pending for leaf in tree.root.leaves()):
                return plan
            break
    except _BudgetExhausted:
        return search.unschedulable(tree, budget=True)
    return search.unschedulable(tree, budget=False)
