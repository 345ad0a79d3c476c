"""DefaultPreemption decisions on small clusters: who is evicted, who never is, and what the root is told."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework import Plan, Preemption, Unschedulable
from scheduler.model import Pod, PodGroup, PriorityClass
from scheduler.model.dra import DeviceClass
from scheduler.model.pod import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from scheduler.model.scheduling import GroupKey
from scheduler.preemption.plugin import GROUP_PREFIX, NOT_ELIGIBLE_NEVER, NOT_HELPFUL, ONGOING, POD_PREFIX, TOO_LARGE
from scheduler.preemption.units import usable_rows
from scheduler.solver import solve
from scheduler.solver.plugins import DEFAULT_PROFILE
from tests.unit.groups.builders import NS, pg_dict
from tests.unit.preemption.kit import Cluster, budget, composite, group, names, nodes, pending, running
from tests.unit.solver.builders import node


def spread_gangs(count: int, size: int, mode: str | None, priority: int = 1) -> Cluster:
    """``count`` running ``size``-pod gangs, one pod of each per node, on ``size`` nodes filled by them."""
    c = Cluster(nodes=nodes(size, cpu=str(count)))
    for g in range(count):
        c.groups.append(group(f"low{g}", size, priority=priority, mode=mode))
        c.pods += [running(f"low{g}-{j}", f"n{j}", f"low{g}", started=f"2026-01-01T00:{g:02d}:00Z")
                   for j in range(size)]
    return c


def add_gang(c: Cluster, name: str, size: int, priority: int | None = 100, cpu: str = "1", **kw: object) -> None:
    c.groups.append(group(name, size, priority=priority, **kw))  # type: ignore[arg-type]
    c.pods += [pending(f"{name}-{i}", name, cpu=cpu) for i in range(size)]


def preemption(c: Cluster, root: str = "high") -> Preemption:
    _, decision = c.decide(root)
    assert isinstance(decision, Preemption), decision
    return decision


@pytest.mark.parametrize("mode", ["all", "single", None], ids=["disruption-all", "disruption-single", "default-single"])
def test_ten_spread_gangs_one_whole_gang_is_evicted_not_one_pod_of_each(mode: str | None) -> None:
    """volcano#4607: ten running 10-pod gangs spread one pod per node over ten full nodes; a 10-pod gang of
    higher priority needs ten slots. Exactly one job goes, whole — the youngest."""
    c = spread_gangs(10, 10, mode)
    add_gang(c, "high", 10)
    decision = preemption(c)
    assert names(decision.victims) == [f"low9-{j}" for j in range(10)]
    assert decision.plan is not None and len(decision.plan.placements) == 10
    assert decision.nominations == decision.plan.placements
    assert decision.units == (1 if mode == "all" else 10)


def test_one_pod_gang_evicts_exactly_one_pod_of_an_eleven_pod_basic_group() -> None:
    """volcano#5984: one running 11-pod basic group filling eleven nodes; a 1-pod high-priority gang → one victim."""
    c = Cluster(nodes=nodes(11, cpu="1"), groups=[group("basic11", None, priority=1)])
    c.pods += [running(f"b-{j}", f"n{j}", "basic11") for j in range(11)]
    add_gang(c, "high", 1)
    decision = preemption(c)
    assert len(decision.victims) == 1 and decision.units == 1
    found = "found a placement for podgroup, preempting 1 victims: 1 pod(s) of PodGroup ml/basic11 " \
            "(disruptionMode single)"
    assert decision.message == GROUP_PREFIX + found


@pytest.mark.parametrize("where", ["podgroup", "pod", "priority-class"])
def test_preemption_policy_never_waits(where: str) -> None:
    c = spread_gangs(1, 2, None)
    c.groups.append(group("high", 2, priority=100, policy="Never" if where == "podgroup" else None,
                          priority_class="no-preempt" if where == "priority-class" else None))
    c.classes.append(PriorityClass.model_validate({"metadata": {"name": "no-preempt"}, "value": 100,
                                                   "preemptionPolicy": "Never"}))
    c.pods += [pending(f"high-{i}", "high", cpu="1", policy="Never" if where == "pod" and i == 0 else None)
               for i in range(2)]
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("cpu. " + GROUP_PREFIX + NOT_ELIGIBLE_NEVER)  # kube appends it after a space


