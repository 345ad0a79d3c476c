"""PodDisruptionBudgets in victim selection: which units would exceed a budget if evicted.

Mirrors kube-scheduler's generic ``FilterVictimsWithPDBViolation`` (``pkg/scheduler/framework/
preemption/util.go``, v1.37, the version workload-aware preemption uses): the budgets'
``status.disruptionsAllowed`` are shared by every candidate and consumed in importance order (most
important first). For each pod, each budget of its namespace whose selector matches its labels — a nil
selector matches nothing, an empty one every pod — and that has not already counted the pod
(``status.disruptedPods``) is decremented; the pod *violates* when one falls below zero, and later
budgets are not decremented for it. A unit violates when any of its pods does. Budgets never block
preemption (the scheduler deletes, it does not use the Eviction API): violating units are only reprieved
first, so they are evicted last.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.selectors import label_selector_matches
from scheduler.model.policy import PodDisruptionBudget
from scheduler.preemption.units import Unit


def violations(units: Sequence[Unit], budgets: Sequence[PodDisruptionBudget]) -> list[int]:
    """Per unit of ``units`` (in importance order), how many of its pods would violate a budget, ≥ 0."""
    if not budgets:
        return [0] * len(units)
    allowed = [b.status.disruptions_allowed for b in budgets]
    out: list[int] = []
    for unit in units:
        count = 0
        for pod in unit.pods:
            labels = pod.metadata.labels
            for i, budget in enumerate(budgets):
                selector = budget.spec.selector
                if (budget.metadata.namespace != pod.metadata.namespace or selector is None
                        or pod.metadata.name in budget.status.disrupted_pods
                        or not label_selector_matches(selector, labels)):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    count += 1
                    break
        out.append(count)
    return out
