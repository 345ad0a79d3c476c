"""A PostFilter what-if that needs no victim is a plan, not a zero-victim Preemption.

The search is heuristic: here it places the 3-cpu member first on the first of two equally tight
nodes and then cannot place the two 2-cpu ones, although 2+2 on n1 and 3 on n2 fit. Preemption's
what-ifs then found that plan and reprieved every victim; it used to return a Preemption with no
victims, which the next cycle decided again, forever (found by tests/property/test_preemption.py).
Now the plan itself is the decision, and it is bound.
"""

from __future__ import annotations

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import CycleRunner
from scheduler.framework import Plan, SolverConfig
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from scheduler.solver.search import placements_hold
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import node, pod


def test_a_fit_the_search_missed_is_bound_without_victims() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load("Node", [node("n0", cpu="4", memory="64Gi"), node("n1", cpu="6", memory="64Gi"),
                        node("n2", cpu="4", memory="64Gi")])
    running = [("run0-0", "2", "n0"), ("run0-1", "1", "n2"), ("run0-2", "2", "n0"), ("run0-3", "2", "n1")]
    pending = [("high-0", "2"), ("high-1", "2"), ("high-2", "3")]
    cache.load("Pod", [pod(n, cpu=c, group="run0", node_name=at, namespace="ml", phase="Running")
                       for n, c, at in running] + [pod(n, cpu=c, group="high", namespace="ml") for n, c in pending])
    cache.load("PodGroup", [pg("run0", 1, namespace="ml"), pg("high", 3, namespace="ml", priority=1)])
    cycle = CycleRunner(cache, SolverConfig(), (DefaultPreemption(CacheGroupView(cache)),))
    snapshot = cache.snapshot()
    attempt = cycle.attempt(GroupKey("PodGroup", "ml", "high"))
    assert attempt is not None and isinstance(attempt.decision, Plan)
    assert sorted(n for _, n in attempt.decision.placements) == ["n1", "n1", "n2"]
    assert placements_hold(attempt.tree, snapshot, attempt.decision)
    assert all(p.is_bound for p in cache.objects["Pod"].values() if p.metadata.name.startswith("run0"))  # none evicted
