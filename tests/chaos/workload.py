"""The objects the chaos variants create, through the harness's client: nodes, gangs, DRA gangs, priorities.

Built on the integration tests' builders (``livekit``: nodes, pods of 1 Gi memory that tolerate the
GPU taint, PodGroups; ``test_dra``: the dra-example-driver-shaped ResourceSlice, DeviceClass and
template). Every name is an RFC 1123 subdomain. A ``pool`` label plus a matching ``nodeSelector``
keeps each variant's rounds on their own nodes, so what one round leaves behind cannot starve the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.client.kube import (
    COMPOSITES,
    DEVICE_CLASSES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES,
    KubeClient,
)
from tests.integration.livekit import NS, composite, node, pod, podgroup
from tests.integration.test_dra import create_claim, device_class, dra_pod, gpu_slice, template

POOL_LABEL = "chaos.gang-scheduler.io/pool"

NORMAL, HIGH = "chaos-normal", "chaos-high"
PRIORITIES = {NORMAL: 100, HIGH: 1000}
"""PriorityClass name → value (:func:`create_priority_classes`)."""


@dataclass(frozen=True)
class GangSpec:
    """A PodGroup of ``size`` pods (``min_count`` defaults to all of them)."""

    name: str
    size: int
    cpu: str = "1"
    pool: str | None = None
    priority_class: str | None = None
    disruption_all: bool = False
    min_count: int | None = None

    @property
    def key(self) -> str:
        return f"{NS}/{self.name}"

    def pod_name(self, i: int) -> str:
        return f"{self.name}-{i}"


def podgroup_body(gang: GangSpec) -> dict[str, Any]:
    body = podgroup(gang.name, gang.min_count or gang.size)
    if gang.priority_class:
        body["spec"]["priorityClassName"] = gang.priority_class
    if gang.disruption_all:
        body["spec"]["disruptionMode"] = {"all": {}}
    return body


def _placed(body: dict[str, Any], gang: GangSpec) -> dict[str, Any]:
    """Pin a pod body to the gang's pool and priority."""
    if gang.pool:
        body["spec"]["nodeSelector"] = {POOL_LABEL: gang.pool}
    if gang.priority_class:
        body["spec"]["priorityClassName"] = gang.priority_class
        body["spec"]["priority"] = PRIORITIES[gang.priority_class]  # what admission would fill in
    return body


def pod_body(gang: GangSpec, i: int) -> dict[str, Any]:
    return _placed(pod(gang.pod_name(i), gang.name, cpu=gang.cpu), gang)


async def create_gang(kube: KubeClient, gang: GangSpec, pods: range | None = None) -> None:
    """The PodGroup and its pods (``pods``: only those indexes)."""
    await kube.create(PODGROUPS, NS, podgroup_body(gang))
    await create_pods(kube, gang, pods if pods is not None else range(gang.size))


async def create_pods(kube: KubeClient, gang: GangSpec, pods: range) -> None:
    for i in pods:
        await kube.create(PODS, NS, pod_body(gang, i))


async def create_nodes(kube: KubeClient, prefix: str, n: int, *, cpu: str = "16", pool: str | None = None,
                       gpu_devices: int = 0) -> list[str]:
    """``n`` nodes ``prefix-0…``; with ``gpu_devices``, each publishes that many DRA GPUs in its own slice."""
    names = [f"{prefix}-{i}" for i in range(n)]
    for name in names:
        body = node(name, cpu=cpu, labels={POOL_LABEL: pool} if pool else None)
        await kube.create(NODES, None, body)
        if gpu_devices:
            await kube.create(RESOURCE_SLICES, None, gpu_slice(name, gpu_devices))
    return names


async def create_dra_basics(kube: KubeClient) -> None:
    """The DeviceClass and the claim template DRA pods use."""
    await kube.create(DEVICE_CLASSES, None, device_class())
    await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, template())


async def create_dra_gang(kube: KubeClient, gang: GangSpec) -> None:
    """A gang whose every pod has a template claim of one GPU, created as the resourceclaim controller would."""
    await kube.create(PODGROUPS, NS, podgroup_body(gang))
    for i in range(gang.size):
        name = gang.pod_name(i)
        created = await kube.create(PODS, NS, _placed(dra_pod(name, gang.name, {"gpu": f"{name}-gpu"}), gang))
        await create_claim(kube, f"{name}-gpu", owner=created)


async def create_composite_tree(kube: KubeClient, name: str, children: int, size: int) -> list[GangSpec]:
    """A CompositePodGroup ``name`` (gang of all ``children``) over PodGroups ``name-c0…`` of ``size`` pods each."""
    await kube.create(COMPOSITES, NS, composite(name, children))
    leaves = [GangSpec(f"{name}-c{i}", size) for i in range(children)]
    for leaf in leaves:
        body = podgroup(leaf.name, size, parent=name)
        await kube.create(PODGROUPS, NS, body)
        await create_pods(kube, leaf, range(size))
    return leaves


async def create_priority_classes(kube: KubeClient) -> None:
    for name, value in PRIORITIES.items():
        await kube.create(PRIORITY_CLASSES, None, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                   "metadata": {"name": name}, "value": value})
