"""Victim selection: the memo of request vectors (per pod object, never stale), and the consolidation of broken
gangs after the reprieve."""

from __future__ import annotations

import numpy as np

from scheduler.cache.group_view import CacheGroupView
from scheduler.framework import Preemption, SolverConfig
from scheduler.model.scheduling import GroupKey
from scheduler.preemption.selection import PodVectors, Selection, broken_gangs, select
from scheduler.preemption.units import candidates, importance, usable_rows
from scheduler.solver.plugins import DEFAULT_PROFILE
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, budget, group, names, nodes, pending, running


def test_request_vectors_are_remembered_per_pod_object_and_follow_a_changed_pod() -> None:
    """The same pod object reads its vector from the memo; a new object for the same pod (the cache replaces it when
    it changes) with other requests gets its own, also after the old one is gone."""
    small = running("p", "n0", cpu="1")
    snapshot = Cluster(nodes=nodes(1), pods=[small]).cache().snapshot()
    cpu = snapshot.table.column["cpu"]
    vectors = PodVectors()
    first = vectors.matrix(snapshot, [small])
    assert first[0, cpu] == 1000
    assert vectors.matrix(snapshot, [small])[0, cpu] == 1000
    del small
    for _ in range(50):  # objects made after the first is freed may take its address: none may match it
        bigger = running("p", "n0", cpu="3")
        assert vectors.matrix(snapshot, [bigger])[0, cpu] == 3000
    assert vectors.matrix(snapshot, []).shape == (0, len(snapshot.table.resources))


def selection(c: Cluster, *, consolidate: bool = True) -> Selection:
    """:func:`select` for the root ``high`` of ``c`` over its candidate units, as the plugin calls it."""
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    snapshot = cache.snapshot()
    usable = usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check)
    units = candidates(snapshot, tree, CacheGroupView(cache), usable)
    chosen = select(tree, snapshot, units, c.budgets, SolverConfig(), usable=usable, consolidate=consolidate)
    assert chosen is not None
    return chosen


def two_gangs(y_priority: int = 1, x_mode: str | None = None) -> Cluster:
    """n0: gang x (2 pods), n1: the two oldest pods of gang y, n2: y's youngest and room for one more pod; every
    gang at minCount = its size; nodes of 4 cpu. The root ``high``: 4 pods of 2 cpu, priority 100."""
    c = Cluster(nodes=nodes(3, cpu="4"))
    c.groups += [group("x", 2, priority=1, mode=x_mode), group("y", 3, priority=y_priority),
                 group("high", 4, priority=100)]
    c.pods += [running(f"x-{j}", "n0", "x", cpu="2", started=f"2026-01-01T00:0{j}:00Z", labels={"job": "x"})
               for j in (1, 2)]
    c.pods += [running(f"y-{j}", "n1" if j < 3 else "n2", "y", cpu="2", started=f"2026-01-01T00:1{j}:00Z",
                       labels={"job": "y"}) for j in (1, 2, 3)]
    c.pods += [pending(f"high-{i}", "high", cpu="2") for i in range(4)]
    return c


def test_consolidation_breaks_one_gang_where_the_greedy_reprieve_breaks_two() -> None:
    """The greedy reprieve evicts x (the smaller gang, less important) and y's youngest: 3 pods, two gangs below
    minCount. Evicting y whole instead frees the same room with 3 pods too, and only y is broken."""
    c = two_gangs()
    greedy = selection(c, consolidate=False)
    assert names(greedy.pods) == ["x-1", "x-2", "y-3"] and greedy.broken == 2
    chosen = selection(c)
    assert names(chosen.pods) == ["y-1", "y-2", "y-3"]
    assert (chosen.broken, chosen.consolidated, chosen.reprieved) == (1, 1, 2)
    assert broken_gangs(chosen.victims) == 1 and broken_gangs(greedy.victims) == 2
    _, decision = c.decide("high")  # the plugin's decision, and the plan it nominates, follow
    assert isinstance(decision, Preemption)
    assert names(decision.victims) == ["y-1", "y-2", "y-3"]
    assert decision.plan is not None and len(decision.plan.placements) == 4


