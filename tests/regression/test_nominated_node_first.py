"""After preemption, the next cycle tries the preemptor's nominated nodes first.

Found by tests/property/test_preemption.py (a new Hypothesis example): preemption proved that the gang
fits once the victims are gone with one plan — the 3-cpu pod on n1, the two 2-cpu pods on n0 — and
nominated its pods for it. But the search, solving again on the cluster without the victims, places the
largest pod first on the lowest-index node that takes it (n0: 4 cpu free), and then the two 2-cpu pods
no longer fit. The next cycle still bound the gang, but only by a detour: the failed search ran
preemption again, whose what-ifs found the plan with no victim needed (outcome ``fits``). kube-scheduler
evaluates a pod's nominated node before any other; so does :func:`schedule_one` now
(``solver/plugins/nominated_node.py``): the next cycle binds the plan preemption made, in one search.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.cycle import schedule_one
from scheduler.framework import Plan, Preemption, SolverConfig, Unschedulable
from scheduler.model import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import simulate
from scheduler.solver import solve
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, group, pending, running
from tests.unit.solver.builders import node


def cluster() -> Cluster:
    """n0 (6 cpu) and n1 (4 cpu) full of low-priority pods; a 3-pod gang (2, 2 and 3 cpu) of priority 1."""
    c = Cluster(nodes=[node("n0", cpu="6", memory="64Gi"), node("n1", cpu="4", memory="64Gi")])
    c.groups += [group("run0", 1, priority=0, mode="all"), group("run1", 1, priority=0, mode="single"),
                 group("run2", 1, priority=1, mode="all"), group("high", 3, priority=1)]
    c.pods += [running("run0-0", "n0", "run0", cpu="2"), running("run0-1", "n0", "run0", cpu="2"),
               running("run1-0", "n0", "run1", cpu="2"), running("run1-1", "n1", "run1", cpu="2"),
               running("run2-0", "n1", "run2", cpu="1"), running("lone0", "n1", priority=0, scheduler="other")]
    c.pods += [pending("high-0", "high", cpu="2"), pending("high-1", "high", cpu="2"),
               pending("high-2", "high", cpu="3")]
    return c


def nominate(pod: Pod, node_name: str | None) -> Pod:
    if node_name is None:
        return pod
    return pod.model_copy(update={"status": pod.status.model_copy(update={"nominated_node_name": node_name})})


def test_the_preemptor_binds_on_its_nominated_nodes_once_the_victims_are_gone() -> None:
    c = cluster()
    _, decision = c.decide("high")
    assert isinstance(decision, Preemption)
    assert sorted(p.metadata.name for p in decision.victims) == ["lone0", "run0-0", "run0-1", "run1-1"]
    nominations = {p.key: n for p, n in decision.nominations}
    assert {k.split("/")[1]: n for k, n in nominations.items()} == {"high-0": "n0", "high-1": "n0", "high-2": "n1"}
    gone = {p.key for p in decision.victims}

    after = replace(c, pods=[nominate(p, nominations.get(p.key)) for p in c.pods if p.key not in gone])
    cache = after.cache()
    tree = cache.tree(decision.root)
    assert tree is not None
    snapshot = cache.snapshot()

    assert isinstance(solve(tree, snapshot), Unschedulable)  # the search alone misses it (why this test exists)
    plan = schedule_one(tree, snapshot, SolverConfig())
    assert isinstance(plan, Plan)
    assert {p.key: n for p, n in plan.placements} == nominations


def test_a_nomination_to_a_node_that_is_gone_falls_back_to_the_search() -> None:
    c = cluster()
    c.pods = [p for p in c.pods if not p.spec.node_name]  # empty nodes: room for the gang without preemption
    c.pods = [nominate(p, "n9") if p.group_name == "high" else p for p in c.pods]
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    plan = schedule_one(tree, cache.snapshot(), SolverConfig())
    assert isinstance(plan, Plan) and len(plan.placements) == 3


def test_simulate_evicts_once_and_places_the_gang_where_preemption_planned() -> None:
    """``simulate`` nominates the preemptor's pods as the live preemptor does, so its second attempt binds the
    nominated plan (before, it got there through a second, victimless preemption round)."""
    c = cluster()
    sim = simulate(Objects(nodes=c.nodes, pods=c.pods, podgroups=c.groups), "gang-scheduler", SolverConfig())
    assert [sorted(p.metadata.name for p, _ in o.victims) for o in sim.preemptions] == [
        ["lone0", "run0-0", "run0-1", "run1-1"]]
    (high,) = [g for g in sim.groups if g.key.name == "high"]
    assert high.status == "Scheduled"
    assert sorted(high.placements.items()) == [
        ("high-0", "n0"), ("high-1", "n0"), ("high-2", "n1")]


def test_a_stale_nomination_does_not_leave_out_a_pod_that_fits_elsewhere() -> None:
    """Found in review: a gang of minCount 1 with one pod nominated to a node that is gone. The pinned attempt
    satisfied the gang with the other two pods and left that one out; the ordinary search places all three,
    so its plan wins (kube falls back to the full search per pod whose nominated node does not fit)."""
    c = Cluster(nodes=[node("n0", cpu="4", memory="64Gi"), node("n1", cpu="4", memory="64Gi")])
    c.groups.append(group("g", 1, priority=1))
    c.pods += [pending("g-0", "g", cpu="2", nominated="n9"), pending("g-1", "g", cpu="2"),
               pending("g-2", "g", cpu="2")]
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "g"))
    assert tree is not None
    plan = schedule_one(tree, cache.snapshot(), SolverConfig())
    assert isinstance(plan, Plan)
    assert sorted(p.metadata.name for p, _ in plan.placements) == ["g-0", "g-1", "g-2"]


def test_nominations_to_a_node_too_small_for_all_fall_back_for_every_pod() -> None:
    """Three 2-cpu pods of a minCount-2 gang all nominated to n0 (4 cpu); n1 has room for all three."""
    c = Cluster(nodes=[node("n0", cpu="4", memory="64Gi"), node("n1", cpu="8", memory="64Gi")])
    c.groups.append(group("g", 2, priority=1))
    c.pods += [pending(f"g-{i}", "g", cpu="2", nominated="n0") for i in range(3)]
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "g"))
    assert tree is not None
    plan = schedule_one(tree, cache.snapshot(), SolverConfig())
    assert isinstance(plan, Plan) and len(plan.placements) == 3
