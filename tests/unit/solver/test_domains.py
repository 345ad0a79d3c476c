"""Topology domain pruning: the room per domain it sums, and the need it compares it with."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework import NodeTable, Snapshot, SolverConfig
from scheduler.framework.cycle_state import CycleState
from scheduler.groups import build_trees
from scheduler.groups.tree import Composite
from scheduler.solver.domains import DomainPruning, room_per_domain
from scheduler.solver.failures import Failures
from scheduler.solver.plugins import DEFAULT_PROFILE
from scheduler.solver.signatures import Signatures
from tests.unit.groups.builders import NS, cpg, pg
from tests.unit.solver.builders import node, pod


@given(st.lists(st.tuples(st.integers(-1, 3), st.booleans(), st.integers(-5, 20), st.integers(-5, 20)),
                min_size=0, max_size=30))
def test_room_per_domain_is_the_sum_over_counted_nodes_with_no_negative_room(
        rows: list[tuple[int, bool, int, int]]) -> None:
    ids = np.array([d for d, _, _, _ in rows], dtype=np.int32)
    counted = np.array([c and d >= 0 for d, c, _, _ in rows], dtype=bool)
    room = np.array([[a, b] for _, _, a, b in rows], dtype=np.int64).reshape(len(rows), 2)
    cols = np.array([1, 0], dtype=np.int64)
    got = room_per_domain(4, ids, counted, cols, room)
    expected = np.zeros((4, 2), dtype=np.int64)
    for n, (d, _, a, b) in enumerate(rows):
        if counted[n]:
            expected[d] += [max(b, 0), max(a, 0)]
    assert np.array_equal(got, expected)


def test_need_is_min_count_times_the_smallest_request_and_the_smallest_children_summed() -> None:
    pods = ([pod(f"a-{i}", namespace=NS, group="a", cpu="2") for i in range(3)]
            + [pod(f"b-{i}", namespace=NS, group="b", cpu="1") for i in range(4)]
            + [pod(f"c-{i}", namespace=NS, group="c", cpu="5") for i in range(2)])
    groups = [pg("a", 2, parent="top"), pg("b", 4, parent="top"), pg("c", 2, parent="top")]
    (tree,) = build_trees(pods, groups, [cpg("top", 2)], scheduler_name="gang-scheduler").trees
    snapshot = Snapshot.build(NodeTable.build([node("n0", cpu="64")]), pods)
    state = CycleState(snapshot, SolverConfig(), tree.priority, DEFAULT_PROFILE.reservers)
    domains = DomainPruning(state, SolverConfig(), Signatures(state, DEFAULT_PROFILE), Failures())
    cpu = snapshot.table.column["cpu"]
    assert isinstance(tree.root, Composite)
    a, b, c = tree.root.children
    assert [int(domains.need(g)[cpu]) for g in (a, b, c)] == [4000, 4000, 10000]
    assert int(domains.need(tree.root)[cpu]) == 8000  # minGroupCount 2: the two smallest children
    assert bool(domains.usable(tree.root).all())
