"""Preemption's rules as properties over random clusters of running groups and one preemptor.

1. Victims are always of strictly lower priority than the preemptor (a grouped pod at its group's),
   and never of its own tree.
2. A ``disruptionMode: all`` unit is evicted whole or not at all.
3. The victim set is minimal: putting back any one victim unit leaves the tree unplaceable — or, when the
   victims make room for every pending member, leaves some member out. A root whose plan places every
   pending member without victims never preempts; one whose plan leaves members above its minimum out
   preempts only for a plan that places them all, else keeps (at least) its plan.
4. No preemption when it cannot help: with every candidate gone the tree must fit, and it does fit
   once the victims are gone — decided as the next cycle decides it, with the preemptor's pods
   nominated and no second preemption (the search alone is heuristic and may miss the plan
   preemption proved; a Hypothesis example found one: tests/regression/test_nominated_node_first.py).
5. An equal-priority root never preempts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import schedule_one
from scheduler.framework import Plan, Preemption, SolverConfig, Unschedulable
from scheduler.model import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.preemption.units import candidates, usable_rows
from scheduler.solver import solve
from scheduler.solver.plugins import DEFAULT_PROFILE
from scheduler.solver.search import placements_hold
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, group, pending, running
from tests.unit.solver.builders import node

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Case:
    cluster: Cluster
    root: GroupKey


@st.composite
def cases(draw: st.DrawFn, equal: bool = False) -> Case:
    """Nodes of 2–6 cpu filled (partly) by running groups and lone pods of priority 0–3, and one pending gang."""
    n = draw(st.integers(1, 5))
    free = {f"n{i}": draw(st.sampled_from([2, 4, 6])) for i in range(n)}
    c = Cluster(nodes=[node(name, cpu=str(cap), memory="64Gi") for name, cap in free.items()])
    preemptor_priority = draw(st.integers(0, 4))
    for g in range(draw(st.integers(0, 4))):
        size = draw(st.integers(1, 4))
        mode = draw(st.sampled_from(["all", "single", None]))
        prio = preemptor_priority if equal else draw(st.integers(0, 3))
        c.groups.append(group(f"run{g}", draw(st.integers(1, size)), priority=prio, mode=mode))
        for j in range(size):
            where = draw(st.sampled_from(sorted(free)))
            if free[where] < 1:
                continue
            cpu = draw(st.integers(1, min(2, free[where])))
            free[where] -= cpu
            c.pods.append(running(f"run{g}-{j}", where, f"run{g}", cpu=str(cpu),
                                  started=f"2026-01-01T00:{draw(st.integers(0, 59)):02d}:00Z"))
    for k in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(sorted(free)))
        if free[where] >= 1:
            free[where] -= 1
            prio = preemptor_priority if equal else draw(st.integers(0, 3))
            c.pods.append(running(f"lone{k}", where, priority=prio, scheduler="default-scheduler"))
    size = draw(st.integers(1, 4))
    c.groups.append(group("high", draw(st.integers(1, size)), priority=preemptor_priority))
    c.pods += [pending(f"high-{i}", "high", cpu=str(draw(st.integers(1, 3)))) for i in range(size)]
    for where, room in free.items():  # fill the rest so that the preemptor usually has to preempt
        if room and draw(st.integers(0, 3)):
            prio = preemptor_priority if equal else draw(st.integers(0, 3))
            c.pods.append(running(f"filler-{where}", where, cpu=str(room), priority=prio))
    return Case(c, GroupKey("PodGroup", NS, "high"))


@SETTINGS
@given(cases())
def test_victims_are_lower_priority_whole_units_minimal_and_helpful(case: Case) -> None:
    tree, decision = case.cluster.decide(case.root)
    cache = case.cluster.cache()
    snapshot = cache.snapshot()
    view = CacheGroupView(cache)
    units = candidates(snapshot, tree, view, usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check))
    everything_gone = snapshot.without([p for u in units for p in u.pods])
    fits_when_all_gone = isinstance(solve(tree, everything_gone), Plan)
    pending = sum(len(leaf.pending) for leaf in tree.root.leaves())
    found = solve(tree, snapshot)
    if isinstance(found, Plan) and len(found.placements) == pending:
        assert not isinstance(decision, Preemption)
        return
    if isinstance(found, Plan) and isinstance(decision, Preemption):  # for the members above the minimum
        assert decision.plan is not None and len(decision.plan.placements) == pending
    if isinstance(found, Plan) and not isinstance(decision, Preemption):
        assert isinstance(decision, Plan) and len(decision.placements) >= len(found.placements)
        return
    if isinstance(decision, Plan):  # the what-ifs found a fit the (heuristic) search missed: bound, nothing evicted
        assert placements_hold(tree, snapshot, decision)
        return
    if not isinstance(decision, Preemption):
        assert not units or not fits_when_all_gone  # nothing evicted in vain, and never when it would help
        return
    # evicting every candidate helps: the search finds a fit then, or — the search is a heuristic — the plan the
    # preemption made holds there
    assert fits_when_all_gone or (decision.plan is not None and placements_hold(tree, everything_gone, decision.plan))
    own = {p.key for p in tree.pods()}
    victims = {p.key: p for p in decision.victims}
    for pod in decision.victims:
        assert pod.key not in own
        assert view.membership(pod).priority < tree.priority
    for unit in units:  # whole units or nothing
        inside = {p.key in victims for p in unit.pods}
        assert len(inside) == 1, f"unit {unit.key} split"
    nominations = {p.key: n for p, n in decision.nominations}
    after = replace(case.cluster, pods=[nominate(p, nominations.get(p.key)) for p in case.cluster.pods
                                        if p.key not in victims])
    next_cache = after.cache()
    next_tree = next_cache.tree(case.root)
    assert next_tree is not None
    assert isinstance(schedule_one(next_tree, next_cache.snapshot(), SolverConfig()), Plan)
    chosen = [u for u in units if u.pods[0].key in victims]
    assert sum(len(u.pods) for u in chosen) == len(victims)
    assert decision.plan is not None
    every = len(decision.plan.placements) == pending  # then the victims are the fewest that place every member

    def fits(result: Plan | Unschedulable) -> bool:
        return isinstance(result, Plan) and (not every or len(result.placements) == pending)

    for unit in chosen:  # minimal: no victim unit can be put back while the tree (every member) still fits
        kept = {p.key for p in unit.pods}
        rest = [p for p in decision.victims if p.key not in kept]
        assert not fits(solve(tree, snapshot.without(rest))), f"{unit.key} could be reprieved"


def nominate(pod: Pod, node: str | None) -> Pod:
    """``pod`` with ``status.nominatedNodeName`` ``node`` (as the live preemptor writes it), or as it is."""
    if node is None:
        return pod
    return pod.model_copy(update={"status": pod.status.model_copy(update={"nominated_node_name": node})})


@SETTINGS
@given(cases(equal=True))
def test_an_equal_priority_root_never_preempts(case: Case) -> None:
    _, decision = case.cluster.decide(case.root)
    assert not isinstance(decision, Preemption)
