"""Node order for the copies of one signature: the ``--scoring`` strategy behind the Score plugins.

``pack`` (default): for pods that need no accelerator, nodes without one first (:func:`accelerators`: an extended
resource in the allocatable, or devices published through DRA), then partly used accelerator nodes, idle ones last
(each tier only for the copies the one before cannot take); within a tier, if one node can take every remaining copy,
take the tightest such node, else the node that takes the most; break ties toward partly used nodes, then by row
(node name order). ``spread``: one
copy at a time onto the node with the most room.

Score plugins' weighted sum comes first: a node preferred by a pod's preferred affinities (or
spread constraints with ``ScheduleAnyway``) wins over the packing order, as kube-scheduler's
weighted score sum ranks nodes before its tie-breaks; with no preference, the order is the
packing order alone.

Pure and vectorised: each pick is one ``argmin`` over the candidate rows; :meth:`NodeOrder.run` makes
the whole sequence of ``pack`` picks at once when nothing changes between them but the nodes used
(no preference, no rule between members), as one partition per accelerator tier instead of one pass per pick.
"""

from __future__ import annotations

import numpy as np

from scheduler.dra.device_snapshot import DraView
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.model.quantity import PODS

NAME = "NodeOrder"

_BIG = np.int64(1) << 40
"""Weight of the accelerator penalty over the capacity terms (which stay below 2^10)."""
_NEVER = np.iinfo(np.int64).max
"""A key no node is picked by (masked out of an argmin)."""
PREFERENCE_UNIT = np.int64(1) << 42
"""Weight of one point of weighted score over the whole packing key (< 3·2^40)."""


def accelerators(state: CycleState) -> BoolArray:
    """(N,) bool: the accelerator nodes — those offering an extended resource in their allocatable (a device plugin's
    GPUs, :attr:`~scheduler.framework.node_table.NodeTable.accelerator`) or with devices published through DRA
    (:meth:`~scheduler.dra.inventory.Inventory.accelerator_nodes`, memoised)."""
    view = state.snapshot.dra
    if isinstance(view, DraView) and view.inventory.devices:
        return view.inventory.accelerator_nodes(state.table)
    return state.table.accelerator