def test_a_whole_unit_is_kept_before_members_a_single_mode_gang_needs() -> None:
    """An ``all`` unit evicted is a group gone whole, as a single-mode gang below its minimum is: both break a gang,
    and the ``all`` unit ranks above a member (kube's ``MoreImportantVictim``), so y goes whole, x stays — without
    the consolidation. The 8-pod ``all`` group is kept over 3 members of a single-mode gang the same way."""
    chosen = selection(two_gangs(x_mode="all"))
    assert names(chosen.pods) == ["y-1", "y-2", "y-3"] and (chosen.broken, chosen.consolidated) == (1, 0)
    c = Cluster(nodes=nodes(4, cpu="4"))
    c.groups += [group("nb", 8, priority=10, mode="all"), group("nc", 3, priority=10), group("nd", 3, priority=10),
                 group("ne", 2, priority=10), group("high", 3, priority=1000)]
    c.pods += [running(f"nb-{j}", f"n{j // 4}", "nb", cpu="1") for j in range(8)]
    c.pods += [running(f"nc-{j}", "n2", "nc", cpu="1") for j in range(3)]
    c.pods += [running(f"nd-{j}", "n3", "nd", cpu="1") for j in range(3)]
    c.pods += [running("ne-0", "n2", "ne", cpu="1"), running("ne-1", "n3", "ne", cpu="1")]
    c.pods += [pending(f"high-{i}", "high", cpu="1") for i in range(3)]
    chosen = selection(c)
    assert len(chosen.pods) == 3 and chosen.broken == 1
    assert {p.group_name for p in chosen.pods} <= {"nc", "nd"}


def test_no_consolidation_when_it_evicts_more_pods() -> None:
    """y's pods on n1 are 1 cpu each (four of them): keeping x would take 4 of y's pods instead of x's 2."""
    c = Cluster(nodes=nodes(3, cpu="4"))
    c.groups += [group("x", 2, priority=1), group("y", 5, priority=1), group("high", 4, priority=100)]
    c.pods += [running(f"x-{j}", "n0", "x", cpu="2", started=f"2026-01-01T00:0{j}:00Z") for j in (1, 2)]
    c.pods += [running(f"y-{j}", "n1", "y", cpu="1", started=f"2026-01-01T00:1{j}:00Z") for j in (1, 2, 3, 4)]
    c.pods += [running("y-5", "n2", "y", cpu="2", started="2026-01-01T00:15:00Z")]
    c.pods += [pending(f"high-{i}", "high", cpu="2") for i in range(4)]
    chosen = selection(c)
    assert names(chosen.pods) == ["x-1", "x-2", "y-5"]
    assert (chosen.broken, chosen.consolidated) == (2, 0)


def test_no_consolidation_that_evicts_a_more_important_pod_for_a_less_important_gang() -> None:
    """y runs at priority 2, x at 1: keeping x by evicting y's other pods would evict priority 2 for priority 1;
    keeping y has nothing of x left to evict instead."""
    chosen = selection(two_gangs(y_priority=2))
    assert names(chosen.pods) == ["x-1", "x-2", "y-3"]
    assert (chosen.broken, chosen.consolidated) == (2, 0)


def test_no_consolidation_that_exceeds_more_disruption_budgets() -> None:
    """A PodDisruptionBudget allows no disruption of y: the reprieve evicts y's pods last (one, y-3, over the
    budget); keeping x whole would put y-1 and y-2 over it too."""
    c = two_gangs()
    c.budgets.append(budget("y", {"matchLabels": {"job": "y"}}, 0))
    chosen = selection(c)
    assert names(chosen.pods) == ["x-1", "x-2", "y-3"]
    assert (chosen.broken, chosen.consolidated, chosen.pdb_violations) == (2, 0, 1)
    c.budgets = [budget("x", {"matchLabels": {"job": "x"}}, 0)]  # over x's budget instead: the reprieve keeps x itself
    chosen = selection(c)
    assert names(chosen.pods) == ["y-1", "y-2", "y-3"]
    assert (chosen.broken, chosen.consolidated, chosen.pdb_violations) == (1, 0, 0)


def test_a_gang_that_loses_no_more_members_than_it_has_spares_is_not_broken() -> None:
    """A gang of 3 at minCount 2 has one spare: one victim of it (even its oldest, essential, member) leaves it
    at minCount; two break it."""
    c = Cluster(nodes=nodes(2, cpu="4"))
    c.groups += [group("z", 2, priority=1), group("high", 1, priority=100)]
    c.pods += [running(f"z-{j}", "n0", "z", cpu="1", started=f"2026-01-01T00:0{j}:00Z") for j in (1, 2, 3)]
    c.pods += [pending("high-0", "high")]
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    snapshot = cache.snapshot()
    units = sorted(candidates(snapshot, tree, CacheGroupView(cache), np.ones(2, dtype=bool)), key=importance)
    assert [u.essential for u in units] == [True, True, False] and {u.spare for u in units} == {1}
    assert broken_gangs(units[:1]) == 0 and broken_gangs(units[2:]) == 0
    assert broken_gangs(units[:2]) == 1 and broken_gangs(units) == 1