def test_group_policy_overrides_its_pods() -> None:
    """The PodGroup's preemptionPolicy wins over its pods' (gate PodGroupPreemptionPolicy semantics)."""
    c = spread_gangs(1, 2, None)
    c.groups.append(group("high", 2, priority=100, policy="PreemptLowerPriority"))
    c.pods += [pending(f"high-{i}", "high", policy="Never") for i in range(2)]
    assert isinstance(c.decide("high")[1], Preemption)


def test_composite_preemptor_makes_room_for_its_whole_tree() -> None:
    """A CompositePodGroup of two 2-pod gangs (minGroupCount 2) preempts for both children at once."""
    c = spread_gangs(2, 4, "all")
    c.composites.append(composite("train", 2, priority=100))
    for child in ("a", "b"):
        c.groups.append(group(child, 2, parent="train"))
        c.pods += [pending(f"{child}-{i}", child) for i in range(2)]
    decision = preemption(c, GroupKey("CompositePodGroup", NS, "train"))  # type: ignore[arg-type]
    assert names(decision.victims) == [f"low1-{j}" for j in range(4)]
    assert decision.plan is not None and decision.plan.satisfied >= {
        GroupKey("CompositePodGroup", NS, "train"), GroupKey("PodGroup", NS, "a"), GroupKey("PodGroup", NS, "b")}


def test_equal_priority_root_never_preempts() -> None:
    c = spread_gangs(2, 2, None, priority=100)
    add_gang(c, "high", 2, priority=100)
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message == ("gang high: 0/2 placeable (minCount 2); 0/2 nodes are available: 2 Insufficient cpu. "
                                "pod group preemption: No preemption victims found for incoming pod.")


@pytest.mark.parametrize(("priorities", "size", "evicted"), [
    pytest.param((1, 3), 2, "low0", id="lower-priority-unit-goes-first"),
    pytest.param((3, 1), 2, "low1", id="order-of-creation-does-not-matter"),
    pytest.param((50, 150), 2, "low0", id="a-unit-below-the-preemptor-goes"),
    pytest.param((50, 150), 3, None, id="a-unit-above-the-preemptor-never-goes"),
])
def test_victims_are_of_strictly_lower_priority_lowest_first(priorities: tuple[int, int], size: int,
                                                             evicted: str | None) -> None:
    c = Cluster(nodes=nodes(2, cpu="2"))
    for g, prio in enumerate(priorities):
        c.groups.append(group(f"low{g}", 2, priority=prio, mode="all"))
        c.pods += [running(f"low{g}-{j}", f"n{j}", f"low{g}") for j in range(2)]
    add_gang(c, "high", size, priority=100)
    _, decision = c.decide("high")
    if evicted is None:
        assert isinstance(decision, Unschedulable)
        assert decision.message.endswith(f"{GROUP_PREFIX}{NOT_HELPFUL} (no fit even with both lower-priority "
                                         "pods evicted: ml/low0-0, ml/low0-1; 2 pod(s) of its priority or higher "
                                         "hold room on the nodes it may use and are not preempted)")
        return
    assert isinstance(decision, Preemption)
    assert {p.group_name for p in decision.victims} == {evicted}
    assert all(p.metadata.name.startswith(evicted) for p in decision.victims)
    assert decision.message.endswith("preempting 2 victims: 1 group(s) evicted whole (disruptionMode all)")


def test_nothing_is_evicted_in_vain() -> None:
    """Every lower-priority pod gone still leaves no room (a 3-cpu pod on 2-cpu nodes): nothing is evicted, and the
    reason says no node is large enough."""
    c = spread_gangs(2, 2, None)
    add_gang(c, "high", 1, cpu="3")
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith(f"{GROUP_PREFIX}{NOT_HELPFUL} ({TOO_LARGE})")


def test_nothing_is_evicted_when_the_room_would_come_too_short() -> None:
    """Nodes large enough when emptied, but the lower-priority pods hold too little of them: not helpful, counted."""
    c = Cluster(nodes=nodes(2, cpu="2"))
    c.pods += [running(f"low-{j}", f"n{j}", priority=1) for j in range(2)]
    c.pods += [running(f"top-{j}", f"n{j}", priority=1000) for j in range(2)]
    add_gang(c, "high", 2, cpu="2")
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert f"{NOT_HELPFUL} (no fit even with both" in decision.message


