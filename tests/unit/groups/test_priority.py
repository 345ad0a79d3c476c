"""Priorities from PriorityClasses: the pod's own, its class's, the global default; a group's own; the policy."""

from __future__ import annotations

from scheduler.groups.priority import PriorityClasses
from scheduler.model.scheduling import PriorityClass
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import pod


def pc(name: str, value: int, default: bool = False, policy: str | None = None) -> PriorityClass:
    body: dict[str, object] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy is not None:
        body["preemptionPolicy"] = policy
    return PriorityClass.model_validate(body)


def test_spec_priority_then_its_class_then_the_first_global_default_by_name() -> None:
    classes = PriorityClasses()
    assert classes.pod_priority(pod("p")) == 0
    classes.set("b-default", pc("b-default", 7, default=True))
    classes.set("a-default", pc("a-default", 5, default=True))
    classes.set("high", pc("high", 1000))
    assert classes.pod_priority(pod("p")) == 5
    assert classes.pod_priority(pod("p", spec={"priorityClassName": "high"})) == 1000
    assert classes.pod_priority(pod("p", spec={"priorityClassName": "unknown"})) == 5
    assert classes.pod_priority(pod("p", priority=3, spec={"priorityClassName": "high"})) == 3
    classes.set("a-default", None)
    assert classes.default_priority == 7


def test_a_groups_own_priority_and_the_class_policy() -> None:
    classes = PriorityClasses()
    classes.set("batch", pc("batch", 10, policy="Never"))
    assert classes.group_priority(pg("g", priority=4, priority_class="batch")) == 4
    assert classes.group_priority(pg("g", priority_class="batch")) == 10
    assert classes.group_priority(pg("g", priority_class="none")) is None
    assert classes.class_policy("batch") == "Never"
    assert classes.class_policy(None) is None
