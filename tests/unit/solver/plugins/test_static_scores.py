"""Preferred node affinity (NodeAffinity Score) and PreferNoSchedule taints (TaintToleration Score): they
rank nodes before the packing order, and change nothing when every candidate scores alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework import SolverConfig
from scheduler.framework.node_table import NodeTable
from scheduler.solver.plugins.node_affinity import normalize, preferred_raw
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import ZONE, expr, node, pod, term
from tests.unit.solver.plugins.solving import NS, placed, solve_root, zoned_nodes


def preferring(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": t} for w, t in weighted]}}


def test_preferred_node_affinity_picks_the_preferred_zone_over_the_packing_order() -> None:
    nodes = zoned_nodes({"za": 1, "zb": 1})
    busy = pod("busy", namespace=NS, node_name="za-0", phase="Running", scheduler="default-scheduler")
    p = pod("p", namespace=NS, affinity=preferring((10, term(expr(ZONE, "In", "zb")))))
    assert placed(solve_root(nodes, [p], [busy]))["p"] == "zb-0"  # pack alone prefers the partly used za-0


def test_preferred_node_affinity_weights_add_up() -> None:
    nodes = [node("a", labels={"gpu": "a100", ZONE: "za"}), node("b", labels={"gpu": "h100"}),
             node("c", labels={ZONE: "za"})]
    spec = pod("p", affinity=preferring((30, term(expr("gpu", "In", "h100"))), (20, term(expr(ZONE, "Exists"))),
                                        (20, term(expr("gpu", "Exists"))), (0, term(expr("gpu", "Exists"))))).spec
    assert preferred_raw(NodeTable.build(nodes), spec).tolist() == [40, 50, 20]
    assert normalize(np.array([40, 50, 20])).tolist() == [40, 60, 0]  # 100·raw//max = 80, 100, 40; lowest at 0


def test_prefer_no_schedule_taint_is_avoided_unless_tolerated() -> None:
    nodes = [node("a", taints=["spot=yes:PreferNoSchedule"]), node("b")]
    busy = pod("busy", namespace=NS, node_name="a", phase="Running", scheduler="default-scheduler")
    assert placed(solve_root(nodes, [pod("p", namespace=NS)], [busy]))["p"] == "b"
    tolerant = pod("p", namespace=NS, tolerations=[{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert placed(solve_root(nodes, [tolerant], [busy]))["p"] == "a"  # tolerated: the packing order decides


def test_scores_that_do_not_differ_leave_the_packing_order_alone() -> None:
    nodes = [node(f"n{i}", labels={ZONE: "za"}) for i in range(3)]
    pods = [pod(f"g-{i}", namespace=NS, group="g", cpu="2", affinity=preferring((10, term(expr(ZONE, "In", "za")))))
            for i in range(4)]
    result = solve_root(nodes, pods, groups=[pg("g", 4)], config=SolverConfig())
    assert set(placed(result).values()) == {"n0"}  # all four on one node, as without the preference