def test_a_grouped_pod_counts_at_its_groups_priority_not_its_own() -> None:
    """The running pods say nothing (priority 0) but their PodGroup has 500: a 100 root cannot evict them."""
    c = Cluster(nodes=nodes(1, cpu="1"), groups=[group("important", 1, priority=500)])
    c.pods.append(running("imp-0", "n0", "important", priority=0))
    add_gang(c, "high", 1, priority=100)
    assert isinstance(c.decide("high")[1], Unschedulable)


@pytest.mark.parametrize(("class_value", "member_priority", "preempts"), [
    pytest.param(10, None, True, id="priority-class-of-the-group"),
    pytest.param(None, 10, True, id="highest-member-priority"),
    pytest.param(None, 200, False, id="highest-member-priority-above-the-root"),
])
def test_group_priority_falls_back_to_class_then_members(class_value: int | None, member_priority: int | None,
                                                         preempts: bool) -> None:
    c = Cluster(nodes=nodes(1, cpu="2"))
    if class_value is not None:
        c.classes.append(PriorityClass.model_validate({"metadata": {"name": "batch"}, "value": class_value}))
    c.groups.append(group("victim", 1, priority_class="batch" if class_value is not None else None))
    c.pods += [running("v-0", "n0", "victim", priority=member_priority),
               running("v-1", "n0", "victim", priority=None)]
    add_gang(c, "high", 1, priority=100)
    assert isinstance(c.decide("high")[1], Preemption) is preempts


def test_a_pdb_protected_unit_is_kept_when_another_makes_room() -> None:
    c = Cluster(nodes=nodes(2, cpu="1"), budgets=[budget("keep-a", {"matchLabels": {"app": "a"}}, allowed=0)])
    c.pods += [running("a", "n0", labels={"app": "a"}, priority=1, started="2026-01-01T00:00:00Z"),
               running("b", "n1", labels={"app": "b"}, priority=1, started="2026-01-01T00:00:00Z")]
    add_gang(c, "high", 1)
    decision = preemption(c)
    assert names(decision.victims) == ["b"] and decision.pdb_violations == 0


def test_a_pdb_never_blocks_preemption_it_is_only_counted() -> None:
    c = Cluster(nodes=nodes(1, cpu="1"), budgets=[budget("keep", {}, allowed=0)])
    c.pods.append(running("a", "n0", priority=1))
    add_gang(c, "high", 1)
    decision = preemption(c)
    assert names(decision.victims) == ["a"] and decision.pdb_violations == 1
    assert decision.message.endswith("victims: 1 pod(s) without a group, 1 over a PodDisruptionBudget")


def test_the_youngest_of_equal_victims_goes() -> None:
    c = Cluster(nodes=nodes(3, cpu="1"))
    c.pods += [running(f"p{i}", f"n{i}", priority=1, started=f"2026-01-01T0{i}:00:00Z") for i in range(3)]
    add_gang(c, "high", 1)
    assert names(preemption(c).victims) == ["p2"]


def test_spare_members_of_a_single_mode_gang_go_before_a_gang_drops_below_min_count() -> None:
    """Gang ``tight`` runs exactly minCount; gang ``loose`` runs 4 with minCount 2. Two slots are needed: the
    two youngest members of ``loose`` go, although ``tight`` is the younger gang."""
    c = Cluster(nodes=nodes(6, cpu="1"))
    c.groups += [group("loose", 2, priority=1), group("tight", 2, priority=1)]
    c.pods += [running(f"loose-{j}", f"n{j}", "loose", started=f"2026-01-01T00:0{j}:00Z") for j in range(4)]
    c.pods += [running(f"tight-{j}", f"n{4 + j}", "tight", started="2026-01-01T05:00:00Z") for j in range(2)]
    add_gang(c, "high", 2)
    assert names(preemption(c).victims) == ["loose-2", "loose-3"]


def test_an_all_unit_is_evicted_whole_even_where_the_preemptor_cannot_go() -> None:
    """A disruptionMode-all gang with a pod on a tainted node the preemptor does not tolerate: that pod goes
    too (all or nothing), although only the other node's room is used."""
    c = Cluster(nodes=nodes(1, cpu="1") + nodes(2, cpu="1", taints=["dedicated=x:NoSchedule"])[1:])
    c.groups.append(group("low", 2, priority=1, mode="all"))
    c.pods += [running("low-0", "n0", "low"), running("low-1", "n1", "low")]
    add_gang(c, "high", 1)
    assert names(preemption(c).victims) == ["low-0", "low-1"]


