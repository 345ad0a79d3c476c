"""A what-if steered by preemption cost must not lose a fit the unsteered search finds.

The search is a heuristic. Steered by :class:`~scheduler.preemption.selection.PreemptionCost` (prefer nodes
whose removed pods matter least), it places the 2-cpu members on n1 once one of the two pods there is
gone, and then cannot place the 3-cpu member — though 3 on n1 and 2 + 2 on n2 fit. The selection then
took both pods on n1, one more victim than needed (found by tests/property/test_preemption.py: a victim
that could be put back). A what-if is a fit when either search finds one.
"""

from __future__ import annotations

from scheduler.framework import Plan, Preemption
from tests.unit.preemption.kit import Cluster, group, names, nodes, pending, running


def test_one_victim_is_enough_when_the_unsteered_search_places_every_member() -> None:
    c = Cluster(nodes=[*nodes(1, cpu="2"), *nodes(3, cpu="4")[1:]],
                groups=[group("run0", 1, priority=0, mode="all"), group("high", 1, priority=1)])
    c.pods += [running("run0-0", "n0", "run0"), running("run0-1", "n0", "run0"),
               running("lone0", "n1", priority=0, scheduler="default-scheduler"),
               running("lone1", "n1", priority=0, scheduler="default-scheduler"),
               pending("high-0", "high", cpu="2"), pending("high-1", "high", cpu="2"),
               pending("high-2", "high", cpu="3")]
    _, decision = c.decide("high")
    assert isinstance(decision, Preemption) and isinstance(decision.plan, Plan)
    assert len(decision.victims) == 1 and names(decision.victims)[0] in {"lone0", "lone1"}
    assert len(decision.plan.placements) == 3
