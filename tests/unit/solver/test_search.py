"""The all-or-nothing search: gang semantics, composites, topology, scoring, reasons and codes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.framework import Code, NodeTable, Plan, Snapshot, SolverConfig, Unschedulable
from scheduler.groups import TreeState, build_trees
from scheduler.model import CompositePodGroup, Node, Pod, PodGroup
from scheduler.model.scheduling import GroupKey
from scheduler.solver import solve
from scheduler.solver.diagnosis import clauses
from tests.unit.groups.builders import NS, cpg, pg
from tests.unit.solver.builders import node, pod

ZONE = "topology.kubernetes.io/zone"
RACK = "topology.example.com/rack"
GPU_TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gang_pods(group: str, n: int, **kw: object) -> list[Pod]:
    return [pod(f"{group}-{i}", namespace=NS, group=group, **kw) for i in range(n)]  # type: ignore[arg-type]


def solve_one(nodes: list[Node], pods: list[Pod], pgs: list[PodGroup], cpgs: tuple[CompositePodGroup, ...] | list[
        CompositePodGroup] = (), config: SolverConfig | None = None) -> Plan | Unschedulable:
    (tree,) = [t for t in build_trees(pods, pgs, cpgs, scheduler_name="gang-scheduler").trees]
    assert tree.state is TreeState.READY, tree.message
    return solve(tree, Snapshot.build(NodeTable.build(nodes), pods), config)


def nodes_used(plan: Plan | Unschedulable) -> Counter[str]:
    assert isinstance(plan, Plan), plan
    return Counter(n for _, n in plan.placements)


def test_gang_placed_whole_on_fewest_nodes() -> None:
    nodes = [node(f"n{i}", cpu="8") for i in range(4)]
    plan = solve_one(nodes, gang_pods("g", 8, cpu="2"), [pg("g", 8)])
    assert nodes_used(plan) == Counter({"n0": 4, "n1": 4})


def test_gang_that_cannot_reach_min_count_places_nothing_and_says_why() -> None:
    nodes = [node("n0", cpu="4"), node("n1", cpu="4", taints=["dedicated=infer:NoSchedule"])]
    result = solve_one(nodes, gang_pods("g", 3, cpu="2"), [pg("g", 3)])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE
    assert result.message == ("gang g: 2/3 placeable (minCount 3); 0/2 nodes are available: 1 Insufficient cpu, "
                              "1 node(s) had untolerated taint {dedicated: infer}.")


def test_only_static_rejections_are_unresolvable() -> None:
    nodes = [node("n0", taints=["dedicated=infer:NoSchedule"])]
    result = solve_one(nodes, gang_pods("g", 2), [pg("g", 2)])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_gang_places_members_beyond_min_count_when_they_fit() -> None:
    plan = solve_one([node("n0", cpu="3")], gang_pods("g", 4, cpu="1"), [pg("g", 2)])
    assert isinstance(plan, Plan)
    assert len(plan.placements) == 3
    (left,) = plan.unplaced
    assert plan.unplaced[left].endswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_bound_members_count_toward_min_count() -> None:
    pods = gang_pods("g", 1, cpu="1") + [pod("g-bound", namespace=NS, group="g", node_name="n0", phase="Running")]
    plan = solve_one([node("n0", cpu="2")], pods, [pg("g", 2)])
    assert nodes_used(plan) == Counter({"n0": 1})


def test_composite_gang_needs_min_group_count_children() -> None:
    pgs = [pg("a", 2, parent="root"), pg("b", 2, parent="root")]
    pods = gang_pods("a", 2, cpu="2") + gang_pods("b", 2, cpu="2")
    result = solve_one([node("n0", cpu="6")], pods, pgs, [cpg("root", 2)])
    assert isinstance(result, Unschedulable)
    assert "composite root: 1/2 child groups placeable (minGroupCount 2)" in result.message


def test_composite_places_what_fits_beyond_min_group_count() -> None:
    pgs = [pg("a", 2, parent="root"), pg("b", 2, parent="root")]
    pods = gang_pods("a", 2, cpu="2") + gang_pods("b", 2, cpu="2")
    plan = solve_one([node("n0", cpu="6")], pods, pgs, [cpg("root", 1)])
    assert isinstance(plan, Plan)
    assert plan.satisfied == {GroupKey("CompositePodGroup", NS, "root"), GroupKey("PodGroup", NS, "a")}
    assert GroupKey("PodGroup", NS, "b") in plan.group_reasons


def test_a_basic_group_takes_its_smallest_member_when_its_largest_would_starve_a_sibling() -> None:
    """A basic group is satisfied by one placed member. Its largest member first (bin-packing order) fills the node
    and leaves the sibling the composite needs no room; its smallest leaves room for both. Before, the search
    stopped at the largest, and the same cluster with less free cpu (the large member no longer fitting) found the
    plan this one did not."""
    pgs = [pg("a", None, parent="root"), pg("b", None, parent="root")]
    pods = [pod("a-small", namespace=NS, group="a", cpu="1"), pod("a-large", namespace=NS, group="a", cpu="4"),
            pod("b-0", namespace=NS, group="b", cpu="1")]
    plan = solve_one([node("n0", cpu="4")], pods, pgs, [cpg("root", 2)])
    assert isinstance(plan, Plan), plan
    assert sorted(p.metadata.name for p, _ in plan.placements) == ["a-small", "b-0"]


def test_a_group_whose_minimum_is_placed_largest_first_still_finds_the_plan_it_did() -> None:
    """The largest-first minimum stays an alternative: here it is the only plan (``a-small`` and ``b-0`` both
    need the 1-cpu node n1)."""
    host = "kubernetes.io/hostname"
    nodes = [node("n0", cpu="4", labels={host: "n0"}), node("n1", cpu="1", labels={host: "n1"})]
    pods = [pod("a-large", namespace=NS, group="a", cpu="4"),
            pod("a-small", namespace=NS, group="a", cpu="1", node_selector={host: "n1"}),
            pod("b-0", namespace=NS, group="b", cpu="1", node_selector={host: "n1"})]
    plan = solve_one(nodes, pods, [pg("a", None, parent="root"), pg("b", None, parent="root")], [cpg("root", 2)])
    assert isinstance(plan, Plan), plan
    assert sorted((p.metadata.name, n) for p, n in plan.placements) == [("a-large", "n0"), ("b-0", "n1")]


def test_a_gang_of_the_smallest_members_is_packed_largest_first() -> None:
    """minCount 3 of members of 1, 1, 2 and 3 cpu on nodes with 1 and 3 free: the 3 first leaves the 2 no room, the
    two 1s first (both on the 3-cpu node) leave it none either; the three smallest, the 2 first, fit (as
    kube-scheduler placing them in their order would find)."""
    nodes = [node("n0", cpu="1"), node("n1", cpu="3")]
    pods = [pod(f"g-{i}", namespace=NS, group="g", cpu=cpu) for i, cpu in enumerate(["1", "1", "2", "3"])]
    plan = solve_one(nodes, pods, [pg("g", 3)])
    assert isinstance(plan, Plan), plan
    assert sorted((p.metadata.name, n) for p, n in plan.placements) == [("g-0", "n0"), ("g-1", "n1"), ("g-2", "n1")] \
        or sorted((p.metadata.name, n) for p, n in plan.placements) == [("g-0", "n1"), ("g-1", "n0"), ("g-2", "n1")]


@pytest.mark.parametrize("sibling_first", [False, True])
def test_a_smallest_member_that_fits_nowhere_leaves_the_next_smallest_to_the_minimum(sibling_first: bool) -> None:
    """Gang g (minCount 2) of 4, 3, 2 and 1 cpu, the 1 selecting no node, and its sibling h of 4 cpu on one 9-cpu
    node: g's every member that fits (4 + 3 + 2) or its two largest (4 + 3) starve h; its two smallest are 2 + 1,
    and the 1 fits nowhere: the next smallest (3) takes its place, 2 + 3 + 4 = 9 fit (as the search found before
    the smallest were chosen ahead of placing them)."""
    pods = [pod(f"g-{n}", namespace=NS, group="g", cpu=cpu) for n, cpu in (("a", "4"), ("b", "3"), ("c", "2"))]
    pods += [pod("g-d", namespace=NS, group="g", cpu="1", node_selector={"pool": "none"}),
             pod("h-0", namespace=NS, group="h", cpu="4")]
    order = ["h", "g"] if sibling_first else ["g", "h"]
    pgs = [pg(name, 2 if name == "g" else 1, parent="root") for name in order]
    plan = solve_one([node("n0", cpu="9")], pods, pgs, [cpg("root", 2)])
    assert isinstance(plan, Plan), plan
    assert sorted(p.metadata.name for p, _ in plan.placements) == ["g-b", "g-c", "h-0"]


def test_a_basic_groups_smallest_member_that_fits_nowhere_leaves_its_place_to_the_next() -> None:
    """Basic group a of 4, 3 and 1 cpu (the 1 selecting no node) and its sibling b of 5 cpu on one 8-cpu node:
    a's largest starves b; its smallest fits nowhere; the next smallest (3) leaves b room."""
    pods = [pod("a-0", namespace=NS, group="a", cpu="4"), pod("a-1", namespace=NS, group="a", cpu="3"),
            pod("a-2", namespace=NS, group="a", cpu="1", node_selector={"pool": "none"}),
            pod("b-0", namespace=NS, group="b", cpu="5")]
    plan = solve_one([node("n0", cpu="8")], pods, [pg("a", None, parent="root"), pg("b", None, parent="root")],
                     [cpg("root", 2)])
    assert isinstance(plan, Plan), plan
    assert sorted(p.metadata.name for p, _ in plan.placements) == ["a-1", "b-0"]