def test_all_mode_on_a_composite_makes_its_whole_tree_one_unit() -> None:
    c = Cluster(nodes=nodes(2, cpu="1"), composites=[composite("job", 2, priority=1, mode="all")])
    for child, where in (("x", "n0"), ("y", "n1")):
        c.groups.append(group(child, 1, parent="job"))
        c.pods.append(running(f"{child}-0", where, child))
    add_gang(c, "high", 1)
    decision = preemption(c)
    assert names(decision.victims) == ["x-0", "y-0"] and decision.units == 1


def test_pods_of_other_schedulers_are_victims_too() -> None:
    c = Cluster(nodes=nodes(1, cpu="1"))
    c.pods.append(running("web", "n0", scheduler="default-scheduler", priority=0))
    add_gang(c, "high", 1)
    assert names(preemption(c).victims) == ["web"]


def test_terminating_pods_are_not_victims_but_still_hold_room() -> None:
    c = Cluster(nodes=nodes(1, cpu="1"))
    c.pods.append(running("going", "n0", priority=0, terminating=True))
    add_gang(c, "high", 1)
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)  # nothing to evict: the reason is the search's own


def test_lone_pod_preemptor_uses_the_pod_prefix() -> None:
    c = Cluster(nodes=nodes(1, cpu="1"))
    c.pods += [running("low", "n0", priority=0), pending("vip", priority=10)]
    decision = preemption(c, GroupKey("Pod", NS, "vip"))  # type: ignore[arg-type]
    assert names(decision.victims) == ["low"] and decision.message.startswith(POD_PREFIX)


def test_the_plan_fits_once_the_victims_are_gone() -> None:
    c = spread_gangs(4, 4, None)
    add_gang(c, "high", 6)
    tree, decision = c.decide("high")
    assert isinstance(decision, Preemption)
    snapshot = c.cache().snapshot().without(decision.victims)
    assert isinstance(solve(tree, snapshot), Plan)
    assert len(decision.victims) == 6  # pods of one gang are single-mode units: exactly the room needed


@pytest.mark.parametrize("why", ["awaiting", "terminating-victim-on-nominated-node"])
def test_ongoing_preemption_evicts_nothing_new_and_keeps_nominations(why: str) -> None:
    c = Cluster(nodes=nodes(2, cpu="1"))
    victim_condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION_BY_SCHEDULER}
    c.pods += [running("old", "n0", priority=0, terminating=why != "awaiting", conditions=[victim_condition]),
               running("other", "n1", priority=0)]
    c.groups.append(group("high", 1, priority=100))
    c.pods.append(pending("high-0", "high", nominated="n0"))
    if why == "awaiting":
        c.awaiting[GroupKey("PodGroup", NS, "high")] = (f"{NS}/old",)
    decision = preemption(c)
    assert decision.waiting and decision.victims == () and decision.plan is None
    assert decision.awaited == (f"{NS}/old",)  # what the root waits for, either way
    assert [(p.metadata.name, n) for p, n in decision.nominations] == [("high-0", "n0")]
    assert decision.message == GROUP_PREFIX + ONGOING


def test_a_terminating_pod_of_higher_priority_on_the_nominated_node_does_not_stop_a_new_preemption() -> None:
    c = Cluster(nodes=nodes(2, cpu="1"))
    victim_condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION_BY_SCHEDULER}
    c.pods += [running("vip", "n0", priority=1000, terminating=True, conditions=[victim_condition]),
               running("low", "n1", priority=0)]
    c.groups.append(group("high", 1, priority=100))
    c.pods.append(pending("high-0", "high", nominated="n0"))
    decision = preemption(c)
    assert names(decision.victims) == ["low"]


def test_own_running_members_are_never_victims() -> None:
    """An elastic gang running 2 (minCount 2) with a third member pending: it may evict lower pods for the
    third, never its own members."""
    c = Cluster(nodes=nodes(3, cpu="1"), groups=[group("elastic", 2, priority=100)])
    c.pods += [running("elastic-0", "n0", "elastic"), running("elastic-1", "n1", "elastic"),
               pending("elastic-2", "elastic"), running("low", "n2", priority=0)]
    assert names(preemption(c, "elastic").victims) == ["low"]


