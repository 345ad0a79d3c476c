"""Pods by the PodGroup they name: the live members of each group, and the finished ones its counts keep.

A pod names its PodGroup by ``spec.schedulingGroup.podGroupName`` (or scheduler-plugins' label,
``model/coscheduling.py``) whether or not the group exists yet. *Live* members can still be bound or keep a
gang alive (not terminal, not being deleted). Members seen finished with phase Succeeded are remembered after
their pods are deleted, until the PodGroup is (a gang whose members complete is done, not below minCount);
finished members that still exist are counted as scheduler-plugins' PodGroup status counts them. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scheduler.model.coscheduling import MemberCounts
from scheduler.model.pod import Pod

Name = tuple[str, str]
"""(namespace, name) of a group."""

NO_PODS: Mapping[str, Pod] = MappingProxyType({})


class Members:
    """The members of every PodGroup named so far (see the module docstring)."""

    def __init__(self) -> None:
        self.live: dict[Name, dict[str, Pod]] = {}
        """Live pods by the PodGroup they name (whether or not it exists)."""
        self.group_of: dict[str, Name] = {}
        """Pod key → the PodGroup a live pod names."""
        self._bound: dict[Name, int] = {}
        """Per PodGroup, how many of its live members are bound (``spec.nodeName`` set); absent: none."""
        self.succeeded: dict[Name, set[str]] = {}
        """Per PodGroup, the keys of members seen finished with phase Succeeded (kept after the pods are
        deleted, until the PodGroup is: a gang whose members complete is done, not below minCount)."""
        self._terminal: dict[Name, dict[str, Pod]] = {}
        """Per PodGroup, the member pods that exist with phase Succeeded or Failed (counted by the scheduler-plugins
        status, :meth:`counts`); ``_terminal_group`` says under which group each is."""
        self._terminal_group: dict[str, Name] = {}

    def finished(self, key: str, pod: Pod | None) -> Name | None:
        """Note pod ``key`` as it is now (None: deleted) among the finished members; returns its PodGroup when it
        is newly seen Succeeded (the group's tree then changes), else None."""
        newly: Name | None = None
        if pod is not None and pod.status.phase == "Succeeded" and pod.group_name is not None:
            name = (pod.metadata.namespace, pod.group_name)
            done = self.succeeded.setdefault(name, set())
            if key not in done:
                done.add(key)
                newly = name
        old = self._terminal_group.pop(key, None)
        if old is not None:
            self._terminal[old].pop(key, None)
            if not self._terminal[old]:
                del self._terminal[old]
        if pod is not None and pod.is_terminal and pod.group_name is not None:
            name = (pod.metadata.namespace, pod.group_name)
            self._terminal.setdefault(name, {})[key] = pod
            self._terminal_group[key] = name
        return newly

    def replace(self, key: str, pod: Pod) -> Name | None:
        """Put live ``pod`` in place of the member stored under ``key`` (nothing a tree reads changed); returns its
        PodGroup, or None when ``key`` is no member (nothing done)."""
        name = self.group_of.get(key)
        members = self.live.get(name, NO_PODS) if name is not None else NO_PODS
        old = members.get(key)
        if name is not None and old is not None:
            self._count(name, pod.is_bound - old.is_bound)
            self.live[name][key] = pod
            return name
        return None

    def remove(self, key: str) -> Name | None:
        """Forget live member ``key``; returns the PodGroup it named, or None when it was no member."""
        name = self.group_of.pop(key, None)
        if name is not None:
            members = self.live.get(name)
            if members is not None:
                old = members.pop(key, None)
                if old is not None:
                    self._count(name, -old.is_bound)
                if not members:
                    del self.live[name]
        return name

    def add(self, name: Name, key: str, pod: Pod) -> None:
        """Live ``pod`` (key ``key``) names PodGroup ``name``."""
        members = self.live.setdefault(name, {})
        old = members.get(key)
        self._count(name, pod.is_bound - (old.is_bound if old is not None else 0))
        members[key] = pod
        self.group_of[key] = name

    def _count(self, name: Name, delta: int) -> None:
        if delta:
            count = self._bound.get(name, 0) + delta
            if count:
                self._bound[name] = count
            else:
                del self._bound[name]

    def of(self, namespace: str, pod_group: str) -> Mapping[str, Pod]:
        """The live pods (not terminal, not being deleted) naming PodGroup ``namespace/pod_group``, by key."""
        return self.live.get((namespace, pod_group), NO_PODS)

    def bound(self, namespace: str, pod_group: str) -> int:
        """How many live members of PodGroup ``namespace/pod_group`` are bound to a node. O(1)."""
        return self._bound.get((namespace, pod_group), 0)

    def group_deleted(self, name: Name) -> None:
        """PodGroup ``name`` is deleted: its finished members are no longer remembered."""
        self.succeeded.pop(name, None)

    def counts(self, namespace: str, pod_group: str) -> MemberCounts:
        """The pods naming PodGroup ``namespace/pod_group`` that exist, counted as scheduler-plugins' PodGroup
        status counts them (:class:`~scheduler.model.coscheduling.MemberCounts`): live members plus those
        finished (Succeeded / Failed) that still exist; pods being deleted are not counted. O(members)."""
        live = self.live.get((namespace, pod_group), NO_PODS).values()
        done = self._terminal.get((namespace, pod_group), {}).values()
        return MemberCounts(pods=len(live) + len(done), bound=sum(p.is_bound for p in (*live, *done)),
                            running=sum(p.status.phase == "Running" for p in live),
                            succeeded=sum(p.status.phase == "Succeeded" for p in done),
                            failed=sum(p.status.phase == "Failed" for p in done))