def test_when_only_some_member_shapes_fall_short_the_reason_names_them() -> None:
    """Members without a selector fit; those with one no node matches do not: the reason every member gets names the
    shape refused, so a member that fits is not told the nodes refused it."""
    pods = [*(pod(f"sel-{i}", namespace=NS, group="sel") for i in range(2)),
            *(pod(f"sel-{i}", namespace=NS, group="sel", node_selector={"pool": "none"}) for i in range(2, 4))]
    result = solve_one([node("n0", cpu="8"), node("n1", cpu="8")], pods, [pg("sel", 4)])
    assert isinstance(result, Unschedulable)
    assert result.message == ("gang sel: 2/4 placeable (minCount 4); pods like sel-2 (2): 0/2 nodes are available: "
                              "2 node(s) didn't match Pod's node affinity/selector.")


@pytest.mark.parametrize("k", [2, 8])
def test_a_smallest_first_minimum_that_places_the_same_members_is_not_searched_again(k: int) -> None:
    """k gangs (minCount 2) of one member that fits nowhere and two small ones, and a sibling that cannot fit:
    the smallest-first minimum places the same two small members, so the siblings after it are not searched again
    (the attempts grow linearly with k, not exponentially)."""
    pgs = [pg(f"g{i}", 2, parent="root") for i in range(k)] + [pg("z", 1, parent="root")]
    pods = [p for i in range(k) for p in [pod(f"g{i}-big", namespace=NS, group=f"g{i}", cpu="64"),
                                          *(pod(f"g{i}-s{j}", namespace=NS, group=f"g{i}", cpu="1") for j in range(2))]]
    pods.append(pod("z-0", namespace=NS, group="z", cpu="100"))
    result = solve_one([node("n0", cpu="32")], pods, pgs, [cpg("root", k + 1)], SolverConfig(search_budget=10**6))
    assert isinstance(result, Unschedulable)
    assert result.attempts <= 2 * k + 1