def test_extra_members_of_a_satisfied_gang_do_not_preempt_equal_priority() -> None:
    c = Cluster(nodes=nodes(3, cpu="1"), groups=[group("elastic", 2, priority=5), group("peer", 1, priority=5)])
    c.pods += [running("elastic-0", "n0", "elastic"), running("elastic-1", "n1", "elastic"),
               pending("elastic-2", "elastic"), running("peer-0", "n2", "peer")]
    assert isinstance(c.decide("elastic")[1], Unschedulable)


def test_a_reservation_is_the_best_plan_once_equal_or_lower_pods_finish_and_evicts_nothing() -> None:
    """The starvation guard's plan: where a root fits once the fewest pods of priority ≤ its own finish —
    here the node whose one equal-priority pod is the youngest (an older one, or a higher one, stays)."""
    from scheduler.cache.group_view import CacheGroupView
    from scheduler.framework import SolverConfig
    from scheduler.preemption import DefaultPreemption

    c = Cluster(nodes=nodes(3, cpu="1"))
    c.pods += [running("old", "n0", priority=5, started="2026-01-01T00:00:00Z"),
               running("young", "n1", priority=5, started="2026-01-02T00:00:00Z"),
               running("vip", "n2", priority=9)]
    add_gang(c, "big", 1, priority=5)
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "big"))
    assert tree is not None
    plan = DefaultPreemption(CacheGroupView(cache)).reservation(tree, cache.snapshot(), SolverConfig())
    assert plan is not None and [(p.metadata.name, n) for p, n in plan.placements] == [("big-0", "n1")]
    _, decision = c.decide("big")
    assert isinstance(decision, Unschedulable)  # equal priority: no preemption for the same root


def test_on_a_large_cluster_the_lowest_priority_nodes_are_read_first_and_the_window_grows_when_short() -> None:
    """Forty full nodes, more than the first window holds: the lone pods of priority 1 on the last ten nodes go
    before the priority-5 pods elsewhere (the window is ordered by each node's lowest priority, not by name);
    a root that needs more room than the first window frees still gets it (the window grows)."""
    c = Cluster(nodes=nodes(40, cpu="2"))
    c.pods += [running(f"p{i}-{k}", f"n{i}", priority=1 if i >= 30 else 5) for i in range(40) for k in range(2)]
    add_gang(c, "high", 2, cpu="2")
    decision = preemption(c)
    assert {p.spec.node_name for p in decision.victims} <= {f"n{i}" for i in range(30, 40)}
    assert len(decision.victims) == 4
    big = Cluster(nodes=c.nodes, pods=[p for p in c.pods if not p.metadata.name.startswith("high")])
    add_gang(big, "high", 25, cpu="2")  # 25 nodes: all ten of priority 1 and fifteen of priority 5
    decision = preemption(big)
    assert len(decision.victims) == 50
    assert sum(1 for p in decision.victims if p.spec.priority == 1) == 20


def test_not_helpful_is_concluded_only_with_every_node_read() -> None:
    """A 41-node gang on forty nodes: every window falls short, and the message counts every candidate."""
    c = Cluster(nodes=nodes(40, cpu="1"))
    c.pods += [running(f"p{i}", f"n{i}", priority=1) for i in range(40)]
    add_gang(c, "high", 41)
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith(f"{NOT_HELPFUL} (no fit even with all 40 lower-priority pods evicted: ml/p0, "
                                     "ml/p1, ml/p10 and 37 more)")  # three named, in the candidates' order


def test_members_of_several_single_mode_groups_are_counted_by_group() -> None:
    c = Cluster(nodes=nodes(1, cpu="2"), groups=[group("low-a", 1), group("low-b", 1)])
    c.pods += [running("a-0", "n0", "low-a"), running("b-0", "n0", "low-b")]
    add_gang(c, "high", 2)
    decision = preemption(c)
    assert names(decision.victims) == ["a-0", "b-0"]
    assert decision.message.endswith("preempting 2 victims: 2 pod(s) of 2 groups (disruptionMode single)")


