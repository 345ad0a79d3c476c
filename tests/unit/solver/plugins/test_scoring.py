"""``NodeOrder.run`` makes exactly the picks repeated ``NodeOrder.pick`` makes (pack, no preference), ties
included — so batching them changes no plan."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.solver.plugins.scoring import NodeOrder


def one_by_one(order: NodeOrder, caps: np.ndarray, remaining: int) -> list[tuple[int, int]]:
    caps = caps.copy()
    out = []
    while remaining > 0 and (caps > 0).any():
        j, take = order.pick(np.flatnonzero(caps > 0), caps, remaining, None)
        out.append((j, take))
        caps[j] -= take
        remaining -= take
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=30),
       st.integers(1, 40))
def test_run_equals_repeated_picks(nodes: list[tuple[int, int, int]], remaining: int) -> None:
    order = NodeOrder.__new__(NodeOrder)  # the order's inputs set directly: what a CycleState would give it
    order.base = np.array([p for _, p, _ in nodes], dtype=np.int64) << 40  # the weighted accelerator penalty
    order.idle = np.array([i for _, _, i in nodes], dtype=np.int64)
    order.spread = False
    caps = np.minimum(np.array([c for c, _, _ in nodes], dtype=np.int64), remaining)
    expected = one_by_one(order, caps, remaining)
    assert order.run(np.flatnonzero(caps > 0), caps, remaining) == expected
