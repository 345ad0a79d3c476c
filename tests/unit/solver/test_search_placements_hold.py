"""``placements_hold`` (preemption's reprieve check: a fixed plan re-filtered on its nodes) and ``node_local``."""

from __future__ import annotations

import pytest

from scheduler.framework import NodeTable, Plan, Snapshot
from scheduler.groups import build_trees
from scheduler.solver import node_local, placements_hold, solve
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import node, pod


def gang_tree(n: int, cpu: str = "2"):  # type: ignore[no-untyped-def]
    pods = [pod(f"g-{i}", cpu=cpu, namespace="ml", group="g") for i in range(n)]
    forest = build_trees(pods, [pg("g", n)], [], scheduler_name="gang-scheduler")
    return forest.trees[0]


NODES = [node("a", cpu="4"), node("b", cpu="4")]


@pytest.mark.parametrize(("running", "holds"), [
    pytest.param([], True, id="nothing-changed"),
    pytest.param([("x", "1", "b")], True, id="a-pod-on-a-node-the-plan-does-not-use"),
    pytest.param([("x", "1", "a")], False, id="a-pod-taking-room-the-plan-needs"),
    pytest.param([("x", "4", "b"), ("y", "1", "a")], False, id="either-node-short"),
])
def test_a_plan_holds_while_its_nodes_keep_room(running: list[tuple[str, str, str]], holds: bool) -> None:
    tree = gang_tree(2)
    table = NodeTable.build(NODES)
    plan = solve(tree, Snapshot.build(table, []))
    assert isinstance(plan, Plan) and {n for _, n in plan.placements} == {"a"}
    others = [pod(name, cpu=cpu, node_name=where, phase="Running", scheduler="default-scheduler")
              for name, cpu, where in running]
    assert placements_hold(tree, Snapshot.build(table, others), plan) is holds


def test_a_plan_for_an_unknown_node_does_not_hold() -> None:
    tree = gang_tree(1)
    plan = solve(tree, Snapshot.build(NodeTable.build(NODES), []))
    assert isinstance(plan, Plan)
    assert not placements_hold(tree, Snapshot.build(NodeTable.build([node("c")]), []), plan)


def test_the_default_filters_are_node_local() -> None:
    tree = gang_tree(2)
    assert node_local(tree, Snapshot.build(NodeTable.build(NODES), []))