def test_without_a_device_view_nodes_that_do_not_offer_a_requested_extended_resource_are_no_candidates() -> None:
    """A GPU gang; the only GPU node full of higher-priority pods, CPU nodes full of lower-priority ones. With no DRA
    object in the cluster no DeviceClass can serve ``nvidia.com/gpu`` on the CPU nodes: evicting there cannot help,
    so nothing is evicted and the reason does not name the CPU nodes' pods."""
    c = Cluster(nodes=[*nodes(2, cpu="2"), node("gpu-0", cpu="8", gpu=2)])
    c.pods += [running(f"cpu-{i}", f"n{i}", cpu="2", priority=1) for i in range(2)]
    c.pods += [running(f"train-{i}", "gpu-0", cpu="1", gpu=1, priority=1000) for i in range(2)]
    c.groups.append(group("high", 2, priority=100))
    c.pods += [pending(f"high-{i}", "high", gpu=1) for i in range(2)]
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert "cpu-0" not in decision.message and "cpu-1" not in decision.message
    assert decision.message.endswith("pod group preemption: No preemption victims found for incoming pod.")


def _elsewhere(p: Pod, namespace: str = "other") -> Pod:
    return p.model_copy(update={"metadata": p.metadata.model_copy(update={"namespace": namespace})})


def test_run_names_no_pod_of_another_namespace_in_the_preemptors_reasons() -> None:
    """The reasons are written on the preemptor's pods and groups, read by whoever may read its namespace: pods and
    groups of other namespaces are counted, not named (kube-scheduler names no victim to the preemptor at all)."""
    c = Cluster(nodes=nodes(2, cpu="2"))
    c.pods += [running("top", "n0", cpu="2", priority=1000),
               running("mine", "n1", cpu="1"), _elsewhere(running("theirs", "n1", cpu="1"))]
    add_gang(c, "high", 2, cpu="2")
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("no fit even with both lower-priority pods evicted: ml/mine, 1 in other "
                                     "namespaces; 1 pod(s) of its priority or higher hold room on the nodes it may use "
                                     "and are not preempted)")
    c = Cluster(nodes=nodes(1, cpu="2"), groups=[group("low", 1)])
    c.pods.append(_elsewhere(running("low-0", "n0", "low", cpu="2")))
    c.groups = [_elsewhere_group(g) for g in c.groups]
    add_gang(c, "high", 1, cpu="2")
    decision = preemption(c)
    assert "other/" not in decision.message and "low" not in decision.message
    assert decision.message.endswith("1 pod(s) of a group in another namespace (disruptionMode single)")


def _elsewhere_group(g: PodGroup) -> PodGroup:
    return g.model_copy(update={"metadata": g.metadata.model_copy(update={"namespace": "other"})})


def gpu_gang_beside_cpu_nodes(**kw: Any) -> Cluster:
    """The cluster of the test above: CPU nodes full of lower-priority pods, the GPU node of higher-priority ones."""
    c = Cluster(nodes=[*nodes(2, cpu="2"), node("gpu-0", cpu="8", gpu=2)], **kw)
    c.pods += [running(f"cpu-{i}", f"n{i}", cpu="2", priority=1) for i in range(2)]
    c.pods += [running(f"train-{i}", "gpu-0", cpu="1", gpu=1, priority=1000) for i in range(2)]
    c.groups.append(group("high", 2, priority=100))
    c.pods += [pending(f"high-{i}", "high", gpu=1) for i in range(2)]
    return c


def test_with_a_device_view_but_no_device_class_serving_the_resource_nodes_without_it_are_no_candidates() -> None:
    """``run`` always has a device view (the DRA API served): with no DeviceClass serving ``nvidia.com/gpu`` (here no
    DRA object at all), DRA cannot serve it on the CPU nodes either, and their pods are no candidates."""
    _, decision = gpu_gang_beside_cpu_nodes(dra=True).decide("high")
    assert isinstance(decision, Unschedulable)
    assert "cpu-0" not in decision.message and "cpu-1" not in decision.message
    assert decision.message.endswith("pod group preemption: No preemption victims found for incoming pod.")


def test_a_device_class_serving_the_resource_keeps_nodes_without_it_usable() -> None:
    """A DeviceClass with ``extendedResourceName: nvidia.com/gpu`` may serve the gang on the CPU nodes (KEP-5004):
    they stay usable for preemption, as the search decides node by node."""
    gpus = DeviceClass.model_validate({"metadata": {"name": "gpu.example.com"}, "spec": {
        "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
        "extendedResourceName": "nvidia.com/gpu"}})
    c = gpu_gang_beside_cpu_nodes(dra=True, device_classes=[gpus])
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    snapshot = cache.snapshot()
    rows = usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check)
    assert sorted(snapshot.table.nodes[r].name for r in np.flatnonzero(rows)) == ["gpu-0", "n0", "n1"]