def test_siblings_never_double_book() -> None:
    pgs = [pg("a", 2, parent="root"), pg("b", 2, parent="root")]
    pods = gang_pods("a", 2, cpu="2") + gang_pods("b", 2, cpu="2")
    plan = solve_one([node("n0", cpu="4"), node("n1", cpu="4")], pods, pgs, [cpg("root", 2)])
    assert nodes_used(plan) == Counter({"n0": 2, "n1": 2})


def test_topology_gang_stays_in_one_domain() -> None:
    nodes = [node("a1", cpu="2", labels={ZONE: "a"}), node("a2", cpu="2", labels={ZONE: "a"}),
             node("b1", cpu="4", labels={ZONE: "b"})]
    plan = solve_one(nodes, gang_pods("g", 3, cpu="1"), [pg("g", 3, topology=ZONE)])
    used = nodes_used(plan)
    assert set(used) <= {"a1", "a2"} or set(used) == {"b1"}


def test_backtracking_revisits_an_earlier_siblings_domain() -> None:
    """Greedy takes the tightest rack r1 for `a`; then `b` (needs all of r1's one big node) fails;
    the search moves `a` to r2, and both fit. KEP-6012's greedy sibling order would give up."""
    nodes = [node("r1-big", cpu="4", labels={RACK: "r1"}), node("r2-s1", cpu="2", labels={RACK: "r2"}),
             node("r2-s2", cpu="2", labels={RACK: "r2"}), node("r2-s3", cpu="1", labels={RACK: "r2"})]
    pgs = [pg("a", 2, parent="root", topology=RACK, created="2026-01-01T00:00:01Z"),
           pg("b", 1, parent="root", topology=RACK, created="2026-01-01T00:00:02Z")]
    pods = gang_pods("a", 2, cpu="2") + gang_pods("b", 1, cpu="4")
    plan = solve_one(nodes, pods, pgs, [cpg("root", 2)])
    assert isinstance(plan, Plan), plan
    placed = {p.metadata.name: n for p, n in plan.placements}
    assert placed["b-0"] == "r1-big"
    assert {placed["a-0"], placed["a-1"]} == {"r2-s1", "r2-s2"}
    assert plan.attempts > 3


