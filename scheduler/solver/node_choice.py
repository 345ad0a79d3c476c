"""Node choice: where the copies of one signature go, inside the nodes a leaf may use.

For a signature (pods of one leaf that schedule alike) and its candidate nodes, the Filter plugins say how many
copies each node can take *given the plan so far* (the minimum over them: :meth:`NodeChoice.copies_allowed`), the
Score plugins' weighted sum ranks the nodes (kube's weighted score sum), and the packing order
(:class:`~scheduler.solver.plugins.scoring.NodeOrder`, ``--scoring``) breaks ties. Every copy placed goes through
the Reserve plugins and the cycle state's journal at once, so the next pick, the next signature and the next
sibling group see it; the first Reserve plugin may reserve fewer than the Filters allowed (devices), and the node is
then offered no more copies. A leaf whose members did not all fit gets the per-node verdicts for the next member
(:func:`~scheduler.solver.diagnosis.diagnose`).

Pure: changes only the cycle state, through Reserve and undo.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import cast

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin, Quota, QuotaFilterPlugin, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import SolverConfig
from scheduler.framework.status import Code
from scheduler.groups.tree import Leaf
from scheduler.solver.diagnosis import Diagnosis, clauses, diagnose
from scheduler.solver.plugins import Profile
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.scoring import NodeOrder
from scheduler.solver.signatures import Signatures


class NodeChoice:
    """Places a leaf's signatures on nodes for one solve (:meth:`place_leaf`), through the profile's Filter, Score
    and Reserve plugins."""

    def __init__(self, state: CycleState, profile: Profile, config: SolverConfig, signatures: Signatures) -> None:
        self.state = state
        self.profile = profile
        self.config = config
        self.signatures = signatures

    def copies_allowed(self, sig: Signature, rows: IntArray, plugins: tuple[FilterPlugin, ...]) -> IntArray:
        """Copies of ``sig`` each of ``rows`` can take now: the minimum over ``plugins`` (no limit if none)."""
        caps: IntArray | None = None
        for plugin in plugins:
            got = plugin.filter(self.state, sig, rows)
            if got is not None:
                caps = got if caps is None else np.minimum(caps, got)
        return caps if caps is not None else np.full(len(rows), UNLIMITED, dtype=np.int64)

    def scores(self, sig: Signature, rows: IntArray) -> IntArray | None:
        """The Score plugins' weighted sum per row, or None when no plugin has a preference."""
        total: IntArray | None = None
        for plugin in self.profile.scorers:
            scores = plugin.score(self.state, sig, rows)
            if scores is not None and scores.any():
                weighted = scores.astype(np.int64) * plugin.weight
                total = weighted if total is None else total + weighted
        return total

    def place_copies(self, sig: Signature, rows: IntArray, count: int) -> int:
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
        mark = self.state.mark()
        done = self._place_copies(sig, rows, count, quotas=True)
        if done < 0:  # a quota batch fell short: its partial state may be one no order reaches
            self.state.undo(mark)
            done = self._place_copies(sig, rows, count, quotas=False)
        return done

    def _place_copies(self, sig: Signature, rows: IntArray, count: int, quotas: bool) -> int:
        """:meth:`place_copies`'s loop; −1 when a quota batch placed fewer copies than its quota promised."""
        order = NodeOrder(self.state, sig, rows)
        filters = self.profile.filters
        interacting = tuple(p for p in filters if p.interacts(self.state, sig))
        steady = np.minimum(self.copies_allowed(sig, rows, tuple(p for p in filters if p not in interacting)), count)
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
                caps = np.minimum(caps, self.copies_allowed(sig, rows, interacting))
            return np.asarray(np.minimum(caps, remaining), dtype=np.int64)

        between = bool(budgets or interacting)
        caps = current(count) if between else steady  # without rules between members: one array, counted down
        preference = self.scores(sig, rows)
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
                preference = self.scores(sig, rows)
        if budgets and done < promised:
            return -1
        return done

    def place_leaf(self, leaf: Leaf, mask: BoolArray, limit: int | None = None,
                   smallest_first: bool = False) -> tuple[int, Diagnosis | None]:
        """Place as many pending members as fit inside ``mask`` (at most ``limit`` if given), member shapes
        largest first (bin-packing order). ``smallest_first`` (with ``limit``): the ``limit`` smallest members —
        those that leave the most room to the leaf's siblings, and the likeliest to fit — placed largest first, as
        any selection is packed (placing the small ones first strands the larger: 1 + 1 + 2 cpu on nodes of 1 and
        3 free fits only with the 2 placed first). When the selection falls short (a small member no node takes),
        they are placed again smallest first, each shape up to what the ones before left of ``limit``, so the next
        smallest stand in for the members placed nowhere.

        Returns (pods placed, the diagnosis for the first member that did not fit, or None).
        """
        placed = 0
        why: Diagnosis | None = None
        outer, self.state.scope = self.state.scope, mask  # the leaf's domain, for plugins that rule within it
        try:
            placed, why = self._place_signatures(leaf, mask, limit, smallest_first)
        finally:
            self.state.scope = outer
        return placed, why

    def _place_signatures(self, leaf: Leaf, mask: BoolArray, limit: int | None,
                          smallest_first: bool) -> tuple[int, Diagnosis | None]:
        sigs = self.signatures.of(leaf)
        # a gang of one pod shape: the members it still needs, which a rule between its copies may bound (diagnose)
        need = leaf.min_count - len(leaf.bound) if leaf.min_count is not None and len(sigs) == 1 else 0
        if not smallest_first or limit is None:
            return self._place_in_turn(sigs, range(len(sigs)), mask, need, limit)
        chosen: dict[int, int] = {}  # signature index → copies of the selection (the ``limit`` smallest)
        left = limit
        for i in reversed(range(len(sigs))):
            if left > 0:
                chosen[i] = left if sigs[i].rejected is not None else min(len(sigs[i].pods), left)
                left -= 0 if sigs[i].rejected is not None else chosen[i]
        mark = self.state.mark()
        placed, why = self._place_in_turn(sigs, range(len(sigs)), mask, need, limit, chosen)
        if placed >= limit:
            return placed, why
        # a member of the selection fits nowhere: the smallest first, each shape taking the place the ones before
        # left (the next smallest stands in for a small member no node takes)
        self.state.undo(mark)
        return self._place_in_turn(sigs, reversed(range(len(sigs))), mask, need, limit)

    def _place_in_turn(self, sigs: list[Signature], order: Iterable[int], mask: BoolArray, need: int,
                       limit: int | None, chosen: dict[int, int] | None = None) -> tuple[int, Diagnosis | None]:
        """Place the signatures in ``order``: ``chosen``'s copies of each (signature index → copies), or as many as
        fit up to ``limit`` in all (None: every pod)."""
        placed = 0
        short: list[tuple[Signature, Diagnosis]] = []
        for i in order:
            sig = sigs[i]
            if chosen is not None:
                n = min(len(sig.pods), chosen.get(i, 0))
            else:
                n = len(sig.pods) if limit is None else min(len(sig.pods), limit - placed)
            if n <= 0:
                continue
            if sig.rejected is not None:
                short.append((sig, Diagnosis(sig.rejected.reasons[0], sig.rejected.code is Code.UNSCHEDULABLE,
                                             frozenset((sig.rejected.plugin,)))))
                continue
            done = 0
            allowed = mask & sig.static.ok if sig.nodes is None else mask & sig.static.ok & sig.nodes
            rows = np.flatnonzero(allowed)
            if rows.size:
                done = self.place_copies(sig, rows, n)
            placed += done
            if done < n:
                short.append((sig, diagnose(self.state, self.profile, sig, mask, need=need)))
        return placed, combined(short, len(sigs))