def test_a_verdict_of_not_helpful_counts_the_pods_of_equal_or_higher_priority_that_hold_the_room() -> None:
    """Evicting the one lower-priority pod frees 1 cpu of the 3 the gang needs; the pod of the preemptor's own priority
    holds the rest and is never a victim: the reason says it is there."""
    c = Cluster(nodes=nodes(1, cpu="3"))
    c.pods += [running("low", "n0", cpu="1", priority=1), running("peer", "n0", cpu="2", priority=100)]
    add_gang(c, "high", 3)
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("(no fit even with the one lower-priority pod evicted: ml/low; 1 pod(s) of its "
                                     "priority or higher hold room on the nodes it may use and are not preempted)")


def test_a_verdict_of_not_helpful_names_no_staying_pods_when_the_nodes_are_too_small_even_emptied() -> None:
    """Five 1-cpu members on two 2-cpu nodes: the pod that stays is not what is in the way."""
    c = Cluster(nodes=nodes(2, cpu="2"))
    c.pods += [running("low", "n0", cpu="1", priority=1), running("peer", "n1", cpu="1", priority=100)]
    add_gang(c, "high", 5)
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("(no fit even with the one lower-priority pod evicted: ml/low)")


def test_a_verdict_of_not_helpful_names_no_staying_pods_when_no_domain_of_its_topology_would_hold_it_emptied() -> None:
    """Two zones of 8 cpu; the gang needs 12 in one zone: even emptied no zone holds it, whatever stays there."""
    zone = "topology.kubernetes.io/zone"
    c = Cluster(nodes=[node(f"{z}{i}", cpu="4", memory="64Gi", labels={zone: z}) for z in "ab" for i in range(2)])
    c.pods += [running("low", "a0", cpu="4", priority=1), running("peer", "b0", cpu="4", priority=100)]
    c.groups.append(PodGroup.model_validate(pg_dict("high", 3, topology=zone, priority=100)))
    c.pods += [pending(f"high-{i}", "high", cpu="4") for i in range(3)]
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("(no fit even with the one lower-priority pod evicted: ml/low)")


def test_a_verdict_of_not_helpful_counts_the_pods_holding_room_in_the_domain_that_would_hold_the_gang() -> None:
    """Zone a (12 cpu) would hold the 12-cpu gang emptied; a pod of the gang's priority holds 4 of it."""
    zone = "topology.kubernetes.io/zone"
    c = Cluster(nodes=[node(f"a{i}", cpu="4", memory="64Gi", labels={zone: "a"}) for i in range(3)]
                + [node("b0", cpu="4", memory="64Gi", labels={zone: "b"})])
    c.pods += [running("low", "a0", cpu="4", priority=1), running("peer", "a1", cpu="4", priority=100)]
    c.groups.append(PodGroup.model_validate(pg_dict("high", 3, topology=zone, priority=100)))
    c.pods += [pending(f"high-{i}", "high", cpu="4") for i in range(3)]
    _, decision = c.decide("high")
    assert isinstance(decision, Unschedulable)
    assert decision.message.endswith("; 1 pod(s) of its priority or higher hold room on the nodes it may use and are "
                                     "not preempted)")


@pytest.mark.parametrize("min_count", [4, 3])
def test_a_member_no_node_could_hold_even_emptied_is_named_when_the_gang_needs_it(min_count: int) -> None:
    """One member of a 4-pod gang asks for 100 GPUs of nodes that have 8. With minCount 4 no eviction helps, and the
    reason names that member, not the pods that hold the room; with minCount 3 the gang does without it, and the
    lower-priority pod holding the GPUs is evicted for the other three."""
    c = Cluster(nodes=nodes(1, cpu="8", gpu=8))
    c.pods += [running("low", "n0", cpu="1", gpu=6, priority=1), running("peer", "n0", cpu="1", gpu=2, priority=100)]
    c.groups.append(group("high", min_count, priority=100))
    c.pods += [pending("high-0", "high", gpu=100)] + [pending(f"high-{i}", "high", gpu=2) for i in range(1, 4)]
    _, decision = c.decide("high")
    if min_count == 4:
        assert isinstance(decision, Unschedulable)
        assert decision.message.endswith(f"{GROUP_PREFIX}{NOT_HELPFUL} (ml/high-0 fits no node it may use even "
                                         "emptied, and the group cannot be satisfied without it)")
    else:
        assert isinstance(decision, Preemption) and names(decision.victims) == ["low"]
