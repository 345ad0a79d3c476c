"""Workload-aware preemption: victims by group, chosen on ``snapshot.without``-style what-ifs.

Pure, like the solver it calls: :class:`DefaultPreemption` is the PostFilter plugin the cycle runs for
a root that does not fit; it reads groups, priorities and budgets through a :class:`GroupView` given at
construction (the cache implements it) and returns a :class:`~scheduler.framework.plan.Preemption` or an
:class:`~scheduler.framework.plan.Unschedulable` that says why preemption cannot help. Acting on a
Preemption (nominations, DisruptionTarget, deletes, events) is the live driver's
(``scheduler.live.preemptor``) or ``simulate``'s business. May import solver, framework, groups and
model — never the cache or the live layer.
"""

from scheduler.preemption.group_view import GroupView, Membership
from scheduler.preemption.plugin import NAME, DefaultPreemption, Outcome

__all__ = ["NAME", "DefaultPreemption", "GroupView", "Membership", "Outcome"]