def test_bound_members_pin_the_domain() -> None:
    nodes = [node("a1", cpu="2", labels={ZONE: "a"}), node("b1", cpu="8", labels={ZONE: "b"})]
    pods = gang_pods("g", 1, cpu="1") + [pod("g-run", namespace=NS, group="g", node_name="a1", phase="Running")]
    plan = solve_one(nodes, pods, [pg("g", 2, topology=ZONE)])
    assert nodes_used(plan) == Counter({"a1": 1})


@pytest.mark.parametrize("busy_first", [True, False], ids=["busy-rack-named-last", "busy-rack-named-first"])
def test_pack_breaks_a_tie_of_equal_free_room_toward_the_busier_rack(busy_first: bool) -> None:
    """Two racks with the same free room (4 cpu) for a 2-pod gang: one idle 4-cpu node, one 8-cpu node half
    used by a running pod. Both would be left with the same share of their room, so ``pack`` goes to the busy
    rack (kube ranks by allocation against capacity) whatever the racks are called; ``spread`` to the idle."""
    busy, idle = ("r-a", "r-b") if busy_first else ("r-b", "r-a")
    nodes = [node("idle", cpu="4", labels={RACK: idle}), node("busy", cpu="8", labels={RACK: busy})]
    running = pod("other", namespace=NS, cpu="4", node_name="busy", phase="Running")
    pods = [*gang_pods("g", 2, cpu="1"), running]
    assert nodes_used(solve_one(nodes, pods, [pg("g", 2, topology=RACK)])) == Counter({"busy": 2})
    spread = solve_one(nodes, pods, [pg("g", 2, topology=RACK)], config=SolverConfig(scoring="spread"))
    assert set(nodes_used(spread)) == {"idle"}


