"""What preemption needs to know beyond the snapshot: groups, priorities, budgets, preemptions in flight.

A :class:`~scheduler.framework.snapshot.Snapshot` lists the pods on each node but not their groups.
Victim selection needs, for each running pod, the priority it counts at (its group's, KEP-5710) and
its *victim unit* (the highest ancestor with ``disruptionMode: all``); for the preemptor,
its ``preemptionPolicy``; and the PodDisruptionBudgets. :class:`GroupView` is that read-only
question set, handed to the PostFilter plugin at construction by whoever builds the cycle (the
cache implements it, ``scheduler.cache.group_view``), so this package stays pure and never
imports the cache. The per-pod answer, :class:`~scheduler.groups.tree.Membership`, is a groups
value (:meth:`~scheduler.groups.chains.GroupChains.membership` computes it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Protocol

from scheduler.groups.tree import Membership
from scheduler.model.pod import Pod
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.scheduling import GroupKey


class GroupView(Protocol):
    """Read-only answers about the cluster's groups; see the module docstring. Every method is a pure read
    of the current state and never raises for unknown objects."""

    def membership(self, pod: Pod) -> Membership:
        """How ``pod`` (running, any scheduler) is grouped and what priority it counts at."""
        ...

    def generation(self) -> int:
        """A number that changes whenever the priority or the victim unit of any pod's :meth:`membership` may have
        changed (a group, a PriorityClass, a tree's priority, the pods a group's priority follows); while it stays
        the same, every such answer read before holds (a PodGroup's running members may still change)."""
        ...

    def unit_pods(self, unit: GroupKey) -> Iterable[Pod]:
        """Every running pod (bound, not terminating) under ``unit``, on any node."""
        ...

    def preemption_policy(self, root: GroupKey) -> str | None:
        """The root group's ``spec.preemptionPolicy``, else its PriorityClass's; None when neither is set
        (and for a lone pod's root, whose policy is the pod's own)."""
        ...

    def pod_preemption_policy(self, pod: Pod) -> str | None:
        """``pod``'s ``spec.preemptionPolicy``, else its PriorityClass's; None when neither is set."""
        ...

    def budgets(self) -> Sequence[PodDisruptionBudget]:
        """Every policy/v1 PodDisruptionBudget, in a stable order."""
        ...

    def assumed(self) -> Collection[str]:
        """Keys of the pods only *assumed* on their nodes (plans of ours still being bound): never victims."""
        ...

    def awaiting(self, root: GroupKey) -> Collection[str]:
        """The victims this scheduler chose for ``root`` earlier that are still in the cluster, by pod key (their
        deletion sent or about to be; empty: none): the root waits for them instead of preempting again."""
        ...


__all__ = ["GroupView", "Membership"]
