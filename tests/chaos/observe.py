"""What the cluster looks like, read over HTTP like any client would: gangs, nodes, claims.

:func:`read_cluster` lists the kinds the at-rest assertions need; :class:`Gang` is one PodGroup
with its member pods counted. :class:`HalfGangSampler` watches for gangs with some but not all
members bound, to count the transient ones (a crash, a failed bind, a thief) and how long each
lasted. Only the harness's own client is used; nothing here reads the emulator's memory.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.client.kube import NODES, PODGROUPS, PODS, RESOURCE_CLAIMS, KubeClient

JSON = dict[str, Any]

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
"""The PodGroup condition type (``scheduling.k8s.io/v1beta1`` ``PodGroupStatus``;
``scheduler.model.scheduling.INITIALLY_SCHEDULED``)."""


class GangState(enum.StrEnum):
    FULL = "full"
    """At least minCount members bound."""
    PARTIAL = "partial"
    """Some but fewer than minCount members bound: what must never last."""
    PENDING = "pending"
    """No member bound."""
    NOT_A_GANG = "not-a-gang"
    """Basic policy, or a policy the API would refuse (no integer minCount ≥ 1): not judged."""


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def min_count(podgroup: JSON) -> int | None:
    """``spec.schedulingPolicy.gang.minCount`` when it is an integer ≥ 1, else None."""
    value = _dict(_dict(_dict(podgroup.get("spec")).get("schedulingPolicy")).get("gang")).get("minCount")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def group_of(pod: JSON) -> str | None:
    name = _dict(_dict(pod.get("spec")).get("schedulingGroup")).get("podGroupName")
    return name if isinstance(name, str) else None


def node_of(pod: JSON) -> str | None:
    name = _dict(pod.get("spec")).get("nodeName")
    return name if isinstance(name, str) and name else None


def key_of(obj: JSON) -> str:
    meta = _dict(obj.get("metadata"))
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


@dataclass(frozen=True)
class Gang:
    """One PodGroup: ``key`` (ns/name), its minCount, member pods, bound members and its condition."""

    key: str
    min_count: int | None
    pods: int
    bound: int
    condition: JSON | None
    """The ``PodGroupInitiallyScheduled`` condition, if the status has one."""

    @property
    def state(self) -> GangState:
        if self.min_count is None:
            return GangState.NOT_A_GANG
        if self.bound >= self.min_count:
            return GangState.FULL
        return GangState.PARTIAL if self.bound else GangState.PENDING

    @property
    def initially_scheduled(self) -> bool:
        return self.condition is not None and self.condition.get("status") == "True"

    def shown(self) -> str:
        """``ml/train 7/8 bound`` and the condition, for reports."""
        cond = "no condition" if self.condition is None else \
            f"{self.condition.get('status')}/{self.condition.get('reason')}"
        return f"{self.key} {self.bound}/{self.min_count} bound ({self.pods} pods), {INITIALLY_SCHEDULED} {cond}"


@dataclass
class Cluster:
    """One read of the objects the assertions look at (each a list, as the server listed it)."""

    pods: list[JSON]
    podgroups: list[JSON]
    nodes: list[JSON]
    claims: list[JSON]

    def gangs(self) -> dict[str, Gang]:
        members: dict[str, list[JSON]] = {}
        for pod in self.pods:
            group = group_of(pod)
            if group is not None:
                members.setdefault(f"{_dict(pod.get('metadata')).get('namespace')}/{group}", []).append(pod)
        gangs = {}
        for pg in self.podgroups:
            key = key_of(pg)
            conditions = _dict(pg.get("status")).get("conditions")
            condition = next((c for c in conditions if isinstance(c, dict) and c.get("type") == INITIALLY_SCHEDULED),
                             None) if isinstance(conditions, list) else None
            pods = members.get(key, [])
            gangs[key] = Gang(key, min_count(pg), len(pods), sum(1 for p in pods if node_of(p)), condition)
        return gangs


async def read_cluster(kube: KubeClient) -> Cluster:
    pods, podgroups, nodes, claims = await asyncio.gather(
        kube.list(PODS), kube.list(PODGROUPS), kube.list(NODES), kube.list(RESOURCE_CLAIMS))
    return Cluster(pods[0], podgroups[0], nodes[0], claims[0])


def partial(gangs: Mapping[str, Gang]) -> list[Gang]:
    return [g for g in gangs.values() if g.state is GangState.PARTIAL]


@dataclass
class HalfGangSampler:
    """Every ``interval_s``, note the gangs that are partial; :meth:`run` is a task, cancel it to stop."""

    kube: KubeClient
    interval_s: float = 0.25
    since: dict[str, float] = field(default_factory=dict)
    """Gang → when it was first seen partial in its current spell."""
    longest: dict[str, float] = field(default_factory=dict)
    """Gang → its longest partial spell so far, seconds."""
    samples: int = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                cluster = await read_cluster(self.kube)
            except Exception:  # a sample lost to the emulator shutting down is no finding
                await asyncio.sleep(self.interval_s)
                continue
            now = loop.time()
            self.samples += 1
            now_partial = {g.key for g in partial(cluster.gangs())}
            for key in now_partial:
                self.since.setdefault(key, now)
            for key in list(self.since):
                self.longest[key] = max(self.longest.get(key, 0.0), now - self.since[key])
                if key not in now_partial:
                    del self.since[key]
            await asyncio.sleep(self.interval_s)

    @property
    def seen(self) -> int:
        """Distinct gangs ever seen partial."""
        return len(self.longest)

    @property
    def longest_s(self) -> float:
        return max(self.longest.values(), default=0.0)