def test_pack_keeps_accelerator_nodes_whole_for_cpu_pods() -> None:
    nodes = [node("cpu", cpu="8"), node("gpu", cpu="64", gpu=8)]
    plan = solve_one(nodes, gang_pods("g", 2, cpu="1"), [pg("g", 2)])
    assert nodes_used(plan) == Counter({"cpu": 2})


def test_spread_uses_more_nodes_than_pack() -> None:
    nodes = [node(f"n{i}", cpu="8") for i in range(4)]
    packed = nodes_used(solve_one(nodes, gang_pods("g", 4, cpu="1"), [pg("g", 4)]))
    spread = nodes_used(solve_one(nodes, gang_pods("g", 4, cpu="1"), [pg("g", 4)],
                                  config=SolverConfig(scoring="spread")))
    assert len(packed) == 1 and len(spread) == 4


def test_unknown_resource_is_reported_as_insufficient() -> None:
    result = solve_one([node("n0")], gang_pods("g", 1, gpu=1), [pg("g", 1)])
    assert isinstance(result, Unschedulable)
    assert result.message.endswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
                                   "No node offers nvidia.com/gpu.")


def test_search_budget_bounds_a_failing_search() -> None:
    nodes = [node(f"n{i}", cpu="1", labels={RACK: f"r{i}"}) for i in range(6)]
    pgs = [pg(f"c{i}", 1, parent="root", topology=RACK) for i in range(6)] + [pg("zbig", 1, parent="root")]
    pods = [p for i in range(6) for p in gang_pods(f"c{i}", 1, cpu="1")] + gang_pods("zbig", 1, cpu="2")
    result = solve_one(nodes, pods, pgs, [cpg("root", 7)], config=SolverConfig(search_budget=20))
    assert isinstance(result, Unschedulable)
    assert result.message.startswith("search budget of 20 attempts exhausted")
    assert result.attempts == 21


def test_same_input_same_plan() -> None:
    nodes = [node(f"n{i}", cpu="4", labels={ZONE: f"z{i % 2}"}) for i in range(6)]
    args = (nodes, gang_pods("g", 5, cpu="1"), [pg("g", 5, topology=ZONE)])
    first, second = solve_one(*args), solve_one(*args)
    assert isinstance(first, Plan) and isinstance(second, Plan)
    assert [(p.key, n) for p, n in first.placements] == [(p.key, n) for p, n in second.placements]


ZONE_A, ZONE_B = {ZONE: "a"}, {ZONE: "b"}
DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("unusable", "pod_kw"),
    [
        pytest.param(node("a-big", cpu="8", labels=ZONE_A, unschedulable=True), {}, id="cordoned"),
        pytest.param(node("a-big", cpu="8", labels=ZONE_A, taints=["dedicated=infer:NoSchedule"]), {}, id="tainted"),
        pytest.param(node("a-big", cpu="8", labels=ZONE_A), {"node_selector": {"pool": "train"}},
                     id="selector-mismatch"),
    ],
)
def test_domain_pruning_counts_only_nodes_the_members_can_use(unusable: Node, pod_kw: dict[str, Any]) -> None:
    """Zone a's free cpu is 10 with the unusable node, 2 without: counted right, both zones are pruned and zone b,
    the closer, is tried for the reason; counted wrong, zone a would be tried and quoted (2/4 placeable)."""
    pool = {"pool": "train"}
    nodes = [unusable, node("a-small", cpu="2", labels={**ZONE_A, **pool}),
             node("b1", cpu="3", labels={**ZONE_B, **pool})]
    result = solve_one(nodes, gang_pods("g", 4, cpu="1", memory=None, **pod_kw), [pg("g", 4, topology=ZONE)])
    assert isinstance(result, Unschedulable)
    assert result.message == (f"gang g: 3/4 placeable (minCount 4) in {ZONE} b (best of 2 domains): 3 cpu free on "
                              f"the 1 node(s) passing every other filter, 4 needed; the 2 {ZONE} domains have that "
                              "room together, not one of them; 0/1 nodes are available: 1 Insufficient cpu.")
    assert result.code is Code.UNSCHEDULABLE


