"""Node order for the copies of one signature: the ``--scoring`` strategy behind the Score plugins.

``pack`` (default): if one node can take every remaining copy, take the tightest such node, else the
node that takes the most; penalise accelerator nodes (idle ones twice) for pods that need no
accelerator; break ties toward partly used nodes, then by row (node name order). ``spread``: one
copy at a time onto the node with the most room.

Score plugins' weighted sum comes first: a node preferred by a pod's preferred affinities (or
spread constraints with ``ScheduleAnyway``) wins over the packing order, as kube-scheduler's
weighted score sum ranks nodes before its tie-breaks; with no preference, the order is the
packing order alone.

Pure and vectorised: each pick is one ``argmin`` over the candidate rows.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import IntArray
from scheduler.model.quantity import PODS

NAME = "NodeOrder"

_BIG = np.int64(1) << 40
"""Weight of the accelerator penalty over the capacity terms (which stay below 2^10)."""
PREFERENCE_UNIT = np.int64(1) << 42
"""Weight of one point of weighted score over the whole packing key (< 3·2^40)."""


class NodeOrder:
    """The packing order for ``sig`` over candidate ``rows`` (see the module docstring)."""

    def __init__(self, state: CycleState, sig: Signature, rows: IntArray) -> None:
        table = state.table
        col = table.column[PODS]
        self.idle: IntArray = (state.free[rows, col] >= table.allocatable[rows, col]).astype(np.int64)
        penalty = np.zeros(len(rows), dtype=np.int64)
        if not sig.needs_accelerator:
            penalty = table.accelerator[rows].astype(np.int64) * (1 + self.idle)
        self.base: IntArray = penalty * _BIG
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