class NodeOrder:
    """The packing order for ``sig`` over candidate ``rows`` (see the module docstring)."""

    def __init__(self, state: CycleState, sig: Signature, rows: IntArray) -> None:
        table = state.table
        col = table.column[PODS]
        self.idle: IntArray = (state.free[:, col].take(rows) >= table.allocatable[:, col].take(rows)).astype(np.int64)
        # accelerator nodes (idle ones twice) are kept for pods that need one
        self.base: IntArray = (np.zeros(len(rows), dtype=np.int64) if sig.needs_accelerator
                               else accelerators(state).take(rows) * (1 + self.idle) * _BIG)
        """The accelerator penalty, already weighted (the part of every key that does not change)."""
        self.spread = state.config.scoring == "spread"

    def pick(self, sub: IntArray, caps: IntArray, remaining: int, preference: IntArray | None) -> tuple[int, int]:
        """The next node (an index into the candidate rows) and how many copies to put there.

        ``sub``: candidate indices still open; ``caps``: copies each candidate can take (indexed like
        the rows); ``remaining``: copies still to place; ``preference``: weighted score per candidate,
        or None.
        """
        c = caps[sub]
        base = self.base[sub]
        if preference is not None:
            base = base - preference[sub] * PREFERENCE_UNIT
        if self.spread:
            j = sub[np.argmin(base - c * 2 - self.idle[sub])]
            return int(j), 1
        fits = c >= remaining
        if preference is None:
            fits &= base == base.min()  # a node that takes them all, of the best accelerator tier
        if fits.any():
            if preference is None:
                cand = sub[fits]
                j = cand[np.argmin(self.base[cand] + caps[cand] * 2 + self.idle[cand])]
                return int(j), remaining
            # with preferences, a preferred node that cannot take all still comes first
            j = sub[np.argmin(base + np.where(fits, c * 2, 1 << 20) + self.idle[sub])]
            return int(j), int(min(caps[j], remaining))
        j = sub[np.argmin(base - c * 2 + self.idle[sub])]
        return int(j), int(caps[j])

    def run(self, sub: IntArray, caps: IntArray, remaining: int) -> list[tuple[int, int]]:
        """The picks :meth:`pick` makes one after another (``pack``, no preference) when each takes what it
        chose and nothing else changes: a node used is left with no room (a pick takes all of a node's
        copies unless it takes all that remain). ``sub``: candidate indices in ascending order with
        ``caps > 0``. Returns (index, copies) in pick order; identical to repeated :meth:`pick`, ties
        included (lowest index first): the nodes of the best accelerator tier first (non-accelerator nodes, for
        pods that need none), each tier's as :meth:`_run_tier` picks them, the next tier only for the copies the
        one before could not take."""
        assert not self.spread
        if remaining == 1 or not len(sub):  # one pick: the best tier's first node, as in one tier
            return self._run_tier(sub, caps, remaining)
        tier = self.base.take(sub)
        if tier.min() == tier.max():  # one tier: nothing to split
            return self._run_tier(sub, caps, remaining)
        out: list[tuple[int, int]] = []
        for value in np.unique(tier).tolist():
            picks = self._run_tier(sub[tier == value], caps, remaining)
            out += picks
            remaining -= sum(copies for _, copies in picks)
            if remaining <= 0:
                break
        return out

    def _run_tier(self, sub: IntArray, caps: IntArray, remaining: int) -> list[tuple[int, int]]:
        """:meth:`run` over candidates ``sub`` of one accelerator tier. When every candidate takes the same number
        of copies, the picks are simply the first nodes in key order (no pass for the last pick)."""
        c = caps.take(sub)
        count = min(len(sub), remaining)
        if count <= 0:
            return []
        base = self.base.take(sub) + self.idle.take(sub)
        if remaining == 1:  # every candidate takes it (caps > 0): the first step below without selecting them
            return [(int(sub[int(np.argmin(base + c * 2))]), 1)]
        cand = np.flatnonzero(c >= remaining)
        if len(cand):  # the loop's first step: some node takes every copy (most small gangs) — no sorting
            j = cand[np.argmin(base[cand] + c[cand] * 2)]
            return [(int(sub[j]), remaining)]
        order_key = base - c * 2  # what a pick that cannot take all remaining copies minimises
        low = int(c.min())
        uniform = low == int(c.max())
        if uniform:  # every candidate takes ``low`` copies (hostname anti-affinity: one each): the picks are
            count = min(len(sub), -(-remaining // low))  # the first ceil(remaining / low) in key order
        if count < len(sub):
            threshold = np.partition(order_key, count - 1)[count - 1]  # the value only: argpartition is
            # ~10x slower on the few-valued keys of uniform nodes (44 vs 5 us at 3,000 candidates)
            below = np.flatnonzero(order_key < threshold)
            ties = np.flatnonzero(order_key == threshold)[:count - len(below)]
            chosen = np.concatenate([below, ties])
        else:
            chosen = np.arange(len(sub))
        chosen = chosen[np.lexsort((chosen, order_key[chosen]))]
        if uniform:  # the tightest node that takes all that remain is then the next in key order
            picks = [(node, low) for node in sub[chosen].tolist()]
            picks[-1] = (picks[-1][0], min(low, remaining - low * (len(picks) - 1)))
            return picks
        rest_c = c.copy()
        rest_c[chosen] = 0
        rest_max = int(rest_c.max())  # the most copies a node not chosen takes (0: none left)
        chosen_c = c[chosen]
        suffix_max = np.maximum.accumulate(chosen_c[::-1])[::-1].tolist()
        copies, nodes = chosen_c.tolist(), sub[chosen].tolist()  # plain ints: the loop is Python
        out: list[tuple[int, int]] = []
        for step in range(len(copies)):
            if max(rest_max, suffix_max[step]) >= remaining:  # some node takes all that remain
                key = np.where(c >= remaining, base + c * 2, _NEVER)  # the tightest node that takes them all
                key[chosen[:step]] = _NEVER  # the nodes picked so far are full
                out.append((int(sub[int(np.argmin(key))]), remaining))
                return out
            out.append((nodes[step], copies[step]))
            remaining -= copies[step]
            if remaining <= 0:
                return out
        return out