def combined(short: list[tuple[Signature, Diagnosis]], shapes: int = 1) -> Diagnosis | None:
    """One diagnosis for the member shapes (signatures) of a leaf that fell short, in the order they were tried, or
    None; ``shapes``: how many the leaf has. Every shape adds its rejectors, so a change that helps any of them moves
    the root (each pod's own unschedulable plugins, in kube), and limited when any is; the first gives the rest. When
    shapes were refused by different plugins, the message gives the first shape refused by each set of them, after
    the name of a pod of that shape (kube reports each pod's own); shapes refused alike (per-pod claims of one
    template) give one. When only some of the leaf's shapes fell short, the message names them too, so a member
    that fits is not told the nodes refused it."""
    if not short:
        return None
    first = short[0][1]
    message = first.message
    kinds = {why.rejectors: (sig, why) for sig, why in reversed(short)}  # each set's first shape
    if len(kinds) > 1 or shapes > len(short):
        message = clauses(f"{_shape(sig)}: {why.message}" for sig, why in short if kinds[why.rejectors][0] is sig)
    return dataclasses.replace(first, message=message, limited=any(why.limited for _, why in short),
                               rejectors=frozenset().union(*(why.rejectors for _, why in short)))


def _shape(sig: Signature) -> str:
    name = sig.pods[0].metadata.name
    return f"pod {name}" if len(sig.pods) == 1 else f"pods like {name} ({len(sig.pods)})"
