"""PodDisruptionBudget classification (kube-scheduler's generic ``FilterVictimsWithPDBViolation``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.policy import PodDisruptionBudget
from scheduler.preemption.budgets import violations
from scheduler.preemption.units import RANK_POD, Unit
from tests.unit.preemption.kit import budget, running


def units(*labelled: tuple[str, dict[str, str]]) -> list[Unit]:
    return [Unit(name, 0, RANK_POD, name, [running(name, "n0", labels=labels)], [0]) for name, labels in labelled]


A, B, C = ("a", {"app": "x"}), ("b", {"app": "x"}), ("c", {"app": "y"})
MATCH_X: dict[str, Any] = {"matchLabels": {"app": "x"}}


@pytest.mark.parametrize(("budgets", "pods", "expected"), [
    pytest.param([], [A, B], [0, 0], id="no-budgets"),
    pytest.param([budget("x", MATCH_X, 1)], [A, B, C], [0, 1, 0], id="allowance-consumed-in-importance-order"),
    pytest.param([budget("x", MATCH_X, 0)], [A, B], [1, 1], id="none-allowed"),
    pytest.param([budget("x", None, 0)], [A, B], [0, 0], id="nil-selector-matches-nothing"),
    pytest.param([budget("x", {}, 0)], [A, C], [1, 1], id="empty-selector-matches-the-whole-namespace"),
    pytest.param([budget("x", MATCH_X, 0, namespace="other")], [A], [0], id="other-namespace"),
    pytest.param([budget("x", MATCH_X, 0, disrupted=["a"])], [A, B], [0, 1], id="already-disrupted-pods-not-counted"),
    pytest.param([budget("x", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "y"]}]}, 2)],
                 [A, B, C], [0, 0, 1], id="match-expressions"),
    pytest.param([budget("first", MATCH_X, 0), budget("second", MATCH_X, 5)], [A, B], [1, 1],
                 id="stops-at-the-first-violated-budget"),
])
def test_violations(budgets: list[PodDisruptionBudget], pods: list[tuple[str, dict[str, str]]],
                    expected: list[int]) -> None:
    assert violations(units(*pods), budgets) == expected


def test_a_later_budget_is_not_consumed_by_a_pod_that_already_violates() -> None:
    """After ``a`` violates ``first`` it does not use up ``second``'s one disruption: ``b`` still fits it."""
    first = budget("first", {"matchLabels": {"app": "x", "tier": "a"}}, 0)
    second = budget("second", MATCH_X, 1)
    pods = units(("a", {"app": "x", "tier": "a"}), ("b", {"app": "x"}))
    assert violations(pods, [first, second]) == [1, 0]


def test_a_budget_setting_both_min_available_and_max_unavailable_is_refused() -> None:
    """The API server refuses such a budget (``ValidatePodDisruptionBudgetSpec``); so does the model."""
    spec = {"selector": {}, "minAvailable": 1, "maxUnavailable": "50%"}
    with pytest.raises(ValueError, match="minAvailable and maxUnavailable cannot be both set"):
        PodDisruptionBudget.model_validate({"metadata": {"name": "b", "namespace": "ns"}, "spec": spec})
    for one in ({"minAvailable": "50%"}, {"maxUnavailable": 1}):
        assert PodDisruptionBudget.model_validate({"metadata": {"name": "b"}, "spec": one}).spec.selector is None
