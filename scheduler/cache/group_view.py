"""The cache's answers to preemption's questions (:class:`scheduler.preemption.group_view.GroupView`).

The preemption plugin is pure and may not import the cache; the cache may not import preemption.
This module implements the view's methods over a :class:`~scheduler.cache.cluster.ClusterCache`
structurally (the Protocol needs no import), and whoever builds the cycle (``run``'s driver,
``simulate``) hands it to the plugin. Reads only; every answer reflects the cache as it is now.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from scheduler.cache.cluster import ClusterCache
from scheduler.groups.tree import Membership
from scheduler.model.pod import Pod
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.scheduling import GroupKey


def _never(_: GroupKey) -> Collection[str]:
    return ()


class CacheGroupView:
    """Preemption's view of ``cache``. ``awaiting``: the victims chosen earlier for a root still in the cluster
    (the live preemptor knows; ``simulate`` removes victims at once, so none)."""

    def __init__(self, cache: ClusterCache, awaiting: Callable[[GroupKey], Collection[str]] = _never) -> None:
        self.cache = cache
        self._awaiting = awaiting

    def membership(self, pod: Pod) -> Membership:
        return self.cache.groups.chains.membership(pod)

    def generation(self) -> int:
        return self.cache.groups.chains.generation

    def unit_pods(self, unit: GroupKey) -> Iterable[Pod]:
        groups = self.cache.groups
        for ns, name in groups.structure.leaves_under(unit):
            for pod in groups.members.of(ns, name).values():
                if pod.is_bound:
                    yield pod

    def preemption_policy(self, root: GroupKey) -> str | None:
        obj = self.cache.group(root.kind, root.namespace, root.name) if root.kind != "Pod" else None
        if obj is None:
            return None
        policy: str | None = obj.spec.preemption_policy
        return policy or self.cache.groups.priorities.class_policy(obj.spec.priority_class_name)

    def pod_preemption_policy(self, pod: Pod) -> str | None:
        return pod.spec.preemption_policy or self.cache.groups.priorities.class_policy(pod.spec.priority_class_name)

    def budgets(self) -> Sequence[PodDisruptionBudget]:
        found = self.cache.budgets
        return [found[k] for k in sorted(found)]

    def assumed(self) -> Collection[str]:
        return self.cache.assumed.keys()

    def awaiting(self, root: GroupKey) -> Collection[str]:
        return self._awaiting(root)