def test_domain_pruning_counts_a_node_any_signature_of_the_group_can_use() -> None:
    """Union over signatures: the tainted node is usable by the tolerating members, so zone a (2 + 2 cpu) is
    tried and holds the gang; an intersection (a-plain only, 2 < 3 cpu) would prune it and fail the gang."""
    nodes = [node("a-tainted", cpu="2", labels=ZONE_A, taints=["dedicated=infer:NoSchedule"]),
             node("a-plain", cpu="2", labels=ZONE_A), node("b1", cpu="1", labels=ZONE_B)]
    pods = (gang_pods("g", 2, cpu="1", memory=None, tolerations=[DEDICATED])
            + [pod("g-plain", cpu="2", memory=None, namespace=NS, group="g")])
    assert nodes_used(solve_one(nodes, pods, [pg("g", 3, topology=ZONE)])) == Counter({"a-tainted": 2, "a-plain": 1})


@pytest.mark.parametrize(
    ("pgs", "pods", "nodes", "reasons"),
    [
        pytest.param([pg("g", None)], gang_pods("g", 3, cpu="1"), [node("n0", cpu="2")],
                     {"ml/g-2": "group g: 2/3 placed; 0/1 nodes are available: 1 Insufficient cpu."},
                     id="basic-group-overflow"),
        pytest.param([pg("g", None)],
                     gang_pods("g", 2, cpu="1") + [pod("g-run", namespace=NS, group="g", node_name="n0",
                                                       phase="Running")],
                     [node("n0", cpu="2")],
                     {"ml/g-1": "group g: 2/3 placed; 0/1 nodes are available: 1 Insufficient cpu."},
                     id="basic-group-bound-member-counts"),
        pytest.param([pg("g", 2)], gang_pods("g", 4, cpu="1"), [node("n0", cpu="3")],
                     {"ml/g-3": "gang g: 3/4 placed (minCount 2); 0/1 nodes are available: 1 Insufficient cpu."},
                     id="gang-beyond-min-count"),
    ],
)
def test_members_left_over_by_a_plan_say_how_many_it_placed(pgs: list[PodGroup], pods: list[Pod], nodes: list[Node],
                                                             reasons: dict[str, str]) -> None:
    plan = solve_one(nodes, pods, pgs)
    assert isinstance(plan, Plan)
    assert dict(plan.unplaced) == reasons


def test_leftover_reason_counts_the_final_plan_not_the_best_abandoned_attempt() -> None:
    """spread tries the roomier rack r1 first: `a` places 3/4 there, `b` then fits nowhere, so the search
    moves `a` to r2 (2/4) and `b` takes r1. The reason must say 2/4, the count of the plan returned."""
    nodes = [node("r1-n", cpu="3", memory=None, labels={RACK: "r1"}),
             node("r2-n", cpu="2", memory=None, labels={RACK: "r2"})]
    pgs = [pg("a", None, parent="root", topology=RACK, created="2026-01-01T00:00:01Z"),
           pg("b", 1, parent="root", topology=RACK, created="2026-01-01T00:00:02Z")]
    pods = gang_pods("a", 4, cpu="1", memory=None) + gang_pods("b", 1, cpu="3", memory=None)
    plan = solve_one(nodes, pods, pgs, [cpg("root", 2)], config=SolverConfig(scoring="spread"))
    assert isinstance(plan, Plan)
    assert nodes_used(plan) == Counter({"r2-n": 2, "r1-n": 1})
    assert dict(plan.unplaced) == {
        "ml/a-2": f"group a: 2/4 placed in {RACK} r2; 0/1 nodes are available: 1 Insufficient cpu.",
        "ml/a-3": f"group a: 2/4 placed in {RACK} r2; 0/1 nodes are available: 1 Insufficient cpu.",
    }


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        pytest.param(None, "group g: 1/2 placed; 0/1 nodes are available: 1 Insufficient cpu.", id="basic"),
        pytest.param(1, "gang g: 1/2 placed (minCount 1); 0/1 nodes are available: 1 Insufficient cpu.", id="gang"),
    ],
)
def test_group_satisfied_by_bound_members_whose_extra_member_fits_nowhere(policy: int | None, reason: str) -> None:
    """minCount is met by the bound member: the group is scheduled and the extra member is merely pending
    (kube-scheduler's group cycle succeeds once minCount is placed; members that did not fit are retried alone).
    The decision is still Unschedulable — nothing to bind, the root backs off — but its ``minimum`` is the (empty)
    plan that satisfies the root, and the reason counts what is placed, not what was "placeable"."""
    pods = [pod("g-run", namespace=NS, group="g", node_name="n0", phase="Running"),
            pod("g-big", cpu="8", namespace=NS, group="g")]
    result = solve_one([node("n0", cpu="2")], pods, [pg("g", policy)])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE
    assert result.message == reason
    assert result.minimum is not None
    assert result.minimum.placements == ()
    assert GroupKey("PodGroup", NS, "g") in result.minimum.satisfied
    assert dict(result.minimum.unplaced) == {"ml/g-big": reason}


