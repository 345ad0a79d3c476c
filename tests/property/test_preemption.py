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
6. The consolidation after the reprieve (:func:`~scheduler.preemption.selection.select`, step 3) never breaks more
   gangs than the greedy reprieve alone, never evicts more pods, exceeds budgets more often or reaches a higher
   priority; its plan still holds once its victims are gone, and no victim unit of it can be put back alone.
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
from scheduler.preemption.selection import broken_gangs, select
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
    """Nodes of 2–6 cpu filled (partly) by running groups and lone pods of priority 0–3, and one pending gang. In half
    the cases nodes also have 0–2 GPUs, which only group members and the gang's pods may request: room the lone pods
    and fillers never hold."""
    n = draw(st.integers(1, 5))
    free = {f"n{i}": draw(st.sampled_from([2, 4, 6])) for i in range(n)}
    gpus = draw(st.booleans())
    free_gpu = {name: draw(st.integers(0, 2)) if gpus else 0 for name in free}
    c = Cluster(nodes=[node(name, cpu=str(cap), memory="64Gi", gpu=free_gpu[name]) for name, cap in free.items()])
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
            gpu = draw(st.integers(0, min(1, free_gpu[where])))
            free_gpu[where] -= gpu
            c.pods.append(running(f"run{g}-{j}", where, f"run{g}", cpu=str(cpu), gpu=gpu,
                                  started=f"2026-01-01T00:{draw(st.integers(0, 59)):02d}:00Z"))
    for k in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(sorted(free)))
        if free[where] >= 1:
            free[where] -= 1
            prio = preemptor_priority if equal else draw(st.integers(0, 3))
            c.pods.append(running(f"lone{k}", where, priority=prio, scheduler="default-scheduler"))
    size = draw(st.integers(1, 4))
    c.groups.append(group("high", draw(st.integers(1, size)), priority=preemptor_priority))
    gpu = draw(st.integers(0, int(gpus)))  # every pod of the gang alike, as a training job's
    c.pods += [pending(f"high-{i}", "high", cpu=str(draw(st.integers(1, 3))), gpu=gpu) for i in range(size)]
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


@st.composite
def gang_cases(draw: st.DrawFn) -> Case:
    """2–5 nodes of 4 cpu filled by single-mode gangs (mostly at minCount = their size; some ``all``) of priority
    0–1 and a few lone pods, and a pending gang of priority 2 needing the room of several nodes: the shape in which
    the greedy reprieve breaks several gangs, and the consolidation may keep some whole."""
    n = draw(st.integers(2, 5))
    free = {f"n{i}": 4 for i in range(n)}
    c = Cluster(nodes=[node(name, cpu="4", memory="64Gi") for name in free])
    g = 0
    while sum(free.values()) > draw(st.integers(0, 2)):
        size = draw(st.integers(1, 4))
        c.groups.append(group(f"run{g}", draw(st.sampled_from([size, size, size, 1])), priority=draw(st.integers(0, 1)),
                              mode=draw(st.sampled_from(["single", None, None, "all"]))))
        for j in range(size):
            roomy = sorted(where for where, room in free.items() if room)
            if not roomy:
                break
            where = draw(st.sampled_from(roomy))
            cpu = min(free[where], draw(st.sampled_from([2, 2, 1])))
            free[where] -= cpu
            c.pods.append(running(f"run{g}-{j}", where, f"run{g}", cpu=str(cpu),
                                  started=f"2026-01-01T00:{draw(st.integers(0, 59)):02d}:00Z"))
        g += 1
    for where, room in free.items():
        if room:
            c.pods.append(running(f"lone-{where}", where, cpu=str(room), priority=draw(st.integers(0, 1)),
                                  scheduler="default-scheduler"))
    size = draw(st.integers(2, 2 * n))
    c.groups.append(group("high", size, priority=2))
    c.pods += [pending(f"high-{i}", "high", cpu="2") for i in range(size)]
    return Case(c, GroupKey("PodGroup", NS, "high"))


@SETTINGS
@given(st.one_of(cases(), gang_cases()))
def test_consolidation_breaks_no_more_gangs_evicts_no_more_pods_and_stays_minimal(case: Case) -> None:
    cache = case.cluster.cache()
    tree = cache.tree(case.root)
    assert tree is not None
    snapshot = cache.snapshot()
    usable = usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check)
    units = candidates(snapshot, tree, CacheGroupView(cache), usable)
    budgets = case.cluster.budgets
    greedy = select(tree, snapshot, units, budgets, SolverConfig(), usable=usable, consolidate=False)
    chosen = select(tree, snapshot, units, budgets, SolverConfig(), usable=usable)
    assert (greedy is None) == (chosen is None)
    if greedy is None or chosen is None:
        return
    assert chosen.broken == broken_gangs(chosen.victims) <= greedy.broken == broken_gangs(greedy.victims)
    assert chosen.broken <= greedy.broken - chosen.consolidated  # each gang kept whole is one fewer broken
    assert len(chosen.pods) <= len(greedy.pods)
    assert chosen.pdb_violations <= greedy.pdb_violations
    assert max((u.priority for u in chosen.victims), default=-1) <= max((u.priority for u in greedy.victims),
                                                                       default=-1)
    assert placements_hold(tree, snapshot.without(list(chosen.pods)), chosen.plan)
    for unit in chosen.victims:  # no victim unit can be put back alone while the tree still fits
        rest = [p for u in chosen.victims if u is not unit for p in u.pods]
        assert not isinstance(solve(tree, snapshot.without(rest)), Plan), f"{unit.key} could be reprieved"
