"""Pods that Kueue queues (its plain-pod integration, KEP-976 in kubernetes-sigs/kueue): placed all or nothing once
Kueue admits them, on the nodes of the flavor it chose.

Kueue's webhook gives every pod it queues the scheduling gate ``kueue.x-k8s.io/admission``, the label
``kueue.x-k8s.io/managed: "true"`` and the finalizer ``kueue.x-k8s.io/managed``; a group of pods also carries
``kueue.x-k8s.io/pod-group-name`` and ``kueue.x-k8s.io/pod-group-total-count``. When Kueue admits the workload
against its quota it updates each gated pod, one by one: the gate removed and the ResourceFlavor's node labels set
as its ``nodeSelector``. The test plays the webhook (the pods are created as it leaves them) and the admission
(those updates); the pods name ``gang-scheduler`` and their PodGroup, as a user who keeps Kueue for quota writes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, create_node, pod, podgroup, running, until

GATE = "kueue.x-k8s.io/admission"
FLAVOR_LABEL = "instance-type"


def queued(name: str, group: str | None, cpu: str) -> dict[str, Any]:
    """Pod ``name`` as Kueue's webhook admits it to the API: gated, labelled, with Kueue's finalizer."""
    obj = pod(name, group, cpu=cpu)
    meta = obj["metadata"]
    meta["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true"}
    meta["finalizers"] = ["kueue.x-k8s.io/managed"]
    if group is not None:
        meta["labels"]["kueue.x-k8s.io/pod-group-name"] = group
        meta["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "4"}
    obj["spec"]["schedulingGates"] = [{"name": GATE}]
    return obj


async def admit(kube: KubeClient, name: str, flavor: str) -> None:
    """Kueue's admission of one pod: its gate removed and the flavor's node labels set as its nodeSelector."""
    await kube.patch(PODS, NS, name, {"spec": {"schedulingGates": None, "nodeSelector": {FLAVOR_LABEL: flavor}}})


def sample(sched, name: str, **labels: str) -> float:  # type: ignore[no-untyped-def]
    """The sum of metric ``name``'s samples whose labels include ``labels``."""
    return sum(s.value for metric in sched.metrics.registry.collect() for s in metric.samples
               if s.name == name and labels.items() <= s.labels.items())


async def condition(kube: KubeClient, group: str) -> str:
    conditions = (await kube.get(PODGROUPS, NS, group)).get("status", {}).get("conditions") or []
    return next((f"{c['status']} {c['reason']}: {c['message']}" for c in conditions
                 if c["type"] == "PodGroupInitiallyScheduled"), "")


async def flavored_nodes(kube: KubeClient) -> None:
    for flavor in ("on-demand", "spot"):
        for i in range(2):
            await create_node(kube, f"{flavor}-{i}", cpu="4", labels={FLAVOR_LABEL: flavor})


@pytest.mark.looptime
async def test_a_gang_kueue_admits_is_bound_whole_once_every_member_is_ungated_on_its_flavor(
        k8s: ApiServer, kube: KubeClient) -> None:
    await flavored_nodes(kube)
    await kube.create(PODGROUPS, NS, podgroup("train", 4))
    names = [f"train-{i}" for i in range(4)]
    for name in names:
        await kube.create(PODS, NS, queued(name, "train", cpu="2"))
    async with running(kube) as sched:
        await until(lambda: "train-3" in {p.metadata.name for p in sched.cache.pods.values()}, what="the pods seen")
        await asyncio.sleep(5)
        for name in names[:3]:  # Kueue ungates the pods one by one
            assert sample(sched, "scheduler_pending_pods", queue="gated") == 4  # the gang waits whole, untried
            assert sample(sched, "scheduler_podgroup_schedule_attempts_total") == 0
            await admit(kube, name, "spot")
            await asyncio.sleep(2)
        assert await bound(kube, "train-") == {}
        waiting = "False Unschedulable: gang train: 3/4 pods ready, 1 scheduling-gated (minCount 4)"
        await until(lambda: _is(condition(kube, "train"), waiting), what="the waiting condition, once it has lasted")
        await admit(kube, names[3], "spot")
        placed = await until(lambda: _all_bound(kube, names), what="the gang bound")
    assert set(placed) == set(names)
    assert {node.rsplit("-", 1)[0] for node in placed.values()} == {"spot"}  # the flavor Kueue chose


@pytest.mark.looptime
async def test_a_lone_pod_kueue_admits_is_bound_on_its_flavor(k8s: ApiServer, kube: KubeClient) -> None:
    await flavored_nodes(kube)
    await kube.create(PODS, NS, queued("solo", None, cpu="1"))
    async with running(kube) as sched:
        await asyncio.sleep(5)
        assert sample(sched, "scheduler_schedule_attempts_total") == 0  # gated: never tried
        await admit(kube, "solo", "spot")
        placed = await until(lambda: _all_bound(kube, ["solo"]), what="the pod bound")
    assert placed["solo"].startswith("spot-")  # without the selector, packing would take on-demand-0


async def _is(value: Awaitable[Any], expected: Any) -> bool:
    return await value == expected


async def _all_bound(kube: KubeClient, names: list[str]) -> dict[str, str] | None:
    placed = await bound(kube, "")
    return {n: placed[n] for n in names} if all(n in placed for n in names) else None