def test_clauses_drop_the_full_stop_before_a_semicolon() -> None:
    assert clauses(["a: 0/4 nodes are available: 4 Insufficient cpu.", "b: 1/2 placed", "c: done."]) == (
        "a: 0/4 nodes are available: 4 Insufficient cpu; b: 1/2 placed; c: done.")
    assert clauses([]) == "" and clauses(["only."]) == "only."


def test_domains_are_said_to_hold_the_room_together_only_when_their_nodes_hold_the_members_whole() -> None:
    """Two zones of two 3-cpu nodes hold 12 cpu together, but no node holds a 4-cpu member: the 2-member gang does not
    fit the cluster either, so the reason does not blame its zone constraint; with 1-cpu members the zones do hold
    them together and the reason says so."""
    nodes = [node(f"{z}{i}", cpu="3", memory="8Gi", labels={ZONE: z}) for z in "ab" for i in range(2)]
    big = solve_one(nodes, gang_pods("g", 2, cpu="4", memory=None), [pg("g", 2, topology=ZONE)])
    assert isinstance(big, Unschedulable)
    assert "have that room together" not in big.message
    assert big.message.startswith(f"gang g: 0/2 placeable (minCount 2) in {ZONE} a (one of 2 domains): 6 cpu free")
    small = solve_one(nodes, gang_pods("g", 7, cpu="1", memory=None), [pg("g", 7, topology=ZONE)])
    assert isinstance(small, Unschedulable)
    assert f"the 2 {ZONE} domains have that room together, not one of them" in small.message


def test_pack_keeps_a_gang_that_needs_no_accelerator_off_an_idle_accelerator_node_that_would_take_it_whole() -> None:
    """Four 4-cpu members: the idle GPU node alone would take them all (fewest nodes), the two CPU nodes take two
    each. Accelerators are the scarce resource: the CPU nodes are used, and the GPU node only for what they cannot
    take."""
    nodes = [node("cpu-a1", cpu="8", memory="32Gi"), node("cpu-a2", cpu="8", memory="32Gi"),
             node("gpu-b1", cpu="32", memory="128Gi", gpu=4)]
    plan = solve_one(nodes, gang_pods("g", 4, cpu="4", memory=None), [pg("g", 4)])
    assert isinstance(plan, Plan)
    assert sorted(n for _, n in plan.placements) == ["cpu-a1", "cpu-a1", "cpu-a2", "cpu-a2"]
    plan = solve_one(nodes, gang_pods("g", 6, cpu="4", memory=None), [pg("g", 6)])
    assert isinstance(plan, Plan)
    assert sorted(n for _, n in plan.placements) == ["cpu-a1", "cpu-a1", "cpu-a2", "cpu-a2", "gpu-b1", "gpu-b1"]
