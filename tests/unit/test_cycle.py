"""The cycle's hand-off: each decision of a root reaches the matching method of a DecisionHandler."""

from __future__ import annotations

from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import Attempt, CycleRunner, handle
from scheduler.framework import Plan, Preemption, SolverConfig, Unschedulable
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from tests.unit.preemption.kit import Cluster, group, nodes, pending, running


class Recorder:
    """A DecisionHandler that keeps what it was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, GroupKey, object]] = []

    def on_plan(self, attempt: Attempt, plan: Plan) -> None:
        self.calls.append(("plan", attempt.tree.key, plan))

    def on_preemption(self, attempt: Attempt, preemption: Preemption) -> None:
        self.calls.append(("preemption", attempt.tree.key, preemption))

    def on_unschedulable(self, attempt: Attempt, failure: Unschedulable) -> None:
        self.calls.append(("unschedulable", attempt.tree.key, failure))


def test_each_outcome_reaches_its_method_with_the_decision_itself() -> None:
    """Three roots on one 2-cpu node holding a 2-cpu pod of priority 5: ``fits`` (0 cpu) is planned, ``high``
    (priority 100) preempts the pod, ``low`` (priority 1, 1 cpu) fits nowhere and cannot preempt."""
    c = Cluster(nodes=nodes(1, cpu="2"), pods=[running("blocker", "n0", cpu="2", priority=5)])
    c.groups += [group("fits", 1, priority=50), group("high", 1, priority=100), group("low", 1, priority=1)]
    c.pods += [pending("fits-0", "fits", cpu="0"), pending("high-0", "high", cpu="2"),
               pending("low-0", "low", cpu="1")]
    cache = c.cache()
    runner = CycleRunner(cache, SolverConfig(), (DefaultPreemption(CacheGroupView(cache)),))
    recorder = Recorder()
    for name in ("fits", "high", "low"):
        attempt = runner.attempt(_key(c, name))
        assert attempt is not None
        handle(attempt, recorder)
        assert recorder.calls[-1][2] is attempt.decision
    assert [(kind, key.name) for kind, key, _ in recorder.calls] == [
        ("plan", "fits"), ("preemption", "high"), ("unschedulable", "low")]


def _key(c: Cluster, name: str) -> GroupKey:
    (pg,) = [g for g in c.groups if g.metadata.name == name]
    return GroupKey("PodGroup", pg.metadata.namespace, name)
